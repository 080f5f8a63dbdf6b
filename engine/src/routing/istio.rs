//! Istio VirtualService (`networking.istio.io` v1alpha3, v1beta1, v1): how the mesh routes an
//! HTTP request through `spec.http`, with DestinationRule subsets as backends.
//!
//! Sources (istio/istio at 86c9f01, read, not copied):
//! - `pilot/pkg/networking/core/route/route.go`: `TranslateRouteMatch` (match fields, header
//!   presence, `withoutHeaders` inversion with a missing header read as empty, query
//!   parameters, `ignoreUriCase`), `TranslateRoute`/`applyHTTPRouteDestination` (one destination
//!   takes all traffic whatever its weight; with several, weight-0 destinations are left out and
//!   Envoy's weighted clusters share the rest in proportion to the weights).
//! - `pkg/config/validation/validation.go`: `validateHTTPRouteDestinations` ("total destination
//!   weight = 0" with several destinations, negative weights), `validateStringMatchRegexp`
//!   (Go regexp, i.e. RE2, at most 1024 bytes). Commit ac641d08093 (#39544, Istio 1.15) dropped
//!   the rule that several destinations' weights sum to 100: before 1.15 validation rejected
//!   "total destination weight != 100".
//! - Istio's VirtualService reference: HTTP routes are evaluated in order and the first whose
//!   match applies is used; the match list is ORed and the fields of one match are ANDed; a
//!   route without `match` matches everything.
//!
//! Not evaluated: the `port`, `sourceLabels`, `gateways`, `sourceNamespace` and `scheme`
//! conditions ([`UNEVALUATED`]). They restrict the match (Istio's reference,
//! https://istio.io/latest/docs/reference/config/networking/virtual-service/#HTTPMatchRequest),
//! and a probe carries none of them (it stands for a request on the default port from an
//! arbitrary client), so a match that has one is taken as not met and each is reported as a
//! [`ProblemKind::NotEvaluated`]. Not modelled: `delegate` (the delegated
//! VirtualService is another object), `mirror`, `rewrite`, fault injection. A route with
//! `redirect`, `directResponse` or `delegate` and no destinations answers the request itself
//! ([`Routed::NoRoute`]).

use std::collections::BTreeMap;

use super::SmolStr;
use super::fields::is_set;
use super::matching::{WholeValueRegex, re2_problem, sample_match};
use super::{
    Backend, ConfigProblem, Distribution, GatewayConfig, ProblemKind, Request, Routed, RoutingModel,
};
use crate::script::ScriptKind;
use crate::value::JsonValue;

pub struct IstioVirtualService;

fn http_routes(config: &GatewayConfig) -> &[JsonValue] {
    match config {
        GatewayConfig::Resource(object) => object
            .at(&["spec", "http"])
            .and_then(JsonValue::as_array)
            .unwrap_or_default(),
        GatewayConfig::Ingress { .. } => &[],
    }
}

/// An Istio `StringMatch`, read once per configuration (see [`route_table`]).
enum StringMatch {
    Exact(String),
    Prefix(String),
    Regex(WholeValueRegex),
    /// An empty match, or the regex `*`: presence only (`canBeConvertedToPresentMatch`).
    Presence,
}

impl StringMatch {
    fn of(matcher: &JsonValue) -> Self {
        if let Some(exact) = matcher.get("exact").and_then(JsonValue::as_str) {
            return StringMatch::Exact(exact.to_owned());
        }
        if let Some(prefix) = matcher.get("prefix").and_then(JsonValue::as_str) {
            return StringMatch::Prefix(prefix.to_owned());
        }
        match matcher.get("regex").and_then(JsonValue::as_str) {
            Some("*") | None => StringMatch::Presence,
            Some(regex) => StringMatch::Regex(WholeValueRegex::new(regex)),
        }
    }

