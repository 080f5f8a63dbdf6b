-- Istio VirtualService (networking.istio.io): routes canary traffic in spec.http, spec.tcp and spec.tls.
--
-- Only routes with a destination whose host is the stable service change. A host matches when it
-- is the stable name itself or starts with "<stable>." (e.g. "web.default.svc.cluster.local");
-- the canary host keeps that suffix ("web-canary.default.svc.cluster.local").
--
-- Honoured Rollout fields:
--   canaryWeight / stableWeight  each stable destination of an http/tcp/tls route is split into a
--                                stable part and a canary part right after it. A destination
--                                alone in its route counts as 100 (Istio sends it all traffic,
--                                whatever its weight); otherwise a missing weight counts as 0.
--                                Weights are relative, so when a stable weight's canary part is
--                                not a whole number (weight 1 at 50 %), every weight of the route
--                                is multiplied by the smallest factor that makes it one: the canary
--                                gets exactly its share and the other destinations keep theirs.
--                                Weights above 100 are treated as 100; -1 (or any negative) means
--                                "no weight"; 0 adds the canary destination with weight 0.
--   matches                      for every http route with a stable destination, a canary route
--                                is inserted right before it (Istio takes the first route that
--                                matches). Its `match` list is every original match of the route
--                                combined (AND) with every Rollout match (OR): headers ->
--                                match.headers (names lower-cased, as Istio requires), path ->
--                                match.uri, queryParams -> match.queryParams. Types: Exact
--                                (default) -> exact, RegularExpression -> regex, Prefix/PathPrefix
--                                -> prefix; path without value means prefix "/". The step's path
--                                narrows the route's uri: a path inside it replaces it, a path
--                                outside it leaves that combination out (no canary route when none
--                                is left, so other routes keep their requests); a regex next to a
--                                route uri, or a step condition on a header/param the route already
--                                tests differently, cannot be ANDed and raises an error.
--   requestHeaderModifier        set/add/remove go to `headers.request` of each canary destination
--                                (weighted or matched), so only canary-bound requests change.
--   canaryService == stableService (TrafficRouting CR): the canary destination keeps the stable
--                                host and uses `subset: canary` (see the DestinationRule script,
--                                which adds that subset); otherwise the canary destination uses
--                                the canary host and drops any subset, which belongs to the stable
--                                host's DestinationRule. (A stable destination without a subset
--                                still reaches the canary pods too; give it one for exact splits.)
-- Matches and weight in one step both apply: matching requests go to the canary, the rest is split
-- by weight. A step with neither (canaryWeight -1, no matches) returns the resource unchanged.
-- Ignored: tcp/tls routes get weights only (L4 routes cannot match headers, paths or queries);
-- http routes without `route` (redirect, delegate, directResponse) are left alone; an empty
-- Rollout match (no conditions) is skipped instead of turning into a catch-all.

local CANARY_SUBSET = "canary"

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

-- Returns the suffix after the stable service name ("" or ".ns.svc...") or nil for other hosts.
local function stableSuffix(host)
  if type(host) ~= "string" then return nil end
  if host == stable then return "" end
  local prefix = stable .. "."
  if string.sub(host, 1, string.len(prefix)) == prefix then
    return string.sub(host, string.len(stable) + 1)
  end
  return nil
end

local function isStable(routeDest)
  return type(routeDest) == "table"
    and type(routeDest.destination) == "table"
    and stableSuffix(routeDest.destination.host) ~= nil
end

local function stringMatch(what, matchType, value)
  if matchType == nil or matchType == "Exact" then return { exact = value } end
  if matchType == "RegularExpression" then return { regex = value } end
  if matchType == "Prefix" or matchType == "PathPrefix" then return { prefix = value } end
  error("unsupported " .. what .. " match type: " .. tostring(matchType))
end

