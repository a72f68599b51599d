-- 0034_jobs_insert_xid.sql - the transaction that inserted a job, so that an
-- admission pass woken by submits reads the new jobs only (db/schedsnap.c, "new").
--
-- During a burst of submits the admitter passed every 20 ms and each pass listed
-- every queued job (11,000 held ones: half a CPU of PostgreSQL). A pass now
-- notes the oldest transaction still running when it reads (pg_snapshot_xmin);
-- the next pass, if only submits woke it, reads the queued jobs inserted by that
-- transaction or a later one: every job committed since is among them, a job whose
-- transaction was still open included. Rows from before this migration have no
-- value and are read by the other passes, as every row is.
--
-- Without a default at first, so that the table is not rewritten; new rows get
-- their transaction's id (a transaction that inserts has one).
ALTER TABLE jobs ADD COLUMN insert_xid xid8;
ALTER TABLE jobs ALTER COLUMN insert_xid SET DEFAULT pg_current_xact_id();
CREATE INDEX jobs_queued_new ON jobs (insert_xid) WHERE state = 'queued';
