-- Istio DestinationRule (networking.istio.io): adds the `canary` subset that the VirtualService
-- script routes to when canaryService == stableService (TrafficRouting CR, no separate canary
-- Service).
--
-- Honoured: canaryService / stableService only. When they are equal and spec.host is the stable
-- service (its short name or "<stable>.<namespace>..."), a subset named "canary" selecting the pods
-- labelled CANARY_LABELS is appended to spec.subsets, unless a subset of that name already exists.
-- The subset is added in every step, so it exists before any VirtualService route points at it.
-- Ignored: canaryWeight, matches and requestHeaderModifier (weights and matches are expressed in the
-- VirtualService, not here). With a separate canary Service (Rollout with canary != stable) no
-- subset is needed, so the resource is returned unchanged.
-- CANARY_LABELS is the label the canary pods carry; it follows the convention used in Kruise
-- Rollout's user documentation. Change it if your canary pods are labelled differently.

local CANARY_SUBSET = "canary"
local CANARY_LABELS = { ["istio.service.tag"] = "gray" }

local stable = obj.stableService
local spec = obj.data.spec

local function refersToStable(host)
  if type(host) ~= "string" then return false end
  local prefix = stable .. "."
  return host == stable or string.sub(host, 1, string.len(prefix)) == prefix
end

if obj.canaryService == stable and spec ~= nil and refersToStable(spec.host) then
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
