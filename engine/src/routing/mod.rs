//! How a gateway routes one request: a small model per gateway behind [`RoutingModel`], and the
//! request, backend and distribution types the intent check compares.
//!
//! A model answers two questions about a configuration (the resource after a step, or for an
//! ingress class the stable and canary Ingresses): would the gateway accept it
//! ([`RoutingModel::config_problems`]), and where does one request go ([`RoutingModel::route`]).
//! Each model lives in its own file and cites, next to each rule, the gateway source or
//! documentation it follows. Models are plain data in, plain data out, like the rest of the
//! engine.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::script::ScriptKind;

pub mod aliyun_alb;
pub mod apisix;
pub mod aws_alb;
mod canary_ingress;
pub mod contour;
pub mod contour_conditions;
pub mod emissary;
pub mod fields;
pub mod gloo;
pub mod higress;
pub mod ingress_rules;
pub mod istio;
pub mod kuma;
pub mod matching;
pub mod memo;
pub mod mse;
pub mod nginx;
pub mod probe;
mod request;
pub mod smi;
#[cfg(test)]
mod testing;
pub mod traefik;
pub mod traefik_rule;

use crate::value::JsonValue;
pub use canary_ingress::{
    bare_canary_ingress, canary_ingress, representative_stable_ingress, stable_of_canary_ingress,
    with_canary_annotations,
};
pub use request::{NameValues, Request, SmolStr, header_value};

/// Where traffic can go: a service (Kubernetes Service or the gateway's own upstream object),
/// optionally a subset (Istio DestinationRule subset, Gloo subset) and a port.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Backend {
    pub service: SmolStr,
    pub subset: Option<SmolStr>,
    /// The port as the resource names it (a number or a port name), when it does.
    pub port: Option<SmolStr>,
}

impl Backend {
    pub fn service(name: &str) -> Self {
        Backend {
            service: name.into(),
            ..Backend::default()
        }
    }

    /// `web`, `web/v2` (subset), `web:8080`.
    pub fn describe(&self) -> String {
        let mut text = self.service.to_string();
        if let Some(subset) = &self.subset {
            text.push('/');
            text.push_str(subset);
        }
        if let Some(port) = &self.port {
            text.push(':');
            text.push_str(port);
        }
        text
    }
}

/// How one request is spread over backends. Shares are fractions in `0..=1` that sum to 1
/// (within float rounding); backends with share 0 are left out. Two distributions are equal
/// when they send requests alike, whichever route they came from.
#[derive(Debug, Clone, Default)]
pub struct Distribution {
    pub shares: Vec<(Backend, f64)>,
    /// Request headers the gateway sets/adds/removes on the way to each backend, when the
    /// route applies a header modifier (lower-cased names; `None` value = removed).
    pub header_changes: BTreeMap<Backend, BTreeMap<String, Option<String>>>,
    /// Where in the resource the route that took the request is (`spec.http[1]`), when the
    /// model knows: violations name it. Not part of where the request goes.
    pub route_path: Option<SmolStr>,
}

impl PartialEq for Distribution {
    fn eq(&self, other: &Self) -> bool {
        self.shares == other.shares && self.header_changes == other.header_changes
    }
}

impl Distribution {
    /// Everything to one backend.
    pub fn single(backend: Backend) -> Self {
        Distribution {
            shares: vec![(backend, 1.0)],
            header_changes: BTreeMap::new(),
            route_path: None,
        }
    }

