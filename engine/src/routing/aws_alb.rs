//! AWS Load Balancer Controller Ingress (`alb.ingress.kubernetes.io/…`): the listener rules an
//! IngressGroup's Ingresses become, in priority order, with `conditions.<name>` and
//! `actions.<name>` annotations.
//!
//! AWS has no "canary Ingress": the canary Ingress Kruise builds (same hosts and paths, backend
//! renamed to the canary service) only takes traffic when it joins the stable Ingress's
//! IngressGroup (`group.name`) and its rules come first (`group.order`). Otherwise it either
//! gets a load balancer of its own, which the stable host's DNS never reaches, or its rules sit
//! behind the stable ones for the same paths.
//!
//! Sources (kubernetes-sigs/aws-load-balancer-controller 225f445, read, not copied;
//! `docs/guide/ingress/annotations.md` describes the same):
//! - `pkg/ingress/group_loader.go`, `sortGroupMembers`: members ordered by `group.order`
//!   (default 0, -1000..1000), then by namespace/name; Ingresses without `group.name` are
//!   groups of their own.
//! - `pkg/ingress/model_build_listener_rules.go`: rules in member order, per Ingress rule the
//!   paths sorted Exact, then Prefix longest first, then ImplementationSpecific in order;
//!   priorities 1, 2, …; `buildPathPatternsForPrefixPathType` (`/` → `/*`, `/foo` → `/foo` and
//!   `/foo/*`); `buildRuleConditions` (host, path patterns, and the `conditions.<service>`
//!   annotation: `path-pattern`/`host-header` values join the rule's own — ORed with them —
//!   `http-header`, `query-string`, `http-request-method`, `source-ip` are ANDed).
//! - `pkg/ingress/enhanced_backend_builder.go`, `Build`: `conditions.<service name>` applies
//!   to any backend of that name; `actions.<name>` is read only when the backend's port is
//!   named `use-annotation`; a missing action is an error (or a 503 when tolerated).
//! - `pkg/ingress/config_types.go`: the JSON field names (`field`, `httpHeaderConfig`
//!   `{httpHeaderName, values}`, `queryStringConfig {values: [{key, value}]}`, `forwardConfig
//!   {targetGroups: [{serviceName, servicePort, weight}]}`), decoded by Go's encoding/json,
//!   which matches field names case-insensitively.
//! - ELB docs, listener rule conditions: `*` and `?` wildcards; host, header values and query
//!   strings compare case-insensitively, path patterns case-sensitively.
//!
//! Not evaluated: `source-ip` (probes carry no client address, so the rule is taken as not met,
//! reported as a [`ProblemKind::NotEvaluated`]). Not modelled: regex
//! values other than as an unanchored search, authentication, transforms.

use std::collections::BTreeMap;

use super::SmolStr;
use super::ingress_rules::{
    IngressPath, annotation, config_annotations, config_ingress_paths, ingress_name, pair_probes,
};
use super::{
    Backend, ConfigProblem, Distribution, GatewayConfig, ProblemKind, Request, Routed, RoutingModel,
};
use crate::script::ScriptKind;
use crate::value::JsonValue;

pub struct AwsAlb;

const PREFIX: &str = "alb.ingress.kubernetes.io/";

/// A member of field `name` of a JSON object, matched case-insensitively as encoding/json does.
fn field<'a>(object: &'a JsonValue, name: &str) -> Option<&'a JsonValue> {
    let members = object.as_object()?;
    members.get(name).or_else(|| {
        members
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    })
}

fn strings(value: Option<&JsonValue>) -> Vec<String> {
    value
        .and_then(JsonValue::as_array)
        .unwrap_or_default()
        .iter()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect()
}

