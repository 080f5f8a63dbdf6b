-- Higress canary annotations for the canary Ingress (higress.io/canary*, header control).
--
-- Returns the canary Ingress's annotations with the canary ones rewritten for this step: earlier
-- higress.io/canary-by-* and canary-weight annotations are dropped, higress.io/canary is "true",
-- and:
--   weight                       canary-weight = weight (a string such as "20"), unless it is "-1"
--                                (no traffic share for this step).
--   matches                      Higress canaries test one request header: a single header
--                                condition becomes canary-by-header with canary-by-header-value
--                                (Exact) or canary-by-header-pattern (RegularExpression).
--                                Conditions on the same header ORed across several matches become
--                                one pattern alternation, anchored for exact values. Anything else
--                                (two different headers, a header ANDed with another one) cannot
--                                be expressed and raises an error rather than routing the wrong
--                                requests.
--   requestHeaderModifier        set -> higress.io/request-header-control-update, add ->
--                                request-header-control-add (one "name value" line per header),
--                                remove -> request-header-control-remove (comma-separated). They
--                                are merged with header control the canary Ingress already has: a
--                                line for the same header is replaced, a removed name is listed
--                                once. A canary Ingress only receives canary traffic, so they
--                                touch canary requests only.
-- Ignored: path matches (the paths are the Ingress's own rules) and queryParams (Higress canaries
-- have no query rule).

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

-- Merges "name value" lines into a header-control annotation, replacing lines for the same name.
local function mergeLines(key, entries)
  if #entries == 0 then return end
  local lines = {}
  for line in string.gmatch(annotations[key] or "", "[^\n]+") do table.insert(lines, line) end
  for _, e in ipairs(entries) do
    local replaced = false
    for i, line in ipairs(lines) do
      local name = string.match(line, "^%s*(%S+)")
      if name ~= nil and string.lower(name) == string.lower(e.name) then
        lines[i] = e.name .. " " .. e.value
        replaced = true
      end
    end
    if not replaced then table.insert(lines, e.name .. " " .. e.value) end
  end
  annotations[key] = table.concat(lines, "\n")
end

local rhm = obj.requestHeaderModifier
if rhm ~= nil then
  mergeLines(PREFIX .. "request-header-control-update", rhm.set or {})
  mergeLines(PREFIX .. "request-header-control-add", rhm.add or {})
  if rhm.remove ~= nil and #rhm.remove > 0 then
    local key = PREFIX .. "request-header-control-remove"
    local names, seen = {}, {}
    for name in string.gmatch(annotations[key] or "", "[^,]+") do
      name = string.match(name, "^%s*(.-)%s*$")
      if name ~= "" and not seen[string.lower(name)] then
        table.insert(names, name)
        seen[string.lower(name)] = true
      end
    end
    for _, name in ipairs(rhm.remove) do
      if not seen[string.lower(name)] then
        table.insert(names, name)
        seen[string.lower(name)] = true
      end
    end
    annotations[key] = table.concat(names, ",")
  end
end

return annotations
