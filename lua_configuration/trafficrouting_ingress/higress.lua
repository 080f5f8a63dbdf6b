-- Higress canary annotations for the canary Ingress (higress.io/canary*, header control).
--
-- Returns the canary Ingress's annotations with the canary ones rewritten for this step: earlier
-- higress.io/canary-by-*, canary-weight and request-header-control-* annotations are dropped,
-- higress.io/canary is "true", and:
--   weight                       canary-weight = weight (a string such as "20"), unless it is "-1"
--                                (no traffic share for this step).
--   matches                      Higress canaries test one request header: a single header
--                                condition becomes canary-by-header with canary-by-header-value
--                                (Exact) or canary-by-header-pattern (RegularExpression).
--                                Conditions on the same header ORed across several matches become
--                                one pattern alternation, anchored for exact values. Anything else
--                                (two different headers, a header ANDed with another one, a path
--                                or query condition: Higress canaries have none) cannot be
--                                expressed and raises an error rather than routing the wrong
--                                requests.
--   matches and weight together  Higress reads canary-weight only when no header value, pattern or
--                                cookie is set (alibaba/higress pkg/ingress/kube/annotations/
--                                canary.go, canary Parse returns before the weight), so requests
--                                without the header would never reach the canary: a step with
--                                both a header match and a weight above 0 raises an error (give
--                                them separate steps); with weight "0" only the header is written.
--   requestHeaderModifier        set -> higress.io/request-header-control-update, add ->
--                                request-header-control-add (one "name value" line per header),
--                                remove -> request-header-control-remove (comma-separated). They
--                                replace the canary Ingress's header control, so each step applies
--                                exactly its own modifier however many steps ran before. A canary
--                                Ingress only receives canary traffic, so they touch canary
--                                requests only (header control copied from the stable Ingress is
--                                not kept on the canary).

local PREFIX = "higress.io/"

-- Quotes regex metacharacters so an exact value can sit inside a pattern.
local function regexQuote(s)
  return (string.gsub(s, "[%^%$%(%)%.%[%]%*%+%?%{%}|\\]", "\\%0"))
end

local annotations = {}
for k, v in pairs(obj.annotations or {}) do
  local managed = string.sub(k, 1, string.len(PREFIX .. "canary-by-")) == PREFIX .. "canary-by-"
    or k == PREFIX .. "canary-weight"
  if not managed then annotations[k] = v end
end
annotations[PREFIX .. "canary"] = "true"

if obj.weight ~= nil and obj.weight ~= "-1" then
  annotations[PREFIX .. "canary-weight"] = obj.weight
end

local groups = {}
for _, m in ipairs(obj.matches or {}) do
  if m.path ~= nil then
    error(
      "Higress canaries cannot test the request path (the paths are the Ingress's own rules); remove the path from the step's matches"
    )
  end
  if m.queryParams ~= nil and #m.queryParams > 0 then
    error(
      "Higress canaries cannot test query parameters; remove queryParams from the step's matches"
    )
  end
  if m.headers ~= nil and #m.headers > 0 then table.insert(groups, m.headers) end
end

if #groups > 0 and annotations[PREFIX .. "canary-weight"] ~= nil then
  if annotations[PREFIX .. "canary-weight"] ~= "0" then
    error(
      "Higress ignores canary-weight once a header match is set, so this step's weight would not apply; put the matches and the traffic in separate steps"
    )
  end
  annotations[PREFIX .. "canary-weight"] = nil
end

local function checkType(h)
  if h.type ~= nil and h.type ~= "Exact" and h.type ~= "RegularExpression" then
    error("unsupported header match type: " .. tostring(h.type))
  end
end

if #groups == 1 and #groups[1] == 1 then
  local h = groups[1][1]
  checkType(h)
  annotations[PREFIX .. "canary-by-header"] = h.name
  if h.type == "RegularExpression" then
    annotations[PREFIX .. "canary-by-header-pattern"] = h.value
  else
    -- Higress matches the value as the regex "always|<value>" (canary.go, ApplyByHeader): quoted,
    -- so a dot in the value is a dot.
    annotations[PREFIX .. "canary-by-header-value"] = regexQuote(h.value)
  end
elseif #groups > 1 then
  local name = nil
  local alternatives = {}
  for _, headers in ipairs(groups) do
    if #headers ~= 1 then error("Higress canaries can test only one header per match") end
    local h = headers[1]
    checkType(h)
    if name == nil then name = h.name end
    if string.lower(name) ~= string.lower(h.name) then
      error("Higress canaries can only OR matches on the same header")
    end
    if h.type == "RegularExpression" then
      table.insert(alternatives, "(?:" .. h.value .. ")")
    else
      table.insert(alternatives, "^" .. regexQuote(h.value) .. "$")
    end
  end
  annotations[PREFIX .. "canary-by-header"] = name
  annotations[PREFIX .. "canary-by-header-pattern"] = table.concat(alternatives, "|")
elseif #groups == 1 then
  error("Higress canaries can test only one header; this match ANDs several")
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
  annotations[PREFIX .. "request-header-control-" .. k] = nil
end
local rhm = obj.requestHeaderModifier
if rhm ~= nil then
  if rhm.set ~= nil and #rhm.set > 0 then
    annotations[PREFIX .. "request-header-control-update"] = controlLines(rhm.set)
  end
  if rhm.add ~= nil and #rhm.add > 0 then
    annotations[PREFIX .. "request-header-control-add"] = controlLines(rhm.add)
  end
  if rhm.remove ~= nil and #rhm.remove > 0 then
    local names, seen = {}, {}
    for _, n in ipairs(rhm.remove) do
      if not seen[string.lower(n)] then
        table.insert(names, n)
        seen[string.lower(n)] = true
      end
    end
    annotations[PREFIX .. "request-header-control-remove"] = table.concat(names, ",")
  end
end

return annotations
