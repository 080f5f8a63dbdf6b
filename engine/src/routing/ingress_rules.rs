//! Kubernetes Ingress rule matching the ingress-class models share: which path of an Ingress
//! (host, path, pathType) a request lands on, and the canary-annotation routing of the
//! nginx-compatible classes (one stable path, one canary path, a per-class canary decision).
//!
//! Source: the Kubernetes Ingress API docs (kubernetes.io/docs/concepts/services-networking/
//! ingress, "Path types", "Examples", "Multiple matches", "Hostname wildcards"):
//! - `Exact` matches the URL path exactly, case-sensitively.
//! - `Prefix` matches element-wise on the path split by `/`: `/foo/bar` matches `/foo/bar` and
//!   `/foo/bar/baz` but not `/foo/barbaz`; a trailing slash is ignored; `/` matches every path.
//! - `ImplementationSpecific`: up to the class. The classes modelled here (ingress-nginx without
//!   `use-regex`, Higress, MSE, Aliyun ALB) treat it as a prefix; it is modelled as `Prefix`
//!   (element-wise), although ingress-nginx writes a plain nginx string-prefix location for it
//!   (`/foo` also takes `/foobar`): a known approximation.
//! - Several paths matching: the longest matching path wins; on a tie `Exact` beats `Prefix`.
//! - A rule without `host` matches every host; `*.foo.com` matches exactly one DNS label in
//!   front of `foo.com`. Precise hosts are preferred over wildcards, wildcards over no host.

use std::cell::RefCell;
use std::collections::BTreeMap;

use super::{Backend, Distribution, GatewayConfig, Request, Routed, SmolStr};
use crate::value::JsonValue;

/// One `spec.rules[].http.paths[]` entry with its rule's host.
#[derive(Debug, Clone, PartialEq)]
pub struct IngressPath {
    pub host: Option<SmolStr>,
    pub path: SmolStr,
    /// `Exact`, `Prefix` or `ImplementationSpecific` (a missing pathType reads as the last).
    pub path_type: SmolStr,
    pub backend: Backend,
    /// `backend.service.port.name`, when the port is named (AWS's `use-annotation`).
    pub port_name: Option<SmolStr>,
    /// Where in the Ingress (`spec.rules[0].http.paths[1]`).
    pub location: String,
}

/// [`ingress_paths`] of an Ingress that is part of a configuration, once per step (see
/// [`super::memo`]): only for Ingresses the configuration owns, never a temporary.
pub fn config_ingress_paths(ingress: &JsonValue) -> std::rc::Rc<Vec<IngressPath>> {
    super::memo::derived(ingress, || ingress_paths(ingress))
}

/// Every path of an Ingress object, in document order.
pub fn ingress_paths(ingress: &JsonValue) -> Vec<IngressPath> {
    let mut paths = Vec::new();
    let rules = ingress
        .at(&["spec", "rules"])
        .and_then(JsonValue::as_array)
        .unwrap_or_default();
    for (r, rule) in rules.iter().enumerate() {
        let host = rule
            .get("host")
            .and_then(JsonValue::as_str)
            .filter(|h| !h.is_empty())
            .map(SmolStr::from);
        let entries = rule
            .at(&["http", "paths"])
            .and_then(JsonValue::as_array)
            .unwrap_or_default();
        for (p, entry) in entries.iter().enumerate() {
            let service = entry.at(&["backend", "service"]);
            let name = service
                .and_then(|s| s.get("name"))
                .and_then(JsonValue::as_str)
                .unwrap_or_default();
            let port_name = service
                .and_then(|s| s.at(&["port", "name"]))
                .and_then(JsonValue::as_str)
                .map(SmolStr::from);
            let port_number = service
                .and_then(|s| s.at(&["port", "number"]))
                .and_then(JsonValue::as_f64)
                .map(|n| smol_str::format_smolstr!("{n}"));
            paths.push(IngressPath {
                host: host.clone(),
                path: entry
                    .get("path")
                    .and_then(JsonValue::as_str)
                    .unwrap_or("/")
                    .into(),
                path_type: entry
                    .get("pathType")
                    .and_then(JsonValue::as_str)
                    .unwrap_or("ImplementationSpecific")
                    .into(),
                backend: Backend {
                    service: name.into(),
                    subset: None,
                    port: port_name.clone().or(port_number),
                },
                port_name,
                location: format!("spec.rules[{r}].http.paths[{p}]"),
            });
        }
    }
    paths
}

