-- Traefik TraefikService (traefik.io/v1alpha1): splits spec.weighted.services by the canary weight.
--
-- Honoured Rollout fields:
--   canaryWeight / stableWeight  each Kubernetes Service entry (kind Service or no kind) named after
--                                the stable service is split into a stable part and a canary entry
--                                right after it. An entry alone in the list counts as 100 whatever
--                                its weight; otherwise a missing weight counts as 1 (Traefik's
--                                default). Weights are relative, so when a stable weight's canary
--                                part is not a whole number (3 at 50 %), every weight is multiplied
--                                by the smallest factor that makes it one. Weights above 100 are
--                                treated as 100; -1 (or any negative) means "no weight", and the
--                                resource is unchanged.
-- Errors (a TraefikService that serves the stable service cannot express them, and dropping them
-- silently would misroute): matches and requestHeaderModifier (a TraefikService only balances and
-- mirrors; route the matching requests, with a Middleware for headers, with the IngressRoute
-- script); a spec.mirroring whose main service is the stable one (it mirrors, it cannot split);
-- canaryService == stableService (TrafficRouting CR: Traefik cannot select canary pods by label).
-- A TraefikService without the stable service is unchanged. Sticky sessions (weighted.sticky)
-- are kept as they are.

local stable = obj.stableService
local canary = obj.canaryService
local spec = obj.data.spec

local function copy(v)
  if type(v) ~= "table" then return v end
  local out = {}
  for k, x in pairs(v) do
    out[k] = copy(x)
  end
  return out
end

local function isStable(s)
  return type(s) == "table" and s.name == stable and (s.kind == nil or s.kind == "Service")
end

local function servesStable()
  if type(spec) ~= "table" then return false end
  if isStable(spec.mirroring) then return true end
  local weighted = type(spec.weighted) == "table" and spec.weighted.services or nil
  for _, s in ipairs(type(weighted) == "table" and weighted or {}) do
    if isStable(s) then return true end
  end
  return false
end

if servesStable() then
  if canary == stable then
    error(
      "Traefik routes to Services only and cannot select canary pods by label:"
        .. " canaryService == stableService (TrafficRouting CR) is not supported"
    )
  end
  for _, m in ipairs(obj.matches or {}) do
    if m.path ~= nil or m.headers ~= nil or m.queryParams ~= nil then
      error(
        "a TraefikService cannot match requests: route the step's matches with the IngressRoute script"
      )
    end
  end
  if obj.requestHeaderModifier ~= nil then
    error(
      "a TraefikService cannot modify request headers: route the step's requestHeaderModifier"
        .. " with the IngressRoute script (a headers Middleware)"
    )
  end
  if isStable(spec.mirroring) then
    error(
      "a mirroring TraefikService copies requests and cannot split them: reference a weighted"
        .. " TraefikService for the canary traffic"
    )
  end
end

local weight = obj.canaryWeight
if weight ~= nil and weight > 100 then weight = 100 end

-- The smallest k (at most 100) such that every stable weight times k times the canary weight is
-- a multiple of 100. Weights are relative (traefik/traefik pkg/config/dynamic/http_config.go:
-- WRRService, default weight 1), so multiplying every weight by k keeps each share and lets the
-- canary part of a small weight (3 at 50 %) be exact instead of being floored.
local function weightScale(stableWeights)
  for k = 1, 100 do
    local exact = true
    for _, w in ipairs(stableWeights) do
      if (w * k * weight) % 100 ~= 0 then exact = false end
    end
    if exact then return k end
  end
  return 100
end

local MAX_WEIGHT = 2147483647 -- WRRService.Weight is an int; keep it portable to 32 bits

local function scaled(w)
  if w > MAX_WEIGHT then
    error(
      "weight " .. tostring(w) .. " exceeds 2^31-1 after scaling the weights for the canary split"
    )
  end
  return w
end

if
  spec ~= nil
  and canary ~= stable
  and weight ~= nil
  and weight >= 0
  and type(spec.weighted) == "table"
  and type(spec.weighted.services) == "table"
then
  local services = spec.weighted.services
  local alone = #services == 1
  local function base(s)
    if alone then return 100 end
    return s.weight or 1
  end
  local stableWeights = {}
  for _, s in ipairs(services) do
    if isStable(s) then table.insert(stableWeights, base(s)) end
  end
  local k = weightScale(stableWeights)
  local out = {}
  for _, s in ipairs(services) do
    table.insert(out, s)
    if isStable(s) then
      local total = base(s) * k
      local canaryPart = total * weight / 100
      local c = copy(s)
      c.name = canary
      s.weight = scaled(total - canaryPart)
      c.weight = canaryPart
      table.insert(out, c)
    elseif k > 1 then
      s.weight = scaled((s.weight or 1) * k)
    end
  end
  spec.weighted.services = out
end

return obj.data