    /// Applied to `value` (`None`: the header or parameter is absent).
    fn holds(&self, value: Option<&str>, ignore_case: bool) -> bool {
        let Some(value) = value else { return false };
        // Folded only when the case is ignored: a probe compares thousands of times.
        match self {
            StringMatch::Exact(exact) if ignore_case => {
                value.to_lowercase() == exact.to_lowercase()
            }
            StringMatch::Exact(exact) => value == exact,
            StringMatch::Prefix(prefix) if ignore_case => {
                value.to_lowercase().starts_with(&prefix.to_lowercase())
            }
            StringMatch::Prefix(prefix) => value.starts_with(prefix.as_str()),
            StringMatch::Regex(regex) => regex.is_match(value),
            StringMatch::Presence => true,
        }
    }
}

/// Whether a matcher only checks presence: no `exact`, no `prefix`, and no regex or `*`.
fn is_presence(matcher: &JsonValue) -> bool {
    ["exact", "prefix"]
        .iter()
        .all(|key| matcher.get(key).is_none())
        && matches!(
            matcher.get("regex").and_then(JsonValue::as_str),
            None | Some("*")
        )
}

/// The `HTTPMatchRequest` fields that restrict a match and that the model does not evaluate
/// (nothing a probe carries tells them): a match with one of them set is taken as not met.
const UNEVALUATED: [&str; 5] = [
    "port",
    "sourceLabels",
    "gateways",
    "sourceNamespace",
    "scheme",
];

/// One `HTTPMatchRequest`, read once per configuration.
struct MatchRequest {
    /// One of [`UNEVALUATED`] is set: no probe meets the match.
    unevaluated: bool,
    ignore_case: bool,
    uri: Option<StringMatch>,
    headers: Vec<(String, StringMatch)>,
    /// With whether the matcher is a presence check ([`is_presence`]).
    without_headers: Vec<(String, StringMatch, bool)>,
    query: Vec<(String, StringMatch)>,
    method: Option<StringMatch>,
    authority: Option<StringMatch>,
}

impl MatchRequest {
    fn of(condition: &JsonValue) -> Self {
        let named = |key: &str| {
            condition
                .get(key)
                .and_then(JsonValue::as_object)
                .into_iter()
                .flatten()
                .map(|(name, matcher)| (name.clone(), StringMatch::of(matcher)))
                .collect()
        };
        MatchRequest {
            unevaluated: UNEVALUATED.iter().any(|key| is_set(condition.get(key))),
            ignore_case: condition
                .get("ignoreUriCase")
                .and_then(JsonValue::as_bool)
                .unwrap_or(false),
            uri: condition.get("uri").map(StringMatch::of),
            headers: named("headers"),
            without_headers: condition
                .get("withoutHeaders")
                .and_then(JsonValue::as_object)
                .into_iter()
                .flatten()
                .map(|(name, matcher)| {
                    (name.clone(), StringMatch::of(matcher), is_presence(matcher))
                })
                .collect(),
            query: named("queryParams"),
            method: condition.get("method").map(StringMatch::of),
            authority: condition.get("authority").map(StringMatch::of),
        }
    }

    /// Every field present must hold.
    fn applies(&self, request: &Request) -> bool {
        if self.unevaluated {
            return false;
        }
        if let Some(uri) = &self.uri
            && !uri.holds(Some(&request.path), self.ignore_case)
        {
            return false;
        }
        // Envoy keeps header names lower-case; Istio documents match keys as lower-case.
        if !self
            .headers
            .iter()
            .all(|(name, m)| m.holds(super::header_value(request, name), false))
        {
            return false;
        }
        // Inverted header matchers: a missing header reads as "" unless the matcher is a
        // presence check (TreatMissingHeaderAsEmpty).
        for (name, matcher, presence) in &self.without_headers {
            let value = super::header_value(request, name);
            let matched = if *presence {
                value.is_some()
            } else {
                matcher.holds(Some(value.unwrap_or("")), false)
            };
            if matched {
                return false;
            }
        }
        if !self
            .query
            .iter()
            .all(|(name, m)| m.holds(request.query.get(name), false))
        {
            return false;
        }
        if let Some(method) = &self.method
            && !method.holds(Some(&request.method), false)
        {
            return false;
        }
        if let Some(authority) = &self.authority
            && !authority.holds(request.host.as_deref(), false)
        {
            return false;
        }
        true
    }
}

