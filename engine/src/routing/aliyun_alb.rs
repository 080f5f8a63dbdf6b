//! Alibaba Cloud ALB Ingress canary annotations (`alb.ingress.kubernetes.io/canary*`) and the
//! rule order (`alb.ingress.kubernetes.io/order`) that decides whether the canary rule is
//! reached at all.
//!
//! Sources (Alibaba Cloud docs, "Perform canary releases by using ALB Ingresses" and "Advanced
//! ALB Ingress configurations", read, not copied):
//! - A canary Ingress needs `alb.ingress.kubernetes.io/canary: "true"`.
//! - `canary-by-header`: requests carrying the header go to the canary; with
//!   `canary-by-header-value`, only those whose header has that value (the value has no effect
//!   without the header).
//! - `canary-by-cookie`: requests whose cookie has the value `always` go to the canary
//!   (`never`, or any other value, do not).
//! - `canary-weight`: the percentage (0–100) of the remaining requests for the canary.
//! - Precedence header > cookie > weight; header or cookie rules cannot be combined with a
//!   weight on the same Ingress: the highest-priority rule prevails.
//! - `order`: 1–1000, default 10, lower first; equal orders follow the lexicographic order of
//!   the Ingresses' namespace/name. The canary's rule and the stable rule cover the same host
//!   and path, so a canary rule ordered after the stable one is never reached.
//!
//! Not documented, so reported as ignored: `canary-by-header-pattern`, `canary-weight-total`.

use std::collections::BTreeMap;

use super::ingress_rules::{
    CanaryDecision, annotations, canary_notes, config_annotations, pair_probes, route_canary_pair,
};
use super::{ConfigProblem, GatewayConfig, ProblemKind, Request, Routed, RoutingModel};
use crate::script::ScriptKind;
use crate::value::JsonValue;

pub struct AliyunAlb;

const PREFIX: &str = "alb.ingress.kubernetes.io/";
const DEFAULT_ORDER: i64 = 10;

fn get<'a>(notes: &'a BTreeMap<String, String>, key: &str) -> Option<&'a str> {
    super::ingress_rules::annotation(notes, PREFIX, key)
        .map(String::as_str)
        .filter(|v| !v.is_empty())
}

