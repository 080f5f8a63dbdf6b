//! Gloo Edge VirtualService (`gateway.solo.io/v1`): how the gateway routes an HTTP request
//! through `spec.virtualHost.routes`.
//!
//! Sources (solo-io/gloo at 8d57572, read, not copied):
//! - `projects/gateway/api/v1/virtual_service.proto`: "If the request matches more than one
//!   route in the list, the first route matched will be selected."; `projects/gateway/pkg/
//!   translator/converter.go`: a route without matchers gets the default matcher (prefix `/`).
//! - `projects/gloo/pkg/translator/route_config.go`: `setEnvoyPathMatcher` (`prefix` is a
//!   plain string prefix for VirtualServices, `exact`, `regex` as Envoy's full-match
//!   `safe_regex`), `envoyHeaderMatcher`/`envoyQueryMatcher` (an empty `value` checks
//!   presence, `regex: true` makes `value` a regex, `invertMatch` inverts), and
//!   `setWeightedClusters` (a missing weight is 0; the total weight is the sum of the weights, so
//!   shares are proportional; a total below 1 is a route error).
//! - Envoy's `HeaderMatcher.invert_match`: a missing header does not match an inverted value
//!   matcher (only an inverted presence match accepts it).
//! - Header manipulation (`options.headerManipulation`: `requestHeadersToAdd` with
//!   `{header: {key, value}, append}`, `requestHeadersToRemove`) on the route and on a
//!   weighted destination.
//!
//! - `matchers.proto` (`Matcher.methods`: "HTTP Method/Verb(s) to match on. If none specified,
//!   the matcher will ignore the HTTP Method"; `connectMatcher` for CONNECT requests) and
//!   `route_config.go` `GlooMatcherToEnvoyMatcher`: the methods become one `:method` header
//!   matcher, the regex of the methods joined by `|` (Envoy `safe_regex`: a full match).
//!
//! Backends: `upstream: {name}` (discovered Kubernetes upstreams are named
//! `<namespace>-<service>-<port>`), `kube: {ref: {name}, port}`; `subset.values` becomes the
//! backend's subset (`key=value,…`). Not modelled: `upstreamGroup` and `delegateAction` (other
//! objects: the request counts as not routed), virtual-host options, domains.

use super::SmolStr;
use super::matching::{WholeValueRegex, full_match, re2_problem, sample_match};
use super::{
    Backend, ConfigProblem, Distribution, GatewayConfig, ProblemKind, Request, Routed, RoutingModel,
};
use crate::script::ScriptKind;
use crate::value::JsonValue;
use std::collections::BTreeMap;

pub struct GlooVirtualService;

fn routes(config: &GatewayConfig) -> &[JsonValue] {
    match config {
        GatewayConfig::Resource(object) => object
            .at(&["spec", "virtualHost", "routes"])
            .and_then(JsonValue::as_array)
            .unwrap_or_default(),
        GatewayConfig::Ingress { .. } => &[],
    }
}

fn matchers(route: &JsonValue) -> &[JsonValue] {
    route
        .get("matchers")
        .and_then(JsonValue::as_array)
        .unwrap_or_default()
}

fn text<'a>(value: &'a JsonValue, key: &str) -> Option<&'a str> {
    value.get(key).and_then(JsonValue::as_str)
}

fn flag(value: &JsonValue, key: &str) -> bool {
    value.get(key).and_then(JsonValue::as_bool).unwrap_or(false)
}

/// A header or query matcher, read once per configuration (see [`route_table`]).
struct ValueMatcher {
    name: String,
    wanted: String,
    invert: bool,
    /// The value as a regex, when `regex` is set.
    regex: Option<WholeValueRegex>,
}

impl ValueMatcher {
    fn of(matcher: &JsonValue) -> Self {
        ValueMatcher {
            name: text(matcher, "name").unwrap_or("").to_owned(),
            wanted: text(matcher, "value").unwrap_or("").to_owned(),
            invert: flag(matcher, "invertMatch"),
            regex: flag(matcher, "regex")
                .then(|| WholeValueRegex::new(text(matcher, "value").unwrap_or(""))),
        }
    }

