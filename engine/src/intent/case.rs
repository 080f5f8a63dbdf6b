//! The intent check over a whole test case: runs each step the controller's way (custom
//! providers on the original; ingress classes chained, each on the canary Ingress the earlier
//! steps left) and checks the configuration it leaves.

use crate::luadata::{Data, IngressData, LuaData};
use crate::routing::{
    GatewayConfig, RoutingModel, canary_ingress, model_for, representative_stable_ingress,
    stable_of_canary_ingress,
};
use crate::runner::{self, Mode, RunOptions, Script, provenance};
use crate::schema::patched_resource;
use crate::script::ScriptFlavor;
use crate::script::ScriptKind;
use crate::steps;
use crate::testcase::TestCase;
use crate::value::JsonValue;

use super::{BeforeRouting, Intent, StepReport, check_step_sharing, locate_writes};

/// The intent check of one step.
#[derive(Debug, Clone, PartialEq)]
pub struct StepCheck {
    pub index: usize,
    pub outcome: StepIntentOutcome,
}

#[derive(Debug, Clone, PartialEq)]
pub enum StepIntentOutcome {
    Checked(StepReport),
    /// The step asks nothing of the routing: it has neither traffic nor matches, so the
    /// controller never runs the script for it (`DoTrafficRouting`). Nothing to verify.
    NothingAsked,
    /// The script fails on the step (or the controller does not call it): the check reports
    /// that, so the intent check has nothing more to say.
    ScriptFailed(String),
    /// The step asks something the intent check could not verify, and why: no routing model
    /// for the resource, no `original` to route through, a configuration the model cannot
    /// read alone, nothing to probe. Front ends say so (silence means "checked and fine").
    NotChecked(String),
}

impl StepIntentOutcome {
    /// Why the step's routing is not (fully) verified, when the user must be told: a step
    /// not checked, or checked with its probe set cut short.
    pub fn unverified(&self) -> Option<String> {
        match self {
            StepIntentOutcome::NotChecked(why) => Some(why.clone()),
            StepIntentOutcome::Checked(report) if report.probes == 0 => Some(
                "nothing to probe: the configurations have no route to send a request through"
                    .to_owned(),
            ),
            StepIntentOutcome::Checked(report)
                if report.truncated || !report.unchecked.is_empty() =>
            {
                let mut why = Vec::new();
                if report.truncated {
                    why.push(format!(
                        "the probe set was cut at {} requests (the first ones in request order)",
                        report.probes
                    ));
                }
                why.extend(report.unchecked.iter().cloned());
                Some(format!("partly checked: {}", why.join("; ")))
            }
            _ => None,
        }
    }
}

/// Checks every step of `case` for a script of `kind`; when the engine has no routing model
/// for it, every step is [`StepIntentOutcome::NotChecked`] (or [`StepIntentOutcome::NothingAsked`]). A custom provider's model is the one for the case's `original` resource
/// (`apiVersion` group and `kind`, as Kruise picks the script from a customNetworkRef), else
/// the one for the script's folder (so scripts kept outside a `<group>/<Kind>` tree, such
/// as regression fixtures, are checked too).
pub fn check_case(
    kind: &ScriptKind,
    script: &Script,
    case: &TestCase,
    options: &RunOptions,
) -> Vec<StepCheck> {
    check_case_reusing(kind, script, case, options, &[])
}

/// [`check_case`] reusing what the caller's own run of the steps left: `results[i]`, when
/// present, is the resource data step `i` of a custom-provider script returned under the
/// controller's rules (`check` passes its step outcomes, so the script does not run twice).
/// Steps without one are run here; ingress scripts are always replayed the controller's way.
pub fn check_case_reusing(
    kind: &ScriptKind,
    script: &Script,
    case: &TestCase,
    options: &RunOptions,
    results: &[Option<Data>],
) -> Vec<StepCheck> {
    let flavor = ScriptFlavor::from(kind);
    let original = case.root.get("original").map(|node| node.to_json());
    let resource_kind = original.as_ref().and_then(|object| {
        let group = object.get("apiVersion")?.as_str()?.split_once('/')?.0;
        Some(ScriptKind::Custom {
            group: group.to_owned(),
            kind: object.get("kind")?.as_str()?.to_owned(),
        })
    });
    let model = match (flavor, &resource_kind) {
        (ScriptFlavor::Custom, Some(resource_kind)) => {
            model_for(resource_kind).or_else(|| model_for(kind))
        }
        _ => model_for(kind),
    };
    let Some(model) = model else {
        let what = match resource_kind.as_ref().unwrap_or(kind) {
            ScriptKind::Custom { group, kind } => format!("{kind} ({group})"),
            ScriptKind::Ingress { class } => format!("the ingress class {class}"),
        };
        let why = format!("the engine has no routing model for {what}");
        return (0..case.steps.len())
            .map(|index| {
                let step = &case.steps[index];
                StepCheck {
                    index,
                    outcome: if Intent::of(&step.obj, step.traffic_set).is_none() {
                        StepIntentOutcome::NothingAsked
                    } else {
                        StepIntentOutcome::NotChecked(why.clone())
                    },
                }
            })
            .collect();
    };
    check_steps(
        model.as_ref(),
        flavor,
        script,
        case,
        original.as_ref(),
        options,
        results,
    )
}

