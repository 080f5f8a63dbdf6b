//! The intent check: does the resource a step leaves route traffic the way the Rollout step
//! asks? A gateway's [`RoutingModel`] routes probe requests through the original
//! configuration and the step's, and each probe's two distributions are compared with what
//! the step asks for.
//!
//! What a step asks for (openkruise/rollouts 9dd6279, `api/v1beta1/rollout_types.go`,
//! `TrafficRoutingStrategy`, and `pkg/trafficrouting/`):
//! - `traffic`: the canary's share of the traffic the stable service receives. Only routes that
//!   served the stable service change; routes that never did keep their distribution.
//! - `matches`: requests matching any one match (its conditions ANDed) go to the canary. "It
//!   cannot support Traffic (weight-based routing) and Matches simultaneously, if both are
//!   configured. In such cases, Matches takes precedence": so with both, the other requests may
//!   keep the stable distribution (the Gateway API provider, `gateway.go`
//!   `buildDesiredHTTPRoute`, ignores the weight) or be split by the weight (ingress-nginx
//!   applies both); either passes. A match without conditions selects nothing, as in
//!   `buildCanaryHeaderHttpRoutes`.
//! - `requestHeaderModifier`: requests bound for the canary carry its set/add/remove; requests
//!   bound for the stable service keep their original header operations.
//! - A step with neither traffic nor matches never reaches the script (`DoTrafficRouting`), so
//!   nothing is demanded of it; restoring the original at the end is the controller's job.
//!
//! The canary of a request is every backend of the canary service; when the canary and stable
//! services are the same (a TrafficRouting CR, subsets), every backend of that service the
//! original did not route the request to.

use std::collections::BTreeSet;

use crate::luadata::{HeaderModifier, HttpRouteMatch, LuaData};
use crate::path_text::parse_path;
use crate::routing::matching::full_match;
use crate::routing::{
    Backend, ConfigProblem, GatewayConfig, ProblemKind, Request, Routed, RoutingModel, SmolStr,
};
use crate::runner::provenance::WrittenAt;
use crate::value::JsonValue;

mod case;
#[cfg(test)]
mod ingress_tests;
mod misrouting;
mod probe_set;
mod table;
#[cfg(test)]
mod tests;

pub use case::{
    NO_PATHS, StepCheck, StepConfigs, StepIntentOutcome, StepRuns, case_original, check_case,
    check_case_reusing, check_case_with, step_configs,
};
pub use probe_set::{MAX_BASE_PROBES, MAX_PROBES, ProbeSet, probes};
pub use table::{MAX_CLASSES, RequestClass, Share, ShareRole, TrafficTable, traffic_table};

/// What one step asks of the routing.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Intent {
    /// The canary weight in percent (0..=100) when the step sets `traffic`.
    pub weight: Option<u32>,
    /// The step's matches that have at least one condition.
    pub matches: Vec<HttpRouteMatch>,
    pub header_modifier: Option<HeaderModifier>,
    pub stable_service: String,
    pub canary_service: String,
    /// The namespace of the Rollout's services: the step's resource's own
    /// `metadata.namespace` ([`crate::routing::resource_namespace`]), `None` when the case
    /// gives none. A backend qualified with another namespace is another Service
    /// ([`crate::routing::names_service`]).
    pub namespace: Option<String>,
}

impl Intent {
    /// The intent of a step's `obj`, or `None` when the step never reaches the script.
    pub fn of(obj: &LuaData, traffic_set: bool) -> Option<Intent> {
        if !crate::luadata::reaches_provider(traffic_set, obj.matches.as_deref()) {
            return None;
        }
        Some(Intent {
            // Weights above 100 mean all of it; negative ones (traffic "-1%") none.
            weight: (traffic_set && obj.canary_weight >= 0)
                .then(|| obj.canary_weight.min(100) as u32),
            matches: obj
                .matches
                .iter()
                .flatten()
                .filter(|m| has_conditions(m))
                .cloned()
                .collect(),
            header_modifier: obj.request_header_modifier.clone(),
            stable_service: obj.stable_service.clone(),
            canary_service: obj.canary_service.clone(),
            // The obj carries no namespace (Kruise hands the script the resource's spec,
            // labels and annotations): [`Self::in_namespace_of`] sets it from the resource.
            namespace: None,
        })
    }

