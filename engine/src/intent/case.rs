//! The intent check over a whole test case: runs each step the controller's way (custom
//! providers on the original; ingress classes chained, each on the canary Ingress the earlier
//! steps left) and checks the configuration it leaves.

use crate::routing::{GatewayConfig, RoutingModel, canary_ingress, model_for};
use crate::runner::{self, Mode, RunOptions, Script};
use crate::schema::patched_resource;
use crate::script::ScriptFlavor;
use crate::script::ScriptKind;
use crate::steps;
use crate::testcase::TestCase;
use crate::value::JsonValue;

use super::{Intent, StepReport, check_step};

/// The intent check of one step.
#[derive(Debug, Clone, PartialEq)]
pub struct StepCheck {
    pub index: usize,
    pub outcome: StepIntentOutcome,
}

#[derive(Debug, Clone, PartialEq)]
pub enum StepIntentOutcome {
    Checked(StepReport),
    /// Why the step was not checked: it never reaches the script, or the script fails (the
    /// check reports that failure), or the case has no `original`.
    NotChecked(String),
}

/// Checks every step of `case` for a script of `kind`; `None` when the engine has no routing
/// model for it. A custom provider's model is the one for the case's `original` resource
/// (`apiVersion` group and `kind`, as Kruise picks the script from a customNetworkRef), else
/// the one for the script's folder (so scripts kept outside a `<group>/<Kind>` tree, such
/// as regression fixtures, are checked too).
pub fn check_case(
    kind: &ScriptKind,
    script: &Script,
    case: &TestCase,
    options: &RunOptions,
) -> Option<Vec<StepCheck>> {
    let flavor = ScriptFlavor::from(kind);
    let original = case.root.get("original").map(|node| node.to_json());
    let resource_kind = original.as_ref().and_then(|object| {
        let group = object.get("apiVersion")?.as_str()?.split_once('/')?.0;
        Some(ScriptKind::Custom {
            group: group.to_owned(),
            kind: object.get("kind")?.as_str()?.to_owned(),
        })
    });
    let model = match (flavor, resource_kind) {
        (ScriptFlavor::Custom, Some(resource_kind)) => {
            model_for(&resource_kind).or_else(|| model_for(kind))
        }
        _ => model_for(kind),
    }?;
    Some(check_steps(
        model.as_ref(),
        flavor,
        script,
        case,
        original.as_ref(),
        options,
    ))
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
    check_steps(model, flavor, script, case, original.as_ref(), options)
}

/// Every step of `case`, with its `original` already read.
fn check_steps(
    model: &dyn RoutingModel,
    flavor: ScriptFlavor,
    script: &Script,
    case: &TestCase,
    original: Option<&JsonValue>,
    options: &RunOptions,
) -> Vec<StepCheck> {
    (0..case.steps.len())
        .map(|index| StepCheck {
            index,
            outcome: check_one(model, flavor, script, case, index, original, options),
        })
        .collect()
}

fn check_one(
    model: &dyn RoutingModel,
    flavor: ScriptFlavor,
    script: &Script,
    case: &TestCase,
    index: usize,
    original: Option<&JsonValue>,
    options: &RunOptions,
) -> StepIntentOutcome {
    use StepIntentOutcome::NotChecked;
    let step = &case.steps[index];
    let Some(intent) = Intent::of(&step.obj, step.traffic_set) else {
        return NotChecked(
            "the step has neither traffic nor matches, so the controller never runs the script for it"
                .to_owned(),
        );
    };
    let Some(original) = original.filter(|o| matches!(o, JsonValue::Object(_))) else {
        return NotChecked("the case has no original resource to route through".to_owned());
    };
    let failed = |error: &dyn std::fmt::Display| {
        NotChecked(format!("the script fails on this step ({error})"))
    };
    let (before, after) = match flavor {
        ScriptFlavor::Custom => {
            let run = runner::run_custom(script, &step.obj, options);
            let result = match run.result(Mode::Production) {
                Ok(result) => result,
                Err(error) => return failed(error),
            };
            (
                GatewayConfig::Resource(original.clone()),
                GatewayConfig::Resource(patched_resource(original, result)),
            )
        }
        ScriptFlavor::Ingress => {
            let chained = steps::controller_ingress_step(script, case, index, options);
            if let Some(why) = chained.not_called {
                return NotChecked(format!("the controller does not run the script: {why}"));
            }
            let result = match &chained.result {
                Ok(result) => result,
                Err(error) => return failed(error),
            };
            (
                GatewayConfig::Ingress {
                    stable: original.clone(),
                    canary: None,
                },
                GatewayConfig::Ingress {
                    stable: original.clone(),
                    canary: Some(canary_ingress(
                        original,
                        &step.obj.stable_service,
                        &step.obj.canary_service,
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
    match (surround(before.clone()), surround(after.clone())) {
        (Ok(before), Ok(after)) => {
            StepIntentOutcome::Checked(check_step(model, &before, &after, &intent))
        }
        (Err(why), _) | (_, Err(why)) => NotChecked(why),
    }
}
