-- 0036_queue_marks_in_place.sql - the marks of queue positions rewritten in place.
--
-- A job that joins ahead (a higher priority) or leaves (the head, admitted) moves
-- every mark behind it, and the admitter deleted and inserted each moved mark: a
-- tests/bench/jobs.sh run left queue_marks with 56,843 dead rows and 4 MB for 143
-- live ones, which the admitter's read of the marks and every position lookup then
-- stepped over until autovacuum came. A mark is now one row per (GPU type,
-- position) for as long as the queue reaches that position, updated where it moves.
-- No index covers the columns that change, so the update is HOT: the old version is
-- pruned on its page without a vacuum (fillfactor 50 leaves the room).
--
-- Without the index on the marks' queue keys, the lookup finds the nearest mark at
-- or ahead of a job by halving over the positions 1, 101, 201, ... (the admitter
-- marks every 100th job: sched/queuemarks.c, MARK_EVERY) - about ten probes of the
-- index for 1,000 marks. A position without its mark (a spacing changed
-- without this function) falls back to a scan of the type's marks, so the answer
-- never depends on the spacing, only its cost.
--
-- The index on (gpu_type, pos) is not unique, and the admitter's write is an update
-- followed by an insert rather than ON CONFLICT: a replica still running the binary
-- before this one deletes and inserts its moved marks, as it did, until it sees the
-- new schema and stands by. Each pass holds the admitter's lock, so no two write at
-- once. The lock on queue_marks that DROP INDEX takes waits for every reader of a
-- position, and every new reader waits behind it: at most 5 s, then the migration
-- fails (run it again).
SET LOCAL lock_timeout = '5s';
DROP INDEX queue_marks_key;
CREATE INDEX queue_marks_pos ON queue_marks (gpu_type, pos);
ALTER TABLE queue_marks SET (fillfactor = 50);

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
    -- slot k holds the mark at position 100 k + 1; the last one is the highest
    SELECT (max(q.pos) - 1) / 100 INTO hi FROM queue_marks q WHERE q.gpu_type = g;
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
