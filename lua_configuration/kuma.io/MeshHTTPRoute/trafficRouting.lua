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
--                                PathPrefix loses its trailing slash (Kuma rejects it). The step's
--                                path narrows the rule's: a path inside the rule's replaces it, a
--                                path outside it leaves that combination out (no canary rule when
--                                none is left), and a regular expression next to a rule path,
--                                or a condition on a header/param the rule tests with another
--                                value, raises an error. Kuma orders rules by specificity, not position
--                                (compare.go), so the script raises an error when the canary rule
--                                would tie with its stable rule or overtake another rule that sorts
--                                before the stable one and may match the same requests.
--   requestHeaderModifier        merged into the RequestHeaderModifier filter of each canary rule.
--   canaryService == stableService (TrafficRouting CR): the canary backendRef is a
--                                MeshServiceSubset of the stable service with CANARY_TAGS;
--                                otherwise it is the canary MeshService (a stable subset's tags are
--                                dropped, they select stable pods).
-- Requests no rule matches go to the to[] target; when that is the stable service (and no rule
-- matches everything already), the step applies to them too: a canary rule per Rollout match (a
-- match without a path gets PathPrefix "/", so it sorts before the weight rule) and, for a
-- weight, a catch-all rule (PathPrefix "/") with the split, appended after the rules.
-- Matches and weight in one step both apply: matching requests go to the canary, the rest is split
-- by weight. A step with neither (canaryWeight -1, no matches) returns the resource unchanged.
-- Errors: requestHeaderModifier beside a weight above 0 (rule filters apply to every backend of
-- the rule, so they cannot target only the canary share, and dropping them would misroute); an
-- added rule that would sort before a rule serving another service and may match its requests.
-- Ignored: empty Rollout matches (no conditions).
-- CANARY_TAGS is the label the canary pods carry (Kuma turns pod labels into tags); it follows
-- the convention of Kruise Rollout's user documentation. Change it to your own convention.

local CANARY_TAGS = { ["istio.service.tag"] = "gray" }

local stable = obj.stableService
local canary = obj.canaryService
local useSubset = canary == stable
local spec = obj.data.spec

local function copy(v)
  if type(v) ~= "table" then return v end
  local out = {}
  for k, x in pairs(v) do
    out[k] = copy(x)
  end
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
  return type(ref) == "table"
    and (ref.kind == "MeshService" or ref.kind == "MeshServiceSubset")
    and stableSuffix(ref.name) ~= nil
end

-- Kuma rejects a PathPrefix with a trailing slash ("does not need a trailing slash because only a
-- `/`-separated prefix or an entire path is matched", kumahq/kuma pkg/plugins/policies/
-- meshhttproute/api/v1alpha1/validation.go), so "/beta/" is written "/beta": the same requests.
local function normalisePath(p)
  if p.type ~= "PathPrefix" or p.value == "/" then return p end
  local value = string.gsub(p.value, "/+$", "")
  if value == "" then value = "/" end
  return { type = p.type, value = value }
end

-- Whether a path value lies inside a segment prefix ("/a/b" and "/a" inside "/a", "/ab" not).
local function insidePrefix(value, prefix)
  if prefix == "/" or value == prefix then return true end
  return string.sub(value, 1, string.len(prefix) + 1) == prefix .. "/"
end

-- The path selecting the requests both a rule's own path and the step's path select: one of
-- them, or false when they select no common request. A regular expression cannot be intersected
-- with another path, so that combination raises an error rather than dropping either condition.
local function intersectPath(base, step)
  if base == nil then return step end
  if step == nil then return base end
  if base.type == "RegularExpression" or step.type == "RegularExpression" then
    error(
      "Kuma cannot combine the step's path "
        .. step.value
        .. " with the rule's path "
        .. base.value
        .. " (a regular expression cannot be intersected with another path); match the rule's own path in the step"
    )
  end
  if base.type == "PathPrefix" and step.type == "PathPrefix" then
    if insidePrefix(step.value, base.value) then return step end
    if insidePrefix(base.value, step.value) then return base end
    return false
  end
  if base.type == "PathPrefix" then return insidePrefix(step.value, base.value) and step end
  if step.type == "PathPrefix" then return insidePrefix(base.value, step.value) and base end
  return base.value == step.value and base
