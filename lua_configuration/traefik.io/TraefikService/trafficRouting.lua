-- Traefik TraefikService (traefik.io/v1alpha1): splits spec.weighted.services by the canary weight.
--
-- Honoured Rollout fields:
--   canaryWeight / stableWeight  each Kubernetes Service entry (kind Service or no kind) named after
--                                the stable service is split into a stable part and a canary entry
--                                right after it. An entry alone in the list counts as 100 whatever
--                                its weight; otherwise a missing weight counts as 1 (Traefik's
--                                default). Weights above 100 are treated as 100; -1 (or any
--                                negative) means "no weight", and the resource is unchanged.
-- Ignored: matches and requestHeaderModifier (a TraefikService only balances and mirrors; route
-- the matching requests with the IngressRoute script); spec.mirroring (it mirrors, it does not
-- split); canaryService == stableService (TrafficRouting CR): Traefik cannot select canary pods
-- by label, so the resource is unchanged. Sticky sessions (weighted.sticky) are kept as they are.

local stable = obj.stableService
local canary = obj.canaryService
local spec = obj.data.spec

local function copy(v)
  if type(v) ~= "table" then return v end
  local out = {}
  for k, x in pairs(v) do out[k] = copy(x) end
  return out
end

local weight = obj.canaryWeight
if weight ~= nil and weight > 100 then weight = 100 end

if spec ~= nil and canary ~= stable and weight ~= nil and weight >= 0
  and type(spec.weighted) == "table" and type(spec.weighted.services) == "table" then
  local services = spec.weighted.services
  local alone = #services == 1
  local out = {}
  for _, s in ipairs(services) do
    table.insert(out, s)
    if s.name == stable and (s.kind == nil or s.kind == "Service") then
      local total = s.weight or 1
      if alone then total = 100 end
      local canaryPart = math.floor(total * weight / 100)
      local c = copy(s)
      c.name = canary
      s.weight = total - canaryPart
      c.weight = canaryPart
      table.insert(out, c)
    end
  end
  spec.weighted.services = out
end

return obj.data