    /// Against the request's value (`None`: absent).
    fn matches(&self, actual: Option<&str>) -> bool {
        let Some(actual) = actual else {
            // Absent: only an inverted presence check holds.
            return self.invert && self.wanted.is_empty();
        };
        let matched = if self.wanted.is_empty() {
            true
        } else if let Some(regex) = &self.regex {
            regex.is_match(actual)
        } else {
            actual == self.wanted
        };
        matched != self.invert
    }
}

/// How a matcher tests the path.
enum PathMatch {
    Exact(String),
    Regex(WholeValueRegex),
    Prefix(String),
    /// `connectMatcher`: CONNECT requests (any path), Envoy's `ConnectMatcher`.
    Connect,
}

/// The `:method` regex Gloo makes of a matcher's `methods` (none: any method).
fn methods_regex(matcher: &JsonValue) -> Option<String> {
    let methods: Vec<&str> = matcher
        .get("methods")
        .and_then(JsonValue::as_array)
        .unwrap_or_default()
        .iter()
        .filter_map(JsonValue::as_str)
        .collect();
    (!methods.is_empty()).then(|| methods.join("|"))
}

/// One matcher, read once per configuration.
struct Matcher {
    /// `caseSensitive` (default true, Envoy's RouteMatch.case_sensitive).
    sensitive: bool,
    path: PathMatch,
    /// [`methods_regex`].
    methods: Option<WholeValueRegex>,
    headers: Vec<ValueMatcher>,
    query: Vec<ValueMatcher>,
}

impl Matcher {
    fn of(matcher: &JsonValue) -> Self {
        let path = if let Some(exact) = text(matcher, "exact") {
            PathMatch::Exact(exact.to_owned())
        } else if let Some(regex) = text(matcher, "regex") {
            PathMatch::Regex(WholeValueRegex::new(regex))
        } else if matcher.get("connectMatcher").is_some() {
            PathMatch::Connect
        } else {
            PathMatch::Prefix(text(matcher, "prefix").unwrap_or("/").to_owned())
        };
        let list = |key: &str| {
            matcher
                .get(key)
                .and_then(JsonValue::as_array)
                .unwrap_or_default()
                .iter()
                .map(ValueMatcher::of)
                .collect()
        };
        Matcher {
            sensitive: matcher
                .get("caseSensitive")
                .and_then(JsonValue::as_bool)
                .unwrap_or(true),
            path,
            methods: methods_regex(matcher).map(WholeValueRegex::new),
            headers: list("headers"),
            query: list("queryParameters"),
        }
    }

    fn applies(&self, request: &Request) -> bool {
        // Folded only when the case is ignored (no copy per comparison otherwise).
        let path_ok = match &self.path {
            PathMatch::Exact(exact) if self.sensitive => request.path == *exact,
            PathMatch::Exact(exact) => request.path.to_lowercase() == exact.to_lowercase(),
            PathMatch::Regex(regex) => regex.is_match(&request.path),
            PathMatch::Prefix(prefix) if self.sensitive => {
                request.path.starts_with(prefix.as_str())
            }
            PathMatch::Prefix(prefix) => request
                .path
                .to_lowercase()
                .starts_with(&prefix.to_lowercase()),
            PathMatch::Connect => request.method == "CONNECT",
        };
        path_ok
            && self
                .methods
                .as_ref()
                .is_none_or(|methods| methods.is_match(&request.method))
            && self
                .headers
                .iter()
                .all(|h| h.matches(super::header_value(request, &h.name)))
            && self
                .query
                .iter()
                .all(|q| q.matches(request.query.get(&q.name)))
    }
}

