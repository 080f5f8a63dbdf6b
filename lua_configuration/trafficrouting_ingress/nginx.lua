-- ingress-nginx canary annotations for the canary Ingress (nginx.ingress.kubernetes.io/canary*).
--
-- Returns the canary Ingress's annotations with the canary ones rewritten for this step: earlier
-- canary-by-* and canary-weight annotations are dropped, "canary" is "true", and:
--   weight                       canary-weight = weight (a string such as "20"), unless it is "-1"
--                                (no traffic share for this step).
--   matches                      ingress-nginx tests one request header: a single header condition
--                                becomes canary-by-header with canary-by-header-value (Exact) or
--                                canary-by-header-pattern (RegularExpression). Conditions on the
--                                same header ORed across several matches become one pattern
--                                alternation, anchored for exact values. Anything else (two
--                                different headers, a header ANDed with another one) cannot be
--                                expressed and raises an error rather than routing the wrong
--                                requests. So do path and queryParams conditions: an ingress-nginx
--                                canary tests a header, a cookie or a weight, nothing else
--                                (kubernetes/ingress-nginx docs/user-guide/nginx-configuration/
--                                annotations.md, "Canary"), and dropping them would send more
--                                requests to the canary than the step selects.
-- Ignored: requestHeaderModifier (it would need a configuration-snippet, which recent
-- ingress-nginx releases disable by default).

local PREFIX = "nginx.ingress.kubernetes.io/"

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

-- Every header condition, one list per match; a path or query condition cannot be expressed.
local groups = {}
for _, m in ipairs(obj.matches or {}) do
  if m.path ~= nil then
    error(
      "ingress-nginx canaries cannot test the request path (the paths are the Ingress's own rules); remove the path from the step's matches"
    )
  end
  if m.queryParams ~= nil and #m.queryParams > 0 then
    error(
      "ingress-nginx canaries cannot test query parameters; remove queryParams from the step's matches"
    )
  end
  if m.headers ~= nil and #m.headers > 0 then table.insert(groups, m.headers) end
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
    annotations[PREFIX .. "canary-by-header-value"] = h.value
  end
elseif #groups > 1 then
  local name = nil
  local alternatives = {}
  for _, headers in ipairs(groups) do
    if #headers ~= 1 then error("ingress-nginx canaries can test only one header per match") end
    local h = headers[1]
    checkType(h)
    if name == nil then name = h.name end
    if string.lower(name) ~= string.lower(h.name) then
      error("ingress-nginx canaries can only OR matches on the same header")
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
  error("ingress-nginx canaries can test only one header; this match ANDs several")
end

return annotations