end

-- Kuma orders all rules by their matches (kumahq/kuma pkg/plugins/policies/meshhttproute/api/
-- v1alpha1/compare.go, comparePath): a path before no path, Exact before PathPrefix before
-- RegularExpression, and a longer prefix or expression first. -1: a sorts first, 1: b does.
local PATH_RANK = { Exact = 1, PathPrefix = 2, RegularExpression = 3 }
local function comparePath(a, b)
  if a ~= nil and b == nil then return -1 end
  if a == nil and b ~= nil then return 1 end
  if a == nil and b == nil then return 0 end
  if a.type == b.type then
    if a.type == "Exact" then return 0 end
    local la, lb = string.len(a.value), string.len(b.value)
    if la > lb then
      return -1
    elseif la < lb then
      return 1
    end
    return 0
  end
  if (PATH_RANK[a.type] or 4) < (PATH_RANK[b.type] or 4) then return -1 end
  return 1
end

-- Rollout matches as Kuma match fragments; empty ones are skipped.
local rolloutMatches = {}
for _, m in ipairs(obj.matches or {}) do
  local km = {}
  local any = false
  if m.path ~= nil then
    km.path = normalisePath({ type = m.path.type or "PathPrefix", value = m.path.value or "/" })
    any = true
  end
  for _, h in ipairs(m.headers or {}) do
    km.headers = km.headers or {}
    table.insert(km.headers, { type = h.type or "Exact", name = h.name, value = h.value })
    any = true
  end
  for _, q in ipairs(m.queryParams or {}) do
    km.queryParams = km.queryParams or {}
    table.insert(km.queryParams, { type = q.type or "Exact", name = q.name, value = q.value })
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

-- The rule's match narrowed by a Rollout match, or nil when they select no common request.
local function mergeMatch(base, extra)
  local m = copy(base)
  local add = copy(extra)
  local path = intersectPath(base.path, add.path)
  if path == false then return nil end
  m.path = copy(path)
  for _, field in ipairs({ "headers", "queryParams" }) do
    if add[field] ~= nil then
      m[field] = m[field] or {}
      for _, e in ipairs(add[field]) do
        -- Gateway API (which Kuma follows) reads only the first entry of a name, so a step
        -- condition on a name the rule tests with another value cannot be ANDed.
        for _, have in ipairs(m[field]) do
          if have.name == e.name and (have.type ~= e.type or have.value ~= e.value) then
            error(
              "Kuma cannot AND the step's condition on "
                .. e.name
                .. " with the rule's own condition on it"
            )
          end
        end
        putNamed(m[field], e)
      end
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
    filter = { type = "RequestHeaderModifier" }
    table.insert(conf.filters, filter)
  end
  filter.requestHeaderModifier = filter.requestHeaderModifier or {}
  local mod = filter.requestHeaderModifier
  for _, op in ipairs({ "set", "add" }) do
    for _, h in ipairs(rhm[op] or {}) do
      mod[op] = mod[op] or {}
      putNamed(mod[op], { name = h.name, value = h.value })
    end
  end
  for _, name in ipairs(rhm.remove or {}) do
    mod.remove = mod.remove or {}
    table.insert(mod.remove, name)
  end
end

-- Kuma's order of two whole matches (compare.go CompareMatch): by path, then a method before
-- none, then more headers first, then more query parameters first. -1: a sorts first, 1: b does.
local function compareMatch(a, b)
  local byPath = comparePath(a.path, b.path)
  if byPath ~= 0 then return byPath end
  if (a.method ~= nil) ~= (b.method ~= nil) then return a.method ~= nil and -1 or 1 end
  for _, field in ipairs({ "headers", "queryParams" }) do
    local na, nb = #(a[field] or {}), #(b[field] or {})
    if na ~= nb then return na > nb and -1 or 1 end
  end
  return 0
