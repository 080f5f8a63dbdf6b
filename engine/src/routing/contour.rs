//! Contour HTTPProxy (projectcontour.io/v1): the virtual host's routes (with `includes`
//! resolved and their conditions prepended), Contour's route order (most specific path first,
//! not document order; see [`super::contour_conditions`]), services and their weights, and
//! request header policies.
//!
//! Facts from projectcontour/contour:
//! - `internal/dag/httpproxy_processor.go` `computeRoutes`: an include's conditions are
//!   prepended to the included proxy's route conditions (`includeMatchConditionsValid`: no
//!   exact or regex in includes; no two includes with the same conditions); any invalid route
//!   or include makes the proxy serve no route (`return nil`); an include whose proxy does not
//!   exist gets a 502 route; `routeActionCountValid`: a route needs services (or a redirect or
//!   direct response). Mirror services get copies only.
//! - `internal/dag/dag.go` `AddRoute`: routes are keyed by their conditions, a later route with
//!   the same conditions replaces the earlier one.
//! - `internal/envoy/v3/route.go` `weightedClusters`: when no weight is set, every service gets
//!   1; otherwise an unset weight is 0. Envoy applies a weighted cluster's request headers
//!   before the route's (route_components.proto, `ClusterWeight.request_headers_to_add`).

use std::collections::BTreeMap;

use crate::script::ScriptKind;
use crate::value::JsonValue;

use super::contour_conditions::{
    Conditions, header_conditions_problem, non_empty, path_conditions_problem,
    query_conditions_problem,
};
use super::fields::{int_field, items, port_field, str_field};
use super::probe::{Literal, probes_for};
use super::{
    Backend, ConfigProblem, Distribution, GatewayConfig, ProblemKind, Request, Routed, RoutingModel,
};

pub struct ContourHttpProxy;

/// How deep includes are followed (bounded recursion; Contour itself only refuses cycles, so
/// a deeper chain is [`ProblemKind::PastModelBounds`], not a rejection).
const MAX_INCLUDE_DEPTH: usize = 64;

/// One route of the virtual host, as Contour's DAG holds it.
#[derive(Debug, Clone)]
struct ProxyRoute {
    /// `spec.routes[i]` of the proxy it comes from (`ops/admin: spec.routes[0]`).
    origin: String,
    conditions: Conditions,
    /// Weighted services with their header changes; empty = Contour answers itself (502).
    clusters: Vec<(Backend, u32, BTreeMap<String, Option<String>>)>,
}

/// A route with these conditions and no service yet.
fn condition_route(origin: String, conds: &[JsonValue]) -> ProxyRoute {
    ProxyRoute {
        origin,
        conditions: Conditions::merge(conds),
        clusters: Vec::new(),
    }
}

/// The proxies of a configuration: one HTTPProxy, or a `kind: List` of them (a root and the
/// proxies it includes).
fn proxies(config: &GatewayConfig) -> Vec<&JsonValue> {
    let GatewayConfig::Resource(resource) = config else {
        return Vec::new();
    };
    match resource.get("items").and_then(JsonValue::as_array) {
        Some(list) if str_field(resource, "kind") == Some("List") => list.iter().collect(),
        _ => vec![resource],
    }
}

fn namespace(proxy: &JsonValue) -> &str {
    proxy
        .at(&["metadata", "namespace"])
        .and_then(JsonValue::as_str)
        .unwrap_or("default")
}

fn name(proxy: &JsonValue) -> &str {
    proxy
        .at(&["metadata", "name"])
        .and_then(JsonValue::as_str)
        .unwrap_or_default()
}

/// The routes of the virtual host in Envoy's order, the proxy's fqdn, and what Contour
/// reports. A proxy with an invalid route or include serves no route.
struct VirtualHost {
    fqdn: Option<String>,
    routes: Vec<ProxyRoute>,
    problems: Vec<ConfigProblem>,
}

/// [`build_virtual_host`], once per configuration and step (see [`super::memo`]).
fn virtual_host(config: &GatewayConfig) -> std::rc::Rc<VirtualHost> {
    super::memo::derived(config, || build_virtual_host(config))
}

