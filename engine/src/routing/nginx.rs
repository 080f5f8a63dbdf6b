//! ingress-nginx canary annotations (`nginx.ingress.kubernetes.io/canary*`): how the
//! controller splits a request between the stable Ingress and the canary Ingress that serves
//! the same host and path.
//!
//! Sources (read, not copied):
//! - ingress-nginx docs, "Annotations" → "Canary": rules are evaluated in the order
//!   canary-by-header → canary-by-cookie → canary-weight; `canary-by-header-value` must be used
//!   with `canary-by-header`; `canary-by-header-pattern` is ignored when `-value` is set;
//!   `canary-by-cookie` only knows `always`/`never`; `canary-weight-total` defaults to 100.
//!   Canary rules cannot express path or query conditions: the path is the Ingress's own.
//! - kubernetes/ingress-nginx `rootfs/etc/nginx/lua/balancer.lua`,
//!   `route_to_alternative_balancer`: with the header present, an equal `headerValue` → canary,
//!   a `headerPattern` found anywhere in the value (`ngx.re.match`, unanchored PCRE) → canary,
//!   a pattern that fails to compile → stable; without value/pattern `always` → canary and
//!   `never` → stable; anything else falls through to the cookie (`always`/`never`), then to
//!   `math.random(total) <= weight`.
//!
//! The PCRE pattern is matched with the `regex` crate (RE2 syntax, a subset): a pattern PCRE
//! accepts but RE2 does not (look-around, back-references) is reported as ignored.

use std::collections::BTreeMap;

use super::ingress_rules::{CanaryDecision, canary_notes, pair_probes, route_canary_pair};
use super::{ConfigProblem, GatewayConfig, ProblemKind, Request, Routed, RoutingModel};
use crate::script::ScriptKind;

pub struct IngressNginx;

const PREFIX: &str = "nginx.ingress.kubernetes.io/";

fn get<'a>(notes: &'a BTreeMap<String, String>, key: &str) -> Option<&'a str> {
    super::ingress_rules::annotation(notes, PREFIX, key)
        .map(String::as_str)
        .filter(|v| !v.is_empty())
}

/// The canary's share of requests that no header or cookie rule decided.
fn weight_share(notes: &BTreeMap<String, String>) -> f64 {
    let weight: f64 = get(notes, "canary-weight")
        .and_then(|w| w.trim().parse::<i64>().ok())
        .unwrap_or(0) as f64;
    // balancer.lua `route_to_alternative_balancer`: `weightTotal` is 100 unless the
    // annotation's total is above 100 (a total of 10 with weight 2 routes 2 %, not 20 %).
    let total = weight_total(notes).unwrap_or(100) as f64;
    (weight / total).clamp(0.0, 1.0)
}

/// The `canary-weight-total` the balancer uses, when the annotation sets one it honours (only
/// totals above 100: kubernetes/ingress-nginx `rootfs/etc/nginx/lua/balancer.lua`,
/// `if traffic_shaping_policy.weightTotal ~= nil and traffic_shaping_policy.weightTotal > 100`).
fn weight_total(notes: &BTreeMap<String, String>) -> Option<i64> {
    get(notes, "canary-weight-total")
        .and_then(|w| w.trim().parse::<i64>().ok())
        .filter(|t| *t > 100)
}

fn decide(notes: &BTreeMap<String, String>, request: &Request) -> Option<CanaryDecision> {
    // The annotations are read once per configuration (see `super::memo`), not per probe.
    let rule = super::memo::derived(notes, || CanaryRules::of(notes));
    let rule = rule.as_ref().as_ref()?;
    if let Some((name, on_header)) = &rule.header
        && let Some(value) = super::header_value(request, name)
    {
        match on_header {
            OnHeader::Value(expected) => {
                if value == expected {
                    return Some(CanaryDecision::Canary);
                }
            }
            OnHeader::Pattern(pattern, compiled) => {
                match compiled.get_or_init(|| super::fields::compile(pattern).ok()) {
                    Some(re) if re.is_match(value) => return Some(CanaryDecision::Canary),
                    Some(_) => {}
                    None => return Some(CanaryDecision::Stable),
                }
            }
            OnHeader::AlwaysOrNever => {
                if value == "always" {
                    return Some(CanaryDecision::Canary);
                } else if value == "never" {
                    return Some(CanaryDecision::Stable);
                }
            }
        }
    }
    if let Some(name) = &rule.cookie
        && let Some(value) = request.cookies.get(name)
    {
        if value == "always" {
            return Some(CanaryDecision::Canary);
        }
        if value == "never" {
            return Some(CanaryDecision::Stable);
        }
    }
    Some(CanaryDecision::Share(rule.share))
}

