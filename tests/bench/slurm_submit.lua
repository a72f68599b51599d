-- slurm_submit.lua - wrk script of tests/bench/slurm.sh: every request submits
-- one held job straight to slurmrestd (POST /slurm/v0.0.38/job/submit), shaped
-- like the jobs aidc hands to Slurm (one core, 1 GiB, 5 minutes, partition
-- gpu, a working directory the job user can write, a non-empty environment)
-- but with "hold": true, so it stays PENDING/JobHeldUser and takes no cores.
-- slurm.sh cancels every job whose name starts with BENCH_PREFIX at the end.
-- The URL and the X-SLURM-USER-NAME / X-SLURM-USER-TOKEN headers come from the
-- wrk command line:
--   BENCH_PREFIX=aidcbench-123 BENCH_SLURM_WORKDIR=/tmp/aidc-slurm/jobs \
--   BENCH_SLURM_PARTITION=gpu wrk ... -H 'X-SLURM-USER-NAME: aidc' \
--       -H 'X-SLURM-USER-TOKEN: ...' -s slurm_submit.lua \
--       http://127.0.0.1:6820/slurm/v0.0.38/job/submit
-- Names: <prefix>-w-<wrk thread>-<n>.
local threads = {}

function setup(thread)
   thread:set("tid", #threads + 1)
   table.insert(threads, thread)
end

function init(_)
   prefix = os.getenv("BENCH_PREFIX") or "aidcbench"
   workdir = os.getenv("BENCH_SLURM_WORKDIR") or "/tmp/aidc-slurm/jobs"
   partition = os.getenv("BENCH_SLURM_PARTITION") or "gpu"
   n = 0
   wrk.method = "POST"
   wrk.headers["Content-Type"] = "application/json"
end

function request()
   n = n + 1
   local body = string.format(
      '{"job":{"name":"%s-w-%d-%d","partition":"%s","time_limit":5,"hold":true,' ..
      '"cpus_per_task":1,"memory_per_node":1024,"minimum_nodes":1,' ..
      '"current_working_directory":"%s","standard_output":"/dev/null",' ..
      '"standard_error":"/dev/null","environment":{"PATH":"/usr/bin:/bin","BENCH_SEQ":"%d"}},' ..
      '"script":"#!/bin/sh\\ntrue\\n"}',
      prefix, tid, n, partition, workdir, n)
   return wrk.format(nil, nil, nil, body)
end