/// ELB wildcard matching: `*` any run of characters, `?` one character.
fn glob(pattern: &str, text: &str, ignore_case: bool) -> bool {
    // ASCII (every probe and nearly every rule): byte by byte, folded while comparing, without
    // copying either side (this runs for every rule of every probe).
    if pattern.is_ascii() && text.is_ascii() {
        return if ignore_case {
            glob_units(pattern.as_bytes(), text.as_bytes(), b'*', b'?', |a, b| {
                a.eq_ignore_ascii_case(&b)
            })
        } else {
            glob_units(pattern.as_bytes(), text.as_bytes(), b'*', b'?', |a, b| {
                a == b
            })
        };
    }
    let fold = |s: &str| -> Vec<char> {
        if ignore_case {
            s.to_lowercase().chars().collect()
        } else {
            s.chars().collect()
        }
    };
    let (p, t) = (fold(pattern), fold(text));
    glob_units(&p, &t, '*', '?', |a, b| a == b)
}

/// [`glob`] on units (bytes or chars), `same` comparing a pattern unit with a text unit:
/// iterative wildcard matching with one backtrack point (linear in practice).
fn glob_units<T: Copy + PartialEq>(
    p: &[T],
    t: &[T],
    any_run: T,
    any_one: T,
    same: impl Fn(T, T) -> bool,
) -> bool {
    let (mut pi, mut ti, mut star, mut mark) = (0, 0, None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == any_one || same(p[pi], t[ti])) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == any_run {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == any_run)
}

/// One listener rule: ANDed conditions, then an action.
struct ListenerRule {
    hosts: Vec<String>,
    paths: Vec<String>,
    /// Conditions from the annotation other than host/path.
    conditions: Vec<JsonValue>,
    /// Carries where the rule comes from (`Ingress web-canary spec.rules[0].http.paths[0]`),
    /// attached once here so routing a probe shares the decision instead of copying it.
    action: Option<Routed>,
}

/// The annotation `<PREFIX><kind>.<service>` (`conditions.web`), found without building its
/// name.
fn service_annotation<'a>(
    notes: &'a BTreeMap<String, String>,
    kind: &str,
    service: &str,
) -> Option<&'a String> {
    super::ingress_rules::annotation_named(notes, &[PREFIX, kind, ".", service])
}

/// The JSON of annotation `<PREFIX><kind>.<service>`, when the Ingress has it: parsed once per
/// case for each text (see [`super::memo::derived_from_value`]), as the configurations of a
/// case carry the same annotations.
fn parse_annotation(
    notes: &BTreeMap<String, String>,
    kind: &str,
    service: &str,
) -> Result<Option<std::rc::Rc<JsonValue>>, String> {
    let Some(text) = service_annotation(notes, kind, service) else {
        return Ok(None);
    };
    let parsed = super::memo::derived_from_value(AnnotationText(text.clone()), |text| {
        JsonValue::parse_go_interface(text.0.as_bytes())
            .map(std::rc::Rc::new)
            .map_err(|e| e.to_string())
    });
    match &*parsed {
        Ok(json) => Ok(Some(json.clone())),
        Err(e) => Err(format!("{PREFIX}{kind}.{service} is not JSON: {e}")),
    }
}

/// An annotation's text, as the key its parsed JSON is kept by.
#[derive(PartialEq, Eq, Hash)]
struct AnnotationText(String);