    /// From integer weights as gateways hold them: each backend gets `weight / total`;
    /// zero-weight backends are dropped. All-zero (or empty) weights give `None`: the gateway
    /// has nowhere to send the request (models decide what that means for them).
    pub fn from_weights(weights: &[(Backend, f64)]) -> Option<Self> {
        let total: f64 = weights.iter().map(|(_, w)| w.max(0.0)).sum();
        if total <= 0.0 {
            return None;
        }
        let mut shares: Vec<(Backend, f64)> = weights
            .iter()
            .filter(|(_, weight)| *weight > 0.0)
            .map(|(backend, weight)| (backend.clone(), weight / total))
            .collect();
        // In backend order, a backend named twice getting the sum of its shares in document
        // order (a stable sort keeps that order among equal backends).
        shares.sort_by(|a, b| a.0.cmp(&b.0));
        shares.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                kept.1 += later.1;
            }
            same
        });
        Some(Distribution {
            shares,
            header_changes: BTreeMap::new(),
            route_path: None,
        })
    }

    /// The share of every backend whose service is `service` (any subset or port).
    pub fn share_of_service(&self, service: &str) -> f64 {
        self.shares
            .iter()
            .filter(|(b, _)| b.service == service)
            .map(|(_, s)| s)
            .sum()
    }

    /// `web 90 %, web-canary 10 %`.
    pub fn describe(&self) -> String {
        self.shares
            .iter()
            .map(|(b, s)| format!("{} {}", b.describe(), format_percent(*s)))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn format_percent(share: f64) -> String {
    let percent = share * 100.0;
    if (percent - percent.round()).abs() < 1e-9 {
        format!("{} %", percent.round() as i64)
    } else {
        format!("{percent:.2} %")
    }
}

/// What a model decides for one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Routed {
    /// Spread over backends. Shared: models keep each route's decision in a table made once
    /// per configuration ([`memo`]) and hand out the same one for every request the route
    /// takes, so routing a probe copies no backend names.
    To(Arc<Distribution>),
    /// No route matches: the gateway answers itself (404 or its default).
    NoRoute,
}

impl Routed {
    /// As messages show it: the distribution ([`Distribution::describe`]) or `no route`.
    pub fn describe(&self) -> String {
        match self {
            Routed::To(d) => d.describe(),
            Routed::NoRoute => "no route".to_owned(),
        }
    }

    /// Spread over `distribution`'s backends.
    pub fn to(distribution: Distribution) -> Routed {
        Routed::To(Arc::new(distribution))
    }

    /// The same decision, naming where in the configuration the route that took the request is
    /// (`spec.http[1]`): violations show it.
    pub fn via(self, path: impl Into<SmolStr>) -> Routed {
        match self {
            Routed::To(mut d) => {
                Arc::make_mut(&mut d).route_path = Some(path.into());
                Routed::To(d)
            }
            Routed::NoRoute => Routed::NoRoute,
        }
    }
}

/// The configuration a model reads.
#[derive(Debug, Clone, PartialEq)]
pub enum GatewayConfig {
    /// A custom resource: the whole object (`apiVersion`, `kind`, `metadata`, `spec`) as it
    /// is in the cluster, e.g. after [`crate::schema::patched_resource`] applied a step.
    Resource(JsonValue),
    /// An ingress class: the stable Ingress (the user's) and, once Kruise created it, the
    /// canary Ingress (a copy pointing at the canary service, carrying the script's
    /// annotations; [`canary_ingress`] builds it as Kruise does). The stable Ingress is shared
    /// by the configuration before the rollout and after each step of a case, and so is what
    /// models derive from it ([`memo`] keys by its address).
    Ingress {
        stable: Arc<JsonValue>,
        canary: Option<JsonValue>,
    },
}

/// A configuration the gateway would reject, a part of it the gateway ignores, or a part the
/// model does not evaluate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigProblem {
    /// Where in the resource (`spec.http[1].match[0].uri`), in the form
    /// [`crate::path_text::format_path`] writes; empty when it concerns the whole object.
    pub path: String,
    pub kind: ProblemKind,
    /// For `Rejected` and `Ignored`, what the gateway says; for `NotEvaluated` and
    /// `PastModelBounds`, what follows the path in the check's note (`is not evaluated …`).
    pub message: String,
}

