-- AWS Load Balancer Controller annotations for the canary Ingress (alb.ingress.kubernetes.io/).
--
-- AWS has no canary Ingress: the canary Ingress Kruise builds (the stable Ingress's paths with
-- the backend renamed to <stable>-canary) becomes listener rules of its own. For them to take
-- the stable host's traffic, and to split it, the stable Ingress must
--   * join an IngressGroup (alb.ingress.kubernetes.io/group.name; the canary Ingress copies it),
--     else the canary Ingress gets a load balancer of its own, and
--   * route through an action: backend {name: <stable>, port: {name: use-annotation}} with
--     alb.ingress.kubernetes.io/actions.<stable> forwarding to the stable service. The canary
--     Ingress's backend then reads actions.<stable>-canary (the AWS controller reads actions only
--     for use-annotation ports), which this script writes.
-- Either missing raises an error. The canary service is <stable>-canary (Kruise's naming); the
-- stable target group's port comes from actions.<stable>.
--
-- Returns the canary Ingress's annotations with:
--   group.order                  The rules of an IngressGroup are ordered by group.order
--                                (-1000..1000, default 0), then namespace/name, so the canary
--                                rules must come first: on the first run (no actions.<canary>
--                                yet; the annotations are a copy of the stable Ingress's) the
--                                canary gets the stable order minus one; later runs keep it, so
--                                chained steps do not move it.
--   actions.<canary>             weight (no matches): forward to the stable target group with
--                                weight 100 - weight and the canary's with weight; with matches
--                                (Kruise: matches take precedence over traffic) everything the
--                                conditions select goes to the canary. "-1" with no matches
--                                keeps the previous action and conditions.
--   conditions.<canary>          the step's matches, ANDed within the one canary rule: an Exact
--                                header becomes an http-header condition, an Exact query
--                                parameter a query-string condition. Several matches are ORed
--                                only when each is one header on the same name (one condition
--                                with several values) or one query parameter (one condition with
--                                several key/value pairs). ALB compares header values and query
--                                strings case-insensitively and reads * and ? as wildcards, so a
--                                value containing * or ? raises an error.
-- Errors for what one ALB rule cannot express: other OR combinations, regular expressions,
-- path matches (a path-pattern condition is ORed with the rule's own path, widening it), and
-- requestHeaderModifier (listener rules cannot modify request headers).
-- Known limit: all canary rules come before all of the stable Ingress's rules (the controller
-- sorts paths by length only within one Ingress), so a canary "/" rule also takes requests for a
-- longer path the stable Ingress sends to another service. Keep other services' paths in another
-- Ingress of the group, with a group.order below the canary's.

local PREFIX = "alb.ingress.kubernetes.io/"

local canary = obj.canaryService
local stable = string.match(canary or "", "^(.+)%-canary$")
if stable == nil then
  error(
    "the canary service "
      .. tostring(canary)
      .. " is not <stable>-canary: the stable action cannot be found"
  )
end
local ACTION = PREFIX .. "actions." .. canary
local CONDITIONS = PREFIX .. "conditions." .. canary

-- A member of a decoded JSON object; the AWS controller's JSON decoding ignores case.
local function member(t, name)
  if type(t) ~= "table" then return nil end
  if t[name] ~= nil then return t[name] end
  local wanted = string.lower(name)
  for k, v in pairs(t) do
    if type(k) == "string" and string.lower(k) == wanted then return v end
  end
  return nil
end

local previous = obj.annotations or {}
local annotations = {}
for k, v in pairs(previous) do
  annotations[k] = v
end

if previous[PREFIX .. "group.name"] == nil or previous[PREFIX .. "group.name"] == "" then
  error(
    "the stable Ingress has no "
      .. PREFIX
      .. "group.name: the canary Ingress would get a load balancer of its own"
  )
end

local stableActionText = previous[PREFIX .. "actions." .. stable]
if stableActionText == nil then
  error(
    "the stable Ingress must route "
      .. stable
      .. " through "
      .. PREFIX
      .. "actions."
      .. stable
      .. " (backend port name use-annotation) so that the canary Ingress can split traffic"
  )
end
local stablePort = nil
local stableAction = json.decode(stableActionText)
for _, group in ipairs(member(member(stableAction, "forwardConfig"), "targetGroups") or {}) do
  if member(group, "serviceName") == stable then stablePort = member(group, "servicePort") end
end
if stablePort == nil then
  error(
    PREFIX
      .. "actions."
      .. stable
      .. " must forward to the service "
      .. stable
      .. " (forwardConfig.targetGroups with serviceName and servicePort)"
  )
end

if previous[ACTION] == nil then
  local stableOrder = 0
  if previous[PREFIX .. "group.order"] ~= nil then
    stableOrder = tonumber(previous[PREFIX .. "group.order"])
    if stableOrder == nil or stableOrder ~= math.floor(stableOrder) then
      error(
        "the stable Ingress's "
          .. PREFIX
          .. "group.order is not an integer: "
          .. previous[PREFIX .. "group.order"]
      )
    end
  end
  if stableOrder <= -1000 then
    error("the stable Ingress has group.order -1000: the canary rules cannot be ordered before it")
  end
  annotations[PREFIX .. "group.order"] = string.format("%d", stableOrder - 1)
end

local rhm = obj.requestHeaderModifier
if rhm ~= nil and (#(rhm.set or {}) > 0 or #(rhm.add or {}) > 0 or #(rhm.remove or {}) > 0) then
  error("AWS ALB listener rules cannot modify request headers")
end

local function literal(value, what)
  if string.find(value, "[%*%?]") then
    error("AWS ALB reads * and ? in " .. what .. " as wildcards: " .. value)
  end
  return value
end

local function exact(condition, what)
  if condition.type ~= nil and condition.type ~= "Exact" then
    error("AWS ALB " .. what .. " conditions cannot match " .. tostring(condition.type))
  end
end

local function headerCondition(name, values)
  return { field = "http-header", httpHeaderConfig = { httpHeaderName = name, values = values } }
end

local function queryCondition(pairs)
  return { field = "query-string", queryStringConfig = { values = pairs } }
end

local matches = obj.matches or {}
for _, m in ipairs(matches) do
  if m.path ~= nil then
    error("AWS ALB cannot add a path condition: it would be ORed with the rule's own path")
  end
end

local conditions = {}
if #matches == 1 then
  for _, h in ipairs(matches[1].headers or {}) do
    exact(h, "header")
    table.insert(conditions, headerCondition(h.name, { literal(h.value, "header values") }))
  end
  for _, q in ipairs(matches[1].queryParams or {}) do
    exact(q, "query")
    table.insert(
      conditions,
      queryCondition({
        { key = literal(q.name, "query keys"), value = literal(q.value, "query values") },
      })
    )
  end
elseif #matches > 1 then
  local headerName, values, queryPairs = nil, {}, {}
  for _, m in ipairs(matches) do
    local headers, params = m.headers or {}, m.queryParams or {}
    if #headers + #params ~= 1 then
      error("AWS ALB can OR matches only when each is one header or one query parameter")
    end
    if #headers == 1 then
      local h = headers[1]
      exact(h, "header")
      if headerName ~= nil and string.lower(headerName) ~= string.lower(h.name) then
        error("AWS ALB can OR header matches only on the same header")
      end
      headerName = h.name
      table.insert(values, literal(h.value, "header values"))
    else
      local q = params[1]
      exact(q, "query")
      table.insert(
        queryPairs,
        { key = literal(q.name, "query keys"), value = literal(q.value, "query values") }
      )
    end
  end
  if headerName ~= nil and #queryPairs > 0 then
    error("AWS ALB cannot OR a header match with a query match")
  end
  if headerName ~= nil then
    table.insert(conditions, headerCondition(headerName, values))
  else
    table.insert(conditions, queryCondition(queryPairs))
  end
end

if #matches > 0 then
  if #conditions == 0 then
    error("a match without headers or query parameters would send every request to the canary")
  end
  annotations[CONDITIONS] = json.encode(conditions)
  annotations[ACTION] = json.encode({
    type = "forward",
    forwardConfig = { targetGroups = { { serviceName = canary, servicePort = stablePort } } },
  })
elseif obj.weight ~= "-1" or previous[ACTION] == nil then
  local weight = tonumber(obj.weight) or 0
  if weight < 0 then weight = 0 end
  if weight > 100 then weight = 100 end
  annotations[CONDITIONS] = nil
  annotations[ACTION] = json.encode({
    type = "forward",
    forwardConfig = {
      targetGroups = {
        { serviceName = stable, servicePort = stablePort, weight = 100 - weight },
        { serviceName = canary, servicePort = stablePort, weight = weight },
      },
    },
  })
end

return annotations
