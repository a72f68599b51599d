-- 0037_queue_position_tail.sql - a new job's queue position from the last mark.
--
-- Every submit answers with the job's queue position (aidc_queue_position_at),
-- and the halving over the marks (0036) cost about ten statements of the function:
-- during a burst of submits into a queue of 25,000 jobs the function took a tenth
-- of the machine's CPU, a sixth of PostgreSQL's (perf, docs/performance.md). A new
-- job of its priority is almost always behind the last mark of its GPU type, so
-- the function now looks at that mark first: when the job is at or behind it, the
-- position is counted from there (two statements); otherwise it halves as before.
-- The answer is the one the halving gives: the marks of one GPU type ascend in
-- position and queue order alike, so the last mark at or ahead of the job is the
-- last mark when that one is at or ahead of it.
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
        SELECT count(*) + 1 INTO n FROM jobs o
         WHERE o.state = 'queued' AND coalesce(o.gpu_type, '') = g
           AND (o.queue_rank, o.submitted_at, o.id) < (rank, ts, jid);
        RETURN n;
    END IF;
    -- the mark's own job counts when it is still queued
    SELECT count(*) INTO n FROM jobs o
     WHERE o.state = 'queued' AND coalesce(o.gpu_type, '') = g
       AND (o.queue_rank, o.submitted_at, o.id) >= (best.queue_rank, best.submitted_at, best.job_id)
       AND (o.queue_rank, o.submitted_at, o.id) < (rank, ts, jid);
    RETURN best.pos + n;
END $$;
