-- 0006_billing.sql - metering (hour-cut usage intervals), capacity history,
-- effective-dated prices, invoices. docs/billing.md explains the rules.

-- ---- runs: where they ran, how far they are metered, how they ended -----------------

ALTER TABLE job_runs ADD COLUMN cluster_id uuid REFERENCES clusters (id);
-- everything of the run before this instant is in usage_intervals (NULL: nothing yet)
ALTER TABLE job_runs ADD COLUMN metered_to timestamptz;
-- 'preempted' for a run the platform evicted (its lost work is credited)
ALTER TABLE job_runs ADD COLUMN end_reason text;
-- the last checkpoint the job reported during this run (preemption credit)
ALTER TABLE job_runs ADD COLUMN checkpoint_at timestamptz;
-- the job's cluster is the run's for open runs, and the best there is for closed ones
-- (a requeue clears it): their MIG fractions are then known when they are metered
UPDATE job_runs r SET cluster_id = j.cluster_id FROM jobs j WHERE j.id = r.job_id;
-- the metering worker's work list: open runs and closed runs not metered to their end
CREATE INDEX job_runs_unmetered ON job_runs (id)
    WHERE metered_to IS NULL OR ended_at IS NULL OR metered_to < ended_at;

-- a job reports its checkpoints; a preemption credits the GPU time after the last one
ALTER TABLE jobs ADD COLUMN checkpoint_at timestamptz;

-- when the syncer last heard from a cluster about all its jobs: an open run can be
-- cut at an hour boundary only once the cluster said after it that the job still ran
ALTER TABLE clusters ADD COLUMN jobs_seen_at timestamptz;

-- The share of a whole GPU one unit of a GPU type is: a MIG slice counts its
-- fraction (cluster option gpu_fractions: {"a100-1g.10gb": 0.142857}), anything else 1.
CREATE FUNCTION aidc_gpu_fraction(options jsonb, gpu_type text) RETURNS numeric
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN jsonb_typeof(options -> 'gpu_fractions' -> gpu_type) = 'number'
                THEN (options -> 'gpu_fractions' ->> gpu_type)::numeric ELSE 1 END
$$;

-- ---- usage intervals ------------------------------------------------------------------

-- Each row is a piece of one run inside one UTC hour, so any hour, day, week or
-- month is a sum of whole rows. Written only by the metering worker; never
-- changed but for invoice_id, set once when a final invoice bills it.
CREATE TABLE usage_intervals (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id     bigint NOT NULL,
    job_id     uuid NOT NULL,
    tenant_id  uuid NOT NULL,
    project_id uuid NOT NULL,
    username   text NOT NULL,
    cluster_id uuid,
    gpu_type   text,
    gpus       numeric NOT NULL CHECK (gpus >= 0),  -- whole GPUs held (fractions count theirs)
    cpus       integer NOT NULL,
    memory_gib integer NOT NULL,
    started_at timestamptz NOT NULL,
    ended_at   timestamptz NOT NULL,
    period     date NOT NULL,  -- first day of its UTC month
    metered_at timestamptz NOT NULL DEFAULT now(),
    invoice_id uuid,           -- the final invoice that billed it
    CHECK (ended_at > started_at),
    CHECK (ended_at <= date_trunc('hour', started_at, 'UTC') + interval '1 hour'),
    CHECK (period = (date_trunc('month', started_at, 'UTC') AT TIME ZONE 'UTC')::date)
);
CREATE INDEX usage_intervals_tenant ON usage_intervals (tenant_id, started_at);
CREATE INDEX usage_intervals_time ON usage_intervals (started_at);
CREATE INDEX usage_intervals_job ON usage_intervals (job_id, started_at);
CREATE INDEX usage_intervals_unbilled ON usage_intervals (tenant_id, period) WHERE invoice_id IS NULL;
CREATE INDEX usage_intervals_invoice ON usage_intervals (invoice_id) WHERE invoice_id IS NOT NULL;
ALTER TABLE usage_intervals ENABLE ROW LEVEL SECURITY;
CREATE POLICY usage_intervals_read ON usage_intervals FOR SELECT USING (aidc_can_read(tenant_id));
CREATE POLICY usage_intervals_meter ON usage_intervals FOR INSERT WITH CHECK (aidc_ctx_platform_admin());
CREATE POLICY usage_intervals_bill ON usage_intervals FOR UPDATE
    USING (aidc_ctx_platform_admin() OR aidc_ctx_role('finance'));

