//! Apache APISIX ApisixRoute (apisix.apache.org/v2, with the ApisixUpstream subsets it names),
//! as the APISIX ingress controller (1.x and 2.x) translates it and APISIX's radixtree router
//! matches it.
//!
//! Facts from apache/apisix-ingress-controller (2.x):
//! - `internal/adc/translator/apisixroute.go` `buildRoute` (a rule's `paths` are the route's
//!   uris, `methods`, `priority`, `exprs` as vars), `buildService` (the rule's `hosts`),
//!   `buildUpstream` (the first backend is the default upstream, the others join it in a
//!   `traffic-split` rule; `rule.upstreams` ApisixUpstream references come after the backends),
//!   `translateApisixRouteHTTPBackend` (a missing weight is `DefaultWeight`, 100, from
//!   `api/v2/shared_types.go`; an explicit 0 stays 0).
//! - `api/v2/apisixroute_types.go` `ToVars`: scopes Query → `arg_<name>`, Header →
//!   `http_<name lower-cased, '-' → '_'>`, Cookie → `cookie_<name>`, Path → `uri`; operators
//!   and their negations; an empty subject name, a missing value or set, an unknown scope or
//!   operator fail the translation.
//! - `internal/controller/apisixroute_controller.go` `validateHTTPBackends` (2.x only): two
//!   backends of one rule naming the same Service are refused, "duplicate backend service"
//!   (the endpoints a subset selects are kept per Service, `tctx.EndpointSlices[serviceNN]`).
//!   The 1.x controller accepts them (each becomes an upstream of the traffic split).
//!   `getSubsetLabels`/`filterEndpointSlicesBySubsetLabels`: a backend's `subset` takes the
//!   labels of that subset in the Service's ApisixUpstream; an unknown subset or one without
//!   labels selects all endpoints. The ApisixUpstream script only adds a subset, which routes
//!   nothing by itself, so ApisixUpstream has no model of its own: a configuration may be a
//!   `kind: List` of the ApisixRoute and its ApisixUpstreams.
//!
//! Facts from apache/apisix: `docs/en/latest/router-radixtree.md` (a full path beats a deeper
//! prefix, which beats a shallower one; a trailing `*` makes a prefix; among routes with the
//! same uri the higher `priority` is tried first), `apisix/http/router/radixtree_host_uri.lua`
//! (the default router: routes with hosts are tried for the request's host first, then the
//! routes without hosts). Facts from api7/lua-resty-expr `lib/resty/expr/v1.lua`
//! (`compare_funcs`: `==` fails on a missing value, `~=` holds for one, `~~`/`~*` are
//! unanchored PCRE searches that fail on a missing value; a `!` negates the result).
//!
//! Not evaluated ([`unevaluated_conditions`]): `match.remoteAddrs` ("Remote address
//! predicates, items can be valid IPv4 address or IPv6 address or CIDR",
//! `ApisixRouteHTTPMatch.RemoteAddrs`), `match.filter_func` (a Lua function) and exprs of the
//! `Variable` and `Body` scopes (nginx variables and the request body, which probes do not
//! carry). They restrict the match, so a rule with one is taken as not met by the probes and
//! each is reported as a [`ProblemKind::NotEvaluated`].

use std::collections::BTreeMap;

use crate::script::ScriptKind;
use crate::value::JsonValue;

use super::SmolStr;
use super::fields::{compile, int_field, items, port_field, str_field};
use super::probe::{Cond, Literal, ValueCond, probes_for};
use super::{
    Backend, ConfigProblem, Distribution, GatewayConfig, ProblemKind, Request, Routed, RoutingModel,
};

/// The ingress controller generation: they differ in what they accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Controller {
    V1,
    V2,
}

/// ApisixRoute under one controller generation.
pub struct ApisixRoute {
    pub controller: Controller,
}

fn is_apisix(kind: &ScriptKind, wanted: &str) -> bool {
    matches!(kind, ScriptKind::Custom { group, kind } if group == "apisix.apache.org" && kind == wanted)
}

/// One APISIX route: one uri of one `spec.http[]` rule.
struct RadixRoute<'a> {
    rule_index: usize,
    rule: &'a JsonValue,
    /// The rule's `match` (a rule without one makes no route).
    matched: &'a JsonValue,
    uri: &'a str,
    priority: i64,
    hosts: Vec<String>,
}

/// `Some(prefix)` for a `*` route path.
fn uri_prefix(uri: &str) -> Option<&str> {
    uri.strip_suffix('*')
}

/// Whether a route path takes the request path `path`.
fn uri_matches(uri: &str, path: &str) -> bool {
    match uri_prefix(uri) {
        Some(prefix) => path.starts_with(prefix),
        None => path == uri,
    }
}

