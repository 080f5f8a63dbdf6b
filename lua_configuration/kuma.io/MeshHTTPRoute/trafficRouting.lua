-- Kuma MeshHTTPRoute (kuma.io/v1alpha1): routes canary traffic in spec.to[].rules[].
--
-- A backend is the stable service when its backendRef name is the stable name, or the legacy
-- kuma.io/service form "<stable>_<namespace>_svc_<port>" (the canary keeps that suffix). A rule
-- without backendRefs sends traffic to its to[].targetRef; when that is the stable MeshService,
-- the rule is treated as having that single backend.
--
-- Honoured Rollout fields:
--   canaryWeight / stableWeight  each stable backendRef of a rule is split into a stable part and a
--                                canary part right after it. A backendRef alone in its rule counts
--                                as 100 whatever its weight; otherwise a missing weight counts as 1
--                                (Kuma's default). Weights are relative, so when a stable weight's
--                                canary part is not a whole number (1 at 20 %), every weight of the
--                                list is multiplied by the smallest factor that makes it one.
--                                Weights above 100 are treated as 100; -1 (or any negative) means
--                                "no weight".
--   matches                      for every rule with a stable backend, a canary rule is inserted
--                                right before it. Its `matches` are every original match of the
--                                rule combined (AND) with every Rollout match (OR); path, headers
--                                and queryParams keep their Gateway-API-style types (Exact,
--                                RegularExpression, PathPrefix, Prefix) with an explicit type when
--                                the Rollout left it out (Exact; PathPrefix "/" for a path). A
--                                Rollout condition replaces one of the original match with the
--                                same path/header/param name. Kuma orders rules by specificity,
--                                and the canary rule is always the more specific one.
--   requestHeaderModifier        merged into the RequestHeaderModifier filter of each canary rule.
--   canaryService == stableService (TrafficRouting CR): the canary backendRef is a
--                                MeshServiceSubset of the stable service with CANARY_TAGS;
--                                otherwise it is the canary MeshService (a stable subset's tags are
--                                dropped, they select stable pods).
-- Matches and weight in one step both apply: matching requests go to the canary, the rest is split
-- by weight. A step with neither (canaryWeight -1, no matches) returns the resource unchanged.
-- Ignored: requestHeaderModifier in weight-only steps (rule filters apply to every backend of the
-- rule, so they cannot target only the canary share); empty Rollout matches (no conditions).
-- CANARY_TAGS is the label the canary pods carry (Kuma turns pod labels into tags); it follows
-- the convention of Kruise Rollout's user documentation. Change it to your own convention.

local CANARY_TAGS = {["istio.service.tag"] = "gray"}

local stable = obj.stableService
local canary = obj.canaryService
local useSubset = canary == stable
local spec = obj.data.spec

local function copy(v)
  if type(v) ~= "table" then return v end
  local out = {}
  for k, x in pairs(v) do out[k] = copy(x) end
  return out
end

-- The part of a backend name after the stable service name ("" or "_ns_svc_port"), or nil.
local function stableSuffix(name)
  if type(name) ~= "string" then return nil end
  if name == stable then return "" end
  local prefix = stable .. "_"
  if string.sub(name, 1, string.len(prefix)) ~= prefix then return nil end
  local suffix = string.sub(name, string.len(stable) + 1)
  if string.find(suffix, "^_[^_]+_svc_[0-9]+$") ~= nil then return suffix end
  return nil
end

local function isStable(ref)
  return type(ref) == "table" and (ref.kind == "MeshService" or ref.kind == "MeshServiceSubset")
    and stableSuffix(ref.name) ~= nil
end

-- Rollout matches as Kuma match fragments; empty ones are skipped.
local rolloutMatches = {}
for _, m in ipairs(obj.matches or {}) do
  local km = {}
  local any = false
  if m.path ~= nil then
    km.path = {type = m.path.type or "PathPrefix", value = m.path.value or "/"}
    any = true
  end
  for _, h in ipairs(m.headers or {}) do
    km.headers = km.headers or {}
    table.insert(km.headers, {type = h.type or "Exact", name = h.name, value = h.value})
    any = true
  end
  for _, q in ipairs(m.queryParams or {}) do
    km.queryParams = km.queryParams or {}
    table.insert(km.queryParams, {type = q.type or "Exact", name = q.name, value = q.value})
    any = true
  end
  if any then table.insert(rolloutMatches, km) end
end

local weight = obj.canaryWeight
if weight ~= nil and weight > 100 then weight = 100 end
local useWeight = weight ~= nil and weight >= 0

local function canaryRef(stableRef)
  local r = copy(stableRef)
  if useSubset then
    r.kind = "MeshServiceSubset"
    r.tags = copy(CANARY_TAGS)
  else
    r.kind = "MeshService"
    r.name = canary .. stableSuffix(stableRef.name)
    r.tags = nil
  end
  return r
end

-- Replaces the entry with the same name in list (or appends), for header/param lists.
local function putNamed(list, entry)
  for i, e in ipairs(list) do
    if e.name == entry.name then
      list[i] = entry
      return
    end
  end
  table.insert(list, entry)
end

local function mergeMatch(base, extra)
  local m = copy(base)
  local add = copy(extra)
  if add.path ~= nil then m.path = add.path end
  for _, field in ipairs({"headers", "queryParams"}) do
    if add[field] ~= nil then
      m[field] = m[field] or {}
      for _, e in ipairs(add[field]) do putNamed(m[field], e) end
    end
  end
  return m
end

local function addHeaderFilter(conf)
  local rhm = obj.requestHeaderModifier
  if rhm == nil then return end
  if rhm.set == nil and rhm.add == nil and rhm.remove == nil then return end
  conf.filters = conf.filters or {}
  local filter = nil
  for _, f in ipairs(conf.filters) do
    if f.type == "RequestHeaderModifier" then filter = f end
  end
  if filter == nil then
    filter = {type = "RequestHeaderModifier"}
    table.insert(conf.filters, filter)
  end
  filter.requestHeaderModifier = filter.requestHeaderModifier or {}
  local mod = filter.requestHeaderModifier
  for _, op in ipairs({"set", "add"}) do
    for _, h in ipairs(rhm[op] or {}) do
      mod[op] = mod[op] or {}
      putNamed(mod[op], {name = h.name, value = h.value})
    end
  end
  for _, name in ipairs(rhm.remove or {}) do
    mod.remove = mod.remove or {}
    table.insert(mod.remove, name)
  end
end

local function canaryRule(rule, stableRef)
  local c = copy(rule)
  local matches = {}
  if type(rule.matches) == "table" and #rule.matches > 0 then
    for _, base in ipairs(rule.matches) do
      for _, extra in ipairs(rolloutMatches) do table.insert(matches, mergeMatch(base, extra)) end
    end
  else
    for _, extra in ipairs(rolloutMatches) do table.insert(matches, copy(extra)) end
  end
  c.matches = matches
  c.default = c.default or {}
  local r = canaryRef(stableRef)
  r.weight = nil
  c.default.backendRefs = {r}
  addHeaderFilter(c.default)
  return c
end

-- The smallest k (at most 100) such that every stable weight times k times the canary weight is
-- a multiple of 100. Weights are relative (kumahq/kuma api/common/v1alpha1/targetref.go: BackendRef.Weight, default 1), so multiplying every weight of a list by
-- k keeps each share and lets the canary part of a small weight (1 at 50 %) be exact instead of
-- flooring to 0.
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

local MAX_WEIGHT = 2147483647 -- the gateway's weights are 32-bit integers

local function scaled(w)
  if w > MAX_WEIGHT then
    error("weight " .. tostring(w) .. " exceeds 2^31-1 after scaling the weights for the canary split")
  end
  return w
end

local function splitWeights(refs)
  local out = {}
  local alone = #refs == 1
  local function base(x)
    if alone then return 100 end
    return x.weight or 1
  end
  local stableWeights = {}
  for _, x in ipairs(refs) do
    if isStable(x) then table.insert(stableWeights, base(x)) end
  end
  local k = weightScale(stableWeights)
  for _, r in ipairs(refs) do
    table.insert(out, r)
    if isStable(r) then
      local total = base(r) * k
      local canaryPart = total * weight / 100
      local c = canaryRef(r)
      r.weight = scaled(total - canaryPart)
      c.weight = canaryPart
      table.insert(out, c)
    elseif k > 1 then
      r.weight = scaled((r.weight or 1) * k)
    end
  end
  return out
end

if spec ~= nil and type(spec.to) == "table" and (useWeight or #rolloutMatches > 0) then
  for _, to in ipairs(spec.to) do
    if type(to.rules) == "table" then
      -- A rule without backendRefs goes to the to[] target itself.
      local implicit = nil
      local target = to.targetRef
      if type(target) == "table" and target.kind == "MeshService" and stableSuffix(target.name) ~= nil then
        implicit = {kind = "MeshService", name = target.name, namespace = target.namespace}
      end
      local rules = {}
      for _, rule in ipairs(to.rules) do
        local refs = nil
        if type(rule.default) == "table" and type(rule.default.backendRefs) == "table"
          and #rule.default.backendRefs > 0 then
          refs = rule.default.backendRefs
        elseif implicit ~= nil then
          refs = {copy(implicit)}
        end
        local stableRef = nil
        for _, r in ipairs(refs or {}) do
          if stableRef == nil and isStable(r) then stableRef = r end
        end
        if stableRef ~= nil then
          if #rolloutMatches > 0 then table.insert(rules, canaryRule(rule, stableRef)) end
          if useWeight then
            rule.default = rule.default or {}
            rule.default.backendRefs = splitWeights(refs)
          end
        end
        table.insert(rules, rule)
      end
      to.rules = rules
    end
  end
end

return obj.data