fn build_virtual_host(config: &GatewayConfig) -> VirtualHost {
    let all = proxies(config);
    let is_list = all.len() > 1
        || matches!(config, GatewayConfig::Resource(r) if str_field(r, "kind") == Some("List"));
    let root = all
        .iter()
        .copied()
        .find(|p| p.at(&["spec", "virtualhost"]).is_some())
        .or_else(|| all.first().copied());
    let mut vhost = VirtualHost {
        fqdn: None,
        routes: Vec::new(),
        problems: Vec::new(),
    };
    let Some(root) = root else { return vhost };
    vhost.fqdn = root
        .at(&["spec", "virtualhost", "fqdn"])
        .and_then(JsonValue::as_str)
        .map(str::to_ascii_lowercase);
    let mut builder = Builder {
        all: &all,
        is_list,
        problems: Vec::new(),
        valid: true,
    };
    let mut visited = Vec::new();
    let routes = builder.compute(root, &[], &mut visited);
    vhost.problems = builder.problems;
    if !builder.valid {
        return vhost;
    }
    // `AddRoute`: the later of two routes with the same conditions replaces the earlier.
    // Each route's key is written once, beside it, not once per route compared with it.
    let mut kept: Vec<(String, ProxyRoute)> = Vec::new();
    for route in routes {
        let key = route.conditions.key();
        if let Some(i) = kept.iter().position(|(held, _)| *held == key) {
            vhost.problems.push(ConfigProblem {
                path: route.origin.clone(),
                kind: ProblemKind::Ignored,
                message: format!(
                    "{} has the same conditions: Contour keeps only the later route",
                    kept[i].1.origin
                ),
            });
            kept.remove(i);
        }
        kept.push((key, route));
    }
    vhost.routes = stable_sort(kept.into_iter().map(|(_, route)| route).collect());
    vhost
}

struct Builder<'a> {
    all: &'a [&'a JsonValue],
    is_list: bool,
    problems: Vec<ConfigProblem>,
    valid: bool,
}

