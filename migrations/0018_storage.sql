-- 0018_storage.sql - quotas, measurement and metering of the tenants' storage
-- spaces (storage/space.h: <root>/<tenant>/projects|home|datasets/<name>).
-- docs/storage-quotas.md explains the rules.
--
-- * quotas: storage_gib in a project's quota limits that project's space;
--   home_storage_gib in a tenant's quota limits each member's home there
--   (storage_gib in a tenant's quota stays the limit of its images);
-- * storage_spaces: the latest measurement of each space (the storage worker);
-- * storage_usage: GiB-hours of each space cut into UTC hours, as
--   usage_intervals are for jobs; priced as resource storage_gib and invoiced.

-- ---- quotas ---------------------------------------------------------------------------

ALTER TABLE tenant_quotas DROP CONSTRAINT tenant_quotas_resource_check;
ALTER TABLE tenant_quotas ADD CONSTRAINT tenant_quotas_resource_check CHECK (resource ~
    '^(gpu:[a-z0-9][a-z0-9._-]{0,31}|cpu|memory_gib|jobs|gpu_hours_month|storage_gib|home_storage_gib)$');
ALTER TABLE project_quotas DROP CONSTRAINT project_quotas_resource_check;
ALTER TABLE project_quotas ADD CONSTRAINT project_quotas_resource_check CHECK (resource ~
    '^(gpu:[a-z0-9][a-z0-9._-]{0,31}|cpu|memory_gib|jobs|gpu_hours_month|storage_gib)$');

-- ---- measurements ---------------------------------------------------------------------

-- The latest figures of each space found on disk. bytes are allocated blocks
-- (what the space holds of the disk), entries the files and directories
-- beneath it; complete is false when the walk stopped at
-- AIDC_STORAGE_SCAN_MAX_ENTRIES (the figures are then a lower bound).
CREATE TABLE storage_spaces (
    tenant_id   uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    kind        text NOT NULL CHECK (kind IN ('project', 'home', 'dataset')),
    name        text NOT NULL CHECK (name ~ '^[a-z][a-z0-9._-]{0,62}$'),
    -- a project space's project (the live one of that slug, else the last deleted one)
    project_id  uuid REFERENCES projects (id) ON DELETE SET NULL,
    bytes       bigint NOT NULL CHECK (bytes >= 0),
    entries     bigint NOT NULL CHECK (entries >= 0),
    complete    boolean NOT NULL,
    measured_at timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, kind, name)
);
CREATE INDEX storage_spaces_project ON storage_spaces (project_id) WHERE project_id IS NOT NULL;
ALTER TABLE storage_spaces ENABLE ROW LEVEL SECURITY;
CREATE POLICY storage_spaces_read ON storage_spaces FOR SELECT USING (aidc_can_read(tenant_id));
CREATE POLICY storage_spaces_measure ON storage_spaces FOR ALL USING (aidc_ctx_platform_admin())
    WITH CHECK (aidc_ctx_platform_admin());

