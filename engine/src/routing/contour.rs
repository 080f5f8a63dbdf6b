//! Contour HTTPProxy (projectcontour.io/v1): route conditions (with `includes` concatenation),
//! Contour's route order (most specific path first, not document order), Envoy matching, the
//! weight rule for unset weights, and request header policies.
//!
//! Facts from projectcontour/contour:
//! - `internal/dag/httpproxy_processor.go` `computeRoutes`: an include's conditions are
//!   prepended to the included proxy's route conditions; any invalid route or include makes
//!   the proxy serve no route (`return nil`); an include whose proxy does not exist gets a
//!   502 route; `routeActionCountValid`: a route needs services (or a redirect/direct response).
//!   Mirror services get copies only.
//! - `internal/dag/conditions.go` `mergePathMatchConditions` (paths concatenate, `//` collapses
//!   to `/`, the last condition decides prefix or exact, any regex makes a regex, none gives
//!   prefix `/`), `pathMatchConditionsValid`, `includeMatchConditionsValid`,
//!   `headerMatchConditions`/`headerMatchConditionsValid`, `queryParameterMatchConditions`/
//!   `queryParameterMatchConditionsValid`.
//! - `internal/dag/dag.go` `AddRoute`: routes are keyed by their conditions, a later route with
//!   the same conditions replaces the earlier one.
//! - `internal/sorter/sorter.go` `routeSorter.Less` and `compareRoutesByMethodHeaderQueryParams`.
//! - `internal/envoy/v3/route.go` `PathRouteMatch` (HTTPProxy prefixes are plain string
//!   prefixes; a regex is anchored with `^`), `headerMatcher` (invert; missing headers are
//!   empty only for inverted matches with `treatMissingAsEmpty`), `weightedClusters` (when no
//!   weight is set, every service gets 1; otherwise an unset weight is 0).

use std::collections::{BTreeMap, BTreeSet};

use crate::discovery::ScriptKind;
use crate::value::JsonValue;

use super::fields::{int_field, items, port_field, str_field};
use super::matching::{full_match, re2_problem};
use super::probe::{Cond, Literal, ValueCond, probes_for};
use super::{
    Backend, ConfigProblem, Distribution, GatewayConfig, ProblemKind, Request, Routed, RoutingModel,
};

pub struct ContourHttpProxy;