    /// The same intent for the Rollout whose step's resource is `original` (its
    /// `metadata.namespace`, see [`Intent::namespace`]).
    pub fn in_namespace_of(self, original: &JsonValue) -> Intent {
        Intent {
            namespace: crate::routing::object_namespace(original).map(str::to_owned),
            ..self
        }
    }

    /// Whether `backend` is a backend of the stable service.
    pub(crate) fn is_stable(&self, model: &dyn RoutingModel, backend: &Backend) -> bool {
        model.is_service(backend, &self.stable_service, self.namespace.as_deref())
    }

    /// Whether `backend` is a backend of the canary service.
    pub(crate) fn is_canary_service(&self, model: &dyn RoutingModel, backend: &Backend) -> bool {
        model.is_service(backend, &self.canary_service, self.namespace.as_deref())
    }

    /// Whether `request` is one the step's matches select (read strictly: the Gateway API's
    /// path segments, regular expressions matching the whole value).
    pub fn selects(&self, request: &Request) -> bool {
        self.selects_as(request, Reading::STRICT)
    }

    /// Whether any request can be read differently by [`Self::readings_differ`]: a match
    /// has a path prefix, or (with `regex_search`) a regular expression.
    fn readings_may_differ(&self, regex_search: bool) -> bool {
        let regex = |t: &Option<String>| regex_search && t.as_deref() == Some("RegularExpression");
        self.matches.iter().any(|m| {
            m.path
                .as_ref()
                .is_some_and(|path| match path.match_type.as_deref() {
                    Some("RegularExpression") => regex_search,
                    Some("Exact") => false,
                    _ => true,
                })
                || m.headers.iter().flatten().any(|h| regex(&h.match_type))
                || m.query_params
                    .iter()
                    .flatten()
                    .any(|q| regex(&q.match_type))
        })
    }

    fn selects_as(&self, request: &Request, reading: Reading) -> bool {
        self.matches
            .iter()
            .any(|m| match_selects(m, request, reading))
    }

    /// Whether the strict reading of the step's matches and the gateway's own disagree on
    /// `request`, so that either routing of it passes:
    /// - a `PathPrefix` read as a plain string prefix (`/cartx` for `/cart`) or as the Gateway
    ///   API's segments (`/beta` for `/beta/`, whose trailing slash the Gateway API ignores).
    ///   Kruise's API points users at the gateway's own prefix for `path` (`HttpRouteMatch.Path`:
    ///   "Supported list: Istio: …#HTTPMatchRequest"), and Kruise's own Istio script writes
    ///   Istio's (string) `prefix`;
    /// - with `regex_search` (the gateway only has regexes that search the value: see
    ///   [`RoutingModel::step_regex_may_search`]), a `RegularExpression` found anywhere in the
    ///   value rather than matching all of it.
    ///
    /// `selected` is [`Self::selects`] of `request`.
    fn readings_differ(&self, request: &Request, regex_search: bool, selected: bool) -> bool {
        let lenient = Reading {
            prefix: PrefixReading::String,
            regex_search,
        };
        self.readings_may_differ(regex_search) && selected != self.selects_as(request, lenient)
    }
}

fn has_conditions(m: &HttpRouteMatch) -> bool {
    m.path.is_some()
        || m.headers.as_ref().is_some_and(|h| !h.is_empty())
        || m.query_params.as_ref().is_some_and(|q| !q.is_empty())
}

/// How a step's match is read (see [`Intent::readings_differ`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Reading {
    prefix: PrefixReading,
    /// `RegularExpression` values found anywhere in the value (else they match all of it).
    regex_search: bool,
}

impl Reading {
    const STRICT: Reading = Reading {
        prefix: PrefixReading::Segments,
        regex_search: false,
    };
}

/// How a `PathPrefix` is read: element by element (the Gateway API's `HTTPPathMatch`, the
/// type of Kruise's `path`), or as a plain string prefix (Istio's `prefix`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PrefixReading {
    Segments,
    String,
}

fn regex_selects(pattern: &str, text: &str, reading: Reading) -> bool {
    if reading.regex_search {
        crate::routing::matching::search(pattern, text)
    } else {
        full_match(pattern, text)
    }
}