/// The requests a `forward` action sends where.
fn forward(action: &JsonValue) -> Routed {
    let kind = field(action, "type")
        .and_then(JsonValue::as_str)
        .unwrap_or("");
    if !kind.eq_ignore_ascii_case("forward") {
        // fixed-response / redirect: the load balancer answers itself.
        return Routed::NoRoute;
    }
    let groups = field(action, "forwardConfig")
        .and_then(|f| field(f, "targetGroups"))
        .and_then(JsonValue::as_array)
        .unwrap_or_default();
    let tuples: Vec<(Backend, f64)> = groups
        .iter()
        .map(|g| {
            let service = field(g, "serviceName")
                .and_then(JsonValue::as_str)
                .or_else(|| field(g, "targetGroupARN").and_then(JsonValue::as_str))
                .or_else(|| field(g, "targetGroupName").and_then(JsonValue::as_str))
                .unwrap_or_default();
            let port = field(g, "servicePort").and_then(|p| match p {
                JsonValue::String(s) => Some(s.clone()),
                other => other.as_f64().map(|n| format!("{n}")),
            });
            let weight = field(g, "weight")
                .and_then(JsonValue::as_f64)
                .unwrap_or(1.0);
            (
                Backend {
                    service: service.into(),
                    subset: None,
                    port: port.map(SmolStr::from),
                },
                weight,
            )
        })
        .collect();
    match tuples.as_slice() {
        [] => Routed::NoRoute,
        [(backend, _)] => Routed::to(Distribution::single(backend.clone())),
        _ => Distribution::from_weights(&tuples).map_or(Routed::NoRoute, Routed::to),
    }
}

/// Path patterns for an Ingress path (`buildPathPatterns`).
fn path_patterns(path: &IngressPath) -> Vec<String> {
    match path.path_type.as_str() {
        "Prefix" if path.path == "/" => vec!["/*".to_owned()],
        "Prefix" => {
            let base = path.path.trim_end_matches('/');
            vec![base.to_owned(), format!("{base}/*")]
        }
        _ => vec![path.path.to_string()],
    }
}

/// Paths of one Ingress in rule order (`sortIngressPaths` per Ingress rule).
fn sorted_paths(ingress: &JsonValue) -> Vec<IngressPath> {
    let all = config_ingress_paths(ingress);
    let mut rules: Vec<Vec<IngressPath>> = Vec::new();
    for path in all.iter().cloned() {
        let rule = path.location.split(".http").next().unwrap_or("").to_owned();
        match rules.last_mut() {
            Some(last) if last[0].location.starts_with(&rule) => last.push(path),
            _ => rules.push(vec![path]),
        }
    }
    let mut out = Vec::new();
    for rule in rules {
        let of = |t: &str| {
            rule.iter()
                .filter(|p| p.path_type == t)
                .cloned()
                .collect::<Vec<_>>()
        };
        let mut prefix = of("Prefix");
        prefix.sort_by_key(|p| std::cmp::Reverse(p.path.len()));
        out.extend(of("Exact"));
        out.extend(prefix);
        out.extend(
            rule.iter()
                .filter(|p| p.path_type != "Exact" && p.path_type != "Prefix")
                .cloned(),
        );
    }
    out
}

/// The Ingress's IngressGroup (`group.name`), when it names one. The Ingress is one of a
/// configuration's (its annotations are read once per step, see [`config_annotations`]).
fn group(ingress: &JsonValue) -> Option<String> {
    annotation(&config_annotations(ingress), PREFIX, "group.name")
        .filter(|g| !g.is_empty())
        .cloned()
}

fn rank(ingress: &JsonValue) -> (i64, String) {
    let order = annotation(&config_annotations(ingress), PREFIX, "group.order")
        .and_then(|o| o.trim().parse().ok())
        .unwrap_or(0);
    let name = |k: &str| {
        ingress
            .at(&["metadata", k])
            .and_then(JsonValue::as_str)
            .unwrap_or_default()
    };
    (order, format!("{}/{}", name("namespace"), name("name")))
}

/// The Ingresses sharing the stable one's load balancer, in group order.
fn members(config: &GatewayConfig) -> Vec<&JsonValue> {
    let (stable, canary) = match config {
        GatewayConfig::Ingress { stable, canary } => (&**stable, canary.as_ref()),
        GatewayConfig::Resource(object) => (object, None),
    };
    let mut members = vec![stable];
    if let Some(canary) = canary
        && group(stable).is_some()
        && group(canary) == group(stable)
    {
        members.push(canary);
    }
    members.sort_by_cached_key(|m| rank(m));
    members
}