impl ConfigProblem {
    /// A match condition at `path` that the model does not evaluate (a port, source labels, a
    /// client address: nothing a probe carries), so routing takes the probes as not meeting it.
    pub fn not_evaluated(path: String) -> Self {
        ConfigProblem {
            path,
            kind: ProblemKind::NotEvaluated,
            message: "is not evaluated (probes are taken as not meeting it)".to_owned(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProblemKind {
    /// The gateway or its admission refuses it.
    Rejected,
    /// The gateway accepts it, without effect.
    Ignored,
    /// A condition the model does not evaluate. Routing takes the probes (requests on the
    /// default port from an arbitrary client) as not meeting it, so the routes after it are
    /// probed; the intent check says the step is only partly checked, naming it. Not a fault
    /// of the configuration.
    NotEvaluated,
    /// A part past the model's own bounds (kept so that hostile input costs bounded time and
    /// memory: a Traefik rule with too many matchers), which the gateway may well accept. The
    /// model cannot tell which requests it takes, so the intent check judges no probe of the
    /// step and says so. Not a fault of the configuration.
    PastModelBounds,
}

impl ProblemKind {
    /// Whether the problem is about the model, not the configuration: the intent check notes
    /// it (the step is partly checked) rather than reporting a violation.
    pub fn is_model_limit(self) -> bool {
        matches!(
            self,
            ProblemKind::NotEvaluated | ProblemKind::PastModelBounds
        )
    }
}

/// A model of how one gateway (and version) routes requests.
pub trait RoutingModel: Send + Sync {
    /// The gateway and the versions modelled: `Istio VirtualService (networking.istio.io/v1beta1, v1)`.
    fn name(&self) -> &'static str;

    /// Whether this model is the one for a script of this kind.
    fn applies_to(&self, kind: &ScriptKind) -> bool;

    /// What the gateway would refuse, or accept and ignore, in this configuration; and the
    /// conditions of it the model does not evaluate ([`ProblemKind::NotEvaluated`],
    /// [`ProblemKind::PastModelBounds`]), so that the check never passes them in silence.
    fn config_problems(&self, config: &GatewayConfig) -> Vec<ConfigProblem>;

    /// Where `request` goes under `config`.
    fn route(&self, config: &GatewayConfig, request: &Request) -> Routed;

    /// Requests that exercise every route of `config`: at least one per route/rule that
    /// matches it (and, where the route has conditions, one that just misses them). The
    /// intent check adds the step's own matches to these.
    fn probes(&self, config: &GatewayConfig) -> Vec<Request>;

    /// Whether the gateway compares header and query values without regard to case, so that
    /// a step's `Exact` value cannot be held to its case there (the intent check then sends
    /// no other-case probe). By default values are case-sensitive, as the Gateway API's
    /// `HTTPHeaderMatch` and `HTTPQueryParamMatch` are.
    fn values_ignore_case(&self) -> bool {
        false
    }

    /// Whether `backend` is the Kubernetes Service `service` of `namespace` (any subset or port
    /// of it); `namespace` is the resource's own `metadata.namespace` (see
    /// [`resource_namespace`]), `None` when the resource gives none. By default the backend's
    /// name is one of the Service's DNS names ([`names_service`]); a gateway that names
    /// backends otherwise (Gloo's discovered upstreams) says how.
    fn is_service(&self, backend: &Backend, service: &str, namespace: Option<&str>) -> bool {
        names_service(&backend.service, service, namespace)
    }

    /// For an ingress class: whether the canary decision reads nothing but the canary Ingress's
    /// annotations, alike on every path Kruise copies into the canary Ingress
    /// (openkruise/rollouts `pkg/trafficrouting/network/ingress/ingress.go`,
    /// `buildCanaryIngress`: every stable-service path, same host and path), so that one
    /// representative path stands for all of them when a case's `original` gives no rules.
    /// Classes whose annotations carry path conditions of their own (AWS ALB's `conditions`)
    /// say no.
    fn canary_decision_is_path_independent(&self) -> bool {
        false
    }

    /// Whether the gateway can change request headers on the way to the canary (a step's
    /// `requestHeaderModifier`). A gateway that cannot (ingress-nginx's canary annotations have
    /// no header control) leaves that part of the step unchecked, and the check says so.
    fn can_modify_request_headers(&self) -> bool {
        true
    }

    /// Whether the gateway's only regular expressions for a step's `RegularExpression` search
    /// the value (match anywhere in it) rather than match all of it, so that a step's regex may
    /// be read either way. Kruise hands the value to the gateway unchanged and documents the
    /// syntax as the gateway's (`HttpRouteMatch`, "Supported list"); ingress-nginx's only regex
    /// canary is `canary-by-header-pattern`, an unanchored search. Gateways with whole-value
    /// regexes (Envoy's `safe_regex`) say no: there a step's regex matches all of the value.
    fn step_regex_may_search(&self) -> bool {
        false
    }

    /// Whether the gateway sends `request` to the canary under `config` by a convention of its
    /// own that no script can switch off, so that doing so is not the script's doing (Higress
    /// matches a `canary-by-header-value` as the regex `always|<value>`).
    fn canary_by_convention(&self, _config: &GatewayConfig, _request: &Request) -> bool {
        false
    }

    /// The configuration the gateway sees when the script's resource is `config` (`original`
    /// is that resource before the rollout): `None` when it is `config` itself, the default,
    /// so that callers keep no second copy. A gateway that combines several objects into one
    /// decision adds the ones a Rollout's setup implies (Emissary groups the canary Mapping a
    /// script edits with the stable Mapping beside it), as a `kind: List` resource with
    /// `items`. `Err(why)` when the resource alone cannot show where traffic goes (the intent
    /// check then skips the step and says why).
    fn surroundings(
        &self,
        _config: &GatewayConfig,
        _original: &GatewayConfig,
        _stable_service: &str,
        _canary_service: &str,
    ) -> Result<Option<GatewayConfig>, String> {
        Ok(None)
    }
}

/// Whether `name` is a DNS name of the Service `service` in `namespace`: `service` itself,
/// `service.<namespace>`, `service.<namespace>.svc` or `service.<namespace>.svc.<cluster
/// domain>` (Kubernetes "DNS for Services and Pods",
/// https://kubernetes.io/docs/concepts/services-networking/dns-pod-service/: a Service's
/// record is `<service>.<namespace>.svc.<cluster-domain>`, and a pod's search path resolves the
/// shorter forms; a short name is the Service of the referring object's own namespace, as
/// Istio's `Destination.host` says: "reviews" in a rule of namespace `foo` is
/// `reviews.foo.svc.cluster.local`, and `reviews.bar.svc.cluster.local` another Service,
/// https://istio.io/latest/docs/reference/config/networking/virtual-service/#Destination).
///
/// `namespace` is the namespace of the resource that names the backend (`None` when it gives
/// none). Kruise reads a Rollout's custom resource in the Rollout's namespace
/// (openkruise/rollouts `pkg/trafficrouting/network/customNetworkProvider/
/// custom_network_provider.go`, `RolloutNs`), where the Rollout's Services are too, so a name
/// qualified with another namespace is another Service. A resource without namespace is one the
/// case does not place; any namespace qualifier is then accepted (the check cannot tell which
/// namespace the Rollout has; giving `metadata.namespace` in the case lets it). Other names
/// (`web.example.com`, `web-v2`) are not the Service.
pub fn names_service(name: &str, service: &str, namespace: Option<&str>) -> bool {
    let Some(rest) = name.strip_prefix(service) else {
        return false;
    };
    if rest.is_empty() {
        return true;
    }
    let Some(qualifier) = rest.strip_prefix('.') else {
        return false;
    };
    let (ns, tail) = qualifier.split_once('.').unwrap_or((qualifier, ""));
    !ns.is_empty()
        && namespace.is_none_or(|own| own == ns)
        && (tail.is_empty()
            || tail == "svc"
            || tail
                .strip_prefix("svc.")
                .is_some_and(|domain| !domain.is_empty()))
}

/// The namespace the resource of `config` is in (`metadata.namespace`; for an ingress class,
/// the stable Ingress's), when it gives one: the namespace [`RoutingModel::is_service`] reads
/// backends in.
pub fn resource_namespace(config: &GatewayConfig) -> Option<&str> {
    match config {
        GatewayConfig::Resource(object) => object_namespace(object),
        GatewayConfig::Ingress { stable, .. } => object_namespace(stable),
    }
}

/// An object's `metadata.namespace`, when it gives a non-empty one.
pub fn object_namespace(object: &JsonValue) -> Option<&str> {
    object
        .at(&["metadata", "namespace"])
        .and_then(JsonValue::as_str)
        .filter(|ns| !ns.is_empty())
}

/// Every model the engine has, in no particular order.
pub fn models() -> Vec<Box<dyn RoutingModel>> {
    vec![
        Box::new(istio::IstioVirtualService),
        Box::new(smi::SmiTrafficSplit),
        Box::new(gloo::GlooVirtualService),
        Box::new(emissary::EmissaryMapping),
        Box::new(traefik::TraefikIngressRoute),
        Box::new(traefik::TraefikServiceModel),
        Box::new(kuma::KumaMeshHttpRoute),
        Box::new(contour::ContourHttpProxy),
        // The 2.x controller (current): it refuses what 1.x accepted (duplicate backends).
        Box::new(apisix::ApisixRoute {
            controller: apisix::Controller::V2,
        }),
        Box::new(nginx::IngressNginx),
        Box::new(higress::Higress),
        Box::new(mse::Mse),
        Box::new(aliyun_alb::AliyunAlb),
        Box::new(aws_alb::AwsAlb),
    ]
}

/// The model for scripts of `kind`, if the engine has one.
pub fn model_for(kind: &ScriptKind) -> Option<Box<dyn RoutingModel>> {
    models().into_iter().find(|m| m.applies_to(kind))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_normalise_and_merge() {
        let web = Backend::service("web");
        let canary = Backend::service("web-canary");
        let d = Distribution::from_weights(&[
            (web.clone(), 1.0),
            (canary.clone(), 0.0),
            (web.clone(), 3.0),
        ])
        .unwrap();
        assert_eq!(d.shares, vec![(web, 1.0)]);
        assert!(Distribution::from_weights(&[(canary, 0.0)]).is_none());
    }

    #[test]
    fn service_names_are_read_in_the_resources_namespace() {
        let is = |name: &str, namespace: Option<&str>| names_service(name, "web", namespace);
        for name in [
            "web",
            "web.shop",
            "web.shop.svc",
            "web.shop.svc.cluster.local",
            "web.shop.svc.corp.internal",
        ] {
            assert!(is(name, Some("shop")), "{name}");
            assert!(is(name, None), "{name}");
        }
        // Another namespace's Service of the same name, and names that are no Service DNS
        // name of it.
        for name in [
            "web.payments",
            "web.payments.svc.cluster.local",
            "web-canary.shop",
            "webx",
            "web.",
            "web.shop.svc.",
            "web.shop.example.com",
        ] {
            assert!(!is(name, Some("shop")), "{name}");
        }
        // A resource without namespace: any namespace may be the Rollout's.
        assert!(is("web.payments.svc.cluster.local", None));
        assert!(!is("web.example.com", None));
    }

    #[test]
    fn descriptions_read_like_the_report() {
        let mut request = Request::get("/static");
        request.headers.insert("x-canary", "1");
        assert_eq!(request.describe(), "GET /static with x-canary: 1");
        let d = Distribution::from_weights(&[
            (Backend::service("web"), 2.0),
            (Backend::service("web-canary"), 1.0),
        ])
        .unwrap();
        assert_eq!(d.describe(), "web 66.67 %, web-canary 33.33 %");
    }
}
