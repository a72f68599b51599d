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

-- job_events' notification trigger, cheaper where a cancel ends an array of 10,000
-- tasks in one statement: only terminal changes call it (WHEN), and a task (told of
-- through its parent) or an owner without preferences leaves after one primary-key read.
CREATE OR REPLACE FUNCTION aidc_notify_job_event() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    j record;
    d jsonb;
BEGIN
    SELECT x.user_id, x.array_parent INTO j FROM jobs x WHERE x.id = NEW.job_id;
    IF NOT FOUND OR j.user_id IS NULL OR j.array_parent IS NOT NULL
       OR NOT EXISTS (SELECT 1 FROM notification_prefs WHERE user_id = j.user_id) THEN
        RETURN NULL;
    END IF;
    SELECT x.id, x.user_id, x.name, x.exit_code, x.gpus, x.gpu_type, p.slug AS project,
           t.slug AS tenant INTO j
      FROM jobs x JOIN projects p ON p.id = x.project_id JOIN tenants t ON t.id = x.tenant_id
     WHERE x.id = NEW.job_id;
    d := jsonb_build_object('job', jsonb_build_object(
             'id', j.id, 'name', j.name, 'tenant', j.tenant, 'project', j.project,
             'state', NEW.to_state, 'reason', NEW.reason,
             'exit_code', CASE WHEN NEW.to_state = 'preempted' THEN NULL ELSE j.exit_code END,
             'gpus', j.gpus, 'gpu_type', j.gpu_type, 'at', NEW.ts));
    IF NEW.to_state = 'preempted' THEN
        PERFORM aidc_notify_emit(j.user_id, 'job.preempted', j.project, d);
    ELSE
        PERFORM aidc_notify_emit(j.user_id, 'job.ended', j.project, d);
        IF NEW.to_state = 'failed' THEN
            PERFORM aidc_notify_emit(j.user_id, 'job.failed', j.project, d);
        END IF;
    END IF;
    RETURN NULL;
END $$;
DROP TRIGGER job_events_notify ON job_events;
CREATE TRIGGER job_events_notify AFTER INSERT ON job_events FOR EACH ROW
    WHEN (NEW.to_state IN ('succeeded', 'failed', 'cancelled', 'preempted')
          AND NEW.from_state IS DISTINCT FROM NEW.to_state)
    EXECUTE FUNCTION aidc_notify_job_event();
