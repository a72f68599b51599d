-- 0022_arrays_deps.sql - job arrays and dependencies between jobs (docs/design.md,
-- "Job arrays and dependencies").
--
-- An array is a parent job (array_count, array_max_parallel) and array_count task
-- jobs (array_parent, array_index). Placed task by task (the local executor, or no
-- cluster named), the parent is never admitted itself and each task is admitted,
-- placed and metered on its own like any job: the admission snapshot
-- (db/schedsnap.h) offers only the first max_parallel - (tasks active) queued tasks
-- of an array. Whole (array_hold: the submission named a Slurm or Kubernetes
-- cluster), the parent is admitted holding max_parallel tasks' resources and
-- delivered as one job array; its tasks stay queued until the syncer sees them in
-- the cluster (db/jobarrays.c), then move as the cluster says, each metered on its
-- own. No job whose dependencies (its own or its array's) have not held yet is
-- offered to admission. The parent ends when every task has ended: failed when a
-- task failed, else cancelled when one was cancelled, else succeeded.
--
-- Dependencies name jobs that existed when the job was submitted and never change,
-- so they cannot form a cycle. When a job ends, every queued job waiting on it is
-- settled (aidc_job_deps_settle): cancelled with reason dependency_failed:<id> when a
-- condition can no longer hold, else its reason names what it still waits for.

ALTER TABLE jobs
    ADD COLUMN array_parent       uuid REFERENCES jobs (id) ON DELETE CASCADE,
    ADD COLUMN array_index        integer CHECK (array_index BETWEEN 0 AND 9999),
    ADD COLUMN array_count        integer CHECK (array_count BETWEEN 1 AND 10000),
    ADD COLUMN array_max_parallel integer,
    -- A whole array (one Slurm job array, one Kubernetes Indexed Job): its parent
    -- holds max_parallel x one task's resources (admission multiplies by this) and
    -- its tasks 0 (they follow what the cluster reports of them). NULL otherwise.
    ADD COLUMN array_hold         integer CHECK (array_hold >= 0),
    -- it (or its array) has dependencies: only such jobs cost the admission pass a
    -- look at them (measured: 100,000 queued jobs without, 107 -> 317 ms a pass
    -- when every one was looked up)
    ADD COLUMN has_deps           boolean NOT NULL DEFAULT false,
    ADD CONSTRAINT jobs_array_task CHECK ((array_parent IS NULL) = (array_index IS NULL)),
    ADD CONSTRAINT jobs_array_parent CHECK ((array_count IS NULL) = (array_max_parallel IS NULL)
        AND (array_max_parallel IS NULL OR array_max_parallel BETWEEN 1 AND array_count)
        AND (array_count IS NULL OR array_parent IS NULL));
CREATE UNIQUE INDEX jobs_array_tasks ON jobs (array_parent, array_index)
    WHERE array_parent IS NOT NULL;
-- the arrays not ended (the admission pass's windows: a scan of all jobs took 65 ms
-- with 200,000 queued)
CREATE INDEX jobs_array_parents ON jobs (id)
    WHERE array_count IS NOT NULL AND state IN ('queued', 'admitted', 'pending', 'running');
-- the tasks of an array that have not ended (the parent's end, max_parallel)
CREATE INDEX jobs_array_open ON jobs (array_parent, array_index)
    WHERE array_parent IS NOT NULL AND state IN ('queued', 'admitted', 'pending', 'running');

CREATE TABLE job_dependencies (
    job_id    uuid NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    tenant_id uuid NOT NULL,
    peer_id   uuid NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    condition text NOT NULL CHECK (condition IN ('succeeded', 'failed', 'ended')),
    position  smallint NOT NULL CHECK (position BETWEEN 0 AND 31),
    PRIMARY KEY (job_id, peer_id)
);
CREATE INDEX job_dependencies_peer ON job_dependencies (peer_id);
ALTER TABLE job_dependencies ENABLE ROW LEVEL SECURITY;
CREATE POLICY job_dependencies_read ON job_dependencies FOR SELECT
    USING (aidc_can_read(tenant_id));
CREATE POLICY job_dependencies_insert ON job_dependencies FOR INSERT
    WITH CHECK (aidc_can_submit(tenant_id));

-- Whether a dependency's condition holds for its peer's state, and whether it
-- never can any more. "failed" is Slurm's afternotok: ended other than succeeded.
CREATE FUNCTION aidc_dep_met(cond text, st text) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE cond WHEN 'succeeded' THEN st = 'succeeded'
                     WHEN 'failed' THEN st IN ('failed', 'cancelled')
                     ELSE st IN ('succeeded', 'failed', 'cancelled') END
$$;
CREATE FUNCTION aidc_dep_dead(cond text, st text) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE cond WHEN 'succeeded' THEN st IN ('failed', 'cancelled')
                     WHEN 'failed' THEN st = 'succeeded'
                     ELSE false END
$$;

-- A queued job's dependencies, looked at again: cancel it when one can no longer
-- hold, else name in its reason (and its tasks') the first it still waits for.
CREATE FUNCTION aidc_job_deps_settle(jid uuid) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    d record;
    st text;
    waiting uuid;
BEGIN
    SELECT state INTO st FROM jobs WHERE id = jid FOR UPDATE;
    IF st IN ('admitted', 'pending', 'running') THEN
        -- delivered with a dependency Slurm keeps: stopped in the cluster when it can
        -- no longer hold (Slurm would keep it pending for ever)
        FOR d IN SELECT x.peer_id, p.state FROM job_dependencies x
                   JOIN jobs p ON p.id = x.peer_id
                  WHERE x.job_id = jid AND aidc_dep_dead(x.condition, p.state)
                  ORDER BY x.position LIMIT 1 LOOP
            WITH s AS (UPDATE jobs SET stop_requested = 'cancel', stop_requested_at = now(),
                              updated_at = now(), reason = 'dependency_failed:' || d.peer_id
                        WHERE id = jid AND stop_requested IS NULL
                        RETURNING id, tenant_id, state, cluster_id, reason),
                 e AS (INSERT INTO job_events (job_id, tenant_id, from_state, to_state, reason)
                       SELECT id, tenant_id, state, state, reason FROM s)
            INSERT INTO outbox (job_id, tenant_id, cluster_id, action)
            SELECT id, tenant_id, cluster_id, 'cancel' FROM s WHERE cluster_id IS NOT NULL;
            PERFORM pg_notify('aidc_outbox', 'cancel');
        END LOOP;
        RETURN;
    END IF;
    IF st IS DISTINCT FROM 'queued' THEN
        RETURN;
    END IF;
    FOR d IN SELECT x.peer_id, x.condition, p.state FROM job_dependencies x
               JOIN jobs p ON p.id = x.peer_id WHERE x.job_id = jid ORDER BY x.position LOOP
        IF aidc_dep_dead(d.condition, d.state) THEN
            WITH u AS (UPDATE jobs SET state = 'cancelled', finished_at = now(),
                              updated_at = now(), estimated_start = NULL,
                              reason = 'dependency_failed:' || d.peer_id
                        WHERE id = jid AND state = 'queued' RETURNING id, tenant_id, reason)
            INSERT INTO job_events (job_id, tenant_id, from_state, to_state, reason, details)
            SELECT id, tenant_id, 'queued', 'cancelled', reason,
                   jsonb_build_object('dependency', d.peer_id, 'condition', d.condition,
                                      'dependency_state', d.state) FROM u;
            RETURN;
        ELSIF waiting IS NULL AND NOT aidc_dep_met(d.condition, d.state) THEN
            waiting := d.peer_id;
        END IF;
    END LOOP;
    UPDATE jobs SET updated_at = now(),
           reason = CASE WHEN waiting IS NOT NULL THEN 'dependency:' || waiting
                         WHEN id <> jid THEN 'array:max_parallel'
                         WHEN array_count IS NULL THEN 'submitted' ELSE 'array' END
     WHERE (id = jid OR array_parent = jid) AND state = 'queued'
       AND reason IS DISTINCT FROM CASE WHEN waiting IS NOT NULL THEN 'dependency:' || waiting
                                        WHEN id <> jid THEN 'array:max_parallel'
                                        WHEN array_count IS NULL THEN 'submitted'
                                        ELSE 'array' END;
    IF waiting IS NULL THEN
        PERFORM pg_notify('aidc_jobs', 'dependency');
    END IF;
END $$;
REVOKE ALL ON FUNCTION aidc_job_deps_settle(uuid) FROM PUBLIC;

-- A job ended: its array's parent may end (its row locked first, so two tasks
-- ending at once cannot both see the other still open), a cancelled parent takes
-- its tasks with it, and whoever waits on the job is settled.
CREATE FUNCTION aidc_job_ended() RETURNS trigger
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
    IF NEW.array_count IS NOT NULL AND NEW.state = 'cancelled' THEN
        WITH u AS (UPDATE jobs SET state = 'cancelled', finished_at = now(), updated_at = now(),
                          estimated_start = NULL, reason = NEW.reason
                    WHERE array_parent = NEW.id AND state = 'queued'
                    RETURNING id, tenant_id)
        INSERT INTO job_events (job_id, tenant_id, from_state, to_state, reason)
        SELECT id, tenant_id, 'queued', 'cancelled', NEW.reason FROM u;
        WITH s AS (UPDATE jobs SET stop_requested = 'cancel', stop_requested_at = now(),
                          updated_at = now(), reason = 'cancel requested with its array'
                    WHERE array_parent = NEW.id AND state IN ('admitted', 'pending', 'running')
                      AND stop_requested IS DISTINCT FROM 'cancel'
                    RETURNING id, tenant_id, state, cluster_id),
             e AS (INSERT INTO job_events (job_id, tenant_id, from_state, to_state, reason)
                   SELECT id, tenant_id, state, state, 'cancel requested with its array' FROM s)
        INSERT INTO outbox (job_id, tenant_id, cluster_id, action)
        SELECT id, tenant_id, cluster_id, 'cancel' FROM s WHERE cluster_id IS NOT NULL;
        PERFORM pg_notify('aidc_outbox', 'cancel');
    END IF;
    FOR w IN SELECT job_id FROM job_dependencies WHERE peer_id = NEW.id LOOP
        PERFORM aidc_job_deps_settle(w.job_id);
    END LOOP;
    RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION aidc_job_ended() FROM PUBLIC;
CREATE TRIGGER jobs_ended AFTER UPDATE OF state ON jobs FOR EACH ROW
    WHEN (OLD.state IS DISTINCT FROM NEW.state
          AND NEW.state IN ('succeeded', 'failed', 'cancelled'))
    EXECUTE FUNCTION aidc_job_ended();

-- A whole array's task the cluster started: its parent runs (no run of its own: the
-- tasks are metered).
CREATE FUNCTION aidc_job_task_running() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    WITH u AS (UPDATE jobs SET state = 'running', started_at = coalesce(started_at, now()),
                      updated_at = now(), reason = NULL
                WHERE id = NEW.array_parent AND state IN ('admitted', 'pending')
                RETURNING id, tenant_id)
    INSERT INTO job_events (job_id, tenant_id, from_state, to_state, reason)
    SELECT id, tenant_id, 'pending', 'running', 'a task started' FROM u;
    RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION aidc_job_task_running() FROM PUBLIC;
CREATE TRIGGER jobs_task_running AFTER UPDATE OF state ON jobs FOR EACH ROW
    WHEN (NEW.array_hold = 0 AND NEW.state = 'running' AND OLD.state IS DISTINCT FROM 'running')
    EXECUTE FUNCTION aidc_job_task_running();

-- A whole array asked to stop for good (its cancel goes to the cluster as one): its
-- tasks the cluster has not shown yet end now, the others end as it reports them.
CREATE FUNCTION aidc_job_array_stop() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    WITH u AS (UPDATE jobs SET state = 'cancelled', finished_at = now(), updated_at = now(),
                      estimated_start = NULL, reason = NEW.reason
                WHERE array_parent = NEW.id AND state = 'queued'
                RETURNING id, tenant_id)
    INSERT INTO job_events (job_id, tenant_id, from_state, to_state, reason)
    SELECT id, tenant_id, 'queued', 'cancelled', NEW.reason FROM u;
    UPDATE jobs SET stop_requested = 'cancel', stop_requested_at = now(), updated_at = now(),
           reason = 'cancel requested with its array'
     WHERE array_parent = NEW.id AND state IN ('admitted', 'pending', 'running')
       AND stop_requested IS DISTINCT FROM 'cancel';
    RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION aidc_job_array_stop() FROM PUBLIC;
CREATE TRIGGER jobs_array_stop AFTER UPDATE OF stop_requested ON jobs FOR EACH ROW
    WHEN (NEW.array_hold > 0 AND NEW.stop_requested = 'cancel'
          AND OLD.stop_requested IS DISTINCT FROM 'cancel')
    EXECUTE FUNCTION aidc_job_array_stop();

-- A dependency recorded at submission: the job may already wait, or be doomed.
CREATE FUNCTION aidc_job_dep_added() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    UPDATE jobs SET has_deps = true
     WHERE (id = NEW.job_id OR array_parent = NEW.job_id) AND NOT has_deps;
    PERFORM aidc_job_deps_settle(NEW.job_id);
    RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION aidc_job_dep_added() FROM PUBLIC;
CREATE TRIGGER job_dependencies_added AFTER INSERT ON job_dependencies FOR EACH ROW
    EXECUTE FUNCTION aidc_job_dep_added();

-- aidc_grant_app is wrapped, as in 0009.
ALTER FUNCTION aidc_grant_app(regrole) RENAME TO aidc_grant_app_before_0022;
CREATE FUNCTION aidc_grant_app(app regrole) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM aidc_grant_app_before_0022(app);
    EXECUTE format('GRANT SELECT, INSERT ON job_dependencies TO %s', app);
END $$;
