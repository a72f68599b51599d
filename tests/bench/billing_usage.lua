-- billing_usage.lua - wrk script for tests/bench/billing.sh: every request is
-- GET /api/v1/tenants/{tenant}/usage for one whole UTC month grouped by project
-- and resource, of a tenant and a month drawn at random: tenant-001 ..
-- tenant-<BENCH_TENANTS>, a month of BENCH_MONTH_LIST ("2025-12 2026-01 ...").
-- The Authorization header comes from the wrk command line.
local tenants = tonumber(os.getenv("BENCH_TENANTS") or "200")
local months = {}
for m in string.gmatch(os.getenv("BENCH_MONTH_LIST") or "", "%S+") do
   months[#months + 1] = m
end

local function next_month(m)
   local y, mo = m:match("^(%d+)-(%d+)$")
   y, mo = tonumber(y), tonumber(mo)
   if mo == 12 then
      y, mo = y + 1, 1
   else
      mo = mo + 1
   end
   return string.format("%04d-%02d", y, mo)
end

local threads = 0
function setup(thread)
   threads = threads + 1
   thread:set("thread_no", threads)
end

function init(_)
   -- each wrk thread has its own Lua state: seed each differently
   math.randomseed(os.time() * 1000 + (thread_no or 0))
end

function request()
   local m = months[math.random(1, #months)]
   return wrk.format("GET", string.format(
      "/api/v1/tenants/tenant-%03d/usage?from=%s-01T00:00:00Z&to=%s-01T00:00:00Z"
         .. "&group_by=project,resource", math.random(1, tenants), m, next_month(m)))
end
