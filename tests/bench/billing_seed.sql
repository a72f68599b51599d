-- billing_seed.sql - usage data set of tests/bench/billing.sh: closed, fully
-- metered job runs cut into hour-long usage intervals over :months UTC months
-- from :'start', as the metering worker would have written them, plus the
-- jobs behind them, usage_monthly, a finance user, a local cluster and prices.
-- Run as the owner role (row-level security does not apply to the table owner)
-- after seed.sql has made the tenants, projects and users:
--
--   psql -v runs=500000 -v tenants=200 -v projects=10 -v users=20 \
--        -v start=2025-12-01 -v months=12 -v admin=bench -f billing_seed.sql
--
-- Shape (deterministic but for uuids: setseed):
--   - :runs runs; run r lasts over len = 1..19 UTC hours (r % 20 + 1; 10 when
--     r % 20 = 19: 10 on average), starting in its first hour at a random
--     second of the first half hour and ending at a random second of the second
--     half of its last hour, so it is cut into exactly len intervals and the
--     data set has exactly 10 x :runs intervals;
--   - tenants are skewed: tenant n gets its runs with probability
--     sqrt(n/T) - sqrt((n-1)/T), so tenant-001 has ~7 % of all usage and the
--     median tenant ~0.25 %; projects and users uniform inside the tenant;
--   - 50 % a100, 25 % h100, 10 % a100-1g.10gb (a MIG slice: 0.142857 of a GPU
--     per slice, as the cluster option gpu_fractions says), 15 % CPU only;
--     1, 2, 4 or 8 GPUs (slices), 8 cores and 64 GiB per GPU (2 / 8 per slice;
--     16 cores and 64 GiB without GPUs);
--   - every run r with r % 20 = 7 was preempted (end_reason 'preempted', half
--     of them after a checkpoint at 60 % of the run) and its job resumed in run
--     r + 1, which starts in the hour after it ended: 475 jobs per 500 runs;
--   - every run is closed and metered to its end (metered_to = ended_at), so
--     the metering worker has nothing to do; jobs are 'succeeded';
--   - every month but the last has final invoices (steady state) whose ids the
--     intervals carry; the last month has none: billing.sh generates them.
-- Prices (CNY, defaults from 2025-01-01): gpu:a100 12.50, gpu:h100 28.00,
-- gpu:a100-1g.10gb 13.00, cpu 0.08, memory_gib 0.01; gpu:a100 changes to 11.90
-- in the middle of the last month (its 15th, 12:00 UTC); overrides: tenant-001
-- gpu:a100 10.00, tenant-002 gpu:h100 24.00 from the fourth month, tenant-003..
-- tenant-010 cpu 0.06 from the seventh month.
\set ON_ERROR_STOP on

SET work_mem = '256MB';
SET maintenance_work_mem = '512MB';
SET TimeZone = 'UTC';
SELECT setseed(0.4242) \gset

BEGIN;

