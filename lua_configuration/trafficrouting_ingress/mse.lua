-- Alibaba Cloud MSE Ingress canary annotations for the canary Ingress (the ingress-nginx
-- compatible nginx.ingress.kubernetes.io/canary* set, plus MSE's query canary and header control).
--
-- Returns the canary Ingress's annotations with the canary ones rewritten for this step: earlier
-- canary-by-* and canary-weight annotations (under either prefix) are dropped, canary is "true",
-- and:
--   weight                       canary-weight = weight (a string such as "20"), unless it is "-1"
--                                (no traffic share for this step).
--   matches                      one request header, or one query parameter, per step, matched
--                                exactly: a single Exact header condition becomes canary-by-header
--                                with canary-by-header-value; a single Exact query condition
--                                becomes mse.ingress.kubernetes.io/canary-by-query(-value). MSE
--                                documents no header pattern, so anything else (a regex, two
--                                headers ANDed or ORed, a header with a query) cannot be expressed
--                                and raises an error rather than routing the wrong requests.
--   requestHeaderModifier        set -> mse.ingress.kubernetes.io/request-header-control-update,
--                                add -> request-header-control-add (one "name value" line per
--                                header), remove -> request-header-control-remove
--                                (comma-separated). They replace the canary Ingress's header
--                                control, so each step applies exactly its own modifier however
--                                many steps ran before. A canary Ingress only receives canary
--                                traffic, so they touch canary requests only (header control
--                                copied from the stable Ingress is not kept on the canary).
-- A path condition cannot be expressed (the paths are the Ingress's own rules) and raises an
-- error instead of being dropped; so does a weight above 0 beside a match (MSE reads no weight
-- once a header or query canary is set).

local PREFIX = "nginx.ingress.kubernetes.io/"
local MSE = "mse.ingress.kubernetes.io/"

-- Quotes regex metacharacters so an exact value can sit inside a pattern.
local function regexQuote(s)
  return (string.gsub(s, "[%^%$%(%)%.%[%]%*%+%?%{%}|\\]", "\\%0"))
end

local annotations = {}
-- MSE reads canary annotations under either prefix, so stale ones are dropped under both.
local function isManaged(k)
  for _, p in ipairs({ PREFIX, MSE }) do
    if
      string.sub(k, 1, string.len(p .. "canary-by-")) == p .. "canary-by-"
      or k == p .. "canary-weight"
    then
      return true
    end
  end
  return false
end
for k, v in pairs(obj.annotations or {}) do
  if not isManaged(k) then annotations[k] = v end
end
annotations[PREFIX .. "canary"] = "true"

if obj.weight ~= nil and obj.weight ~= "-1" then
  annotations[PREFIX .. "canary-weight"] = obj.weight
end

local groups = {}
local queries = {}
for _, m in ipairs(obj.matches or {}) do
  if m.path ~= nil then
    error(
      "MSE canaries cannot test the request path (the paths are the Ingress's own rules); remove the path from the step's matches"
    )
  end
  local headers = m.headers or {}
  local params = m.queryParams or {}
  if #headers > 0 and #params > 0 then
    error("MSE canaries cannot AND a header with a query parameter")
  end
  if #headers > 0 then table.insert(groups, headers) end
  for _, q in ipairs(params) do
    table.insert(queries, q)
  end
end
if #queries > 0 then
  if #queries > 1 or #groups > 0 then
    error("MSE canaries can test only one query parameter, and not together with a header")
  end
  local q = queries[1]
  if q.type ~= nil and q.type ~= "Exact" then
    error("MSE query canaries only match exact values")
  end
  annotations[MSE .. "canary-by-query"] = q.name
  annotations[MSE .. "canary-by-query-value"] = q.value
end

if #groups > 1 or (#groups == 1 and #groups[1] > 1) then
  error("MSE canaries can test only one header per step")
end
if #groups == 1 then
  local h = groups[1][1]
  if h.type ~= nil and h.type ~= "Exact" then
    error("MSE header canaries only match exact values")
  end
  annotations[PREFIX .. "canary-by-header"] = h.name
  -- MSE, as Higress, matches the value as the regex "always|<value>" (alibaba/higress
  -- canary.go, ApplyByHeader): quoted, so a dot in the value is a dot.
  annotations[PREFIX .. "canary-by-header-value"] = regexQuote(h.value)
end

-- MSE Ingress is the managed build of Higress, whose canary parser reads no weight once a header
-- (or cookie) canary is set (alibaba/higress pkg/ingress/kube/annotations/canary.go, Parse, and
-- annotations.go, CanaryKind; the model: engine/src/routing/higress.rs); the query canary is
-- assumed to behave alike. So a weight beside a match would silently not apply: an error.
if (#groups > 0 or #queries > 0) and annotations[PREFIX .. "canary-weight"] ~= nil then
  if annotations[PREFIX .. "canary-weight"] ~= "0" then
    error(
      "MSE ignores canary-weight once a header or query match is set, so this step's weight would not apply; put the matches and the traffic in separate steps"
    )
  end
  annotations[PREFIX .. "canary-weight"] = nil
end

-- "name value" lines, one per header; a later entry for the same header replaces an earlier one.
local function controlLines(entries)
  local lines, names = {}, {}
  for _, e in ipairs(entries) do
    local key = string.lower(e.name)
    if names[key] == nil then
      table.insert(lines, e.name .. " " .. e.value)
      names[key] = #lines
    else
      lines[names[key]] = e.name .. " " .. e.value
    end
  end
  return table.concat(lines, "\n")
end

-- Header control on the canary Ingress belongs to the rollout's step: the controller runs this
-- script on the live canary Ingress's annotations (openkruise/rollouts
-- pkg/trafficrouting/network/ingress/ingress.go, EnsureRoutes), so merging into what is there
-- would keep every earlier step's lines. Each step writes exactly its own modifier (as Kruise's
-- own mse.lua does for request-header-control-update), and a step without one clears them.
for _, k in ipairs({ "update", "add", "remove" }) do
  annotations[MSE .. "request-header-control-" .. k] = nil
end
local rhm = obj.requestHeaderModifier
if rhm ~= nil then
  if rhm.set ~= nil and #rhm.set > 0 then
    annotations[MSE .. "request-header-control-update"] = controlLines(rhm.set)
  end
  if rhm.add ~= nil and #rhm.add > 0 then
    annotations[MSE .. "request-header-control-add"] = controlLines(rhm.add)
  end
  if rhm.remove ~= nil and #rhm.remove > 0 then
    local names, seen = {}, {}
    for _, n in ipairs(rhm.remove) do
      if not seen[string.lower(n)] then
        table.insert(names, n)
        seen[string.lower(n)] = true
      end
    end
    annotations[MSE .. "request-header-control-remove"] = table.concat(names, ",")
  end
end

return annotations