/// Whether `host` (a rule's host, `*.` wildcards allowed) matches the request's host.
pub fn host_matches(rule_host: Option<&str>, request_host: Option<&str>) -> bool {
    match (rule_host, request_host) {
        (None, _) => true,
        (Some(_), None) => false,
        // Compared without regard to ASCII case, without copying either name (this runs for
        // every path of every probe).
        (Some(rule), Some(host)) => match rule.strip_prefix("*.") {
            Some(suffix) => host
                .len()
                .checked_sub(suffix.len())
                .filter(|&at| host.is_char_boundary(at))
                .map(|at| host.split_at(at))
                .filter(|(_, tail)| tail.eq_ignore_ascii_case(suffix))
                .and_then(|(head, _)| head.strip_suffix('.'))
                .is_some_and(|label| !label.is_empty() && !label.contains('.')),
            None => host.eq_ignore_ascii_case(rule),
        },
    }
}

/// Whether an Ingress path of `path_type` matches `request_path` (see the module comment).
pub fn path_matches(path_type: &str, path: &str, request_path: &str) -> bool {
    if path_type == "Exact" {
        return path == request_path;
    }
    // Element by element, without collecting the elements (this runs for every path of
    // every probe).
    fn elements(p: &str) -> impl Iterator<Item = &str> {
        p.split('/').filter(|e| !e.is_empty())
    }
    let mut request = elements(request_path);
    elements(path).all(|element| request.next() == Some(element))
}

/// How specific a host is: a precise host 2, a wildcard 1, none 0.
fn host_rank(host: Option<&str>) -> u8 {
    match host {
        None => 0,
        Some(h) if h.starts_with("*.") => 1,
        Some(_) => 2,
    }
}

/// The path `request` lands on among `paths`: the most specific matching host, then the
/// longest matching path, `Exact` before `Prefix` on equal length.
pub fn matching_path<'p>(paths: &'p [IngressPath], request: &Request) -> Option<&'p IngressPath> {
    matching_index(paths, request).map(|at| &paths[at])
}

/// Where [`matching_path`]'s path is in `paths`.
fn matching_index(paths: &[IngressPath], request: &Request) -> Option<usize> {
    paths
        .iter()
        .enumerate()
        .filter(|(_, p)| host_matches(p.host.as_deref(), request.host.as_deref()))
        .filter(|(_, p)| path_matches(&p.path_type, &p.path, &request.path))
        .max_by_key(|(_, p)| {
            (
                host_rank(p.host.as_deref()),
                p.path.trim_end_matches('/').len(),
                p.path_type == "Exact",
            )
        })
        .map(|(at, _)| at)
}

/// Where the canary Ingress's path for the same host, path and pathType as `stable` is in
/// `canary`.
fn twin(canary: &[IngressPath], stable: &IngressPath) -> Option<usize> {
    canary.iter().position(|c| {
        c.host == stable.host && c.path == stable.path && c.path_type == stable.path_type
    })
}

/// An Ingress's annotations (strings only: Kubernetes annotations are strings).
pub fn annotations(ingress: &JsonValue) -> BTreeMap<String, String> {
    ingress
        .at(&["metadata", "annotations"])
        .and_then(JsonValue::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
        .collect()
}

/// The annotation `<prefix><key>` (as `notes.get(&format!("{prefix}{key}"))`, without building
/// the name: models read several annotations for every probe).
pub fn annotation<'a>(
    notes: &'a BTreeMap<String, String>,
    prefix: &str,
    key: &str,
) -> Option<&'a String> {
    annotation_named(notes, &[prefix, key])
}

/// The annotation whose name is `parts` written one after another, found without writing it.
pub fn annotation_named<'a>(
    notes: &'a BTreeMap<String, String>,
    parts: &[&str],
) -> Option<&'a String> {
    let length: usize = parts.iter().map(|part| part.len()).sum();
    notes
        .iter()
        .find(|(name, _)| {
            let mut rest = name.as_str();
            name.len() == length
                && parts.iter().all(|part| match rest.strip_prefix(part) {
                    Some(after) => {
                        rest = after;
                        true
                    }
                    None => false,
                })
        })
        .map(|(_, value)| value)
}

/// [`annotations`] of an Ingress that is part of a configuration, once per step (see
/// [`super::memo`]): only for Ingresses the configuration owns, never a temporary.
pub fn config_annotations(ingress: &JsonValue) -> std::rc::Rc<BTreeMap<String, String>> {
    super::memo::derived(ingress, || annotations(ingress))
}