impl Builder<'_> {
    fn reject(&mut self, path: String, message: String) {
        self.valid = false;
        self.problems.push(ConfigProblem {
            path,
            kind: ProblemKind::Rejected,
            message,
        });
    }

    /// `computeRoutes` for `proxy` under the include conditions `outer`.
    fn compute(
        &mut self,
        proxy: &JsonValue,
        outer: &[JsonValue],
        visited: &mut Vec<(String, String)>,
    ) -> Vec<ProxyRoute> {
        let id = (namespace(proxy).to_owned(), name(proxy).to_owned());
        let prefix = if visited.is_empty() {
            String::new()
        } else {
            format!("{}/{}: ", id.0, id.1)
        };
        if visited.contains(&id) {
            self.reject(
                format!("{prefix}spec.includes"),
                "include creates a cycle".into(),
            );
            return Vec::new();
        }
        if visited.len() >= MAX_INCLUDE_DEPTH {
            // The model's bound, not Contour's: the proxy is valid as far as the model knows,
            // and where the deeper includes send requests is not known.
            self.problems.push(ConfigProblem {
                path: format!("{prefix}spec.includes"),
                kind: ProblemKind::PastModelBounds,
                message: format!(
                    "is not evaluated: includes nest deeper than {MAX_INCLUDE_DEPTH}, more than \
                     the model follows, so where requests go is not known and no probe is judged"
                ),
            });
            return Vec::new();
        }
        visited.push(id);
        let mut routes = Vec::new();
        let Some(spec) = proxy.get("spec") else {
            return routes;
        };
        let mut seen_includes: Vec<&[JsonValue]> = Vec::new();
        for (i, include) in items(spec, "includes").iter().enumerate() {
            let at = format!("{prefix}spec.includes[{i}].conditions");
            let conds = items(include, "conditions");
            if conds
                .iter()
                .any(|c| non_empty(c, "exact") || non_empty(c, "regex"))
            {
                self.reject(
                    at,
                    "exact and regex conditions are not allowed in includes block".into(),
                );
                continue;
            }
            if let Some(e) = path_conditions_problem(conds)
                .or_else(|| header_conditions_problem(conds))
                .or_else(|| query_conditions_problem(conds))
            {
                self.reject(at, e);
                continue;
            }
            if seen_includes.contains(&conds) {
                self.reject(at, "duplicate conditions defined on an include".into());
                continue;
            }
            seen_includes.push(conds);
            let target_ns = str_field(include, "namespace").unwrap_or(namespace(proxy));
            let target_name = str_field(include, "name").unwrap_or_default();
            let joined: Vec<JsonValue> = outer.iter().chain(conds).cloned().collect();
            let target = self
                .all
                .iter()
                .copied()
                .find(|p| namespace(p) == target_ns && name(p) == target_name);
            match target {
                Some(child) => routes.extend(self.compute(child, &joined, visited)),
                None => {
                    let placeholder = format!("HTTPProxy {target_ns}/{target_name}");
                    let mut route = condition_route(format!("{prefix}spec.includes[{i}]"), &joined);
                    if self.is_list {
                        // `IncludeNotFound`: a 502 route for the include's conditions.
                        self.problems.push(ConfigProblem {
                            path: format!("{prefix}spec.includes[{i}]"),
                            kind: ProblemKind::Rejected,
                            message: format!("include {target_ns}/{target_name} not found: Contour answers 502 under its conditions"),
                        });
                    } else {
                        // Only this proxy is known: what the included proxy serves under
                        // these conditions stands as one backend named after it.
                        route.clusters = vec![(Backend::service(&placeholder), 1, BTreeMap::new())];
                    }
                    routes.push(route);
                }
            }
        }
        for (i, route) in items(spec, "routes").iter().enumerate() {
            let at = format!("{prefix}spec.routes[{i}]");
            let services = items(route, "services");
            let actions = usize::from(!services.is_empty())
                + usize::from(route.get("requestRedirectPolicy").is_some())
                + usize::from(route.get("directResponsePolicy").is_some());
            if actions != 1 {
                self.reject(at, "must set exactly one of route.services or route.requestRedirectPolicy or route.directResponsePolicy".into());
                visited.pop();
                return Vec::new();
            }
            let own = items(route, "conditions");
            if let Some(e) = path_conditions_problem(own) {
                self.reject(format!("{at}.conditions"), e);
                visited.pop();
                return Vec::new();
            }
            let joined: Vec<JsonValue> = outer.iter().chain(own).cloned().collect();
            if let Some(e) =
                header_conditions_problem(&joined).or_else(|| query_conditions_problem(&joined))
            {
                self.reject(format!("{at}.conditions"), e);
                visited.pop();
                return Vec::new();
            }
            let mut built = condition_route(at, &joined);
            let route_changes = header_policy(route);
            built.clusters = services
                .iter()
                .filter(|s| s.get("mirror").and_then(JsonValue::as_bool) != Some(true))
                .map(|s| {
                    let backend = Backend {
                        service: str_field(s, "name").unwrap_or_default().into(),
                        subset: None,
                        port: port_field(s, "port"),
                    };
                    let weight = int_field(s, "weight")
                        .unwrap_or(0)
                        .clamp(0, u32::MAX as i64);
                    // Envoy applies a weighted cluster's headers before the route's.
                    let mut changes = header_policy(s);
                    changes.extend(route_changes.clone());
                    (backend, weight as u32, changes)
                })
                .collect();
            routes.push(built);
        }
        visited.pop();
        routes
    }
}

/// `requestHeadersPolicy`: `set` (lower-cased names) and `remove`.
fn header_policy(value: &JsonValue) -> BTreeMap<String, Option<String>> {
    let mut changes = BTreeMap::new();
    if let Some(policy) = value.get("requestHeadersPolicy") {
        for h in items(policy, "set") {
            let name = str_field(h, "name")
                .unwrap_or_default()
                .to_ascii_lowercase();
            changes.insert(
                name,
                Some(str_field(h, "value").unwrap_or_default().to_owned()),
            );
        }
        for h in items(policy, "remove") {
            if let Some(name) = h.as_str() {
                changes.insert(name.to_ascii_lowercase(), None);
            }
        }
    }
    changes
}

/// A stable insertion sort by `routeSorter.Less` (Go's `sort.Stable`; written out so that a
/// comparison which is not a total order can never make the sort fail).
fn stable_sort(mut routes: Vec<ProxyRoute>) -> Vec<ProxyRoute> {
    for i in 1..routes.len() {
        let mut j = i;
        while j > 0 && routes[j].conditions.less(&routes[j - 1].conditions) {
            routes.swap(j, j - 1);
            j -= 1;
        }
    }
    routes
}

