-- post_projects.lua - wrk script for case (d) of tests/bench/run.sh: every
-- request creates a new project (unique slug per wrk thread and request) with
-- POST /api/v1/tenants/{tenant}/projects; the URL and the Authorization
-- header come from the wrk command line.
--   BENCH_RUN=$(date +%s) wrk ... -s post_projects.lua http://host:port/api/v1/tenants/T/projects
-- BENCH_RUN (digits) keeps slugs unique across runs against the same database.
local threads = {}

function setup(thread)
   thread:set("tid", #threads + 1)
   table.insert(threads, thread)
end

function init(_)
   run = os.getenv("BENCH_RUN") or "0"
   n = 0
   wrk.method = "POST"
   wrk.headers["Content-Type"] = "application/json"
end

function request()
   n = n + 1
   local slug = string.format("w%s-%d-%d", run, tid, n)
   local body = string.format(
      '{"slug":"%s","name":"wrk project %d of thread %d","description":"tests/bench/run.sh"}',
      slug, n, tid)
   return wrk.format(nil, nil, nil, body)
end
