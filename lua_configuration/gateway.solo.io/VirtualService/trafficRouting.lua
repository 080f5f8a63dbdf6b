-- Gloo Edge VirtualService (gateway.solo.io/v1): routes canary traffic in spec.virtualHost.routes.
--
-- A destination is the stable service when it is `kube: {ref: {name: <stable>}}`, or an
-- `upstream` whose name follows Gloo discovery's "<namespace>-<stable>-<port>" form (the canary
-- upstream is "<namespace>-<canary>-<port>", which discovery creates for the canary Service).
-- Caveat: that name form is ambiguous when another Service's name ends in "-<stable>" (for
-- stable "web", "prod-api-web-80" also looks like namespace "prod-api"); use kube destinations
-- in that case.
--
-- Honoured Rollout fields:
--   canaryWeight / stableWeight  a route whose routeAction.single is the stable destination becomes
--                                routeAction.multi with a stable and a canary destination; in a
--                                routeAction.multi each stable destination is split into a stable
--                                part and a canary destination right after it. A destination alone
--                                counts as 100 whatever its weight; otherwise a missing weight
--                                counts as 0. Weights are relative: a canary part that is not a
--                                whole number scales every weight of the route up first. Weights
--                                above 100 are treated as 100; -1 (or any negative) means "no
--                                weight".
--   matches                      for every route with a stable destination, a canary route is
--                                inserted right before it (Gloo uses the first matching route). Its
--                                matchers are every original matcher combined (AND) with every
--                                Rollout match (OR): path -> prefix/exact/regex, headers ->
--                                headers, queryParams -> queryParameters (`regex: true` for
--                                RegularExpression), appended to the route's own (Gloo ANDs them).
--                                The step's path narrows the route's: a path inside it replaces
--                                it, a path outside it leaves that combination out (no canary
--                                route when none is left, so other routes keep their requests), a
--                                regex next to a route path other than "/" raises an error. A route
--                                without matchers matches everything.
--   requestHeaderModifier        set (append: false), add (append: true) and remove go to the
--                                canary's headerManipulation: the canary route's options in a
--                                match step, the canary weighted destination's options in a
--                                weight step, so only canary-bound requests change.
--   canaryService == stableService (TrafficRouting CR): the canary destination is the stable one
--                                with `subset: {values: CANARY_LABELS}`; the upstream needs a
--                                subsetSpec with that label key. A kube destination has no
--                                Upstream to hold a subsetSpec, so it raises an error. Otherwise
--                                the canary destination drops the stable one's subset (it selects
--                                stable pods by label).
-- Matches and weight in one step both apply: matching requests go to the canary, the rest is split
-- by weight. A step with neither (canaryWeight -1, no matches) returns the resource unchanged.
-- Ignored: delegateAction and upstreamGroup routes (the delegated RouteTable or the
-- UpstreamGroup needs its own reference); empty Rollout matches (no conditions).
-- CANARY_LABELS is the label the canary pods carry; change it to your own convention.

local CANARY_LABELS = { ["istio.service.tag"] = "gray" }

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

-- Escapes Lua pattern magic characters (service names contain "-").
local function literal(s)
  return (string.gsub(s, "[%^%$%(%)%%%.%[%]%*%+%-%?]", function(c)
    return "%" .. c
  end))
end

-- For a stable upstream name "<ns>-<stable>-<port>", returns "<ns>-", "-<port>"; else nil.
local function upstreamParts(name)
  if type(name) ~= "string" then return nil end
  local ns, port = string.match(name, "^(.+%-)" .. literal(stable) .. "(%-[0-9]+)$")
  return ns, port
end

local function isStable(dest)
  if type(dest) ~= "table" then return false end
  if type(dest.kube) == "table" and type(dest.kube.ref) == "table" then
    return dest.kube.ref.name == stable
  end
  if type(dest.upstream) == "table" then return upstreamParts(dest.upstream.name) ~= nil end
  return false
end