/// The canary Ingress's annotations (empty without a canary Ingress), read once per step for
/// the configuration (see [`config_annotations`]).
pub fn canary_notes(config: &GatewayConfig) -> std::rc::Rc<BTreeMap<String, String>> {
    match config {
        GatewayConfig::Ingress {
            canary: Some(canary),
            ..
        } => config_annotations(canary),
        _ => std::rc::Rc::default(),
    }
}

/// What a canary-annotation class decides for one request on a path both Ingresses serve.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CanaryDecision {
    Canary,
    Stable,
    /// The canary's share in `0..=1`.
    Share(f64),
}

/// Routing of the classes that merge a canary Ingress into the stable one's location
/// (ingress-nginx, Higress, MSE, Aliyun ALB): the stable Ingress picks the path; when the
/// canary Ingress serves the same host and path, `decide` (reading the canary Ingress's
/// annotations) splits the request; header changes apply to the canary backend.
pub fn route_canary_pair(
    config: &GatewayConfig,
    request: &Request,
    decide: impl Fn(&BTreeMap<String, String>, &Request) -> Option<CanaryDecision>,
    header_changes: impl Fn(&BTreeMap<String, String>) -> BTreeMap<String, Option<String>>,
) -> Routed {
    let table = super::memo::derived(config, || PairTable::of(config));
    let Some(at) = matching_index(&table.stable_paths, request) else {
        return Routed::NoRoute;
    };
    let on_path = &table.on_path[at];
    let stable_only = || on_path.stable_only.clone();
    let (Some(canary), Some(twin)) = (&table.canary, table.twins[at]) else {
        return stable_only();
    };
    // `None`: the Ingress is not a canary (no `canary: "true"`); both Ingresses then claim
    // the same path and the models treat the stable one as the one served.
    let Some(decision) = decide(&canary.notes, request) else {
        return stable_only();
    };
    let share = match decision {
        CanaryDecision::Canary => 1.0,
        CanaryDecision::Stable => 0.0,
        CanaryDecision::Share(s) => s.clamp(0.0, 1.0),
    };
    let (stable_path, canary_path) = (&table.stable_paths[at], &canary.paths[twin]);
    // How a split on this pair is named, once per stable path and step.
    let split = table.splits[at].get_or_init(|| SplitName {
        via: smol_str::format_smolstr!(
            "{} and the canary Ingress {}'s annotations",
            on_path.via,
            canary.name
        ),
        routed: RefCell::new(Vec::new()),
    });
    // The pair's decisions are few (the canary alone, the stable alone, the weight): each is
    // made once and handed out shared, as the other models hand out a route's.
    let key = share.to_bits();
    if let Some((_, routed)) = split.routed.borrow().iter().find(|(held, _)| *held == key) {
        return routed.clone();
    }
    let routed = split_routed(
        stable_path,
        canary_path,
        share,
        &canary.notes,
        header_changes,
        split.via.clone(),
    );
    let mut kept = split.routed.borrow_mut();
    if kept.len() < SPLITS_KEPT {
        kept.push((key, routed.clone()));
    }
    routed
}

/// What routing reads of a configuration's Ingress pair, once per configuration (see
/// `super::memo`): a request then costs one lookup of the table and a walk of the stable
/// paths, not a lookup per part.
struct PairTable {
    stable_paths: std::rc::Rc<Vec<IngressPath>>,
    /// Per stable path, what it gives alone and how it is named: the stable Ingress is shared
    /// by every configuration of a case, and so is this (made once per path, by its address).
    on_path: Vec<std::rc::Rc<StablePath>>,
    /// Per stable path, its twin's index in the canary Ingress's paths ([`twin`]).
    twins: Vec<Option<usize>>,
    /// Per stable path, how a split on it and its twin is named, when a request needs it.
    splits: Vec<std::cell::OnceCell<SplitName>>,
    canary: Option<CanaryPart>,
}

/// The canary Ingress as [`PairTable`] reads it.
struct CanaryPart {
    paths: std::rc::Rc<Vec<IngressPath>>,
    notes: std::rc::Rc<BTreeMap<String, String>>,
    name: String,
}

