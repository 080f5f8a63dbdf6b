-- Contour HTTPProxy (projectcontour.io/v1): routes canary traffic in spec.routes and spec.tcpproxy.
--
-- Only routes with a (non-mirror) service named after the stable service change.
--
-- Honoured Rollout fields:
--   canaryWeight / stableWeight  each stable service of a route (and of tcpproxy) is split into a
--                                stable part and a canary service right after it. A service alone
--                                in its route counts as 100 whatever its weight; otherwise a
--                                missing weight counts as 0 (Contour gives unweighted services no
--                                traffic once any service has a weight); when no service has a
--                                weight, each gets an explicit even share first. Weights are
--                                relative: a canary part that is not a whole number scales every
--                                weight of the route up first. Weights above 100 are treated as
--                                100; -1 (or any negative) means "no weight".
--   matches                      for every route with a stable service, one canary route per
--                                Rollout match is inserted right before it: a copy of the route
--                                whose conditions are the original ones ANDed with the match's
--                                (Contour cannot OR conditions, hence one route per match).
--                                headers -> header conditions, queryParams -> queryParameter
--                                conditions, path -> the route's path condition, narrowed: a path
--                                inside the route's (a regex starting with its prefix included)
--                                replaces it, a path outside it leaves that match out (no canary
--                                route). Exact (default) -> exact, RegularExpression -> regex,
--                                PathPrefix/Prefix -> prefix. Contour orders routes by path, not
--                                position (exact, regex, then the longest prefix), so a match the
--                                gateway cannot place right before its stable route raises an
--                                error: one that adds nothing to the route's conditions, a path that
--                                would overtake another route or an include that sorts before the
--                                stable route, a regex that cannot be intersected with the route's
--                                path, a condition on a header/parameter the route tests otherwise.
--   requestHeaderModifier        set and remove go to the canary service's requestHeadersPolicy
--                                (weighted or matched), so only canary-bound requests change.
--                                Contour's HeadersPolicy has no "add": add entries are applied as
--                                set unless set names the same header.
-- Matches and weight in one step both apply: matching requests go to the canary, the rest is split
-- by weight. A step with neither (canaryWeight -1, no matches) returns the resource unchanged.
-- Error: canaryService == stableService (TrafficRouting CR) on a proxy that serves that service:
-- Contour routes to Services only and cannot pick canary pods by label. Ignored: spec.includes (delegation to
-- other HTTPProxies, which need their own reference; their paths are taken into account above); mirror services (kept as they are, and
-- copied to canary routes); empty Rollout matches (no conditions).

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

local function isStable(service)
  return type(service) == "table" and service.name == stable and service.mirror ~= true
end

local function headerCondition(h)
  if h.type == nil or h.type == "Exact" then return { name = h.name, exact = h.value } end
  if h.type == "RegularExpression" then return { name = h.name, regex = h.value } end
  if h.type == "Prefix" then return { name = h.name, prefix = h.value } end
  error("unsupported match type: " .. tostring(h.type))
end

local function pathCondition(p)
  local t = p.type or "PathPrefix"
  local value = p.value or "/"
  if t == "PathPrefix" then return { prefix = value } end
  if t == "Exact" then return { exact = value } end
  if t == "RegularExpression" then return { regex = value } end
  error("unsupported path match type: " .. tostring(t))
end

-- Each Rollout match as a list of Contour conditions; empty matches are skipped.
local rolloutConditions = {}
for _, m in ipairs(obj.matches or {}) do
  local conds = {}
  if m.path ~= nil then table.insert(conds, pathCondition(m.path)) end
  for _, h in ipairs(m.headers or {}) do
    local hc = headerCondition(h)
    if hc.prefix ~= nil then error("Contour header conditions have no prefix match") end
    table.insert(conds, { header = hc })
  end
  for _, q in ipairs(m.queryParams or {}) do
    table.insert(conds, { queryParameter = headerCondition(q) })
  end
  if #conds > 0 then table.insert(rolloutConditions, conds) end
end

local weight = obj.canaryWeight
if weight ~= nil and weight > 100 then weight = 100 end
local useWeight = weight ~= nil and weight >= 0

