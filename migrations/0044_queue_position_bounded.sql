-- 0044_queue_position_bounded.sql - a submit's answer counts at most 300 jobs
-- for its queue position.
--
-- A position is the nearest mark at or ahead of the job (written by the
-- admission pass, one per hundred jobs) plus the queued jobs between that mark
-- and the job, counted one by one in the queue's index, each with a look at its
-- row. Between two marks that is about a hundred; but the jobs that joined since
-- the last pass have no mark yet, and while a burst of submits outran the
-- admitter the count of every submit's answer grew with its backlog: 1,300 jobs
-- behind the last mark in a burst into a queue of 100,000 held jobs
-- (tests/bench/jobs.sh), about 1 ms of PostgreSQL's CPU per submit, and submits
-- took half as many as without the position (docs/performance.md, fifteenth
-- section).
--
-- The five-argument form counts at most `most` jobs past the mark (NULL: no
-- bound) and answers NULL - not known here - past that. The submit's answer
-- asks with 300 (three marks' spacing): a job further back than that (a burst
-- the admitter has not caught up with; a job behind a large array whose tasks
-- wait their turn, which no pass marks) is answered without its position, which
-- its GET tells. Reads (aidc_queue_position) stay unbounded and answer as before;
-- so does the four-argument form, kept for an aidcd of an earlier version.
CREATE FUNCTION aidc_queue_position_at(gtype text, rank smallint, ts timestamptz, jid uuid,
                                       most integer)
RETURNS bigint
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    g text := coalesce(gtype, '');
    lo bigint := 0;
    hi bigint;
    mid bigint;
    m queue_marks%ROWTYPE;
    best queue_marks%ROWTYPE;
    n bigint;
BEGIN
    SELECT * INTO m FROM queue_marks q WHERE q.gpu_type = g ORDER BY q.pos DESC LIMIT 1;
    IF FOUND AND (m.queue_rank, m.submitted_at, m.job_id) <= (rank, ts, jid) THEN
        best := m;
    ELSIF FOUND THEN
        -- slot k holds the mark at position 100 k + 1; the last one is the highest
        hi := (m.pos - 1) / 100;
        WHILE lo <= hi LOOP
            mid := (lo + hi) / 2;
            SELECT * INTO m FROM queue_marks q WHERE q.gpu_type = g AND q.pos = mid * 100 + 1;
            IF NOT FOUND THEN
                SELECT * INTO best FROM queue_marks q
                 WHERE q.gpu_type = g AND (q.queue_rank, q.submitted_at, q.job_id) <= (rank, ts, jid)
                 ORDER BY q.pos DESC LIMIT 1;
                EXIT;
            END IF;
            IF (m.queue_rank, m.submitted_at, m.job_id) <= (rank, ts, jid) THEN
                best := m;
                lo := mid + 1;
            ELSE
                hi := mid - 1;
            END IF;
        END LOOP;
    END IF;
    -- LIMIT NULL is no limit
    IF best.pos IS NULL THEN
        SELECT count(*) INTO n FROM (SELECT FROM jobs o
         WHERE o.state = 'queued' AND coalesce(o.gpu_type, '') = g
           AND (o.queue_rank, o.submitted_at, o.id) < (rank, ts, jid) LIMIT most) x;
        RETURN CASE WHEN most IS NULL OR n < most THEN n + 1 END;
    END IF;
    -- the mark's own job counts when it is still queued
    SELECT count(*) INTO n FROM (SELECT FROM jobs o
     WHERE o.state = 'queued' AND coalesce(o.gpu_type, '') = g
       AND (o.queue_rank, o.submitted_at, o.id) >= (best.queue_rank, best.submitted_at, best.job_id)
       AND (o.queue_rank, o.submitted_at, o.id) < (rank, ts, jid) LIMIT most + 1) x;
    RETURN CASE WHEN most IS NULL OR n <= most THEN best.pos + n END;
END $$;
REVOKE ALL ON FUNCTION aidc_queue_position_at(text, smallint, timestamptz, uuid, integer) FROM PUBLIC;

CREATE OR REPLACE FUNCTION aidc_queue_position_at(gtype text, rank smallint, ts timestamptz, jid uuid)
RETURNS bigint
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT aidc_queue_position_at(gtype, rank, ts, jid, NULL)
$$;

CREATE OR REPLACE FUNCTION aidc_queue_position(jid uuid) RETURNS bigint
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT aidc_queue_position_at(j.gpu_type, j.queue_rank, j.submitted_at, j.id, NULL)
      FROM jobs j WHERE j.id = jid AND j.state = 'queued'
$$;
