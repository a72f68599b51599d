-- 0021_allocations.sql - allocation requests (docs/allocations.md): a project's
-- PI (or a tenant admin) asks for resources for a period, platform admins
-- review; an approved request is the project's quota for its period.
--
-- * projects.pi_user_id: the project's principal investigator (a member of
--   its tenant), who may ask for the project's allocations;
-- * allocation_requests: what was asked (resources, gpu_hours, storage_gib,
--   the period, why, who pays) and, once approved, what was granted (the
--   approved_* columns: "approve with changes" keeps both). "expired" is not
--   stored: an approved request whose ends_on has passed reads as expired;
-- * allocation_comments: the review's thread.
--
-- Dates are UTC days; a period runs from the start of starts_on to the end of
-- ends_on.

ALTER TABLE projects ADD COLUMN pi_user_id uuid REFERENCES users (id) ON DELETE SET NULL;

CREATE TABLE allocation_requests (
    id                   uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id            uuid NOT NULL REFERENCES tenants (id),
    project_id           uuid NOT NULL REFERENCES projects (id),
    requested_by         uuid REFERENCES users (id) ON DELETE SET NULL,
    requested_by_name    text NOT NULL,
    state                text NOT NULL DEFAULT 'pending'
                         CHECK (state IN ('pending', 'approved', 'rejected', 'needs_info')),
    resources            jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(resources) = 'object'),
    gpu_hours            numeric CHECK (gpu_hours >= 0),
    storage_gib          numeric CHECK (storage_gib >= 0),
    starts_on            date NOT NULL,
    ends_on              date NOT NULL,
    justification        text NOT NULL CHECK (char_length(justification) BETWEEN 1 AND 8000),
    funding_ref          text NOT NULL DEFAULT '' CHECK (char_length(funding_ref) <= 200),
    renews               uuid REFERENCES allocation_requests (id),
    approved_resources   jsonb CHECK (jsonb_typeof(approved_resources) = 'object'),
    approved_gpu_hours   numeric CHECK (approved_gpu_hours >= 0),
    approved_storage_gib numeric CHECK (approved_storage_gib >= 0),
    decided_by           uuid REFERENCES users (id) ON DELETE SET NULL,
    decided_by_name      text,
    decided_at           timestamptz,
    reason               text CHECK (char_length(reason) <= 2000),
    -- when the janitor recorded allocation.expiring (once per request)
    expiry_noticed_at    timestamptz,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now(),
    CHECK (starts_on < ends_on)
);
CREATE INDEX allocation_requests_tenant ON allocation_requests (tenant_id, created_at DESC, id DESC);
CREATE INDEX allocation_requests_project ON allocation_requests (project_id, starts_on);
CREATE INDEX allocation_requests_open ON allocation_requests (created_at)
    WHERE state IN ('pending', 'needs_info');

-- Read like the tenant's projects and quotas. Asked by a tenant admin or the
-- project's PI (the handler says which; this is the second lock). Changed by
-- platform admins (decisions), and by the requester or a tenant admin (a
-- reply that puts a needs_info request back to pending).
ALTER TABLE allocation_requests ENABLE ROW LEVEL SECURITY;
CREATE POLICY allocation_requests_read ON allocation_requests FOR SELECT
    USING (aidc_can_read(tenant_id));
CREATE POLICY allocation_requests_insert ON allocation_requests FOR INSERT
    WITH CHECK (requested_by = aidc_ctx_user()
                AND (aidc_can_admin(tenant_id)
                     OR (aidc_can_submit(tenant_id)
                         AND EXISTS (SELECT 1 FROM projects p WHERE p.id = project_id
                                        AND p.tenant_id = allocation_requests.tenant_id
                                        AND p.pi_user_id = aidc_ctx_user()))));
CREATE POLICY allocation_requests_update ON allocation_requests FOR UPDATE
    USING (aidc_can_admin(tenant_id) OR requested_by = aidc_ctx_user());

CREATE TABLE allocation_comments (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    request_id  uuid NOT NULL REFERENCES allocation_requests (id),
    tenant_id   uuid NOT NULL REFERENCES tenants (id),
    author_id   uuid REFERENCES users (id) ON DELETE SET NULL,
    author_name text NOT NULL,
    -- 'needs_info': a platform admin's question that set the request to needs_info
    kind        text NOT NULL DEFAULT 'comment' CHECK (kind IN ('comment', 'needs_info')),
    text        text NOT NULL CHECK (char_length(text) BETWEEN 1 AND 8000),
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX allocation_comments_request ON allocation_comments (request_id, created_at);
ALTER TABLE allocation_comments ENABLE ROW LEVEL SECURITY;
CREATE POLICY allocation_comments_read ON allocation_comments FOR SELECT
    USING (aidc_can_read(tenant_id));
CREATE POLICY allocation_comments_insert ON allocation_comments FOR INSERT
    WITH CHECK (author_id = aidc_ctx_user() AND aidc_can_read(tenant_id));

-- GPU-hours project pid used between f and t: metered intervals plus what is
-- not metered yet (as reports count). Definer's rights: a job's rows may be
-- hidden from the reader (a member sees its own jobs), the project's total
-- is not; the application asks only for projects whose requests it can read.
-- The admission snapshot asks this for every running allocation at every round: the
-- project's intervals are found through their own index, not the period's of all.
CREATE INDEX usage_intervals_project ON usage_intervals (project_id, started_at);
CREATE FUNCTION aidc_allocation_used(pid uuid, f timestamptz, t timestamptz) RETURNS numeric
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT coalesce(sum(gpus * extract(epoch FROM e - s)), 0) / 3600 FROM (
        -- as aidc_usage_pieces, for one project
        SELECT u.gpus, greatest(u.started_at, f) AS s, least(u.ended_at, t) AS e
          FROM usage_intervals u
         WHERE u.project_id = pid AND u.started_at >= f - interval '1 hour'
           AND u.started_at < t AND u.ended_at > f
        UNION ALL
        SELECT x.gpus, x.s, x.e FROM aidc_usage_unmetered(f, t) x WHERE x.project_id = pid) p
$$;
REVOKE ALL ON FUNCTION aidc_allocation_used(uuid, timestamptz, timestamptz) FROM PUBLIC;

-- aidc_grant_app is wrapped, as in 0009.
ALTER FUNCTION aidc_grant_app(regrole) RENAME TO aidc_grant_app_before_0021;
CREATE FUNCTION aidc_grant_app(app regrole) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM aidc_grant_app_before_0021(app);
    EXECUTE format('GRANT SELECT, INSERT, UPDATE ON allocation_requests TO %s', app);
    EXECUTE format('GRANT SELECT, INSERT ON allocation_comments TO %s', app);
    EXECUTE format('GRANT EXECUTE ON FUNCTION aidc_allocation_used(uuid, timestamptz, timestamptz) TO %s', app);
END $$;