/// The Ingress's place in the rule order: (order, "namespace/name").
fn rank(ingress: &JsonValue) -> (i64, String) {
    let order = get(&config_annotations(ingress), "order")
        .and_then(|o| o.trim().parse().ok())
        .unwrap_or(DEFAULT_ORDER);
    let name = |k: &str| {
        ingress
            .at(&["metadata", k])
            .and_then(JsonValue::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    (order, format!("{}/{}", name("namespace"), name("name")))
}

/// [`canary_first`]'s answer for a configuration.
struct CanaryFirst(bool);

/// Whether the canary Ingress's rules come before the stable one's.
fn canary_first(config: &GatewayConfig) -> bool {
    match config {
        GatewayConfig::Ingress {
            stable,
            canary: Some(canary),
        } => {
            // Once per configuration (see `super::memo`): every probe asks.
            super::memo::derived(config, || CanaryFirst(rank(canary) < rank(stable))).0
        }
        _ => false,
    }
}

fn decide(notes: &BTreeMap<String, String>, request: &Request) -> Option<CanaryDecision> {
    if get(notes, "canary") != Some("true") {
        return None;
    }
    let to = |yes: bool| {
        Some(if yes {
            CanaryDecision::Canary
        } else {
            CanaryDecision::Stable
        })
    };
    if let Some(name) = get(notes, "canary-by-header") {
        let value = super::header_value(request, name);
        return to(match get(notes, "canary-by-header-value") {
            Some(expected) => value.is_some_and(|v| v == expected),
            None => value.is_some(),
        });
    }
    if let Some(name) = get(notes, "canary-by-cookie") {
        return to(request.cookies.get(name).is_some_and(|v| v == "always"));
    }
    let weight = get(notes, "canary-weight")
        .and_then(|w| w.trim().parse::<i64>().ok())
        .unwrap_or(0) as f64;
    Some(CanaryDecision::Share((weight / 100.0).clamp(0.0, 1.0)))
}

impl RoutingModel for AliyunAlb {
    fn name(&self) -> &'static str {
        "Alibaba Cloud ALB Ingress canary annotations"
    }

    fn applies_to(&self, kind: &ScriptKind) -> bool {
        matches!(kind, ScriptKind::Ingress { class } if class == "aliyun-alb")
    }

    fn config_problems(&self, config: &GatewayConfig) -> Vec<ConfigProblem> {
        let notes = canary_notes(config);
        let mut problems = Vec::new();
        let mut problem = |key: &str, kind: ProblemKind, message: String| {
            problems.push(ConfigProblem {
                path: format!("metadata.annotations[\"{PREFIX}{key}\"]"),
                kind,
                message,
            })
        };
        for key in ["canary-by-header-pattern", "canary-weight-total"] {
            if get(&notes, key).is_some() {
                problem(
                    key,
                    ProblemKind::Ignored,
                    format!("ALB Ingress documents no {key} annotation"),
                );
            }
        }
        let by_request =
            get(&notes, "canary-by-header").is_some() || get(&notes, "canary-by-cookie").is_some();
        if by_request && get(&notes, "canary-weight").is_some() {
            problem(
                "canary-weight",
                ProblemKind::Ignored,
                "a header or cookie canary cannot be combined with a weight on one Ingress: \
                 the weight is ignored"
                    .into(),
            );
        }
        if get(&notes, "canary-by-header").is_some() && get(&notes, "canary-by-cookie").is_some() {
            problem(
                "canary-by-cookie",
                ProblemKind::Ignored,
                "the header rule takes precedence over the cookie rule".into(),
            );
        }
        if let Some(weight) = get(&notes, "canary-weight")
            && !weight
                .trim()
                .parse::<i64>()
                .is_ok_and(|w| (0..=100).contains(&w))
        {
            problem(
                "canary-weight",
                ProblemKind::Rejected,
                format!("canary-weight {weight:?} is not an integer in 0–100"),
            );
        }
        if let GatewayConfig::Ingress { stable, canary } = config {
            for (ingress, which) in
                std::iter::once((&**stable, "stable")).chain(canary.iter().map(|c| (c, "canary")))
            {
                if let Some(order) = get(&annotations(ingress), "order")
                    && !order
                        .trim()
                        .parse::<i64>()
                        .is_ok_and(|o| (1..=1000).contains(&o))
                {
                    problem(
                        "order",
                        ProblemKind::Rejected,
                        format!("the {which} Ingress's order {order:?} is not in 1–1000"),
                    );
                }
            }
            if canary.is_some() && get(&notes, "canary") == Some("true") && !canary_first(config) {
                problem(
                    "order",
                    ProblemKind::Ignored,
                    "the canary Ingress's rules are ordered after the stable Ingress's rules for \
                     the same paths: they are never reached"
                        .into(),
                );
            }
        }
        problems
    }

    fn route(&self, config: &GatewayConfig, request: &Request) -> Routed {
        let first = canary_first(config);
        route_canary_pair(
            config,
            request,
            |notes, request| if first { decide(notes, request) } else { None },
            |_| BTreeMap::new(),
        )
    }

    fn probes(&self, config: &GatewayConfig) -> Vec<Request> {
        let notes = canary_notes(config);
        pair_probes(config, &super::nginx::header_cookie_probes(&notes, PREFIX))
    }

    // The canary annotations and the two Ingresses' `order` decide, whatever the path
    // (module comment).
    fn canary_decision_is_path_independent(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routing::higress::tests::{pair, request};

    fn share(config: &GatewayConfig, request: &Request) -> f64 {
        match AliyunAlb.route(config, request) {
            Routed::To(d) => d.share_of_service("web-canary"),
            Routed::NoRoute => panic!("no route"),
        }
    }

    #[test]
    fn a_canary_ordered_after_the_stable_rule_gets_nothing() {
        // Same default order 10: "/web" sorts before "/web-canary".
        let tied = pair(
            r#""alb.ingress.kubernetes.io/canary":"true","alb.ingress.kubernetes.io/canary-weight":"50""#,
        );
        assert_eq!(share(&tied, &request()), 0.0);
        assert!(
            AliyunAlb
                .config_problems(&tied)
                .iter()
                .any(|p| p.message.contains("never reached"))
        );
        let first = pair(
            r#""alb.ingress.kubernetes.io/canary":"true","alb.ingress.kubernetes.io/canary-weight":"50","alb.ingress.kubernetes.io/order":"9""#,
        );
        assert_eq!(share(&first, &request()), 0.5);
        assert!(AliyunAlb.config_problems(&first).is_empty());
    }

    #[test]
    fn header_beats_cookie_and_weight() {
        let config = pair(
            r#""alb.ingress.kubernetes.io/canary":"true","alb.ingress.kubernetes.io/order":"1",
            "alb.ingress.kubernetes.io/canary-by-header":"x-canary","alb.ingress.kubernetes.io/canary-by-header-value":"yes",
            "alb.ingress.kubernetes.io/canary-by-cookie":"c","alb.ingress.kubernetes.io/canary-weight":"100""#,
        );
        let mut r = request();
        r.cookies.insert("c", "always");
        assert_eq!(share(&config, &r), 0.0);
        r.headers.insert("x-canary", "yes");
        assert_eq!(share(&config, &r), 1.0);
        assert_eq!(AliyunAlb.config_problems(&config).len(), 2);
    }

    #[test]
    fn cookie_needs_always() {
        let config = pair(
            r#""alb.ingress.kubernetes.io/canary":"true","alb.ingress.kubernetes.io/order":"1","alb.ingress.kubernetes.io/canary-by-cookie":"c""#,
        );
        let mut r = request();
        r.cookies.insert("c", "yes");
        assert_eq!(share(&config, &r), 0.0);
        r.cookies.insert("c", "always");
        assert_eq!(share(&config, &r), 1.0);
    }
}
