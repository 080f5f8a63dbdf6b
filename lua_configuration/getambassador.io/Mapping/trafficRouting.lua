-- Emissary-ingress Mapping (getambassador.io/v3alpha1): drives a canary Mapping.
--
-- Emissary splits traffic between Mappings, not inside one: Mappings with the same prefix, host
-- and header rules form a group, a Mapping's `weight` is its percentage of the group, and the
-- unweighted ones share the rest. A script changes only the resource it is given, so create the
-- canary Mapping yourself (a copy of the stable Mapping whose `service` is the canary Service,
-- e.g. "web-canary:8080", with weight 0) and list it in customNetworkRefs. This script only edits
-- a Mapping whose service names the canary service ("[scheme://]<canary>[.namespace][:port]");
-- any other Mapping, such as the stable one, is returned unchanged.
--
-- Honoured Rollout fields:
--   canaryWeight                 weight = canaryWeight (0..100; above 100 -> 100). A step without
--                                traffic and matches sets weight 0, so the canary gets nothing.
--   matches                      headers -> headers (Exact) / regex_headers (RegularExpression),
--                                queryParams -> query_parameters / regex_query_parameters,
--                                path -> prefix (PathPrefix), prefix + prefix_exact (Exact),
--                                prefix + prefix_regex (RegularExpression); `weight` is removed,
--                                so every matching request goes to the canary (its own group).
--                                Emissary ANDs a Mapping's conditions and cannot OR them, so
--                                several matches are accepted only when each is one header
--                                condition on the same header: they become a single regex_headers
--                                alternation. Other combinations raise an error.
--   requestHeaderModifier        set -> add_request_headers {value, append: false}, add ->
--                                {value, append: true}, remove -> remove_request_headers; they
--                                apply to the canary Mapping only.
-- A step with both matches and traffic: the matches win (one Mapping cannot do both).
-- Error: canaryService == stableService (TrafficRouting CR) on a Mapping of that service: Emissary
-- routes to Services and cannot select canary pods by label. Ignored: stableWeight (the stable
-- Mapping gets the remainder).

local canary = obj.canaryService
local spec = obj.data.spec

local function serviceName(service)
  if type(service) ~= "string" then return nil end
  local s = string.gsub(service, "^%a[%w%+%.%-]*://", "")
  local name = string.match(s, "^[^.:/]+")
  return name
end

-- Quotes RE2 metacharacters so an exact value can sit inside a regex.
local function regexQuote(s)
  return (string.gsub(s, "[%^%$%(%)%.%[%]%*%+%?%{%}|\\]", "\\%0"))
end

local function checkType(what, t)
  if t ~= nil and t ~= "Exact" and t ~= "RegularExpression" then
    error("unsupported " .. what .. " match type: " .. tostring(t))
  end
end

local function putMap(tbl, key, name, value)
  tbl[key] = tbl[key] or {}
  tbl[key][name] = value
end

local function applyMatch(m)
  if m.path ~= nil then
    local t = m.path.type or "PathPrefix"
    spec.prefix = m.path.value or "/"
    spec.prefix_exact = nil
    spec.prefix_regex = nil
    if t == "Exact" then
      spec.prefix_exact = true
    elseif t == "RegularExpression" then
      spec.prefix_regex = true
    elseif t ~= "PathPrefix" then
      error("unsupported path match type: " .. tostring(t))
    end
  end
  for _, h in ipairs(m.headers or {}) do
    checkType("header", h.type)
    if h.type == "RegularExpression" then
      putMap(spec, "regex_headers", h.name, h.value)
    else
      putMap(spec, "headers", h.name, h.value)
    end
  end
  for _, q in ipairs(m.queryParams or {}) do
    checkType("query", q.type)
    if q.type == "RegularExpression" then
      putMap(spec, "regex_query_parameters", q.name, q.value)
    else
      putMap(spec, "query_parameters", q.name, q.value)
    end
  end
end

-- Several matches that are each one header condition on the same header -> one alternation.
local function applyAlternatives(matches)
  local name = nil
  local alternatives = {}
  for _, m in ipairs(matches) do
    local headers = m.headers or {}
    if m.path ~= nil or m.queryParams ~= nil or #headers ~= 1 then
      error(
        "Emissary Mapping cannot OR these matches: use one match per step, or one header per match"
      )
    end
    local h = headers[1]
    checkType("header", h.type)
    if name == nil then name = h.name end
    if string.lower(name) ~= string.lower(h.name) then
      error("Emissary Mapping can only OR matches on the same header")
    end
    if h.type == "RegularExpression" then
      table.insert(alternatives, "(?:" .. h.value .. ")")
    else
      table.insert(alternatives, regexQuote(h.value))
    end
  end
  putMap(spec, "regex_headers", name, table.concat(alternatives, "|"))
end

local function applyHeaderModifier()
  local rhm = obj.requestHeaderModifier
  if rhm == nil then return end
  for _, h in ipairs(rhm.set or {}) do
    putMap(spec, "add_request_headers", h.name, { value = h.value, append = false })
  end
  for _, h in ipairs(rhm.add or {}) do
    putMap(spec, "add_request_headers", h.name, { value = h.value, append = true })
  end
  for _, name in ipairs(rhm.remove or {}) do
    spec.remove_request_headers = spec.remove_request_headers or {}
    table.insert(spec.remove_request_headers, name)
  end
end

if spec ~= nil and canary == obj.stableService and serviceName(spec.service) == canary then
  error(
    "Emissary routes to Services only and cannot select canary pods by label:"
      .. " canaryService == stableService (TrafficRouting CR) is not supported"
  )
end

if spec ~= nil and canary ~= obj.stableService and serviceName(spec.service) == canary then
  local matches = {}
  for _, m in ipairs(obj.matches or {}) do
    if m.path ~= nil or m.headers ~= nil or m.queryParams ~= nil then table.insert(matches, m) end
  end
  local weight = obj.canaryWeight
  if #matches == 1 then
    applyMatch(matches[1])
    spec.weight = nil
  elseif #matches > 1 then
    applyAlternatives(matches)
    spec.weight = nil
  elseif weight ~= nil and weight >= 0 then
    if weight > 100 then weight = 100 end
    spec.weight = weight
  else
    spec.weight = 0
  end
  if #matches > 0 or spec.weight > 0 then applyHeaderModifier() end
end

return obj.data