/// An `http` route as routing keeps it: its matches (`None`: no match list, it takes every
/// request) and where it sends a request (the same for every request it takes).
struct TableRoute {
    matches: Option<Vec<MatchRequest>>,
    routed: Routed,
}

fn route_table(config: &GatewayConfig) -> Vec<TableRoute> {
    http_routes(config)
        .iter()
        .enumerate()
        .map(|(index, route)| TableRoute {
            matches: match route.get("match").and_then(JsonValue::as_array) {
                None | Some([]) => None,
                Some(conditions) => Some(conditions.iter().map(MatchRequest::of).collect()),
            },
            routed: distribution(route).via(format!("spec.http[{index}]")),
        })
        .collect()
}

/// The request header operations of a `Headers` object: set and add as values, remove as `None`.
fn header_operations(headers: Option<&JsonValue>) -> BTreeMap<String, Option<String>> {
    let mut changes = BTreeMap::new();
    let Some(request) = headers.and_then(|h| h.get("request")) else {
        return changes;
    };
    for key in ["set", "add"] {
        for (name, value) in request
            .get(key)
            .and_then(JsonValue::as_object)
            .into_iter()
            .flatten()
        {
            if let Some(value) = value.as_str() {
                changes.insert(name.to_ascii_lowercase(), Some(value.to_owned()));
            }
        }
    }
    for name in request
        .get("remove")
        .and_then(JsonValue::as_array)
        .unwrap_or_default()
    {
        if let Some(name) = name.as_str() {
            changes.insert(name.to_ascii_lowercase(), None);
        }
    }
    changes
}

fn backend_of(destination: &JsonValue) -> Backend {
    let target = destination.get("destination");
    let text = |key: &str| {
        target
            .and_then(|t| t.get(key))
            .and_then(JsonValue::as_str)
            .map(SmolStr::from)
    };
    Backend {
        service: text("host").unwrap_or_default(),
        subset: text("subset"),
        port: target
            .and_then(|t| t.at(&["port", "number"]))
            .and_then(JsonValue::as_f64)
            .map(|n| smol_str::format_smolstr!("{n}")),
    }
}

fn weight_of(destination: &JsonValue) -> f64 {
    destination
        .get("weight")
        .and_then(JsonValue::as_f64)
        .unwrap_or(0.0)
}

fn distribution(route: &JsonValue) -> Routed {
    let destinations = route
        .get("route")
        .and_then(JsonValue::as_array)
        .unwrap_or_default();
    let route_headers = header_operations(route.get("headers"));
    let weighted: Vec<(Backend, f64)> = match destinations {
        [] => return Routed::NoRoute,
        // A single destination takes all traffic, whatever its weight.
        [only] => vec![(backend_of(only), 1.0)],
        several => several
            .iter()
            .map(|d| (backend_of(d), weight_of(d)))
            .collect(),
    };
    let Some(mut shares) = Distribution::from_weights(&weighted) else {
        return Routed::NoRoute;
    };
    for destination in destinations {
        let backend = backend_of(destination);
        if !shares.shares.iter().any(|(b, _)| *b == backend) {
            continue;
        }
        // Route-level operations first, the destination's own on top (Envoy applies both).
        let mut changes = route_headers.clone();
        changes.extend(header_operations(destination.get("headers")));
        if !changes.is_empty() {
            shares.header_changes.insert(backend, changes);
        }
    }
    Routed::to(shares)
}

/// Whether `host` (a request host) is one of the VirtualService's `hosts` (`*` and `*.suffix`
/// wildcards).
fn host_applies(hosts: &[JsonValue], host: &str) -> bool {
    hosts.is_empty()
        || hosts.iter().filter_map(JsonValue::as_str).any(|h| {
            h == "*"
                || h.eq_ignore_ascii_case(host)
                || h.strip_prefix('*').is_some_and(|suffix| {
                    host.to_ascii_lowercase()
                        .ends_with(&suffix.to_ascii_lowercase())
                })
        })
}

