-- 0025_efficiency.sql - how well a job used what it held (docs/efficiency.md):
--
-- * job_efficiency: one row per job that has measurements. GPU utilization and
--   GPU memory come from the cluster's DCGM metrics in Prometheus (the
--   efficiency worker reads them while the job runs, rate-limited, and once
--   more after it ended: gpu_final); CPU time and peak memory come from the
--   job's cgroup (local executor) at its end. Never computed on a GET.
-- * idle_since: the worker saw the job's GPUs under the idle threshold for
--   the whole idle window (NULL: not idle, or not known). idle_noticed_at is
--   the hook of the notifications outbox: a notifier picks the rows with
--   idle_since set and idle_noticed_at NULL, tells the owner, and sets it.
-- * aidc_job_efficiency(job): the job object's "efficiency" (every field
--   null where unknown).
-- * aidc_capacity() / aidc_capacity_ends(): the cluster view's aggregates over
--   every tenant (which row-level security would hide; only sums leave).

CREATE TABLE job_efficiency (
    job_id            uuid PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
    tenant_id         uuid NOT NULL REFERENCES tenants (id),
    gpu_util_avg      double precision CHECK (gpu_util_avg BETWEEN 0 AND 100),
    gpu_util_peak     double precision CHECK (gpu_util_peak BETWEEN 0 AND 100),
    gpu_mem_peak_gib  double precision CHECK (gpu_mem_peak_gib >= 0),
    cpu_seconds       double precision CHECK (cpu_seconds >= 0),
    cpu_efficiency    double precision CHECK (cpu_efficiency >= 0),
    mem_peak_gib      double precision CHECK (mem_peak_gib >= 0),
    mem_efficiency    double precision CHECK (mem_efficiency >= 0),
    gpu_refreshed_at  timestamptz,
    gpu_final         boolean NOT NULL DEFAULT false,
    gpu_attempts      integer NOT NULL DEFAULT 0,
    idle_since        timestamptz,
    idle_util_max     double precision,
    idle_noticed_at   timestamptz,
    updated_at        timestamptz NOT NULL DEFAULT now()
);
-- the worker's look at jobs with GPUs that ended in the last day
CREATE INDEX jobs_gpu_finished ON jobs (finished_at) WHERE gpus > 0;
CREATE INDEX job_efficiency_idle ON job_efficiency (tenant_id, idle_since) WHERE idle_since IS NOT NULL;

ALTER TABLE job_efficiency ENABLE ROW LEVEL SECURITY;
CREATE POLICY job_efficiency_read ON job_efficiency FOR SELECT USING (aidc_can_read(tenant_id));
-- written by the workers (system context) only
CREATE POLICY job_efficiency_insert ON job_efficiency FOR INSERT
    WITH CHECK (aidc_ctx_platform_admin());
CREATE POLICY job_efficiency_update ON job_efficiency FOR UPDATE
    USING (aidc_ctx_platform_admin());

CREATE FUNCTION aidc_job_efficiency(jid uuid) RETURNS json
LANGUAGE sql STABLE AS $$
    SELECT json_build_object('gpu_util_avg', round(e.gpu_util_avg::numeric, 1),
                             'gpu_util_peak', round(e.gpu_util_peak::numeric, 1),
                             'gpu_mem_peak_gib', round(e.gpu_mem_peak_gib::numeric, 2),
                             'cpu_efficiency', round(e.cpu_efficiency::numeric, 3),
                             'mem_peak_gib', round(e.mem_peak_gib::numeric, 3),
                             'mem_efficiency', round(e.mem_efficiency::numeric, 3))
      FROM (SELECT 1) one LEFT JOIN job_efficiency e ON e.job_id = jid
$$;

-- Per GPU type: usable GPUs, what admitted jobs hold, what queued jobs ask.
CREATE FUNCTION aidc_capacity() RETURNS TABLE (gpu_type text, total bigint, in_use bigint,
                                               queued_gpus bigint)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    WITH inv AS (SELECT substr(i.resource, 5) AS t, sum(i.total)::bigint AS total
                   FROM cluster_inventory i JOIN clusters c ON c.id = i.cluster_id
                  WHERE i.resource LIKE 'gpu:%' AND c.healthy GROUP BY 1),
         used AS (SELECT j.gpu_type AS t, sum(j.gpus * j.nodes)::bigint AS n FROM jobs j
                   WHERE j.state IN ('admitted', 'pending', 'running') AND j.gpus > 0 GROUP BY 1),
         q AS (SELECT j.gpu_type AS t, sum(j.gpus * j.nodes)::bigint AS n FROM jobs j
                WHERE j.state = 'queued' AND j.gpus > 0 GROUP BY 1)
    SELECT k.t, coalesce(inv.total, 0), coalesce(used.n, 0), coalesce(q.n, 0)
      FROM (SELECT t FROM inv UNION SELECT t FROM used UNION SELECT t FROM q) k
      LEFT JOIN inv ON inv.t = k.t LEFT JOIN used ON used.t = k.t LEFT JOIN q ON q.t = k.t
     ORDER BY k.t
$$;

-- When admitted jobs give their GPUs back (their time limits), per GPU type.
CREATE FUNCTION aidc_capacity_ends() RETURNS TABLE (gpu_type text, ends_at double precision,
                                                    gpus bigint)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT j.gpu_type,
           extract(epoch FROM coalesce(j.started_at, j.admitted_at, now())
                              + make_interval(mins => j.time_limit_minutes))::double precision,
           (j.gpus * j.nodes)::bigint
      FROM jobs j
     WHERE j.state IN ('admitted', 'pending', 'running') AND j.gpus > 0
     ORDER BY 1, 2
$$;

-- Per node (platform admins and operators): what the backend listed and what
-- aidc's jobs hold on it (the local executor's GPU indexes; other kinds place
-- jobs themselves, so their nodes show jobs = null).
CREATE FUNCTION aidc_capacity_nodes() RETURNS TABLE (cluster text, node text, gpu_type text,
                                                     gpus integer, usable boolean,
                                                     jobs bigint, gpus_in_use bigint)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT c.name, n.node, n.gpu_type, n.gpus, n.usable,
           CASE WHEN c.kind = 'local' THEN (
               SELECT count(*) FROM jobs j WHERE j.cluster_id = c.id
                  AND j.state IN ('admitted', 'pending', 'running')
                  AND j.gpu_type = n.gpu_type) END,
           CASE WHEN c.kind = 'local' THEN (
               SELECT coalesce(sum(j.gpus), 0) FROM jobs j WHERE j.cluster_id = c.id
                  AND j.state IN ('admitted', 'pending', 'running')
                  AND j.gpu_type = n.gpu_type) END
      FROM cluster_nodes n JOIN clusters c ON c.id = n.cluster_id
     ORDER BY c.name, n.node, n.gpu_type
     LIMIT 10000
$$;

REVOKE ALL ON FUNCTION aidc_capacity() FROM PUBLIC;
REVOKE ALL ON FUNCTION aidc_capacity_ends() FROM PUBLIC;
REVOKE ALL ON FUNCTION aidc_capacity_nodes() FROM PUBLIC;

-- aidc_grant_app is wrapped, as in 0009.
ALTER FUNCTION aidc_grant_app(regrole) RENAME TO aidc_grant_app_before_0025;
CREATE FUNCTION aidc_grant_app(app regrole) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM aidc_grant_app_before_0025(app);
    EXECUTE format('GRANT SELECT, INSERT, UPDATE ON job_efficiency TO %s', app);
    EXECUTE format('GRANT EXECUTE ON FUNCTION aidc_job_efficiency(uuid) TO %s', app);
END $$;