fn host_matches(fqdn: Option<&str>, request: &Request) -> bool {
    match (fqdn, request.host.as_deref()) {
        (Some(fqdn), Some(host)) => {
            let host = host.to_ascii_lowercase();
            match fqdn.strip_prefix('*') {
                Some(suffix) => host.ends_with(suffix) && host.len() > suffix.len(),
                None => host == fqdn,
            }
        }
        _ => true,
    }
}

fn distribution(route: &ProxyRoute) -> Routed {
    // `weightedClusters`: no weight set at all → every service 1.
    let total: u64 = route.clusters.iter().map(|(_, w, _)| u64::from(*w)).sum();
    let weights: Vec<(Backend, f64)> = route
        .clusters
        .iter()
        .map(|(b, w, _)| (b.clone(), if total == 0 { 1.0 } else { f64::from(*w) }))
        .collect();
    let Some(mut d) = Distribution::from_weights(&weights) else {
        return Routed::NoRoute;
    };
    for (b, _, changes) in &route.clusters {
        if !changes.is_empty() && d.shares.iter().any(|(s, _)| s == b) {
            d.header_changes
                .entry(b.clone())
                .or_default()
                .extend(changes.clone());
        }
    }
    Routed::to(d)
}

impl RoutingModel for ContourHttpProxy {
    fn name(&self) -> &'static str {
        "Contour HTTPProxy (projectcontour.io/v1)"
    }

    fn applies_to(&self, kind: &ScriptKind) -> bool {
        matches!(kind, ScriptKind::Custom { group, kind } if group == "projectcontour.io" && kind == "HTTPProxy")
    }

    fn config_problems(&self, config: &GatewayConfig) -> Vec<ConfigProblem> {
        let mut problems = virtual_host(config).problems.clone();
        // Weights: Contour cannot tell an unset weight from 0, so a service left without
        // `weight` next to services with weights silently gets nothing (`weightedClusters`).
        // An explicit 0 is deliberate and not reported.
        for proxy in proxies(config) {
            let routes = proxy.get("spec").map_or(&[][..], |s| items(s, "routes"));
            for (i, route) in routes.iter().enumerate() {
                let services: Vec<(usize, &JsonValue)> = items(route, "services")
                    .iter()
                    .enumerate()
                    .filter(|(_, s)| s.get("mirror").and_then(JsonValue::as_bool) != Some(true))
                    .collect();
                let weighted = services
                    .iter()
                    .any(|(_, s)| int_field(s, "weight").unwrap_or(0) > 0);
                for (j, service) in services {
                    if weighted && service.get("weight").is_none() {
                        problems.push(ConfigProblem {
                            path: format!("spec.routes[{i}].services[{j}]"),
                            kind: ProblemKind::Ignored,
                            message: "no weight while other services of the route have one: Contour gives it weight 0, no traffic".into(),
                        });
                    }
                }
            }
        }
        problems
    }

    fn route(&self, config: &GatewayConfig, request: &Request) -> Routed {
        let vhost = virtual_host(config);
        if !host_matches(vhost.fqdn.as_deref(), request) {
            return Routed::NoRoute;
        }
        vhost
            .routes
            .iter()
            .find(|r| r.conditions.matches(request))
            .map_or(Routed::NoRoute, |r| {
                // The same for every request the route takes: made once per route.
                super::memo::derived(r, || distribution(r).via(r.origin.clone()))
                    .as_ref()
                    .clone()
            })
    }

    fn probes(&self, config: &GatewayConfig) -> Vec<Request> {
        let vhost = virtual_host(config);
        let conjunctions: Vec<Vec<Literal>> = vhost
            .routes
            .iter()
            .map(|r| r.conditions.literals())
            .collect();
        probes_for(conjunctions, vhost.fqdn.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routing::testing::{json, library_case};

    fn proxy(routes: &str) -> GatewayConfig {
        GatewayConfig::Resource(json(&format!(
            "kind: HTTPProxy\nmetadata: {{name: web}}\nspec:\n  virtualhost: {{fqdn: web.example.com}}\n  routes:\n{routes}"
        )))
    }

    fn to(config: &GatewayConfig, request: &Request) -> String {
        ContourHttpProxy.route(config, request).describe()
    }

    #[test]
    fn longest_prefix_wins_over_document_order() {
        let c = proxy(
            "  - conditions: [{prefix: /}]\n    services: [{name: web, port: 80}]\n  - conditions: [{prefix: /api}]\n    services: [{name: api, port: 80}]\n",
        );
        assert_eq!(to(&c, &Request::get("/api/x")), "api:80 100 %");
        assert_eq!(to(&c, &Request::get("/")), "web:80 100 %");
    }

    #[test]
    fn same_prefix_more_headers_first_and_exact_before_prefix() {
        let c = proxy(
            "  - conditions: [{prefix: /}]\n    services: [{name: web}]\n  - conditions: [{prefix: /}, {header: {name: x-canary, exact: 'true'}}]\n    services: [{name: web-canary}]\n  - conditions: [{exact: /login}]\n    services: [{name: auth}]\n",
        );
        let mut r = Request::get("/x");
        r.headers.insert("x-canary", "true");
        assert_eq!(to(&c, &r), "web-canary 100 %");
        assert_eq!(to(&c, &Request::get("/x")), "web 100 %");
        r.path = "/login".into();
        assert_eq!(to(&c, &r), "auth 100 %");
    }

    #[test]
    fn unset_weights_are_zero_unless_all_are_unset() {
        let c = proxy(
            "  - conditions: [{prefix: /a}]\n    services: [{name: web}, {name: legacy}]\n  - conditions: [{prefix: /b}]\n    services: [{name: web, weight: 90}, {name: canary}, {name: web, mirror: true}]\n",
        );
        assert_eq!(to(&c, &Request::get("/a")), "legacy 50 %, web 50 %");
        assert_eq!(to(&c, &Request::get("/b")), "web 100 %");
        let problems = ContourHttpProxy.config_problems(&c);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].path, "spec.routes[1].services[1]");
    }

    #[test]
    fn includes_concatenate_conditions() {
        let list = GatewayConfig::Resource(json(
            "kind: List\nitems:\n- kind: HTTPProxy\n  metadata: {name: root, namespace: default}\n  spec:\n    virtualhost: {fqdn: web.example.com}\n    includes: [{name: admin, namespace: ops, conditions: [{prefix: /admin}]}]\n    routes: [{services: [{name: web}]}]\n- kind: HTTPProxy\n  metadata: {name: admin, namespace: ops}\n  spec:\n    routes:\n    - conditions: [{prefix: /users}]\n      services: [{name: admin-users}]\n    - conditions: [{prefix: /}, {header: {name: x-canary, present: true}}]\n      services: [{name: admin-canary}]\n",
        ));
        assert!(ContourHttpProxy.config_problems(&list).is_empty());
        assert_eq!(
            to(&list, &Request::get("/admin/users/1")),
            "admin-users 100 %"
        );
        assert_eq!(to(&list, &Request::get("/users")), "web 100 %");
        let mut r = Request::get("/admin/x");
        r.headers.insert("x-canary", "1");
        assert_eq!(to(&list, &r), "admin-canary 100 %");
        // Without the header, nothing under /admin matches: the root's `/` route serves.
        assert_eq!(to(&list, &Request::get("/admin/x")), "web 100 %");
    }

    #[test]
    fn include_cycles_and_depth_are_bounded() {
        let mut yaml = String::from("kind: List\nitems:\n");
        for i in 0..100 {
            yaml.push_str(&format!(
                "- kind: HTTPProxy\n  metadata: {{name: p{i}, namespace: ns}}\n  spec:\n{}    includes: [{{name: p{}, conditions: [{{prefix: /x}}]}}]\n    routes: [{{services: [{{name: s{i}}}]}}]\n",
                if i == 0 { "    virtualhost: {fqdn: a.com}\n" } else { "" },
                (i + 1) % 100
            ));
        }
        let c = GatewayConfig::Resource(json(&yaml));
        let problems = ContourHttpProxy.config_problems(&c);
        // The model's bound, not Contour's (which only refuses cycles): not a rejection, so
        // the proxy still serves; the intent check judges no probe of such a step.
        assert!(
            problems
                .iter()
                .any(|p| p.kind == ProblemKind::PastModelBounds
                    && p.message.contains("nest deeper than 64")),
            "{problems:?}"
        );
        assert!(
            problems.iter().all(|p| p.kind != ProblemKind::Rejected),
            "{problems:?}"
        );
        assert_eq!(to(&c, &Request::get("/")), "s0 100 %");
    }

    #[test]
    fn the_later_of_two_routes_with_the_same_conditions_replaces_the_earlier() {
        let c = proxy(
            "  - conditions: [{prefix: /a}]\n    services: [{name: first}]\n  - conditions: [{prefix: /b}]\n    services: [{name: other}]\n  - conditions: [{prefix: /a}]\n    services: [{name: second}]\n  - conditions: [{prefix: /a}]\n    services: [{name: third}]\n",
        );
        assert_eq!(to(&c, &Request::get("/a")), "third 100 %");
        assert_eq!(to(&c, &Request::get("/b")), "other 100 %");
        let problems = ContourHttpProxy.config_problems(&c);
        let said: Vec<(&str, &str)> = problems
            .iter()
            .map(|p| (p.path.as_str(), p.message.as_str()))
            .collect();
        assert_eq!(
            said,
            [
                (
                    "spec.routes[2]",
                    "spec.routes[0] has the same conditions: Contour keeps only the later route"
                ),
                (
                    "spec.routes[3]",
                    "spec.routes[2] has the same conditions: Contour keeps only the later route"
                ),
            ]
        );
        assert!(problems.iter().all(|p| p.kind == ProblemKind::Ignored));
    }

    #[test]
    fn invalid_conditions_disable_the_proxy() {
        let c = proxy(
            "  - conditions: [{prefix: /a}, {exact: /b}]\n    services: [{name: web}]\n  - services: [{name: other}]\n",
        );
        let problems = ContourHttpProxy.config_problems(&c);
        assert_eq!(problems[0].kind, ProblemKind::Rejected);
        assert_eq!(to(&c, &Request::get("/")), "no route");
        let c = proxy(
            "  - conditions: [{header: {name: x, exact: a}}, {header: {name: X, notexact: a}}]\n    services: [{name: web}]\n",
        );
        assert_eq!(ContourHttpProxy.config_problems(&c).len(), 1);
    }

    #[test]
    fn notexact_needs_the_header_unless_missing_is_empty() {
        let c = proxy(
            "  - conditions: [{prefix: /}, {header: {name: x, notexact: a}}]\n    services: [{name: not-a}]\n  - conditions: [{prefix: /}]\n    services: [{name: web}]\n",
        );
        assert_eq!(to(&c, &Request::get("/")), "web 100 %");
        let c = proxy(
            "  - conditions: [{prefix: /}, {header: {name: x, notexact: a, treatMissingAsEmpty: true}}]\n    services: [{name: not-a}]\n  - conditions: [{prefix: /}]\n    services: [{name: web}]\n",
        );
        assert_eq!(to(&c, &Request::get("/")), "not-a 100 %");
    }

    #[test]
    fn library_cases_route_with_header_policies() {
        let case = library_case("projectcontour.io/HTTPProxy", "path_query_header_modifier");
        let c = GatewayConfig::Resource(case.original.clone());
        let mut r = Request::get("/api/x");
        r.host = Some("api.example.com".into());
        r.headers.insert("x-region", "eu");
        let Routed::To(d) = ContourHttpProxy.route(&c, &r) else {
            panic!()
        };
        assert_eq!(d.describe(), "api:80 100 %");
        assert_eq!(
            d.header_changes[&d.shares[0].0]["x-upstream"].as_deref(),
            Some("api")
        );
        r.host = Some("other.example.com".into());
        assert_eq!(to(&c, &r), "no route");
        for file in ["header_matches", "weights", "path_query_header_modifier"] {
            let case = library_case("projectcontour.io/HTTPProxy", file);
            for config in std::iter::once(&case.original).chain(&case.expected) {
                let c = GatewayConfig::Resource(config.clone());
                let probes = ContourHttpProxy.probes(&c);
                assert!(
                    probes
                        .iter()
                        .any(|p| matches!(ContourHttpProxy.route(&c, p), Routed::To(_))),
                    "{file}"
                );
            }
        }
        // The header case's include stands for the included proxy under /admin.
        let case = library_case("projectcontour.io/HTTPProxy", "header_matches");
        let c = GatewayConfig::Resource(case.original.clone());
        let mut r = Request::get("/admin/x");
        r.host = Some("web.example.com".into());
        assert_eq!(to(&c, &r), "HTTPProxy ops/admin 100 %");
    }
}
