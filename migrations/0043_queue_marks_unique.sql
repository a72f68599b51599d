-- 0043_queue_marks_unique.sql - a pass writes its marks by their key.
--
-- The admitter wrote the marks that moved by joining them, as arrays, against
-- queue_marks. Under row-level security the planner takes queue_marks'
-- policy (the system role) for a filter that keeps almost no row, and the
-- plan a prepared statement settles on joined the two by comparing every mark
-- with every other: a pass that moved 350 marks (a queue of 35,000, every
-- mark behind a high-priority job moves) took 16 ms, most of the admitter's
-- CPU in a submit burst (docs/performance.md, thirteenth section). A mark is
-- now inserted or updated through the unique index of its (GPU type,
-- position) - ON CONFLICT, one probe each, still in place (HOT: no index
-- covers what changes) - and the marks past a queue's end go by one cutoff
-- per GPU type.
--
-- Two marks of one position were never written (each pass holds the
-- admitter's lock and writes in place); should a copy exist, it goes before
-- the index is built: marks are derived, and the next pass writes one that is
-- missing. The lock DROP INDEX takes waits for every reader of a position: at
-- most 5 s, then the migration fails (run it again).
SET LOCAL lock_timeout = '5s';
DELETE FROM queue_marks a USING queue_marks b
 WHERE a.gpu_type = b.gpu_type AND a.pos = b.pos AND a.ctid > b.ctid;
DROP INDEX queue_marks_pos;
CREATE UNIQUE INDEX queue_marks_pos ON queue_marks (gpu_type, pos);