/// Gateway API path matching (`HTTPPathMatch`): `PathPrefix` (the default type, value "/")
/// matches whole path segments, `Exact` the whole path, `RegularExpression` the whole path.
fn path_selects(
    match_type: Option<&str>,
    value: Option<&str>,
    path: &str,
    reading: Reading,
) -> bool {
    let value = value.unwrap_or("/");
    match match_type.unwrap_or("PathPrefix") {
        "Exact" => path == value,
        "RegularExpression" => regex_selects(value, path, reading),
        _ if reading.prefix == PrefixReading::String => path.starts_with(value),
        _ => {
            let prefix = value.trim_end_matches('/');
            prefix.is_empty()
                || path == prefix
                || path
                    .strip_prefix(prefix)
                    .is_some_and(|rest| rest.starts_with('/'))
        }
    }
}

fn value_selects(
    match_type: Option<&str>,
    wanted: &str,
    actual: Option<&str>,
    reading: Reading,
) -> bool {
    let Some(actual) = actual else { return false };
    match match_type {
        Some("RegularExpression") => regex_selects(wanted, actual, reading),
        // Not a Gateway API type, but the library's Istio, Contour and Kuma scripts accept it
        // and write the gateway's own string prefix (Istio `StringMatch.prefix`).
        Some("Prefix") => actual.starts_with(wanted),
        _ => actual == wanted,
    }
}

fn match_selects(m: &HttpRouteMatch, request: &Request, reading: Reading) -> bool {
    if let Some(path) = &m.path
        && !path_selects(
            path.match_type.as_deref(),
            path.value.as_deref(),
            &request.path,
            reading,
        )
    {
        return false;
    }
    // Header names are case-insensitive (the request keeps them lower-cased).
    let headers_hold = m.headers.iter().flatten().all(|h| {
        value_selects(
            h.match_type.as_deref(),
            &h.value,
            crate::routing::header_value(request, &h.name),
            reading,
        )
    });
    let query_holds = m.query_params.iter().flatten().all(|q| {
        value_selects(
            q.match_type.as_deref(),
            &q.value,
            request.query.get(&q.name),
            reading,
        )
    });
    headers_hold && query_holds
}

/// One way a step's configuration does not do what the step asks.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    /// The probe request, for routing violations (`None` for configuration problems).
    pub request: Option<Request>,
    /// What the step's configuration does with it, and what the step asks for.
    pub actual: Option<String>,
    pub expected: Option<String>,
    /// The whole finding as one line: `GET /static with x-canary: 1 → web-canary 100 %,
    /// expected web 100 %`.
    pub message: String,
    /// Where in the step's resource the route that took the request is (`spec.http[1]`),
    /// when the model knows.
    pub route_path: Option<String>,
    /// The script line (from 1) of the last store the script made to that route (for an
    /// ingress class: to the canary Ingress's annotations), when a recorded run of the step
    /// found one ([`locate_writes`]); `None` until then, and for configuration problems.
    pub script_line: Option<u32>,
}

/// At most this many routing violations are kept per step (the first ones, in probe order);
/// the rest are counted.
pub const VIOLATIONS_SHOWN: usize = 10;

/// The result of checking one step.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StepReport {
    pub probes: usize,
    pub violations: Vec<Violation>,
    /// Routing violations left out past [`VIOLATIONS_SHOWN`].
    pub more: usize,
    /// Whether the probe set hit [`MAX_BASE_PROBES`] or [`MAX_PROBES`] (requests past them
    /// were not sent).
    pub truncated: bool,
    /// Parts of what the step asks that the check did not verify, and why (a
    /// `requestHeaderModifier` the gateway has no means to apply).
    pub unchecked: Vec<String>,
}

/// Why a checked step says nothing of where requests go: no route sends one anywhere.
pub const NOTHING_TO_PROBE: &str =
    "nothing to probe: the configurations have no route to send a request through";

