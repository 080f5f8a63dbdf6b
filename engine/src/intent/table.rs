//! The traffic table of a step: the intent check's probe requests grouped into request classes
//! (requests the original and the step's configuration route alike), each with its stable and
//! canary shares before and after the step and whether that is what the step asks. It is what
//! `kruise-lua plan` shows per step; the verdicts are the intent check's own ([`super::misrouting`]).

use std::collections::BTreeMap;

use crate::routing::{Backend, Distribution, GatewayConfig, Routed, RoutingModel};

use super::misrouting::{is_canary, misrouting};
use super::{Intent, probes};

/// At most this many request classes are kept per step (the first ones in probe order); the
/// rest are counted in [`TrafficTable::more_classes`].
pub const MAX_CLASSES: usize = 40;

/// What a backend is to the step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShareRole {
    /// The stable service (any subset or port of it).
    Stable,
    /// The canary: the canary service, or with one service for both, a backend the original
    /// did not send the request to.
    Canary,
    /// Any other backend the route serves.
    Other,
}

impl ShareRole {
    pub fn as_str(self) -> &'static str {
        match self {
            ShareRole::Stable => "stable",
            ShareRole::Canary => "canary",
            ShareRole::Other => "other",
        }
    }
}

/// One backend's share of a request class.
#[derive(Debug, Clone, PartialEq)]
pub struct Share {
    /// `web`, `web/v2` (subset), `web:8080`.
    pub backend: String,
    pub role: ShareRole,
    /// 0..=100.
    pub percent: f64,
}

/// Requests the original and the step's configuration route alike.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestClass {
    /// The first probe request of the class, as a log line (`GET /api with x-canary: 1`).
    pub example: String,
    /// How many probe requests the class holds.
    pub requests: usize,
    /// Where the original sends them; `None`: no route (the gateway answers itself).
    pub before: Option<Vec<Share>>,
    /// Where the step's configuration sends them; `None`: no route.
    pub after: Option<Vec<Share>>,
    /// `None` when it is what the step asks; else what the step asks, as the intent check
    /// words it (`web 80 %, web-canary 20 %`).
    pub misrouted: Option<String>,
}

impl RequestClass {
    /// The summed share of backends of `role` after the step (0..=100).
    pub fn after_percent(&self, role: ShareRole) -> f64 {
        self.after
            .iter()
            .flatten()
            .filter(|share| share.role == role)
            .map(|share| share.percent)
            .sum()
    }
}

/// A step's traffic table.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TrafficTable {
    pub classes: Vec<RequestClass>,
    /// Classes left out past [`MAX_CLASSES`].
    pub more_classes: usize,
    /// How many probe requests were routed.
    pub probes: usize,
    /// Whether the probe set was cut at the intent check's bounds.
    pub truncated: bool,
}

/// Routes the intent check's probes of a step through `before` and `after` (as
/// [`super::step_configs`] gives them) and groups them into request classes, in probe order.
pub fn traffic_table(
    model: &dyn RoutingModel,
    before: &GatewayConfig,
    after: &GatewayConfig,
    intent: &Intent,
) -> TrafficTable {
    // Configurations parsed once for the table (both borrowed for the whole call, as
    // `routing::memo` requires), patterns compiled once.
    crate::routing::matching::with_compiled_patterns(|| {
        crate::routing::memo::with_derived_memo(|| table(model, before, after, intent))
    })
}

fn table(
    model: &dyn RoutingModel,
    before: &GatewayConfig,
    after: &GatewayConfig,
    intent: &Intent,
) -> TrafficTable {
    let probe_set = probes(model, before, after, intent);
    let mut out = TrafficTable {
        probes: probe_set.requests.len(),
        truncated: probe_set.truncated,
        ..TrafficTable::default()
    };
    // Classes by (before, after, verdict) as text: distributions hold floats.
    let mut index: BTreeMap<(String, String, Option<String>), usize> = BTreeMap::new();
    for request in &probe_set.requests {
        let routed_before = model.route(before, request);
        let routed_after = model.route(after, request);
        let by_convention = model.canary_by_convention(after, request);
        let verdict = misrouting(
            model,
            intent,
            request,
            &routed_before,
            &routed_after,
            by_convention,
        )
        .map(|(_, expected)| expected);
        let key = (
            routed_before.describe(),
            routed_after.describe(),
            verdict.clone(),
        );
        match index.get(&key) {
            Some(&CUT) => continue,
            Some(&at) => {
                out.classes[at].requests += 1;
                continue;
            }
            None if out.classes.len() >= MAX_CLASSES => {
                index.insert(key, CUT);
                continue;
            }
            None => {}
        }
        let stable_backends: Vec<Backend> = match &routed_before {
            Routed::To(d) => d
                .shares
                .iter()
                .map(|(b, _)| b.clone())
                .filter(|b| intent.is_stable(model, b))
                .collect(),
            Routed::NoRoute => Vec::new(),
        };
        let shares = |routed: &Routed| match routed {
            Routed::To(d) => Some(shares_of(model, intent, &stable_backends, d)),
            Routed::NoRoute => None,
        };
        index.insert(key, out.classes.len());
        out.classes.push(RequestClass {
            example: request.describe(),
            requests: 1,
            before: shares(&routed_before),
            after: shares(&routed_after),
            misrouted: verdict,
        });
    }
    out.more_classes = index.values().filter(|&&at| at == CUT).count();
    out
}

