//! Traefik IngressRoute and TraefikService (traefik.io/v1alpha1, traefik.containo.us): router
//! order by priority, rule matching (v2 and v3 syntax, see [`super::traefik_rule`]) and
//! weighted round robin.
//!
//! Facts from traefik/traefik (v3): `pkg/provider/kubernetes/crd/kubernetes_http.go`
//! (`loadIngressRouteConfiguration`: routes of another kind than `Rule` and empty matches are
//! skipped; more than one service makes a weighted round robin, a single service is used as it
//! is; `buildServicesLB`: a missing weight is 1; `buildTraefikService`: weighted, mirroring,
//! failover), `pkg/server/router/router.go` (a router without priority gets
//! `GetRulePriority`), `pkg/muxer/http/mux.go` (`GetRulePriority` = the rule's length;
//! `routes.Less`: highest priority first; the first matching route serves).

use crate::script::ScriptKind;

use super::fields::{int_field, items, port_field, str_field};
use super::probe::probes_for;
use super::traefik_rule::{Rule, RuleError, Syntax};
use super::{
    Backend, ConfigProblem, Distribution, GatewayConfig, ProblemKind, Request, Routed, RoutingModel,
};
use crate::value::JsonValue;

/// The most conjunctions a rule contributes to the probes.
const PROBE_CONJUNCTIONS: usize = 16;

fn is_traefik_group(group: &str) -> bool {
    group == "traefik.io" || group == "traefik.containo.us"
}

/// IngressRoute routes: rules, priorities and services.
pub struct TraefikIngressRoute;

/// A TraefikService: weighted round robin (or mirroring, whose mirrors get copies only).
pub struct TraefikServiceModel;

/// One router of an IngressRoute, as Traefik builds it.
struct Router {
    index: usize,
    priority: i64,
    /// Parsed once per case for each rule text and syntax (see
    /// [`super::memo::derived_from_value`]): the steps of a case mostly keep the original's
    /// rules.
    rule: std::rc::Rc<Result<Rule, RuleError>>,
    /// Where a request the rule matches goes (the same for every request: made once).
    routed: Routed,
}

/// A service reference: a Kubernetes Service (`name`, `port`), or with `kind:
/// TraefikService` another TraefikService, which the model does not follow: it stands as one
/// backend named `TraefikService <name>`, never mistaken for the Service of the same name.
///
/// A reference's `namespace` defaults to the resource's own (`own`); a Service of another
/// namespace (Traefik accepts it with `allowCrossNamespace`) is named `<name>.<namespace>`, so
/// that it is not taken for the Service of the same name beside the resource (traefik/traefik
/// `pkg/provider/kubernetes/crd/`, `namespaceOrFallback`; "namespace" of a
/// service reference, https://doc.traefik.io/traefik/routing/providers/kubernetes-crd/).
fn backend(service: &JsonValue, own: Option<&str>) -> Backend {
    let name = str_field(service, "name").unwrap_or_default();
    if str_field(service, "kind") == Some("TraefikService") {
        return Backend::service(&format!("TraefikService {name}"));
    }
    // When the resource gives no namespace, names stay bare (the check cannot tell then; see
    // `routing::names_service`).
    let name: super::SmolStr = match (
        str_field(service, "namespace").filter(|ns| !ns.is_empty()),
        own,
    ) {
        (Some(ns), Some(own)) if ns != own => format!("{name}.{ns}").into(),
        _ => name.into(),
    };
    Backend {
        service: name,
        subset: None,
        port: port_field(service, "port"),
    }
}

/// `buildServicesLB`: a missing weight is 1.
fn weighted(services: &[JsonValue], own: Option<&str>) -> Vec<(Backend, f64)> {
    services
        .iter()
        .map(|s| (backend(s, own), int_field(s, "weight").unwrap_or(1) as f64))
        .collect()
}

fn distribute(weights: &[(Backend, f64)]) -> Routed {
    // All weights zero: the round robin has no server to pick, Traefik answers itself.
    Distribution::from_weights(weights).map_or(Routed::NoRoute, Routed::to)
}

fn spec(config: &GatewayConfig) -> Option<&JsonValue> {
    match config {
        GatewayConfig::Resource(resource) => resource.get("spec"),
        GatewayConfig::Ingress { .. } => None,
    }
}

impl TraefikIngressRoute {
    /// The routers Traefik keeps, highest priority first (ties keep document order), with the
    /// problems of the routes it drops.
    /// [`Self::parse_routers`], once per configuration and step (see [`super::memo`]).
    fn routers(config: &GatewayConfig) -> std::rc::Rc<(Vec<Router>, Vec<ConfigProblem>)> {
        super::memo::derived(config, || Self::parse_routers(config))
    }