/// [`build_listener_rules`] and what building them found, once per configuration and step
/// (see [`super::memo`]).
fn listener_rules(config: &GatewayConfig) -> std::rc::Rc<(Vec<ListenerRule>, Vec<ConfigProblem>)> {
    super::memo::derived(config, || {
        let mut problems = Vec::new();
        let rules = build_listener_rules(config, &mut problems);
        (rules, problems)
    })
}

fn build_listener_rules(
    config: &GatewayConfig,
    problems: &mut Vec<ConfigProblem>,
) -> Vec<ListenerRule> {
    let mut rules = Vec::new();
    for ingress in members(config) {
        let notes = config_annotations(ingress);
        for path in sorted_paths(ingress) {
            let service = path.backend.service.clone();
            let mut hosts: Vec<String> = path.host.iter().map(SmolStr::to_string).collect();
            let mut paths = path_patterns(&path);
            let mut conditions = Vec::new();
            match parse_annotation(&notes, "conditions", &service) {
                Err(message) => problems.push(ConfigProblem {
                    path: format!("metadata.annotations[\"{PREFIX}conditions.{service}\"]"),
                    kind: ProblemKind::Rejected,
                    message,
                }),
                Ok(Some(list)) => {
                    for condition in list.as_array().unwrap_or_default() {
                        let name = field(condition, "field")
                            .and_then(JsonValue::as_str)
                            .unwrap_or("");
                        let config_of =
                            |key: &str| field(condition, key).and_then(|c| field(c, "values"));
                        match name {
                            "host-header" => hosts.extend(strings(config_of("hostHeaderConfig"))),
                            "path-pattern" => paths.extend(strings(config_of("pathPatternConfig"))),
                            "http-header" | "query-string" | "http-request-method" => {
                                conditions.push(condition.clone())
                            }
                            // Probes carry no client address: the rule is taken as not met
                            // (`condition_holds`), and the check says so.
                            "source-ip" => {
                                problems.push(ConfigProblem {
                                    path: format!(
                                        "metadata.annotations[\"{PREFIX}conditions.{service}\"]"
                                    ),
                                    kind: ProblemKind::NotEvaluated,
                                    message: "is not evaluated where it tests source-ip: probes \
                                              carry no client address (they are taken as not \
                                              meeting it)"
                                        .into(),
                                });
                                conditions.push(condition.clone())
                            }
                            other => problems.push(ConfigProblem {
                                path: format!(
                                    "metadata.annotations[\"{PREFIX}conditions.{service}\"]"
                                ),
                                kind: ProblemKind::Rejected,
                                message: format!("unknown condition field {other:?}"),
                            }),
                        }
                    }
                }
                Ok(None) => {}
            }
            let action = if path.port_name.as_deref() == Some("use-annotation") {
                match parse_annotation(&notes, "actions", &service) {
                    Ok(Some(action)) => Some(forward(&action)),
                    Ok(None) => {
                        problems.push(ConfigProblem {
                            path: format!("metadata.annotations[\"{PREFIX}actions.{service}\"]"),
                            kind: ProblemKind::Rejected,
                            message: format!(
                                "the backend {service} uses use-annotation but the Ingress has no \
                                 {PREFIX}actions.{service}"
                            ),
                        });
                        None
                    }
                    Err(message) => {
                        problems.push(ConfigProblem {
                            path: format!("metadata.annotations[\"{PREFIX}actions.{service}\"]"),
                            kind: ProblemKind::Rejected,
                            message,
                        });
                        None
                    }
                }
            } else {
                if service_annotation(&notes, "actions", &service).is_some() {
                    problems.push(ConfigProblem {
                        path: format!("metadata.annotations[\"{PREFIX}actions.{service}\"]"),
                        kind: ProblemKind::Ignored,
                        message: format!(
                            "actions.{service} is read only for a backend whose port is named \
                             use-annotation"
                        ),
                    });
                }
                Some(Routed::to(Distribution::single(path.backend.clone())))
            };
            let name = ingress_name(ingress);
            rules.push(ListenerRule {
                hosts,
                paths,
                conditions,
                action: action.map(|a| a.via(format!("Ingress {name} {}", path.location))),
            });
        }
    }
    rules
}

