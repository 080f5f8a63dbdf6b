-- Traefik IngressRoute (traefik.io/v1alpha1): routes canary traffic in spec.routes.
--
-- Only routes with a Kubernetes Service (kind Service or no kind) named after the stable service
-- change; services of kind TraefikService are left to the TraefikService script.
--
-- Honoured Rollout fields:
--   canaryWeight / stableWeight  each stable service of a route is split into a stable part and a
--                                canary service right after it. A service alone in its route counts
--                                as 100 whatever its weight; otherwise a missing weight counts as 1
--                                (Traefik's default).
--                                Weights are relative, so when a stable weight's canary part is
--                                not a whole number (1 at 20 %), every weight of the list is
--                                multiplied by the smallest factor that makes it one.
--                                Weights above 100 are treated as 100; -1 (or
--                                any negative) means "no weight".
--   matches                      for every route with a stable service, one canary route is
--                                inserted right before it, with the rule
--                                "(<original rule>) && (<match>)", several matches joined with ||.
--                                Traefik v3 rule syntax: headers -> Header/HeaderRegexp, path ->
--                                Path/PathPrefix/PathRegexp, queryParams -> Query/QueryRegexp;
--                                Exact is the default type, PathPrefix "/" the default path. The
--                                canary rule is longer, so Traefik's default priority (rule length)
--                                puts it first; an explicit priority is raised by one.
-- Matches and weight in one step both apply: matching requests go to the canary, the rest is split
-- by weight. A step with neither (canaryWeight -1, no matches) returns the resource unchanged.
-- Ignored: requestHeaderModifier (Traefik changes headers through Middleware resources, which a
-- script cannot create); canaryService == stableService (TrafficRouting CR): Traefik routes to
-- Services and cannot select canary pods by label, so the resource is unchanged; empty Rollout
-- matches (no conditions).

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
  return type(service) == "table" and service.name == stable
    and (service.kind == nil or service.kind == "Service")
end

-- A rule argument: a backtick literal, or a Go-quoted string when the value holds a backtick.
local function quote(s)
  if string.find(s, "`") == nil then return "`" .. s .. "`" end
  return '"' .. string.gsub(string.gsub(s, "\\", "\\\\"), '"', '\\"') .. '"'
end

local function matcher(plain, regexp, what, matchType, ...)
  local args = {}
  for _, a in ipairs({...}) do table.insert(args, quote(a)) end
  local name
  if matchType == nil or matchType == "Exact" then
    name = plain
  elseif matchType == "RegularExpression" then
    name = regexp
  else
    error("unsupported " .. what .. " match type: " .. tostring(matchType))
  end
  return name .. "(" .. table.concat(args, ", ") .. ")"
end

local function pathMatcher(p)
  local t = p.type or "PathPrefix"
  local value = p.value or "/"
  if t == "PathPrefix" then return "PathPrefix(" .. quote(value) .. ")" end
  return matcher("Path", "PathRegexp", "path", t, value)
end

-- Each Rollout match as one Traefik expression; empty matches are skipped.
local alternatives = {}
for _, m in ipairs(obj.matches or {}) do
  local parts = {}
  if m.path ~= nil then table.insert(parts, pathMatcher(m.path)) end
  for _, h in ipairs(m.headers or {}) do
    table.insert(parts, matcher("Header", "HeaderRegexp", "header", h.type, h.name, h.value))
  end
  for _, q in ipairs(m.queryParams or {}) do
    table.insert(parts, matcher("Query", "QueryRegexp", "query", q.type, q.name, q.value))
  end
  if #parts > 0 then table.insert(alternatives, table.concat(parts, " && ")) end
end

local canaryExpr = nil
if #alternatives == 1 then
  canaryExpr = alternatives[1]
elseif #alternatives > 1 then
  canaryExpr = "(" .. table.concat(alternatives, ") || (") .. ")"
end

local weight = obj.canaryWeight
if weight ~= nil and weight > 100 then weight = 100 end
local useWeight = weight ~= nil and weight >= 0

local function canaryService(stableService)
  local s = copy(stableService)
  s.name = canary
  return s
end

local function canaryRoute(route, stableService)
  local c = copy(route)
  if type(route.match) == "string" and route.match ~= "" then
    c.match = "(" .. route.match .. ") && (" .. canaryExpr .. ")"
  else
    c.match = canaryExpr
  end
  if type(route.priority) == "number" then c.priority = route.priority + 1 end
  local s = canaryService(stableService)
  s.weight = nil
  c.services = {s}
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
    error("weight " .. tostring(w) .. " exceeds 2^31-1 after scaling the weights for the canary split")
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

if spec ~= nil and type(spec.routes) == "table" and canary ~= stable
  and (useWeight or canaryExpr ~= nil) then
  local routes = {}
  for _, route in ipairs(spec.routes) do
    local services = type(route.services) == "table" and route.services or {}
    local stableService = nil
    for _, s in ipairs(services) do
      if stableService == nil and isStable(s) then stableService = s end
    end
    if stableService ~= nil then
      if canaryExpr ~= nil then table.insert(routes, canaryRoute(route, stableService)) end
      if useWeight then route.services = splitWeights(services) end
    end
    table.insert(routes, route)
  end
  spec.routes = routes
end

return obj.data
