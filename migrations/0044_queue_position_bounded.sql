-- 0044_queue_position_bounded.sql - a queue position counts at most 300 jobs.
--
-- A position is the nearest mark at or ahead of the job (written by the
-- admission pass, one per hundred jobs) plus the queued jobs between that mark
-- and the job, counted one by one in the queue's index, each with a look at its
-- row. Between two marks that is at most a hundred; but the jobs that joined
-- since the last pass have no mark yet, and while a burst of submits outruns the
-- admitter, the count from the last mark grew with its backlog: 1,300 jobs
-- behind the last mark in a burst into a queue of 100,000 held jobs
-- (tests/bench/jobs.sh), about 1 ms of PostgreSQL's CPU in every submit answer,
-- and submits took half as many as without the position (docs/performance.md,
-- fifteenth section). The same held for every row of a list page of jobs.
--
-- The count now stops past 300 jobs (three marks' spacing: a queue the admitter
-- keeps up with never reaches it), and the position is then NULL - not known
-- yet: the admitter has not placed the jobs ahead of it. The next pass writes the
-- marks that make it known again. Within the bound the answer is the one counted
-- before (db/test_queue_marks).
CREATE OR REPLACE FUNCTION aidc_queue_position_at(gtype text, rank smallint, ts timestamptz, jid uuid)
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
    IF best.pos IS NULL THEN
        SELECT count(*) INTO n FROM (SELECT FROM jobs o
         WHERE o.state = 'queued' AND coalesce(o.gpu_type, '') = g
           AND (o.queue_rank, o.submitted_at, o.id) < (rank, ts, jid) LIMIT 300) x;
        RETURN CASE WHEN n < 300 THEN n + 1 END;
    END IF;
    -- the mark's own job counts when it is still queued
    SELECT count(*) INTO n FROM (SELECT FROM jobs o
     WHERE o.state = 'queued' AND coalesce(o.gpu_type, '') = g
       AND (o.queue_rank, o.submitted_at, o.id) >= (best.queue_rank, best.submitted_at, best.job_id)
       AND (o.queue_rank, o.submitted_at, o.id) < (rank, ts, jid) LIMIT 301) x;
    RETURN CASE WHEN n <= 300 THEN best.pos + n END;
END $$;