-- Only invoice_id may change, and only from NULL: usage is never rewritten.
CREATE FUNCTION aidc_usage_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.invoice_id IS NOT NULL OR (to_jsonb(NEW) - 'invoice_id') <> (to_jsonb(OLD) - 'invoice_id') THEN
        RAISE EXCEPTION 'usage intervals are never changed' USING ERRCODE = 'insufficient_privilege';
    END IF;
    -- only an invoice of the interval's tenant, for its month or a later one, bills it
    IF NOT EXISTS (SELECT 1 FROM invoices i WHERE i.id = NEW.invoice_id
                      AND i.tenant_id = NEW.tenant_id AND i.period >= NEW.period) THEN
        RAISE EXCEPTION 'invoice % cannot bill this interval', NEW.invoice_id
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER usage_intervals_guard BEFORE UPDATE ON usage_intervals
    FOR EACH ROW EXECUTE FUNCTION aidc_usage_guard();

-- GPU-seconds per tenant, project and month of the metered intervals, kept by
-- the metering statement as it inserts them: the monthly GPU-hour budget reads
-- this instead of summing a month of intervals at every admission round.
CREATE TABLE usage_monthly (
    tenant_id   uuid NOT NULL,
    project_id  uuid NOT NULL,
    period      date NOT NULL,
    gpu_seconds numeric NOT NULL DEFAULT 0,
    PRIMARY KEY (period, tenant_id, project_id)
);
ALTER TABLE usage_monthly ENABLE ROW LEVEL SECURITY;
CREATE POLICY usage_monthly_read ON usage_monthly FOR SELECT USING (aidc_can_read(tenant_id));
CREATE POLICY usage_monthly_meter ON usage_monthly FOR ALL USING (aidc_ctx_platform_admin())
    WITH CHECK (aidc_ctx_platform_admin());

-- What runs used between f and t (clipped to them) that is not metered yet:
-- open runs since they were last cut, closed ones not yet cut to their end.
CREATE FUNCTION aidc_usage_unmetered(f timestamptz, t timestamptz)
RETURNS TABLE (tenant_id uuid, project_id uuid, username text, job_id uuid, run_id bigint,
               cluster_id uuid, gpu_type text, gpus numeric, cpus integer, memory_gib integer,
               s timestamptz, e timestamptz)
LANGUAGE sql STABLE AS $$
    -- cut at UTC hours as the metering worker will, so reports by day or hour agree
    -- before and after it did
    SELECT r.tenant_id, r.project_id, j.username, r.job_id, r.id, r.cluster_id, r.gpu_type,
           r.gpus * aidc_gpu_fraction(c.options, r.gpu_type), r.cpus, r.memory_gib,
           greatest(coalesce(r.metered_to, r.started_at), f, h.h),
           least(coalesce(r.ended_at, now()), t, h.h + interval '1 hour')
      FROM job_runs r JOIN jobs j ON j.id = r.job_id LEFT JOIN clusters c ON c.id = r.cluster_id
     CROSS JOIN LATERAL generate_series(
           date_trunc('hour', greatest(coalesce(r.metered_to, r.started_at), f), 'UTC'),
           least(coalesce(r.ended_at, now()), t) - interval '1 microsecond',
           interval '1 hour') h(h)
     WHERE (r.metered_to IS NULL OR r.ended_at IS NULL OR r.metered_to < r.ended_at)
       AND coalesce(r.metered_to, r.started_at) < t AND coalesce(r.ended_at, now()) > f
$$;

-- Usage between f and t, clipped to them: the metered intervals plus what is
-- not metered yet. Reports read this, so they include the running hour.
CREATE FUNCTION aidc_usage_pieces(f timestamptz, t timestamptz)
RETURNS TABLE (tenant_id uuid, project_id uuid, username text, job_id uuid, run_id bigint,
               cluster_id uuid, gpu_type text, gpus numeric, cpus integer, memory_gib integer,
               s timestamptz, e timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT u.tenant_id, u.project_id, u.username, u.job_id, u.run_id, u.cluster_id, u.gpu_type,
           u.gpus, u.cpus, u.memory_gib, greatest(u.started_at, f), least(u.ended_at, t)
      FROM usage_intervals u
     WHERE u.started_at >= f - interval '1 hour' AND u.started_at < t AND u.ended_at > f
    UNION ALL
    SELECT * FROM aidc_usage_unmetered(f, t)
$$;

-- ---- capacity over time (utilization reports) -----------------------------------------

CREATE TABLE capacity_hours (
    cluster_id uuid NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    resource   text NOT NULL,
    hour       timestamptz NOT NULL,
    total      bigint NOT NULL CHECK (total >= 0),
    PRIMARY KEY (cluster_id, resource, hour)
);

-- ---- prices ---------------------------------------------------------------------------

-- Effective-dated and never edited: a change is a new row. Prices start on a
-- whole UTC hour, so each hour-cut interval has exactly one price.
CREATE TABLE prices (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    resource       text NOT NULL CHECK (resource ~ '^(gpu:[a-z0-9][a-z0-9._-]{0,31}|cpu|memory_gib)$'),
    tenant_id      uuid REFERENCES tenants (id),  -- NULL: the default price
    unit_price     numeric NOT NULL CHECK (unit_price >= 0 AND unit_price < 1e12),
    currency       text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    effective_from timestamptz NOT NULL
                   CHECK (effective_from = date_trunc('hour', effective_from, 'UTC')),
    created_by     text NOT NULL,  -- who asked for it
    approved_by    text,           -- the second person (dual approval)
    approval_id    uuid,
    created_at     timestamptz NOT NULL DEFAULT now(),
    UNIQUE NULLS NOT DISTINCT (resource, tenant_id, effective_from)
);
CREATE INDEX prices_lookup ON prices (resource, tenant_id, effective_from DESC);
ALTER TABLE prices ENABLE ROW LEVEL SECURITY;
-- defaults are public; a tenant's own prices are its business (and finance's)
CREATE POLICY prices_read ON prices FOR SELECT
    USING (tenant_id IS NULL OR aidc_ctx_platform_admin() OR aidc_ctx_role('finance')
           OR tenant_id = ANY (aidc_ctx_uuids('aidc.read_tenants')));