/// A route as routing keeps it: its matchers (none: every path under `/`) and where it sends
/// a request (the same for every request it takes).
struct TableRoute {
    matchers: Vec<Matcher>,
    routed: Routed,
}

fn route_table(config: &GatewayConfig) -> Vec<TableRoute> {
    routes(config)
        .iter()
        .enumerate()
        .map(|(index, route)| TableRoute {
            matchers: matchers(route).iter().map(Matcher::of).collect(),
            routed: distribution(route).via(format!("spec.virtualHost.routes[{index}]")),
        })
        .collect()
}

fn backend_of(destination: &JsonValue) -> Option<Backend> {
    let (service, port) = if let Some(upstream) = destination.get("upstream") {
        (text(upstream, "name")?.to_owned(), None)
    } else if let Some(kube) = destination.get("kube") {
        (
            kube.get("ref").and_then(|r| text(r, "name"))?.to_owned(),
            kube.get("port")
                .and_then(JsonValue::as_f64)
                .map(|p| p.to_string()),
        )
    } else {
        return None;
    };
    let subset = destination
        .at(&["subset", "values"])
        .and_then(JsonValue::as_object)
        .map(|values| {
            values
                .iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect::<Vec<_>>()
                .join(",")
        });
    Some(Backend {
        service: service.into(),
        subset: subset.map(SmolStr::from),
        port: port.map(SmolStr::from),
    })
}

/// The request header operations of an `options` object.
fn header_operations(options: Option<&JsonValue>) -> BTreeMap<String, Option<String>> {
    let mut changes = BTreeMap::new();
    let Some(manipulation) = options.and_then(|o| o.get("headerManipulation")) else {
        return changes;
    };
    for entry in manipulation
        .get("requestHeadersToAdd")
        .and_then(JsonValue::as_array)
        .unwrap_or_default()
    {
        if let (Some(key), Some(value)) = (
            entry.get("header").and_then(|h| text(h, "key")),
            entry.get("header").and_then(|h| text(h, "value")),
        ) {
            changes.insert(key.to_ascii_lowercase(), Some(value.to_owned()));
        }
    }
    for name in manipulation
        .get("requestHeadersToRemove")
        .and_then(JsonValue::as_array)
        .unwrap_or_default()
    {
        if let Some(name) = name.as_str() {
            changes.insert(name.to_ascii_lowercase(), None);
        }
    }
    changes
}

fn distribution(route: &JsonValue) -> Routed {
    let route_headers = header_operations(route.get("options"));
    let action = route.get("routeAction");
    let mut weighted: Vec<(Backend, f64, BTreeMap<String, Option<String>>)> = Vec::new();
    if let Some(single) = action.and_then(|a| a.get("single")) {
        match backend_of(single) {
            Some(backend) => weighted.push((backend, 1.0, BTreeMap::new())),
            None => return Routed::NoRoute,
        }
    } else if let Some(multi) = action.and_then(|a| a.get("multi")) {
        for destination in multi
            .get("destinations")
            .and_then(JsonValue::as_array)
            .unwrap_or_default()
        {
            let Some(backend) = destination.get("destination").and_then(backend_of) else {
                continue;
            };
            let weight = destination
                .get("weight")
                .and_then(JsonValue::as_f64)
                .unwrap_or(0.0);
            weighted.push((
                backend,
                weight,
                header_operations(destination.get("options")),
            ));
        }
    } else {
        // redirectAction, directResponseAction, delegateAction, upstreamGroup.
        return Routed::NoRoute;
    }
    let weights: Vec<(Backend, f64)> = weighted.iter().map(|(b, w, _)| (b.clone(), *w)).collect();
    let Some(mut shares) = Distribution::from_weights(&weights) else {
        return Routed::NoRoute;
    };
    for (backend, weight, own) in weighted {
        if weight <= 0.0 {
            continue;
        }
        let mut changes = route_headers.clone();
        changes.extend(own);
        if !changes.is_empty() {
            shares.header_changes.insert(backend, changes);
        }
    }
    Routed::to(shares)
}