    fn parse_routers(config: &GatewayConfig) -> (Vec<Router>, Vec<ConfigProblem>) {
        let mut routers = Vec::new();
        let mut problems = Vec::new();
        let Some(spec) = spec(config) else {
            return (routers, problems);
        };
        let own = super::resource_namespace(config);
        for (index, route) in items(spec, "routes").iter().enumerate() {
            let path = format!("spec.routes[{index}]");
            if let Some(kind) = str_field(route, "kind").filter(|k| !k.is_empty() && *k != "Rule") {
                problems.push(ConfigProblem {
                    path: format!("{path}.kind"),
                    kind: ProblemKind::Ignored,
                    message: format!("unsupported match kind {kind:?}: Traefik only supports \"Rule\" and skips the route"),
                });
                continue;
            }
            let matched = str_field(route, "match").unwrap_or_default();
            if matched.is_empty() {
                problems.push(ConfigProblem {
                    path: format!("{path}.match"),
                    kind: ProblemKind::Ignored,
                    message: "empty match rule: Traefik skips the route".into(),
                });
                continue;
            }
            let syntax = Syntax::of(str_field(route, "syntax"));
            let rule = super::memo::derived_from_value((matched.to_owned(), syntax), |(m, s)| {
                Rule::parse(m, *s)
            });
            match &*rule {
                Err(RuleError::Invalid(e)) => problems.push(ConfigProblem {
                    path: format!("{path}.match"),
                    kind: ProblemKind::Rejected,
                    message: format!("error while parsing rule {matched}: {e}"),
                }),
                // The model's bound, not Traefik's: the router is left out of routing (it is
                // taken as matching nothing), so no probe of the step can be judged.
                Err(RuleError::PastBounds(e)) => problems.push(ConfigProblem {
                    path: format!("{path}.match"),
                    kind: ProblemKind::PastModelBounds,
                    message: format!(
                        "is not evaluated: {e}, so where requests go is not known and no probe \
                         is judged"
                    ),
                }),
                Ok(rule) if rule.tests_client_ip() => problems.push(ConfigProblem {
                    path: format!("{path}.match"),
                    kind: ProblemKind::NotEvaluated,
                    message: "is not evaluated where it tests ClientIP: probes carry no client \
                              address (they are taken as not meeting it)"
                        .into(),
                }),
                Ok(_) => {}
            }
            // router.go: priority 0 (or unset) means the rule's length in bytes.
            let priority = match int_field(route, "priority") {
                Some(p) if p != 0 => p,
                _ => matched.len() as i64,
            };
            let services = items(route, "services");
            let routed = match services.len() {
                0 => Routed::NoRoute,
                // A single service, used whatever its weight.
                1 => Routed::to(Distribution::single(backend(&services[0], own))),
                // A weighted round robin over the services.
                _ => distribute(&weighted(services, own)),
            };
            routers.push(Router {
                index,
                priority,
                rule,
                routed: routed.via(path),
            });
        }
        routers.sort_by(|a, b| b.priority.cmp(&a.priority).then(a.index.cmp(&b.index)));
        (routers, problems)
    }
}

impl RoutingModel for TraefikIngressRoute {
    fn name(&self) -> &'static str {
        "Traefik IngressRoute (traefik.io/v1alpha1, rule syntax v2 and v3)"
    }

    fn applies_to(&self, kind: &ScriptKind) -> bool {
        matches!(kind, ScriptKind::Custom { group, kind } if is_traefik_group(group) && kind == "IngressRoute")
    }

    fn config_problems(&self, config: &GatewayConfig) -> Vec<ConfigProblem> {
        let parsed = Self::routers(config);
        let (routers, mut problems) = (&parsed.0, parsed.1.clone());
        // Two routers with the same priority whose rules both match a probe: Traefik's sort is
        // not stable, so which one serves is not defined.
        // The probes only when two routers tie (most configurations have no tie, and
        // building the probes cost most of this check).
        let probes = std::cell::OnceCell::new();
        for (i, a) in routers.iter().enumerate() {
            for b in &routers[i + 1..] {
                let (Ok(ra), Ok(rb)) = (&*a.rule, &*b.rule) else {
                    continue;
                };
                if a.priority != b.priority {
                    continue;
                }
                let probes = probes.get_or_init(|| self.probes(config));
                if let Some(p) = probes.iter().find(|p| ra.matches(p) && rb.matches(p)) {
                    problems.push(ConfigProblem {
                        path: format!("spec.routes[{}].priority", b.index),
                        kind: ProblemKind::Ignored,
                        message: format!(
                            "routes {} and {} have the same priority {} and both match {}: which one serves is undefined",
                            a.index, b.index, a.priority, p.describe()
                        ),
                    });
                }
            }
        }
        problems
    }

    fn route(&self, config: &GatewayConfig, request: &Request) -> Routed {
        let parsed = Self::routers(config);
        for router in &parsed.0 {
            let Ok(rule) = &*router.rule else { continue };
            if rule.matches(request) {
                return router.routed.clone();
            }
        }
        Routed::NoRoute
    }

    fn probes(&self, config: &GatewayConfig) -> Vec<Request> {
        let parsed = Self::routers(config);
        let conjunctions: Vec<_> = parsed
            .0
            .iter()
            .filter_map(|r| (*r.rule).as_ref().ok())
            .flat_map(|r| r.conjunctions(PROBE_CONJUNCTIONS))
            .collect();
        probes_for(conjunctions, None)
    }
}

