//! Kuma MeshHTTPRoute (kuma.io/v1alpha1): rule order by match specificity, Envoy matching of
//! paths, methods, headers and query parameters, weighted backendRefs and request header
//! modifiers.
//!
//! Facts from kumahq/kuma, `pkg/plugins/policies/meshhttproute/`:
//! - `plugin/v1alpha1/listeners.go` `prepareRoutes`: one route per match of each rule, sorted
//!   stably by `api.CompareMatch` (not document order); a catch-all `PathPrefix /` route to the
//!   destination is appended unless a match is exactly that; a match without path matches any
//!   path; a rule without backendRefs goes to the destination service; a missing backendRef
//!   weight counts as 1.
//! - `api/v1alpha1/compare.go` `CompareMatch`: by path (Exact, then PathPrefix, then
//!   RegularExpression, then no path; a longer prefix or regex first), then a method before
//!   none, then more headers first, then more query parameters first (`cmp.Compare(len(b),
//!   len(a))`: "more header matches means a lesser match", lesser sorting first).
//! - `xds/configurer.go` `routePathMatch` (a prefix other than `/` matches the path itself or
//!   the path under it followed by `/`: `/-separated` prefixes), `routeQueryParamsMatch`,
//!   `routeMethodMatch`; `xds/match.go` `routeHeadersMatch` (default type Exact; a second
//!   matcher for the same name is ignored; regexes are Envoy `safe_regex`, whole-value RE2).
//! - `api/v1alpha1/validation.go` `validatePath` (a PathPrefix other than `/` must not end in
//!   `/` and must be absolute; Exact must be absolute), `validateHeaders` (Present/Absent take no
//!   value), `validateQueryParams` (one entry per name).

use std::collections::BTreeMap;

use crate::script::ScriptKind;
use crate::value::JsonValue;

use super::SmolStr;
use super::fields::{int_field, items, port_field, str_field};
use super::matching::{full_match, re2_problem};
use super::probe::{Cond, Literal, ValueCond, probes_for};
use super::{
    Backend, ConfigProblem, Distribution, GatewayConfig, ProblemKind, Request, Routed, RoutingModel,
};

pub struct KumaMeshHttpRoute;

/// One `spec.to[]` entry: the destination and its routes in Kuma's order.
struct Destination<'a> {
    /// The `to[].targetRef` name (probes address it as the host).
    service: String,
    /// Where requests no rule sends elsewhere go: the destination itself.
    default: Backend,
    routes: Vec<Route<'a>>,
    /// The MeshHTTPRoute's own namespace, when it gives one (see [`backend`]).
    namespace: Option<&'a str>,
}

/// One match of one rule (or the implicit catch-all, `rule == None`).
struct Route<'a> {
    matched: Option<&'a JsonValue>,
    rule: Option<&'a JsonValue>,
    at: RouteAt,
}

/// Where a route comes from: `to[t].rules[r].matches[m]`, or the implicit catch-all of
/// `to[t]`.
#[derive(Debug, Clone, Copy)]
enum RouteAt {
    Match { t: usize, r: usize, m: usize },
    CatchAll { t: usize },
}

impl Route<'_> {
    /// Where: `spec.to[0].rules[1].matches[0]`, or `spec.to[0]` for the implicit catch-all
    /// (written only for the route a request takes).
    fn origin(&self) -> String {
        match self.at {
            RouteAt::Match { t, r, m } => format!("spec.to[{t}].rules[{r}].matches[{m}]"),
            RouteAt::CatchAll { t } => format!("spec.to[{t}] (the implicit catch-all)"),
        }
    }
}

fn path_of(matched: Option<&JsonValue>) -> Option<(&str, &str)> {
    let path = matched?.get("path")?;
    Some((
        str_field(path, "type").unwrap_or_default(),
        str_field(path, "value").unwrap_or_default(),
    ))
}

