//! Emissary-ingress Mapping (`getambassador.io` v2, v3alpha1): how Emissary routes an HTTP
//! request through Mappings, which it groups and splits by weight between them.
//!
//! Sources (emissary-ingress/emissary at 3ebe0f4, `python/ambassador/src/ambassador/ir/`,
//! read, not copied):
//! - `irhttpmapping.py` `_group_id`: Mappings with the same method (default GET), `prefix`,
//!   header names and values, query parameter names and values and `precedence` form one
//!   group. `headers` values of `true` check presence; `regex_headers` and
//!   `regex_query_parameters` hold regexes.
//! - `irhttpmapping.py` `_route_weight` and `ir.py` (groups in descending `group_weight`):
//!   groups are tried by `precedence`, then longer `prefix`, then longer header conditions
//!   (name + value length, +1 for a regex), then longer query conditions, then the prefix text.
//! - `irbasemappinggroup.py` `normalize_weights_in_mappings`: a lone Mapping gets 100; else the
//!   weighted Mappings take cumulative weights in order, a weight over 100 or a total over 100
//!   is an error, and the Mappings without weight share what is left (each
//!   `round(remaining / n)`, the last up to 100). Each Mapping becomes an Envoy route with
//!   `runtime_fraction` = its cumulative weight, and Envoy draws one random number per
//!   request, so a request falls through to later routes when the group's weights leave a gap.
//! - `prefix` is a string prefix, `prefix_exact: true` an exact path, `prefix_regex: true` a
//!   regex (Envoy's full-match `safe_regex`); `add_request_headers` (`{name: value}` or
//!   `{name: {value, append}}`) and `remove_request_headers` change canary-bound requests.
//!
//! The service is `[scheme://]name[.namespace][:port]`. Not evaluated: a `host` or `method`
//! read as a regex (`host_regex: true`, `method_regex: true`, `irhttpmapping.py`): the
//! Mapping is taken as not met by the probes and reported as a
//! [`ProblemKind::NotEvaluated`]. `case_sensitive: false` makes the `prefix` (and
//! `prefix_exact` path) compare in ASCII case-insensitively: Emissary hands it to the Envoy
//! route's `match.case_sensitive`, which Envoy applies to prefix and path matches and ignores
//! for `safe_regex` (Emissary's Mapping reference; Envoy's `route_components.proto`
//! `RouteMatch.case_sensitive`). Not modelled: rewrites, Host `mappingSelector`s.

use std::cmp::Reverse;
use std::collections::BTreeMap;

use super::SmolStr;
use super::matching::{full_match, re2_problem, sample_match};
use super::{
    Backend, ConfigProblem, Distribution, GatewayConfig, ProblemKind, Request, Routed, RoutingModel,
};
use crate::script::ScriptKind;
use crate::value::JsonValue;

pub struct EmissaryMapping;

/// The backend that stands for requests no route takes (Emissary answers 404).
pub const NO_ROUTE: &str = "(no route)";

/// A header or query condition: name, value (`None`: presence), regex.
type Condition = (String, Option<String>, bool);

/// One Mapping as routing reads it (owned: a configuration's Mappings are read once per step,
/// see [`table`]).
struct MappingView {
    /// `metadata.name` (`(unnamed)` without one).
    name: String,
    /// Its request header operations ([`header_operations`]).
    ops: BTreeMap<String, Option<String>>,
    prefix: String,
    exact: bool,
    regex: bool,
    /// `case_sensitive: false`: the prefix or exact path compared ignoring ASCII case.
    ignore_case: bool,
    headers: Vec<Condition>,
    query: Vec<Condition>,
    method: Option<String>,
    host: Option<String>,
    /// The fields read as regexes that the model does not evaluate (`host`, `method`): no
    /// probe meets the Mapping.
    unevaluated: Vec<&'static str>,
    precedence: i64,
    weight: Option<f64>,
    backend: Backend,
}

fn spec(object: &JsonValue) -> Option<&JsonValue> {
    object.get("spec")
}