local function isPath(c)
  return c.prefix ~= nil or c.exact ~= nil or c.regex ~= nil
end

local function pathOf(c)
  for _, kind in ipairs({ "exact", "regex", "prefix" }) do
    if c[kind] ~= nil then return kind, c[kind] end
  end
  return nil
end

-- A route's path condition as kind, value; no path condition means prefix "/".
local function routePath(conds)
  for _, c in ipairs(conds or {}) do
    if isPath(c) then return pathOf(c) end
  end
  return "prefix", "/"
end

local function startsWith(s, p)
  return string.sub(s, 1, string.len(p)) == p
end

-- Envoy matches a path regex against the whole path (safe_regex, RE2 full match), so a regex
-- that starts with the prefix as literal characters, not followed by a quantifier, and has no
-- alternation only matches paths under that prefix.
local function regexWithinPrefix(re, prefix)
  if string.find(re, "|", 1, true) ~= nil then return false end
  local head = string.sub(re, 1, string.len(prefix))
  if head ~= prefix or string.find(head, "[%^%$%(%)%.%[%]%*%+%?%{%}\\]") ~= nil then
    return false
  end
  local after = string.sub(re, string.len(prefix) + 1, string.len(prefix) + 1)
  return after ~= "*" and after ~= "?" and after ~= "{" and after ~= "+"
end

-- The path selecting the requests both the route's path and the step's select (HTTPProxy
-- prefixes are plain string prefixes, PrefixMatchString in projectcontour/contour
-- internal/dag/dag.go), as kind, value; false when they select no common request. A regex
-- inside the route's prefix narrows it; any other regex combination cannot be written and raises
-- an error.
local function intersectPath(bk, bv, sk, sv)
  if bk == "prefix" and bv == "/" then return sk, sv end
  if sk == "prefix" and sv == "/" then return bk, bv end
  if bk == "prefix" and sk == "regex" and regexWithinPrefix(sv, bv) then return sk, sv end
  if bk == "regex" or sk == "regex" then
    error(
      "Contour cannot combine the step's path "
        .. sv
        .. " with the route's path "
        .. bv
        .. " (a regex cannot be intersected with another path); match the route's own path in the step"
    )
  end
  if bk == "prefix" and sk == "prefix" then
    if startsWith(sv, bv) then return sk, sv end
    if startsWith(bv, sv) then return bk, bv end
    return false
  end
  if bk == "prefix" then
    if startsWith(sv, bv) then return sk, sv end
    return false
  end
  if sk == "prefix" then
    if startsWith(bv, sv) then return bk, bv end
    return false
  end
  if bv == sv then return bk, bv end
  return false
end

-- Contour orders a proxy's routes by path, not by position (projectcontour/contour
-- internal/sorter/sorter.go, routeSorter.Less): exact, then regex, then prefix, a longer regex or
-- prefix first. -1: a sorts first, 1: b does, 0: the path does not decide.
local PATH_RANK = { exact = 1, regex = 2, prefix = 3 }
local function comparePath(ak, av, bk, bv)
  if ak ~= bk then
    if PATH_RANK[ak] < PATH_RANK[bk] then return -1 end
    return 1
  end
  if ak == "exact" then return 0 end
  if string.len(av) > string.len(bv) then return -1 end
  if string.len(av) < string.len(bv) then return 1 end
  return 0
end

-- Whether two paths may select a common request (a regex is assumed to).
local function mayOverlap(ak, av, bk, bv)
  if ak == "regex" or bk == "regex" then return true end
  if ak == "prefix" and bk == "prefix" then return startsWith(av, bv) or startsWith(bv, av) end
  if ak == "prefix" then return startsWith(bv, av) end
  if bk == "prefix" then return startsWith(av, bv) end
  return av == bv
end

local function sameCondition(a, b)
  local ka, va = pathOf(a)
  local kb, vb = pathOf(b)
  return ka == kb and va == vb
end

