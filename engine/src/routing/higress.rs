//! Higress canary annotations (`higress.io/canary*`, or the ingress-nginx names) and request
//! header control (`higress.io/request-header-control-*`); the shared reading MSE uses too.
//!
//! Sources (alibaba/higress 4e0d6914, read, not copied):
//! - `pkg/ingress/kube/annotations/parser.go`, `ParseStringASAP`: a key is read under
//!   `nginx.ingress.kubernetes.io/` first, then under `higress.io/`.
//! - `pkg/ingress/kube/annotations/canary.go`, `Parse`: once `canary-by-header-value` is set
//!   nothing after it is read (pattern, cookie, weight); once `-pattern` is set neither cookie
//!   nor weight; once `canary-by-cookie` is set not the weight.
//! - `annotations.go`, `CanaryKind`: a canary with `canary-by-header` or `canary-by-cookie` is
//!   a header canary, and a header canary never takes a weight (so `canary-weight` next to a
//!   header is ignored even without `-value`).
//! - `canary.go`, `ApplyByHeader`: the canary route sits before the stable one and matches the
//!   header with the RE2 regex `always|<value>` (so the value is a regex, and `always` also
//!   matches), or `.*<pattern>.*`, or exactly `always`; without a header, the `cookie` header
//!   with `^(.*?;\s*)?(<cookie>=always)(;.*)?$`. Envoy regexes match the whole value. A
//!   request that misses goes on to the stable route.
//! - `canary.go`, `ApplyByWeight`: the canary joins the stable route with weight
//!   `canary-weight` out of `canary-weight-total` (default 100).
//! - `header_control.go`: `request-header-control-add`/`-update` are "name value" lines,
//!   `-remove` a comma-separated list, read under `higress.io/` only, applied on the canary
//!   route to canary requests (Istio headers add/set/remove).

use std::collections::BTreeMap;

use super::ingress_rules::{
    CanaryDecision, canary_notes, header_lines, pair_probes, route_canary_pair,
};
use super::matching::{WholeValueRegex, re2_problem};
use super::{ConfigProblem, GatewayConfig, ProblemKind, Request, Routed, RoutingModel};
use crate::script::ScriptKind;

const NGINX: &str = "nginx.ingress.kubernetes.io/";

/// The Higress reading of canary annotations, under `own` (`higress.io/` or MSE's prefix)
/// after the ingress-nginx names.
pub struct HigressFamily {
    pub own: &'static str,
    /// MSE's `canary-by-query`/`-value` (MSE only).
    pub query: bool,
}

pub struct Higress;

pub const HIGRESS: HigressFamily = HigressFamily {
    own: "higress.io/",
    query: false,
};

/// A class's reading of the canary annotations (`own` names the class).
struct ReadRule {
    own: &'static str,
    kind: CanaryRule,
    /// The header whose value `always` sends a request to the canary by the class's own
    /// convention ([`HigressFamily::canary_by_convention`]), when there is one.
    always_header: Option<String>,
}

/// The canary rule the annotations configure.
enum CanaryRule {
    /// No `canary: "true"`.
    Disabled,
    /// `canary-by-header`: the header's value against `regex` (`always|<value>` or
    /// `.*<pattern>.*`), or without one exactly `always`.
    Header {
        name: String,
        regex: Option<WholeValueRegex>,
    },
    /// `canary-by-cookie`: the Cookie header against this regex.
    Cookie { regex: WholeValueRegex },
    /// MSE's `canary-by-query`.
    Query {
        name: String,
        expected: Option<String>,
    },
    /// A header value or pattern without `canary-by-header`: nothing goes to the canary.
    HeaderOnly,
    /// The canary's share.
    Weight(f64),
}

