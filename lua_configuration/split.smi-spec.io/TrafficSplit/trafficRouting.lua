-- SMI TrafficSplit (split.smi-spec.io, v1alpha2 and later): splits spec.backends by the canary weight.
--
-- Honoured Rollout fields:
--   canaryWeight / stableWeight  the stable backend's weight, plus the weight of an existing canary
--                                backend (a common pattern is to pre-create it with weight 0), is
--                                shared between the two: canary = total * canaryWeight / 100,
--                                stable = the rest; when that is not a whole number, every weight
--                                is first multiplied by the smallest factor that makes it one. A canary backend is appended right
--                                after the stable one when there is none. When the stable backend
--                                is the only other backend it counts as 100 whatever its weight;
--                                a missing weight counts as 0. Weights above 100 are treated as
--                                100; -1 (or any negative) means "no weight": unchanged.
-- Errors (a TrafficSplit that backs the stable service cannot express them, and dropping them
-- silently would misroute): matches and requestHeaderModifier (a TrafficSplit selects requests
-- through separately named HTTPRouteGroups, which a step cannot create; use a gateway script for
-- header canaries); canaryService == stableService (TrafficRouting CR: a TrafficSplit routes to
-- Services only, it cannot select canary pods by label). Weights must be integers: v1alpha1
-- quantity strings ("500m") raise an error. A TrafficSplit without the stable backend is unchanged.

local stable = obj.stableService
local canary = obj.canaryService
local spec = obj.data.spec

local function weightOf(backend)
  local w = backend.weight
  if w == nil then return 0 end
  if type(w) ~= "number" then
    error("TrafficSplit backend weights must be integers (split.smi-spec.io/v1alpha2 or later)")
  end
  return w
end

local function servesStable()
  for _, b in
    ipairs(type(spec) == "table" and type(spec.backends) == "table" and spec.backends or {})
  do
    if b.service == stable then return true end
  end
  return false
end

if servesStable() then
  if canary == stable then
    error(
      "a TrafficSplit routes to Services only and cannot select canary pods by label:"
        .. " canaryService == stableService (TrafficRouting CR) is not supported"
    )
  end
  for _, m in ipairs(obj.matches or {}) do
    if m.path ~= nil or m.headers ~= nil or m.queryParams ~= nil then
      error(
        "a TrafficSplit cannot match requests (it selects them through HTTPRouteGroups):"
          .. " route the step's matches with a gateway script"
      )
    end
  end
  if obj.requestHeaderModifier ~= nil then
    error(
      "a TrafficSplit cannot modify request headers: route the step's requestHeaderModifier"
        .. " with a gateway script"
    )
  end
end

local weight = obj.canaryWeight
if weight ~= nil and weight > 100 then weight = 100 end

if
  spec ~= nil
  and canary ~= stable
  and weight ~= nil
  and weight >= 0
  and type(spec.backends) == "table"
then
  local stableBackend, canaryBackend = nil, nil
  local others = 0
  for _, b in ipairs(spec.backends) do
    if b.service == stable and stableBackend == nil then
      stableBackend = b
    elseif b.service == canary and canaryBackend == nil then
      canaryBackend = b
    else
      others = others + 1
    end
  end
  if stableBackend ~= nil then
    local total = weightOf(stableBackend)
    if canaryBackend ~= nil then total = total + weightOf(canaryBackend) end
    if others == 0 then total = 100 end
    -- Weights are relative (servicemeshinterface/smi-spec traffic-split v1alpha2: a backend gets
    -- weight / sum of weights), so when the canary part is not a whole number (1 at 50 %) every
    -- weight is multiplied by the smallest factor that makes it one, instead of flooring the
    -- canary's share to 0.
    local k = 1
    while k < 100 and (total * k * weight) % 100 ~= 0 do
      k = k + 1
    end
    if k > 1 then
      for _, b in ipairs(spec.backends) do
        if b ~= stableBackend and b ~= canaryBackend and b.weight ~= nil then
          b.weight = weightOf(b) * k
        end
      end
      total = total * k
    end
    local canaryPart = math.floor(total * weight / 100)
    stableBackend.weight = total - canaryPart
    if canaryBackend ~= nil then
      canaryBackend.weight = canaryPart
    else
      local backends = {}
      for _, b in ipairs(spec.backends) do
        table.insert(backends, b)
        if b == stableBackend then
          table.insert(backends, { service = canary, weight = canaryPart })
        end
      end
      spec.backends = backends
    end
  end
end

return obj.data
