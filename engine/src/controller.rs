//! What Kruise's controller does around a script, done as it does it: for a custom network
//! provider, keep the resource's original spec/labels/annotations in an annotation, run the
//! script for a strategy step against that original, decide whether the resource needs an
//! update, and restore the original when the rollout ends; for an ingress class, run the
//! script on the live canary Ingress's annotations until they settle ([`ensure_ingress_routes`]);
//! for both, skip a step with neither traffic nor matches ([`crate::luadata::reaches_provider`]).
//!
//! Sources (openkruise/rollouts at 9dd6279): `pkg/trafficrouting/manager.go`
//! (`DoTrafficRouting`), `pkg/trafficrouting/network/ingress/ingress.go` (`EnsureRoutes`,
//! `buildCanaryIngress`, `executeLuaForCanary`) and
//! `pkg/trafficrouting/network/customNetworkProvider/custom_network_provider.go`.
//!
//! No Kubernetes client is involved: callers hand in the parts of the object Kruise touches
//! ([`Resource`]) and apply what comes back.
//!
//! ```
//! use std::collections::BTreeMap;
//! use kruise_lua_engine::controller::{self, Resource, TrafficStep};
//! use kruise_lua_engine::runner::RunOptions;
//! use kruise_lua_engine::JsonValue;
//! use kruise_lua_engine::value::JsonMap;
//!
//! let script = r#"
//!     local spec = obj.data.spec
//!     spec.weight = obj.canaryWeight
//!     spec.backend = obj.canaryService
//!     return obj.data
//! "#;
//! let mut resource = Resource {
//!     spec: Some(JsonValue::Object(JsonMap::from([("backend".into(), JsonValue::String("web".into()))]))),
//!     labels: BTreeMap::new(),
//!     annotations: BTreeMap::from([("owner".into(), "team-a".into())]),
//! };
//!
//! // Starting a rollout: remember the original (Kruise stores it once, in an annotation).
//! controller::store_original(&mut resource).unwrap();
//! assert!(resource.annotations.contains_key(controller::ORIGINAL_SPEC_ANNOTATION));
//!
//! // A step with 20% traffic: run the script against the stored original.
//! let step = TrafficStep { traffic: Some("20%".into()), ..TrafficStep::default() };
//! let obj = controller::canary_obj(&resource, &step, "web", "web-canary").unwrap();
//! let result = controller::run_step(script, &obj, &RunOptions::default()).unwrap();
//! let updated = controller::apply_result(&resource, &result).expect("the spec changed");
//! assert_eq!(updated.spec.as_ref().unwrap().to_canonical_json(), r#"{"backend":"web-canary","weight":20}"#);
//! // Applying the same result again needs no update.
//! assert!(controller::apply_result(&updated, &result).is_none());
//!
//! // The rollout is done: put the original back.
//! let restored = controller::restore_original(&updated).unwrap().expect("was modified");
//! assert_eq!(restored.spec, resource.spec);
//! assert_eq!(restored.annotations, BTreeMap::from([("owner".to_string(), "team-a".to_string())]));
//! ```

use std::collections::BTreeMap;

use crate::error::{ErrorKind, ScriptError};
use crate::json::decode_custom_result;
use crate::luadata::{
    Data, HeaderModifier, HttpRouteMatch, IngressData, LuaData, annotations_json, reaches_provider,
};
use crate::runner::{self, Mode, RunOptions, Script};
use crate::value::JsonValue;

/// The annotation in which Kruise keeps a resource's original spec, labels and annotations.
pub const ORIGINAL_SPEC_ANNOTATION: &str = "rollouts.kruise.io/original-spec-configuration";

/// The parts of a gateway resource that Kruise reads and writes.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Resource {
    /// `None` when the object has no `spec`.
    pub spec: Option<JsonValue>,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
}

/// The traffic part of a Rollout step (`TrafficRoutingStrategy`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TrafficStep {
    /// `traffic` as written in the Rollout, e.g. `"20%"`; `None` when the step sets none.
    pub traffic: Option<String>,
    pub matches: Option<Vec<HttpRouteMatch>>,
    pub request_header_modifier: Option<HeaderModifier>,
}