impl PairTable {
    fn of(config: &GatewayConfig) -> Self {
        let (stable, canary) = match config {
            GatewayConfig::Ingress { stable, canary } => (&**stable, canary.as_ref()),
            GatewayConfig::Resource(object) => (object, None),
        };
        let stable_paths = config_ingress_paths(stable);
        let on_path = stable_paths
            .iter()
            .map(|path| super::memo::derived(path, || StablePath::of(stable, path)))
            .collect();
        let canary = canary.map(|canary| CanaryPart {
            paths: config_ingress_paths(canary),
            notes: config_annotations(canary),
            name: ingress_name(canary).to_owned(),
        });
        let twins = stable_paths
            .iter()
            .map(|path| twin(&canary.as_ref()?.paths, path))
            .collect();
        PairTable {
            splits: std::iter::repeat_with(std::cell::OnceCell::new)
                .take(stable_paths.len())
                .collect(),
            stable_paths,
            on_path,
            twins,
            canary,
        }
    }
}

/// At most this many decisions are kept per pair of paths (see [`SplitName::routed`]).
const SPLITS_KEPT: usize = 16;

/// Where a request on `stable_path`, whose twin on the canary Ingress (annotated `notes`) is
/// `canary_path`, goes when the canary takes `share` of it, named `via`.
fn split_routed(
    stable_path: &IngressPath,
    canary_path: &IngressPath,
    share: f64,
    notes: &BTreeMap<String, String>,
    header_changes: impl Fn(&BTreeMap<String, String>) -> BTreeMap<String, Option<String>>,
    via: SmolStr,
) -> Routed {
    let stable_backend = &stable_path.backend;
    let canary_backend = &canary_path.backend;
    let mut distribution = Distribution::from_weights(&[
        (stable_backend.clone(), 1.0 - share),
        (canary_backend.clone(), share),
    ])
    .unwrap_or_else(|| Distribution::single(stable_backend.clone()));
    if share > 0.0 {
        // Read from the annotations once per configuration.
        let changes = super::memo::derived(notes, || CanaryHeaderChanges(header_changes(notes)));
        if !changes.0.is_empty() {
            distribution
                .header_changes
                .insert(canary_backend.clone(), changes.0.clone());
        }
    }
    Routed::to(distribution).via(via)
}

/// What a stable path gives a request alone, and how the path is named.
struct StablePath {
    stable_only: Routed,
    via: SmolStr,
}

impl StablePath {
    /// For `path` of the Ingress `stable`. It must not depend on the canary Ingress (which is
    /// the step's): it is shared by the case's configurations.
    fn of(stable: &JsonValue, path: &IngressPath) -> Self {
        let via = if config_annotations(stable)
            .contains_key(super::canary_ingress::REPRESENTATIVE_RULE)
        {
            smol_str::format_smolstr!("any path of Ingress {}", ingress_name(stable))
        } else {
            smol_str::format_smolstr!("Ingress {} {}", ingress_name(stable), path.location)
        };
        StablePath {
            stable_only: Routed::to(Distribution::single(path.backend.clone())).via(via.clone()),
            via,
        }
    }
}

/// How a split on a stable path and its twin is named.
struct SplitName {
    via: SmolStr,
    /// Where the requests split on this pair went, by the canary's share (its bits): the
    /// same share gives the same distribution (the backends and the canary configuration's
    /// header changes are the pair's).
    routed: RefCell<Vec<(u64, Routed)>>,
}

/// `metadata.name` of an Ingress, `(unnamed)` without one.
pub(super) fn ingress_name(ingress: &JsonValue) -> &str {
    ingress
        .at(&["metadata", "name"])
        .and_then(JsonValue::as_str)
        .unwrap_or("(unnamed)")
}

/// The canary requests' header changes a class reads from the canary Ingress's annotations.
struct CanaryHeaderChanges(BTreeMap<String, Option<String>>);