/// A value a `StringMatch` accepts, for probes (`None` when no sample is found).
fn sample(matcher: &JsonValue) -> Option<String> {
    if let Some(exact) = matcher.get("exact").and_then(JsonValue::as_str) {
        return Some(exact.to_owned());
    }
    if let Some(prefix) = matcher.get("prefix").and_then(JsonValue::as_str) {
        return Some(prefix.to_owned());
    }
    match matcher.get("regex").and_then(JsonValue::as_str) {
        Some("*") | None => Some("1".to_owned()),
        Some(regex) => sample_match(regex),
    }
}

/// A request `condition` accepts, and variants that each miss one of its conditions.
fn probes_for(condition: &JsonValue) -> Vec<Request> {
    let mut request = Request::get("/");
    if let Some(path) = condition.get("uri").and_then(sample) {
        request.path = if path.starts_with('/') {
            path.into()
        } else {
            format!("/{path}").into()
        };
    }
    let mut headers = Vec::new();
    for (name, matcher) in condition
        .get("headers")
        .and_then(JsonValue::as_object)
        .into_iter()
        .flatten()
    {
        if let Some(value) = sample(matcher) {
            request
                .headers
                .insert(name.to_ascii_lowercase(), value.clone());
            headers.push(name.to_ascii_lowercase());
        }
    }
    let mut params = Vec::new();
    for (name, matcher) in condition
        .get("queryParams")
        .and_then(JsonValue::as_object)
        .into_iter()
        .flatten()
    {
        if let Some(value) = sample(matcher) {
            request.query.insert(name.clone(), value);
            params.push(name.clone());
        }
    }
    if let Some(method) = condition
        .get("method")
        .and_then(|m| m.get("exact"))
        .and_then(JsonValue::as_str)
    {
        request.method = method.into();
    }
    if let Some(host) = condition
        .get("authority")
        .and_then(|m| m.get("exact"))
        .and_then(JsonValue::as_str)
    {
        request.host = Some(host.into());
    }
    let mut out = vec![request.clone()];
    if let Some(uri) = condition.get("uri") {
        let mut miss = request.clone();
        miss.path = "/__no_such_path".into();
        out.push(miss);
        // Below a prefix, and a longer name sharing its text (a string prefix matches both).
        if let Some(prefix) = uri.get("prefix").and_then(JsonValue::as_str) {
            for path in [
                format!("{}/x", prefix.trim_end_matches('/')),
                format!("{prefix}x"),
            ] {
                let mut below = request.clone();
                below.path = path.into();
                out.push(below);
            }
        }
    }
    for name in headers {
        let mut miss = request.clone();
        miss.headers.remove(&name);
        out.push(miss);
    }
    for name in params {
        let mut miss = request.clone();
        miss.query.remove(&name);
        out.push(miss);
    }
    out
}

fn is_v1(object: &JsonValue) -> bool {
    object.get("apiVersion").and_then(JsonValue::as_str) == Some("networking.istio.io/v1")
}

