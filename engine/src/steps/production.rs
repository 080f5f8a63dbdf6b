//! Production mode's step semantics, beyond how results are encoded: the controller does not
//! call the script for a step with neither traffic nor matches, and an ingress-class script
//! runs on the canary Ingress as the earlier steps left it (the rules are in
//! [`crate::controller`]). A step replays the steps before it, so steps stay independent
//! tasks for callers that spread them over threads.

use std::collections::BTreeMap;

use crate::controller::{self, IngressEnsure};
use crate::error::{ErrorKind, ScriptError};
use crate::json::annotations_to_canonical_json;
use crate::luadata::Data;
use crate::testcase::TestCase;

use super::ingress_obj;
use crate::runner::{RunOptions, Script, run_custom, run_ingress};

/// Why the controller does not run the script for a step with neither traffic nor matches.
pub const NOT_CALLED_NO_TRAFFIC: &str =
    "skipped: the controller does not call the script for a step with neither traffic nor matches";

/// Why the controller does not run an ingress script for a first step with weight 0.
pub const NOT_CALLED_NOT_CREATED: &str = "skipped: the canary Ingress does not exist yet and the step's weight is 0, so the controller neither creates it nor runs the script";

/// One step of an ingress case as the controller runs it (production mode).
#[derive(Debug, Clone, PartialEq)]
pub struct ControllerIngressStep {
    pub prints: Vec<String>,
    /// The canary Ingress's annotations after the step (as a result), or the failing run's error.
    pub result: Result<Data, ScriptError>,
    pub warnings: Vec<String>,
    pub not_called: Option<&'static str>,
}