impl RoutingModel for TraefikServiceModel {
    fn name(&self) -> &'static str {
        "Traefik TraefikService (traefik.io/v1alpha1: weighted, mirroring)"
    }

    fn applies_to(&self, kind: &ScriptKind) -> bool {
        matches!(kind, ScriptKind::Custom { group, kind } if is_traefik_group(group) && kind == "TraefikService")
    }

    fn config_problems(&self, config: &GatewayConfig) -> Vec<ConfigProblem> {
        let Some(spec) = spec(config) else {
            return Vec::new();
        };
        let mut problems = Vec::new();
        if let Some(w) = spec.get("weighted") {
            if distribute(&weighted(items(w, "services"), None)) == Routed::NoRoute {
                problems.push(ConfigProblem {
                    path: "spec.weighted.services".into(),
                    kind: ProblemKind::Rejected,
                    message: "no service with a positive weight: every request fails".into(),
                });
            }
        } else if spec.get("mirroring").is_none()
            && spec.get("failover").is_none()
            && spec.get("highestRandomWeight").is_none()
        {
            problems.push(ConfigProblem {
                path: "spec".into(),
                kind: ProblemKind::Rejected,
                message: "unspecified service type (buildTraefikService)".into(),
            });
        }
        problems
    }

    /// A TraefikService has no matching: every request it receives is spread the same way.
    fn route(&self, config: &GatewayConfig, _request: &Request) -> Routed {
        let Some(spec) = spec(config) else {
            return Routed::NoRoute;
        };
        let own = super::resource_namespace(config);
        if let Some(w) = spec.get("weighted") {
            return distribute(&weighted(items(w, "services"), own)).via("spec.weighted");
        }
        // Mirroring: the main service serves, mirrors get copies whose answers are dropped.
        if let Some(m) = spec.get("mirroring") {
            return Routed::to(Distribution::single(backend(m, own))).via("spec.mirroring");
        }
        // Failover: the main service while it is healthy.
        if let Some(name) = spec.get("failover").and_then(|f| str_field(f, "service")) {
            return Routed::to(Distribution::single(Backend::service(name))).via("spec.failover");
        }
        if let Some(h) = spec.get("highestRandomWeight") {
            return distribute(&weighted(items(h, "services"), own))
                .via("spec.highestRandomWeight");
        }
        Routed::NoRoute
    }

    fn probes(&self, _config: &GatewayConfig) -> Vec<Request> {
        vec![Request::get("/")]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource(yaml: &str) -> GatewayConfig {
        GatewayConfig::Resource(crate::routing::testing::json(yaml))
    }

    fn request(host: &str, path: &str, header: Option<(&str, &str)>) -> Request {
        let mut r = Request::get(path);
        r.host = Some(host.into());
        if let Some((k, v)) = header {
            r.headers.insert(k.to_owned(), v.to_owned());
        }
        r
    }

    fn to(config: &GatewayConfig, r: &Request) -> String {
        TraefikIngressRoute.route(config, r).describe()
    }

    #[test]
    fn default_priority_is_the_rule_length() {
        // The library's header case after its first step: the canary rule is longer than the
        // /static rule, so `/static` requests with the header go to the canary.
        let config = resource(
            "spec:\n  routes:\n  - match: Host(`web.example.com`) && PathPrefix(`/static`)\n    kind: Rule\n    services: [{name: static, port: 80}]\n  - match: (Host(`web.example.com`)) && (Header(`X-Canary`, `true`))\n    kind: Rule\n    services: [{name: web-canary, port: 8080}]\n  - match: Host(`web.example.com`)\n    kind: Rule\n    services: [{name: web, port: 8080}]\n",
        );
        let r = request(
            "web.example.com",
            "/static/app.js",
            Some(("x-canary", "true")),
        );
        assert_eq!(to(&config, &r), "web-canary:8080 100 %");
        assert_eq!(
            to(&config, &request("web.example.com", "/static/a", None)),
            "static:80 100 %"
        );
        assert_eq!(
            to(&config, &request("web.example.com", "/", None)),
            "web:8080 100 %"
        );
        assert_eq!(to(&config, &request("other.com", "/", None)), "no route");
    }

    #[test]
    fn explicit_priority_outranks_length() {
        let config = resource(
            "spec:\n  routes:\n  - match: Host(`a.com`) && PathPrefix(`/static`)\n    priority: 100\n    services: [{name: static}]\n  - match: Host(`a.com`) && Header(`X-Canary`, `true`) && PathPrefix(`/`)\n    services: [{name: canary}]\n",
        );
        let r = request("a.com", "/static", Some(("x-canary", "true")));
        assert_eq!(to(&config, &r), "static 100 %");
    }

    #[test]
    fn v3_matcher_under_syntax_v2_drops_the_router() {
        let config = resource(
            "spec:\n  routes:\n  - match: Host(`a.com`) && Header(`X-Canary`, `1`)\n    syntax: v2\n    services: [{name: canary}]\n  - match: Host(`a.com`)\n    syntax: v2\n    services: [{name: web}]\n",
        );
        let problems = TraefikIngressRoute.config_problems(&config);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].path, "spec.routes[0].match");
        assert_eq!(problems[0].kind, ProblemKind::Rejected);
        let r = request("a.com", "/", Some(("x-canary", "1")));
        assert_eq!(to(&config, &r), "web 100 %");
    }

    /// QA repros `traefik-256hosts` (a correct step reported as "the gateway rejects …") and
    /// `traefik-300hosts-silent`, `traefik-depth100-silent` (a wrong 50/50 step passed in
    /// silence): a rule past the model's bounds is the model's limit, not Traefik's. The step
    /// is partly checked, saying so, and no probe is judged (none could be, without false
    /// alarms).
    #[test]
    fn rules_past_the_models_bounds_leave_the_step_partly_checked() {
        let hosts = |n: usize| {
            (0..n)
                .map(|i| format!("Host(`h{i}.com`)"))
                .collect::<Vec<_>>()
                .join(" || ")
        };
        let config = |rule: &str, services: &str| {
            resource(&format!(
                "spec:\n  routes:\n  - match: {rule}\n    services: {services}\n"
            ))
        };
        let deep = format!("{}Host(`a.com`){}", "(".repeat(100), ")".repeat(100));
        for rule in [hosts(300), deep] {
            let original = config(&rule, "[{name: web, port: 80}]");
            let problems = TraefikIngressRoute.config_problems(&original);
            assert_eq!(problems.len(), 1, "{problems:?}");
            assert_eq!(problems[0].kind, ProblemKind::PastModelBounds);
            assert_eq!(problems[0].path, "spec.routes[0].match");
            let wrong = config(
                &rule,
                "[{name: web, port: 80, weight: 50}, {name: web-canary, port: 80, weight: 50}]",
            );
            let intent = crate::intent::Intent {
                weight: Some(5),
                stable_service: "web".into(),
                canary_service: "web-canary".into(),
                ..crate::intent::Intent::default()
            };
            let report =
                crate::intent::check_step(&TraefikIngressRoute, &original, &wrong, &intent);
            assert!(report.violations.is_empty(), "{report:?}");
            assert_eq!(report.unchecked.len(), 1, "{report:?}");
            assert!(
                report.unchecked[0].starts_with("spec.routes[0].match is not evaluated: the rule"),
                "{report:?}"
            );
            let outcome = crate::intent::StepIntentOutcome::Checked(report);
            assert!(
                outcome
                    .unverified()
                    .unwrap()
                    .starts_with("partly checked: ")
            );
        }
        // 256 matchers are within the bounds.
        let within = config(&hosts(256), "[{name: web, port: 80}]");
        assert!(TraefikIngressRoute.config_problems(&within).is_empty());
    }

    /// `ClientIP` never matches a probe (they carry no client address): reported, not silent.
    #[test]
    fn client_ip_is_not_evaluated_and_reported() {
        let config = resource(
            "spec:\n  routes:\n  - match: ClientIP(`10.0.0.0/8`)\n    priority: 100\n    services: [{name: office}]\n  - match: PathPrefix(`/`)\n    services: [{name: web}]\n",
        );
        assert_eq!(to(&config, &request("a", "/", None)), "web 100 %");
        let problems = TraefikIngressRoute.config_problems(&config);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].kind, ProblemKind::NotEvaluated);
        assert_eq!(problems[0].path, "spec.routes[0].match");
    }

    #[test]
    fn weights_default_to_one_and_a_single_service_ignores_its_weight() {
        let config = resource(
            "spec:\n  routes:\n  - match: PathPrefix(`/two`)\n    services: [{name: web, weight: 3}, {name: web-canary}]\n  - match: PathPrefix(`/`)\n    services: [{name: web, weight: 0}]\n",
        );
        assert_eq!(
            to(&config, &request("a", "/two", None)),
            "web 75 %, web-canary 25 %"
        );
        assert_eq!(to(&config, &request("a", "/", None)), "web 100 %");
    }

    #[test]
    fn same_priority_overlap_is_reported() {
        let config = resource(
            "spec:\n  routes:\n  - match: PathPrefix(`/a`)\n    priority: 5\n    services: [{name: x}]\n  - match: PathPrefix(`/`)\n    priority: 5\n    services: [{name: y}]\n",
        );
        let problems = TraefikIngressRoute.config_problems(&config);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].message.contains("same priority 5"));
    }

    #[test]
    fn library_cases_route_every_probe() {
        for file in [
            "header_matches",
            "path_query_priority",
            "weights",
            "small_weights",
        ] {
            let case = crate::routing::testing::library_case("traefik.io/IngressRoute", file);
            let config = GatewayConfig::Resource(case.original.clone());
            assert!(
                TraefikIngressRoute.config_problems(&config).is_empty(),
                "{file}"
            );
            let probes = TraefikIngressRoute.probes(&config);
            assert!(probes.len() > 2, "{file}: {probes:?}");
            assert!(
                probes
                    .iter()
                    .any(|p| matches!(TraefikIngressRoute.route(&config, p), Routed::To(_))),
                "{file}"
            );
        }
    }

    #[test]
    fn traefik_service_weights_and_mirroring() {
        let case = crate::routing::testing::library_case("traefik.io/TraefikService", "weights");
        let config = GatewayConfig::Resource(case.original.clone());
        let Routed::To(d) = TraefikServiceModel.route(&config, &Request::get("/")) else {
            panic!("no route")
        };
        assert_eq!(
            d.describe(),
            "TraefikService web 16.67 %, legacy:80 16.67 %, web:80 66.67 %"
        );
        let mirror = resource(
            "spec:\n  mirroring:\n    name: web\n    port: 80\n    mirrors: [{name: web-canary, percent: 50}]\n",
        );
        assert_eq!(
            TraefikServiceModel.route(&mirror, &Request::get("/")),
            Routed::to(Distribution::single(Backend {
                service: "web".into(),
                subset: None,
                port: Some("80".into())
            }))
        );
        let zero = resource("spec:\n  weighted:\n    services: [{name: web, weight: 0}]\n");
        assert_eq!(TraefikServiceModel.config_problems(&zero).len(), 1);
    }

    /// A service reference's `namespace` other than the resource's names another Service:
    /// it is not the Rollout's `web`, whichever model is asked.
    #[test]
    fn a_service_of_another_namespace_keeps_its_namespace() {
        let split = resource(
            "metadata: {name: web, namespace: shop}\nspec:\n  weighted:\n    services:\n    - {name: web, namespace: payments, weight: 1}\n    - {name: web, namespace: shop, weight: 1}\n    - {name: web, weight: 2}\n",
        );
        let Routed::To(d) = TraefikServiceModel.route(&split, &Request::get("/")) else {
            panic!("no route")
        };
        assert_eq!(d.describe(), "web 75 %, web.payments 25 %");
        let stable: Vec<bool> = d
            .shares
            .iter()
            .map(|(b, _)| TraefikServiceModel.is_service(b, "web", Some("shop")))
            .collect();
        assert_eq!(stable, [true, false]);
        // The same in an IngressRoute's services.
        let route = resource(
            "metadata: {name: web, namespace: shop}\nspec:\n  routes:\n  - match: PathPrefix(`/`)\n    services: [{name: web, namespace: payments}]\n",
        );
        assert_eq!(
            TraefikIngressRoute
                .route(&route, &Request::get("/"))
                .describe(),
            "web.payments 100 %"
        );
    }
}