end

-- Whether two paths may select a common request (a regular expression is assumed to).
local function mayOverlap(a, b)
  if a == nil or b == nil or a.type == "RegularExpression" or b.type == "RegularExpression" then
    return true
  end
  return intersectPath(a, b) ~= false
end

-- Whether two matches may select a common request: their paths may overlap, their methods
-- agree, and no header or query parameter is required Exact with two different values.
local function mayBothMatch(a, b)
  if not mayOverlap(a.path, b.path) then return false end
  if a.method ~= nil and b.method ~= nil and a.method ~= b.method then return false end
  for _, field in ipairs({ "headers", "queryParams" }) do
    for _, x in ipairs(a[field] or {}) do
      for _, y in ipairs(b[field] or {}) do
        if
          x.name == y.name
          and (x.type or "Exact") == "Exact"
          and (y.type or "Exact") == "Exact"
          and x.value ~= y.value
        then
          return false
        end
      end
    end
  end
  return true
end

-- How a match reads in an error: its path and how many headers and query parameters it has.
local function describeMatch(m)
  local text = "path " .. (m.path and m.path.value or "(none)")
  if m.method ~= nil then text = m.method .. " " .. text end
  if #(m.headers or {}) > 0 then text = text .. ", " .. #m.headers .. " header(s)" end
  if #(m.queryParams or {}) > 0 then
    text = text .. ", " .. #m.queryParams .. " query parameter(s)"
  end
  return text
end

-- The canary rule of a stable rule, or nil when the step selects none of its requests. Kuma sorts
-- rules by their matches, not by position, so the canary's matches must sort before the stable
-- rule's and must not overtake another rule that took some of those requests from the stable rule.
local function canaryRule(rule, stableRef, others)
  local c = copy(rule)
  local matches = {}
  local bases = rule.matches
  if type(bases) ~= "table" or #bases == 0 then bases = { {} } end
  for _, base in ipairs(bases) do
    for _, extra in ipairs(rolloutMatches) do
      local m = mergeMatch(base, extra)
      if m ~= nil then
        if compareMatch(m, base) == 0 then
          error(
            "Kuma cannot order the canary rule before the rule with path "
              .. (base.path and base.path.value or "(none)")
              .. ": the step's match adds no condition that makes it more specific (a path inside the rule's, a header or a query parameter)"
          )
        end
        for _, other in ipairs(others) do
          for _, om in ipairs(other.matches or {}) do
            -- A rule sorted before the stable one took some of its requests; a canary match
            -- that sorts before that rule (or ties it) would take them back.
            if compareMatch(om, base) < 0 and compareMatch(m, om) <= 0 and mayBothMatch(m, om) then
              error(
                "the step's match ("
                  .. describeMatch(m)
                  .. ") would overtake another rule's match ("
                  .. describeMatch(om)
                  .. ") in Kuma's rule order, taking requests the stable service never served"
              )
            end
          end
        end
        table.insert(matches, m)
      end
    end
  end
  if #matches == 0 then return nil end
  c.matches = matches
  c.default = c.default or {}
  local r = canaryRef(stableRef)
  r.weight = nil
  c.default.backendRefs = { r }
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
    error(
      "weight " .. tostring(w) .. " exceeds 2^31-1 after scaling the weights for the canary split"
    )
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