/// `CompareMatch`, as an ordering (less = served first).
fn compare(a: Option<&JsonValue>, b: Option<&JsonValue>) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let rank = |t: &str| match t {
        "Exact" => 0,
        "PathPrefix" => 1,
        "RegularExpression" => 2,
        _ => 3,
    };
    let by_path = match (path_of(a), path_of(b)) {
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
        (Some((ta, va)), Some((tb, vb))) if ta == tb => match ta {
            // "flipped": a longer prefix (or regex) is served first.
            "PathPrefix" | "RegularExpression" => vb.len().cmp(&va.len()),
            _ => Ordering::Equal,
        },
        (Some((ta, _)), Some((tb, _))) => rank(ta).cmp(&rank(tb)),
    };
    let method = |m: Option<&JsonValue>| m.and_then(|m| m.get("method")).is_some();
    let count = |m: Option<&JsonValue>, key: &str| m.map_or(0, |m| items(m, key).len());
    by_path
        .then_with(|| method(b).cmp(&method(a)))
        .then_with(|| count(b, "headers").cmp(&count(a, "headers")))
        .then_with(|| count(b, "queryParams").cmp(&count(a, "queryParams")))
}

fn is_catch_all(matched: &JsonValue) -> bool {
    matches!(matched, JsonValue::Object(m) if m.len() == 1)
        && path_of(Some(matched)) == Some(("PathPrefix", "/"))
}

fn destinations(config: &GatewayConfig) -> Vec<Destination<'_>> {
    let GatewayConfig::Resource(resource) = config else {
        return Vec::new();
    };
    let Some(spec) = resource.get("spec") else {
        return Vec::new();
    };
    // Kuma's order of each destination's routes, sorted once per configuration (see
    // `super::memo`): the check routes every probe through the same configuration.
    let order = super::memo::derived(resource, || route_order(spec));
    let namespace = super::object_namespace(resource);
    items(spec, "to")
        .iter()
        .zip(order.iter())
        .map(|(to, order)| {
            let service = to
                .at(&["targetRef", "name"])
                .and_then(|v| match v {
                    JsonValue::String(s) => Some(s.clone()),
                    _ => None,
                })
                .unwrap_or_default();
            let rules = items(to, "rules");
            let routes = order
                .iter()
                .filter_map(|&at| match at {
                    RouteAt::Match { r, m, .. } => {
                        let rule = rules.get(r)?;
                        Some(Route {
                            matched: Some(items(rule, "matches").get(m)?),
                            rule: Some(rule),
                            at,
                        })
                    }
                    RouteAt::CatchAll { .. } => Some(Route {
                        matched: None,
                        rule: None,
                        at,
                    }),
                })
                .collect();
            let default = to
                .get("targetRef")
                .map(|r| backend(r, namespace))
                .unwrap_or_default();
            Destination {
                service,
                default,
                routes,
                namespace,
            }
        })
        .collect()
}

/// A destination as routing keeps it for a configuration: its routes in Kuma's order, each
/// with where a request it takes goes (the same for every request: made once per
/// configuration, see `super::memo`).
struct TableDestination {
    service: String,
    default_service: SmolStr,
    /// Each route's match (`None`: the implicit catch-all) and where it sends a request.
    routes: Vec<(Option<ReadMatch>, Routed)>,
}

fn route_table(config: &GatewayConfig) -> Vec<TableDestination> {
    destinations(config)
        .iter()
        .map(|d| TableDestination {
            service: d.service.clone(),
            default_service: d.default.service.clone(),
            routes: d
                .routes
                .iter()
                .map(|r| {
                    (
                        r.matched.map(ReadMatch::of),
                        distribution(d, r).via(r.origin()),
                    )
                })
                .collect(),
        })
        .collect()
}