/// The radix tree's rank for a path a route path matches: full paths first, then longer
/// prefixes.
fn uri_specificity(uri: &str) -> (bool, usize) {
    match uri_prefix(uri) {
        None => (true, uri.len()),
        Some(p) => (false, p.len()),
    }
}

/// The ApisixRoute of a configuration, and the ApisixUpstreams beside it when the
/// configuration is a `kind: List` of both (`None`: not known).
fn parts(config: &GatewayConfig) -> (Option<&JsonValue>, Option<Vec<&JsonValue>>) {
    let GatewayConfig::Resource(resource) = config else {
        return (None, None);
    };
    match resource.get("items").and_then(JsonValue::as_array) {
        Some(list) if str_field(resource, "kind") == Some("List") => {
            let of_kind = |kind: &'static str| {
                list.iter()
                    .filter(move |i| str_field(i, "kind") == Some(kind))
            };
            (
                of_kind("ApisixRoute").next(),
                Some(of_kind("ApisixUpstream").collect()),
            )
        }
        _ => (Some(resource), None),
    }
}

fn rules(config: &GatewayConfig) -> &[JsonValue] {
    parts(config)
        .0
        .and_then(|route| route.get("spec"))
        .map_or(&[][..], |spec| items(spec, "http"))
}

/// A backend's subset as the 2.x controller applies it (`getSubsetLabels`,
/// `filterEndpointSlicesBySubsetLabels`): the labels of the subset of that name in the
/// Service's ApisixUpstream; none found, or no labels, means all the Service's endpoints.
/// `Err` explains why a named subset has no effect. Unknown upstreams keep the name.
fn resolve_subset(
    service: &str,
    subset: Option<&str>,
    upstreams: Option<&[&JsonValue]>,
) -> Result<Option<String>, String> {
    let (Some(subset), Some(upstreams)) = (subset, upstreams) else {
        return Ok(subset.map(str::to_owned));
    };
    let upstream = upstreams
        .iter()
        .find(|u| u.at(&["metadata", "name"]).and_then(JsonValue::as_str) == Some(service))
        .ok_or_else(|| {
            format!(
                "no ApisixUpstream {service}: subset {subset:?} selects all the Service's endpoints"
            )
        })?;
    let defined = upstream
        .get("spec")
        .map_or(&[][..], |spec| items(spec, "subsets"))
        .iter()
        .find(|s| str_field(s, "name") == Some(subset))
        .ok_or_else(|| format!("ApisixUpstream {service} has no subset {subset:?}: the backend gets all the Service's endpoints"))?;
    if defined
        .get("labels")
        .and_then(JsonValue::as_object)
        .is_none_or(|l| l.is_empty())
    {
        return Err(format!(
            "subset {subset:?} of ApisixUpstream {service} has no labels: the backend gets all the Service's endpoints"
        ));
    }
    Ok(Some(subset.to_owned()))
}

/// A [`RadixRoute`] as routing keeps it for a configuration, with where a request it takes
/// goes (the same for every request: made once per configuration, see `super::memo`).
struct TableRoute {
    rule_index: usize,
    uri: String,
    priority: i64,
    hosts: Vec<String>,
    conditions: std::rc::Rc<ReadConditions>,
    routed: Routed,
}

fn route_table(config: &GatewayConfig) -> Vec<TableRoute> {
    let upstreams = parts(config).1;
    // One reading per rule, shared by its paths.
    let mut read: Vec<(usize, std::rc::Rc<ReadConditions>)> = Vec::new();
    radix_routes(config)
        .into_iter()
        .map(|r| TableRoute {
            conditions: match read.iter().find(|(i, _)| *i == r.rule_index) {
                Some((_, c)) => c.clone(),
                None => {
                    let c = std::rc::Rc::new(ReadConditions::of(r.matched));
                    read.push((r.rule_index, c.clone()));
                    c
                }
            },
            rule_index: r.rule_index,
            uri: r.uri.to_owned(),
            priority: r.priority,
            routed: distribution(r.rule, upstreams.as_deref())
                .via(format!("spec.http[{}]", r.rule_index)),
            hosts: r.hosts,
        })
        .collect()
}

fn radix_routes(config: &GatewayConfig) -> Vec<RadixRoute<'_>> {
    let mut out = Vec::new();
    for (rule_index, rule) in rules(config).iter().enumerate() {
        let Some(matched) = rule.get("match") else {
            continue;
        };
        let hosts = super::fields::items(matched, "hosts")
            .iter()
            .filter_map(JsonValue::as_str)
            .map(str::to_ascii_lowercase)
            .collect::<Vec<_>>();
        for uri in items(matched, "paths").iter().filter_map(JsonValue::as_str) {
            out.push(RadixRoute {
                rule_index,
                rule,
                matched,
                uri,
                priority: int_field(rule, "priority").unwrap_or(0),
                hosts: hosts.clone(),
            });
        }
    }
    out
}