impl HigressFamily {
    /// `ParseStringASAP`: the nginx name first, then the class's own (non-empty values).
    pub fn read<'a>(&self, notes: &'a BTreeMap<String, String>, key: &str) -> Option<&'a str> {
        [NGINX, self.own]
            .iter()
            .find_map(|p| super::ingress_rules::annotation(notes, p, key))
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    fn enabled(&self, notes: &BTreeMap<String, String>) -> bool {
        // Go's strconv.ParseBool.
        matches!(
            self.read(notes, "canary"),
            Some("1" | "t" | "T" | "true" | "TRUE" | "True")
        )
    }

    /// The header (value regex) rule, the cookie rule, the query rule, or the weight: the
    /// first configured one decides, as `Parse` and `CanaryKind` read them. `notes` are a
    /// configuration's ([`super::ingress_rules::config_annotations`]): what they configure is
    /// kept for the configuration by their address.
    pub fn decide(
        &self,
        notes: &BTreeMap<String, String>,
        request: &Request,
    ) -> Option<CanaryDecision> {
        let rule = self.read_rule(notes);
        let hit = |yes: bool| {
            Some(if yes {
                CanaryDecision::Canary
            } else {
                CanaryDecision::Stable
            })
        };
        match &rule.kind {
            CanaryRule::Disabled => None,
            CanaryRule::Header { name, regex: None } => {
                hit(super::header_value(request, name).is_some_and(|v| v == "always"))
            }
            CanaryRule::Header {
                name,
                regex: Some(regex),
            } => hit(super::header_value(request, name).is_some_and(|v| regex.is_match(v))),
            CanaryRule::Cookie { regex } => {
                if request.cookies.is_empty() {
                    return hit(false);
                }
                let header: Vec<String> = request
                    .cookies
                    .iter()
                    .map(|(n, v)| format!("{n}={v}"))
                    .collect();
                hit(regex.is_match(&header.join("; ")))
            }
            CanaryRule::Query { name, expected } => {
                let value = request.query.get(name);
                hit(match expected {
                    Some(e) => value.is_some_and(|v| v == e),
                    None => value.is_some_and(|v| v == "always"),
                })
            }
            // `Parse` returned after the value/pattern: no weight was read.
            CanaryRule::HeaderOnly => Some(CanaryDecision::Stable),
            CanaryRule::Weight(share) => Some(CanaryDecision::Share(*share)),
        }
    }

    /// [`Self::canary_rule`] of a configuration's annotations, read once per configuration
    /// (see `super::memo`), not per probe.
    fn read_rule(&self, notes: &BTreeMap<String, String>) -> std::rc::Rc<ReadRule> {
        let rule = super::memo::derived(notes, || self.canary_rule(notes));
        if rule.own == self.own {
            rule
        } else {
            std::rc::Rc::new(self.canary_rule(notes))
        }
    }

    /// What the annotations make of a request, as [`Self::decide`] and
    /// [`Self::canary_by_convention`] apply it.
    fn canary_rule(&self, notes: &BTreeMap<String, String>) -> ReadRule {
        let kind = self.canary_rule_kind(notes);
        ReadRule {
            own: self.own,
            kind,
            always_header: self.always_header(notes).map(str::to_owned),
        }
    }

    fn canary_rule_kind(&self, notes: &BTreeMap<String, String>) -> CanaryRule {
        if !self.enabled(notes) {
            return CanaryRule::Disabled;
        }
        if let Some(name) = self.read(notes, "canary-by-header") {
            let regex = if let Some(v) = self.read(notes, "canary-by-header-value") {
                Some(format!("always|{v}"))
            } else {
                self.read(notes, "canary-by-header-pattern")
                    .map(|p| format!(".*{p}.*"))
            }
            .map(WholeValueRegex::new);
            return CanaryRule::Header {
                name: name.to_owned(),
                regex,
            };
        }
        let header_only = self.read(notes, "canary-by-header-value").is_some()
            || self.read(notes, "canary-by-header-pattern").is_some();
        if !header_only && let Some(cookie) = self.read(notes, "canary-by-cookie") {
            return CanaryRule::Cookie {
                regex: WholeValueRegex::new(format!("^(.*?;\\s*)?({cookie}=always)(;.*)?$")),
            };
        }
        if self.query
            && let Some(name) = self.read(notes, "canary-by-query")
        {
            // MSE's query canary: the docs give an exact value; assumed to sit after the
            // cookie rule and, like the header rule, to take no weight.
            return CanaryRule::Query {
                name: name.to_owned(),
                expected: self.read(notes, "canary-by-query-value").map(str::to_owned),
            };
        }
        if header_only {
            return CanaryRule::HeaderOnly;
        }
        let weight = self
            .read(notes, "canary-weight")
            .and_then(|w| w.trim().parse::<i64>().ok())
            .unwrap_or(0) as f64;
        let total = self
            .read(notes, "canary-weight-total")
            .and_then(|w| w.trim().parse::<i64>().ok())
            .filter(|t| *t > 0)
            .unwrap_or(100) as f64;
        CanaryRule::Weight((weight / total).clamp(0.0, 1.0))
    }

    /// The canary requests' header changes from `<own>request-header-control-*`.
    pub fn header_changes(
        &self,
        notes: &BTreeMap<String, String>,
    ) -> BTreeMap<String, Option<String>> {
        let mut changes = BTreeMap::new();
        for key in [
            "request-header-control-add",
            "request-header-control-update",
        ] {
            if let Some(text) = notes.get(&format!("{}{key}", self.own)) {
                for (name, value) in header_lines(text) {
                    changes.insert(name, Some(value));
                }
            }
        }
        if let Some(text) = notes.get(&format!("{}request-header-control-remove", self.own)) {
            for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                changes.insert(name.to_ascii_lowercase(), None);
            }
        }
        changes
    }

    /// `ApplyByHeader`: with `canary-by-header`, the canary route matches the header with the
    /// regex `always|<value>` (or exactly `always` without a value or pattern), so a request
    /// whose canary header is `always` reaches the canary whatever value the script wrote.
    pub fn canary_by_convention(&self, config: &GatewayConfig, request: &Request) -> bool {
        // Only a configuration's own annotations are read through the memo (keyed by their
        // address); without a canary Ingress there are none, and no canary.
        let GatewayConfig::Ingress {
            canary: Some(canary),
            ..
        } = config
        else {
            return false;
        };
        self.read_rule(&super::ingress_rules::config_annotations(canary))
            .always_header
            .as_ref()
            .is_some_and(|name| super::header_value(request, name) == Some("always"))
    }

    /// The header of [`Self::canary_by_convention`]: `canary-by-header` of an enabled canary,
    /// unless a pattern alone (no value) says what the header must hold.
    fn always_header<'a>(&self, notes: &'a BTreeMap<String, String>) -> Option<&'a str> {
        if !self.enabled(notes) {
            return None;
        }
        let name = self.read(notes, "canary-by-header")?;
        let pattern_only = self.read(notes, "canary-by-header-value").is_none()
            && self.read(notes, "canary-by-header-pattern").is_some();
        (!pattern_only).then_some(name)
    }

    pub fn problems(&self, config: &GatewayConfig) -> Vec<ConfigProblem> {
        let notes = canary_notes(config);
        let mut problems = Vec::new();
        let mut problem = |key: &str, kind: ProblemKind, message: String| {
            problems.push(ConfigProblem {
                path: format!("metadata.annotations[\"{key}\"]"),
                kind,
                message,
            })
        };
        let key = |k: &str| {
            [NGINX, self.own]
                .iter()
                .map(|p| format!("{p}{k}"))
                .find(|full| notes.contains_key(full))
                .unwrap_or_else(|| format!("{}{k}", self.own))
        };
        for k in [
            "canary",
            "canary-by-header",
            "canary-by-header-value",
            "canary-by-header-pattern",
            "canary-by-cookie",
            "canary-weight",
        ] {
            let (a, b) = (
                notes.get(&format!("{NGINX}{k}")),
                notes.get(&format!("{}{k}", self.own)),
            );
            if let (Some(a), Some(b)) = (a, b)
                && a != b
            {
                problem(
                    &format!("{}{k}", self.own),
                    ProblemKind::Ignored,
                    format!("{k} is also set under {NGINX}, whose value {a:?} wins over {b:?}"),
                );
            }
        }
        let header = self.read(&notes, "canary-by-header");
        let value = self.read(&notes, "canary-by-header-value");
        let pattern = self.read(&notes, "canary-by-header-pattern");
        let cookie = self.read(&notes, "canary-by-cookie");
        let matched_rule =
            header.is_some() || value.is_some() || pattern.is_some() || cookie.is_some();
        if matched_rule && self.read(&notes, "canary-weight").is_some() {
            problem(
                &key("canary-weight"),
                ProblemKind::Ignored,
                "canary-weight is ignored: a header or cookie canary takes no weight, so \
                 requests without the header or cookie all go to the stable service"
                    .into(),
            );
        }
        if value.is_some() && pattern.is_some() {
            problem(
                &key("canary-by-header-pattern"),
                ProblemKind::Ignored,
                "canary-by-header-pattern is ignored when canary-by-header-value is set".into(),
            );
        }
        if (value.is_some() || pattern.is_some()) && header.is_none() {
            problem(
                &key("canary-by-header-value"),
                ProblemKind::Ignored,
                "a header value or pattern without canary-by-header matches no request".into(),
            );
        }
        if cookie.is_some() && (header.is_some() || value.is_some() || pattern.is_some()) {
            problem(
                &key("canary-by-cookie"),
                ProblemKind::Ignored,
                "canary-by-cookie is ignored next to a header canary".into(),
            );
        }
        let regex = value
            .map(|v| format!("always|{v}"))
            .or(pattern.map(|p| format!(".*{p}.*")));
        if let Some(regex) = regex
            && let Some(reason) = re2_problem(&regex)
        {
            problem(
                &key(if value.is_some() {
                    "canary-by-header-value"
                } else {
                    "canary-by-header-pattern"
                }),
                ProblemKind::Rejected,
                format!("Envoy rejects the header match: {reason}"),
            );
        }
        for k in [
            "request-header-control-add",
            "request-header-control-update",
        ] {
            let full = format!("{}{k}", self.own);
            if let Some(text) = notes.get(&full) {
                let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
                let parsed = header_lines(text);
                if parsed.len() != lines.len() {
                    problem(
                        &full,
                        ProblemKind::Ignored,
                        "a line without \"name value\" is skipped".into(),
                    );
                }
                let mut seen = std::collections::BTreeSet::new();
                for (name, _) in &parsed {
                    if !seen.insert(name.clone()) {
                        problem(
                            &full,
                            ProblemKind::Ignored,
                            format!("header {name} is listed twice: only the last line applies"),
                        );
                    }
                }
            }
        }
        problems
    }

    pub fn probes(&self, config: &GatewayConfig) -> Vec<Request> {
        let notes = canary_notes(config);
        let mut extra = Vec::new();
        for prefix in [NGINX, self.own] {
            extra.extend(super::nginx::header_cookie_probes(&notes, prefix));
        }
        if self.query
            && let Some(name) = self.read(&notes, "canary-by-query")
        {
            for value in [self.read(&notes, "canary-by-query-value"), Some("other")]
                .into_iter()
                .flatten()
            {
                let mut probe = Request::get("/");
                probe.query.insert(name.to_owned(), value.to_owned());
                extra.push(probe);
            }
        }
        pair_probes(config, &extra)
    }

    pub fn route(&self, config: &GatewayConfig, request: &Request) -> Routed {
        route_canary_pair(
            config,
            request,
            |notes, request| self.decide(notes, request),
            |notes| self.header_changes(notes),
        )
    }
}

