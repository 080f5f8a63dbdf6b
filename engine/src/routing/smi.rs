//! SMI TrafficSplit (`split.smi-spec.io` v1alpha1 to v1alpha4): how a mesh spreads the traffic
//! of the root service over `spec.backends`.
//!
//! Sources (servicemeshinterface/smi-spec, `apis/traffic-split/<version>/traffic-split.md`,
//! read, not copied):
//! - Implementations weight traffic between the services of `spec.backends`; the weights are
//!   relative (the v1alpha1 example's 10m/100m/1500m do not sum to anything in particular), so
//!   a backend gets `weight / total`, and a weight-0 backend gets nothing.
//! - v1alpha1 weights are Kubernetes quantities (`1 = 1000m`); from v1alpha2 on "Weights must
//!   be whole numbers".
//! - v1alpha3+ `spec.matches` names HTTPRouteGroups: requests matching them are split, the
//!   others go to the root service (`spec.service`). Route groups are other objects, so this
//!   model assumes every request matches them (the split applies to all probes).
//! - Ports are not part of the spec (a backend without the root service's port gets nothing;
//!   not modelled).
//! - `spec.service` is "the root service that clients use to communicate": only traffic
//!   addressed to it is split. A probe is a request addressed to a service (its host): one to
//!   the root is split over the backends, one to another service goes to that service as if no
//!   TrafficSplit were there. The probes of a configuration address its root, so the intent
//!   check sends the original root's clients through the step's configuration too: a step that
//!   changes `spec.service` leaves them going to the original root service itself, unsplit
//!   (and splits the traffic of the new root's clients instead).

use super::{
    Backend, ConfigProblem, Distribution, GatewayConfig, ProblemKind, Request, Routed,
    RoutingModel, SmolStr, names_service,
};
use crate::script::ScriptKind;
use crate::value::JsonValue;

pub struct SmiTrafficSplit;

fn backends(config: &GatewayConfig) -> &[JsonValue] {
    match config {
        GatewayConfig::Resource(object) => object
            .at(&["spec", "backends"])
            .and_then(JsonValue::as_array)
            .unwrap_or_default(),
        GatewayConfig::Ingress { .. } => &[],
    }
}

/// `spec.service`, the root service whose clients' traffic is split.
fn root(config: &GatewayConfig) -> Option<&str> {
    match config {
        GatewayConfig::Resource(object) => object
            .at(&["spec", "service"])
            .and_then(JsonValue::as_str)
            .filter(|root| !root.is_empty()),
        GatewayConfig::Ingress { .. } => None,
    }
}

fn is_v1alpha1(config: &GatewayConfig) -> bool {
    matches!(config, GatewayConfig::Resource(object)
        if object.get("apiVersion").and_then(JsonValue::as_str) == Some("split.smi-spec.io/v1alpha1"))
}

/// A v1alpha1 quantity (`500m`, `1`, `1.5`) as a number; `None` when it is not one.
fn quantity(text: &str) -> Option<f64> {
    match text.strip_suffix('m') {
        Some(milli) => milli.parse::<f64>().ok().map(|n| n / 1000.0),
        None => text.parse::<f64>().ok(),
    }
}

/// A backend's weight as this API version reads it; `None` when the version rejects it.
fn weight(config: &GatewayConfig, backend: &JsonValue) -> Option<f64> {
    match backend.get("weight") {
        None => Some(0.0),
        Some(JsonValue::String(text)) if is_v1alpha1(config) => quantity(text),
        Some(value) if is_v1alpha1(config) => value.as_f64(),
        // v1alpha2+: whole numbers only.
        Some(value) => value.as_f64().filter(|w| w.fract() == 0.0 && *w >= 0.0),
    }
}