/// The request's value of a var, as nginx names them.
fn var_value<'r>(request: &'r Request, scope: &str, name: &str) -> Option<&'r str> {
    match scope {
        "Path" => Some(&request.path),
        "Query" => request.query.get(name),
        "Cookie" => request.cookies.get(name),
        // `http_<name>`: header names compare lower-cased with '-' as '_' (compared byte by
        // byte, without building either name: this runs for every probe).
        "Header" => {
            let as_var = |b: u8| {
                if b == b'-' {
                    b'_'
                } else {
                    b.to_ascii_lowercase()
                }
            };
            request
                .headers
                .iter()
                .find(|(n, _)| {
                    n.len() == name.len()
                        && n.bytes()
                            .zip(name.bytes())
                            .all(|(a, b)| as_var(a) == as_var(b))
                })
                .map(|(_, v)| v)
        }
        _ => None,
    }
}

/// Where in a rule's `match` (relative to it) the conditions the model does not evaluate are:
/// `remoteAddrs`, `filter_func`, `exprs[i]` of scope `Variable` or `Body` (with the scope).
fn unevaluated_conditions(matched: &JsonValue) -> Vec<(String, Option<&str>)> {
    let mut out: Vec<(String, Option<&str>)> = ["remoteAddrs", "filter_func"]
        .into_iter()
        .filter(|key| super::fields::is_set(matched.get(key)))
        .map(|key| (key.to_owned(), None))
        .collect();
    for (e, expr) in items(matched, "exprs").iter().enumerate() {
        if let Some(scope @ ("Variable" | "Body")) =
            expr.at(&["subject", "scope"]).and_then(JsonValue::as_str)
        {
            out.push((format!("exprs[{e}]"), Some(scope)));
        }
    }
    out
}

/// A rule's methods and exprs (its paths aside), read once per configuration (see
/// [`route_table`]) so that a probe is not matched against the resource's JSON.
struct ReadConditions {
    /// The rule has a condition the model does not evaluate ([`unevaluated_conditions`]): no
    /// probe meets it.
    unevaluated: bool,
    methods: Vec<String>,
    exprs: Vec<ReadExpr>,
}

/// One `exprs[]` entry, read.
struct ReadExpr {
    scope: String,
    name: String,
    op: String,
    expected: String,
    set: Vec<String>,
    /// The compiled search of a regex operator (`None` when it does not compile).
    regex: Option<std::rc::Rc<regex::Regex>>,
}

impl ReadConditions {
    /// The conditions of a rule's `match`.
    fn of(matched: &JsonValue) -> Self {
        let strings = |value: &JsonValue, key: &str| {
            items(value, key)
                .iter()
                .filter_map(JsonValue::as_str)
                .map(str::to_owned)
                .collect::<Vec<_>>()
        };
        let exprs = items(matched, "exprs")
            .iter()
            .map(|expr| {
                let text = |path: &[&str]| {
                    expr.at(path)
                        .and_then(JsonValue::as_str)
                        .unwrap_or_default()
                        .to_owned()
                };
                let op = text(&["op"]);
                let expected = text(&["value"]);
                let regex = match op.as_str() {
                    "RegexMatch" | "RegexNotMatch" => compile(&expected).ok(),
                    "RegexMatchCaseInsensitive" | "RegexNotMatchCaseInsensitive" => {
                        compile(&format!("(?i){expected}")).ok()
                    }
                    _ => None,
                };
                ReadExpr {
                    scope: text(&["subject", "scope"]),
                    name: text(&["subject", "name"]),
                    op,
                    expected,
                    set: strings(expr, "set"),
                    regex,
                }
            })
            .collect();
        ReadConditions {
            unevaluated: !unevaluated_conditions(matched).is_empty(),
            methods: strings(matched, "methods"),
            exprs,
        }
    }

    /// Whether the request's method and every expr match.
    fn hold(&self, request: &Request) -> bool {
        !self.unevaluated
            && (self.methods.is_empty() || self.methods.iter().any(|m| *m == request.method))
            && self.exprs.iter().all(|e| e.matches(request))
    }
}