/// A value a header/query matcher accepts, for probes.
fn sample(matcher: &JsonValue) -> Option<String> {
    let value = text(matcher, "value").unwrap_or("");
    if value.is_empty() {
        Some("1".to_owned())
    } else if flag(matcher, "regex") {
        sample_match(value)
    } else {
        Some(value.to_owned())
    }
}

/// Methods probes are sent with.
const METHODS: [&str; 7] = ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"];

fn probes_for(matcher: &JsonValue) -> Vec<Request> {
    let mut request = Request::get("/");
    if let Some(exact) = text(matcher, "exact") {
        request.path = exact.into();
    } else if let Some(regex) = text(matcher, "regex") {
        if let Some(path) = sample_match(regex) {
            request.path = path.into();
        }
    } else if let Some(prefix) = text(matcher, "prefix") {
        request.path = prefix.into();
    }
    let headers = matcher
        .get("headers")
        .and_then(JsonValue::as_array)
        .unwrap_or_default();
    let params = matcher
        .get("queryParameters")
        .and_then(JsonValue::as_array)
        .unwrap_or_default();
    for h in headers.iter().filter(|h| !flag(h, "invertMatch")) {
        if let (Some(name), Some(value)) = (text(h, "name"), sample(h)) {
            request.headers.insert(name.to_ascii_lowercase(), value);
        }
    }
    for q in params.iter().filter(|q| !flag(q, "invertMatch")) {
        if let (Some(name), Some(value)) = (text(q, "name"), sample(q)) {
            request.query.insert(name.to_owned(), value);
        }
    }
    // A listed method, and (below) one the methods do not take.
    let methods = methods_regex(matcher);
    if let Some(methods) = &methods
        && let Some(method) = METHODS
            .iter()
            .map(|m| m.to_string())
            .find(|m| full_match(methods, m))
            .or_else(|| sample_match(methods))
    {
        request.method = method.into();
    }
    if matcher.get("connectMatcher").is_some() {
        request.method = "CONNECT".into();
    }
    let mut out = vec![request.clone()];
    if let Some(methods) = &methods
        && let Some(other) = METHODS.iter().find(|m| !full_match(methods, m))
    {
        let mut miss = request.clone();
        miss.method = (*other).into();
        out.push(miss);
    }
    let mut with_path = |path: String| {
        let mut variant = request.clone();
        variant.path = path.into();
        out.push(variant);
    };
    if let Some(prefix) = text(matcher, "prefix") {
        with_path(format!("{}/x", prefix.trim_end_matches('/')));
        with_path(format!("{prefix}x"));
    }
    if text(matcher, "exact").is_some() || text(matcher, "regex").is_some() {
        with_path("/__no_such_path".to_owned());
    }
    for h in headers {
        let name = text(h, "name").unwrap_or("").to_ascii_lowercase();
        let mut miss = request.clone();
        miss.headers.remove(&name);
        out.push(miss);
    }
    for q in params {
        let mut miss = request.clone();
        miss.query.remove(text(q, "name").unwrap_or(""));
        out.push(miss);
    }
    out
}

/// For a discovered upstream name `<namespace>-<service>-<port>`: whether `service` is its
/// service (Gloo discovery's naming; ambiguous when another service's name ends in
/// `-<service>`, which the library script's comment also notes).
fn upstream_names_service(name: &str, service: &str) -> bool {
    let Some((rest, port)) = name.rsplit_once('-') else {
        return false;
    };
    !port.is_empty()
        && port.bytes().all(|b| b.is_ascii_digit())
        && rest
            .strip_suffix(service)
            .is_some_and(|ns| ns.len() > 1 && ns.ends_with('-'))
}