-- Appends a step condition to a route's (AND). The path was intersected already; a header or
-- parameter the route tests with another value cannot be ANDed (Contour rejects duplicate
-- conditions on one name), so it raises an error rather than dropping the route's condition.
local function putCondition(conds, c)
  for _, old in ipairs(conds) do
    local oldEntry = old.header or old.queryParameter
    local newEntry = c.header or c.queryParameter
    if
      oldEntry ~= nil
      and newEntry ~= nil
      and (old.header ~= nil) == (c.header ~= nil)
      and string.lower(oldEntry.name) == string.lower(newEntry.name)
    then
      if sameCondition(oldEntry, newEntry) then return end
      error(
        "Contour cannot AND the step's condition on "
          .. newEntry.name
          .. " with the route's own condition on it"
      )
    end
  end
  table.insert(conds, c)
end

local function addHeadersPolicy(service)
  local rhm = obj.requestHeaderModifier
  if rhm == nil then return end
  local function policy()
    service.requestHeadersPolicy = service.requestHeadersPolicy or {}
    return service.requestHeadersPolicy
  end
  local function put(name, value, overwrite)
    local p = policy()
    p.set = p.set or {}
    for _, e in ipairs(p.set) do
      if string.lower(e.name) == string.lower(name) then
        if overwrite then e.value = value end
        return
      end
    end
    table.insert(p.set, { name = name, value = value })
  end
  local setNames = {}
  for _, h in ipairs(rhm.set or {}) do
    put(h.name, h.value, true)
    setNames[string.lower(h.name)] = true
  end
  for _, h in ipairs(rhm.add or {}) do
    if not setNames[string.lower(h.name)] then put(h.name, h.value, true) end
  end
  for _, name in ipairs(rhm.remove or {}) do
    local p = policy()
    p.remove = p.remove or {}
    table.insert(p.remove, name)
  end
end

local function canaryService(stableService, withHeaders)
  local s = copy(stableService)
  s.name = canary
  if withHeaders then addHeadersPolicy(s) end
  return s
end

