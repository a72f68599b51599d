-- 0026_idle_notice.sql - job.idle: the owner of a job whose GPUs sit idle is told
-- (docs/efficiency.md, docs/notifications.md). The efficiency worker marks a job idle
-- (job_efficiency.idle_since) and clears idle_noticed_at when it is busy again; the
-- notifier's minute sweep calls aidc_notify_idle_jobs, which tells each owner once per
-- idle spell and sets idle_noticed_at in the same transaction (told once, never lost).

ALTER TABLE notifications DROP CONSTRAINT notifications_event_check;
ALTER TABLE notifications ADD CONSTRAINT notifications_event_check
    CHECK (event IN ('job.ended', 'job.failed', 'job.preempted', 'job.idle', 'session.ready',
                     'budget.80', 'budget.100', 'allocation.expiring'));

-- At most lim running jobs newly idle, oldest idle first; how many were marked.
CREATE FUNCTION aidc_notify_idle_jobs(lim integer) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    j record;
    n integer := 0;
BEGIN
    FOR j IN SELECT e.job_id, e.idle_since, e.idle_util_max, x.user_id, x.name, x.gpus,
                    x.gpu_type, p.slug AS project, t.slug AS tenant
               FROM job_efficiency e JOIN jobs x ON x.id = e.job_id
               JOIN projects p ON p.id = x.project_id JOIN tenants t ON t.id = x.tenant_id
              WHERE e.idle_since IS NOT NULL AND e.idle_noticed_at IS NULL
                AND x.state = 'running'
              ORDER BY e.idle_since, e.job_id LIMIT greatest(lim, 0)
                FOR UPDATE OF e SKIP LOCKED LOOP
        PERFORM aidc_notify_emit(j.user_id, 'job.idle', j.project,
            jsonb_build_object('job', jsonb_build_object(
                'id', j.job_id, 'name', j.name, 'tenant', j.tenant, 'project', j.project,
                'gpus', j.gpus, 'gpu_type', j.gpu_type, 'idle_since', j.idle_since,
                'gpu_util_max', round(j.idle_util_max::numeric, 1))));
        UPDATE job_efficiency SET idle_noticed_at = now() WHERE job_id = j.job_id;
        n := n + 1;
    END LOOP;
    RETURN n;
END $$;
REVOKE ALL ON FUNCTION aidc_notify_idle_jobs(integer) FROM PUBLIC;

-- aidc_grant_app is wrapped, as in 0009.
ALTER FUNCTION aidc_grant_app(regrole) RENAME TO aidc_grant_app_before_0026;
CREATE FUNCTION aidc_grant_app(app regrole) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM aidc_grant_app_before_0026(app);
    EXECUTE format('GRANT EXECUTE ON FUNCTION aidc_notify_idle_jobs(integer) TO %s', app);
END $$;