/// The canary annotations as [`decide`] applies them, in the order the balancer tries them.
struct CanaryRules {
    /// `canary-by-header` and what its value is compared with.
    header: Option<(String, OnHeader)>,
    /// `canary-by-cookie`.
    cookie: Option<String>,
    /// [`weight_share`].
    share: f64,
}

/// What a request's canary header is compared with.
enum OnHeader {
    /// `canary-by-header-value`.
    Value(String),
    /// `canary-by-header-pattern`, compiled when a request carries the header (`None`: it
    /// does not compile).
    Pattern(
        String,
        std::cell::OnceCell<Option<std::rc::Rc<regex::Regex>>>,
    ),
    /// Neither: `always` and `never`.
    AlwaysOrNever,
}

impl CanaryRules {
    /// The rules of a canary Ingress (`None`: not a canary, no `canary: "true"`).
    fn of(notes: &BTreeMap<String, String>) -> Option<Self> {
        if get(notes, "canary") != Some("true") {
            return None;
        }
        let header = get(notes, "canary-by-header").map(|name| {
            let on_header = if let Some(expected) = get(notes, "canary-by-header-value") {
                OnHeader::Value(expected.to_owned())
            } else if let Some(pattern) = get(notes, "canary-by-header-pattern") {
                OnHeader::Pattern(pattern.to_owned(), std::cell::OnceCell::new())
            } else {
                OnHeader::AlwaysOrNever
            };
            (name.to_owned(), on_header)
        });
        Some(CanaryRules {
            header,
            cookie: get(notes, "canary-by-cookie").map(str::to_owned),
            share: weight_share(notes),
        })
    }
}

impl RoutingModel for IngressNginx {
    fn name(&self) -> &'static str {
        "ingress-nginx canary annotations (controller v1.x)"
    }

    fn applies_to(&self, kind: &ScriptKind) -> bool {
        matches!(kind, ScriptKind::Ingress { class } if class == "nginx")
    }

    fn config_problems(&self, config: &GatewayConfig) -> Vec<ConfigProblem> {
        let notes = canary_notes(config);
        let mut problems = Vec::new();
        let mut problem = |key: &str, message: String| {
            problems.push(ConfigProblem {
                path: format!("metadata.annotations[\"{PREFIX}{key}\"]"),
                kind: ProblemKind::Ignored,
                message,
            })
        };
        let has_canary_keys = notes.keys().any(|k| {
            k.strip_prefix(PREFIX)
                .is_some_and(|key| key.starts_with("canary-"))
        });
        if has_canary_keys && get(&notes, "canary") != Some("true") {
            problem(
                "canary",
                "canary-* annotations without canary: \"true\" are not applied".into(),
            );
        }
        if get(&notes, "canary-by-header").is_none() {
            for key in ["canary-by-header-value", "canary-by-header-pattern"] {
                if get(&notes, key).is_some() {
                    problem(key, format!("{key} has no effect without canary-by-header"));
                }
            }
        }
        if let Some(pattern) = get(&notes, "canary-by-header-pattern") {
            if get(&notes, "canary-by-header-value").is_some() {
                problem(
                    "canary-by-header-pattern",
                    "canary-by-header-pattern is ignored when canary-by-header-value is set".into(),
                );
            } else if let Some(reason) = super::matching::re2_problem(pattern) {
                problem(
                    "canary-by-header-pattern",
                    format!("{reason}: requests carrying the header go to the stable service"),
                );
            }
        }
        if let Some(total) = get(&notes, "canary-weight-total")
            && weight_total(&notes).is_none()
        {
            problem(
                "canary-weight-total",
                format!(
                    "canary-weight-total {total} is not above 100, so the balancer uses 100 (canary-weight is a percent)"
                ),
            );
        }
        if let Some(weight) = get(&notes, "canary-weight")
            && weight.trim().parse::<i64>().is_err()
        {
            problem(
                "canary-weight",
                format!("canary-weight {weight:?} is not an integer: the weight is 0"),
            );
        }
        problems
    }

    fn route(&self, config: &GatewayConfig, request: &Request) -> Routed {
        route_canary_pair(config, request, decide, |_| BTreeMap::new())
    }

    fn probes(&self, config: &GatewayConfig) -> Vec<Request> {
        pair_probes(config, &header_cookie_probes(&canary_notes(config), PREFIX))
    }

    // The decision reads only the canary Ingress's annotations (module comment).
    fn canary_decision_is_path_independent(&self) -> bool {
        true
    }

    // balancer.lua matches `canary-by-header-pattern` with `ngx.re.match` (unanchored), the
    // only regex a canary rule has (module comment).
    fn step_regex_may_search(&self) -> bool {
        true
    }

    // ingress-nginx's canary annotations (docs "Annotations" → "Canary") have no request
    // header control; a `configuration-snippet` could, but it is not a canary rule.
    fn can_modify_request_headers(&self) -> bool {
        false
    }
}