-- finance reads every tenant and makes the invoices (the admin's password)
INSERT INTO users (username, display_name, email, password_hash)
SELECT 'finance', 'Bench finance', 'finance@bench.invalid', password_hash
  FROM users WHERE username = :'admin';
INSERT INTO user_roles (user_id, role) SELECT id, 'finance' FROM users WHERE username = 'finance';

INSERT INTO clusters (name, kind, options, healthy)
VALUES ('gpu', 'local', '{"gpus": {"a100": 512, "h100": 256, "a100-1g.10gb": 112},
                          "gpu_fractions": {"a100-1g.10gb": 0.142857},
                          "cpus": 100000, "memory_gib": 1000000}', true);
INSERT INTO cluster_inventory (cluster_id, resource, total)
SELECT c.id, v.res, v.n FROM clusters c,
       (VALUES ('gpu:a100', 512), ('gpu:h100', 256), ('gpu:a100-1g.10gb', 112),
               ('cpu', 100000), ('memory_gib', 1000000)) v(res, n)
 WHERE c.name = 'gpu';

CREATE TEMP TABLE bench_tenant ON COMMIT DROP AS
SELECT substr(slug, 8)::int AS tn, id FROM tenants WHERE slug ~ '^tenant-[0-9]+$';
CREATE TEMP TABLE bench_project ON COMMIT DROP AS
SELECT substr(t.slug, 8)::int AS tn, substr(p.slug, 9)::int AS pn, p.id
  FROM projects p JOIN tenants t ON t.id = p.tenant_id
 WHERE t.slug ~ '^tenant-[0-9]+$' AND p.slug ~ '^project-[0-9]+$';
CREATE TEMP TABLE bench_user ON COMMIT DROP AS
SELECT split_part(username, '-', 2)::int AS tn, split_part(username, '-', 3)::int AS un, id, username
  FROM users WHERE username ~ '^user-[0-9]+-[0-9]+$';
ANALYZE bench_tenant, bench_project, bench_user;

-- one row per run: who, what, and when (hours from :'start')
CREATE TEMP TABLE bench_base ON COMMIT DROP AS
SELECT g AS r,
       1 + least(floor(:tenants * power(random(), 2))::int, :tenants - 1) AS tn,
       1 + least(floor(:projects * random())::int, :projects - 1) AS pn,
       1 + least(floor(:users * random())::int, :users - 1) AS un,
       random() AS ug,
       (ARRAY[1, 2, 4, 8])[1 + floor(4 * random())::int] AS gmul,
       floor((extract(epoch FROM (:'start'::timestamptz + :months * interval '1 month')
                               - :'start'::timestamptz) / 3600 - 45) * random())::int AS h0,
       CASE WHEN g % 20 = 19 THEN 10 ELSE g % 20 + 1 END AS len,
       floor(1800 * random())::int AS a,         -- start: seconds into its first hour
       1801 + floor(1799 * random())::int AS b,  -- end: seconds into its last hour
       random() < 0.5 AS ckpt,
       gen_random_uuid() AS job_id
  FROM generate_series(0, :runs - 1) g;
CREATE INDEX ON bench_base (r);
ANALYZE bench_base;

-- a resumed run (r % 20 = 8) is its preempted predecessor's job, an hour or two later
CREATE TEMP TABLE bench_runs ON COMMIT DROP AS
WITH x AS (
    SELECT b.r, j.tn, j.pn, j.un, j.job_id, j.gmul, b.len, b.a, b.b, b.ckpt,
           CASE WHEN j.ug < 0.5 THEN 'a100' WHEN j.ug < 0.75 THEN 'h100'
                WHEN j.ug < 0.85 THEN 'a100-1g.10gb' END AS gpu_type,
           CASE WHEN b.r % 20 = 8 THEN j.h0 + j.len + (b.r / 20) % 2 ELSE b.h0 END AS h0
      FROM bench_base b JOIN bench_base j ON j.r = b.r - (b.r % 20 = 8)::int)
SELECT x.r, x.job_id, t.id AS tenant_id, p.id AS project_id, u.id AS user_id, u.username,
       x.gpu_type, CASE WHEN x.gpu_type IS NULL THEN 0 ELSE x.gmul END AS gpus,
       CASE WHEN x.gpu_type = 'a100-1g.10gb' THEN 0.142857 ELSE 1 END AS frac,
       CASE WHEN x.gpu_type IS NULL THEN 16 WHEN x.gpu_type = 'a100-1g.10gb' THEN 2 * x.gmul
            ELSE 8 * x.gmul END AS cpus,
       CASE WHEN x.gpu_type IS NULL THEN 64 WHEN x.gpu_type = 'a100-1g.10gb' THEN 8 * x.gmul
            ELSE 64 * x.gmul END AS memory_gib,
       x.len,
       :'start'::timestamptz + x.h0 * interval '1 hour' + x.a * interval '1 second' AS s,
       :'start'::timestamptz + (x.h0 + x.len - 1) * interval '1 hour' + x.b * interval '1 second' AS e,
       x.r % 20 = 7 AS preempted, x.ckpt
  FROM x JOIN bench_tenant t ON t.tn = x.tn
  JOIN bench_project p ON p.tn = x.tn AND p.pn = x.pn
  JOIN bench_user u ON u.tn = x.tn AND u.un = x.un;
CREATE INDEX ON bench_runs (r);
ANALYZE bench_runs;

INSERT INTO jobs (id, tenant_id, project_id, user_id, username, name, state, preemptible,
                  cluster_id, gpus, gpu_type, cpus, memory_gib, time_limit_minutes, command,
                  submitted_at, admitted_at, started_at, finished_at, exit_code,
                  preemption_count, updated_at)
SELECT b.job_id, b.tenant_id, b.project_id, b.user_id, b.username, 'train-' || b.r, 'succeeded',
       b.preempted, c.id, b.gpus, b.gpu_type, b.cpus, b.memory_gib, 1440,
       '["python", "train.py"]', b.s - interval '10 minutes', b.s - interval '1 minute', b.s,
       coalesce(n.e, b.e), 0, b.preempted::int, coalesce(n.e, b.e)
  FROM bench_runs b CROSS JOIN (SELECT id FROM clusters WHERE name = 'gpu') c
  LEFT JOIN bench_runs n ON b.preempted AND n.r = b.r + 1
 WHERE b.r % 20 <> 8;

INSERT INTO job_runs (id, job_id, tenant_id, project_id, gpus, gpu_type, cpus, memory_gib,
                      started_at, ended_at, cluster_id, metered_to, end_reason, checkpoint_at)
OVERRIDING SYSTEM VALUE
SELECT b.r + 1, b.job_id, b.tenant_id, b.project_id, b.gpus, b.gpu_type, b.cpus, b.memory_gib,
       b.s, b.e, c.id, b.e, CASE WHEN b.preempted THEN 'preempted' END,
       CASE WHEN b.preempted AND b.ckpt THEN b.s + (b.e - b.s) * 0.6 END
  FROM bench_runs b CROSS JOIN (SELECT id FROM clusters WHERE name = 'gpu') c;
SELECT setval(pg_get_serial_sequence('job_runs', 'id'), (SELECT max(id) FROM job_runs)) AS _ \gset

-- The intervals, in the order the metering worker writes them (by run end).
-- The secondary indexes are dropped and rebuilt with their own definitions:
-- building them once is much faster than 5M random inserts into them.
CREATE TEMP TABLE bench_idx ON COMMIT DROP AS
SELECT indexrelid::regclass::text AS name, pg_get_indexdef(indexrelid) AS def
  FROM pg_index WHERE indrelid = 'usage_intervals'::regclass AND NOT indisprimary;
DO $$ DECLARE i record; BEGIN
    FOR i IN SELECT * FROM bench_idx LOOP EXECUTE format('DROP INDEX %s', i.name); END LOOP;
END $$;

-- Every month but the last is invoiced and final, as in steady state: its intervals
-- carry the final invoice that claimed them (so they leave usage_intervals_unbilled).
-- Those invoices have no lines and a zero total: the benchmark reads none of them.
CREATE TEMP TABLE bench_inv ON COMMIT DROP AS
SELECT gen_random_uuid() AS id, t.id AS tenant_id,
       (:'start'::date + m * interval '1 month')::date AS period
  FROM bench_tenant t CROSS JOIN generate_series(0, :months - 2) m;
INSERT INTO invoices (id, tenant_id, period, state, currency, total, generated_at, generated_by,
                      finalized_at, finalized_by)
SELECT id, tenant_id, period, 'final', 'CNY', 0, period + interval '1 month 1 day', 'bench-seed',
       period + interval '1 month 2 days', 'bench-seed'
  FROM bench_inv;
ANALYZE bench_inv;

INSERT INTO usage_intervals (run_id, job_id, tenant_id, project_id, username, cluster_id,
                             gpu_type, gpus, cpus, memory_gib, started_at, ended_at, period,
                             metered_at, invoice_id)
SELECT y.run_id, y.job_id, y.tenant_id, y.project_id, y.username, y.cluster_id, y.gpu_type,
       y.gpus, y.cpus, y.memory_gib, y.started_at, y.ended_at, y.period, y.metered_at, i.id
  FROM (SELECT b.r + 1, b.job_id, b.tenant_id, b.project_id, b.username, c.id, b.gpu_type,
               b.gpus * b.frac, b.cpus, b.memory_gib, x.s, x.e,
               (date_trunc('month', x.s, 'UTC') AT TIME ZONE 'UTC')::date AS period,
               b.e + interval '30 seconds', b.e AS run_end, b.r, k
          FROM bench_runs b CROSS JOIN (SELECT id FROM clusters WHERE name = 'gpu') c
         CROSS JOIN LATERAL generate_series(0, b.len - 1) k
         CROSS JOIN LATERAL (SELECT greatest(b.s, date_trunc('hour', b.s, 'UTC') + k * interval '1 hour') AS s,
                                    least(b.e, date_trunc('hour', b.s, 'UTC') + (k + 1) * interval '1 hour') AS e) x
       ) y (run_id, job_id, tenant_id, project_id, username, cluster_id, gpu_type, gpus, cpus,
            memory_gib, started_at, ended_at, period, metered_at, run_end, r, k)
  LEFT JOIN bench_inv i ON i.tenant_id = y.tenant_id AND i.period = y.period
 ORDER BY y.run_end, y.r, y.k;

DO $$ DECLARE i record; BEGIN
    FOR i IN SELECT * FROM bench_idx LOOP EXECUTE i.def; END LOOP;
END $$;

INSERT INTO usage_monthly (tenant_id, project_id, period, gpu_seconds)
SELECT tenant_id, project_id, period, sum(gpus * extract(epoch FROM ended_at - started_at))
  FROM usage_intervals WHERE gpus > 0 GROUP BY 1, 2, 3;

-- prices: defaults, one change in the middle of the last month, a few discounts
INSERT INTO prices (resource, tenant_id, unit_price, currency, effective_from, created_by, approved_by)
SELECT v.res, NULL, v.price, 'CNY', '2025-01-01T00:00:00Z', 'bench-seed', 'bench-seed-2'
  FROM (VALUES ('gpu:a100', 12.50), ('gpu:h100', 28.00), ('gpu:a100-1g.10gb', 13.00),
               ('cpu', 0.08), ('memory_gib', 0.01)) v(res, price);
INSERT INTO prices (resource, tenant_id, unit_price, currency, effective_from, created_by, approved_by)
VALUES ('gpu:a100', NULL, 11.90, 'CNY',
        :'start'::timestamptz + (:months - 1) * interval '1 month' + interval '14 days 12 hours',
        'bench-seed', 'bench-seed-2');
INSERT INTO prices (resource, tenant_id, unit_price, currency, effective_from, created_by, approved_by)
SELECT 'gpu:a100', id, 10.00, 'CNY', '2025-01-01T00:00:00Z', 'bench-seed', 'bench-seed-2'
  FROM bench_tenant WHERE tn = 1
UNION ALL
SELECT 'gpu:h100', id, 24.00, 'CNY', :'start'::timestamptz + interval '3 months', 'bench-seed', 'bench-seed-2'
  FROM bench_tenant WHERE tn = 2
UNION ALL
SELECT 'cpu', id, 0.06, 'CNY', :'start'::timestamptz + interval '6 months', 'bench-seed', 'bench-seed-2'
  FROM bench_tenant WHERE tn BETWEEN 3 AND 10;

COMMIT;

SELECT format('  seeded: %s jobs, %s runs, %s usage intervals, %s usage_monthly rows, %s prices',
              (SELECT count(*) FROM jobs), (SELECT count(*) FROM job_runs),
              (SELECT count(*) FROM usage_intervals), (SELECT count(*) FROM usage_monthly),
              (SELECT count(*) FROM prices));
