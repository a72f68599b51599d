-- soak_mix.lua - wrk script of tests/bench/soak.sh: the benchmark load mix,
-- paced, so aidcd and its background workers run a steady day's work.
-- Each wrk thread walks a fixed cycle of 20 requests:
--    8 GET  /api/v1/tenants/{t}/jobs?limit=50 (all, or one state, or one project)
--    8 GET  /api/v1/tenants/{t}/jobs/{id}     (an id of the seeded or submitted jobs)
--    1 POST /api/v1/tenants/{t}/jobs          short job: sleep SOAK_SHORT_SECONDS
--    1 POST /api/v1/tenants/{t}/jobs          long job: sleep 600, cancelled later
--                                              (a time limit of 1 minute otherwise)
--    1 POST /api/v1/tenants/{t}/jobs/{id}/cancel  the oldest waiting long job
--    1 GET  /metrics
-- and every SOAK_LOGIN_EVERY-th cycle puts a POST /api/v1/auth/login in place
-- of its first list (scrypt: tens of milliseconds and 32 MiB each).
-- A long job is cancelled only once CANCEL_LAG more long jobs were submitted
-- after it (a few seconds), so most cancels stop a running job; until then
-- the cancel slot reads a job instead. Long jobs still waiting when wrk ends
-- (soak.sh runs it once per sample interval) end by their time limit, one minute. Every request but the login carries
-- the Authorization header of the wrk command line (an API token). After each
-- answer the connection waits SOAK_DELAY_MS: that paces the load (wrk
-- measures latency from the write of a request, not from the end of the delay).
--   SOAK_TENANT=tenant-001 SOAK_PROJECTS="project-01 project-02"
--   SOAK_JOB_IDS="id id ..." SOAK_USER=... SOAK_PASSWORD=... SOAK_RUN=<digits>
--   SOAK_DELAY_MS=40 SOAK_LOGIN_EVERY=10 SOAK_SHORT_SECONDS=1
local CANCEL_LAG = 5
local threads = {}

function setup(thread)
   thread:set("tid", #threads + 1)
   table.insert(threads, thread)
end

local function words(s)
   local t = {}
   for w in string.gmatch(s or "", "%S+") do
      t[#t + 1] = w
   end
   return t
end

function init(_)
   math.randomseed(os.time() * 1000 + tid)
   tenant = os.getenv("SOAK_TENANT") or "tenant-001"
   projects = words(os.getenv("SOAK_PROJECTS") or "project-01")
   ids = words(os.getenv("SOAK_JOB_IDS"))
   ids_max = 500 -- a ring of known ids: the seeded ones, then the newest submitted
   ids_next = 1
   waiting = {}  -- long jobs to cancel, oldest first
   run = os.getenv("SOAK_RUN") or "0"
   delay_ms = tonumber(os.getenv("SOAK_DELAY_MS") or "40")
   login_every = tonumber(os.getenv("SOAK_LOGIN_EVERY") or "10")
   short_s = tonumber(os.getenv("SOAK_SHORT_SECONDS") or "1")
   login_body = string.format('{"username":"%s","password":"%s"}',
                              os.getenv("SOAK_USER") or "", os.getenv("SOAK_PASSWORD") or "")
   base = "/api/v1/tenants/" .. tenant .. "/jobs"
   slot = 0
   cycles = 0
   n = 0
   -- wrk.format's headers replace wrk.headers (the command line's): copies, one without
   -- the API token for the login
   json, anon = {}, {}
   for k, v in pairs(wrk.headers) do
      json[k] = v
      if string.lower(k) ~= "authorization" then
         anon[k] = v
      end
   end
   json["Content-Type"] = "application/json"
   anon["Content-Type"] = "application/json"
end

local function remember(id)
   if #ids < ids_max then
      ids[#ids + 1] = id
   else
      ids[ids_next] = id
      ids_next = ids_next % ids_max + 1
   end
end

local function read_one()
   if #ids == 0 then
      return wrk.format("GET", base .. "?limit=50")
   end
   return wrk.format("GET", base .. "/" .. ids[math.random(1, #ids)])
end

local states = { "", "&state=running", "&state=queued", "&state=succeeded", "&state=cancelled" }

local function list()
   local q = "?limit=50"
   if slot % 4 == 1 then
      q = q .. "&project=" .. projects[math.random(1, #projects)]
   else
      q = q .. states[math.random(1, #states)]
   end
   return wrk.format("GET", base .. q)
end

local function submit(kind)
   n = n + 1
   local secs = kind == "long" and 600 or short_s
   local body = string.format(
      '{"project":"%s","name":"soak-%s-%s-%d-%d","command":["sleep","%d"],"cpus":1,' ..
      '"memory_gib":1,"time_limit_minutes":1,"env":{"SOAK_SEQ":"%d"}}',
      projects[math.random(1, #projects)], kind, run, tid, n, secs, n)
   return wrk.format("POST", base, json, body)
end

local plan = { "list", "read", "list", "read", "short", "list", "read", "read", "list", "metrics",
               "read", "list", "long", "read", "list", "read", "cancel", "list", "read", "list" }

function request()
   slot = slot % #plan + 1
   if slot == 1 then
      cycles = cycles + 1
      if login_every > 0 and cycles % login_every == 0 then
         return wrk.format("POST", "/api/v1/auth/login", anon, login_body)
      end
   end
   local k = plan[slot]
   if k == "list" then
      return list()
   elseif k == "read" then
      return read_one()
   elseif k == "short" or k == "long" then
      return submit(k)
   elseif k == "metrics" then
      return wrk.format("GET", "/metrics")
   elseif #waiting > CANCEL_LAG then
      local id = table.remove(waiting, 1)
      return wrk.format("POST", base .. "/" .. id .. "/cancel", json, "")
   end
   return read_one()
end

function delay()
   return delay_ms
end

function response(status, _, body)
   if status ~= 201 then
      return
   end
   -- 201 answers only a submit in this mix; the job's own id comes first in its JSON
   local id = string.match(body, '"id"%s*:%s*"([^"]+)"')
   if not id then
      return
   end
   remember(id)
   if string.find(body, '"soak%-long%-') then
      waiting[#waiting + 1] = id
   end
end
