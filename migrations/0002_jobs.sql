-- 0002_jobs.sql - clusters and their inventory, quotas, jobs with their history,
-- run intervals (the basis of metering and GPU-hour budgets) and the outbox
-- through which admission decisions reach backends.

-- ---- clusters (platform objects: every authenticated user may read them) ----

CREATE TABLE clusters (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name            text NOT NULL UNIQUE CHECK (name ~ '^[a-z][a-z0-9-]{1,62}$'),
    kind            text NOT NULL CHECK (kind IN ('local', 'slurm', 'kubernetes')),
    endpoint        text NOT NULL DEFAULT '' CHECK (char_length(endpoint) <= 2048),
    credentials_ref text NOT NULL DEFAULT '' CHECK (char_length(credentials_ref) <= 1024),
    options         jsonb NOT NULL DEFAULT '{}',
    healthy         boolean NOT NULL DEFAULT false,
    last_sync_at    timestamptz,
    last_error      text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
-- one local executor per platform: its GPU indexes are this machine's
CREATE UNIQUE INDEX clusters_one_local ON clusters ((true)) WHERE kind = 'local';

-- What a cluster offers: 'gpu:<type>' (GPUs), 'cpu' (cores), 'memory_gib'.
CREATE TABLE cluster_inventory (
    cluster_id uuid NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    resource   text NOT NULL CHECK (resource ~ '^(gpu:[a-z0-9][a-z0-9._-]{0,31}|cpu|memory_gib)$'),
    total      bigint NOT NULL CHECK (total >= 0),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (cluster_id, resource)
);

-- ---- quotas -------------------------------------------------------------------------

-- resource: 'gpu:<type>', 'cpu', 'memory_gib', 'jobs', 'gpu_hours_month', 'storage_gib'.
-- A gpu:<type> absent here means guaranteed 0 and limit 0; any other absent
-- resource is unlimited.
CREATE TABLE tenant_quotas (
    tenant_id  uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    resource   text NOT NULL CHECK (resource ~ '^(gpu:[a-z0-9][a-z0-9._-]{0,31}|cpu|memory_gib|jobs|gpu_hours_month|storage_gib)$'),
    guaranteed numeric NOT NULL CHECK (guaranteed >= 0),
    "limit"    numeric NOT NULL CHECK ("limit" >= guaranteed),
    PRIMARY KEY (tenant_id, resource)
);
ALTER TABLE tenant_quotas ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_quotas_read ON tenant_quotas FOR SELECT USING (aidc_can_read(tenant_id));
CREATE POLICY tenant_quotas_insert ON tenant_quotas FOR INSERT WITH CHECK (aidc_ctx_platform_admin());
CREATE POLICY tenant_quotas_update ON tenant_quotas FOR UPDATE USING (aidc_ctx_platform_admin());
CREATE POLICY tenant_quotas_delete ON tenant_quotas FOR DELETE USING (aidc_ctx_platform_admin());

CREATE TABLE project_quotas (
    tenant_id  uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    resource   text NOT NULL CHECK (resource ~ '^(gpu:[a-z0-9][a-z0-9._-]{0,31}|cpu|memory_gib|jobs|gpu_hours_month)$'),
    "limit"    numeric NOT NULL CHECK ("limit" >= 0),
    PRIMARY KEY (project_id, resource)
);
ALTER TABLE project_quotas ENABLE ROW LEVEL SECURITY;
CREATE POLICY project_quotas_read ON project_quotas FOR SELECT USING (aidc_can_read(tenant_id));
CREATE POLICY project_quotas_insert ON project_quotas FOR INSERT WITH CHECK (aidc_can_admin(tenant_id));
CREATE POLICY project_quotas_update ON project_quotas FOR UPDATE USING (aidc_can_admin(tenant_id));
CREATE POLICY project_quotas_delete ON project_quotas FOR DELETE USING (aidc_can_admin(tenant_id));

-- ---- jobs -----------------------------------------------------------------------------

CREATE TABLE jobs (
    id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id          uuid NOT NULL REFERENCES tenants (id),
    project_id         uuid NOT NULL REFERENCES projects (id),
    user_id            uuid REFERENCES users (id) ON DELETE SET NULL,
    username           text NOT NULL, -- who submitted (user names never change)
    name               text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
    state              text NOT NULL DEFAULT 'queued'
                       CHECK (state IN ('queued', 'admitted', 'pending', 'running', 'succeeded',
                                        'failed', 'cancelled', 'preempted')),
    reason             text,
    priority           text NOT NULL DEFAULT 'normal' CHECK (priority IN ('high', 'normal', 'low')),
    -- queue order within a GPU type: priority, then submit time (then id)
    queue_rank         smallint GENERATED ALWAYS AS
                       (CASE priority WHEN 'high' THEN 0 WHEN 'normal' THEN 1 ELSE 2 END) STORED,
    preemptible        boolean NOT NULL DEFAULT false,
    requested_cluster  uuid REFERENCES clusters (id),
    cluster_id         uuid REFERENCES clusters (id),
    backend_job_id     text,
    gpus               integer NOT NULL DEFAULT 0 CHECK (gpus BETWEEN 0 AND 64),
    gpu_type           text CHECK (gpu_type ~ '^[a-z0-9][a-z0-9._-]{0,31}$'),
    cpus               integer NOT NULL DEFAULT 1 CHECK (cpus BETWEEN 1 AND 1024),
    memory_gib         integer NOT NULL DEFAULT 4 CHECK (memory_gib BETWEEN 1 AND 16384),
    nodes              integer NOT NULL DEFAULT 1 CHECK (nodes BETWEEN 1 AND 64),
    time_limit_minutes integer NOT NULL DEFAULT 60 CHECK (time_limit_minutes BETWEEN 1 AND 525600),
    image              text,
    command            jsonb,  -- array of strings, or NULL when script is given
    script             text,
    env                jsonb NOT NULL DEFAULT '{}',
    gpu_indexes        integer[], -- local backend: the GPUs it was given
    submitted_at       timestamptz NOT NULL DEFAULT now(),
    admitted_at        timestamptz,
    started_at         timestamptz,
    finished_at        timestamptz,
    exit_code          integer,
    preemption_count   integer NOT NULL DEFAULT 0,
    -- a stop the platform asked for: 'cancel' or 'preempt' (then preempt_by names the job)
    stop_requested     text CHECK (stop_requested IN ('cancel', 'preempt')),
    stop_requested_at  timestamptz,
    preempt_by         uuid,
    estimated_start    timestamptz,
    updated_at         timestamptz NOT NULL DEFAULT now(),
    CHECK ((gpus = 0) = (gpu_type IS NULL)),
    CHECK ((command IS NULL) <> (script IS NULL))
);
CREATE INDEX jobs_tenant_list ON jobs (tenant_id, submitted_at DESC, id DESC);
CREATE INDEX jobs_active ON jobs (state) WHERE state IN ('queued', 'admitted', 'pending', 'running');
CREATE INDEX jobs_queue ON jobs ((coalesce(gpu_type, '')), queue_rank, submitted_at, id)
    WHERE state = 'queued';
CREATE INDEX jobs_project ON jobs (project_id) WHERE state IN ('queued', 'admitted', 'pending', 'running');
ALTER TABLE jobs ENABLE ROW LEVEL SECURITY;
CREATE POLICY jobs_read ON jobs FOR SELECT USING (aidc_can_read(tenant_id));
CREATE POLICY jobs_insert ON jobs FOR INSERT
    WITH CHECK (aidc_can_submit(tenant_id) AND user_id = aidc_ctx_user());
-- tenant admins change any job of theirs; members only their own (cancel)
CREATE POLICY jobs_update ON jobs FOR UPDATE
    USING (aidc_can_admin(tenant_id) OR (aidc_can_submit(tenant_id) AND user_id = aidc_ctx_user()));

-- Every state change of a job, with why.
CREATE TABLE job_events (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id     uuid NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    tenant_id  uuid NOT NULL,
    ts         timestamptz NOT NULL DEFAULT clock_timestamp(),
    from_state text,
    to_state   text NOT NULL,
    reason     text,
    details    jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX job_events_job ON job_events (job_id, id);
ALTER TABLE job_events ENABLE ROW LEVEL SECURITY;
CREATE POLICY job_events_read ON job_events FOR SELECT USING (aidc_can_read(tenant_id));
CREATE POLICY job_events_insert ON job_events FOR INSERT WITH CHECK (aidc_can_submit(tenant_id));

-- A job's runs: open while it runs, closed when it ends or is preempted. The
-- GPU-hour budget (and, later, metering) sums them.
CREATE TABLE job_runs (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id     uuid NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    tenant_id  uuid NOT NULL,
    project_id uuid NOT NULL,
    gpus       integer NOT NULL,
    gpu_type   text,
    cpus       integer NOT NULL,
    memory_gib integer NOT NULL,
    started_at timestamptz NOT NULL,
    ended_at   timestamptz,
    CHECK (ended_at IS NULL OR ended_at >= started_at)
);
CREATE INDEX job_runs_job ON job_runs (job_id) WHERE ended_at IS NULL;
CREATE INDEX job_runs_tenant ON job_runs (tenant_id, started_at);
ALTER TABLE job_runs ENABLE ROW LEVEL SECURITY;
CREATE POLICY job_runs_read ON job_runs FOR SELECT USING (aidc_can_read(tenant_id));
CREATE POLICY job_runs_write ON job_runs FOR ALL USING (aidc_ctx_platform_admin())
    WITH CHECK (aidc_ctx_platform_admin());

-- What the dispatcher must tell a backend: written with the decision, delivered
-- (with retries) after it committed.
CREATE TABLE outbox (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id          uuid NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    tenant_id       uuid NOT NULL,
    cluster_id      uuid NOT NULL REFERENCES clusters (id),
    action          text NOT NULL CHECK (action IN ('submit', 'cancel', 'preempt')),
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_error      text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    delivered_at    timestamptz
);
CREATE INDEX outbox_due ON outbox (next_attempt_at) WHERE delivered_at IS NULL;
ALTER TABLE outbox ENABLE ROW LEVEL SECURITY;
CREATE POLICY outbox_system ON outbox FOR ALL USING (aidc_ctx_role('system'))
    WITH CHECK (aidc_ctx_role('system') OR aidc_can_submit(tenant_id));

-- The place of a queued job in the queue of its GPU type, across tenants (row-
-- level security would hide the others' jobs; only the number is revealed).
CREATE FUNCTION aidc_queue_position(jid uuid) RETURNS bigint
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT count(*) + 1 FROM jobs o, jobs j
     WHERE j.id = jid AND j.state = 'queued' AND o.state = 'queued'
       AND coalesce(o.gpu_type, '') = coalesce(j.gpu_type, '')
       AND (o.queue_rank, o.submitted_at, o.id) < (j.queue_rank, j.submitted_at, j.id)
$$;
REVOKE ALL ON FUNCTION aidc_queue_position(uuid) FROM PUBLIC;

-- A cluster's inventory with what all tenants' admitted jobs hold of it: an
-- aggregate over every tenant, which row-level security would hide.
CREATE FUNCTION aidc_cluster_inventory(cid uuid) RETURNS json
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT coalesce(json_object_agg(i.resource, json_build_object(
               'total', i.total,
               'allocated', coalesce((
                   SELECT CASE WHEN i.resource = 'cpu' THEN sum(j.cpus * j.nodes)
                               WHEN i.resource = 'memory_gib' THEN sum(j.memory_gib * j.nodes)
                               ELSE sum(j.gpus * j.nodes) FILTER (WHERE 'gpu:' || j.gpu_type = i.resource)
                          END
                     FROM jobs j
                    WHERE j.cluster_id = cid AND j.state IN ('admitted', 'pending', 'running')), 0))
           ORDER BY i.resource), '{}'::json)
      FROM cluster_inventory i WHERE i.cluster_id = cid
$$;
REVOKE ALL ON FUNCTION aidc_cluster_inventory(uuid) FROM PUBLIC;

-- a project with unfinished jobs cannot be deleted
CREATE FUNCTION aidc_project_has_active_jobs(pid uuid) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT EXISTS (SELECT 1 FROM jobs WHERE project_id = pid
                    AND state IN ('queued', 'admitted', 'pending', 'running'))
$$;
REVOKE ALL ON FUNCTION aidc_project_has_active_jobs(uuid) FROM PUBLIC;

CREATE OR REPLACE FUNCTION aidc_grant_app(app regrole) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('GRANT USAGE ON SCHEMA public TO %s', app);
    EXECUTE format('REVOKE ALL ON aidc_schema_migrations FROM %s', app);
    EXECUTE format('GRANT SELECT ON aidc_schema_migrations TO %s', app);
    EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON users, user_roles, tenants, memberships,'
                   ' projects, api_tokens, revoked_sessions, login_failures, idempotency_keys,'
                   ' clusters, cluster_inventory, tenant_quotas, project_quotas, jobs, job_runs,'
                   ' outbox TO %s', app);
    EXECUTE format('REVOKE UPDATE, DELETE, TRUNCATE ON job_events FROM %s', app);
    EXECUTE format('GRANT SELECT, INSERT ON job_events TO %s', app);
    EXECUTE format('REVOKE UPDATE, DELETE, TRUNCATE ON audit_events FROM %s', app);
    EXECUTE format('GRANT SELECT, INSERT ON audit_events TO %s', app);
    EXECUTE format('GRANT EXECUTE ON FUNCTION aidc_user_memberships(uuid) TO %s', app);
    EXECUTE format('GRANT EXECUTE ON FUNCTION aidc_queue_position(uuid) TO %s', app);
    EXECUTE format('GRANT EXECUTE ON FUNCTION aidc_project_has_active_jobs(uuid) TO %s', app);
    EXECUTE format('GRANT EXECUTE ON FUNCTION aidc_cluster_inventory(uuid) TO %s', app);
    EXECUTE format('REVOKE ALL ON aidc_auth_epoch FROM %s', app);
    EXECUTE format('GRANT SELECT ON aidc_auth_epoch TO %s', app);
END $$;
