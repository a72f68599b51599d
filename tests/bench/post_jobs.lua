-- post_jobs.lua - wrk script of tests/bench/jobs.sh: every request submits a
-- CPU-only job (a unique name per wrk thread and request) with
-- POST /api/v1/tenants/{tenant}/jobs into the project BENCH_PROJECT (default
-- "hold"), whose quota {"jobs":{"limit":0}} keeps every job queued: nothing
-- runs, the figure is the request path. The URL and the Authorization header
-- come from the wrk command line.
--   BENCH_RUN=$(date +%s) BENCH_PROJECT=hold wrk ... -s post_jobs.lua \
--       http://host:port/api/v1/tenants/T/jobs
-- BENCH_RUN (digits) keeps names unique across runs against the same database.
local threads = {}

function setup(thread)
   thread:set("tid", #threads + 1)
   table.insert(threads, thread)
end

function init(_)
   run = os.getenv("BENCH_RUN") or "0"
   project = os.getenv("BENCH_PROJECT") or "hold"
   n = 0
   wrk.method = "POST"
   wrk.headers["Content-Type"] = "application/json"
end

function request()
   n = n + 1
   local body = string.format(
      '{"project":"%s","name":"w%s-%d-%d","command":["true"],"cpus":1,"memory_gib":1,' ..
      '"time_limit_minutes":5,"priority":"%s","env":{"BENCH_SEQ":"%d"}}',
      project, run, tid, n, (n % 10 == 0) and "high" or "normal", n)
   return wrk.format(nil, nil, nil, body)
end