-- only as an approved operation: a second person said yes
CREATE POLICY prices_insert ON prices FOR INSERT
    WITH CHECK ((aidc_ctx_platform_admin() OR aidc_ctx_role('finance'))
                AND approval_id IS NOT NULL AND approved_by IS NOT NULL);

-- Finance asks for price changes itself (a platform admin approves them): it
-- may file those requests and read its own.
CREATE POLICY approvals_finance_request ON approvals FOR INSERT
    WITH CHECK (aidc_ctx_role('finance') AND requested_by = aidc_ctx_user()
                AND action = 'price.create' AND method = 'POST' AND path = '/api/v1/prices'
                AND state = 'pending' AND decided_by IS NULL AND result IS NULL);
-- finance sees its own requests and the pending price requests (asking again for one
-- finds it), and lets expired price requests lapse as every request path does
CREATE POLICY approvals_own_read ON approvals FOR SELECT
    USING (requested_by = aidc_ctx_user()
           OR (aidc_ctx_role('finance') AND action = 'price.create'));
CREATE POLICY approvals_finance_expire ON approvals FOR UPDATE
    USING (aidc_ctx_role('finance') AND action = 'price.create' AND state = 'pending'
           AND expires_at <= now())
    WITH CHECK (state = 'expired');

-- ---- invoices -------------------------------------------------------------------------

CREATE TABLE invoices (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id    uuid NOT NULL REFERENCES tenants (id),
    period       date NOT NULL CHECK (extract(day FROM period) = 1),
    state        text NOT NULL DEFAULT 'draft' CHECK (state IN ('draft', 'final')),
    currency     text CHECK (currency ~ '^[A-Z]{3}$'),
    total        numeric NOT NULL DEFAULT 0,
    generated_at timestamptz NOT NULL DEFAULT now(),
    generated_by text NOT NULL,
    finalized_at timestamptz,
    finalized_by text,
    UNIQUE (tenant_id, period)
);
CREATE INDEX invoices_period ON invoices (period DESC, tenant_id);
ALTER TABLE invoices ENABLE ROW LEVEL SECURITY;
-- finance and platform admins see all; a tenant's readers pass here, and the
-- statements narrow them to its admins (read-only transactions carry only the
-- tenants an actor reads, not the ones it administers)
CREATE POLICY invoices_read ON invoices FOR SELECT
    USING (aidc_ctx_role('finance') OR aidc_can_read(tenant_id));
CREATE POLICY invoices_write ON invoices FOR ALL
    USING (aidc_ctx_platform_admin() OR aidc_ctx_role('finance'))
    WITH CHECK (aidc_ctx_platform_admin() OR aidc_ctx_role('finance'));

CREATE TABLE invoice_lines (
    invoice_id      uuid NOT NULL REFERENCES invoices (id) ON DELETE CASCADE,
    line_no         integer NOT NULL,
    tenant_id       uuid NOT NULL,
    project_id      uuid NOT NULL,
    project         text NOT NULL,  -- slug and name as they were when it was billed
    project_name    text NOT NULL,
    resource        text NOT NULL,
    kind            text NOT NULL CHECK (kind IN ('usage', 'credit', 'adjustment')),
    original_period date,  -- an adjustment's own month
    quantity        numeric NOT NULL,
    unit            text NOT NULL,
    unit_price      numeric NOT NULL,
    amount          numeric NOT NULL,
    PRIMARY KEY (invoice_id, line_no)
);
ALTER TABLE invoice_lines ENABLE ROW LEVEL SECURITY;
CREATE POLICY invoice_lines_read ON invoice_lines FOR SELECT
    USING (aidc_ctx_role('finance') OR aidc_can_read(tenant_id));