-- Rollout matches as Istio HTTPMatchRequest fragments; empty ones are skipped.
local rolloutMatches = {}
for _, m in ipairs(obj.matches or {}) do
  local im = {}
  local any = false
  if m.path ~= nil then
    im.uri = stringMatch("path", m.path.type or "PathPrefix", m.path.value or "/")
    any = true
  end
  for _, h in ipairs(m.headers or {}) do
    im.headers = im.headers or {}
    im.headers[string.lower(h.name)] = stringMatch("header", h.type, h.value)
    any = true
  end
  for _, q in ipairs(m.queryParams or {}) do
    im.queryParams = im.queryParams or {}
    im.queryParams[q.name] = stringMatch("query", q.type, q.value)
    any = true
  end
  if any then table.insert(rolloutMatches, im) end
end

local weight = obj.canaryWeight
if weight ~= nil and weight > 100 then weight = 100 end
local useWeight = weight ~= nil and weight >= 0

local function addHeaderOps(routeDest)
  local rhm = obj.requestHeaderModifier
  if rhm == nil then return end
  local function request()
    routeDest.headers = routeDest.headers or {}
    routeDest.headers.request = routeDest.headers.request or {}
    return routeDest.headers.request
  end
  for _, h in ipairs(rhm.set or {}) do
    local req = request()
    req.set = req.set or {}
    req.set[h.name] = h.value
  end
  for _, h in ipairs(rhm.add or {}) do
    local req = request()
    req.add = req.add or {}
    req.add[h.name] = h.value
  end
  for _, name in ipairs(rhm.remove or {}) do
    local req = request()
    req.remove = req.remove or {}
    table.insert(req.remove, name)
  end
end

-- A fresh canary copy of a stable route destination.
local function canaryDestination(stableDest, withHeaders)
  local d = copy(stableDest)
  if useSubset then
    d.destination.subset = CANARY_SUBSET
  else
    d.destination.host = canary .. stableSuffix(stableDest.destination.host)
    d.destination.subset = nil
  end
  if withHeaders then addHeaderOps(d) end
  return d
end

-- The smallest k (at most 100) such that every stable weight times k times the canary weight is
-- a multiple of 100. Istio weights are relative ("a destination will receive weight/(sum of all
-- weights) requests", istio/api networking/v1alpha3/virtual_service.proto, HTTPRouteDestination),
-- so multiplying every weight of a route by k keeps each share and lets the canary part of a
-- small weight (1 at 50 %) be exact instead of flooring to 0.
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

local MAX_WEIGHT = 2147483647 -- weights are int32 (istio/api HTTPRouteDestination.weight)

local function scaled(w)
  if w > MAX_WEIGHT then
    error(
      "weight "
        .. tostring(w)
        .. " exceeds int32 after scaling the route's weights for the canary split"
    )
  end
  return w
end

-- Splits every stable destination of a route list by the canary weight.
local function splitWeights(dests, withHeaders)
  local out = {}
  local alone = #dests == 1
  local function base(d)
    if alone then return 100 end
    return d.weight or 0
  end
  local stableWeights = {}
  for _, d in ipairs(dests) do
    if isStable(d) then table.insert(stableWeights, base(d)) end
  end
  local k = weightScale(stableWeights)
  for _, d in ipairs(dests) do
    table.insert(out, d)
    if isStable(d) then
      local total = base(d) * k
      local canaryPart = total * weight / 100
      local c = canaryDestination(d, withHeaders)
      d.weight = scaled(total - canaryPart)
      c.weight = canaryPart
      table.insert(out, c)
    elseif d.weight ~= nil and k > 1 then
      d.weight = scaled(d.weight * k)
    end
  end
  return out
end

-- The kind ("exact", "prefix" or "regex") and value of an Istio StringMatch, or nil.
local function uriKind(uri)
  if type(uri) ~= "table" then return nil end
  for _, kind in ipairs({ "exact", "prefix", "regex" }) do
    if uri[kind] ~= nil then return kind, uri[kind] end
  end
  return nil
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