/// Requests carrying the canary header (its value, `always`, `never`, something else) and the
/// canary cookie (`always`, `never`), read from `prefix`'s annotations.
pub fn header_cookie_probes(notes: &BTreeMap<String, String>, prefix: &str) -> Vec<Request> {
    let read =
        |key: &str| super::ingress_rules::annotation(notes, prefix, key).filter(|v| !v.is_empty());
    let mut probes = Vec::new();
    if let Some(name) = read("canary-by-header") {
        let mut values = vec!["always".to_owned(), "never".to_owned(), "other".to_owned()];
        values.extend(read("canary-by-header-value").cloned());
        if let Some(pattern) = read("canary-by-header-pattern") {
            values.extend(super::matching::sample_match(pattern));
        }
        for value in values {
            let mut probe = Request::get("/");
            probe
                .headers
                .insert(name.to_ascii_lowercase(), value.clone());
            probes.push(probe);
        }
    }
    if let Some(name) = read("canary-by-cookie") {
        for value in ["always", "never"] {
            let mut probe = Request::get("/");
            probe.cookies.insert(name.clone(), value.to_owned());
            probes.push(probe);
        }
    }
    probes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routing::{Backend, Distribution};
    use crate::value::JsonValue;

    fn pair(annotations: &str) -> GatewayConfig {
        let ingress = |name: &str, service: &str, notes: &str| {
            JsonValue::parse_go_interface(
                format!(
                    r#"{{"metadata":{{"name":"{name}","annotations":{{{notes}}}}},"spec":{{"rules":[{{"host":"x.com","http":{{"paths":[
                    {{"path":"/","pathType":"Prefix","backend":{{"service":{{"name":"{service}","port":{{"number":80}}}}}}}}]}}}}]}}}}"#
                )
                .as_bytes(),
            )
            .unwrap()
        };
        GatewayConfig::Ingress {
            stable: ingress("web", "web", "").into(),
            canary: Some(ingress("web-canary", "web-canary", annotations)),
        }
    }

    fn canary_share(config: &GatewayConfig, request: &Request) -> f64 {
        match IngressNginx.route(config, request) {
            Routed::To(d) => d.share_of_service("web-canary"),
            Routed::NoRoute => panic!("no route"),
        }
    }

    fn on_host(mut request: Request) -> Request {
        request.host = Some("x.com".into());
        request
    }

    fn with_header(name: &str, value: &str) -> Request {
        let mut r = on_host(Request::get("/a"));
        r.headers.insert(name, value);
        r
    }

    /// The configurations of a case share their stable Ingress (and what is derived from it):
    /// each must still be routed with its own canary Ingress, or none.
    #[test]
    fn configurations_sharing_a_stable_ingress_route_with_their_own_canary() {
        let canary = pair(
            r#""nginx.ingress.kubernetes.io/canary":"true","nginx.ingress.kubernetes.io/canary-weight":"100""#,
        );
        let GatewayConfig::Ingress { stable, .. } = &canary else {
            unreachable!()
        };
        let before = GatewayConfig::Ingress {
            stable: stable.clone(),
            canary: None,
        };
        let request = on_host(Request::get("/a"));
        crate::routing::memo::with_derived_memo(|| {
            assert_eq!(canary_share(&before, &request), 0.0);
            assert_eq!(canary_share(&canary, &request), 1.0);
            let Routed::To(split) = IngressNginx.route(&canary, &request) else {
                panic!("no route")
            };
            assert_eq!(
                split.route_path.as_deref(),
                Some(
                    "Ingress web spec.rules[0].http.paths[0] and the canary Ingress web-canary's annotations"
                )
            );
        });
    }

    /// Requests split alike on one pair of paths get one shared decision (the intent check
    /// judges a pair of decisions once, knowing them by address), and each split its own.
    #[test]
    fn requests_split_alike_share_one_decision() {
        let config = pair(
            r#""nginx.ingress.kubernetes.io/canary":"true","nginx.ingress.kubernetes.io/canary-by-header":"x-canary",
            "nginx.ingress.kubernetes.io/canary-weight":"30""#,
        );
        let route = |request: &Request| match IngressNginx.route(&config, request) {
            Routed::To(d) => d,
            Routed::NoRoute => panic!("no route"),
        };
        crate::routing::memo::with_derived_memo(|| {
            let (weighted, other_path) = (
                route(&on_host(Request::get("/a"))),
                route(&on_host(Request::get("/b"))),
            );
            let (always, always_again) = (
                route(&with_header("x-canary", "always")),
                route(&with_header("x-canary", "always")),
            );
            let never = route(&with_header("x-canary", "never"));
            assert!(std::sync::Arc::ptr_eq(&weighted, &other_path));
            assert!(std::sync::Arc::ptr_eq(&always, &always_again));
            assert!(!std::sync::Arc::ptr_eq(&weighted, &always));
            assert!(!std::sync::Arc::ptr_eq(&never, &always));
            assert!((weighted.share_of_service("web-canary") - 0.3).abs() < 1e-9);
            assert_eq!(always.share_of_service("web-canary"), 1.0);
            assert_eq!(never.share_of_service("web-canary"), 0.0);
            assert_eq!(
                always.route_path.as_deref(),
                Some(
                    "Ingress web spec.rules[0].http.paths[0] and the canary Ingress web-canary's annotations"
                )
            );
        });
    }

    #[test]
    fn header_beats_cookie_beats_weight() {
        let config = pair(
            r#""nginx.ingress.kubernetes.io/canary":"true","nginx.ingress.kubernetes.io/canary-by-header":"x-canary",
            "nginx.ingress.kubernetes.io/canary-by-cookie":"c","nginx.ingress.kubernetes.io/canary-weight":"30""#,
        );
        let mut never_header_always_cookie = with_header("x-canary", "never");
        never_header_always_cookie.cookies.insert("c", "always");
        assert_eq!(canary_share(&config, &never_header_always_cookie), 0.0);
        let mut cookie = on_host(Request::get("/"));
        cookie.cookies.insert("c", "always");
        assert_eq!(canary_share(&config, &cookie), 1.0);
        // Another header value falls through to the cookie, then the weight.
        assert!((canary_share(&config, &with_header("x-canary", "maybe")) - 0.3).abs() < 1e-9);
    }

    #[test]
    fn header_value_matches_exactly_and_falls_through_otherwise() {
        let config = pair(
            r#""nginx.ingress.kubernetes.io/canary":"true","nginx.ingress.kubernetes.io/canary-by-header":"x-user",
            "nginx.ingress.kubernetes.io/canary-by-header-value":"alice","nginx.ingress.kubernetes.io/canary-weight":"10""#,
        );
        assert_eq!(canary_share(&config, &with_header("x-user", "alice")), 1.0);
        assert!((canary_share(&config, &with_header("x-user", "bob")) - 0.1).abs() < 1e-9);
        // With a value configured, "always" is just another value.
        assert!((canary_share(&config, &with_header("x-user", "always")) - 0.1).abs() < 1e-9);
    }

    #[test]
    fn pattern_is_an_unanchored_search_and_ignored_next_to_a_value() {
        let config = pair(
            r#""nginx.ingress.kubernetes.io/canary":"true","nginx.ingress.kubernetes.io/canary-by-header":"user-agent",
            "nginx.ingress.kubernetes.io/canary-by-header-pattern":"Android""#,
        );
        assert_eq!(
            canary_share(&config, &with_header("user-agent", "Mozilla Android 12")),
            1.0
        );
        let both = pair(
            r#""nginx.ingress.kubernetes.io/canary":"true","nginx.ingress.kubernetes.io/canary-by-header":"user-agent",
            "nginx.ingress.kubernetes.io/canary-by-header-value":"x","nginx.ingress.kubernetes.io/canary-by-header-pattern":"Android""#,
        );
        assert_eq!(
            canary_share(&both, &with_header("user-agent", "Android")),
            0.0
        );
        assert!(
            IngressNginx
                .config_problems(&both)
                .iter()
                .any(|p| p.message.contains("ignored when canary-by-header-value"))
        );
    }

    #[test]
    fn a_broken_pattern_sends_header_requests_to_stable_and_is_reported() {
        let config = pair(
            r#""nginx.ingress.kubernetes.io/canary":"true","nginx.ingress.kubernetes.io/canary-by-header":"x",
            "nginx.ingress.kubernetes.io/canary-by-header-pattern":"(?!a)","nginx.ingress.kubernetes.io/canary-weight":"100""#,
        );
        assert_eq!(canary_share(&config, &with_header("x", "b")), 0.0);
        assert_eq!(IngressNginx.config_problems(&config).len(), 1);
    }

    #[test]
    fn query_conditions_cannot_be_expressed_so_requests_without_them_reach_the_canary() {
        // What a script writes for `header x-canary: true AND query beta=1`: the query is lost.
        let config = pair(
            r#""nginx.ingress.kubernetes.io/canary":"true","nginx.ingress.kubernetes.io/canary-by-header":"x-canary",
            "nginx.ingress.kubernetes.io/canary-by-header-value":"true""#,
        );
        let without_query = with_header("x-canary", "true");
        assert_eq!(canary_share(&config, &without_query), 1.0);
    }

    #[test]
    fn weight_total_scales_the_weight_and_no_canary_flag_means_no_split() {
        let config = pair(
            r#""nginx.ingress.kubernetes.io/canary":"true","nginx.ingress.kubernetes.io/canary-weight":"5",
            "nginx.ingress.kubernetes.io/canary-weight-total":"1000""#,
        );
        assert!((canary_share(&config, &on_host(Request::get("/"))) - 0.005).abs() < 1e-9);
        let off = pair(r#""nginx.ingress.kubernetes.io/canary-weight":"50""#);
        assert_eq!(
            IngressNginx.route(&off, &on_host(Request::get("/"))),
            Routed::to(Distribution::single(Backend {
                service: "web".into(),
                subset: None,
                port: Some("80".into())
            }))
        );
        assert_eq!(IngressNginx.config_problems(&off).len(), 1);
    }

    #[test]
    fn weight_total_up_to_100_is_not_honoured() {
        // balancer.lua: a total of 10 with weight 2 is 2 of 100, not 2 of 10.
        let config = pair(
            r#""nginx.ingress.kubernetes.io/canary":"true","nginx.ingress.kubernetes.io/canary-weight":"2",
            "nginx.ingress.kubernetes.io/canary-weight-total":"10""#,
        );
        assert!((canary_share(&config, &on_host(Request::get("/"))) - 0.02).abs() < 1e-9);
        let problems = IngressNginx.config_problems(&config);
        assert!(
            problems.iter().any(|p| p
                .message
                .contains("canary-weight-total 10 is not above 100")),
            "{problems:?}"
        );
    }

    #[test]
    fn requests_outside_the_rules_have_no_route() {
        let config = pair(r#""nginx.ingress.kubernetes.io/canary":"true""#);
        assert_eq!(
            IngressNginx.route(&config, &Request::get("/")),
            Routed::NoRoute
        );
    }
}