local function hasHeaderChanges()
  local rhm = obj.requestHeaderModifier
  return rhm ~= nil and (#(rhm.set or {}) + #(rhm.add or {}) + #(rhm.remove or {})) > 0
end

-- A match on PathPrefix "/" alone: Kuma then never falls back to the to[] target.
local function isCatchAll(m)
  if type(m) ~= "table" or type(m.path) ~= "table" then return false end
  for k in pairs(m) do
    if k ~= "path" then return false end
  end
  return m.path.type == "PathPrefix" and m.path.value == "/"
end

-- Kuma sends requests no rule matches to the to[] target (kuma.io docs, MeshHTTPRoute: "if no
-- rule matches, the request goes to the targetRef"); the model: engine/src/routing/kuma.rs.
-- Rules for those requests, when the target is the stable service: nil when a rule already
-- matches everything. servesStable(rule) tells which existing rules may be overtaken.
local function fallbackRules(rules, implicit, servesStable)
  for _, rule in ipairs(rules) do
    for _, m in ipairs(type(rule.matches) == "table" and rule.matches or {}) do
      if isCatchAll(m) then return {} end
    end
  end
  -- The added match must not sort before (or tie with) a rule of another service that may match
  -- the same requests: it would take them from that service.
  local function checkOrder(m)
    for _, rule in ipairs(rules) do
      if not servesStable(rule) then
        for _, om in ipairs(type(rule.matches) == "table" and rule.matches or {}) do
          if comparePath(m.path, om.path) <= 0 and mayOverlap(m.path, om.path) then
            error(
              "Kuma would order the rule added for requests no rule matches (path "
                .. m.path.value
                .. ") before the rule with path "
                .. (om.path and om.path.value or "(none)")
                .. " of another service, taking its requests"
            )
          end
        end
      end
    end
  end
  local out = {}
  for _, extra in ipairs(rolloutMatches) do
    local m = copy(extra)
    if m.path == nil then m.path = { type = "PathPrefix", value = "/" } end
    checkOrder(m)
    local r = canaryRef(implicit)
    local c = { matches = { m }, default = { backendRefs = { r } } }
    addHeaderFilter(c.default)
    table.insert(out, c)
  end
  if useWeight then
    local m = { path = { type = "PathPrefix", value = "/" } }
    checkOrder(m)
    table.insert(
      out,
      { matches = { m }, default = { backendRefs = splitWeights({ copy(implicit) }) } }
    )
  end
  return out
end

if spec ~= nil and type(spec.to) == "table" and (useWeight or #rolloutMatches > 0) then
  for _, to in ipairs(spec.to) do
    if type(to.rules) == "table" then
      -- A rule without backendRefs goes to the to[] target itself.
      local implicit = nil
      local target = to.targetRef
      if
        type(target) == "table"
        and target.kind == "MeshService"
        and stableSuffix(target.name) ~= nil
      then
        implicit = { kind = "MeshService", name = target.name, namespace = target.namespace }
      end
      local function ruleRefs(rule)
        if
          type(rule.default) == "table"
          and type(rule.default.backendRefs) == "table"
          and #rule.default.backendRefs > 0
        then
          return rule.default.backendRefs
        elseif implicit ~= nil then
          return { copy(implicit) }
        end
        return nil
      end
      local function servesStable(rule)
        for _, r in ipairs(ruleRefs(rule) or {}) do
          if isStable(r) then return true end
        end
        return false
      end
      local extra = {}
      if implicit ~= nil then extra = fallbackRules(to.rules, implicit, servesStable) end
      local rules = {}
      for _, rule in ipairs(to.rules) do
        local refs = ruleRefs(rule)
        local stableRef = nil
        for _, r in ipairs(refs or {}) do
          if stableRef == nil and isStable(r) then stableRef = r end
        end
        if stableRef ~= nil and useWeight and weight > 0 and hasHeaderChanges() then
          error(
            "Kuma cannot change request headers of a weighted canary share (rule filters apply to"
              .. " every backend of the rule): use requestHeaderModifier with matches only"
          )
        end
        if stableRef ~= nil then
          if #rolloutMatches > 0 then
            local others = {}
            for _, o in ipairs(to.rules) do
              if o ~= rule then table.insert(others, o) end
            end
            local c = canaryRule(rule, stableRef, others)
            if c ~= nil then table.insert(rules, c) end
          end
          if useWeight then
            rule.default = rule.default or {}
            rule.default.backendRefs = splitWeights(refs)
          end
        end
        table.insert(rules, rule)
      end
      for _, rule in ipairs(extra) do
        table.insert(rules, rule)
      end
      to.rules = rules
    end
  end
end

return obj.data