-- The uri selecting the requests both the route's own uri and the step's select: one of them, or
-- false when they select no common request (Istio's prefix is a plain string prefix). A regex
-- cannot be intersected with another uri, so that combination raises an error rather than
-- dropping either condition.
local function intersectUri(base, step)
  local bk, bv = uriKind(base)
  local sk, sv = uriKind(step)
  -- No uri, or prefix "/", selects every path.
  if bk == nil or (bk == "prefix" and bv == "/") then
    if sk == nil then return base end
    return step
  end
  if sk == nil or (sk == "prefix" and sv == "/") then return base end
  if bk == "prefix" and sk == "regex" and regexWithinPrefix(sv, bv) then return step end
  if bk == "regex" or sk == "regex" then
    error(
      "Istio cannot combine the step's path "
        .. sv
        .. " with the route's uri "
        .. bv
        .. " (a regex cannot be intersected with another uri); match the route's own uri in the step"
    )
  end
  local function startsWith(s, p)
    return string.sub(s, 1, string.len(p)) == p
  end
  if bk == "prefix" and sk == "prefix" then
    if startsWith(sv, bv) then return step end
    if startsWith(bv, sv) then return base end
    return false
  end
  if bk == "prefix" then return startsWith(sv, bv) and step end
  if sk == "prefix" then return startsWith(bv, sv) and base end
  return bv == sv and base
end

local function sameMatch(a, b)
  local ka, va = uriKind(a)
  local kb, vb = uriKind(b)
  return ka == kb and va == vb
end

-- The route's match narrowed by a Rollout match (AND), or nil when they select no common
-- request. Istio keys header and query conditions by name, so a step condition on a name the
-- route already tests with another value cannot be ANDed and raises an error.
local function mergeMatch(base, extra)
  local m = copy(base)
  local add = copy(extra)
  local uri = intersectUri(base.uri, add.uri)
  if uri == false then return nil end
  m.uri = copy(uri)
  for _, field in ipairs({ "headers", "queryParams" }) do
    if add[field] ~= nil then
      m[field] = m[field] or {}
      for k, v in pairs(add[field]) do
        if m[field][k] ~= nil and not sameMatch(m[field][k], v) then
          error(
            "Istio cannot AND the step's condition on "
              .. k
              .. " with the route's own condition on it"
          )
        end
        m[field][k] = v
      end
    end
  end
  return m
end

-- The canary route of a stable route, inserted right before it (Istio evaluates http routes in
-- order, the first match wins), or nil when the step selects none of the route's requests. Its
-- matches are the route's own narrowed by the step's, so it only sees requests the stable route
-- would have seen.
local function canaryHttpRoute(route, stableDest)
  local c = copy(route)
  local matches = {}
  local bases = route.match
  if type(bases) ~= "table" or #bases == 0 then bases = { {} } end
  for _, base in ipairs(bases) do
    for _, extra in ipairs(rolloutMatches) do
      local m = mergeMatch(base, extra)
      if m ~= nil then table.insert(matches, m) end
    end
  end
  if #matches == 0 then return nil end
  c.match = matches
  local d = canaryDestination(stableDest, true)
  d.weight = nil
  c.route = { d }
  if route.name ~= nil then c.name = route.name .. "-canary" end
  return c
end

local function firstStable(dests)
  for _, d in ipairs(dests) do
    if isStable(d) then return d end
  end
  return nil
end

if spec ~= nil and (useWeight or #rolloutMatches > 0) then
  if type(spec.http) == "table" then
    local http = {}
    for _, route in ipairs(spec.http) do
      local dests = type(route.route) == "table" and route.route or {}
      local stableDest = firstStable(dests)
      if stableDest ~= nil and #rolloutMatches > 0 then
        local c = canaryHttpRoute(route, stableDest)
        if c ~= nil then table.insert(http, c) end
      end
      if stableDest ~= nil and useWeight then route.route = splitWeights(dests, true) end
      table.insert(http, route)
    end
    spec.http = http
  end
  if useWeight then
    for _, section in ipairs({ "tcp", "tls" }) do
      if type(spec[section]) == "table" then
        for _, route in ipairs(spec[section]) do
          if type(route.route) == "table" and firstStable(route.route) ~= nil then
            route.route = splitWeights(route.route, false)
          end
        end
      end
    end
  end
end

return obj.data
