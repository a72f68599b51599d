-- 0017_job_mounts.sql - the storage spaces a job mounts (docs/storage.md, "Mounts
-- in jobs"): the submission's "mounts" as given, checked by aidcd (api/jobspec.c,
-- storage/jobmount.h) and shown in the job. A job mounts its own project's space,
-- its submitter's home and its tenant's datasets: the array names no tenant,
-- project or user, so what it stores can reach nothing of anyone else.
--
-- The table's grants and policies cover the new column as they cover the others.

ALTER TABLE jobs ADD COLUMN mounts jsonb NOT NULL DEFAULT '[]'::jsonb;
ALTER TABLE jobs ADD CONSTRAINT jobs_mounts_shape
    CHECK (jsonb_typeof(mounts) = 'array' AND jsonb_array_length(mounts) <= 8);