fn conditions(spec: &JsonValue, plain: &str, regex: &str) -> Vec<Condition> {
    let mut out: Vec<Condition> = Vec::new();
    for (name, value) in spec
        .get(plain)
        .and_then(JsonValue::as_object)
        .into_iter()
        .flatten()
    {
        let value = match value {
            JsonValue::Bool(true) => None,
            JsonValue::String(text) => Some(text.clone()),
            other => Some(other.to_canonical_json()),
        };
        out.push((name.clone(), value, false));
    }
    for (name, value) in spec
        .get(regex)
        .and_then(JsonValue::as_object)
        .into_iter()
        .flatten()
    {
        out.push((name.clone(), value.as_str().map(str::to_owned), true));
    }
    out
}

/// `[scheme://]name[.namespace][:port]` as a backend.
fn parse_service(service: &str) -> Backend {
    let without_scheme = service.split_once("://").map_or(service, |(_, rest)| rest);
    let (name, port) = match without_scheme.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => {
            (name, Some(port.to_owned()))
        }
        _ => (without_scheme, None),
    };
    Backend {
        service: name.into(),
        subset: None,
        port: port.map(SmolStr::from),
    }
}

fn view(object: &JsonValue) -> Option<MappingView> {
    let spec = spec(object)?;
    let flag = |key: &str| spec.get(key).and_then(JsonValue::as_bool).unwrap_or(false);
    Some(MappingView {
        name: object
            .at(&["metadata", "name"])
            .and_then(JsonValue::as_str)
            .unwrap_or("(unnamed)")
            .to_owned(),
        ops: header_operations(spec),
        prefix: spec.get("prefix").and_then(JsonValue::as_str)?.to_owned(),
        exact: flag("prefix_exact"),
        regex: flag("prefix_regex"),
        ignore_case: spec.get("case_sensitive").and_then(JsonValue::as_bool) == Some(false),
        headers: conditions(spec, "headers", "regex_headers"),
        query: conditions(spec, "query_parameters", "regex_query_parameters"),
        method: spec
            .get("method")
            .and_then(JsonValue::as_str)
            .map(str::to_owned),
        host: spec
            .get("host")
            .and_then(JsonValue::as_str)
            .map(str::to_owned),
        unevaluated: [("host", "host_regex"), ("method", "method_regex")]
            .into_iter()
            .filter(|(key, regex)| flag(regex) && spec.get(key).is_some())
            .map(|(key, _)| key)
            .collect(),
        precedence: spec
            .get("precedence")
            .and_then(JsonValue::as_f64)
            .unwrap_or(0.0) as i64,
        weight: spec.get("weight").and_then(JsonValue::as_f64),
        backend: parse_service(
            spec.get("service")
                .and_then(JsonValue::as_str)
                .unwrap_or_default(),
        ),
    })
}

/// The Mappings of a configuration: one Mapping, or the items of a `kind: List`.
fn mappings(config: &GatewayConfig) -> Vec<MappingView> {
    let GatewayConfig::Resource(object) = config else {
        return Vec::new();
    };
    match object.get("items").and_then(JsonValue::as_array) {
        Some(items) => items.iter().filter_map(view).collect(),
        None => view(object).into_iter().collect(),
    }
}

/// A configuration's Mappings and their groups in the order Emissary tries them, each member
/// by its index in `all` with its cumulative weight: read once per configuration (see
/// `super::memo`), as the check routes every probe through the same one.
struct Table {
    all: Vec<MappingView>,
    groups: Vec<Result<Vec<(usize, f64)>, String>>,
}

/// The [`Table`] of a configuration, shared by routing, probes and configuration problems.
fn memo_table(config: &GatewayConfig) -> std::rc::Rc<Table> {
    super::memo::derived(config, || table(config))
}

fn table(config: &GatewayConfig) -> Table {
    let all = mappings(config);
    let at = |m: &MappingView| {
        all.iter()
            .position(|other| std::ptr::eq(other, m))
            .unwrap_or_default()
    };
    let groups = groups(&all)
        .into_iter()
        .map(|group| group.map(|members| members.into_iter().map(|(m, c)| (at(m), c)).collect()))
        .collect();
    Table { all, groups }
}

/// What `_group_id` hashes: method, prefix, header and query names with values, precedence.
type GroupKey = (
    String,
    String,
    Vec<(String, Option<String>)>,
    Vec<(String, Option<String>)>,
    i64,
);