#[derive(Debug, Clone, PartialEq)]
enum PathCond {
    Prefix(String),
    Exact(String),
    Regex(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HeaderKind {
    Exact,
    Regex,
    Contains,
    Present,
}

#[derive(Debug, Clone, PartialEq)]
struct HeaderCond {
    name: String,
    kind: HeaderKind,
    value: String,
    invert: bool,
    ignore_case: bool,
    missing_as_empty: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum QueryKind {
    Exact,
    Regex,
    Prefix,
    Suffix,
    Contains,
    Present,
}

#[derive(Debug, Clone, PartialEq)]
struct QueryCond {
    name: String,
    kind: QueryKind,
    value: String,
    ignore_case: bool,
}

/// One route of the virtual host, as Contour's DAG holds it.
#[derive(Debug, Clone)]
struct ProxyRoute {
    /// `spec.routes[i]` of the proxy it comes from (`ops/admin: spec.routes[0]`).
    origin: String,
    path: PathCond,
    headers: Vec<HeaderCond>,
    query: Vec<QueryCond>,
    /// Weighted services with their header changes; empty = Contour answers itself (502).
    clusters: Vec<(Backend, u32, BTreeMap<String, Option<String>>)>,
}

impl ProxyRoute {
    /// `conditionsToString`: what `AddRoute` keys routes by.
    fn key(&self) -> String {
        format!("{:?}|{:?}|{:?}", self.path, self.headers, self.query)
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

fn virtual_host(config: &GatewayConfig) -> VirtualHost {
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
    let mut kept: Vec<ProxyRoute> = Vec::new();
    for route in routes {
        if let Some(i) = kept.iter().position(|r| r.key() == route.key()) {
            vhost.problems.push(ConfigProblem {
                path: route.origin.clone(),
                kind: ProblemKind::Ignored,
                message: format!(
                    "{} has the same conditions: Contour keeps only the later route",
                    kept[i].origin
                ),
            });
            kept.remove(i);
        }
        kept.push(route);
    }
    vhost.routes = stable_sort(kept);
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
                        service: str_field(s, "name").unwrap_or_default().to_owned(),
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

fn non_empty(value: &JsonValue, key: &str) -> bool {
    str_field(value, key).is_some_and(|s| !s.is_empty())
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

/// `pathMatchConditionsValid`.
fn path_conditions_problem(conds: &[JsonValue]) -> Option<String> {
    let mut count = 0;
    for c in conds {
        for key in ["prefix", "exact", "regex"] {
            let Some(value) = str_field(c, key).filter(|v| !v.is_empty()) else {
                continue;
            };
            count += 1;
            if !value.starts_with('/') {
                return Some(format!(
                    "{key} conditions must start with /, {value} was supplied"
                ));
            }
            if key == "regex" {
                if let Some(e) = re2_problem(value) {
                    return Some(format!("supplied regex: {value} invalid. error: {e}"));
                }
            }
        }
    }
    (count > 1)
        .then(|| "more than one prefix, exact or regex is not allowed in a condition block".into())
}

/// `headerMatchConditionsValid` (contradictions and duplicate exact matches).
fn header_conditions_problem(conds: &[JsonValue]) -> Option<String> {
    let mut seen: BTreeSet<(String, &str, String)> = BTreeSet::new();
    let mut exact = BTreeSet::new();
    for header in conds.iter().filter_map(|c| c.get("header")) {
        let name = str_field(header, "name")
            .unwrap_or_default()
            .to_ascii_lowercase();
        let flag = |k: &str| header.get(k).and_then(JsonValue::as_bool) == Some(true);
        let text = |k: &str| str_field(header, k).unwrap_or_default().to_owned();
        let contradiction =
            |seen: &BTreeSet<(String, &str, String)>, kind: &'static str, value: String| {
                seen.contains(&(name.clone(), kind, value))
            };
        let (kind, value): (&str, String) = if flag("present") {
            if contradiction(&seen, "notpresent", String::new()) {
                return Some("cannot specify contradictory 'present' and 'notpresent' conditions for the same route and header".into());
            }
            ("present", String::new())
        } else if flag("notpresent") {
            if contradiction(&seen, "present", String::new()) {
                return Some("cannot specify contradictory 'present' and 'notpresent' conditions for the same route and header".into());
            }
            ("notpresent", String::new())
        } else if !text("exact").is_empty() {
            if !exact.insert(name.clone()) {
                return Some(
                    "cannot specify duplicate header 'exact match' conditions in the same route"
                        .into(),
                );
            }
            if contradiction(&seen, "notexact", text("exact")) {
                return Some("cannot specify contradictory 'exact' and 'notexact' conditions for the same route and header".into());
            }
            ("exact", text("exact"))
        } else if !text("notexact").is_empty() {
            if contradiction(&seen, "exact", text("notexact")) {
                return Some("cannot specify contradictory 'exact' and 'notexact' conditions for the same route and header".into());
            }
            ("notexact", text("notexact"))
        } else if !text("contains").is_empty() {
            if contradiction(&seen, "notcontains", text("contains")) {
                return Some("cannot specify contradictory 'contains' and 'notcontains' conditions for the same route and header".into());
            }
            ("contains", text("contains"))
        } else if !text("notcontains").is_empty() {
            if contradiction(&seen, "contains", text("notcontains")) {
                return Some("cannot specify contradictory 'contains' and 'notcontains' conditions for the same route and header".into());
            }
            ("notcontains", text("notcontains"))
        } else if !text("regex").is_empty() {
            if re2_problem(&text("regex")).is_some() {
                return Some("invalid regular expression specified for 'regex' condition".into());
            }
            ("regex", text("regex"))
        } else {
            continue;
        };
        seen.insert((name, kind, value));
    }
    None
}

/// `queryParameterMatchConditionsValid`.
fn query_conditions_problem(conds: &[JsonValue]) -> Option<String> {
    let mut exact = BTreeSet::new();
    for q in conds.iter().filter_map(|c| c.get("queryParameter")) {
        let set = ["exact", "prefix", "suffix", "regex", "contains"]
            .iter()
            .filter(|k| non_empty(q, k))
            .count()
            + usize::from(q.get("present").and_then(JsonValue::as_bool) == Some(true));
        if set == 0 {
            return Some("must specify at least one query parameter condition".into());
        }
        if set > 1 {
            return Some(
                "cannot specify more than one condition in the same match condition branch".into(),
            );
        }
        let name = str_field(q, "name")
            .unwrap_or_default()
            .to_ascii_lowercase();
        if non_empty(q, "exact") && !exact.insert(name) {
            return Some("cannot specify duplicate query parameter 'exact match' conditions in the same route".into());
        }
        if let Some(regex) = str_field(q, "regex").filter(|r| !r.is_empty()) {
            if re2_problem(regex).is_some() {
                return Some("invalid regular expression specified for 'regex' condition".into());
            }
        }
    }
    None
}

/// A route's conditions merged as the DAG does (no clusters yet).
fn condition_route(origin: String, conds: &[JsonValue]) -> ProxyRoute {
    ProxyRoute {
        origin,
        path: merge_path(conds),
        headers: conds
            .iter()
            .filter_map(|c| c.get("header"))
            .filter_map(header_cond)
            .collect(),
        query: conds
            .iter()
            .filter_map(|c| c.get("queryParameter"))
            .filter_map(query_cond)
            .collect(),
        clusters: Vec::new(),
    }
}

/// `mergePathMatchConditions`.
fn merge_path(conds: &[JsonValue]) -> PathCond {
    let mut merged = String::new();
    let mut is_regex = false;
    let mut last = "";
    for c in conds {
        for key in ["prefix", "exact", "regex"] {
            if let Some(v) = str_field(c, key).filter(|v| !v.is_empty()) {
                merged.push_str(v);
                is_regex |= key == "regex";
                break;
            }
        }
    }
    if let Some(c) = conds.last() {
        last = ["prefix", "exact", "regex"]
            .into_iter()
            .find(|k| non_empty(c, k))
            .unwrap_or("");
    }
    // `//+` collapses to `/`.
    let mut collapsed = String::with_capacity(merged.len());
    for ch in merged.chars() {
        if !(ch == '/' && collapsed.ends_with('/')) {
            collapsed.push(ch);
        }
    }
    if collapsed.is_empty() {
        return PathCond::Prefix("/".into());
    }
    if is_regex {
        PathCond::Regex(collapsed)
    } else if last == "exact" {
        PathCond::Exact(collapsed)
    } else {
        PathCond::Prefix(collapsed)
    }
}

/// `headerMatchConditions`: the first of present, notpresent, contains, notcontains, exact,
/// notexact, regex that is set.
fn header_cond(h: &JsonValue) -> Option<HeaderCond> {
    let flag = |k: &str| h.get(k).and_then(JsonValue::as_bool) == Some(true);
    let text = |k: &str| str_field(h, k).unwrap_or_default().to_owned();
    let (kind, value, invert) = if flag("present") {
        (HeaderKind::Present, String::new(), false)
    } else if flag("notpresent") {
        (HeaderKind::Present, String::new(), true)
    } else if !text("contains").is_empty() {
        (HeaderKind::Contains, text("contains"), false)
    } else if !text("notcontains").is_empty() {
        (HeaderKind::Contains, text("notcontains"), true)
    } else if !text("exact").is_empty() {
        (HeaderKind::Exact, text("exact"), false)
    } else if !text("notexact").is_empty() {
        (HeaderKind::Exact, text("notexact"), true)
    } else if !text("regex").is_empty() {
        (HeaderKind::Regex, text("regex"), false)
    } else {
        return None;
    };
    Some(HeaderCond {
        name: text("name").to_ascii_lowercase(),
        kind,
        value,
        invert,
        ignore_case: flag("ignoreCase") && kind != HeaderKind::Regex,
        missing_as_empty: invert && flag("treatMissingAsEmpty"),
    })
}

fn query_cond(q: &JsonValue) -> Option<QueryCond> {
    let text = |k: &str| str_field(q, k).unwrap_or_default().to_owned();
    let kinds = [
        ("exact", QueryKind::Exact),
        ("prefix", QueryKind::Prefix),
        ("suffix", QueryKind::Suffix),
        ("regex", QueryKind::Regex),
        ("contains", QueryKind::Contains),
    ];
    let (kind, value) = kinds
        .iter()
        .find(|(k, _)| !text(k).is_empty())
        .map(|(k, kind)| (*kind, text(k)))
        .or_else(|| {
            (q.get("present").and_then(JsonValue::as_bool) == Some(true))
                .then(|| (QueryKind::Present, String::new()))
        })?;
    Some(QueryCond {
        name: text("name"),
        kind,
        value,
        ignore_case: q.get("ignoreCase").and_then(JsonValue::as_bool) == Some(true)
            && kind != QueryKind::Regex,
    })
}

/// A stable insertion sort by `routeSorter.Less` (Go's `sort.Stable`; written out so that a
/// comparison which is not a total order can never make the sort fail).
fn stable_sort(mut routes: Vec<ProxyRoute>) -> Vec<ProxyRoute> {
    for i in 1..routes.len() {
        let mut j = i;
        while j > 0 && route_less(&routes[j], &routes[j - 1]) {
            routes.swap(j, j - 1);
            j -= 1;
        }
    }
    routes
}

/// `routeSorter.Less`.
fn route_less(a: &ProxyRoute, b: &ProxyRoute) -> bool {
    match (&a.path, &b.path) {
        (PathCond::Prefix(pa), PathCond::Prefix(pb)) => {
            if pa.len() != pb.len() {
                return pa.len() > pb.len();
            }
            match pa.cmp(pb) {
                std::cmp::Ordering::Greater => true,
                std::cmp::Ordering::Less => false,
                // HTTPProxy prefixes are all of the string type.
                std::cmp::Ordering::Equal => compare_conditions(a, b),
            }
        }
        (PathCond::Regex(ra), PathCond::Regex(rb)) => {
            if ra.len() != rb.len() {
                return ra.len() > rb.len();
            }
            match ra.cmp(rb) {
                std::cmp::Ordering::Greater => true,
                std::cmp::Ordering::Less => false,
                std::cmp::Ordering::Equal => compare_conditions(a, b),
            }
        }
        (PathCond::Regex(_), PathCond::Prefix(_)) => true,
        (PathCond::Exact(ea), PathCond::Exact(eb)) => match ea.cmp(eb) {
            std::cmp::Ordering::Greater => true,
            std::cmp::Ordering::Less => false,
            std::cmp::Ordering::Equal => compare_conditions(a, b),
        },
        (PathCond::Exact(_), _) => true,
        _ => false,
    }
}

/// `compareRoutesByMethodHeaderQueryParams`.
fn compare_conditions(a: &ProxyRoute, b: &ProxyRoute) -> bool {
    let (ma, ha) = split_method(a);
    let (mb, hb) = split_method(b);
    if ma != mb {
        return ma;
    }
    if ha.len() != hb.len() {
        return ha.len() > hb.len();
    }
    if a.query.len() != b.query.len() {
        return a.query.len() > b.query.len();
    }
    ha.iter().zip(&hb).any(|(x, y)| header_less(x, y))
        || a.query.iter().zip(&b.query).any(|(x, y)| query_less(x, y))
}

/// Whether a route has a `:method` condition, and its other header conditions.
fn split_method(route: &ProxyRoute) -> (bool, Vec<&HeaderCond>) {
    let method = route.headers.iter().any(|h| h.name == ":method");
    let rest = route
        .headers
        .iter()
        .filter(|h| h.name != ":method")
        .collect();
    (method, rest)
}

/// `headerMatchConditionSorter.Less`.
fn header_less(a: &HeaderCond, b: &HeaderCond) -> bool {
    let value_less = |a: &HeaderCond, b: &HeaderCond| match a.value.cmp(&b.value) {
        std::cmp::Ordering::Less => true,
        std::cmp::Ordering::Greater => false,
        std::cmp::Ordering::Equal => a.invert != b.invert && !a.invert,
    };
    match a.name.cmp(&b.name) {
        std::cmp::Ordering::Less => return true,
        std::cmp::Ordering::Greater => return false,
        std::cmp::Ordering::Equal => {}
    }
    use HeaderKind::*;
    match (a.kind, b.kind) {
        (Exact, Exact) | (Regex, Regex) | (Contains, Contains) => value_less(a, b),
        (Exact, _) => true,
        (Regex, Contains | Present) => true,
        (Contains, Present) => true,
        (Present, Present) => a.invert != b.invert && !a.invert,
        _ => false,
    }
}

/// `queryParamMatchConditionSorter.Less`.
fn query_less(a: &QueryCond, b: &QueryCond) -> bool {
    let value_less = |a: &QueryCond, b: &QueryCond| match a.value.cmp(&b.value) {
        std::cmp::Ordering::Less => true,
        std::cmp::Ordering::Greater => false,
        std::cmp::Ordering::Equal => a.ignore_case != b.ignore_case && !a.ignore_case,
    };
    match a.name.cmp(&b.name) {
        std::cmp::Ordering::Less => return true,
        std::cmp::Ordering::Greater => return false,
        std::cmp::Ordering::Equal => {}
    }
    let rank = |k: QueryKind| match k {
        QueryKind::Exact => 0,
        QueryKind::Regex => 1,
        QueryKind::Prefix => 2,
        QueryKind::Suffix => 3,
        QueryKind::Contains => 4,
        QueryKind::Present => 5,
    };
    if a.kind == b.kind {
        a.kind != QueryKind::Present && value_less(a, b)
    } else {
        rank(a.kind) < rank(b.kind)
    }
}

fn text_matches(
    value: &str,
    expected: &str,
    ignore_case: bool,
    test: fn(&str, &str) -> bool,
) -> bool {
    if ignore_case {
        test(&value.to_lowercase(), &expected.to_lowercase())
    } else {
        test(value, expected)
    }
}

/// Envoy's `HeaderMatcher` as Contour configures it.
fn header_matches(h: &HeaderCond, request: &Request) -> bool {
    let value = match h.name.as_str() {
        ":method" => Some(request.method.clone()),
        ":authority" | "host" => request.host.clone(),
        ":path" => Some(request.path.clone()),
        name => request.headers.get(name).cloned(),
    };
    let value = match value {
        Some(v) => v,
        // A missing header: only `notpresent` matches, unless an inverted match treats it
        // as empty.
        None if h.missing_as_empty => String::new(),
        None => return h.kind == HeaderKind::Present && h.invert,
    };
    let hit = match h.kind {
        HeaderKind::Present => true,
        HeaderKind::Exact => text_matches(&value, &h.value, h.ignore_case, |a, b| a == b),
        HeaderKind::Contains => text_matches(&value, &h.value, h.ignore_case, |a, b| a.contains(b)),
        HeaderKind::Regex => full_match(&h.value, &value),
    };
    hit != h.invert
}

fn query_matches(q: &QueryCond, request: &Request) -> bool {
    let Some(value) = request.query.get(&q.name) else {
        return false;
    };
    match q.kind {
        QueryKind::Present => true,
        QueryKind::Exact => text_matches(value, &q.value, q.ignore_case, |a, b| a == b),
        QueryKind::Prefix => text_matches(value, &q.value, q.ignore_case, |a, b| a.starts_with(b)),
        QueryKind::Suffix => text_matches(value, &q.value, q.ignore_case, |a, b| a.ends_with(b)),
        QueryKind::Contains => text_matches(value, &q.value, q.ignore_case, |a, b| a.contains(b)),
        QueryKind::Regex => full_match(&q.value, value),
    }
}

fn route_matches(route: &ProxyRoute, request: &Request) -> bool {
    let path_ok = match &route.path {
        PathCond::Prefix(p) => request.path.starts_with(p.as_str()),
        PathCond::Exact(p) => request.path == *p,
        PathCond::Regex(r) => full_match(&format!("^{r}"), &request.path),
    };
    path_ok
        && route.headers.iter().all(|h| header_matches(h, request))
        && route.query.iter().all(|q| query_matches(q, request))
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
    Routed::To(d)
}

fn literals(route: &ProxyRoute) -> Vec<Literal> {
    let mut out = Vec::new();
    match &route.path {
        PathCond::Prefix(p) if p != "/" => out.push((Cond::PathPrefix(p.clone()), true)),
        PathCond::Exact(p) => out.push((Cond::PathExact(p.clone()), true)),
        PathCond::Regex(r) => out.push((Cond::PathRegex(r.clone()), true)),
        _ => {}
    }
    for h in &route.headers {
        let value = match h.kind {
            HeaderKind::Exact => ValueCond::Exact(h.value.clone()),
            HeaderKind::Regex => ValueCond::Regex(h.value.clone()),
            HeaderKind::Contains => ValueCond::Contains(h.value.clone()),
            HeaderKind::Present => ValueCond::Present,
        };
        if h.name == ":method" {
            out.push((Cond::Method(h.value.clone()), !h.invert));
        } else {
            out.push((Cond::Header(h.name.clone(), value), !h.invert));
        }
    }
    for q in &route.query {
        let value = match q.kind {
            QueryKind::Exact => ValueCond::Exact(q.value.clone()),
            QueryKind::Regex => ValueCond::Regex(q.value.clone()),
            QueryKind::Prefix => ValueCond::Prefix(q.value.clone()),
            QueryKind::Suffix => ValueCond::Suffix(q.value.clone()),
            QueryKind::Contains => ValueCond::Contains(q.value.clone()),
            QueryKind::Present => ValueCond::Present,
        };
        out.push((Cond::Query(q.name.clone(), value), true));
    }
    out
}

impl RoutingModel for ContourHttpProxy {
    fn name(&self) -> &'static str {
        "Contour HTTPProxy (projectcontour.io/v1)"
    }

    fn applies_to(&self, kind: &ScriptKind) -> bool {
        matches!(kind, ScriptKind::Custom { group, kind } if group == "projectcontour.io" && kind == "HTTPProxy")
    }

    fn config_problems(&self, config: &GatewayConfig) -> Vec<ConfigProblem> {
        let mut problems = virtual_host(config).problems;
        // Weights: services are weighted only relative to each other; a weight of 0 next to
        // set weights sends nothing there (reported so the intent check can explain it).
        for proxy in proxies(config) {
            for (i, route) in proxy
                .get("spec")
                .map_or(&[][..], |s| items(s, "routes"))
                .iter()
                .enumerate()
            {
                let services = items(route, "services");
                let set = services
                    .iter()
                    .filter(|s| int_field(s, "weight").unwrap_or(0) > 0)
                    .count();
                if set > 0
                    && set
                        < services
                            .iter()
                            .filter(|s| s.get("mirror").and_then(JsonValue::as_bool) != Some(true))
                            .count()
                {
                    problems.push(ConfigProblem {
                        path: format!("spec.routes[{i}].services"),
                        kind: ProblemKind::Ignored,
                        message: "some services have no weight while others do: those get weight 0 and no traffic".into(),
                    });
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
            .find(|r| route_matches(r, request))
            .map_or(Routed::NoRoute, distribution)
    }

    fn probes(&self, config: &GatewayConfig) -> Vec<Request> {
        let vhost = virtual_host(config);
        let conjunctions: Vec<Vec<Literal>> = vhost.routes.iter().map(literals).collect();
        probes_for(&conjunctions, vhost.fqdn.as_deref())
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
        match ContourHttpProxy.route(config, request) {
            Routed::To(d) => d.describe(),
            Routed::NoRoute => "no route".into(),
        }
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
        r.headers.insert("x-canary".into(), "true".into());
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
        assert_eq!(ContourHttpProxy.config_problems(&c).len(), 1);
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
        r.headers.insert("x-canary".into(), "1".into());
        assert_eq!(to(&list, &r), "admin-canary 100 %");
        // Without the header, nothing under /admin matches: the root's `/` route serves.
        assert_eq!(to(&list, &Request::get("/admin/x")), "web 100 %");
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
        r.headers.insert("x-region".into(), "eu".into());
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
        for file in ["header_matches", "weights", "traffic_routing_unchanged"] {
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