/// Each `spec.to[]` entry's routes in Kuma's order: one per match of each rule, stably sorted
/// by `CompareMatch`, and the implicit catch-all unless a match is exactly that.
fn route_order(spec: &JsonValue) -> Vec<Vec<RouteAt>> {
    items(spec, "to")
        .iter()
        .enumerate()
        .map(|(t, to)| {
            let mut routes: Vec<(Option<&JsonValue>, RouteAt)> = items(to, "rules")
                .iter()
                .enumerate()
                .flat_map(|(r, rule)| {
                    items(rule, "matches")
                        .iter()
                        .enumerate()
                        .map(move |(m, matched)| (Some(matched), RouteAt::Match { t, r, m }))
                })
                .collect();
            // `slices.SortStableFunc(routes, CompareMatch)`.
            routes.sort_by(|a, b| compare(a.0, b.0));
            if !routes.iter().any(|r| r.0.is_some_and(is_catch_all)) {
                routes.push((None, RouteAt::CatchAll { t }));
            }
            routes.into_iter().map(|(_, at)| at).collect()
        })
        .collect()
}

/// Envoy's string match of one header or query value.
fn value_matches(kind: &str, expected: &str, actual: Option<&str>) -> bool {
    match (kind, actual) {
        ("Absent", actual) => actual.is_none(),
        ("Present", actual) => actual.is_some(),
        ("Prefix", Some(a)) => a.starts_with(expected),
        ("RegularExpression", Some(a)) => full_match(expected, a),
        ("Exact" | "", Some(a)) => a == expected,
        _ => false,
    }
}

/// One match as routing reads it, once per configuration (see [`route_table`]): the
/// resource is not walked again for every probe.
struct ReadMatch {
    /// `(type, value)` of `path`.
    path: Option<(String, String)>,
    method: Option<String>,
    /// `(name, type, value)`, the first matcher of each name only (a second matcher for the
    /// same name, in any case for headers, is ignored).
    headers: Vec<(String, String, String)>,
    query: Vec<(String, String, String)>,
}

impl ReadMatch {
    fn of(matched: &JsonValue) -> Self {
        let read = |key: &str, same: fn(&str, &str) -> bool| {
            let mut out: Vec<(String, String, String)> = Vec::new();
            for entry in items(matched, key) {
                let name = str_field(entry, "name").unwrap_or_default();
                if out.iter().any(|(seen, _, _)| same(seen, name)) {
                    continue;
                }
                out.push((
                    name.to_owned(),
                    str_field(entry, "type").unwrap_or("Exact").to_owned(),
                    str_field(entry, "value").unwrap_or_default().to_owned(),
                ));
            }
            out
        };
        ReadMatch {
            path: path_of(Some(matched)).map(|(t, v)| (t.to_owned(), v.to_owned())),
            method: str_field(matched, "method").map(str::to_owned),
            headers: read("headers", |a, b| a.eq_ignore_ascii_case(b)),
            query: read("queryParams", |a, b| a == b),
        }
    }

    fn matches(&self, request: &Request) -> bool {
        let path_ok = match self.path.as_ref().map(|(t, v)| (t.as_str(), v.as_str())) {
            None => true,
            Some(("Exact", v)) => request.path == v,
            Some(("PathPrefix", "/")) => request.path.starts_with('/'),
            Some(("PathPrefix", v)) => {
                let trimmed = v.strip_suffix('/').unwrap_or(v);
                // The path itself, or under it after a `/`.
                request
                    .path
                    .strip_prefix(trimmed)
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
            }
            Some(("RegularExpression", v)) => full_match(v, &request.path),
            Some(_) => false,
        };
        path_ok
            && self.method.as_ref().is_none_or(|m| *m == request.method)
            && self.headers.iter().all(|(name, kind, value)| {
                value_matches(kind, value, super::header_value(request, name))
            })
            && self
                .query
                .iter()
                .all(|(name, kind, value)| value_matches(kind, value, request.query.get(name)))
    }
}

