-- 0030_array_cancel_batches.sql - an array's tasks are cancelled in bounded batches
-- after the cancel of their parent, not inside it.
--
-- Cancelling the parent of a 10,000-task array cancelled every queued task in the
-- same statement (0022's aidc_job_ended): 10,000 row updates, each with its
-- jobs_ended trigger, and 10,000 job_events with their foreign-key check and
-- notification trigger. EXPLAIN ANALYZE (2026-12-05, 2 CPUs at load 14): 2.3 s in
-- all, the tasks' UPDATE 1.0 s (of which their triggers 0.56 s), the events 0.7 s
-- (FK 0.19 s, job_events_notify 0.30 s). It grows with the array and, on a busy
-- machine, outlived the 30 s statement timeout (the request answered 500).
--
-- Now the parent's cancel only marks it (array_cancel: the reason its open tasks
-- end with) and wakes the array-cancel worker (sched/arraycancel.c), which ends the
-- tasks in batches, each its own transaction: queued ones cancelled, delivered
-- ones asked to stop. No queued task of a cancelled array is admitted meanwhile:
-- the admission snapshot offers only the tasks of queued parents (db/schedsnap.h)
-- and the admission itself locks the parent and re-reads its state (db/sched.c).
-- A whole array asked to stop (0022's aidc_job_array_stop) is marked the same way.

ALTER TABLE jobs ADD COLUMN array_cancel text;
-- the arrays whose tasks are still to be ended (few, and only briefly)
CREATE INDEX jobs_array_cancel ON jobs (id) WHERE array_cancel IS NOT NULL;

-- An array's parent cancelled, or a whole array asked to stop: its tasks are the
-- worker's to end, with the parent's reason.
CREATE FUNCTION aidc_job_array_cancel_mark() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    NEW.array_cancel := coalesce(NEW.reason, 'cancelled with its array');
    PERFORM pg_notify('aidc_arrays', 'cancel');
    RETURN NEW;
END $$;
REVOKE ALL ON FUNCTION aidc_job_array_cancel_mark() FROM PUBLIC;
CREATE TRIGGER jobs_array_cancel_mark BEFORE UPDATE OF state, stop_requested ON jobs
    FOR EACH ROW
    WHEN (NEW.array_count IS NOT NULL AND NEW.array_cancel IS NULL
          AND ((NEW.state = 'cancelled' AND OLD.state IS DISTINCT FROM 'cancelled')
               OR (NEW.array_hold > 0 AND NEW.stop_requested = 'cancel'
                   AND OLD.stop_requested IS DISTINCT FROM 'cancel')))
    EXECUTE FUNCTION aidc_job_array_cancel_mark();

-- The whole array's stop no longer ends its tasks itself (the worker does).
DROP TRIGGER jobs_array_stop ON jobs;
DROP FUNCTION aidc_job_array_stop();

-- 0022's, less the cancelled parent's cascade to its tasks.
CREATE OR REPLACE FUNCTION aidc_job_ended() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    w record;
    verdict text;
BEGIN
    IF NEW.array_parent IS NOT NULL THEN
        PERFORM 1 FROM jobs WHERE id = NEW.array_parent
           AND state IN ('queued', 'admitted', 'pending', 'running') FOR UPDATE;
        IF FOUND AND NOT EXISTS (SELECT 1 FROM jobs WHERE array_parent = NEW.array_parent
                                    AND state IN ('queued', 'admitted', 'pending', 'running')) THEN
            SELECT CASE WHEN bool_or(state = 'failed') THEN 'failed'
                        WHEN bool_or(state = 'cancelled') THEN 'cancelled'
                        ELSE 'succeeded' END INTO verdict
              FROM jobs WHERE array_parent = NEW.array_parent;
            WITH o AS (SELECT id, state FROM jobs WHERE id = NEW.array_parent),
                 u AS (UPDATE jobs j SET state = verdict, finished_at = now(), updated_at = now(),
                              estimated_start = NULL, reason = 'array ' || verdict
                         FROM o WHERE j.id = o.id
                          AND j.state IN ('queued', 'admitted', 'pending', 'running')
                        RETURNING j.id, j.tenant_id, j.reason, o.state AS was)
            INSERT INTO job_events (job_id, tenant_id, from_state, to_state, reason)
            SELECT id, tenant_id, was, verdict, reason FROM u;
        END IF;
    END IF;
    FOR w IN SELECT job_id FROM job_dependencies WHERE peer_id = NEW.id LOOP
        PERFORM aidc_job_deps_settle(w.job_id);
    END LOOP;
    RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION aidc_job_ended() FROM PUBLIC;