impl ReadExpr {
    /// The expr against the request (lua-resty-expr `compare_funcs`).
    fn matches(&self, request: &Request) -> bool {
        let value = var_value(request, &self.scope, &self.name);
        let expected = self.expected.as_str();
        let in_set = |v: &str| self.set.iter().any(|s| s == v);
        let number = |s: &str| s.trim().parse::<f64>().ok();
        let compare = |f: fn(f64, f64) -> bool| matches!((value.and_then(number), number(expected)), (Some(a), Some(b)) if f(a, b));
        let search = || value.is_some_and(|v| self.regex.as_ref().is_some_and(|re| re.is_match(v)));
        match self.op.as_str() {
            "Equal" => value == Some(expected),
            "NotEqual" => value != Some(expected),
            "GreaterThan" => compare(|a, b| a > b),
            "GreaterThanEqual" => compare(|a, b| a >= b),
            "LessThan" => compare(|a, b| a < b),
            "LessThanEqual" => compare(|a, b| a <= b),
            "In" => value.is_some_and(in_set),
            "NotIn" => !value.is_some_and(in_set),
            "RegexMatch" | "RegexMatchCaseInsensitive" => search(),
            "RegexNotMatch" | "RegexNotMatchCaseInsensitive" => !search(),
            _ => false,
        }
    }
}

/// What a rule's `ToVars` would refuse, if anything.
fn expr_problem(expr: &JsonValue) -> Option<String> {
    let scope = expr
        .at(&["subject", "scope"])
        .and_then(JsonValue::as_str)
        .unwrap_or_default();
    let name = expr
        .at(&["subject", "name"])
        .and_then(JsonValue::as_str)
        .unwrap_or_default();
    if name.is_empty() && scope != "Path" {
        return Some("empty subject.name".into());
    }
    if !["Query", "Header", "Cookie", "Path", "Variable", "Body"].contains(&scope) {
        return Some("invalid http match expr: subject.scope should be one of [Query, Header, Cookie, Path, Variable, Body]".into());
    }
    let op = str_field(expr, "op").unwrap_or_default();
    let known = [
        "Equal",
        "NotEqual",
        "GreaterThan",
        "GreaterThanEqual",
        "LessThan",
        "LessThanEqual",
        "In",
        "NotIn",
        "RegexMatch",
        "RegexMatchCaseInsensitive",
        "RegexNotMatch",
        "RegexNotMatchCaseInsensitive",
    ];
    if !known.contains(&op) {
        return Some("unknown operator".into());
    }
    if matches!(op, "In" | "NotIn") {
        if expr.get("set").is_none() {
            return Some("empty set value".into());
        }
    } else if expr.get("value").is_none() {
        return Some("empty value".into());
    }
    None
}

/// A route's hosts against the request's: exact names, and `*.example.com` for any name
/// under it.
fn host_rank(hosts: &[String], host: Option<&str>) -> Option<usize> {
    let host = host?;
    // `hosts` are lower-cased; the request's host is compared without regard to ASCII case,
    // without a copy (this runs for every route of every probe).
    let ends_with = |suffix: &str| {
        host.len()
            .checked_sub(suffix.len())
            .filter(|&at| host.is_char_boundary(at))
            .is_some_and(|at| host[at..].eq_ignore_ascii_case(suffix))
    };
    hosts
        .iter()
        .filter_map(|h| match h.strip_prefix('*') {
            Some(suffix) => ends_with(suffix).then_some(suffix.len()),
            None => h.eq_ignore_ascii_case(host).then_some(usize::MAX),
        })
        .max()
}

/// `proxy-rewrite` header changes of an enabled plugin: `headers` as `{set, add, remove}` or
/// as a plain map of names to set.
fn header_changes(rule: &JsonValue) -> BTreeMap<String, Option<String>> {
    let mut changes = BTreeMap::new();
    for plugin in items(rule, "plugins") {
        if str_field(plugin, "name") != Some("proxy-rewrite")
            || plugin.get("enable").and_then(JsonValue::as_bool) != Some(true)
        {
            continue;
        }
        let Some(headers) = plugin
            .at(&["config", "headers"])
            .and_then(JsonValue::as_object)
        else {
            continue;
        };
        let structured = ["set", "add", "remove"]
            .iter()
            .any(|k| headers.contains_key(k));
        let mut put = |map: Option<&JsonValue>| {
            for (name, value) in map.and_then(JsonValue::as_object).into_iter().flatten() {
                let value = match value {
                    JsonValue::String(s) => s.clone(),
                    other => other.to_canonical_json(),
                };
                changes.insert(name.to_ascii_lowercase(), Some(value));
            }
        };
        if structured {
            put(headers.get("set"));
            put(headers.get("add"));
            for name in headers
                .get("remove")
                .and_then(JsonValue::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(name) = name.as_str() {
                    changes.insert(name.to_ascii_lowercase(), None);
                }
            }
        } else {
            let plain = JsonValue::Object(headers.clone());
            put(Some(&plain));
        }
    }
    changes
}

