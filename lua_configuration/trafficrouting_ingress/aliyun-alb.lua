-- Alibaba Cloud ALB Ingress canary annotations for the canary Ingress (alb.ingress.kubernetes.io/).
--
-- Returns the canary Ingress's annotations with the canary ones rewritten for this step: earlier
-- canary-by-* and canary-weight annotations are dropped, "canary" is "true", and:
--   order                        The ALB evaluates rules by alb.ingress.kubernetes.io/order (1-1000,
--                                default 10, lower first; ties by namespace/name, so "web" would
--                                come before "web-canary" and the canary rule would never be
--                                reached). On the first run the annotations are a copy of the
--                                stable Ingress's (Kruise's buildCanaryIngress), so the canary gets
--                                the stable order minus one; later runs (canary already "true")
--                                keep it, so chained steps do not move it again. A stable order of
--                                1 leaves no room and raises an error.
--   matches                      Kruise: matches take precedence over traffic, so a step with
--                                matches writes no weight. ALB canaries test one condition: one
--                                Exact header becomes canary-by-header + canary-by-header-value.
--                                Anything else (several matches, several headers, a regex, a path
--                                or a query parameter) cannot be expressed by the canary
--                                annotations and raises an error. canary-by-cookie is not written:
--                                the Rollout API has no cookie match, and the upstream script's
--                                convention (a header named "canary-by-cookie" naming the cookie)
--                                would send requests the step does not select to the canary.
--   weight                       canary-weight = weight ("0" to "100") when the step has no
--                                matches; "-1" (no traffic in this step) writes none.
--   requestHeaderModifier        not expressible with canary annotations: raises an error.

local PREFIX = "alb.ingress.kubernetes.io/"
local MANAGED = {
  ["canary-by-header"] = true,
  ["canary-by-header-value"] = true,
  ["canary-by-header-pattern"] = true,
  ["canary-by-cookie"] = true,
  ["canary-weight"] = true,
}

local previous = obj.annotations or {}
local annotations = {}
for k, v in pairs(previous) do
  if not (string.sub(k, 1, #PREFIX) == PREFIX and MANAGED[string.sub(k, #PREFIX + 1)]) then
    annotations[k] = v
  end
end

if previous[PREFIX .. "canary"] ~= "true" then
  local stableOrder = 10
  if previous[PREFIX .. "order"] ~= nil then
    stableOrder = tonumber(previous[PREFIX .. "order"])
    if stableOrder == nil or stableOrder ~= math.floor(stableOrder) then
      error(
        "the stable Ingress's "
          .. PREFIX
          .. "order is not an integer: "
          .. previous[PREFIX .. "order"]
      )
    end
  end
  if stableOrder <= 1 then
    error(
      "the stable Ingress has "
        .. PREFIX
        .. "order "
        .. stableOrder
        .. ": the canary rule cannot be ordered before it (raise the stable order)"
    )
  end
  annotations[PREFIX .. "order"] = string.format("%d", stableOrder - 1)
end
annotations[PREFIX .. "canary"] = "true"

local rhm = obj.requestHeaderModifier
if rhm ~= nil and (#(rhm.set or {}) > 0 or #(rhm.add or {}) > 0 or #(rhm.remove or {}) > 0) then
  error("ALB canary annotations cannot modify request headers")
end

local matches = obj.matches or {}
if #matches > 0 then
  if #matches > 1 then
    error(
      "ALB canary annotations test one header or cookie; "
        .. #matches
        .. " ORed matches cannot be expressed"
    )
  end
  local m = matches[1]
  if m.path ~= nil then
    error(
      "ALB canary annotations cannot add a path condition (the paths are the Ingress's own rules)"
    )
  end
  if m.queryParams ~= nil and #m.queryParams > 0 then
    error("ALB canary annotations cannot match query parameters")
  end
  local headers = m.headers or {}
  if #headers ~= 1 then
    error(
      "ALB canary annotations test exactly one header or cookie; this match has "
        .. #headers
        .. " headers"
    )
  end
  local h = headers[1]
  if h.type ~= nil and h.type ~= "Exact" then
    error("ALB canary annotations only match exact header values, not " .. tostring(h.type))
  end
  annotations[PREFIX .. "canary-by-header"] = h.name
  annotations[PREFIX .. "canary-by-header-value"] = h.value
elseif obj.weight ~= nil and obj.weight ~= "-1" then
  annotations[PREFIX .. "canary-weight"] = obj.weight
end

return annotations