fn group_key(m: &MappingView) -> GroupKey {
    let pairs = |list: &[Condition]| {
        let mut pairs: Vec<(String, Option<String>)> = list
            .iter()
            .map(|(n, v, _)| (n.clone(), v.clone()))
            .collect();
        pairs.sort();
        pairs
    };
    (
        m.method.clone().unwrap_or_else(|| "GET".to_owned()),
        m.prefix.clone(),
        pairs(&m.headers),
        pairs(&m.query),
        m.precedence,
    )
}

fn condition_length(list: &[Condition]) -> usize {
    // KeyValueDecorator.length: name + value ("*" when absent) + 1 for a regex.
    list.iter()
        .map(|(n, v, regex)| n.len() + v.as_deref().unwrap_or("*").len() + usize::from(*regex))
        .sum()
}

/// The groups in the order Emissary tries them, each with its Mappings' cumulative weights
/// (`Err` when `normalize_weights_in_mappings` refuses the group).
fn groups(all: &[MappingView]) -> Vec<Result<Vec<(&MappingView, f64)>, String>> {
    let mut grouped: Vec<(_, Vec<&MappingView>)> = Vec::new();
    for m in all {
        let key = group_key(m);
        match grouped.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) => members.push(m),
            None => grouped.push((key, vec![m])),
        }
    }
    grouped.sort_by_key(|(_, members)| {
        let m = members[0];
        Reverse((
            m.precedence,
            m.prefix.len(),
            condition_length(&m.headers),
            condition_length(&m.query),
            m.prefix.clone(),
        ))
    });
    grouped
        .into_iter()
        .map(|(_, members)| normalize(&members))
        .collect()
}

fn normalize<'a>(members: &[&'a MappingView]) -> Result<Vec<(&'a MappingView, f64)>, String> {
    if let [only] = members {
        return Ok(vec![(*only, 100.0)]);
    }
    let mut out = Vec::new();
    let mut current = 0.0;
    let mut weightless = Vec::new();
    for m in members {
        match m.weight {
            Some(weight) if weight > 100.0 => {
                return Err(format!("Mapping has invalid weight {weight}"));
            }
            Some(weight) => {
                current += round_half_even(weight);
                out.push((*m, current));
            }
            None => weightless.push(*m),
        }
    }
    if current > 100.0 {
        return Err(
            "Total weight of mappings exceeds 100, please reconfigure for correct behavior..."
                .to_owned(),
        );
    }
    if !weightless.is_empty() {
        let each = round_half_even((100.0 - current) / weightless.len() as f64);
        for (i, m) in weightless.iter().enumerate() {
            current = if i == weightless.len() - 1 {
                100.0
            } else {
                current + each
            };
            out.push((*m, current));
        }
    }
    Ok(out)
}

/// Python 3's `round()`: halves go to the even neighbour.
fn round_half_even(x: f64) -> f64 {
    let rounded = x.round();
    if (x - x.trunc()).abs() == 0.5 && rounded % 2.0 != 0.0 {
        rounded - x.signum()
    } else {
        rounded
    }
}

fn condition_holds(condition: &Condition, actual: Option<&str>) -> bool {
    let (_, value, regex) = condition;
    match (actual, value) {
        (None, _) => false,
        (Some(_), None) => true,
        (Some(actual), Some(value)) if *regex => full_match(value, actual),
        (Some(actual), Some(value)) => actual == value.as_str(),
    }
}

fn applies(m: &MappingView, request: &Request) -> bool {
    if !m.unevaluated.is_empty() {
        return false;
    }
    let (path, prefix) = (request.path.as_bytes(), m.prefix.as_bytes());
    let path_ok = if m.regex {
        full_match(&m.prefix, &request.path)
    } else if m.ignore_case {
        let start = path.get(..prefix.len());
        start.is_some_and(|start| start.eq_ignore_ascii_case(prefix))
            && (!m.exact || path.len() == prefix.len())
    } else if m.exact {
        path == prefix
    } else {
        path.starts_with(prefix)
    };
    path_ok
        && m.method
            .as_ref()
            .is_none_or(|method| *method == request.method)
        && match (&m.host, &request.host) {
            (Some(host), Some(actual)) => host.eq_ignore_ascii_case(actual),
            _ => true,
        }
        && m.headers
            .iter()
            .all(|c| condition_holds(c, super::header_value(request, &c.0)))
        && m.query
            .iter()
            .all(|c| condition_holds(c, request.query.get(&c.0)))
}

