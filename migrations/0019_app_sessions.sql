-- 0019_app_sessions.sql - interactive sessions: a Jupyter notebook or a web app
-- of a user's own, run as a job of kind 'interactive' and served through
-- aidcd's sessions relay on an origin of its own (docs/sessions.md).
--
-- * jobs.kind: 'batch' (what every job was so far) or 'interactive'; the
--   session is the job (quotas, admission, preemption, metering, billing);
-- * app_sessions: what the job does not say - the app, its secret (the app's
--   own token: the second lock behind aidc's), where it answers (the backend
--   reports it), when it was ready, when traffic last went through, why it ended;
-- * app_session_keys: what lets a browser in - a single-use link (valid
--   60 s, made by POST .../open) and the cookie that following it sets, both
--   stored as their SHA-256 only (a copy of the table opens nothing).

ALTER TABLE jobs ADD COLUMN kind text NOT NULL DEFAULT 'batch'
    CHECK (kind IN ('batch', 'interactive'));

CREATE TABLE app_sessions (
    id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id        uuid NOT NULL REFERENCES tenants (id),
    job_id           uuid NOT NULL UNIQUE REFERENCES jobs (id),
    user_id          uuid REFERENCES users (id) ON DELETE SET NULL,
    app              text NOT NULL CHECK (app IN ('jupyter', 'web')),
    idle_minutes     integer NOT NULL CHECK (idle_minutes BETWEEN 1 AND 10080),
    secret           text NOT NULL CHECK (secret ~ '^[0-9a-f]{48}$'),
    -- where the app answers, for the run that reported it (a preempted session
    -- starts again elsewhere: another run, another place)
    endpoint_run     text,
    endpoint_host    text CHECK (char_length(endpoint_host) <= 253),
    endpoint_port    integer CHECK (endpoint_port BETWEEN 1 AND 65535),
    ready_at         timestamptz,
    last_activity_at timestamptz NOT NULL DEFAULT now(),
    end_reason       text CHECK (char_length(end_reason) <= 512),
    created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX app_sessions_tenant_list ON app_sessions (tenant_id, created_at DESC, id DESC);
CREATE INDEX app_sessions_live ON app_sessions (created_at) WHERE end_reason IS NULL;

-- read as its job is (0014: a member reads its own unless the tenant says otherwise)
ALTER TABLE app_sessions ENABLE ROW LEVEL SECURITY;
CREATE POLICY app_sessions_read ON app_sessions FOR SELECT
    USING (aidc_can_read(tenant_id)
           AND (NOT aidc_own_jobs_only(tenant_id) OR user_id = aidc_ctx_user()));
CREATE POLICY app_sessions_insert ON app_sessions FOR INSERT
    WITH CHECK (aidc_can_submit(tenant_id) AND user_id = aidc_ctx_user());
-- the session watcher and the relay (system: aidc.all = 'admin', as platform
-- admins), the owner and its tenant's admins
CREATE POLICY app_sessions_update ON app_sessions FOR UPDATE
    USING (aidc_can_admin(tenant_id) OR (aidc_can_submit(tenant_id) AND user_id = aidc_ctx_user()));

CREATE TABLE app_session_keys (
    hash       bytea PRIMARY KEY CHECK (length(hash) = 32),
    session_id uuid NOT NULL REFERENCES app_sessions (id) ON DELETE CASCADE,
    user_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind       text NOT NULL CHECK (kind IN ('link', 'cookie')),
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    used_at    timestamptz
);
CREATE INDEX app_session_keys_session ON app_session_keys (session_id);
CREATE INDEX app_session_keys_expiry ON app_session_keys (expires_at);
-- links are made by the request of their user; links are spent and cookies read
-- by the relay, which has no user (system)
ALTER TABLE app_session_keys ENABLE ROW LEVEL SECURITY;
CREATE POLICY app_session_keys_link ON app_session_keys FOR INSERT
    WITH CHECK (kind = 'link' AND user_id = aidc_ctx_user());
CREATE POLICY app_session_keys_system ON app_session_keys FOR ALL
    USING (aidc_ctx_role('system')) WITH CHECK (aidc_ctx_role('system'));

-- aidc_grant_app is wrapped, as in 0009.
ALTER FUNCTION aidc_grant_app(regrole) RENAME TO aidc_grant_app_before_0019;
CREATE FUNCTION aidc_grant_app(app regrole) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM aidc_grant_app_before_0019(app);
    EXECUTE format('GRANT SELECT, INSERT, UPDATE ON app_sessions TO %s', app);
    EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON app_session_keys TO %s', app);
END $$;