-- When the last whole pass over the storage root began: every space found then
-- was measured at or after it. An invoice is finalized only once a pass began
-- after its month (the tenant's last hours of storage are metered by then).
CREATE TABLE storage_scan (
    one     boolean PRIMARY KEY DEFAULT true CHECK (one),
    last_at timestamptz NOT NULL
);

-- ---- metering -------------------------------------------------------------------------

-- Each row is what one space held during a piece of one UTC hour: a
-- measurement adds the time since the space's previous one, at the bytes it
-- found, cut at hour boundaries. Never changed but for invoice_id, as
-- usage_intervals.
CREATE TABLE storage_usage (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id  uuid NOT NULL,
    project_id uuid,  -- a project space's project; NULL for homes and datasets
    kind       text NOT NULL CHECK (kind IN ('project', 'home', 'dataset')),
    name       text NOT NULL,
    username   text,  -- a home's owner
    bytes      bigint NOT NULL CHECK (bytes >= 0),
    started_at timestamptz NOT NULL,
    ended_at   timestamptz NOT NULL,
    period     date NOT NULL,  -- first day of its UTC month
    metered_at timestamptz NOT NULL DEFAULT now(),
    invoice_id uuid,           -- the final invoice that billed it
    CHECK (ended_at > started_at),
    CHECK (ended_at <= date_trunc('hour', started_at, 'UTC') + interval '1 hour'),
    CHECK (period = (date_trunc('month', started_at, 'UTC') AT TIME ZONE 'UTC')::date)
);
CREATE INDEX storage_usage_tenant ON storage_usage (tenant_id, started_at);
CREATE INDEX storage_usage_time ON storage_usage (started_at);
CREATE INDEX storage_usage_unbilled ON storage_usage (tenant_id, period) WHERE invoice_id IS NULL;
CREATE INDEX storage_usage_invoice ON storage_usage (invoice_id) WHERE invoice_id IS NOT NULL;
ALTER TABLE storage_usage ENABLE ROW LEVEL SECURITY;
CREATE POLICY storage_usage_read ON storage_usage FOR SELECT USING (aidc_can_read(tenant_id));
CREATE POLICY storage_usage_meter ON storage_usage FOR INSERT WITH CHECK (aidc_ctx_platform_admin());
CREATE POLICY storage_usage_bill ON storage_usage FOR UPDATE
    USING (aidc_ctx_platform_admin() OR aidc_ctx_role('finance'));
-- only invoice_id changes, once, to an invoice of the row's tenant (0006's guard)
CREATE TRIGGER storage_usage_guard BEFORE UPDATE ON storage_usage
    FOR EACH ROW EXECUTE FUNCTION aidc_usage_guard();

-- Storage between f and t, clipped to them: metered pieces only (storage is
-- known at measurements, so nothing is "not yet metered" as an open run is).
CREATE FUNCTION aidc_storage_pieces(f timestamptz, t timestamptz)
RETURNS TABLE (tenant_id uuid, project_id uuid, username text, kind text, name text,
               bytes bigint, s timestamptz, e timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT u.tenant_id, u.project_id, u.username, u.kind, u.name, u.bytes,
           greatest(u.started_at, f), least(u.ended_at, t)
      FROM storage_usage u
     WHERE u.started_at >= f - interval '1 hour' AND u.started_at < t AND u.ended_at > f
$$;

-- ---- prices and invoices --------------------------------------------------------------

ALTER TABLE prices DROP CONSTRAINT prices_resource_check;
ALTER TABLE prices ADD CONSTRAINT prices_resource_check
    CHECK (resource ~ '^(gpu:[a-z0-9][a-z0-9._-]{0,31}|cpu|memory_gib|storage_gib)$');

-- homes and datasets belong to no project: their storage lines name none
ALTER TABLE invoice_lines ALTER COLUMN project_id DROP NOT NULL;

-- 0006's rating, with the storage pieces of the month (resource storage_gib,
-- GiB-hours) beside the jobs' intervals; everything else is as it was.
CREATE OR REPLACE FUNCTION aidc_invoice_compute(t uuid, p date, marked uuid)
RETURNS TABLE (project_id uuid, resource text, kind text, original_period date,
               unit_price numeric, currency text, quantity numeric)