/// Probes for an Ingress pair: per stable path, a request on it (its host, its path and one
/// element below a prefix) and one just beside it, plus whatever `extra` adds to each.
pub fn pair_probes(config: &GatewayConfig, extra: &[Request]) -> Vec<Request> {
    let ingresses: Vec<&JsonValue> = match config {
        GatewayConfig::Ingress { stable, canary } => {
            std::iter::once(&**stable).chain(canary.as_ref()).collect()
        }
        GatewayConfig::Resource(object) => vec![object],
    };
    // The probes depend on a path's host, path and type only: the canary Ingress repeats the
    // stable one's (Kruise copies them), so each is probed once.
    let read: Vec<std::rc::Rc<Vec<IngressPath>>> =
        ingresses.into_iter().map(config_ingress_paths).collect();
    let mut paths: Vec<&IngressPath> = read.iter().flat_map(|paths| paths.iter()).collect();
    fn key(p: &IngressPath) -> (Option<&str>, &str, &str) {
        (p.host.as_deref(), &p.path, &p.path_type)
    }
    paths.sort_by(|a, b| key(a).cmp(&key(b)));
    paths.dedup_by(|a, b| key(a) == key(b));
    let mut probes = Vec::new();
    for path in paths {
        let host = path
            .host
            .as_ref()
            .map(|h| SmolStr::from(h.replace("*.", "x.")));
        let base = path.path.trim_end_matches('/');
        let mut shapes = vec![path.path.to_string(), format!("{base}x")];
        if path.path_type != "Exact" {
            shapes.push(format!("{base}/x"));
        }
        for shape in shapes {
            let shape = if shape.is_empty() {
                "/".to_owned()
            } else {
                shape
            };
            let mut probe = Request::get(&shape);
            probe.host = host.clone();
            // `probe` has no headers, query or cookies: each variant's are taken whole.
            for variant in extra {
                probes.push(Request {
                    headers: variant.headers.clone(),
                    query: variant.query.clone(),
                    cookies: variant.cookies.clone(),
                    ..probe.clone()
                });
            }
            probes.push(probe);
        }
    }
    probes.sort();
    probes.dedup();
    probes
}

/// "name value" lines (Higress/MSE header control): the value is the rest of the line after
/// the first run of whitespace; lines without a value are skipped.
pub fn header_lines(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|line| {
            let line = line.trim();
            let (name, value) = line.split_once(char::is_whitespace)?;
            Some((name.to_ascii_lowercase(), value.trim().to_owned()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_annotation_is_found_by_its_name_in_parts() {
        let notes: BTreeMap<String, String> = [
            ("alb.ingress.kubernetes.io/conditions.web", "a"),
            ("alb.ingress.kubernetes.io/conditions.web-canary", "b"),
            ("alb.ingress.kubernetes.io/conditionsXweb", "c"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let prefix = "alb.ingress.kubernetes.io/";
        let named = |parts: &[&str]| annotation_named(&notes, parts).map(String::as_str);
        assert_eq!(named(&[prefix, "conditions", ".", "web"]), Some("a"));
        assert_eq!(named(&[prefix, "conditions", ".", "web-canary"]), Some("b"));
        assert_eq!(named(&[prefix, "conditions", ".", "we"]), None);
        assert_eq!(named(&[prefix, "conditions", ".", "canary"]), None);
        assert_eq!(
            annotation(&notes, prefix, "conditionsXweb").map(String::as_str),
            Some("c")
        );
    }

    #[test]
    fn prefix_matches_element_wise_and_ignores_a_trailing_slash() {
        assert!(path_matches("Prefix", "/foo/bar", "/foo/bar/baz"));
        assert!(path_matches("Prefix", "/foo/bar/", "/foo/bar"));
        assert!(!path_matches("Prefix", "/foo/bar", "/foo/barbaz"));
        assert!(path_matches("Prefix", "/", "/anything"));
        assert!(!path_matches("Exact", "/foo", "/foo/"));
    }

    #[test]
    fn longest_match_wins_and_exact_beats_prefix_on_a_tie() {
        let ingress = JsonValue::parse_go_interface(
            br#"{"spec":{"rules":[{"http":{"paths":[
              {"path":"/","pathType":"Prefix","backend":{"service":{"name":"root"}}},
              {"path":"/api","pathType":"Prefix","backend":{"service":{"name":"api"}}},
              {"path":"/api","pathType":"Exact","backend":{"service":{"name":"exact"}}}]}}]}}"#,
        )
        .unwrap();
        let paths = ingress_paths(&ingress);
        let service =
            |p: &str| matching_path(&paths, &Request::get(p)).map(|p| p.backend.service.clone());
        assert_eq!(service("/api/v1").as_deref(), Some("api"));
        assert_eq!(service("/api").as_deref(), Some("exact"));
        assert_eq!(service("/apix").as_deref(), Some("root"));
    }

    #[test]
    fn wildcard_hosts_cover_one_label_and_precise_hosts_win() {
        assert!(host_matches(Some("*.foo.com"), Some("a.foo.com")));
        assert!(!host_matches(Some("*.foo.com"), Some("a.b.foo.com")));
        assert!(!host_matches(Some("*.foo.com"), Some("foo.com")));
        assert!(host_matches(None, Some("x.com")));
        assert!(!host_matches(Some("x.com"), None));
    }
}