/// A Kubernetes Service named by its Kuma service tag, `<name>_<namespace>_svc[_<port>]`
/// (kumahq/kuma `pkg/plugins/runtime/k8s/util/util.go` `ServiceTag`; Kubernetes names have no
/// `_`): the Service's name, namespace and port. Other names stand as they are.
fn service_and_port(tag: &str) -> (String, Option<&str>, Option<String>) {
    let parts: Vec<&str> = tag.split('_').collect();
    match parts.as_slice() {
        [name, namespace, "svc"] => ((*name).to_owned(), Some(*namespace), None),
        [name, namespace, "svc", port] if port.parse::<u16>().is_ok() => (
            (*name).to_owned(),
            Some(*namespace),
            Some((*port).to_owned()),
        ),
        _ => (tag.to_owned(), None, None),
    }
}

/// A backendRef: `MeshServiceSubset` tags become the subset (`version=v2`, sorted by key).
///
/// A Service of another namespace than the route's own (`own`: its service tag's namespace,
/// or the reference's `namespace` field, kumahq/kuma `api/common/v1alpha1/targetref.go`
/// `TargetRef.Namespace`) is named `<name>.<namespace>`, so that it is not taken for the
/// Service of the same name beside the route. When the route gives no namespace, names stay
/// bare (the check cannot tell then; see `routing::names_service`).
fn backend(reference: &JsonValue, own: Option<&str>) -> Backend {
    let tags: Vec<String> = match reference.get("tags") {
        Some(JsonValue::Object(tags)) => tags
            .iter()
            .filter(|(k, _)| *k != "kuma.io/service")
            .map(|(k, v)| match v {
                JsonValue::String(s) => format!("{k}={s}"),
                other => format!("{k}={}", other.to_canonical_json()),
            })
            .collect(),
        _ => Vec::new(),
    };
    let name = str_field(reference, "name")
        .or_else(|| {
            reference
                .at(&["tags", "kuma.io/service"])
                .and_then(JsonValue::as_str)
        })
        .unwrap_or_default();
    let (service, tag_namespace, tag_port) = service_and_port(name);
    let namespace = str_field(reference, "namespace")
        .filter(|ns| !ns.is_empty())
        .or(tag_namespace);
    let service = match (namespace, own) {
        (Some(ns), Some(own)) if ns != own => format!("{service}.{ns}"),
        _ => service,
    };
    Backend {
        service: service.into(),
        subset: (!tags.is_empty()).then(|| tags.join(",").into()),
        port: port_field(reference, "port").or(tag_port.map(SmolStr::from)),
    }
}

/// `requestHeaderModifier`: set and add give the value (add appends to what the request
/// has; the model records the value the backend sees among others), remove drops.
fn header_changes(rule: &JsonValue) -> BTreeMap<String, Option<String>> {
    let mut changes = BTreeMap::new();
    for filter in items(rule, "filters") {
        if str_field(filter, "type") != Some("RequestHeaderModifier") {
            continue;
        }
        let Some(modifier) = filter.get("requestHeaderModifier") else {
            continue;
        };
        for key in ["set", "add"] {
            for h in items(modifier, key) {
                let name = str_field(h, "name")
                    .unwrap_or_default()
                    .to_ascii_lowercase();
                changes.insert(
                    name,
                    Some(str_field(h, "value").unwrap_or_default().to_owned()),
                );
            }
        }
        for name in items(modifier, "remove") {
            if let JsonValue::String(name) = name {
                changes.insert(name.to_ascii_lowercase(), None);
            }
        }
    }
    changes
}

fn distribution(destination: &Destination, route: &Route) -> Routed {
    let default = route.rule.and_then(|r| r.get("default"));
    let refs = default.map_or(&[][..], |d| items(d, "backendRefs"));
    let weights: Vec<(Backend, f64)> = if refs.is_empty() {
        vec![(destination.default.clone(), 1.0)]
    } else {
        refs.iter()
            .map(|r| {
                (
                    backend(r, destination.namespace),
                    int_field(r, "weight").unwrap_or(1) as f64,
                )
            })
            .collect()
    };
    let Some(mut d) = Distribution::from_weights(&weights) else {
        return Routed::NoRoute;
    };
    let changes = default.map(header_changes).unwrap_or_default();
    if !changes.is_empty() {
        for (b, _) in &d.shares {
            d.header_changes.insert(b.clone(), changes.clone());
        }
    }
    Routed::to(d)
}

