-- 0040_jobs_row_check.sql - the twenty CHECK constraints of jobs as one, whose
-- rules live in a function.
--
-- PostgreSQL reads a table's CHECK constraints from their stored node trees for
-- every statement that writes the table (ExecRelCheck: parse, plan, prepare):
-- jobs' twenty are 17 KB of node text, 80-130 us of every INSERT or UPDATE of a
-- job on this host, about 7 % of PostgreSQL's time per submit (perf, pgbench:
-- docs/performance.md). Merged into one expression they cost the same - the
-- cost is the size. A PL/pgSQL function is compiled once per session and its
-- one expression prepared once per transaction, so the constraint that calls
-- it is a 2.6 KB call: 20-30 us.
--
-- The rules are the same, each kept as the constraint it replaces was: a rule
-- that comes out NULL (a NULL column) passes, as a CHECK does. Violations keep
-- their SQLSTATE (23514, check_violation); only the constraint's name in the
-- message changes, and no code reads it (db/pgerr.c maps the state).
--
-- The constraint is added NOT VALID: the twenty it replaces held for every row
-- until this transaction dropped them, so a validation scan - with jobs locked
-- for the whole of it, as a migration runs in one transaction - would find
-- nothing. `ALTER TABLE jobs VALIDATE CONSTRAINT jobs_row_ok` may be run at any
-- time later (it blocks no reads or writes): docs/operations.md, Upgrade.
SET LOCAL lock_timeout = '5s';

-- Only pg_catalog's functions and operators: the functions and the pattern
-- match named with their schema, the comparisons of built-in types found first
-- under any search_path aidc uses (an empty one in a restore included). No SET
-- clause, which would save and restore the settings around every call.
CREATE FUNCTION aidc_job_row_ok(
    state text, priority text, kind text, name text, gpus integer, gpu_type text,
    cpus integer, memory_gib integer, nodes integer, time_limit_minutes integer,
    command jsonb, script text, mounts jsonb, image_digest text, stop_requested text,
    array_parent uuid, array_index integer, array_count integer,
    array_max_parallel integer, array_hold integer)
RETURNS boolean LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
    RETURN (state = ANY (ARRAY['queued', 'admitted', 'pending', 'running', 'succeeded',
                               'failed', 'cancelled', 'preempted'])) IS NOT FALSE
       AND (priority = ANY (ARRAY['high', 'normal', 'low'])) IS NOT FALSE
       AND (kind = ANY (ARRAY['batch', 'interactive'])) IS NOT FALSE
       AND (pg_catalog.char_length(name) >= 1
            AND pg_catalog.char_length(name) <= 200) IS NOT FALSE
       AND (gpus >= 0 AND gpus <= 64) IS NOT FALSE
       AND ((gpus = 0) = (gpu_type IS NULL)) IS NOT FALSE
       AND (gpu_type OPERATOR(pg_catalog.~) '^[a-z0-9][a-z0-9._-]{0,31}$') IS NOT FALSE
       AND (cpus >= 1 AND cpus <= 1024) IS NOT FALSE
       AND (memory_gib >= 1 AND memory_gib <= 16384) IS NOT FALSE
       AND (nodes >= 1 AND nodes <= 64) IS NOT FALSE
       AND (time_limit_minutes >= 1 AND time_limit_minutes <= 525600) IS NOT FALSE
       AND ((command IS NULL) <> (script IS NULL)) IS NOT FALSE
       AND (pg_catalog.jsonb_typeof(mounts) = 'array'
            AND pg_catalog.jsonb_array_length(mounts) <= 8) IS NOT FALSE
       AND (image_digest OPERATOR(pg_catalog.~) '^sha256:[0-9a-f]{64}$') IS NOT FALSE
       AND (stop_requested = ANY (ARRAY['cancel', 'preempt'])) IS NOT FALSE
       AND ((array_parent IS NULL) = (array_index IS NULL)) IS NOT FALSE
       AND (array_index >= 0 AND array_index <= 9999) IS NOT FALSE
       AND (array_count >= 1 AND array_count <= 10000) IS NOT FALSE
       AND ((array_count IS NULL) = (array_max_parallel IS NULL)
            AND (array_max_parallel IS NULL
                 OR (array_max_parallel >= 1 AND array_max_parallel <= array_count))
            AND (array_count IS NULL OR array_parent IS NULL)) IS NOT FALSE
       AND (array_hold >= 0) IS NOT FALSE;
END $$;

ALTER TABLE jobs ADD CONSTRAINT jobs_row_ok CHECK (aidc_job_row_ok(
    state, priority, kind, name, gpus, gpu_type, cpus, memory_gib, nodes, time_limit_minutes,
    command, script, mounts, image_digest, stop_requested, array_parent, array_index,
    array_count, array_max_parallel, array_hold)) NOT VALID;

ALTER TABLE jobs
    DROP CONSTRAINT jobs_state_check, DROP CONSTRAINT jobs_priority_check,
    DROP CONSTRAINT jobs_kind_check, DROP CONSTRAINT jobs_name_check,
    DROP CONSTRAINT jobs_gpus_check, DROP CONSTRAINT jobs_check,
    DROP CONSTRAINT jobs_gpu_type_check, DROP CONSTRAINT jobs_cpus_check,
    DROP CONSTRAINT jobs_memory_gib_check, DROP CONSTRAINT jobs_nodes_check,
    DROP CONSTRAINT jobs_time_limit_minutes_check, DROP CONSTRAINT jobs_check1,
    DROP CONSTRAINT jobs_mounts_shape, DROP CONSTRAINT jobs_image_digest_check,
    DROP CONSTRAINT jobs_stop_requested_check, DROP CONSTRAINT jobs_array_task,
    DROP CONSTRAINT jobs_array_index_check, DROP CONSTRAINT jobs_array_count_check,
    DROP CONSTRAINT jobs_array_parent, DROP CONSTRAINT jobs_array_hold_check;