-- The canary route of a stable route for one Rollout match, or nil when the match selects none
-- of the route's requests. Contour sorts routes by path (comparePath), so the canary route must
-- sort before its stable route without overtaking a route or include that took some of those
-- requests from it; combinations where it would are errors.
local function canaryRoute(route, stableService, conds, others)
  local c = copy(route)
  local bk, bv = routePath(route.conditions)
  local sk, sv = bk, bv
  local rest = {}
  for _, cond in ipairs(conds) do
    if isPath(cond) then
      sk, sv = pathOf(cond)
    else
      table.insert(rest, cond)
    end
  end
  local ck, cv = intersectPath(bk, bv, sk, sv)
  if ck == false then return nil end
  c.conditions = {}
  local pathSet = false
  for _, cond in ipairs(route.conditions or {}) do
    if isPath(cond) then
      c.conditions[#c.conditions + 1] = { [ck] = cv }
      pathSet = true
    else
      table.insert(c.conditions, copy(cond))
    end
  end
  if not pathSet and not (ck == "prefix" and cv == "/") then
    table.insert(c.conditions, 1, { [ck] = cv })
  end
  for _, cond in ipairs(rest) do
    putCondition(c.conditions, copy(cond))
  end
  if comparePath(ck, cv, bk, bv) == 0 and #rest == 0 then
    error(
      "the step's match adds no condition to the route with path "
        .. bv
        .. ", so Contour could not order the canary route before it"
    )
  end
  for _, o in ipairs(others) do
    local overtakes
    if o.include then
      -- Every route of an included proxy has a path at least as long as the include's prefix,
      -- so only a shorter canary prefix is sure to sort after them all.
      overtakes = not (ck == "prefix" and string.len(cv) < string.len(o.value))
    else
      overtakes = comparePath(o.kind, o.value, bk, bv) < 0
        and comparePath(ck, cv, o.kind, o.value) <= 0
    end
    if overtakes and mayOverlap(ck, cv, o.kind, o.value) then
      error(
        "the step's path "
          .. cv
          .. " would overtake the "
          .. (o.include and "include" or "route")
          .. " with path "
          .. o.value
          .. " in Contour's route order, taking requests the stable service never served"
      )
    end
  end
  local s = canaryService(stableService, true)
  s.weight = nil
  local services = { s }
  for _, other in ipairs(route.services) do
    if other.mirror == true then table.insert(services, copy(other)) end
  end
  c.services = services
  return c
end

local function splitWeights(services, withHeaders)
  local out = {}
  local active, weighted = 0, false
  for _, s in ipairs(services) do
    if s.mirror ~= true then
      active = active + 1
      if s.weight ~= nil then weighted = true end
    end
  end
  -- Without any weight Contour splits evenly; make that explicit before adding weighted services.
  if not weighted and active > 1 then
    for _, s in ipairs(services) do
      if s.mirror ~= true then s.weight = math.floor(100 / active) end
    end
  end
  -- "Weights are relative and do not need to add up to 100" (projectcontour/contour
  -- site/content/docs/main/config/request-routing.md), so when a stable weight's canary part is
  -- not a whole number every weight is multiplied by the smallest factor (at most 100) that
  -- makes it one.
  local function base(s)
    if active == 1 then return 100 end
    return s.weight or 0
  end
  local k = 1
  while k < 100 do
    local exact = true
    for _, s in ipairs(services) do
      if isStable(s) and (base(s) * k * weight) % 100 ~= 0 then exact = false end
    end
    if exact then break end
    k = k + 1
  end
  for _, s in ipairs(services) do
    table.insert(out, s)
    if not isStable(s) and s.mirror ~= true and s.weight ~= nil and k > 1 then
      s.weight = s.weight * k
    end
    if isStable(s) then
      local total = base(s) * k
      local canaryPart = math.floor(total * weight / 100)
      local c = canaryService(s, withHeaders)
      s.weight = total - canaryPart
      c.weight = canaryPart
      table.insert(out, c)
    end
  end
  return out
end

local function firstStable(services)
  for _, s in ipairs(services) do
    if isStable(s) then return s end
  end
  return nil
end

-- The paths other than the route's own that compete with it: the proxy's other routes, and its
-- includes (the included proxy's routes sit under the include's path).
local function others(route)
  local out = {}
  for _, r in ipairs(spec.routes or {}) do
    if r ~= route then
      local k, v = routePath(r.conditions)
      table.insert(out, { kind = k, value = v })
    end
  end
  for _, inc in ipairs(spec.includes or {}) do
    local k, v = routePath(inc.conditions)
    table.insert(out, { kind = k, value = v, include = true })
  end
  return out
end

local function servesStable()
  if type(spec) ~= "table" then return false end
  for _, route in ipairs(type(spec.routes) == "table" and spec.routes or {}) do
    if firstStable(type(route.services) == "table" and route.services or {}) ~= nil then
      return true
    end
  end
  local tcp = spec.tcpproxy
  return type(tcp) == "table" and type(tcp.services) == "table" and firstStable(tcp.services) ~= nil
end

if canary == stable and (useWeight or #rolloutConditions > 0) and servesStable() then
  error(
    "Contour routes to Services only and cannot select canary pods by label:"
      .. " canaryService == stableService (TrafficRouting CR) is not supported"
  )
end

if spec ~= nil and canary ~= stable and (useWeight or #rolloutConditions > 0) then
  if type(spec.routes) == "table" then
    local routes = {}
    for _, route in ipairs(spec.routes) do
      local services = type(route.services) == "table" and route.services or {}
      local stableService = firstStable(services)
      if stableService ~= nil then
        for _, conds in ipairs(rolloutConditions) do
          local c = canaryRoute(route, stableService, conds, others(route))
          if c ~= nil then table.insert(routes, c) end
        end
        if useWeight then route.services = splitWeights(services, true) end
      end
      table.insert(routes, route)
    end
    spec.routes = routes
  end
  local tcp = spec.tcpproxy
  if
    useWeight
    and type(tcp) == "table"
    and type(tcp.services) == "table"
    and firstStable(tcp.services) ~= nil
  then
    tcp.services = splitWeights(tcp.services, false) -- TCP has no HTTP headers
  end
end

return obj.data
