//! What a controller's custom network provider needs, done as Kruise's controller does it:
//! keep the resource's original spec/labels/annotations in an annotation, run the script for a
//! strategy step against that original, decide whether the resource needs an update, and restore
//! the original when the rollout ends.
//!
//! No Kubernetes client is involved: callers hand in the parts of the object Kruise touches
//! ([`Resource`]) and apply what comes back.
//!
//! ```
//! use std::collections::BTreeMap;
//! use kruise_lua_engine::controller::{self, Resource, TrafficStep};
//! use kruise_lua_engine::runner::RunOptions;
//! use kruise_lua_engine::JsonValue;
//!
//! let script = r#"
//!     local spec = obj.data.spec
//!     spec.weight = obj.canaryWeight
//!     spec.backend = obj.canaryService
//!     return obj.data
//! "#;
//! let mut resource = Resource {
//!     spec: Some(JsonValue::Object(BTreeMap::from([("backend".into(), JsonValue::String("web".into()))]))),
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
use crate::luadata::{Data, HeaderModifier, HttpRouteMatch, LuaData};
use crate::runner::{self, Mode, RunOptions};
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