fn condition_holds(condition: &JsonValue, request: &Request) -> bool {
    let name = field(condition, "field")
        .and_then(JsonValue::as_str)
        .unwrap_or("");
    let config = |key: &str| field(condition, key);
    match name {
        "http-header" => {
            let Some(c) = config("httpHeaderConfig") else {
                return false;
            };
            let header = field(c, "httpHeaderName")
                .and_then(JsonValue::as_str)
                .unwrap_or("");
            let Some(value) = super::header_value(request, header) else {
                return false;
            };
            // Borrowed, not collected: this runs for every probe.
            let listed = |key: &str| {
                field(c, key)
                    .and_then(JsonValue::as_array)
                    .unwrap_or_default()
                    .iter()
                    .filter_map(JsonValue::as_str)
            };
            listed("values").any(|v| glob(v, value, true))
                || listed("regexValues").any(|r| super::fields::finds(r, value))
        }
        "query-string" => {
            let pairs = config("queryStringConfig")
                .and_then(|c| field(c, "values"))
                .and_then(JsonValue::as_array)
                .unwrap_or_default();
            pairs.iter().any(|pair| {
                let value = field(pair, "value")
                    .and_then(JsonValue::as_str)
                    .unwrap_or("");
                match field(pair, "key").and_then(JsonValue::as_str) {
                    Some(key) => request
                        .query
                        .iter()
                        .any(|(k, v)| glob(key, k, true) && glob(value, v, true)),
                    None => request.query.values().any(|v| glob(value, v, true)),
                }
            })
        }
        "http-request-method" => {
            strings(config("httpRequestMethodConfig").and_then(|c| field(c, "values")))
                .iter()
                .any(|m| *m == request.method)
        }
        _ => false,
    }
}

fn rule_matches(rule: &ListenerRule, request: &Request) -> bool {
    let host_ok = rule.hosts.is_empty()
        || request
            .host
            .as_deref()
            .is_some_and(|h| rule.hosts.iter().any(|p| glob(p, h, true)));
    host_ok
        && rule.paths.iter().any(|p| glob(p, &request.path, false))
        && rule.conditions.iter().all(|c| condition_holds(c, request))
}

