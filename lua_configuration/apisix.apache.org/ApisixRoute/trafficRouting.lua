-- Apache APISIX ApisixRoute (apisix.apache.org/v2): routes canary traffic in spec.http.
--
-- Only http routes with a backend whose serviceName is the stable service change.
--
-- Honoured Rollout fields:
--   canaryWeight / stableWeight  each stable backend is split into a stable part and a canary
--                                backend right after it. A backend alone in its route counts as
--                                100 whatever its weight; otherwise a missing weight counts as 100
--                                (APISIX's default). Weights are relative: when a stable weight's
--                                canary part is not a whole number (1 at 50 %), every weight of the
--                                route is multiplied by the smallest factor that makes it one.
--                                Weights above 100 are treated as 100; -1 (or
--                                any negative) means "no weight".
--   matches                      for every route with a stable backend, one canary route per
--                                Rollout match is inserted right before it: a copy of the route
--                                named "<name>-canary" ("<name>-canary-<n>" for the n-th of several
--                                matches) with priority + 1 and the match's conditions appended to
--                                match.exprs (APISIX ANDs exprs; separate routes OR the matches):
--                                headers -> scope Header, queryParams -> scope Query,
--                                path -> scope Path. Exact (default) -> Equal,
--                                RegularExpression -> RegexMatch; a PathPrefix becomes a
--                                RegexMatch on whole path segments ("/a" matches "/a" and "/a/b",
--                                not "/ab"). The route's own paths/hosts/methods stay, so a canary
--                                route only ever sees requests its stable route would have seen.
--   requestHeaderModifier        set/add/remove go into the proxy-rewrite plugin's `headers`
--                                (APISIX 3.x form) of each canary route, merged with an existing
--                                proxy-rewrite plugin of the route.
--   canaryService == stableService (TrafficRouting CR): canary routes keep the stable service and
--                                use `subset: canary` (see the ApisixUpstream script, which adds
--                                that subset). A weight above 0 raises an error: it would need two
--                                backends of one service, which apisix-ingress-controller 2.x
--                                rejects ("duplicate backend service"); weight 0 changes nothing.
--                                Otherwise canary backends use the canary service and drop any
--                                subset, which belongs to the stable service's ApisixUpstream.
-- Matches and weight in one step both apply: matching requests go to the canary, the rest is split
-- by weight. A step with neither (canaryWeight -1, no matches) returns the resource unchanged.
-- Error: requestHeaderModifier beside a weight above 0 (route plugins apply to every backend of
-- the route, so they cannot target only the canary share, and dropping them would misroute).
-- Ignored: spec.stream (one backend per route, no
-- weights); empty Rollout matches (no conditions).

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

local function isStable(backend)
  return type(backend) == "table" and backend.serviceName == stable
end

-- Escapes regex metacharacters so a literal path prefix can be used in a PCRE.
local function regexQuote(s)
  return (string.gsub(s, "[%^%$%(%)%.%[%]%*%+%?%{%}|\\]", "\\%0"))
end

-- The operator and value of an expr for a Rollout match. RegexMatch is an unanchored PCRE
-- search (api7/lua-resty-expr `~~`), while a Rollout's RegularExpression matches the whole value
-- (Envoy's full match, as Kruise's Istio provider gets), so the pattern is anchored.
local function valueExpr(what, matchType, value)
  if matchType == nil or matchType == "Exact" then return "Equal", value end
  if matchType == "RegularExpression" then
    -- Already anchored at both ends: kept as written.
    if string.sub(value, 1, 1) == "^" and string.sub(value, -1) == "$" then
      return "RegexMatch", value
    end
    return "RegexMatch", "^(?:" .. value .. ")$"
  end
  error("unsupported " .. what .. " match type: " .. tostring(matchType))
end

local function pathExpr(path)
  local matchType = path.type or "PathPrefix"
  local value = path.value or "/"
  if matchType == "PathPrefix" then
    local re = "^" .. regexQuote(value)
    if string.sub(value, -1) ~= "/" then re = re .. "(/.*)?$" end
    return { subject = { scope = "Path" }, op = "RegexMatch", value = re }
  end
  local op, v = valueExpr("path", matchType, value)
  return { subject = { scope = "Path" }, op = op, value = v }
end

-- Each Rollout match as a list of APISIX exprs; empty matches are skipped.
local rolloutExprs = {}
for _, m in ipairs(obj.matches or {}) do
  local exprs = {}
  if m.path ~= nil then table.insert(exprs, pathExpr(m.path)) end
  for _, h in ipairs(m.headers or {}) do
    local op, v = valueExpr("header", h.type, h.value)
    table.insert(exprs, { subject = { scope = "Header", name = h.name }, op = op, value = v })
  end
  for _, q in ipairs(m.queryParams or {}) do
    local op, v = valueExpr("query", q.type, q.value)
    table.insert(exprs, { subject = { scope = "Query", name = q.name }, op = op, value = v })
  end
  if #exprs > 0 then table.insert(rolloutExprs, exprs) end
end

local weight = obj.canaryWeight
if weight ~= nil and weight > 100 then weight = 100 end
local useWeight = weight ~= nil and weight >= 0

local function canaryBackend(stableBackend)
  local b = copy(stableBackend)
  if useSubset then
    b.subset = CANARY_SUBSET
  else
    b.serviceName = canary
    b.subset = nil
  end
  return b
end

local function hasHeaderChanges()
  local rhm = obj.requestHeaderModifier
  return rhm ~= nil and (#(rhm.set or {}) + #(rhm.add or {}) + #(rhm.remove or {})) > 0
end

local function addHeaderPlugin(route)
  local rhm = obj.requestHeaderModifier
  if rhm == nil then return end
  local set, add, remove = {}, {}, {}
  local any = false
  for _, h in ipairs(rhm.set or {}) do
    set[h.name] = h.value
    any = true
  end
  for _, h in ipairs(rhm.add or {}) do
    add[h.name] = h.value
    any = true
  end
  for _, name in ipairs(rhm.remove or {}) do
    table.insert(remove, name)
    any = true
  end
  if not any then return end
  route.plugins = route.plugins or {}
  local plugin = nil
  for _, p in ipairs(route.plugins) do
    if p.name == "proxy-rewrite" then plugin = p end
  end
  if plugin == nil then
    plugin = { name = "proxy-rewrite", enable = true }
    table.insert(route.plugins, plugin)
  end
  plugin.config = plugin.config or {}
  plugin.config.headers = plugin.config.headers or {}
  local headers = plugin.config.headers
  if next(set) ~= nil then
    headers.set = headers.set or {}
    for k, v in pairs(set) do
      headers.set[k] = v
    end
  end
  if next(add) ~= nil then
    headers.add = headers.add or {}
    for k, v in pairs(add) do
      headers.add[k] = v
    end
  end
  for _, name in ipairs(remove) do
    headers.remove = headers.remove or {}
    table.insert(headers.remove, name)
  end
end

local function canaryRoute(route, stableBackend, exprs, index, count)
  local c = copy(route)
  if route.name ~= nil then
    c.name = route.name .. "-canary"
    if count > 1 then c.name = c.name .. "-" .. tostring(index) end
  end
  c.priority = (route.priority or 0) + 1
  c.match = c.match or {}
  c.match.exprs = c.match.exprs or {}
  for _, e in ipairs(exprs) do
    table.insert(c.match.exprs, copy(e))
  end
  local b = canaryBackend(stableBackend)
  b.weight = nil
  c.backends = { b }
  addHeaderPlugin(c)
  return c
end

-- The smallest k (at most 100) such that every stable weight times k times the canary weight is
-- a multiple of 100. Weights are relative (apache/apisix-ingress-controller api/v2/apisixroute_types.go: Weight is relative; api/v2/shared_types.go DefaultWeight = 100), so multiplying every weight of a list by
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

local function splitWeights(backends)
  local out = {}
  local alone = #backends == 1
  local function base(x)
    if alone then return 100 end
    return x.weight or 100
  end
  local stableWeights = {}
  for _, x in ipairs(backends) do
    if isStable(x) then table.insert(stableWeights, base(x)) end
  end
  local k = weightScale(stableWeights)
  for _, b in ipairs(backends) do
    table.insert(out, b)
    if isStable(b) then
      local total = base(b) * k
      local canaryPart = total * weight / 100
      local c = canaryBackend(b)
      b.weight = scaled(total - canaryPart)
      c.weight = canaryPart
      table.insert(out, c)
    elseif k > 1 then
      b.weight = scaled((b.weight or 100) * k)
    end
  end
  return out
end

-- apisix-ingress-controller 2.x rejects a route with two backends of one service ("duplicate
-- backend service", apache/apisix-ingress-controller internal/controller/
-- apisixroute_controller.go, validateHTTPBackends), subsets or not, and a route's `upstreams`
-- reference whole ApisixUpstreams, not subsets: a weighted split between two subsets of the
-- stable service cannot be written. Weight 0 needs no canary backend.
if useSubset and useWeight and weight > 0 then
  error(
    "ApisixRoute cannot split a weight between subsets of one service (apisix-ingress-controller 2.x rejects "
      .. "duplicate backend services); use a canary Service, or a TrafficRouting with matches only"
  )
end
if useSubset and useWeight and weight == 0 then useWeight = false end

if spec ~= nil and type(spec.http) == "table" and (useWeight or #rolloutExprs > 0) then
  local http = {}
  for _, route in ipairs(spec.http) do
    local stableBackend = nil
    for _, b in ipairs(type(route.backends) == "table" and route.backends or {}) do
      if stableBackend == nil and isStable(b) then stableBackend = b end
    end
    if stableBackend ~= nil and useWeight and weight > 0 and hasHeaderChanges() then
      error(
        "ApisixRoute cannot change request headers of a weighted canary share (route plugins apply"
          .. " to every backend of the route): use requestHeaderModifier with matches only"
      )
    end
    if stableBackend ~= nil then
      for i, exprs in ipairs(rolloutExprs) do
        table.insert(http, canaryRoute(route, stableBackend, exprs, i, #rolloutExprs))
      end
      if useWeight then route.backends = splitWeights(route.backends) end
    end
    table.insert(http, route)
  end
  spec.http = http
end

return obj.data
