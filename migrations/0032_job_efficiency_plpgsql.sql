-- 0032_job_efficiency_plpgsql.sql - the job object's "efficiency" is planned once
-- per connection instead of once per statement that shows a job.
--
-- aidc_job_efficiency (0025) was a SQL function with a FROM clause: PostgreSQL
-- cannot inline such a function, and plans its body again in every statement
-- that calls it. pg_stat_statements (track = all, track_planning) in
-- tests/bench/slurm.sh: 13,216 plans of its body at 0.121 ms each, against
-- 0.004 ms to run it - a third of the PostgreSQL time of GET one job. PL/pgSQL
-- keeps the plan of its statement for the life of the session. Same body, same
-- answer, same row-level security (the policy is evaluated when it runs).
CREATE OR REPLACE FUNCTION aidc_job_efficiency(jid uuid) RETURNS json
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (SELECT json_build_object('gpu_util_avg', round(e.gpu_util_avg::numeric, 1),
                                     'gpu_util_peak', round(e.gpu_util_peak::numeric, 1),
                                     'gpu_mem_peak_gib', round(e.gpu_mem_peak_gib::numeric, 2),
                                     'cpu_efficiency', round(e.cpu_efficiency::numeric, 3),
                                     'mem_peak_gib', round(e.mem_peak_gib::numeric, 3),
                                     'mem_efficiency', round(e.mem_efficiency::numeric, 3))
              FROM (SELECT 1) one LEFT JOIN job_efficiency e ON e.job_id = jid);
END
$$;
