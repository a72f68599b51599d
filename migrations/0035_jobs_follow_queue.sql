-- 0035_jobs_follow_queue.sql - statistics of jobs brought up to a burst of submits.
--
-- aidcd's sessions plan each statement once (plan_cache_mode = force_generic_plan)
-- and keep the plan until the table's statistics change. Planned while jobs held
-- few queued rows - a fresh database, or statistics from a quiet hour - the
-- admitter's wait-reason update walked every queued job for each pass (50-58 ms
-- for 40 rows) and a submit's queue position counted the queue by scanning it
-- (3,000 buffers a submit), until autovacuum's analyze came, a minute or more
-- into the burst (docs/performance.md, "the submit figure is two-valued").
--
-- The admitter asks, when its queue has grown and at least every few timed
-- passes: where the queued jobs (counted here, each task of an array too, and only
-- as far as the answer needs) are over four times what the statistics make of them
-- and over a thousand, this analyses jobs, and every session's plans on jobs are
-- made again. Asked again at once, it finds the statistics right and does nothing,
-- so a caller cannot make it analyse over and over. A lock held by a concurrent
-- vacuum or analyze makes it give up (NULL) rather than hold the admitter up.
CREATE FUNCTION aidc_jobs_follow_queue() RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp
SET lock_timeout = '100ms' AS $$
DECLARE
    believed float8;
    enough bigint;
    queued bigint;
BEGIN
    -- the queued rows of the last analysis: the plans made since were made from
    -- them (the planner scales the table's rows with its pages, but a plan once
    -- made stays); never analysed, nothing is believed
    SELECT greatest(c.reltuples, 0)
           * coalesce((SELECT m.f FROM pg_stats s,
                              unnest(s.most_common_vals::text::text[], s.most_common_freqs) AS m(v, f)
                        WHERE s.schemaname = 'public' AND s.tablename = 'jobs'
                          AND s.attname = 'state' AND NOT s.inherited AND m.v = 'queued'), 0)
      INTO believed FROM pg_class c WHERE c.oid = 'public.jobs'::regclass;
    enough := (4 * believed)::bigint + 1000;
    -- planned at each call (a plan kept from an empty table would scan it all)
    EXECUTE 'SELECT count(*) FROM (SELECT 1 FROM public.jobs WHERE state = ''queued'''
            ' LIMIT $1) q' INTO queued USING enough;
    IF queued < enough THEN
        RETURN false;
    END IF;
    ANALYZE public.jobs;
    RETURN true;
EXCEPTION WHEN lock_not_available THEN
    RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION aidc_jobs_follow_queue() FROM PUBLIC;