/// [`check_case`] with a given model: each step of `case` for a script of `flavor`.
pub fn check_case_with(
    model: &dyn RoutingModel,
    flavor: ScriptFlavor,
    script: &Script,
    case: &TestCase,
    options: &RunOptions,
) -> Vec<StepCheck> {
    let original = case.root.get("original").map(|node| node.to_json());
    check_steps(model, flavor, script, case, original.as_ref(), options, &[])
}

/// Every step of `case`, with its `original` already read.
fn check_steps(
    model: &dyn RoutingModel,
    flavor: ScriptFlavor,
    script: &Script,
    case: &TestCase,
    original: Option<&JsonValue>,
    options: &RunOptions,
    results: &[Option<Data>],
) -> Vec<StepCheck> {
    // The steps of a case share most patterns: compiled once for the case.
    crate::routing::matching::with_compiled_patterns(|| {
        check_steps_compiled(model, flavor, script, case, original, options, results)
    })
}

fn check_steps_compiled(
    model: &dyn RoutingModel,
    flavor: ScriptFlavor,
    script: &Script,
    case: &TestCase,
    original: Option<&JsonValue>,
    options: &RunOptions,
    results: &[Option<Data>],
) -> Vec<StepCheck> {
    // Ingress steps chain (each runs on the canary Ingress the earlier ones left): one pass
    // for the whole case.
    let chained = (flavor == ScriptFlavor::Ingress)
        .then(|| steps::controller_ingress_results(script, case, options));
    // The steps route through the same original configuration: what it does is shared.
    let mut before = BeforeRouting::default();
    (0..case.steps.len())
        .map(|index| StepCheck {
            index,
            outcome: check_one(
                StepInputs {
                    model,
                    script,
                    case,
                    index,
                    original,
                    chained: chained.as_ref().map(|all| &all[index]),
                    reused: results.get(index).and_then(Option::as_ref),
                    options,
                },
                &mut before,
            ),
        })
        .collect()
}

fn ingress_has_paths(ingress: &JsonValue) -> bool {
    ingress
        .at(&["spec", "rules"])
        .and_then(JsonValue::as_array)
        .unwrap_or_default()
        .iter()
        .any(|rule| {
            rule.at(&["http", "paths"])
                .and_then(JsonValue::as_array)
                .is_some_and(|paths| !paths.is_empty())
        })
}

/// What [`check_one`] checks: step `index`; `chained` is its controller result for an ingress
/// script (`None` for a custom one, whose result is `reused` from the caller's run or run here).
struct StepInputs<'a> {
    model: &'a dyn RoutingModel,
    script: &'a Script,
    case: &'a TestCase,
    index: usize,
    original: Option<&'a JsonValue>,
    chained: Option<&'a steps::ControllerIngressResult>,
    reused: Option<&'a Data>,
    options: &'a RunOptions,
}