impl TrafficStep {
    /// Whether the controller calls the provider for this step ([`crate::luadata::reaches_provider`]).
    pub fn reaches_provider(&self) -> bool {
        reaches_provider(self.traffic.is_some(), self.matches.as_deref())
    }
}

/// Errors of the controller flow (script errors keep their kind).
#[derive(Debug, Clone, PartialEq)]
pub enum ControllerError {
    /// The original-spec annotation is missing or empty.
    NoOriginal,
    /// The stored original could not be read back.
    BadOriginal(String),
    Script(ScriptError),
}

impl std::fmt::Display for ControllerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ControllerError::NoOriginal => {
                write!(f, "annotation {ORIGINAL_SPEC_ANNOTATION} is missing")
            }
            ControllerError::BadOriginal(message) => {
                write!(
                    f,
                    "annotation {ORIGINAL_SPEC_ANNOTATION} cannot be read: {message}"
                )
            }
            ControllerError::Script(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for ControllerError {}

/// The resource's current spec, labels and annotations (without the original-spec annotation).
fn current_data(resource: &Resource) -> Data {
    let mut annotations = resource.annotations.clone();
    annotations.remove(ORIGINAL_SPEC_ANNOTATION);
    Data {
        spec: resource.spec.clone(),
        labels: Some(resource.labels.clone()).filter(|map| !map.is_empty()),
        annotations: Some(annotations).filter(|map| !map.is_empty()),
    }
}

/// Stores the resource's current spec/labels/annotations in [`ORIGINAL_SPEC_ANNOTATION`], as
/// Kruise does when a rollout starts, unless it is already there. Returns whether the resource
/// changed (Kruise updates the object only then).
pub fn store_original(resource: &mut Resource) -> Result<bool, ControllerError> {
    if resource.annotations.contains_key(ORIGINAL_SPEC_ANNOTATION) {
        return Ok(false);
    }
    let stored = current_data(resource).to_canonical_json();
    resource
        .annotations
        .insert(ORIGINAL_SPEC_ANNOTATION.to_owned(), stored);
    Ok(true)
}

/// Reads the original back from [`ORIGINAL_SPEC_ANNOTATION`].
pub fn original(resource: &Resource) -> Result<Data, ControllerError> {
    let stored = resource
        .annotations
        .get(ORIGINAL_SPEC_ANNOTATION)
        .filter(|text| !text.is_empty())
        .ok_or(ControllerError::NoOriginal)?;
    decode_custom_result(stored.as_bytes()).map_err(ControllerError::BadOriginal)
}

/// The `obj` Kruise builds for a step: the stored original, the weights from `traffic` (-1 and
/// 101 when the step sets none), the matches, services and header modifier.
pub fn canary_obj(
    resource: &Resource,
    step: &TrafficStep,
    stable_service: &str,
    canary_service: &str,
) -> Result<LuaData, ControllerError> {
    let canary_weight = LuaData::canary_weight_from_traffic(step.traffic.as_deref());
    Ok(LuaData {
        data: original(resource)?.into(),
        canary_weight,
        stable_weight: 100i32.wrapping_sub(canary_weight),
        matches: step.matches.clone(),
        canary_service: canary_service.to_owned(),
        stable_service: stable_service.to_owned(),
        request_header_modifier: step.request_header_modifier.clone(),
    })
}

/// Runs the script for a step with the controller's rules (an empty table is `null`, a
/// non-table result is an error). The script is compiled for this one run; callers that run
/// one script often use [`runner::run_custom`] with a [`runner::Script`].
pub fn run_step(
    script: &str,
    obj: &LuaData,
    options: &RunOptions,
) -> Result<Data, ControllerError> {
    runner::run_custom(&runner::Script::new(script), obj, options)
        .result(Mode::Production)
        .clone()
        .map_err(ControllerError::Script)
}

/// The updated resource when the script's result differs from the resource, `None` when no
/// update is needed. Like Kruise, the original-spec annotation is carried over, and spec is
/// compared as canonical JSON, labels and annotations as maps.
pub fn apply_result(resource: &Resource, result: &Data) -> Option<Resource> {
    let mut annotations = result.annotations.clone().unwrap_or_default();
    if let Some(stored) = resource.annotations.get(ORIGINAL_SPEC_ANNOTATION) {
        annotations.insert(ORIGINAL_SPEC_ANNOTATION.to_owned(), stored.clone());
    }
    let updated = Resource {
        spec: result.spec.clone(),
        labels: result.labels.clone().unwrap_or_default(),
        annotations,
    };
    let canonical = |spec: &Option<JsonValue>| spec.as_ref().map(JsonValue::to_canonical_json);
    let unchanged = canonical(&resource.spec) == canonical(&updated.spec)
        && resource.labels == updated.labels
        && resource.annotations == updated.annotations;
    (!unchanged).then_some(updated)
}

/// The resource restored from [`ORIGINAL_SPEC_ANNOTATION`] (which is dropped), or `None` when
/// there is no stored original (Kruise then leaves the object alone).
pub fn restore_original(resource: &Resource) -> Result<Option<Resource>, ControllerError> {
    match original(resource) {
        Ok(data) => Ok(Some(Resource {
            spec: data.spec,
            labels: data.labels.unwrap_or_default(),
            annotations: data.annotations.unwrap_or_default(),
        })),
        Err(ControllerError::NoOriginal) => Ok(None),
        Err(error) => Err(error),
    }
}

/// Maps a controller error to the engine's error kind, for callers that report kinds.
pub fn error_kind(error: &ControllerError) -> ErrorKind {
    match error {
        ControllerError::Script(error) => error.kind,
        ControllerError::NoOriginal | ControllerError::BadOriginal(_) => ErrorKind::Unmarshal,
    }
}

/// How many runs of an ingress script the model makes for one step before deciding the
/// annotations never settle (the controller itself retries on every reconcile, forever).
pub const INGRESS_RUN_LIMIT: usize = 8;

/// What `EnsureRoutes` of the ingress provider did for one step.
#[derive(Debug, Clone, PartialEq)]
pub enum IngressEnsure {
    /// `DoTrafficRouting` returned before calling the provider ([`crate::luadata::reaches_provider`]).
    Skipped,
    /// The canary Ingress does not exist and the step's weight is 0: `EnsureRoutes` returns
    /// "done" without creating it or running the script.
    NotCreated,
    /// The last run returned the annotations it was given (`reflect.DeepEqual`), so the
    /// controller moves on. `runs` counts every run of the step, the creation run included.
    Settled { runs: usize },
    /// Every run changed the annotations again, up to [`INGRESS_RUN_LIMIT`]: in the cluster
    /// the controller patches the canary Ingress on every reconcile and never finishes the
    /// step. `changing` are the keys that differed between the last two runs.
    Unsettled { runs: usize, changing: Vec<String> },
    /// A run failed; the controller logs it and retries the step forever.
    Failed(ScriptError),
}

/// The canary Ingress after one step, and how the controller got there.
#[derive(Debug, Clone, PartialEq)]
pub struct IngressRoutes {
    /// The canary Ingress's annotations; `None` while it does not exist.
    pub canary: Option<BTreeMap<String, String>>,
    pub ensure: IngressEnsure,
    /// The `obj` of the step's first run with its own weight, matches and header modifier
    /// (on the live annotations, or on those the creation run left); `None` when the script
    /// did not get that far.
    pub step_obj: Option<IngressData>,
    /// What the runs printed, in order.
    pub prints: Vec<String>,
}

/// Runs an ingress-class script for one step as the controller does (ingress.go,
/// `EnsureRoutes`), starting from the live canary Ingress's annotations `canary` (`None`: not
/// created yet). `step` is the step's obj; its `annotations` are the stable Ingress's, which
/// seed the canary Ingress when it is created.
///
/// * Not created yet: a step whose weight is 0 returns at once. Otherwise the canary Ingress
///   is built with the stable Ingress's annotations (`buildCanaryIngress`), the script runs on
///   them with weight `"0"`, no matches and no header modifier, and its result becomes the
///   created object's annotations; the step is not done yet (the next reconcile runs it).
/// * Created: the script runs on the live annotations with the step's weight, matches and
///   header modifier. A result equal to the live annotations finishes the step; otherwise
///   the controller sends a JSON merge patch from the live annotations to the result, which
///   leaves exactly the result (dropped keys become `null` in the patch and are removed), and
///   the next reconcile runs the script again on that.
///
/// An empty result and no annotations are the same (Go decodes `null` into a nil map, and the
/// API server drops an empty one).
pub fn ensure_ingress_routes(
    script: &Script,
    canary: Option<&BTreeMap<String, String>>,
    traffic_set: bool,
    step: &IngressData,
    options: &RunOptions,
) -> IngressRoutes {
    let mut prints = Vec::new();
    let run = |obj: &JsonValue, prints: &mut Vec<String>| {
        let run = runner::run_ingress_json(script, obj, options);
        prints.extend(run.prints);
        run.result.map(Option::unwrap_or_default)
    };
    if !reaches_provider(traffic_set, step.matches.as_deref()) {
        return IngressRoutes {
            canary: canary.cloned(),
            ensure: IngressEnsure::Skipped,
            step_obj: None,
            prints,
        };
    }
    let mut runs = 0;
    let mut live = match canary {
        Some(live) => live.clone(),
        None if traffic_set && step.weight == "0" => {
            return IngressRoutes {
                canary: None,
                ensure: IngressEnsure::NotCreated,
                step_obj: None,
                prints,
            };
        }
        None => {
            let create = IngressData {
                annotations: step.annotations.clone(),
                weight: "0".to_owned(),
                matches: None,
                canary_service: step.canary_service.clone(),
                request_header_modifier: None,
            };
            runs += 1;
            match run(&create.to_json(), &mut prints) {
                Ok(created) => created,
                Err(error) => {
                    return IngressRoutes {
                        canary: None,
                        ensure: IngressEnsure::Failed(error),
                        step_obj: None,
                        prints,
                    };
                }
            }
        }
    };
    let mut previous = None;
    // The live annotations as the script gets them: absent when empty.
    fn present(live: &BTreeMap<String, String>) -> Option<&BTreeMap<String, String>> {
        Some(live).filter(|map| !map.is_empty())
    }
    let step_obj = IngressData {
        annotations: present(&live).cloned(),
        ..step.clone()
    };
    // The step's obj as the script gets it, made once: a run that changes the live annotations
    // replaces only them.
    let mut obj = step_obj.to_json();
    while runs < INGRESS_RUN_LIMIT {
        runs += 1;
        let result = run(&obj, &mut prints);
        match result {
            Err(error) => {
                return IngressRoutes {
                    canary: Some(live),
                    ensure: IngressEnsure::Failed(error),
                    step_obj: Some(step_obj),
                    prints,
                };
            }
            Ok(result) if result == live => {
                return IngressRoutes {
                    canary: Some(live),
                    ensure: IngressEnsure::Settled { runs },
                    step_obj: Some(step_obj),
                    prints,
                };
            }
            Ok(result) => {
                previous = Some(std::mem::replace(&mut live, result));
                if let JsonValue::Object(fields) = &mut obj {
                    fields.insert("annotations".to_owned(), annotations_json(present(&live)));
                }
            }
        }
    }
    let changing = previous
        .map(|previous| differing_keys(&previous, &live))
        .unwrap_or_default();
    IngressRoutes {
        canary: Some(live),
        ensure: IngressEnsure::Unsettled { runs, changing },
        step_obj: Some(step_obj),
        prints,
    }
}

/// The keys whose values differ between two annotation maps (present on one side only, or
/// with another value), sorted.
pub fn differing_keys(a: &BTreeMap<String, String>, b: &BTreeMap<String, String>) -> Vec<String> {
    let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    keys.into_iter()
        .filter(|key| a.get(*key) != b.get(*key))
        .cloned()
        .collect()
}