impl RoutingModel for IstioVirtualService {
    fn name(&self) -> &'static str {
        "Istio VirtualService (networking.istio.io v1alpha3, v1beta1, v1)"
    }

    fn applies_to(&self, kind: &ScriptKind) -> bool {
        matches!(kind, ScriptKind::Custom { group, kind }
            if group == "networking.istio.io" && kind == "VirtualService")
    }

    fn config_problems(&self, config: &GatewayConfig) -> Vec<ConfigProblem> {
        let mut problems = Vec::new();
        let GatewayConfig::Resource(object) = config else {
            return problems;
        };
        let rejected = |path: String, message: String| ConfigProblem {
            path,
            kind: ProblemKind::Rejected,
            message,
        };
        for (r, route) in http_routes(config).iter().enumerate() {
            for (m, condition) in route
                .get("match")
                .and_then(JsonValue::as_array)
                .unwrap_or_default()
                .iter()
                .enumerate()
            {
                let base = format!("spec.http[{r}].match[{m}]");
                for key in UNEVALUATED {
                    if is_set(condition.get(key)) {
                        problems.push(ConfigProblem::not_evaluated(format!("{base}.{key}")));
                    }
                }
                let mut matchers: Vec<(String, &JsonValue)> = Vec::new();
                for key in ["uri", "method", "authority", "scheme"] {
                    if let Some(matcher) = condition.get(key) {
                        matchers.push((format!("{base}.{key}"), matcher));
                    }
                }
                for key in ["headers", "withoutHeaders", "queryParams"] {
                    for (name, matcher) in condition
                        .get(key)
                        .and_then(JsonValue::as_object)
                        .into_iter()
                        .flatten()
                    {
                        matchers.push((format!("{base}.{key}.{name}"), matcher));
                    }
                }
                for (path, matcher) in matchers {
                    // `*` is a presence check, not a regex (validateHTTPRouteMatchRequest).
                    if let Some(regex) = matcher.get("regex").and_then(JsonValue::as_str)
                        && regex != "*"
                    {
                        if regex.is_empty() {
                            problems.push(rejected(
                                path,
                                "regex string match should not be empty".to_owned(),
                            ));
                        } else if regex.len() > 1024 {
                            problems.push(rejected(
                                path,
                                "regex is too large, max length allowed is 1024".to_owned(),
                            ));
                        } else if let Some(problem) = re2_problem(regex) {
                            problems.push(rejected(path, problem));
                        }
                    }
                }
            }
            let destinations = route
                .get("route")
                .and_then(JsonValue::as_array)
                .unwrap_or_default();
            let mut total = 0.0;
            for (d, destination) in destinations.iter().enumerate() {
                let weight = weight_of(destination);
                if weight < 0.0 {
                    problems.push(rejected(
                        format!("spec.http[{r}].route[{d}].weight"),
                        format!("weight {weight} < 0"),
                    ));
                }
                total += weight;
            }
            if destinations.len() > 1 && total == 0.0 {
                problems.push(rejected(
                    format!("spec.http[{r}].route"),
                    "total destination weight = 0".to_owned(),
                ));
            } else if destinations.len() > 1 && total != 100.0 && !is_v1(object) {
                // networking.istio.io/v1 exists from Istio 1.22 on, which accepts any total;
                // earlier API versions may be served by Istio before 1.15.
                problems.push(rejected(
                    format!("spec.http[{r}].route"),
                    // No total in the text: the intent check accepts the problem when the
                    // original already has it (the user's Istio is then 1.15 or later).
                    "destination weights do not sum to 100 (rejected by Istio before 1.15; later versions share in proportion)".to_owned(),
                ));
            }
        }
        problems
    }

    fn route(&self, config: &GatewayConfig, request: &Request) -> Routed {
        let GatewayConfig::Resource(object) = config else {
            return Routed::NoRoute;
        };
        if let Some(host) = &request.host {
            let hosts = object
                .at(&["spec", "hosts"])
                .and_then(JsonValue::as_array)
                .unwrap_or_default();
            if !host_applies(hosts, host) {
                return Routed::NoRoute;
            }
        }
        // The first route whose match applies wins; what routes do is read once per
        // configuration (see `super::memo`).
        let table = super::memo::derived(config, || route_table(config));
        table
            .iter()
            .find(|route| {
                route
                    .matches
                    .as_ref()
                    .is_none_or(|list| list.iter().any(|m| m.applies(request)))
            })
            .map_or(Routed::NoRoute, |route| route.routed.clone())
    }

    fn probes(&self, config: &GatewayConfig) -> Vec<Request> {
        let mut probes = vec![Request::get("/"), Request::get("/__no_such_path")];
        for route in http_routes(config) {
            for condition in route
                .get("match")
                .and_then(JsonValue::as_array)
                .unwrap_or_default()
            {
                probes.extend(probes_for(condition));
            }
        }
        probes.sort();
        probes.dedup();
        probes
    }
}

#[cfg(test)]
mod tests;