/// The index of a class left out past [`MAX_CLASSES`].
const CUT: usize = usize::MAX;

fn shares_of(
    model: &dyn RoutingModel,
    intent: &Intent,
    stable_backends: &[Backend],
    distribution: &Distribution,
) -> Vec<Share> {
    let stable_refs: Vec<&Backend> = stable_backends.iter().collect();
    distribution
        .shares
        .iter()
        .map(|(backend, share)| {
            let role = if is_canary(model, intent, &stable_refs, backend) {
                ShareRole::Canary
            } else if intent.is_stable(model, backend) {
                ShareRole::Stable
            } else {
                ShareRole::Other
            };
            Share {
                backend: backend.describe(),
                role,
                percent: share * 100.0,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routing::istio::IstioVirtualService;

    fn vs(yaml: &str) -> GatewayConfig {
        GatewayConfig::Resource(
            crate::yaml::parse_first_document(yaml)
                .unwrap()
                .unwrap()
                .to_json(),
        )
    }

    fn intent(weight: Option<u32>) -> Intent {
        Intent {
            weight,
            stable_service: "web".into(),
            canary_service: "web-canary".into(),
            ..Intent::default()
        }
    }

    const ORIGINAL: &str = "apiVersion: networking.istio.io/v1beta1\nkind: VirtualService\nmetadata: {name: web}\nspec:\n  hosts: [web]\n  http:\n  - match:\n    - uri: {prefix: /admin}\n    route:\n    - destination: {host: admin}\n  - route:\n    - destination: {host: web}\n";

    #[test]
    fn classes_split_stable_and_canary_and_keep_other_routes_apart() {
        let after = ORIGINAL.replace(
            "  - route:\n    - destination: {host: web}\n",
            "  - route:\n    - destination: {host: web}\n      weight: 80\n    - destination: {host: web-canary}\n      weight: 20\n",
        );
        let table = traffic_table(
            &IstioVirtualService,
            &vs(ORIGINAL),
            &vs(&after),
            &intent(Some(20)),
        );
        let web = table
            .classes
            .iter()
            .find(|c| c.after_percent(ShareRole::Canary) > 0.0)
            .expect("a class reaches the canary");
        assert_eq!(web.after_percent(ShareRole::Stable), 80.0);
        assert_eq!(web.after_percent(ShareRole::Canary), 20.0);
        assert_eq!(web.misrouted, None);
        let admin = table
            .classes
            .iter()
            .find(|c| c.example.contains("/admin"))
            .expect("the admin route is a class");
        assert_eq!(admin.after_percent(ShareRole::Other), 100.0);
        assert_eq!(admin.misrouted, None);
        assert!(table.probes >= 2);
    }

    #[test]
    fn a_split_other_than_asked_is_marked_with_what_the_step_asks() {
        let after = ORIGINAL.replace(
            "  - route:\n    - destination: {host: web}\n",
            "  - route:\n    - destination: {host: web}\n      weight: 50\n    - destination: {host: web-canary}\n      weight: 50\n",
        );
        let table = traffic_table(
            &IstioVirtualService,
            &vs(ORIGINAL),
            &vs(&after),
            &intent(Some(20)),
        );
        let web = table
            .classes
            .iter()
            .find(|c| c.after_percent(ShareRole::Canary) > 0.0)
            .unwrap();
        assert_eq!(
            web.misrouted.as_deref(),
            Some("web 80 %, web-canary 20 %"),
            "{table:#?}"
        );
    }
}
