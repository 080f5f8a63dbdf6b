-- Traefik IngressRoute (traefik.io/v1alpha1): routes canary traffic in spec.routes.
--
-- Only routes with a Kubernetes Service (kind Service or no kind) named after the stable service
-- change; services of kind TraefikService are left to the TraefikService script.
--
-- Honoured Rollout fields:
--   canaryWeight / stableWeight  each stable service of a route is split into a stable part and a
--                                canary service right after it. A service alone in its route counts
--                                as 100 whatever its weight; otherwise a missing weight counts as 1
--                                (Traefik's default). Weights are relative, so when a stable
--                                weight's canary part is not a whole number (1 at 20 %), every
--                                weight of the list is multiplied by the smallest factor that makes
--                                it one. Weights above 100 are treated as 100; -1 (or any negative)
--                                means "no weight".
--   matches                      for every route with a stable service, one canary route is
--                                inserted right before it, with the rule
--                                "(<original rule>) && (<match>)", several matches joined with ||,
--                                so it only sees requests its stable route would have seen.
--                                Matchers follow the route's `syntax`: v3 (default) Header/
--                                HeaderRegexp, Path/PathPrefix/PathRegexp, Query/QueryRegexp; v2
--                                Headers/HeadersRegexp, Path/PathPrefix, Query(`name=value`), where a
--                                regex path or query cannot be written and raises an error. Exact
--                                is the default type, PathPrefix "/" the default path. Priority:
--                                the canary route gets its stable route's priority plus one (the
--                                stable's own, or its default: the rule's length), so it is tried
--                                right before it and never outranks a route the stable route lost
--                                to. The static option core.defaultRuleSyntax is not visible to a
--                                script: a route without `syntax` is written in v3.
-- Matches and weight in one step both apply: matching requests go to the canary, the rest is split
-- by weight. A step with neither (canaryWeight -1, no matches) returns the resource unchanged.
-- Errors (when a route serves the stable service; dropping them silently would misroute):
-- requestHeaderModifier (Traefik changes headers through Middleware resources, which a script
-- cannot create); canaryService == stableService (TrafficRouting CR: Traefik routes to Services
-- and cannot select canary pods by label). Ignored: empty Rollout matches (no conditions).

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
  return type(service) == "table"
    and service.name == stable
    and (service.kind == nil or service.kind == "Service")
end

-- A rule argument: a backtick literal, or a Go-quoted string when the value holds a backtick.
local function quote(s)
  if string.find(s, "`") == nil then return "`" .. s .. "`" end
  return '"' .. string.gsub(string.gsub(s, "\\", "\\\\"), '"', '\\"') .. '"'
end

local function checkType(what, matchType, allowed)
  for _, t in ipairs(allowed) do
    if matchType == t then return end
  end
  error("unsupported " .. what .. " match type: " .. tostring(matchType))
end

-- Traefik's *Regexp matchers search the value (Go `regexp.MatchString`, unanchored:
-- traefik/traefik pkg/muxer/http/matcher.go), while a Rollout's RegularExpression matches the
-- whole value (Envoy's full match, as Kruise's Istio provider gets): anchor the pattern.
local function anchored(pattern)
  -- Already anchored at both ends: kept as written.
  if string.sub(pattern, 1, 1) == "^" and string.sub(pattern, -1) == "$" then return pattern end
  return "^(?:" .. pattern .. ")$"
end

-- One Rollout match as a v3 rule expression (traefik/traefik pkg/muxer/http/matcher.go:
-- Header, HeaderRegexp, Query, QueryRegexp, Path, PathPrefix, PathRegexp).
local function expressionV3(m)
  local parts = {}
  if m.path ~= nil then
    local t = m.path.type or "PathPrefix"
    checkType("path", t, { "PathPrefix", "Exact", "RegularExpression" })
    local name = ({ PathPrefix = "PathPrefix", Exact = "Path", RegularExpression = "PathRegexp" })[t]
    local value = m.path.value or "/"
    if t == "RegularExpression" then value = anchored(value) end
    table.insert(parts, name .. "(" .. quote(value) .. ")")
  end
  for _, h in ipairs(m.headers or {}) do
    local t = h.type or "Exact"
    checkType("header", t, { "Exact", "RegularExpression" })
    local name = t == "Exact" and "Header" or "HeaderRegexp"
    local value = t == "Exact" and h.value or anchored(h.value)
    table.insert(parts, name .. "(" .. quote(h.name) .. ", " .. quote(value) .. ")")
  end
  for _, q in ipairs(m.queryParams or {}) do
    local t = q.type or "Exact"
    checkType("query", t, { "Exact", "RegularExpression" })
    local name = t == "Exact" and "Query" or "QueryRegexp"
    local value = t == "Exact" and q.value or anchored(q.value)
    table.insert(parts, name .. "(" .. quote(q.name) .. ", " .. quote(value) .. ")")
  end
  return parts
end

-- v2 paths and queries go through gorilla/mux templates, where "{" opens a variable.
local function literalV2(what, value)
  if string.find(value, "[{}]") ~= nil then
    error("a " .. what .. " with { or } cannot be written literally in a syntax: v2 rule")
  end
  return value
end

