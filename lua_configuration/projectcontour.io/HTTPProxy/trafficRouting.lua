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
--                                weight, each gets an explicit even share first. Weights above 100 are
--                                treated as 100; -1 (or any negative) means "no weight".
--   matches                      for every route with a stable service, one canary route per
--                                Rollout match is inserted right before it: a copy of the route
--                                whose conditions are the original ones ANDed with the match's
--                                (Contour cannot OR conditions, hence one route per match).
--                                headers -> header conditions, queryParams -> queryParameter
--                                conditions, path -> the route's single path condition (it
--                                replaces the original prefix/exact/regex). Exact (default) ->
--                                exact, RegularExpression -> regex, PathPrefix/Prefix -> prefix.
--                                A Rollout condition on a header/parameter the route already
--                                tests replaces that condition.
--   requestHeaderModifier        set and remove go to the canary service's requestHeadersPolicy
--                                (weighted or matched), so only canary-bound requests change.
--                                Contour's HeadersPolicy has no "add": add entries are applied as
--                                set unless set names the same header.
-- Matches and weight in one step both apply: matching requests go to the canary, the rest is split
-- by weight. A step with neither (canaryWeight -1, no matches) returns the resource unchanged.
-- Ignored: canaryService == stableService (TrafficRouting CR): Contour routes to Services only and
-- cannot pick canary pods by label, so the proxy is left unchanged; spec.includes (delegation to
-- other HTTPProxies, which need their own reference); mirror services (kept as they are, and
-- copied to canary routes); empty Rollout matches (no conditions).

local stable = obj.stableService
local canary = obj.canaryService
local spec = obj.data.spec

local function copy(v)
  if type(v) ~= "table" then return v end
  local out = {}
  for k, x in pairs(v) do out[k] = copy(x) end
  return out
end

local function isStable(service)
  return type(service) == "table" and service.name == stable and service.mirror ~= true
end

local function headerCondition(h)
  if h.type == nil or h.type == "Exact" then return {name = h.name, exact = h.value} end
  if h.type == "RegularExpression" then return {name = h.name, regex = h.value} end
  if h.type == "Prefix" then return {name = h.name, prefix = h.value} end
  error("unsupported match type: " .. tostring(h.type))
end

local function pathCondition(p)
  local t = p.type or "PathPrefix"
  local value = p.value or "/"
  if t == "PathPrefix" then return {prefix = value} end
  if t == "Exact" then return {exact = value} end
  if t == "RegularExpression" then return {regex = value} end
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
    table.insert(conds, {header = hc})
  end
  for _, q in ipairs(m.queryParams or {}) do table.insert(conds, {queryParameter = headerCondition(q)}) end
  if #conds > 0 then table.insert(rolloutConditions, conds) end
end

local weight = obj.canaryWeight
if weight ~= nil and weight > 100 then weight = 100 end
local useWeight = weight ~= nil and weight >= 0

local function isPath(c)
  return c.prefix ~= nil or c.exact ~= nil or c.regex ~= nil
end

-- Appends a condition, replacing a conflicting one (same path slot, header or parameter name).
local function putCondition(conds, c)
  for i, old in ipairs(conds) do
    local same = (isPath(c) and isPath(old))
      or (c.header ~= nil and old.header ~= nil and string.lower(c.header.name) == string.lower(old.header.name))
      or (c.queryParameter ~= nil and old.queryParameter ~= nil
        and string.lower(c.queryParameter.name) == string.lower(old.queryParameter.name))
    if same then
      conds[i] = c
      return
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
    table.insert(p.set, {name = name, value = value})
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

local function canaryRoute(route, stableService, conds)
  local c = copy(route)
  c.conditions = c.conditions or {}
  for _, cond in ipairs(conds) do putCondition(c.conditions, copy(cond)) end
  local s = canaryService(stableService, true)
  s.weight = nil
  local services = {s}
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
  for _, s in ipairs(services) do
    table.insert(out, s)
    if isStable(s) then
      local total = s.weight or 0
      if active == 1 then total = 100 end
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

if spec ~= nil and canary ~= stable and (useWeight or #rolloutConditions > 0) then
  if type(spec.routes) == "table" then
    local routes = {}
    for _, route in ipairs(spec.routes) do
      local services = type(route.services) == "table" and route.services or {}
      local stableService = firstStable(services)
      if stableService ~= nil then
        for _, conds in ipairs(rolloutConditions) do
          table.insert(routes, canaryRoute(route, stableService, conds))
        end
        if useWeight then route.services = splitWeights(services, true) end
      end
      table.insert(routes, route)
    end
    spec.routes = routes
  end
  local tcp = spec.tcpproxy
  if useWeight and type(tcp) == "table" and type(tcp.services) == "table" and firstStable(tcp.services) ~= nil then
    tcp.services = splitWeights(tcp.services, false) -- TCP has no HTTP headers
  end
end

return obj.data