impl RoutingModel for SmiTrafficSplit {
    fn name(&self) -> &'static str {
        "SMI TrafficSplit (split.smi-spec.io v1alpha1 to v1alpha4)"
    }

    fn applies_to(&self, kind: &ScriptKind) -> bool {
        matches!(kind, ScriptKind::Custom { group, kind }
            if group == "split.smi-spec.io" && kind == "TrafficSplit")
    }

    fn config_problems(&self, config: &GatewayConfig) -> Vec<ConfigProblem> {
        backends(config)
            .iter()
            .enumerate()
            .filter(|(_, backend)| weight(config, backend).is_none())
            .map(|(index, backend)| ConfigProblem {
                path: format!("spec.backends[{index}].weight"),
                kind: ProblemKind::Rejected,
                message: format!(
                    "weight {} is not a whole number (TrafficSplit v1alpha2 and later)",
                    backend
                        .get("weight")
                        .map(JsonValue::to_canonical_json)
                        .unwrap_or_default()
                ),
            })
            .collect()
    }

    fn route(&self, config: &GatewayConfig, request: &Request) -> Routed {
        // A request addressed to another service than the root is not this split's: it goes to
        // the service it is addressed to. (A request without host is taken as addressed to the
        // root.)
        if let (Some(host), Some(root)) = (request.host.as_deref(), root(config)) {
            let namespace = super::resource_namespace(config);
            if !names_service(host, root, namespace) && !names_service(root, host, namespace) {
                return Routed::to(Distribution::single(Backend::service(host)))
                    .via("spec.service");
            }
        }
        let weights: Vec<(Backend, f64)> = backends(config)
            .iter()
            .map(|backend| {
                let service = backend
                    .get("service")
                    .and_then(JsonValue::as_str)
                    .unwrap_or_default();
                (
                    Backend::service(service),
                    weight(config, backend).unwrap_or(0.0),
                )
            })
            .collect();
        Distribution::from_weights(&weights)
            .map_or(Routed::NoRoute, Routed::to)
            .via("spec.backends")
    }

    fn probes(&self, config: &GatewayConfig) -> Vec<Request> {
        // Every request to the root service is split the same way: one request, addressed to
        // the root (see the module's notes).
        let mut request = Request::get("/");
        request.host = root(config).map(SmolStr::from);
        vec![request]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(api_version: &str, backends: &str) -> GatewayConfig {
        let text = format!(
            r#"{{"apiVersion":"split.smi-spec.io/{api_version}","kind":"TrafficSplit","spec":{{"service":"web","backends":{backends}}}}}"#
        );
        GatewayConfig::Resource(JsonValue::parse_go_interface(text.as_bytes()).unwrap())
    }

    fn route(config: &GatewayConfig) -> String {
        SmiTrafficSplit.route(config, &Request::get("/")).describe()
    }

    #[test]
    fn only_requests_to_the_root_service_are_split() {
        // `split` gives the root `web`.
        let config = split(
            "v1alpha4",
            r#"[{"service":"web-v1","weight":3},{"service":"web-v2","weight":1}]"#,
        );
        let to = |host: Option<&str>| {
            let mut request = Request::get("/");
            request.host = host.map(SmolStr::from);
            SmiTrafficSplit.route(&config, &request).describe()
        };
        assert_eq!(to(Some("web")), "web-v1 75 %, web-v2 25 %");
        assert_eq!(
            to(Some("web.shop.svc.cluster.local")),
            "web-v1 75 %, web-v2 25 %"
        );
        assert_eq!(to(None), "web-v1 75 %, web-v2 25 %");
        // A client of another service reaches that service: this split is not its.
        assert_eq!(to(Some("web-apex")), "web-apex 100 %");
        // The probes address the root.
        let probes = SmiTrafficSplit.probes(&config);
        assert_eq!(probes.len(), 1);
        assert_eq!(probes[0].describe(), "GET web/");
    }

    #[test]
    fn weights_are_relative() {
        let config = split(
            "v1alpha2",
            r#"[{"service":"web-v1","weight":3},{"service":"web-v2","weight":1}]"#,
        );
        assert_eq!(route(&config), "web-v1 75 %, web-v2 25 %");
    }

    #[test]
    fn zero_or_missing_weights_get_nothing() {
        let config = split(
            "v1alpha3",
            r#"[{"service":"web","weight":100},{"service":"web-canary","weight":0},{"service":"other"}]"#,
        );
        assert_eq!(route(&config), "web 100 %");
        let none = split("v1alpha3", r#"[{"service":"web","weight":0}]"#);
        assert_eq!(route(&none), "no route");
    }

    #[test]
    fn v1alpha1_weights_are_quantities() {
        let config = split(
            "v1alpha1",
            r#"[{"service":"one","weight":"500m"},{"service":"two","weight":"1500m"}]"#,
        );
        assert_eq!(route(&config), "one 25 %, two 75 %");
        assert!(SmiTrafficSplit.config_problems(&config).is_empty());
    }

    #[test]
    fn later_versions_reject_fractions_and_quantities() {
        let config = split(
            "v1alpha2",
            r#"[{"service":"one","weight":"500m"},{"service":"two","weight":1.5},{"service":"three","weight":1}]"#,
        );
        let paths: Vec<String> = SmiTrafficSplit
            .config_problems(&config)
            .into_iter()
            .map(|p| p.path)
            .collect();
        assert_eq!(
            paths,
            ["spec.backends[0].weight", "spec.backends[1].weight"]
        );
    }
}