fn match_literals(matched: &JsonValue) -> Vec<Literal> {
    let mut out = Vec::new();
    match path_of(Some(matched)) {
        Some(("Exact", v)) => out.push((Cond::PathExact(v.to_owned()), true)),
        Some(("PathPrefix", v)) if v != "/" => {
            out.push((Cond::PathPrefix(v.trim_end_matches('/').to_owned()), true))
        }
        Some(("RegularExpression", v)) => out.push((Cond::PathRegex(v.to_owned()), true)),
        _ => {}
    }
    if let Some(m) = str_field(matched, "method") {
        out.push((Cond::Method(m.to_owned()), true));
    }
    let value = |x: &JsonValue| {
        let v = str_field(x, "value").unwrap_or_default().to_owned();
        match str_field(x, "type").unwrap_or("Exact") {
            "RegularExpression" => (ValueCond::Regex(v), true),
            "Present" => (ValueCond::Present, true),
            "Absent" => (ValueCond::Present, false),
            "Prefix" => (ValueCond::Prefix(v), true),
            _ => (ValueCond::Exact(v), true),
        }
    };
    for h in items(matched, "headers") {
        let (v, holds) = value(h);
        out.push((
            Cond::Header(str_field(h, "name").unwrap_or_default().to_owned(), v),
            holds,
        ));
    }
    for q in items(matched, "queryParams") {
        let (v, holds) = value(q);
        out.push((
            Cond::Query(str_field(q, "name").unwrap_or_default().to_owned(), v),
            holds,
        ));
    }
    out
}

/// `validateHeaderModifier`: at least one of set/add/remove, and each header name once across
/// them.
fn header_modifier_problem(modifier: &JsonValue) -> Option<String> {
    if ["set", "add", "remove"]
        .iter()
        .all(|k| modifier.get(k).is_none())
    {
        return Some("must have at least one defined: set, add, remove".into());
    }
    let mut seen = std::collections::BTreeSet::new();
    let named = items(modifier, "set")
        .iter()
        .chain(items(modifier, "add"))
        .filter_map(|h| str_field(h, "name"))
        .chain(
            items(modifier, "remove")
                .iter()
                .filter_map(JsonValue::as_str),
        );
    for name in named {
        if !seen.insert(name) {
            return Some(format!("duplicate header name {name:?}"));
        }
    }
    None
}