/// One step, sharing what the original configuration does with the case's other steps.
fn check_one(inputs: StepInputs, before: &mut BeforeRouting) -> StepIntentOutcome {
    let StepInputs {
        model,
        script,
        case,
        index,
        original,
        chained,
        reused,
        options,
    } = inputs;
    use StepIntentOutcome::{NotChecked, ScriptFailed};
    let step = &case.steps[index];
    let Some(intent) = Intent::of(&step.obj, step.traffic_set) else {
        return StepIntentOutcome::NothingAsked;
    };
    let Some(original) = original.filter(|o| matches!(o, JsonValue::Object(_))) else {
        return NotChecked("the case has no original resource to route through".to_owned());
    };
    let failed = |error: &dyn std::fmt::Display| {
        ScriptFailed(format!("the script fails on this step ({error})"))
    };
    let (flavor, ran);
    let result: &Data = match (chained, reused) {
        (Some(chained), _) => {
            flavor = ScriptFlavor::Ingress;
            if let Some(why) = chained.not_called {
                return ScriptFailed(format!("the controller does not run the script: {why}"));
            }
            match &chained.result {
                Ok(result) => result,
                Err(error) => return failed(error),
            }
        }
        (None, Some(reused)) => {
            flavor = ScriptFlavor::Custom;
            reused
        }
        (None, None) => {
            flavor = ScriptFlavor::Custom;
            ran = runner::run_custom(script, &step.obj, options);
            match ran.result(Mode::Production) {
                Ok(result) => result,
                Err(error) => return failed(error),
            }
        }
    };
    let configs = match step_configs(model, flavor, original, &step.obj, intent, result) {
        Ok(configs) => configs,
        Err(why) => return NotChecked(why),
    };
    let mut report = check_step_sharing(
        model,
        &configs.before,
        &configs.after,
        &configs.intent,
        before,
    );
    if configs.no_paths && report.violations.is_empty() {
        return NotChecked(NO_PATHS.to_owned());
    }
    if report.violations.iter().any(|v| v.request.is_some()) {
        // Misrouted: one more run of this step, recording which line wrote what, so that the
        // violations can name the script line (steps that route as asked never pay for it).
        let written = match flavor {
            ScriptFlavor::Custom => provenance::record_custom(script, &step.obj, options),
            ScriptFlavor::Ingress => {
                // The run the controller settled on: the step's obj on the annotations it
                // left (which that run returns unchanged).
                let obj = IngressData {
                    annotations: result.annotations.clone().filter(|map| !map.is_empty()),
                    ..steps::ingress_obj(&step.obj)
                };
                provenance::record_ingress(script, &obj, options)
            }
        };
        if let Some(written) = written {
            locate_writes(&mut report, &written, flavor == ScriptFlavor::Ingress);
        }
    }
    StepIntentOutcome::Checked(report)
}

/// Why an ingress step with an `original` without paths is not checked.
pub const NO_PATHS: &str = "the case's original Ingress has no rules with paths, so no request can be routed through it; give its rules (hosts, paths, backend) to have the step checked";

/// The configurations the intent check routes a step's probes through: the gateway before
/// the rollout and after the step (each with the surroundings the model adds), and what the
/// step asks.
#[derive(Debug, Clone, PartialEq)]
pub struct StepConfigs {
    pub intent: Intent,
    pub before: GatewayConfig,
    pub after: GatewayConfig,
    /// An ingress class whose stable Ingress has no rule with paths: nothing can be routed,
    /// only configuration problems found.
    pub no_paths: bool,
}

/// The [`StepConfigs`] of a step whose script returned `result` (for an ingress class, the
/// canary Ingress's annotations as the controller leaves them): a custom provider's resource
/// is `original` patched as Kruise patches it; an ingress class's configuration is the stable
/// Ingress and the canary Ingress Kruise builds beside it. `Err(why)` when the model cannot
/// read the configuration alone.
pub fn step_configs(
    model: &dyn RoutingModel,
    flavor: ScriptFlavor,
    original: &JsonValue,
    obj: &LuaData,
    intent: Intent,
    result: &Data,
) -> Result<StepConfigs, String> {
    // An Ingress without paths routes nothing: only configuration problems can be found.
    let mut no_paths = false;
    let (before, after) = match flavor {
        ScriptFlavor::Custom => (
            GatewayConfig::Resource(original.clone()),
            GatewayConfig::Resource(patched_resource(original, result)),
        ),
        ScriptFlavor::Ingress => {
            // An `original` that is the canary Ingress stands for the stable one beside it.
            let stable =
                stable_of_canary_ingress(original, &obj.stable_service, &obj.canary_service)
                    .unwrap_or_else(|| original.clone());
            // Without rules, a class that decides on annotations alone is routed through one
            // rule standing for every stable-service path (see
            // `representative_stable_ingress`); any other class routes nothing.
            let stable = if ingress_has_paths(&stable) {
                stable
            } else if model.canary_decision_is_path_independent() {
                representative_stable_ingress(&stable, &obj.stable_service)
            } else {
                no_paths = true;
                stable
            };
            (
                GatewayConfig::Ingress {
                    stable: stable.clone(),
                    canary: None,
                },
                GatewayConfig::Ingress {
                    stable: stable.clone(),
                    canary: Some(canary_ingress(
                        &stable,
                        &obj.stable_service,
                        &obj.canary_service,
                        result.annotations.as_ref(),
                    )),
                },
            )
        }
    };
    let surround = |config| {
        model.surroundings(
            config,
            &before,
            &intent.stable_service,
            &intent.canary_service,
        )
    };
    let before_seen = surround(before.clone())?;
    let after_seen = surround(after)?;
    Ok(StepConfigs {
        intent,
        before: before_seen,
        after: after_seen,
        no_paths,
    })
}