local function canaryDestination(dest)
  local d = copy(dest)
  if useSubset then
    -- Subsets need the Kubernetes Upstream's subsetSpec (Gloo Edge docs, "Subsets": Kubernetes
    -- upstreams are the only kind supported); a kube destination has no Upstream to hold one.
    if d.kube ~= nil then
      error(
        "Gloo routes to subsets of an Upstream only: reference the stable service's discovered Upstream (with a subsetSpec for "
          .. "the canary label) instead of a kube destination, or use a canary Service"
      )
    end
    d.subset = { values = copy(CANARY_LABELS) }
  elseif d.kube ~= nil then
    d.kube.ref.name = canary
    d.subset = nil
  else
    local ns, port = upstreamParts(d.upstream.name)
    d.upstream.name = ns .. canary .. port
    -- A stable subset selects stable pods by label; the canary upstream's pods are all canary.
    d.subset = nil
  end
  return d
end

local function valueMatcher(what, entry)
  local m = { name = entry.name, value = entry.value }
  if entry.type == "RegularExpression" then
    m.regex = true
  elseif entry.type ~= nil and entry.type ~= "Exact" then
    error("unsupported " .. what .. " match type: " .. tostring(entry.type))
  end
  return m
end

-- Rollout matches as Gloo matcher fragments; empty ones are skipped.
local rolloutMatchers = {}
for _, m in ipairs(obj.matches or {}) do
  local gm = {}
  local any = false
  if m.path ~= nil then
    local t = m.path.type or "PathPrefix"
    local value = m.path.value or "/"
    if t == "PathPrefix" then
      gm.prefix = value
    elseif t == "Exact" then
      gm.exact = value
    elseif t == "RegularExpression" then
      gm.regex = value
    else
      error("unsupported path match type: " .. tostring(t))
    end
    any = true
  end
  for _, h in ipairs(m.headers or {}) do
    gm.headers = gm.headers or {}
    table.insert(gm.headers, valueMatcher("header", h))
    any = true
  end
  for _, q in ipairs(m.queryParams or {}) do
    gm.queryParameters = gm.queryParameters or {}
    table.insert(gm.queryParameters, valueMatcher("query", q))
    any = true
  end
  if any then table.insert(rolloutMatchers, gm) end
end

local weight = obj.canaryWeight
if weight ~= nil and weight > 100 then weight = 100 end
local useWeight = weight ~= nil and weight >= 0

-- The path kind ("exact", "prefix" or "regex") and value of a Gloo matcher, or nil.
local function pathOf(m)
  for _, kind in ipairs({ "exact", "prefix", "regex" }) do
    if m[kind] ~= nil then return kind, m[kind] end
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

-- The path selecting the requests both the route's matcher and the step's select, as
-- kind, value; false when they select no common request (Gloo's prefix is a plain string
-- prefix). A regex cannot be intersected with another path, so that combination raises an
-- error rather than dropping either condition.
local function intersectPath(base, step)
  local bk, bv = pathOf(base)
  local sk, sv = pathOf(step)
  -- No path, or prefix "/", selects every path.
  if bk == nil or (bk == "prefix" and bv == "/") then
    if sk == nil then return bk, bv end
    return sk, sv
  end
  if sk == nil or (sk == "prefix" and sv == "/") then return bk, bv end
  if bk == "prefix" and sk == "regex" and regexWithinPrefix(sv, bv) then return sk, sv end
  if bk == "regex" or sk == "regex" then
    error(
      "Gloo cannot combine the step's path "
        .. sv
        .. " with the route's path "
        .. bv
        .. " (a regex cannot be intersected with another path); match the route's own path in the step"
    )
  end
  local function startsWith(s, p)
    return string.sub(s, 1, string.len(p)) == p
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

local function sameEntry(a, b)
  return a.name == b.name
    and a.value == b.value
    and a.regex == b.regex
    and a.invertMatch == b.invertMatch
end

-- The route's matcher narrowed by a Rollout match (AND), or nil when they select no common
-- request. Gloo ANDs every entry of headers/queryParameters, so the step's entries are appended
-- (an identical one only once) and the route's own conditions stay.
local function mergeMatcher(base, extra)
  local kind, value = intersectPath(base, extra)
  if kind == false then return nil end
  local m = copy(base)
  m.prefix, m.exact, m.regex = nil, nil, nil
  if kind ~= nil then m[kind] = value end
  for _, field in ipairs({ "headers", "queryParameters" }) do
    if extra[field] ~= nil then
      m[field] = m[field] or {}
      for _, e in ipairs(extra[field]) do
        local present = false
        for _, have in ipairs(m[field]) do
          if sameEntry(have, e) then present = true end
        end
        if not present then table.insert(m[field], copy(e)) end
      end
    end
  end
  return m
