-- 0033_admission_indexes.sql - what an admission pass reads grows with the jobs it
-- may admit, not with the held ones (db/schedsnap.h, DB_SCHED_QUEUED_SQL).
--
-- With two arrays of 10,000 tasks each held by a dependency, every pass read all
-- 20,000 tasks (200 ms a pass, 110,000 buffers): the plain queued jobs were found
-- by a scan of every queued row, tasks included, and an array's active tasks were
-- counted by a walk over all its open ones. Both get an index of their own; a
-- submit of a plain job adds one small index entry, a task one only while it is
-- admitted or running.

-- the queued jobs that are no array's task (plain jobs, array parents)
CREATE INDEX jobs_queued_top ON jobs (id) WHERE state = 'queued' AND array_parent IS NULL;
-- the tasks of an array that hold a place of its max_parallel
CREATE INDEX jobs_array_active ON jobs (array_parent)
    WHERE array_parent IS NOT NULL AND state IN ('admitted', 'pending', 'running');