CREATE POLICY invoice_lines_write ON invoice_lines FOR ALL
    USING (aidc_ctx_platform_admin() OR aidc_ctx_role('finance'))
    WITH CHECK (aidc_ctx_platform_admin() OR aidc_ctx_role('finance'));

-- A final invoice and its lines never change, whoever asks.
CREATE FUNCTION aidc_invoice_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'invoices' THEN
        IF OLD.state = 'final' THEN
            RAISE EXCEPTION 'invoice % is final', OLD.id USING ERRCODE = 'insufficient_privilege';
        END IF;
    ELSIF EXISTS (SELECT 1 FROM invoices WHERE id = OLD.invoice_id AND state = 'final') THEN
        RAISE EXCEPTION 'invoice % is final', OLD.invoice_id USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN CASE TG_OP WHEN 'DELETE' THEN OLD ELSE NEW END;
END $$;
CREATE TRIGGER invoices_guard BEFORE UPDATE OR DELETE ON invoices
    FOR EACH ROW EXECUTE FUNCTION aidc_invoice_guard();
CREATE TRIGGER invoice_lines_guard BEFORE UPDATE OR DELETE ON invoice_lines
    FOR EACH ROW EXECUTE FUNCTION aidc_invoice_guard();

-- ... nor gains lines, and no invoice is born final (finalizing is an UPDATE of a draft)
CREATE FUNCTION aidc_invoice_insert_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    -- nested: NEW of the other table has no such field
    IF TG_TABLE_NAME = 'invoices' THEN
        IF NEW.state <> 'draft' THEN
            RAISE EXCEPTION 'an invoice starts as a draft' USING ERRCODE = 'insufficient_privilege';
        END IF;
    ELSIF EXISTS (SELECT 1 FROM invoices WHERE id = NEW.invoice_id AND state = 'final') THEN
        RAISE EXCEPTION 'invoice % is final', NEW.invoice_id USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER invoices_insert_guard BEFORE INSERT ON invoices
    FOR EACH ROW EXECUTE FUNCTION aidc_invoice_insert_guard();
CREATE TRIGGER invoice_lines_insert_guard BEFORE INSERT ON invoice_lines
    FOR EACH ROW EXECUTE FUNCTION aidc_invoice_insert_guard();

-- The lines of tenant t's invoice for month p, rated at the prices in effect
-- when each interval happened (the tenant's own first, else the default).
-- marked NULL: what a draft bills now - the month's unbilled intervals plus
-- late ones of months whose invoice is already final (adjustments); marked =
-- an invoice id: exactly the intervals that invoice has claimed. A GPU
-- interval of a preempted run after its last checkpoint is also credited.
-- A resource without a price yields a row with a NULL unit_price.
CREATE FUNCTION aidc_invoice_compute(t uuid, p date, marked uuid)
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
    q AS (
        SELECT iv.project_id, v.res, iv.period, iv.started_at,
               CASE WHEN iv.period = p THEN 'usage' ELSE 'adjustment' END AS kind,
               v.n * extract(epoch FROM iv.ended_at - iv.started_at) / 3600 AS hours
          FROM iv CROSS JOIN LATERAL (VALUES ('gpu:' || iv.gpu_type, iv.gpus),
                                             ('cpu', iv.cpus::numeric),
                                             ('memory_gib', iv.memory_gib::numeric)) v(res, n)
         WHERE v.n > 0 AND v.res IS NOT NULL
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

-- ---- privileges --------------------------------------------------------------------

-- 0004's grants stay as they are, under another name; this adds billing's.
ALTER FUNCTION aidc_grant_app(regrole) RENAME TO aidc_grant_app_0004;
CREATE FUNCTION aidc_grant_app(app regrole) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM aidc_grant_app_0004(app);
    EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON capacity_hours, usage_monthly,'
                   ' invoices, invoice_lines TO %s', app);
    -- prices are never edited in place; usage only gains its invoice
    EXECUTE format('REVOKE UPDATE, DELETE, TRUNCATE ON prices, usage_intervals FROM %s', app);
    EXECUTE format('GRANT SELECT, INSERT ON prices, usage_intervals TO %s', app);
    EXECUTE format('GRANT UPDATE (invoice_id) ON usage_intervals TO %s', app);
END $$;