impl RoutingModel for AwsAlb {
    /// ALB's http-header and query-string conditions compare values case-insensitively
    /// (AWS Elastic Load Balancing docs, "Listener rules for your Application Load Balancer",
    /// condition types: "The comparison strings are not case-sensitive"), as [`glob`] does here.
    fn values_ignore_case(&self) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        "AWS Load Balancer Controller Ingress (IngressGroup rules, conditions/actions annotations)"
    }

    fn applies_to(&self, kind: &ScriptKind) -> bool {
        matches!(kind, ScriptKind::Ingress { class } if class == "aws-alb")
    }

    fn config_problems(&self, config: &GatewayConfig) -> Vec<ConfigProblem> {
        let mut problems = listener_rules(config).1.clone();
        if let GatewayConfig::Ingress {
            stable,
            canary: Some(canary),
        } = config
        {
            if group(stable).is_none() || group(canary) != group(stable) {
                problems.push(ConfigProblem {
                    path: format!("metadata.annotations[\"{PREFIX}group.name\"]"),
                    kind: ProblemKind::Ignored,
                    message: "the canary Ingress is not in the stable Ingress's IngressGroup: its \
                              rules live on another load balancer"
                        .into(),
                });
            }
            for (ingress, which) in [(&**stable, "stable"), (canary, "canary")] {
                if let Some(order) = annotation(&config_annotations(ingress), PREFIX, "group.order")
                    && !order
                        .trim()
                        .parse::<i64>()
                        .is_ok_and(|o| (-1000..=1000).contains(&o))
                {
                    problems.push(ConfigProblem {
                        path: format!("metadata.annotations[\"{PREFIX}group.order\"]"),
                        kind: ProblemKind::Rejected,
                        message: format!(
                            "the {which} Ingress's group.order {order:?} is not in -1000..1000"
                        ),
                    });
                }
            }
        }
        problems
    }

    fn route(&self, config: &GatewayConfig, request: &Request) -> Routed {
        for rule in &listener_rules(config).0 {
            if rule_matches(rule, request) {
                // A rule whose action could not be built answers 503 (or fails the build).
                return rule.action.clone().unwrap_or(Routed::NoRoute);
            }
        }
        Routed::NoRoute
    }

    fn probes(&self, config: &GatewayConfig) -> Vec<Request> {
        let mut extra = Vec::new();
        for rule in &listener_rules(config).0 {
            let mut probe = Request::get("/");
            for condition in &rule.conditions {
                let name = field(condition, "field")
                    .and_then(JsonValue::as_str)
                    .unwrap_or("");
                if name == "http-header"
                    && let Some(c) = field(condition, "httpHeaderConfig")
                    && let Some(header) = field(c, "httpHeaderName").and_then(JsonValue::as_str)
                    && let Some(value) = strings(field(c, "values")).first()
                {
                    probe
                        .headers
                        .insert(header.to_ascii_lowercase(), value.replace(['*', '?'], "x"));
                }
                if name == "query-string"
                    && let Some(pair) = field(condition, "queryStringConfig")
                        .and_then(|c| field(c, "values"))
                        .and_then(JsonValue::as_array)
                        .and_then(|a| a.first())
                {
                    let key = field(pair, "key")
                        .and_then(JsonValue::as_str)
                        .unwrap_or("q");
                    let value = field(pair, "value")
                        .and_then(JsonValue::as_str)
                        .unwrap_or("");
                    probe
                        .query
                        .insert(key.replace(['*', '?'], "x"), value.replace(['*', '?'], "x"));
                }
            }
            if !probe.headers.is_empty() || !probe.query.is_empty() {
                extra.push(probe);
            }
        }
        pair_probes(config, &extra)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ingress(name: &str, service: &str, port: &str, notes: &str) -> JsonValue {
        JsonValue::parse_go_interface(
            format!(
                r#"{{"metadata":{{"name":"{name}","namespace":"ns","annotations":{{{notes}}}}},"spec":{{"rules":[{{"host":"x.com","http":{{"paths":[
                {{"path":"/","pathType":"Prefix","backend":{{"service":{{"name":"{service}","port":{port}}}}}}}]}}}}]}}}}"#
            )
            .as_bytes(),
        )
        .unwrap()
    }

    const STABLE_ACTION: &str = r#""alb.ingress.kubernetes.io/group.name":"g","alb.ingress.kubernetes.io/actions.web":"{\"type\":\"forward\",\"forwardConfig\":{\"targetGroups\":[{\"serviceName\":\"web\",\"servicePort\":80}]}}""#;

    fn request() -> Request {
        let mut r = Request::get("/a");
        r.host = Some("x.com".into());
        r
    }

    fn share(config: &GatewayConfig, request: &Request) -> f64 {
        match AwsAlb.route(config, request) {
            Routed::To(d) => d.share_of_service("web-canary"),
            Routed::NoRoute => panic!("no route"),
        }
    }

    fn config(canary_notes: &str) -> GatewayConfig {
        GatewayConfig::Ingress {
            stable: ingress("web", "web", r#"{"name":"use-annotation"}"#, STABLE_ACTION).into(),
            canary: Some(ingress(
                "web-canary",
                "web-canary",
                r#"{"name":"use-annotation"}"#,
                canary_notes,
            )),
        }
    }

    const CANARY_SPLIT: &str = r#""alb.ingress.kubernetes.io/group.name":"g","alb.ingress.kubernetes.io/group.order":"-1",
        "alb.ingress.kubernetes.io/actions.web-canary":"{\"type\":\"forward\",\"forwardConfig\":{\"targetGroups\":[{\"serviceName\":\"web\",\"servicePort\":80,\"weight\":80},{\"serviceName\":\"web-canary\",\"servicePort\":80,\"weight\":20}]}}""#;

    #[test]
    fn the_canary_rule_needs_the_same_group_and_a_lower_order() {
        assert!((share(&config(CANARY_SPLIT), &request()) - 0.2).abs() < 1e-9);
        // Same order: "ns/web" sorts before "ns/web-canary", the stable rule wins.
        let tied = CANARY_SPLIT.replace(r#""alb.ingress.kubernetes.io/group.order":"-1","#, "");
        assert_eq!(share(&config(&tied), &request()), 0.0);
        // Another group: another load balancer.
        let apart = CANARY_SPLIT.replace(r#"group.name":"g""#, r#"group.name":"h""#);
        assert_eq!(share(&config(&apart), &request()), 0.0);
        assert!(
            AwsAlb
                .config_problems(&config(&apart))
                .iter()
                .any(|p| p.message.contains("another load balancer"))
        );
    }

    #[test]
    fn conditions_gate_the_canary_rule_and_misses_fall_through() {
        let notes = format!(
            r#"{CANARY_SPLIT},"alb.ingress.kubernetes.io/conditions.web-canary":"[{{\"field\":\"http-header\",\"httpHeaderConfig\":{{\"httpHeaderName\":\"X-Canary\",\"values\":[\"yes\"]}}}},{{\"Field\":\"query-string\",\"QueryStringConfig\":{{\"Values\":[{{\"key\":\"beta\",\"value\":\"1\"}}]}}}}]""#
        );
        let config = config(&notes);
        let mut r = request();
        r.headers.insert("x-canary", "YES");
        // Header alone: the ANDed query condition misses, the stable rule takes it.
        assert_eq!(share(&config, &r), 0.0);
        r.query.insert("beta", "1");
        assert!((share(&config, &r) - 0.2).abs() < 1e-9);
    }

    /// A `source-ip` condition never holds for a probe (no client address): reported rather
    /// than passed over in silence.
    #[test]
    fn source_ip_conditions_are_not_met_and_reported() {
        let notes = format!(
            r#"{CANARY_SPLIT},"alb.ingress.kubernetes.io/conditions.web-canary":"[{{\"field\":\"source-ip\",\"sourceIpConfig\":{{\"values\":[\"10.0.0.0/8\"]}}}}]""#
        );
        let config = config(&notes);
        assert_eq!(share(&config, &request()), 0.0);
        let problems = AwsAlb.config_problems(&config);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].kind, ProblemKind::NotEvaluated);
        assert!(problems[0].message.contains("source-ip"));
    }

    #[test]
    fn actions_need_a_use_annotation_port() {
        let stable = ingress(
            "web",
            "web",
            r#"{"number":80}"#,
            r#""alb.ingress.kubernetes.io/group.name":"g""#,
        );
        let canary = ingress("web-canary", "web-canary", r#"{"number":80}"#, CANARY_SPLIT);
        let config = GatewayConfig::Ingress {
            stable: stable.into(),
            canary: Some(canary),
        };
        // The action is ignored: the canary rule forwards everything to the canary service.
        assert_eq!(share(&config, &request()), 1.0);
        assert!(
            AwsAlb
                .config_problems(&config)
                .iter()
                .any(|p| p.message.contains("use-annotation"))
        );
    }

    #[test]
    fn globs_and_prefix_patterns() {
        assert!(glob("/api/*", "/api/v1", false));
        assert!(!glob("/api/*", "/api", false));
        assert!(glob("a?c*", "ABCdef", true));
        assert!(!glob("a?c", "ac", true));
    }
}