/// `buildUpstream`: backends then ApisixUpstream references, each weighted (100 when unset).
fn weights(rule: &JsonValue, upstreams: Option<&[&JsonValue]>) -> Vec<(Backend, f64)> {
    let backends = items(rule, "backends").iter().map(|b| {
        let service = str_field(b, "serviceName").unwrap_or_default();
        let backend = Backend {
            service: service.into(),
            subset: resolve_subset(service, str_field(b, "subset"), upstreams)
                .unwrap_or(None)
                .map(SmolStr::from),
            port: port_field(b, "servicePort"),
        };
        (backend, int_field(b, "weight").unwrap_or(100).max(0) as f64)
    });
    let upstreams = items(rule, "upstreams").iter().map(|u| {
        let backend = Backend::service(str_field(u, "name").unwrap_or_default());
        (backend, int_field(u, "weight").unwrap_or(100).max(0) as f64)
    });
    backends.chain(upstreams).collect()
}

fn distribution(rule: &JsonValue, upstreams: Option<&[&JsonValue]>) -> Routed {
    let weights = weights(rule, upstreams);
    // A single upstream takes everything, whatever its weight.
    let d = if weights.len() == 1 {
        Some(Distribution::single(weights[0].0.clone()))
    } else {
        Distribution::from_weights(&weights)
    };
    let Some(mut d) = d else {
        return Routed::NoRoute;
    };
    let changes = header_changes(rule);
    if !changes.is_empty() {
        for (b, _) in &d.shares {
            d.header_changes.insert(b.clone(), changes.clone());
        }
    }
    Routed::to(d)
}

/// Two routes with the same uri, hosts and priority that both take one request: which one
/// serves it is undefined for an ApisixRoute. lua-resty-radixtree tries routes of one uri by
/// priority and, on equal priority, in the order they were inserted (api7/lua-resty-radixtree
/// `t/priority.t`, "multiple route (same priority)": the first inserted wins); APISIX inserts
/// the routes in the order it loads them from its configuration store, which the ApisixRoute's
/// document order does not control (each rule becomes its own route object). Reported as the
/// Traefik model reports a priority tie.
fn equal_priority_ties(
    config: &GatewayConfig,
    probes: impl Fn() -> Vec<Request>,
) -> Vec<ConfigProblem> {
    let routes = radix_routes(config);
    // The probes only once two routes tie (most configurations have none, and building the
    // probes cost most of this check).
    let built = std::cell::OnceCell::new();
    let mut problems = Vec::new();
    for (i, a) in routes.iter().enumerate() {
        for b in &routes[i + 1..] {
            if a.rule_index == b.rule_index
                || a.uri != b.uri
                || a.priority != b.priority
                || a.hosts != b.hosts
            {
                continue;
            }
            let built = built.get_or_init(&probes);
            let (a_holds, b_holds) = (ReadConditions::of(a.matched), ReadConditions::of(b.matched));
            // The same uri (above): one path test is both routes'.
            let both = |p: &&Request| {
                uri_matches(a.uri, &p.path)
                    && a_holds.hold(p)
                    && b_holds.hold(p)
                    && (a.hosts.is_empty() || host_rank(&a.hosts, p.host.as_deref()).is_some())
            };
            if let Some(p) = built.iter().find(both) {
                problems.push(ConfigProblem {
                    path: format!("spec.http[{}].priority", b.rule_index),
                    kind: ProblemKind::Ignored,
                    message: format!(
                        "rules {} and {} have the same uri {}, the same priority {} and both match {}: which one serves is undefined",
                        a.rule_index,
                        b.rule_index,
                        a.uri,
                        a.priority,
                        p.describe()
                    ),
                });
            }
        }
    }
    problems
}

fn literals(route: &RadixRoute) -> Vec<Literal> {
    let mut out = Vec::new();
    match uri_prefix(route.uri) {
        Some(p) if p != "/" && !p.is_empty() => out.push((Cond::PathPrefix(p.to_owned()), true)),
        Some(_) => {}
        None => out.push((Cond::PathExact(route.uri.to_owned()), true)),
    }
    let matched = route.matched;
    if let Some(m) = items(matched, "methods")
        .first()
        .and_then(JsonValue::as_str)
    {
        out.push((Cond::Method(m.to_owned()), true));
    }
    for expr in items(matched, "exprs") {
        let scope = expr
            .at(&["subject", "scope"])
            .and_then(JsonValue::as_str)
            .unwrap_or_default();
        let name = expr
            .at(&["subject", "name"])
            .and_then(JsonValue::as_str)
            .unwrap_or_default()
            .to_owned();
        let value = str_field(expr, "value").unwrap_or_default().to_owned();
        let first = items(expr, "set")
            .first()
            .and_then(JsonValue::as_str)
            .unwrap_or_default()
            .to_owned();
        let (cond, holds) = match str_field(expr, "op").unwrap_or_default() {
            "Equal" => (ValueCond::Exact(value), true),
            "NotEqual" => (ValueCond::Exact(value), false),
            "In" => (ValueCond::Exact(first), true),
            "NotIn" => (ValueCond::Exact(first), false),
            "RegexMatch" | "RegexMatchCaseInsensitive" => (ValueCond::Regex(value), true),
            "RegexNotMatch" | "RegexNotMatchCaseInsensitive" => (ValueCond::Regex(value), false),
            _ => continue,
        };
        let literal = match (scope, cond) {
            ("Path", ValueCond::Exact(v)) => Cond::PathExact(v),
            ("Path", ValueCond::Regex(r)) => Cond::PathRegex(r),
            ("Header", c) => Cond::Header(name, c),
            ("Query", c) => Cond::Query(name, c),
            ("Cookie", c) => Cond::Cookie(name, c),
            _ => continue,
        };
        out.push((literal, holds));
    }
    out
}