impl StepReport {
    /// Why the step's routing is not fully verified, when the user must be told: nothing to
    /// probe, the probe set cut short, or parts the model does not evaluate
    /// ([`Self::unchecked`]). `None`: checked and fine (or misrouted, as the violations say).
    pub fn unverified(&self) -> Option<String> {
        if self.probes == 0 && self.unchecked.is_empty() {
            return Some(NOTHING_TO_PROBE.to_owned());
        }
        if self.probes > 0 && !self.truncated && self.unchecked.is_empty() {
            return None;
        }
        // Beside a model limit (every route has a condition the model takes as not met), both
        // are said.
        let mut why = Vec::new();
        if self.probes == 0 {
            why.push(NOTHING_TO_PROBE.to_owned());
        }
        if self.truncated {
            why.push(format!(
                "the probe set was cut at {} requests (the first ones in request order)",
                self.probes
            ));
        }
        why.extend(self.unchecked.iter().cloned());
        Some(format!("partly checked: {}", why.join("; ")))
    }
}

/// Checks one step: `original` is the configuration before the rollout, `after` the one the
/// step leaves (both as the gateway sees them: see [`RoutingModel::surroundings`]).
pub fn check_step(
    model: &dyn RoutingModel,
    original: &GatewayConfig,
    after: &GatewayConfig,
    intent: &Intent,
) -> StepReport {
    check_step_sharing(
        model,
        original,
        after,
        intent,
        &mut BeforeRouting::default(),
    )
}

/// What the configuration before the rollout gives, kept across the steps of a case: every
/// step of a case routes its probes through the same original configuration, so its problems
/// and the model's probes of it are made once per case rather than once per step. Knows the
/// configuration they were made for by its address, and starts again when a step's is another:
/// a case keeps every configuration it routes through until it is done
/// (`case::check_steps_compiled`), so an address names one configuration for as long as this
/// lives, and telling them apart costs no comparison of two resources.
#[derive(Default)]
pub(crate) struct BeforeRouting {
    config_at: Option<usize>,
    problems: Vec<ConfigProblem>,
    /// The model's probes of the configuration ([`probe_set::sorted_probes`]).
    probes: Vec<Request>,
    /// The probes of the last step checked and where the configuration sends each of them:
    /// the next step with the same probes routes none of them through it again (steps that
    /// change only weights have the same probes), and one with other probes only those the
    /// last step did not have. (Keeping the routing of every request of the case in a map,
    /// looked up by request, cost more than routing again: measured, docs/BENCHMARKS.md; two
    /// sorted probe sets are compared side by side instead.)
    last: Option<LastProbes>,
}

/// What [`BeforeRouting::last`] holds: the probe set and what it was made from.
struct LastProbes {
    /// The model's probes of the step's configuration ([`probe_set::sorted_probes`]).
    after_probes: Vec<Request>,
    /// The step's matches.
    matches: Vec<HttpRouteMatch>,
    set: ProbeSet,
    /// `routed[i]`: where the configuration sends `set.requests[i]`.
    routed: Vec<Routed>,
}

impl BeforeRouting {
    /// Keeps what is known of `config` (or forgets what was known of another).
    fn of(&mut self, model: &dyn RoutingModel, config: &GatewayConfig) {
        let at = std::ptr::from_ref(config) as usize;
        if self.config_at != Some(at) {
            *self = BeforeRouting {
                config_at: Some(at),
                problems: model.config_problems(config),
                probes: probe_set::sorted_probes(model.probes(config)),
                last: None,
            };
        }
    }

    /// The probe set of a step whose configuration the model probes with `after_probes`
    /// ([`probe_set::sorted_probes`]), with where `original` (the configuration [`Self::of`]
    /// was given) sends each probe: the last step's when the inputs are the same.
    fn probes_of(
        &mut self,
        model: &dyn RoutingModel,
        original: &GatewayConfig,
        after_probes: Vec<Request>,
        intent: &Intent,
    ) -> &LastProbes {
        let same = self.last.as_ref().is_some_and(|last| {
            last.after_probes == after_probes && last.matches == intent.matches
        });
        if !same {
            let set = probe_set::probes_beside(model, &self.probes, &after_probes, intent);
            // Both sets are in request order: a request the last step routed too is found
            // by walking them side by side.
            let mut known = self
                .last
                .take()
                .map(|last| last.set.requests.into_iter().zip(last.routed))
                .into_iter()
                .flatten()
                .peekable();
            let routed = set
                .requests
                .iter()
                .map(|request| {
                    while let Some((earlier, _)) = known.peek() {
                        match earlier.cmp(request) {
                            std::cmp::Ordering::Less => {
                                known.next();
                            }
                            std::cmp::Ordering::Equal => {
                                if let Some((_, routed)) = known.next() {
                                    return routed;
                                }
                            }
                            std::cmp::Ordering::Greater => break,
                        }
                    }
                    model.route(original, request)
                })
                .collect();
            self.last = Some(LastProbes {
                after_probes,
                matches: intent.matches.clone(),
                set,
                routed,
            });
        }
        self.last.as_ref().expect("made above")
    }
}

