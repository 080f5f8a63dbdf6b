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
--                                (comma-separated), merged with header control the canary Ingress
--                                already has: a line for the same header is replaced, a removed
--                                name is listed once. A canary Ingress only receives canary
--                                traffic, so they touch canary requests only.
-- Ignored: path matches (the paths are the Ingress's own rules).

local PREFIX = "nginx.ingress.kubernetes.io/"
local MSE = "mse.ingress.kubernetes.io/"

local annotations = {}
-- MSE reads canary annotations under either prefix, so stale ones are dropped under both.
local function isManaged(k)
  for _, p in ipairs({PREFIX, MSE}) do
    if string.sub(k, 1, string.len(p .. "canary-by-")) == p .. "canary-by-" or k == p .. "canary-weight" then
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
  local headers = m.headers or {}
  local params = m.queryParams or {}
  if #headers > 0 and #params > 0 then
    error("MSE canaries cannot AND a header with a query parameter")
  end
  if #headers > 0 then table.insert(groups, headers) end
  for _, q in ipairs(params) do table.insert(queries, q) end
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
  annotations[PREFIX .. "canary-by-header-value"] = h.value
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
  mergeLines(MSE .. "request-header-control-update", rhm.set or {})
  mergeLines(MSE .. "request-header-control-add", rhm.add or {})
  if rhm.remove ~= nil and #rhm.remove > 0 then
    local key = MSE .. "request-header-control-remove"
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