impl RoutingModel for KumaMeshHttpRoute {
    fn name(&self) -> &'static str {
        "Kuma MeshHTTPRoute (kuma.io/v1alpha1)"
    }

    fn applies_to(&self, kind: &ScriptKind) -> bool {
        matches!(kind, ScriptKind::Custom { group, kind } if group == "kuma.io" && kind == "MeshHTTPRoute")
    }

    fn config_problems(&self, config: &GatewayConfig) -> Vec<ConfigProblem> {
        let GatewayConfig::Resource(resource) = config else {
            return Vec::new();
        };
        let Some(spec) = resource.get("spec") else {
            return Vec::new();
        };
        let mut problems = Vec::new();
        let mut rejected = |path: String, message: String| {
            problems.push(ConfigProblem {
                path,
                kind: ProblemKind::Rejected,
                message,
            })
        };
        for (t, to) in items(spec, "to").iter().enumerate() {
            for (r, rule) in items(to, "rules").iter().enumerate() {
                // Paths are written only for a problem (most configurations have none).
                let base = || format!("spec.to[{t}].rules[{r}]");
                for (m, matched) in items(rule, "matches").iter().enumerate() {
                    let at_match = || format!("{}.matches[{m}]", base());
                    if let Some((kind, value)) = path_of(Some(matched)) {
                        let at_value = || format!("{}.path.value", at_match());
                        match kind {
                            "PathPrefix" if value != "/" => {
                                if value.ends_with('/') {
                                    rejected(
                                        at_value(),
                                        format!(
                                            "{value:?} does not need a trailing slash because only a `/`-separated prefix or an entire path is matched"
                                        ),
                                    );
                                }
                                if !value.starts_with('/') {
                                    rejected(
                                        at_value(),
                                        format!("{value:?} must be an absolute path"),
                                    );
                                }
                            }
                            "Exact" if !value.starts_with('/') => {
                                rejected(at_value(), format!("{value:?} must be an absolute path"))
                            }
                            "RegularExpression" => {
                                if let Some(e) = re2_problem(value) {
                                    rejected(at_value(), format!("Envoy refuses it: {e}"));
                                }
                            }
                            _ => {}
                        }
                    }
                    for (h, header) in items(matched, "headers").iter().enumerate() {
                        let kind = str_field(header, "type").unwrap_or("Exact");
                        if matches!(kind, "Present" | "Absent")
                            && !str_field(header, "value").unwrap_or_default().is_empty()
                        {
                            rejected(
                                format!("{}.headers[{h}].value", at_match()),
                                format!("must not be defined for type {kind}"),
                            );
                        }
                    }
                    let mut names = std::collections::BTreeSet::new();
                    for (q, query) in items(matched, "queryParams").iter().enumerate() {
                        let name = str_field(query, "name").unwrap_or_default();
                        if !names.insert(name) {
                            rejected(
                                format!("{}.queryParams[{q}].name", at_match()),
                                format!("multiple entries for name {name}"),
                            );
                        }
                    }
                }
                let refs = rule
                    .get("default")
                    .map_or(&[][..], |d| items(d, "backendRefs"));
                if !refs.is_empty() && refs.iter().all(|r| int_field(r, "weight") == Some(0)) {
                    rejected(
                        format!("{}.default.backendRefs", base()),
                        "every backendRef has weight 0: no request can be served".into(),
                    );
                }
                let filters = rule.get("default").map_or(&[][..], |d| items(d, "filters"));
                for (f, filter) in filters.iter().enumerate() {
                    if let Some(message) = filter
                        .get("requestHeaderModifier")
                        .and_then(header_modifier_problem)
                    {
                        rejected(
                            format!("{}.default.filters[{f}].requestHeaderModifier", base()),
                            message,
                        );
                    }
                }
            }
        }
        problems
    }

    fn route(&self, config: &GatewayConfig, request: &Request) -> Routed {
        // (Empty for a configuration that is no resource: no route.)
        let table = super::memo::derived(config, || route_table(config));
        let label = request
            .host
            .as_deref()
            .map(|h| h.split('.').next().unwrap_or(h));
        // The destination a request is for: the `to` entry named by the host's first label,
        // else the first one (a mesh request is addressed to one service; probes without host
        // use the first).
        let Some(destination) = table
            .iter()
            .find(|d| label.is_some_and(|l| l == d.service || l == d.default_service))
            .or_else(|| table.first())
        else {
            return Routed::NoRoute;
        };
        destination
            .routes
            .iter()
            .find(|(matched, _)| matched.as_ref().is_none_or(|m| m.matches(request)))
            .map_or(Routed::NoRoute, |(_, routed)| routed.clone())
    }

    fn probes(&self, config: &GatewayConfig) -> Vec<Request> {
        let mut out = Vec::new();
        for destination in destinations(config) {
            let conjunctions: Vec<Vec<Literal>> = destination
                .routes
                .iter()
                .filter_map(|r| r.matched)
                .map(match_literals)
                .collect();
            for p in probes_for(conjunctions, Some(&destination.service)) {
                if !out.contains(&p) {
                    out.push(p);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routing::testing::{json, library_case};

    fn config(rules: &str) -> GatewayConfig {
        GatewayConfig::Resource(json(&format!(
            "spec:\n  targetRef: {{kind: Mesh}}\n  to:\n  - targetRef: {{kind: MeshService, name: web}}\n    rules:\n{rules}"
        )))
    }

    fn to(config: &GatewayConfig, request: &Request) -> String {
        KumaMeshHttpRoute.route(config, request).describe()
    }

    /// A service tag or backendRef naming another namespace than the route's is another
    /// Service: it keeps its namespace, so it is not taken for the Rollout's `web`.
    #[test]
    fn a_service_of_another_namespace_keeps_its_namespace() {
        let in_namespace = |namespace: &str| {
            GatewayConfig::Resource(json(&format!(
                "metadata: {{name: web, namespace: {namespace}}}\nspec:\n  targetRef: {{kind: Mesh}}\n  to:\n  - targetRef: {{kind: MeshService, name: web_shop_svc_80}}\n    rules:\n    - matches: [{{path: {{type: PathPrefix, value: /pay}}}}]\n      default: {{backendRefs: [{{kind: MeshService, name: web_payments_svc_80}}]}}\n    - matches: [{{path: {{type: PathPrefix, value: /api}}}}]\n      default: {{backendRefs: [{{kind: MeshService, name: web, namespace: payments, weight: 1}}, {{kind: MeshService, name: web, namespace: shop, weight: 1}}]}}\n"
            )))
        };
        let shop = in_namespace("shop");
        assert_eq!(to(&shop, &Request::get("/pay")), "web.payments:80 100 %");
        assert_eq!(
            to(&shop, &Request::get("/api")),
            "web 50 %, web.payments 50 %"
        );
        assert_eq!(to(&shop, &Request::get("/other")), "web:80 100 %");
        let Routed::To(d) = KumaMeshHttpRoute.route(&shop, &Request::get("/pay")) else {
            panic!("no route")
        };
        assert!(!KumaMeshHttpRoute.is_service(&d.shares[0].0, "web", Some("shop")));
        // In `payments`, the `shop` Service is the other one.
        let payments = in_namespace("payments");
        assert_eq!(to(&payments, &Request::get("/pay")), "web:80 100 %");
        assert_eq!(to(&payments, &Request::get("/other")), "web.shop:80 100 %");
    }

    #[test]
    fn regex_rule_sorts_after_a_prefix_rule() {
        // The canary rule comes first in the document, yet the PathPrefix rule is served first.
        let c = config(
            "    - matches: [{path: {type: RegularExpression, value: '/api/.*'}}]\n      default: {backendRefs: [{kind: MeshService, name: web-canary}]}\n    - matches: [{path: {type: PathPrefix, value: /api}}]\n      default: {backendRefs: [{kind: MeshService, name: web}]}\n",
        );
        assert_eq!(to(&c, &Request::get("/api/x")), "web 100 %");
    }

    #[test]
    fn longer_prefix_and_exact_first_then_more_headers_last() {
        let c = config(
            "    - matches: [{path: {type: PathPrefix, value: /a}}]\n      default: {backendRefs: [{kind: MeshService, name: short}]}\n    - matches: [{path: {type: PathPrefix, value: /a/b}}]\n      default: {backendRefs: [{kind: MeshService, name: long}]}\n    - matches: [{path: {type: Exact, value: /a/b/c}, headers: [{name: x, value: '1'}]}]\n      default: {backendRefs: [{kind: MeshService, name: exact}]}\n",
        );
        assert_eq!(to(&c, &Request::get("/a/b/x")), "long 100 %");
        assert_eq!(
            to(&c, &Request::get("/a/bc")),
            "short 100 %",
            "prefixes are /-separated"
        );
        let mut r = Request::get("/a/b/c");
        r.headers.insert("x", "1");
        assert_eq!(to(&c, &r), "exact 100 %");
        // Same path: the match with more headers is served first, whatever the document
        // order.
        let c = config(
            "    - matches: [{path: {type: PathPrefix, value: /}}]\n    - matches: [{path: {type: PathPrefix, value: /}, headers: [{name: x-canary, value: '1'}]}]\n      default: {backendRefs: [{kind: MeshService, name: canary}]}\n",
        );
        let mut r = Request::get("/");
        r.headers.insert("x-canary", "1");
        assert_eq!(to(&c, &r), "canary 100 %");
        assert_eq!(to(&c, &Request::get("/")), "web 100 %");
    }

    #[test]
    fn kuma_service_tags_name_the_kubernetes_service() {
        let case = library_case("kuma.io/MeshHTTPRoute", "weights");
        let c = GatewayConfig::Resource(case.expected[0].clone());
        assert_eq!(
            to(&c, &Request::get("/v1/x")),
            "backend:3001 80 %, backend-canary:3001 20 %"
        );
        // No rule matches: the destination itself (the library adds a catch-all rule for
        // those requests, so look at the original).
        let original = GatewayConfig::Resource(case.original.clone());
        assert_eq!(to(&original, &Request::get("/other")), "backend:3001 100 %");
        assert_eq!(
            to(&c, &Request::get("/other")),
            "backend:3001 80 %, backend-canary:3001 20 %"
        );
        assert_eq!(service_and_port("a_b_c"), ("a_b_c".to_owned(), None, None));
    }

    #[test]
    fn weights_default_to_one_and_unmatched_requests_reach_the_destination() {
        let c = config(
            "    - matches: [{path: {type: PathPrefix, value: /api}}]\n      default: {backendRefs: [{kind: MeshService, name: web, weight: 3}, {kind: MeshService, name: web-canary}]}\n",
        );
        assert_eq!(to(&c, &Request::get("/api")), "web 75 %, web-canary 25 %");
        assert_eq!(to(&c, &Request::get("/other")), "web 100 %");
    }

    #[test]
    fn a_header_both_set_and_removed_is_rejected() {
        let c = config(
            "    - matches: [{path: {type: PathPrefix, value: /}}]\n      default:\n        filters:\n        - type: RequestHeaderModifier\n          requestHeaderModifier: {set: [{name: x-a, value: '1'}], remove: [x-a]}\n",
        );
        let problems = KumaMeshHttpRoute.config_problems(&c);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].message.contains("duplicate header name"));
    }

    #[test]
    fn trailing_slash_prefix_is_rejected() {
        let c = config("    - matches: [{path: {type: PathPrefix, value: /api/}}]\n");
        let problems = KumaMeshHttpRoute.config_problems(&c);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(
            problems[0].path,
            "spec.to[0].rules[0].matches[0].path.value"
        );
        assert!(
            KumaMeshHttpRoute
                .config_problems(&config(
                    "    - matches: [{path: {type: PathPrefix, value: /}}]\n"
                ))
                .is_empty()
        );
    }

    #[test]
    fn library_case_header_modifier_and_subsets() {
        let case = library_case("kuma.io/MeshHTTPRoute", "path_query_header_modifier");
        let step = GatewayConfig::Resource(case.expected[0].clone());
        assert!(KumaMeshHttpRoute.config_problems(&step).is_empty());
        let mut r = Request::get("/orders/v2/items");
        r.headers.insert("x-env", "prod");
        r.query.insert("preview", "true");
        let Routed::To(d) = KumaMeshHttpRoute.route(&step, &r) else {
            panic!()
        };
        assert_eq!(d.describe(), "orders-canary:8080 100 %");
        let changes = &d.header_changes[&d.shares[0].0];
        assert_eq!(changes["x-version"].as_deref(), Some("canary"));
        assert_eq!(changes["x-debug"], None);
        r.query.clear();
        assert_eq!(to(&step, &r), "orders:8080 100 %");
        let probes = KumaMeshHttpRoute.probes(&step);
        assert!(
            probes
                .iter()
                .any(|p| to(&step, p) == "orders-canary:8080 100 %"),
            "{probes:?}"
        );

        let case = library_case("kuma.io/MeshHTTPRoute", "traffic_routing_subset");
        let c = GatewayConfig::Resource(case.original.clone());
        assert_eq!(to(&c, &Request::get("/")), "backend/version=v1 100 %");
    }
}
