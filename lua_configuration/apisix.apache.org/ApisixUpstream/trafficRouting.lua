-- Apache APISIX ApisixUpstream (apisix.apache.org/v2): adds the `canary` subset that the
-- ApisixRoute script routes to when canaryService == stableService (TrafficRouting CR, no separate
-- canary Service).
--
-- An ApisixUpstream is bound to the Service of the same name. The script cannot see
-- metadata.name, so it trusts the reference: list only the stable service's ApisixUpstream in
-- customNetworkRefs.
-- Honoured: canaryService / stableService only. When they are equal, a subset named "canary"
-- selecting the pods labelled CANARY_LABELS is appended to spec.subsets, unless a subset of that
-- name already exists. It is added in every step, so it exists before a route points at it.
-- Ignored: canaryWeight, matches and requestHeaderModifier (they are expressed in the ApisixRoute).
-- With a separate canary Service (canary != stable) no subset is needed: unchanged.
-- CANARY_LABELS is the label the canary pods carry; change it to your own convention.

local CANARY_SUBSET = "canary"
local CANARY_LABELS = { ["istio.service.tag"] = "gray" }

local spec = obj.data.spec

if obj.canaryService == obj.stableService then
  if spec == nil then
    spec = {}
    obj.data.spec = spec
  end
  local subsets = spec.subsets
  if type(subsets) ~= "table" then subsets = {} end
  local present = false
  for _, s in ipairs(subsets) do
    if s.name == CANARY_SUBSET then present = true end
  end
  if not present then
    local labels = {}
    for k, v in pairs(CANARY_LABELS) do
      labels[k] = v
    end
    table.insert(subsets, { name = CANARY_SUBSET, labels = labels })
  end
  spec.subsets = subsets
end

return obj.data