-- One Rollout match as a v2 rule expression (traefik/traefik pkg/muxer/http/matcher_v2.go:
-- Headers, HeadersRegexp, Query(`name=value`), Path, PathPrefix; v2 has no path or query regex
-- matcher of its own, so those raise an error).
local function expressionV2(m)
  local parts = {}
  if m.path ~= nil then
    local t = m.path.type or "PathPrefix"
    checkType("path", t, { "PathPrefix", "Exact", "RegularExpression" })
    if t == "RegularExpression" then
      error("a regular-expression path cannot be matched in a syntax: v2 rule; use syntax v3")
    end
    local name = t == "Exact" and "Path" or "PathPrefix"
    table.insert(parts, name .. "(" .. quote(literalV2("path", m.path.value or "/")) .. ")")
  end
  for _, h in ipairs(m.headers or {}) do
    local t = h.type or "Exact"
    checkType("header", t, { "Exact", "RegularExpression" })
    local name = t == "Exact" and "Headers" or "HeadersRegexp"
    local value = t == "Exact" and h.value or anchored(h.value)
    table.insert(parts, name .. "(" .. quote(h.name) .. ", " .. quote(value) .. ")")
  end
  for _, q in ipairs(m.queryParams or {}) do
    local t = q.type or "Exact"
    checkType("query", t, { "Exact" })
    table.insert(
      parts,
      "Query(" .. quote(literalV2("query parameter", q.name .. "=" .. q.value)) .. ")"
    )
  end
  return parts
end

-- The step's matches as one expression in a route's syntax ("v2" or v3, the default); nil when
-- the step has no (non-empty) match.
local function canaryExpression(syntax)
  local alternatives = {}
  for _, m in ipairs(obj.matches or {}) do
    local parts
    if syntax == "v2" then
      parts = expressionV2(m)
    else
      parts = expressionV3(m)
    end
    if #parts > 0 then table.insert(alternatives, table.concat(parts, " && ")) end
  end
  if #alternatives == 0 then return nil end
  if #alternatives == 1 then return alternatives[1] end
  return "(" .. table.concat(alternatives, ") || (") .. ")"
end

local hasMatches = canaryExpression(nil) ~= nil

local weight = obj.canaryWeight
if weight ~= nil and weight > 100 then weight = 100 end
local useWeight = weight ~= nil and weight >= 0

local function canaryService(stableService)
  local s = copy(stableService)
  s.name = canary
  return s
end

-- A router's priority: its own, or by default the length of its rule (traefik/traefik
-- pkg/muxer/http/mux.go, GetRulePriority); the highest priority among matching routers wins.
local function effectivePriority(route)
  if type(route.priority) == "number" and route.priority ~= 0 then return route.priority end
  if type(route.match) == "string" then return string.len(route.match) end
  return 0
end

local function canaryRoute(route, stableService)
  local c = copy(route)
  local expr = canaryExpression(route.syntax)
  if type(route.match) == "string" and route.match ~= "" then
    c.match = "(" .. route.match .. ") && (" .. expr .. ")"
  else
    c.match = expr
  end
  -- The canary router must be tried right before its stable router and after every router that
  -- outranked it. Left to the default, the longer canary rule would outrank unrelated routes.
  -- (Routers of equal priority are tried in no defined order, mux.go routes.Less: a router that
  -- has exactly the canary's priority and overlaps the stable route's requests would tie.)
  c.priority = effectivePriority(route) + 1
  local s = canaryService(stableService)
  s.weight = nil
  c.services = { s }
  return c
end

-- The smallest k (at most 100) such that every stable weight times k times the canary weight is
-- a multiple of 100. Weights are relative (traefik/traefik pkg/config/dynamic/http_config.go: a WRRService weighs 1 by default), so multiplying every weight of a list by
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

local function splitWeights(services)
  local out = {}
  local alone = #services == 1
  local function base(x)
    if alone then return 100 end
    return x.weight or 1
  end
  local stableWeights = {}
  for _, x in ipairs(services) do
    if isStable(x) then table.insert(stableWeights, base(x)) end
  end
  local k = weightScale(stableWeights)
  for _, s in ipairs(services) do
    table.insert(out, s)
    if isStable(s) then
      local total = base(s) * k
      local canaryPart = total * weight / 100
      local c = canaryService(s)
      s.weight = scaled(total - canaryPart)
      c.weight = canaryPart
      table.insert(out, c)
    elseif k > 1 then
      s.weight = scaled((s.weight or 1) * k)
    end
  end
  return out
end

local function servesStable()
  for _, route in
    ipairs(type(spec) == "table" and type(spec.routes) == "table" and spec.routes or {})
  do
    for _, s in ipairs(type(route.services) == "table" and route.services or {}) do
      if isStable(s) then return true end
    end
  end
  return false
end

if servesStable() and (useWeight or hasMatches) then
  if canary == stable then
    error(
      "Traefik routes to Services only and cannot select canary pods by label:"
        .. " canaryService == stableService (TrafficRouting CR) is not supported"
    )
  end
  if obj.requestHeaderModifier ~= nil then
    error(
      "an IngressRoute changes request headers only through a Middleware, which a script"
        .. " cannot create: requestHeaderModifier is not supported"
    )
  end
end

if
  spec ~= nil
  and type(spec.routes) == "table"
  and canary ~= stable
  and (useWeight or hasMatches)
then
  local routes = {}
  for _, route in ipairs(spec.routes) do
    local services = type(route.services) == "table" and route.services or {}
    local stableService = nil
    for _, s in ipairs(services) do
      if stableService == nil and isStable(s) then stableService = s end
    end
    if stableService ~= nil then
      if hasMatches then table.insert(routes, canaryRoute(route, stableService)) end
      if useWeight then route.services = splitWeights(services) end
    end
    table.insert(routes, route)
  end
  spec.routes = routes
end

return obj.data