/// Step `index` of an ingress case as the controller runs it after steps `0..index`: what
/// `EnsureRoutes` did for it, and the first earlier step the rollout never gets past in the
/// cluster (and why).
struct Replayed {
    routes: controller::IngressRoutes,
    obj: crate::luadata::IngressData,
    blocked: Option<(usize, &'static str)>,
}

/// Replays steps `0..=index`, or stops at an earlier step that ran out of its time or memory
/// budget (returned with its error): replaying it again for every later step would multiply
/// the budget spent, and the rollout never gets past it anyway.
fn replay(
    script: &Script,
    case: &TestCase,
    index: usize,
    options: &RunOptions,
) -> Result<Replayed, (usize, ScriptError)> {
    let mut canary: Option<BTreeMap<String, String>> = None;
    let mut blocked: Option<(usize, &'static str)> = None;
    for (number, step) in case.steps[..index].iter().enumerate() {
        let routes = controller::ensure_ingress_routes(
            script,
            canary.as_ref(),
            step.traffic_set,
            &ingress_obj(&step.obj),
            options,
        );
        let stuck = match routes.ensure {
            IngressEnsure::Failed(error)
                if matches!(error.kind, ErrorKind::Timeout | ErrorKind::Memory) =>
            {
                return Err((number, error));
            }
            IngressEnsure::Failed(_) => Some("it fails"),
            IngressEnsure::Unsettled { .. } => Some("its annotations never settle"),
            _ => None,
        };
        if blocked.is_none() {
            blocked = stuck.map(|why| (number, why));
        }
        canary = routes.canary;
    }
    let step = &case.steps[index];
    let obj = ingress_obj(&step.obj);
    let routes =
        controller::ensure_ingress_routes(script, canary.as_ref(), step.traffic_set, &obj, options);
    Ok(Replayed {
        routes,
        obj,
        blocked,
    })
}

/// The `obj` the controller first hands an ingress script for step `index` of a case (the
/// step's weight, matches and header modifier on the canary Ingress's live annotations), or
/// why it does not run the script for that step (`None`: the script failed before, while
/// creating the canary Ingress).
pub fn ingress_step_obj(
    script: &Script,
    case: &TestCase,
    index: usize,
    options: &RunOptions,
) -> Result<Option<crate::luadata::IngressData>, &'static str> {
    let Ok(replayed) = replay(script, case, index, options) else {
        return Ok(None);
    };
    match replayed.routes.ensure {
        IngressEnsure::Skipped => Err(NOT_CALLED_NO_TRAFFIC),
        IngressEnsure::NotCreated => Err(NOT_CALLED_NOT_CREATED),
        _ => Ok(replayed.routes.step_obj),
    }
}

/// Runs steps `0..=index` of an ingress case the controller's way and reports step `index`:
/// the canary Ingress's annotations when the controller moves on (as a result's
/// annotations), the warnings, and why the script did not run, if it did not.
pub fn controller_ingress_step(
    script: &Script,
    case: &TestCase,
    index: usize,
    options: &RunOptions,
) -> ControllerIngressStep {
    let Replayed {
        routes,
        obj,
        blocked,
    } = match replay(script, case, index, options) {
        Ok(replayed) => replayed,
        Err((index, error)) => {
            return ControllerIngressStep {
                prints: Vec::new(),
                result: Err(never_reached(index, &error)),
                warnings: Vec::new(),
                not_called: None,
            };
        }
    };
    let mut warnings = Vec::new();
    if let Some((index, why)) = blocked {
        let number = index + 1;
        warnings.push(format!(
            "in the cluster the rollout never gets past step {number} ({why}: the controller retries it forever), so it never reaches this step; this result assumes step {number} left the canary Ingress as its last run did"
        ));
    }
    if let IngressEnsure::Unsettled { runs, changing } = &routes.ensure {
        warnings.push(format!(
            "not idempotent: run on its own output, the script changes the annotations again every time ({runs} runs; changing: {}), so in the cluster the controller patches the canary Ingress on every reconcile and never finishes this step",
            changing.join(", ")
        ));
    }
    if matches!(
        routes.ensure,
        IngressEnsure::Settled { .. } | IngressEnsure::Unsettled { .. }
    ) {
        let chained = routes.canary.clone().unwrap_or_default();
        warnings.extend(harness_difference(script, &obj, &chained, options));
    }
    let (result, not_called) = step_result(&routes.ensure, routes.canary);
    ControllerIngressStep {
        prints: routes.prints,
        result,
        warnings,
        not_called,
    }
}

/// What one step of an ingress case leaves as the controller runs it, without
/// [`controller_ingress_step`]'s warnings (the intent check needs only the canary Ingress).
#[derive(Debug, Clone, PartialEq)]
pub struct ControllerIngressResult {
    /// The canary Ingress's annotations after the step (as a result), or the error.
    pub result: Result<Data, ScriptError>,
    pub not_called: Option<&'static str>,
}

/// Every step of an ingress case as the controller runs it, in one chained pass: the same
/// results as [`controller_ingress_step`] for each index, without replaying the earlier steps
/// for every step (a case of n steps costs n runs, not n²/2).
pub fn controller_ingress_results(
    script: &Script,
    case: &TestCase,
    options: &RunOptions,
) -> Vec<ControllerIngressResult> {
    let mut out = Vec::with_capacity(case.steps.len());
    let mut canary: Option<BTreeMap<String, String>> = None;
    // A step that ran out of its time or memory budget: the rollout never gets past it.
    let mut exhausted: Option<(usize, ScriptError)> = None;
    for (index, step) in case.steps.iter().enumerate() {
        if let Some((number, error)) = &exhausted {
            out.push(ControllerIngressResult {
                result: Err(never_reached(*number, error)),
                not_called: None,
            });
            continue;
        }
        let routes = controller::ensure_ingress_routes(
            script,
            canary.as_ref(),
            step.traffic_set,
            &ingress_obj(&step.obj),
            options,
        );
        if let IngressEnsure::Failed(error) = &routes.ensure
            && matches!(error.kind, ErrorKind::Timeout | ErrorKind::Memory)
        {
            exhausted = Some((index, error.clone()));
        }
        let (result, not_called) = step_result(&routes.ensure, routes.canary.clone());
        out.push(ControllerIngressResult { result, not_called });
        canary = routes.canary;
    }
    out
}

/// The error of a step the rollout never reaches: step `index` before it ran out of its time or
/// memory budget (`error`). Steps are numbered from 1, as Kruise numbers a rollout's steps.
fn never_reached(index: usize, error: &ScriptError) -> ScriptError {
    ScriptError::new(
        error.kind,
        format!(
            "the rollout never gets past step {}, which fails in the controller with a {} error ({}), so it never reaches this step",
            index + 1,
            error.kind,
            error.message
        ),
    )
}

/// What a step leaves after the controller's `EnsureRoutes` (`ensure`, the canary Ingress's
/// annotations `canary`): those annotations as a result, or the script's error, and why the
/// script did not run, if it did not.
fn step_result(
    ensure: &IngressEnsure,
    canary: Option<BTreeMap<String, String>>,
) -> (Result<Data, ScriptError>, Option<&'static str>) {
    let as_result = |canary: Option<BTreeMap<String, String>>| Data {
        annotations: canary.filter(|map| !map.is_empty()),
        ..Data::default()
    };
    match ensure {
        IngressEnsure::Skipped => (Ok(as_result(canary)), Some(NOT_CALLED_NO_TRAFFIC)),
        IngressEnsure::NotCreated => (Ok(as_result(None)), Some(NOT_CALLED_NOT_CREATED)),
        IngressEnsure::Failed(error) => (Err(error.clone()), None),
        IngressEnsure::Settled { .. } | IngressEnsure::Unsettled { .. } => {
            (Ok(as_result(canary)), None)
        }
    }
}

/// A warning when Kruise's unit test (the script run on `original`'s annotations) gets
/// another result than the controller's run on the live canary Ingress, naming the keys.
fn harness_difference(
    script: &Script,
    obj: &crate::luadata::IngressData,
    chained: &BTreeMap<String, String>,
    options: &RunOptions,
) -> Option<String> {
    let alone = run_ingress(script, obj, options).result;
    let describe = |map: &BTreeMap<String, String>| {
        annotations_to_canonical_json(Some(map).filter(|map| !map.is_empty()))
    };
    match alone {
        Ok(alone) => {
            let alone = alone.unwrap_or_default();
            let keys = controller::differing_keys(&alone, chained);
            (!keys.is_empty()).then(|| format!(
                "the controller runs this step on the canary Ingress's live annotations (what the earlier steps left), not on original's, and gets another result than Kruise's unit test: annotations {} differ (unit test: {}, controller: {})",
                keys.join(", "),
                describe(&alone),
                describe(chained)
            ))
        }
        Err(error) => Some(format!(
            "Kruise's unit test, which runs this step on original's annotations, gets a {} error ({}) where the controller, running it on the canary Ingress's live annotations, gets {}",
            error.kind,
            error.message,
            describe(chained)
        )),
    }
}

/// The warning for a custom-provider step the controller does not call the script for: what
/// the resource keeps in the cluster (the production result of the last earlier step that
/// runs, or the original), and whether `expected` (canonical JSON) says the same.
pub(super) fn custom_skip_warning(
    script: &Script,
    case: &TestCase,
    index: usize,
    expected: Option<&str>,
    options: &RunOptions,
) -> String {
    let earlier = case.steps[..index]
        .iter()
        .rposition(|step| step.reaches_provider());
    let (kept, source) = match earlier {
        None => (
            Ok(case.steps[index].obj.data.to_canonical_json()),
            "the original".to_owned(),
        ),
        Some(index) => {
            let run = run_custom(script, &case.steps[index].obj, options);
            let number = index + 1;
            (
                run.production
                    .map(|data| data.to_canonical_json())
                    .map_err(|error| format!("step {number} fails: {} error", error.kind)),
                format!("step {number}'s result"),
            )
        }
    };
    let head = format!(
        "in the cluster the script does not run for this step (DoTrafficRouting returns first: neither traffic nor matches), so the resource keeps {source}"
    );
    let tail = "; this verdict is the script's result for the step's obj, as Kruise's unit test computes it";
    match (kept, expected) {
        (Ok(kept), Some(expected)) if kept == expected => {
            format!("{head}: {kept}, which expected[{index}] matches{tail}")
        }
        (Ok(kept), Some(_)) => {
            format!("{head}: {kept}, which expected[{index}] does not match{tail}")
        }
        (Ok(kept), None) => format!("{head}: {kept}{tail}"),
        (Err(why), _) => format!("{head} ({why}){tail}"),
    }
}