/// [`check_step`] sharing what is known of `original` with the case's other steps.
pub(crate) fn check_step_sharing(
    model: &dyn RoutingModel,
    original: &GatewayConfig,
    after: &GatewayConfig,
    intent: &Intent,
    before: &mut BeforeRouting,
) -> StepReport {
    // Each pattern of the configurations and the step's matches is compiled once for the
    // step (or the case, when the caller installed the memo for it), not once per probe; and
    // each configuration is parsed once for the step, not once per probe (both borrowed for
    // the whole call, as `memo` requires).
    crate::routing::matching::with_compiled_patterns(|| {
        crate::routing::memo::with_derived_memo(|| {
            check_step_compiled(model, original, after, intent, before)
        })
    })
}

fn check_step_compiled(
    model: &dyn RoutingModel,
    original: &GatewayConfig,
    after: &GatewayConfig,
    intent: &Intent,
    shared: &mut BeforeRouting,
) -> StepReport {
    let mut report = StepReport::default();
    shared.of(model, original);
    let known: &[ConfigProblem] = &shared.problems;
    let after_problems = model.config_problems(after);
    let (limits, past_bounds) = model_limits(&after_problems, known);
    report.unchecked = limits;
    // A problem the original already has is evidently not one for the user's gateway version
    // (compared by message: the step may move the part that has it, e.g. insert a route).
    for problem in after_problems {
        if known.iter().any(|k| k.message == problem.message) {
            continue;
        }
        let what = match problem.kind {
            ProblemKind::Rejected => "the gateway rejects",
            ProblemKind::Ignored => "the gateway ignores",
            // Noted above: the model's limits, not the configuration's faults.
            ProblemKind::NotEvaluated | ProblemKind::PastModelBounds => continue,
        };
        let at = if problem.path.is_empty() {
            String::new()
        } else {
            format!(" {}", problem.path)
        };
        report.violations.push(Violation {
            request: None,
            actual: None,
            expected: None,
            message: format!("{what}{at}: {}", problem.message),
            route_path: None,
            script_line: None,
        });
    }
    let stripped;
    let intent = if intent.header_modifier.as_ref().is_some_and(modifies)
        && !model.can_modify_request_headers()
    {
        report.unchecked.push(format!(
            "requestHeaderModifier is not checked: {} cannot change request headers, so \
             canary-bound requests go without it",
            model.name()
        ));
        stripped = Intent {
            header_modifier: None,
            ..intent.clone()
        };
        &stripped
    } else {
        intent
    };
    let after_probes = probe_set::sorted_probes(model.probes(after));
    let probes = shared.probes_of(model, original, after_probes, intent);
    report.probes = probes.set.requests.len();
    report.truncated = probes.set.truncated;
    if past_bounds {
        // Where a request goes is not known past the model's bounds: judging the probes could
        // only give false alarms (or false comfort); the note says routing is not checked.
        return report;
    }
    let mut seen = BTreeSet::new();
    let mut verdicts = misrouting::Verdicts::default();
    for (request, before) in probes.set.requests.iter().zip(&probes.routed) {
        let now = model.route(after, request);
        let by_convention = || model.canary_by_convention(after, request);
        if let Some((actual, expected)) =
            verdicts.of(model, intent, request, before, &now, by_convention)
            && seen.insert((actual.clone(), expected.clone()))
        {
            if report.violations.len() >= VIOLATIONS_SHOWN {
                report.more += 1;
                continue;
            }
            // Where the step's configuration sent it (`spec.http[0]`), when the model knows.
            let route_path = match &now {
                Routed::To(d) => d.route_path.as_ref().map(SmolStr::to_string),
                Routed::NoRoute => None,
            };
            let via = route_path
                .as_ref()
                .map(|path| format!(" (by {path})"))
                .unwrap_or_default();
            report.violations.push(Violation {
                message: format!(
                    "{} → {actual}{via}, expected {expected}",
                    request.describe()
                ),
                request: Some(request.clone()),
                actual: Some(actual),
                expected: Some(expected),
                route_path,
                script_line: None,
            });
        }
    }
    report
}