fn header_operations(spec: &JsonValue) -> BTreeMap<String, Option<String>> {
    let mut changes = BTreeMap::new();
    for (name, value) in spec
        .get("add_request_headers")
        .and_then(JsonValue::as_object)
        .into_iter()
        .flatten()
    {
        let value = match value {
            JsonValue::String(text) => Some(text.clone()),
            other => other
                .get("value")
                .and_then(JsonValue::as_str)
                .map(str::to_owned),
        };
        if let Some(value) = value {
            changes.insert(name.to_ascii_lowercase(), Some(value));
        }
    }
    for name in spec
        .get("remove_request_headers")
        .and_then(JsonValue::as_array)
        .unwrap_or_default()
    {
        if let Some(name) = name.as_str() {
            changes.insert(name.to_ascii_lowercase(), None);
        }
    }
    changes
}

fn samples(list: &[Condition]) -> Vec<(String, String)> {
    list.iter()
        .filter_map(|(name, value, regex)| {
            let value = match value {
                None => Some("1".to_owned()),
                Some(value) if *regex => sample_match(value),
                Some(value) => Some(value.clone()),
            }?;
            Some((name.clone(), value))
        })
        .collect()
}

impl RoutingModel for EmissaryMapping {
    fn name(&self) -> &'static str {
        "Emissary-ingress Mapping (getambassador.io v2, v3alpha1)"
    }

    fn applies_to(&self, kind: &ScriptKind) -> bool {
        matches!(kind, ScriptKind::Custom { group, kind }
            if group == "getambassador.io" && kind == "Mapping")
    }

    fn config_problems(&self, config: &GatewayConfig) -> Vec<ConfigProblem> {
        let table = memo_table(config);
        let mut problems = Vec::new();
        for group in &table.groups {
            if let Err(message) = group {
                problems.push(ConfigProblem {
                    path: "spec.weight".to_owned(),
                    kind: ProblemKind::Rejected,
                    message: message.clone(),
                });
            }
        }
        for m in &table.all {
            for key in &m.unevaluated {
                problems.push(ConfigProblem {
                    path: format!("spec.{key}"),
                    kind: ProblemKind::NotEvaluated,
                    message: format!(
                        "is not evaluated: Mapping {} reads it as a regex (probes are taken as \
                         not meeting it)",
                        m.name
                    ),
                });
            }
            let mut regexes: Vec<(String, &str)> = Vec::new();
            if m.regex {
                regexes.push(("spec.prefix".to_owned(), &m.prefix));
            }
            for (key, list) in [
                ("regex_headers", &m.headers),
                ("regex_query_parameters", &m.query),
            ] {
                for (name, value, regex) in list {
                    if let (true, Some(value)) = (*regex, value) {
                        regexes.push((format!("spec.{key}.{name}"), value));
                    }
                }
            }
            for (path, regex) in regexes {
                if let Some(message) = re2_problem(regex) {
                    problems.push(ConfigProblem {
                        path,
                        kind: ProblemKind::Rejected,
                        message,
                    });
                }
            }
        }
        problems
    }

    fn route(&self, config: &GatewayConfig, request: &Request) -> Routed {
        if !matches!(config, GatewayConfig::Resource(_)) {
            return Routed::NoRoute;
        }
        let table = memo_table(config);
        // One random draw per request in 0..100: the first route whose cumulative weight
        // exceeds it takes the request.
        let mut covered = 0.0;
        let mut weights: Vec<(Backend, f64)> = Vec::new();
        let mut changes: BTreeMap<Backend, BTreeMap<String, Option<String>>> = BTreeMap::new();
        // The Mappings that took a share, by name (a split spans several).
        let mut names: Vec<&str> = Vec::new();
        for group in table.groups.iter().flatten() {
            for &(at, cumulative) in group {
                let m = &table.all[at];
                if !applies(m, request) {
                    continue;
                }
                let share = (cumulative.min(100.0) - covered).max(0.0);
                if share > 0.0 {
                    weights.push((m.backend.clone(), share));
                    if !names.contains(&m.name.as_str()) {
                        names.push(&m.name);
                    }
                    if !m.ops.is_empty() {
                        changes.insert(m.backend.clone(), m.ops.clone());
                    }
                    covered += share;
                }
            }
        }
        if covered <= 0.0 {
            return Routed::NoRoute;
        }
        if covered < 100.0 {
            weights.push((Backend::service(NO_ROUTE), 100.0 - covered));
        }
        match Distribution::from_weights(&weights) {
            Some(mut d) => {
                d.header_changes = changes;
                let plural = if names.len() == 1 { "" } else { "s" };
                d.route_path = Some(smol_str::format_smolstr!(
                    "Mapping{plural} {}",
                    names.join(", ")
                ));
                Routed::to(d)
            }
            None => Routed::NoRoute,
        }
    }

    fn probes(&self, config: &GatewayConfig) -> Vec<Request> {
        let mut probes = vec![Request::get("/"), Request::get("/__no_such_path")];
        for m in &memo_table(config).all {
            let mut hit = Request::get("/");
            hit.path = if m.regex {
                sample_match(&m.prefix).map_or_else(|| m.prefix.as_str().into(), Into::into)
            } else {
                m.prefix.as_str().into()
            };
            if let Some(method) = &m.method {
                hit.method = method.as_str().into();
            }
            for (name, value) in samples(&m.headers) {
                hit.headers.insert(name.to_ascii_lowercase(), value);
            }
            for (name, value) in samples(&m.query) {
                hit.query.insert(name, value);
            }
            probes.push(hit.clone());
            if m.ignore_case && !m.regex {
                // The prefix in other case: what `case_sensitive: false` lets in.
                let mut other_case = hit.clone();
                other_case.path = m.prefix.to_ascii_uppercase().into();
                probes.push(other_case);
            }
            let mut below = hit.clone();
            below.path = format!("{}/x", m.prefix.trim_end_matches('/')).into();
            probes.push(below);
            for (name, _, _) in &m.headers {
                let mut miss = hit.clone();
                miss.headers.remove(&name.to_ascii_lowercase());
                probes.push(miss);
            }
            for (name, _, _) in &m.query {
                let mut miss = hit.clone();
                miss.query.remove(name);
                probes.push(miss);
            }
        }
        probes.sort();
        probes.dedup();
        probes
    }

    /// The script edits the canary Mapping; the gateway also has the stable Mapping the
    /// canary one was copied from (the library script's setup): the original with the stable
    /// service and no weight.
    fn surroundings(
        &self,
        config: &GatewayConfig,
        original: &GatewayConfig,
        stable_service: &str,
        canary_service: &str,
    ) -> Result<Option<GatewayConfig>, String> {
        let (GatewayConfig::Resource(object), GatewayConfig::Resource(before)) = (config, original)
        else {
            return Ok(None);
        };
        let Some(mapping) = view(before) else {
            return Ok(None);
        };
        if stable_service == canary_service {
            return Ok(None);
        }
        // `service: web` names the Service in the Mapping's own namespace, `web.shop:8080` the
        // one of `shop` (Emissary's default service resolution: the `ambassador` Module's
        // `use_ambassador_namespace_for_service_resolution` is off by default,
        // https://www.getambassador.io/docs/emissary/latest/topics/running/ambassador).
        let namespace = super::object_namespace(before);
        if self.is_service(&mapping.backend, stable_service, namespace) {
            return Err(format!(
                "the Mapping routes to the stable service {stable_service}; Emissary splits traffic between Mappings, so the check needs the canary Mapping the script edits"
            ));
        }
        if !self.is_service(&mapping.backend, canary_service, namespace) {
            return Ok(None);
        }
        let service = before
            .at(&["spec", "service"])
            .and_then(JsonValue::as_str)
            .unwrap_or_default();
        let stable_text = service.replacen(canary_service, stable_service, 1);
        let mut stable = before.clone();
        if let JsonValue::Object(members) = &mut stable
            && let Some(JsonValue::Object(spec)) = members.get_mut("spec")
        {
            spec.insert("service".to_owned(), JsonValue::String(stable_text));
            spec.remove("weight");
            // Canary-only header operations do not belong to the stable copy.
            spec.remove("add_request_headers");
            spec.remove("remove_request_headers");
        }
        Ok(Some(GatewayConfig::Resource(JsonValue::Object(
            crate::value::JsonMap::from([
                ("apiVersion".to_owned(), JsonValue::String("v1".to_owned())),
                ("kind".to_owned(), JsonValue::String("List".to_owned())),
                (
                    "items".to_owned(),
                    JsonValue::Array(vec![stable, object.clone()]),
                ),
            ]),
        ))))
    }
}

#[cfg(test)]
mod tests;