LANGUAGE sql STABLE AS $$
    WITH iv AS (
        SELECT u.* FROM usage_intervals u
         WHERE u.tenant_id = t AND marked IS NOT NULL AND u.invoice_id = marked
        UNION ALL
        SELECT u.* FROM usage_intervals u
         WHERE u.tenant_id = t AND marked IS NULL AND u.invoice_id IS NULL
           AND (u.period = p OR (u.period < p AND EXISTS (
                 SELECT 1 FROM invoices i WHERE i.tenant_id = t AND i.period = u.period
                    AND i.state = 'final')))),
    sv AS (
        SELECT s.* FROM storage_usage s
         WHERE s.tenant_id = t AND marked IS NOT NULL AND s.invoice_id = marked
        UNION ALL
        SELECT s.* FROM storage_usage s
         WHERE s.tenant_id = t AND marked IS NULL AND s.invoice_id IS NULL
           AND (s.period = p OR (s.period < p AND EXISTS (
                 SELECT 1 FROM invoices i WHERE i.tenant_id = t AND i.period = s.period
                    AND i.state = 'final')))),
    q AS (
        SELECT iv.project_id, v.res, iv.period, iv.started_at,
               CASE WHEN iv.period = p THEN 'usage' ELSE 'adjustment' END AS kind,
               v.n * extract(epoch FROM iv.ended_at - iv.started_at) / 3600 AS hours
          FROM iv CROSS JOIN LATERAL (VALUES ('gpu:' || iv.gpu_type, iv.gpus),
                                             ('cpu', iv.cpus::numeric),
                                             ('memory_gib', iv.memory_gib::numeric)) v(res, n)
         WHERE v.n > 0 AND v.res IS NOT NULL
        UNION ALL
        SELECT sv.project_id, 'storage_gib', sv.period, sv.started_at,
               CASE WHEN sv.period = p THEN 'usage' ELSE 'adjustment' END,
               sv.bytes * extract(epoch FROM sv.ended_at - sv.started_at) / 3600 / 1073741824
          FROM sv WHERE sv.bytes > 0
        UNION ALL
        -- a preempted run is credited once, by the invoice that bills its last interval,
        -- for all its GPU time after the checkpoint - also hours an earlier invoice billed
        SELECT u.project_id, 'gpu:' || u.gpu_type, iv.period, u.started_at, 'credit',
               -u.gpus * extract(epoch FROM u.ended_at
                                 - greatest(u.started_at, coalesce(r.checkpoint_at, r.started_at))) / 3600
          FROM iv JOIN job_runs r ON r.id = iv.run_id AND r.ended_at = iv.ended_at
          JOIN usage_intervals u ON u.run_id = r.id
         WHERE r.end_reason = 'preempted' AND u.gpus > 0
           AND u.ended_at > coalesce(r.checkpoint_at, r.started_at)),
    -- prices start on whole hours: every interval of an hour has the hour's price, so
    -- the hours are priced once each, not every interval
    h AS (SELECT q.project_id, q.res, q.kind, q.period,
                 date_trunc('hour', q.started_at, 'UTC') AS hour, sum(q.hours) AS hours
            FROM q GROUP BY 1, 2, 3, 4, 5)
    SELECT h.project_id, h.res, h.kind,
           CASE WHEN h.kind = 'adjustment' THEN h.period END,
           pr.unit_price, pr.currency, sum(h.hours)
      FROM h LEFT JOIN LATERAL (
               SELECT x.unit_price, x.currency FROM prices x
                WHERE x.resource = h.res AND (x.tenant_id = t OR x.tenant_id IS NULL)
                  AND x.effective_from <= h.hour
                ORDER BY x.tenant_id IS NULL, x.effective_from DESC LIMIT 1) pr ON true
     GROUP BY 1, 2, 3, 4, 5, 6
$$;

-- ---- privileges -----------------------------------------------------------------------

-- aidc_grant_app is wrapped, as in 0009.
ALTER FUNCTION aidc_grant_app(regrole) RENAME TO aidc_grant_app_before_0018;
CREATE FUNCTION aidc_grant_app(app regrole) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM aidc_grant_app_before_0018(app);
    EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON storage_spaces TO %s', app);
    EXECUTE format('GRANT SELECT, INSERT, UPDATE ON storage_scan TO %s', app);
    -- storage usage, as job usage, is never rewritten: it only gains its invoice
    EXECUTE format('REVOKE ALL ON storage_usage FROM %s', app);
    EXECUTE format('GRANT SELECT, INSERT ON storage_usage TO %s', app);
    EXECUTE format('GRANT UPDATE (invoice_id) ON storage_usage TO %s', app);
END $$;