/// The notes of the step's model limits ([`ProblemKind::is_model_limit`]) for
/// [`StepReport::unchecked`], `{path} {message}`: the step's configuration's, then the
/// original's that the step's does not have at the same place of the same shape (a step that
/// inserts a route moves `spec.http[0].match[0].port` to `spec.http[1].match[0].port`: one
/// note). With whether one of them is past the model's bounds, so that no probe is judged.
fn model_limits(after: &[ConfigProblem], original: &[ConfigProblem]) -> (Vec<String>, bool) {
    fn limits(problems: &[ConfigProblem]) -> Vec<&ConfigProblem> {
        problems
            .iter()
            .filter(|p| p.kind.is_model_limit())
            .collect()
    }
    let (after, original) = (limits(after), limits(original));
    let same_place = |a: &ConfigProblem, b: &ConfigProblem| {
        a.message == b.message && path_shape(&a.path) == path_shape(&b.path)
    };
    let mut notes: Vec<String> = Vec::new();
    for problem in after.iter().copied().chain(
        original
            .iter()
            .copied()
            .filter(|o| !after.iter().any(|a| same_place(a, o))),
    ) {
        let note = if problem.path.is_empty() {
            problem.message.clone()
        } else {
            format!("{} {}", problem.path, problem.message)
        };
        if !notes.contains(&note) {
            notes.push(note);
        }
    }
    let past_bounds = after
        .iter()
        .chain(&original)
        .any(|p| p.kind == ProblemKind::PastModelBounds);
    (notes, past_bounds)
}

/// `path` without its list indices (`spec.http[].match[].port`); keys in brackets stay.
fn path_shape(path: &str) -> String {
    let mut shape = String::with_capacity(path.len());
    let mut rest = path;
    while let Some(open) = rest.find('[') {
        shape.push_str(&rest[..=open]);
        rest = &rest[open + 1..];
        if let Some(close) = rest.find(']')
            && rest[..close].bytes().all(|b| b.is_ascii_digit())
        {
            rest = &rest[close..];
        }
    }
    shape.push_str(rest);
    shape
}

/// Fills each routing violation's [`Violation::script_line`] from `written`, the stores a
/// recorded run of the step's script made (`runner::provenance`): where the script last
/// changed the route that took the request (its last field set, else the line that put it in
/// place: [`WrittenAt::entry_line`]); when it changed nothing in it, the enclosing entries'
/// (a Kuma match's rule), up to the resource's top-level list entry (`spec.http[1]`). For an
/// ingress class (`ingress`), whose script writes only the canary Ingress's annotations, the
/// last store to any of them.
pub fn locate_writes(report: &mut StepReport, written: &WrittenAt, ingress: bool) {
    let last_write = ingress.then(|| written.last_write_within(&[])).flatten();
    for violation in &mut report.violations {
        if violation.request.is_none() {
            continue;
        }
        violation.script_line = if ingress {
            last_write
        } else {
            violation
                .route_path
                .as_deref()
                .and_then(parse_path)
                .and_then(|path| route_line(written, &path))
        };
    }
}

/// [`WrittenAt::entry_line`] of `path`, else of the nearest enclosing list entry that has one,
/// never above `spec.<list>[i]`.
fn route_line(written: &WrittenAt, path: &[crate::yaml::PathSeg]) -> Option<u32> {
    use crate::yaml::PathSeg;
    written.entry_line(path).or_else(|| {
        (3..path.len())
            .rev()
            .filter(|&len| matches!(path[len - 1], PathSeg::Index(_)))
            .find_map(|len| written.entry_line(&path[..len]))
    })
}

/// Whether a header modifier changes anything.
fn modifies(modifier: &HeaderModifier) -> bool {
    modifier.set.as_ref().is_some_and(|s| !s.is_empty())
        || modifier.add.as_ref().is_some_and(|a| !a.is_empty())
        || modifier.remove.as_ref().is_some_and(|r| !r.is_empty())
}
