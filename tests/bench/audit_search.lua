-- audit_search.lua - wrk script for tests/bench/audit.sh: every request is
-- GET /api/v1/audit/events with one filter drawn at random from what an
-- auditor asks (who, which tenant, which action, from where, a word, a
-- refused request, a time window), over the events that audit.sh wrote.
-- The Authorization header comes from the wrk command line.
local filters = {
   function() return "actor=user" .. math.random(0, 499) end,
   function() return "tenant=tenant" .. math.random(0, 39) end,
   function() return "action=job.cancel" end,
   function() return "action=auth.*&outcome=denied" end,
   function() return "source_ip=10.1." .. math.random(0, 199) .. ".7" end,
   function() return "source_ip=10.1." .. math.random(0, 199) .. ".0/24" end,
   function() return "q=p" .. math.random(0, 89) end,
   function() return "actor=user" .. math.random(0, 499) .. "&action=job.submit" end,
   function() return "resource_id=" .. string.format("%08x", math.random(0, 2147483647)) end,
   function() return "from=2026-01-01T00:00:00Z&to=2030-01-01T00:00:00Z&tenant=tenant" .. math.random(0, 39) end,
}

function init(_)
   math.randomseed(os.time() + math.random(1, 100000))
end

function request()
   local f = filters[math.random(1, #filters)]
   return wrk.format("GET", "/api/v1/audit/events?limit=50&" .. f())
end