impl RoutingModel for Higress {
    fn name(&self) -> &'static str {
        "Higress canary annotations (higress 2.x)"
    }

    fn applies_to(&self, kind: &ScriptKind) -> bool {
        matches!(kind, ScriptKind::Ingress { class } if class == "higress")
    }

    fn config_problems(&self, config: &GatewayConfig) -> Vec<ConfigProblem> {
        HIGRESS.problems(config)
    }

    fn route(&self, config: &GatewayConfig, request: &Request) -> Routed {
        HIGRESS.route(config, request)
    }

    fn probes(&self, config: &GatewayConfig) -> Vec<Request> {
        HIGRESS.probes(config)
    }

    // `canary.go` reads only the canary Ingress's annotations (module comment).
    fn canary_decision_is_path_independent(&self) -> bool {
        true
    }

    fn canary_by_convention(&self, config: &GatewayConfig, request: &Request) -> bool {
        HIGRESS.canary_by_convention(config, request)
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
pub(super) mod tests {
    use super::*;
    use crate::value::JsonValue;

    /// A stable Ingress `web` on x.com `/` and its canary with `notes` (JSON members).
    pub fn pair(notes: &str) -> GatewayConfig {
        let ingress = |name: &str, service: &str, notes: &str| {
            JsonValue::parse_go_interface(
                format!(
                    r#"{{"metadata":{{"name":"{name}","annotations":{{{notes}}}}},"spec":{{"rules":[{{"host":"x.com","http":{{"paths":[
                    {{"path":"/","pathType":"Prefix","backend":{{"service":{{"name":"{service}","port":{{"number":80}}}}}}}}]}}}}]}}}}"#
                )
                .as_bytes(),
            )
            .unwrap()
        };
        GatewayConfig::Ingress {
            stable: ingress("web", "web", "").into(),
            canary: Some(ingress("web-canary", "web-canary", notes)),
        }
    }

    pub fn request() -> Request {
        let mut r = Request::get("/");
        r.host = Some("x.com".into());
        r
    }

    fn share(config: &GatewayConfig, request: &Request) -> f64 {
        match Higress.route(config, request) {
            Routed::To(d) => d.share_of_service("web-canary"),
            Routed::NoRoute => panic!("no route"),
        }
    }

    #[test]
    fn weight_is_ignored_once_a_header_is_set() {
        let config = pair(
            r#""higress.io/canary":"true","higress.io/canary-by-header":"x-canary",
            "higress.io/canary-by-header-value":"yes","higress.io/canary-weight":"50""#,
        );
        assert_eq!(share(&config, &request()), 0.0);
        assert!(
            HIGRESS
                .problems(&config)
                .iter()
                .any(|p| p.message.contains("canary-weight is ignored"))
        );
        let weighted = pair(r#""higress.io/canary":"true","higress.io/canary-weight":"50""#);
        assert_eq!(share(&weighted, &request()), 0.5);
    }

    #[test]
    fn header_value_is_a_regex_that_also_accepts_always() {
        let config = pair(
            r#""higress.io/canary":"true","higress.io/canary-by-header":"x-user","higress.io/canary-by-header-value":"a.b""#,
        );
        for (value, expected) in [("a.b", 1.0), ("axb", 1.0), ("always", 1.0), ("a.bc", 0.0)] {
            let mut r = request();
            r.headers.insert("x-user", value);
            assert_eq!(share(&config, &r), expected, "{value}");
        }
    }

    #[test]
    fn nginx_names_win_over_higress_names() {
        let config = pair(
            r#""nginx.ingress.kubernetes.io/canary":"true","nginx.ingress.kubernetes.io/canary-weight":"0",
            "higress.io/canary-weight":"100""#,
        );
        assert_eq!(share(&config, &request()), 0.0);
        assert_eq!(HIGRESS.problems(&config).len(), 1);
    }

    #[test]
    fn cookie_rule_matches_name_equals_always_in_the_cookie_header() {
        let config = pair(r#""higress.io/canary":"true","higress.io/canary-by-cookie":"beta""#);
        let mut r = request();
        r.cookies.insert("a", "1");
        r.cookies.insert("beta", "always");
        assert_eq!(share(&config, &r), 1.0);
        r.cookies.insert("beta", "never");
        assert_eq!(share(&config, &r), 0.0);
    }

    #[test]
    fn header_control_reaches_canary_requests_and_duplicates_are_reported() {
        let config = pair(
            r#""higress.io/canary":"true","higress.io/canary-weight":"100",
            "higress.io/request-header-control-update":"x-release canary\nx-release again","higress.io/request-header-control-remove":"x-debug""#,
        );
        let Routed::To(d) = Higress.route(&config, &request()) else {
            panic!()
        };
        let changes = d.header_changes.values().next().unwrap();
        assert_eq!(changes.get("x-release"), Some(&Some("again".to_owned())));
        assert_eq!(changes.get("x-debug"), Some(&None));
        assert!(
            HIGRESS
                .problems(&config)
                .iter()
                .any(|p| p.message.contains("listed twice"))
        );
    }

    #[test]
    fn an_invalid_regex_is_rejected() {
        let config = pair(
            r#""higress.io/canary":"true","higress.io/canary-by-header":"x","higress.io/canary-by-header-pattern":"(?=a)""#,
        );
        assert!(
            HIGRESS
                .problems(&config)
                .iter()
                .any(|p| p.kind == ProblemKind::Rejected)
        );
    }
}
