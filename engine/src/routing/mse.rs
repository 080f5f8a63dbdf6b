//! Alibaba Cloud MSE Ingress canary annotations: the ingress-nginx names or their
//! `mse.ingress.kubernetes.io/` twins, MSE's query canary, and request header control.
//!
//! Sources (read, not copied):
//! - Alibaba Cloud docs, "Annotations supported by MSE Ingress gateways": the
//!   `nginx.ingress.kubernetes.io/` and `mse.ingress.kubernetes.io/` prefixes are equivalent
//!   for compatible annotations; MSE-only ones (`canary-by-query`, `-value`) take the `mse`
//!   prefix only.
//! - Alibaba Cloud docs, "Advanced usage of MSE Ingress": `canary-by-header`,
//!   `-by-header-value`, `-by-cookie`, `canary-weight`, `canary-weight-total` (default 100),
//!   `canary-by-query`/`-value`, and header control through
//!   `mse.ingress.kubernetes.io/request-header-control-add`/`-update` ("name value" lines) and
//!   `-remove` (comma-separated).
//! - MSE Ingress is the managed build of Higress, so the precedence and matching follow
//!   Higress's `canary.go` (see [`super::higress`]): a header or cookie canary takes no weight.
//!   The position of the query rule (after header and cookie) is an assumption: the docs give
//!   no order for it.

use super::higress::HigressFamily;
use super::{ConfigProblem, GatewayConfig, Request, Routed, RoutingModel};
use crate::script::ScriptKind;

pub struct Mse;

const MSE: HigressFamily = HigressFamily {
    own: "mse.ingress.kubernetes.io/",
    query: true,
};

impl RoutingModel for Mse {
    fn name(&self) -> &'static str {
        "Alibaba Cloud MSE Ingress canary annotations"
    }

    fn applies_to(&self, kind: &ScriptKind) -> bool {
        matches!(kind, ScriptKind::Ingress { class } if class == "mse")
    }

    fn config_problems(&self, config: &GatewayConfig) -> Vec<ConfigProblem> {
        MSE.problems(config)
    }

    fn route(&self, config: &GatewayConfig, request: &Request) -> Routed {
        MSE.route(config, request)
    }

    fn probes(&self, config: &GatewayConfig) -> Vec<Request> {
        MSE.probes(config)
    }

    // As Higress (module comment): annotations only.
    fn canary_decision_is_path_independent(&self) -> bool {
        true
    }

    // As Higress: the canary header's value `always` reaches the canary.
    fn canary_by_convention(&self, config: &GatewayConfig, request: &Request) -> bool {
        MSE.canary_by_convention(config, request)
    }

    // `canary-by-header-pattern` is read as nginx's unanchored search (the canary route matches
    // `.*<pattern>.*`, alibaba/higress 25488156 "Compatible with
    // nginx.ingress.kubernetes.io/canary-by-header-pattern"), so a step's regex handed to it
    // may be read as a search.
    fn step_regex_may_search(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routing::higress::tests::{pair, request};

    fn share(config: &GatewayConfig, request: &Request) -> f64 {
        match Mse.route(config, request) {
            Routed::To(d) => d.share_of_service("web-canary"),
            Routed::NoRoute => panic!("no route"),
        }
    }

    #[test]
    fn query_canary_matches_the_exact_value_and_takes_no_weight() {
        let config = pair(
            r#""nginx.ingress.kubernetes.io/canary":"true","mse.ingress.kubernetes.io/canary-by-query":"beta",
            "mse.ingress.kubernetes.io/canary-by-query-value":"1""#,
        );
        let mut r = request();
        r.query.insert("beta", "1");
        assert_eq!(share(&config, &r), 1.0);
        r.query.insert("beta", "2");
        assert_eq!(share(&config, &r), 0.0);
    }

    #[test]
    fn mse_prefix_reads_like_the_nginx_one() {
        let config = pair(
            r#""mse.ingress.kubernetes.io/canary":"true","mse.ingress.kubernetes.io/canary-weight":"20""#,
        );
        assert!((share(&config, &request()) - 0.2).abs() < 1e-9);
    }

    #[test]
    fn header_control_uses_the_mse_prefix() {
        let config = pair(
            r#""mse.ingress.kubernetes.io/canary":"true","mse.ingress.kubernetes.io/canary-weight":"100",
            "mse.ingress.kubernetes.io/request-header-control-add":"x-release canary""#,
        );
        let Routed::To(d) = Mse.route(&config, &request()) else {
            panic!()
        };
        let changes = d.header_changes.values().next().unwrap();
        assert_eq!(changes.get("x-release"), Some(&Some("canary".to_owned())));
    }
}