impl RoutingModel for ApisixRoute {
    fn name(&self) -> &'static str {
        match self.controller {
            Controller::V1 => "APISIX ApisixRoute (apisix.apache.org/v2, ingress controller 1.x)",
            Controller::V2 => "APISIX ApisixRoute (apisix.apache.org/v2, ingress controller 2.x)",
        }
    }

    fn applies_to(&self, kind: &ScriptKind) -> bool {
        is_apisix(kind, "ApisixRoute")
    }

    fn config_problems(&self, config: &GatewayConfig) -> Vec<ConfigProblem> {
        let (route, upstreams) = parts(config);
        let namespace = route
            .and_then(|r| r.at(&["metadata", "namespace"]))
            .and_then(JsonValue::as_str)
            .unwrap_or("default");
        let mut problems = Vec::new();
        for (i, rule) in rules(config).iter().enumerate() {
            let at = format!("spec.http[{i}]");
            if let Some(matched) = rule.get("match") {
                for (what, scope) in unevaluated_conditions(matched) {
                    let mut problem = ConfigProblem::not_evaluated(format!("{at}.match.{what}"));
                    if let Some(scope) = scope {
                        problem.message = format!(
                            "is not evaluated: probes carry no {scope} value (they are taken as \
                             not meeting it)"
                        );
                    }
                    problems.push(problem);
                }
            }
            for (e, expr) in rule
                .get("match")
                .map_or(&[][..], |m| items(m, "exprs"))
                .iter()
                .enumerate()
            {
                if let Some(message) = expr_problem(expr) {
                    problems.push(ConfigProblem {
                        path: format!("{at}.match.exprs[{e}]"),
                        kind: ProblemKind::Rejected,
                        message,
                    });
                }
            }
            if self.controller == Controller::V2 {
                let mut seen = Vec::new();
                for (b, backend) in items(rule, "backends").iter().enumerate() {
                    let name = str_field(backend, "serviceName").unwrap_or_default();
                    if seen.contains(&name) {
                        problems.push(ConfigProblem {
                            path: format!("{at}.backends[{b}].serviceName"),
                            kind: ProblemKind::Rejected,
                            message: format!("duplicate backend service: {namespace}/{name}"),
                        });
                    }
                    seen.push(name);
                }
            }
            for (b, backend) in items(rule, "backends").iter().enumerate() {
                let service = str_field(backend, "serviceName").unwrap_or_default();
                let subset = str_field(backend, "subset");
                if let Err(message) = resolve_subset(service, subset, upstreams.as_deref()) {
                    problems.push(ConfigProblem {
                        path: format!("{at}.backends[{b}].subset"),
                        kind: ProblemKind::Ignored,
                        message,
                    });
                }
            }
            let weights = weights(rule, upstreams.as_deref());
            if weights.len() > 1 && weights.iter().all(|(_, w)| *w <= 0.0) {
                problems.push(ConfigProblem {
                    path: format!("{at}.backends"),
                    kind: ProblemKind::Rejected,
                    message: "every backend has weight 0: the traffic split has nowhere to send a request".into(),
                });
            }
        }
        problems.extend(equal_priority_ties(config, || self.probes(config)));
        problems
    }

    fn route(&self, config: &GatewayConfig, request: &Request) -> Routed {
        let table = super::memo::derived(config, || route_table(config));
        // radixtree_host_uri: host routes for this host first (exact names before wildcards,
        // longer wildcards first), then routes without hosts. Within each: full paths, then
        // longer prefixes, then higher priority, then document order. The first route in that
        // order whose conditions hold takes the request: the least by that order among those
        // that hold, found in one pass without sorting (a route's conditions are tested only
        // when it would come before the best one so far). Ties keep the earlier route of the
        // table, as the stable sort this replaces did.
        let rank = |r: &TableRoute| {
            let host = if r.hosts.is_empty() {
                0
            } else {
                host_rank(&r.hosts, request.host.as_deref())?.saturating_add(1)
            };
            uri_matches(&r.uri, &request.path).then(|| {
                (
                    std::cmp::Reverse(host),
                    std::cmp::Reverse(uri_specificity(&r.uri)),
                    std::cmp::Reverse(r.priority),
                    r.rule_index,
                )
            })
        };
        let mut best: Option<(_, &TableRoute)> = None;
        for r in table.iter() {
            let Some(key) = rank(r) else {
                continue;
            };
            if best.as_ref().is_none_or(|(held, _)| key < *held) && r.conditions.hold(request) {
                best = Some((key, r));
            }
        }
        best.map_or(Routed::NoRoute, |(_, r)| r.routed.clone())
    }

    fn probes(&self, config: &GatewayConfig) -> Vec<Request> {
        let mut conjunctions = Vec::new();
        for route in radix_routes(config) {
            let mut literals = literals(&route);
            if let Some(host) = route.hosts.first() {
                literals.insert(0, (Cond::Host(host.clone()), true));
            }
            conjunctions.push(literals);
        }
        probes_for(conjunctions, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routing::testing::{json, library_case};

    const V2: ApisixRoute = ApisixRoute {
        controller: Controller::V2,
    };
    const V1: ApisixRoute = ApisixRoute {
        controller: Controller::V1,
    };

    fn route(http: &str) -> GatewayConfig {
        GatewayConfig::Resource(json(&format!(
            "kind: ApisixRoute\nmetadata: {{name: web, namespace: shop}}\nspec:\n  http:\n{http}"
        )))
    }

    fn to(config: &GatewayConfig, request: &Request) -> String {
        V2.route(config, request).describe()
    }

    #[test]
    fn equal_priority_on_the_same_uri_is_undefined() {
        let c = route(
            "  - name: canary\n    match:\n      paths: [/*]\n      exprs: [{subject: {scope: Header, name: x-canary}, op: Equal, value: \"1\"}]\n    backends: [{serviceName: web-canary, servicePort: 80}]\n  - name: main\n    match: {paths: [/*]}\n    backends: [{serviceName: web, servicePort: 80}]\n",
        );
        let problems = V2.config_problems(&c);
        assert!(
            problems.iter().any(|p| p.path == "spec.http[1].priority"
                && p.message.contains("which one serves is undefined")),
            "{problems:?}"
        );
        // A higher priority on the canary rule orders them.
        let ordered = route(
            "  - name: canary\n    priority: 1\n    match:\n      paths: [/*]\n      exprs: [{subject: {scope: Header, name: x-canary}, op: Equal, value: \"1\"}]\n    backends: [{serviceName: web-canary, servicePort: 80}]\n  - name: main\n    match: {paths: [/*]}\n    backends: [{serviceName: web, servicePort: 80}]\n",
        );
        assert!(V2.config_problems(&ordered).is_empty());
    }

    #[test]
    fn duplicate_backend_service_is_rejected_by_2x_only() {
        let c = route(
            "  - name: main\n    match: {paths: [/*]}\n    backends:\n    - {serviceName: web, servicePort: 80, subset: stable, weight: 90}\n    - {serviceName: web, servicePort: 80, subset: canary, weight: 10}\n",
        );
        let problems = V2.config_problems(&c);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].message, "duplicate backend service: shop/web");
        assert_eq!(problems[0].path, "spec.http[0].backends[1].serviceName");
        assert!(V1.config_problems(&c).is_empty());
        assert_eq!(
            to(&c, &Request::get("/")),
            "web/canary:80 10 %, web/stable:80 90 %"
        );
    }

    #[test]
    fn deeper_prefix_beats_priority_and_priority_orders_the_same_uri() {
        // The header case after a step: the canary rule has priority 1 on `/*`, but
        // `/static/*` is a deeper prefix and is tried first.
        let case = library_case("apisix.apache.org/ApisixRoute", "header_matches");
        let step = GatewayConfig::Resource(case.expected[0].clone());
        let mut r = Request::get("/static/app.js");
        r.host = Some("web.example.com".into());
        r.headers.insert("x-canary", "true");
        r.headers.insert("user-agent", "an iPhone");
        assert_eq!(to(&step, &r), "static:80 100 %");
        r.path = "/home".into();
        assert_eq!(to(&step, &r), "web-canary:8080 100 %");
        r.headers.remove("x-canary");
        assert_eq!(to(&step, &r), "web:8080 100 %");
        r.host = Some("other.example.com".into());
        assert_eq!(to(&step, &r), "no route");
    }

    #[test]
    fn full_path_beats_prefix_and_star_needs_the_slash() {
        let c = route(
            "  - name: all\n    priority: 10\n    match: {paths: [/api/*]}\n    backends: [{serviceName: api, servicePort: 80}]\n  - name: exact\n    match: {paths: [/api/login]}\n    backends: [{serviceName: auth, servicePort: 80}]\n",
        );
        assert_eq!(to(&c, &Request::get("/api/login")), "auth:80 100 %");
        assert_eq!(to(&c, &Request::get("/api/x")), "api:80 100 %");
        assert_eq!(to(&c, &Request::get("/api")), "no route");
    }

    #[test]
    fn subsets_resolve_through_the_upstreams_beside_the_route() {
        let list = GatewayConfig::Resource(json(
            "kind: List\nitems:\n- kind: ApisixRoute\n  metadata: {name: web}\n  spec:\n    http:\n    - name: main\n      match: {paths: [/*]}\n      backends:\n      - {serviceName: web, servicePort: 80, subset: stable, weight: 90}\n      - {serviceName: web-canary, servicePort: 80, subset: canary, weight: 10}\n- kind: ApisixUpstream\n  metadata: {name: web}\n  spec:\n    subsets: [{name: stable, labels: {version: v1}}]\n",
        ));
        let problems = V2.config_problems(&list);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].path, "spec.http[0].backends[1].subset");
        assert_eq!(problems[0].kind, ProblemKind::Ignored);
        // The canary's unknown subset selects all its endpoints.
        assert_eq!(
            to(&list, &Request::get("/")),
            "web/stable:80 90 %, web-canary:80 10 %"
        );
    }

    #[test]
    fn weights_default_to_100_and_exprs_follow_lua_resty_expr() {
        let c = route(
            "  - name: main\n    match:\n      paths: [/*]\n      exprs:\n      - {subject: {scope: Header, name: X-Env}, op: NotEqual, value: prod}\n    backends:\n    - {serviceName: web, servicePort: 80, weight: 300}\n    - {serviceName: web-canary, servicePort: 80}\n",
        );
        // A missing header is "not equal".
        assert_eq!(
            to(&c, &Request::get("/")),
            "web:80 75 %, web-canary:80 25 %"
        );
        let mut r = Request::get("/");
        r.headers.insert("x-env", "prod");
        assert_eq!(to(&c, &r), "no route");
    }

    /// QA repro `apisix-bs-remoteaddrs`: a rule for an office network (`remoteAddrs`) took
    /// every probe, so the main rule after it was never probed. Conditions the model does not
    /// evaluate (`remoteAddrs`, `filter_func`, `Variable`/`Body` exprs, even under an operator
    /// a missing value satisfies) are taken as not met and reported.
    #[test]
    fn unevaluated_conditions_are_not_met_and_reported() {
        for (condition, path) in [
            (
                "remoteAddrs: [10.0.0.0/8]",
                "spec.http[0].match.remoteAddrs",
            ),
            (
                "filter_func: 'function(vars) return true end'",
                "spec.http[0].match.filter_func",
            ),
            (
                "exprs: [{subject: {scope: Variable, name: remote_addr}, op: NotEqual, value: x}]",
                "spec.http[0].match.exprs[0]",
            ),
        ] {
            let c = route(&format!(
                "  - name: office\n    priority: 10\n    match:\n      paths: [/*]\n      {condition}\n    backends:\n    - {{serviceName: office, servicePort: 80}}\n  - name: main\n    match: {{paths: [/*]}}\n    backends:\n    - {{serviceName: web, servicePort: 80}}\n"
            ));
            assert_eq!(to(&c, &Request::get("/")), "web:80 100 %", "{condition}");
            let problems = V2.config_problems(&c);
            assert_eq!(problems.len(), 1, "{condition}: {problems:?}");
            assert_eq!(problems[0].kind, ProblemKind::NotEvaluated);
            assert_eq!(problems[0].path, path);
        }
    }

    #[test]
    fn library_case_header_plugin_and_probes() {
        let case = library_case(
            "apisix.apache.org/ApisixRoute",
            "path_query_header_modifier",
        );
        let step = GatewayConfig::Resource(case.expected[0].clone());
        assert!(V2.config_problems(&step).is_empty());
        let mut r = Request::get("/cart.v2/items");
        r.query.insert("beta", "1");
        let Routed::To(d) = V2.route(&step, &r) else {
            panic!()
        };
        assert_eq!(d.describe(), "shop-canary:80 100 %");
        let changes = &d.header_changes[&d.shares[0].0];
        assert_eq!(changes["x-release"].as_deref(), Some("canary"));
        assert_eq!(changes["x-debug"], None);
        r.method = "PUT".into();
        assert_eq!(to(&step, &r), "no route");
        let probes = V2.probes(&step);
        assert!(
            probes
                .iter()
                .any(|p| to(&step, p) == "shop-canary:80 100 %"),
            "{probes:?}"
        );
        assert!(
            probes.iter().any(|p| to(&step, p) == "shop:80 100 %"),
            "{probes:?}"
        );
    }
}
