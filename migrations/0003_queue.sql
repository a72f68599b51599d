-- 0003_queue.sql - queue positions that cost the same however long the queue,
-- and cheaper admission writes.

-- The admitter rewrites reason and estimated_start of waiting jobs (neither is
-- indexed): free room on each page lets those updates stay HOT, without new
-- index entries. Measured: the first pass over 100,000 new jobs writes every
-- reason (tests/bench/jobs.sh).
ALTER TABLE jobs SET (fillfactor = 70);

-- Marks of queue positions, written by the admission worker: every 100th
-- queued job of each GPU type's queue (in queue order) with its position at
-- that pass. A job's position counts from the nearest mark at or ahead of it
-- instead of from the head, so reading it costs at most ~100 index entries
-- however long the queue (counting from the head made a page of 100 queued
-- jobs take a second with 100,000 queued). Between passes the count is live
-- from the mark on; what left or joined ahead of the mark shows at the next
-- pass (run on every submit, cancel and end).
CREATE TABLE queue_marks (
    gpu_type     text NOT NULL,          -- '' for CPU-only jobs
    pos          bigint NOT NULL,
    queue_rank   smallint NOT NULL,
    submitted_at timestamptz NOT NULL,
    job_id       uuid NOT NULL
);
CREATE INDEX queue_marks_key ON queue_marks (gpu_type, queue_rank, submitted_at, job_id);
ALTER TABLE queue_marks ENABLE ROW LEVEL SECURITY;
-- job ids of every tenant: only the admission worker reads or writes them
CREATE POLICY queue_marks_system ON queue_marks FOR ALL USING (aidc_ctx_role('system'));

-- The place in the queue a job with these keys has (or would have): the
-- queued jobs of its GPU type ahead of it, plus one. A job being inserted is
-- not yet visible to its own statement, so the submit answer asks by keys.
CREATE FUNCTION aidc_queue_position_at(gtype text, rank smallint, ts timestamptz, jid uuid)
RETURNS bigint
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    m queue_marks%ROWTYPE;
    n bigint;
BEGIN
    SELECT * INTO m FROM queue_marks
     WHERE gpu_type = coalesce(gtype, '')
       AND (queue_rank, submitted_at, job_id) <= (rank, ts, jid)
     ORDER BY queue_rank DESC, submitted_at DESC, job_id DESC LIMIT 1;
    IF NOT FOUND THEN
        SELECT count(*) + 1 INTO n FROM jobs o
         WHERE o.state = 'queued' AND coalesce(o.gpu_type, '') = coalesce(gtype, '')
           AND (o.queue_rank, o.submitted_at, o.id) < (rank, ts, jid);
        RETURN n;
    END IF;
    -- the mark's own job counts when it is still queued
    SELECT count(*) INTO n FROM jobs o
     WHERE o.state = 'queued' AND coalesce(o.gpu_type, '') = coalesce(gtype, '')
       AND (o.queue_rank, o.submitted_at, o.id) >= (m.queue_rank, m.submitted_at, m.job_id)
       AND (o.queue_rank, o.submitted_at, o.id) < (rank, ts, jid);
    RETURN m.pos + n;
END $$;
REVOKE ALL ON FUNCTION aidc_queue_position_at(text, smallint, timestamptz, uuid) FROM PUBLIC;

CREATE OR REPLACE FUNCTION aidc_queue_position(jid uuid) RETURNS bigint
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT aidc_queue_position_at(j.gpu_type, j.queue_rank, j.submitted_at, j.id)
      FROM jobs j WHERE j.id = jid AND j.state = 'queued'
$$;

-- From here on every SECURITY DEFINER function (other than triggers) is for
-- the application role: they are the narrow doors through row-level
-- security, and a later migration adding one needs no new grant line.
CREATE OR REPLACE FUNCTION aidc_grant_app(app regrole) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    f regprocedure;
BEGIN
    EXECUTE format('GRANT USAGE ON SCHEMA public TO %s', app);
    EXECUTE format('REVOKE ALL ON aidc_schema_migrations FROM %s', app);
    EXECUTE format('GRANT SELECT ON aidc_schema_migrations TO %s', app);
    EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON users, user_roles, tenants, memberships,'
                   ' projects, api_tokens, revoked_sessions, login_failures, idempotency_keys,'
                   ' clusters, cluster_inventory, tenant_quotas, project_quotas, jobs, job_runs,'
                   ' outbox, queue_marks TO %s', app);
    EXECUTE format('REVOKE UPDATE, DELETE, TRUNCATE ON job_events FROM %s', app);
    EXECUTE format('GRANT SELECT, INSERT ON job_events TO %s', app);
    EXECUTE format('REVOKE UPDATE, DELETE, TRUNCATE ON audit_events FROM %s', app);
    EXECUTE format('GRANT SELECT, INSERT ON audit_events TO %s', app);
    FOR f IN SELECT p.oid::regprocedure FROM pg_proc p
              WHERE p.pronamespace = 'public'::regnamespace AND p.proname LIKE 'aidc\_%'
                AND p.prosecdef AND p.prorettype <> 'trigger'::regtype
    LOOP
        EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %s', f, app);
    END LOOP;
    EXECUTE format('REVOKE ALL ON aidc_auth_epoch FROM %s', app);
    EXECUTE format('GRANT SELECT ON aidc_auth_epoch TO %s', app);
END $$;