end

local function addHeaderManipulation(holder)
  local rhm = obj.requestHeaderModifier
  if rhm == nil then return end
  local function hm()
    holder.options = holder.options or {}
    holder.options.headerManipulation = holder.options.headerManipulation or {}
    return holder.options.headerManipulation
  end
  for _, pair in ipairs({ { "set", false }, { "add", true } }) do
    for _, h in ipairs(rhm[pair[1]] or {}) do
      local m = hm()
      m.requestHeadersToAdd = m.requestHeadersToAdd or {}
      table.insert(
        m.requestHeadersToAdd,
        { header = { key = h.name, value = h.value }, append = pair[2] }
      )
    end
  end
  for _, name in ipairs(rhm.remove or {}) do
    local m = hm()
    m.requestHeadersToRemove = m.requestHeadersToRemove or {}
    table.insert(m.requestHeadersToRemove, name)
  end
end

-- The canary route of a stable route, inserted right before it (Gloo uses the first route whose
-- matchers match), or nil when the step selects none of the route's requests.
local function canaryRoute(route, stableDest)
  local c = copy(route)
  local matchers = {}
  local bases = route.matchers
  if type(bases) ~= "table" or #bases == 0 then bases = { {} } end
  for _, base in ipairs(bases) do
    for _, extra in ipairs(rolloutMatchers) do
      local m = mergeMatcher(base, extra)
      if m ~= nil then table.insert(matchers, m) end
    end
  end
  if #matchers == 0 then return nil end
  c.matchers = matchers
  c.routeAction = { single = canaryDestination(stableDest) }
  addHeaderManipulation(c)
  if route.name ~= nil then c.name = route.name .. "-canary" end
  return c
end

-- Gloo turns routeAction.multi into Envoy weighted clusters, whose weights are relative to their
-- sum, so when a stable weight's canary part is not a whole number every weight of the route is
-- multiplied by the smallest factor (at most 100) that makes it one.
local function splitMulti(destinations)
  local out = {}
  local alone = #destinations == 1
  local function base(wd)
    if alone then return 100 end
    return wd.weight or 0
  end
  local k = 1
  while k < 100 do
    local exact = true
    for _, wd in ipairs(destinations) do
      if isStable(wd.destination) and (base(wd) * k * weight) % 100 ~= 0 then exact = false end
    end
    if exact then break end
    k = k + 1
  end
  for _, wd in ipairs(destinations) do
    table.insert(out, wd)
    if isStable(wd.destination) then
      local total = base(wd) * k
      local canaryPart = math.floor(total * weight / 100)
      local c = copy(wd)
      c.destination = canaryDestination(wd.destination)
      c.weight = canaryPart
      wd.weight = total - canaryPart
      addHeaderManipulation(c)
      table.insert(out, c)
    elseif k > 1 and wd.weight ~= nil then
      wd.weight = wd.weight * k
    end
  end
  return out
end

local vh = spec ~= nil and spec.virtualHost or nil
if type(vh) == "table" and type(vh.routes) == "table" and (useWeight or #rolloutMatchers > 0) then
  local routes = {}
  for _, route in ipairs(vh.routes) do
    local action = type(route.routeAction) == "table" and route.routeAction or {}
    local stableDest = nil
    if isStable(action.single) then
      stableDest = action.single
    elseif type(action.multi) == "table" and type(action.multi.destinations) == "table" then
      for _, wd in ipairs(action.multi.destinations) do
        if stableDest == nil and isStable(wd.destination) then stableDest = wd.destination end
      end
    end
    if stableDest ~= nil then
      if #rolloutMatchers > 0 then
        local c = canaryRoute(route, stableDest)
        if c ~= nil then table.insert(routes, c) end
      end
      if useWeight then
        if action.single ~= nil then
          action.multi = { destinations = splitMulti({ { destination = action.single } }) }
          action.single = nil
        else
          action.multi.destinations = splitMulti(action.multi.destinations)
        end
      end
    end
    table.insert(routes, route)
  end
  vh.routes = routes
end

return obj.data