impl RoutingModel for GlooVirtualService {
    fn name(&self) -> &'static str {
        "Gloo Edge VirtualService (gateway.solo.io/v1)"
    }

    fn applies_to(&self, kind: &ScriptKind) -> bool {
        matches!(kind, ScriptKind::Custom { group, kind }
            if group == "gateway.solo.io" && kind == "VirtualService")
    }

    /// The VirtualService's namespace is not read: Gloo's VirtualServices usually live in its
    /// own namespace (`gloo-system`, as every Gloo case of the library has them) apart from
    /// the Services they route to, and each destination names its Service's namespace itself
    /// (a `kube` ref's `namespace`, a discovered upstream's `<namespace>-` prefix), so the
    /// resource's namespace says nothing of which one is the Rollout's. A Service of the
    /// stable name in any namespace counts as the stable one (a known gap,
    /// docs/ROUTING_MODELS.md).
    fn is_service(&self, backend: &Backend, service: &str, _namespace: Option<&str>) -> bool {
        backend.service == service || upstream_names_service(&backend.service, service)
    }

    fn config_problems(&self, config: &GatewayConfig) -> Vec<ConfigProblem> {
        let mut problems = Vec::new();
        for (r, route) in routes(config).iter().enumerate() {
            for (m, matcher) in matchers(route).iter().enumerate() {
                let base = format!("spec.virtualHost.routes[{r}].matchers[{m}]");
                for (key, regex) in [
                    ("regex", text(matcher, "regex").map(str::to_owned)),
                    ("methods", methods_regex(matcher)),
                ] {
                    if let Some(problem) = regex.as_deref().and_then(re2_problem) {
                        problems.push(ConfigProblem {
                            path: format!("{base}.{key}"),
                            kind: ProblemKind::Rejected,
                            message: problem,
                        });
                    }
                }
                for key in ["headers", "queryParameters"] {
                    for (i, entry) in matcher
                        .get(key)
                        .and_then(JsonValue::as_array)
                        .unwrap_or_default()
                        .iter()
                        .enumerate()
                    {
                        if flag(entry, "regex")
                            && let Some(problem) = text(entry, "value")
                                .filter(|v| !v.is_empty())
                                .and_then(re2_problem)
                        {
                            problems.push(ConfigProblem {
                                path: format!("{base}.{key}[{i}].value"),
                                kind: ProblemKind::Rejected,
                                message: problem,
                            });
                        }
                    }
                }
            }
            if let Some(destinations) = route
                .at(&["routeAction", "multi", "destinations"])
                .and_then(JsonValue::as_array)
            {
                let total: f64 = destinations
                    .iter()
                    .filter_map(|d| d.get("weight").and_then(JsonValue::as_f64))
                    .sum();
                let path = format!("spec.virtualHost.routes[{r}].routeAction.multi");
                if destinations.is_empty() {
                    problems.push(ConfigProblem {
                        path,
                        kind: ProblemKind::Rejected,
                        message: "must specify at least one weighted destination for multi destination routes".to_owned(),
                    });
                } else if total < 1.0 {
                    problems.push(ConfigProblem {
                        path,
                        kind: ProblemKind::Rejected,
                        message: "Weighted Destinations require a total weight that is greater than or equal to 1".to_owned(),
                    });
                }
            }
        }
        problems
    }

    fn route(&self, config: &GatewayConfig, request: &Request) -> Routed {
        // What the routes are is read once per configuration (see `super::memo`).
        let table = super::memo::derived(config, || route_table(config));
        table
            .iter()
            .find(|route| match route.matchers.as_slice() {
                [] => request.path.starts_with('/'),
                list => list.iter().any(|m| m.applies(request)),
            })
            .map_or(Routed::NoRoute, |route| route.routed.clone())
    }

    fn probes(&self, config: &GatewayConfig) -> Vec<Request> {
        let mut probes = vec![Request::get("/"), Request::get("/__no_such_path")];
        for route in routes(config) {
            for matcher in matchers(route) {
                probes.extend(probes_for(matcher));
            }
        }
        probes.sort();
        probes.dedup();
        probes
    }
}

#[cfg(test)]
mod tests;
