//! The intent check over a whole test case: runs each step the controller's way (custom
//! providers on the original; ingress classes chained, each on the canary Ingress the earlier
//! steps left) and checks the configuration it leaves.

use std::cell::OnceCell;
use std::sync::Arc;

use crate::luadata::{Data, IngressData, LuaData};
use crate::routing::{
    GatewayConfig, RoutingModel, bare_canary_ingress, model_for, representative_stable_ingress,
    stable_of_canary_ingress, with_canary_annotations,
};
use crate::runner::{self, Mode, RunOptions, Script, provenance};
use crate::schema::{OriginalResource, original_spec_annotation, patched_resource_storing};
use crate::script::ScriptFlavor;
use crate::script::ScriptKind;
use crate::steps;
use crate::testcase::TestCase;
use crate::value::JsonValue;
use crate::yaml::YamlNode;

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
    /// not checked, or checked only in part ([`StepReport::unverified`]).
    pub fn unverified(&self) -> Option<String> {
        match self {
            StepIntentOutcome::NotChecked(why) => Some(why.clone()),
            StepIntentOutcome::Checked(report) => report.unverified(),
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
    check_case_reusing(kind, script, case, options, StepRuns::None)
}

/// The case's `original` node: the intent check routes through it (converted to JSON), and a
/// caller that hands [`StepRuns::Custom`] over makes its resources from this node.
pub fn case_original(case: &TestCase) -> Option<&YamlNode> {
    case.root.get("original")
}

/// What the caller's own run of a case's steps left, for the intent check to reuse instead of
/// running the script again (`check` passes its step outcomes, so the script does not run
/// twice).
#[derive(Debug, Clone)]
pub enum StepRuns<'a> {
    /// Nothing: the check runs the steps itself.
    None,
    /// A custom-provider script: the case's `original` ([`case_original`]) as the caller
    /// read it, and `resources[i]`, when present, the resource step `i` leaves under the
    /// controller's rules (its result patched onto `original`: [`OriginalResource::patched`]);
    /// steps without one are run here. (Schema validation patches the same results onto the
    /// same original: the caller makes each resource once for both.)
    Custom {
        original: &'a OriginalResource,
        resources: Vec<Option<JsonValue>>,
    },
    /// An ingress-class script: every step of the case as the controller runs it, chained
    /// ([`steps::controller_ingress_results`]; used only when it has one per step).
    Ingress(&'a [steps::ControllerIngressResult]),
}

/// [`check_case`] reusing what the caller's own run of the steps left (see [`StepRuns`]).
pub fn check_case_reusing(
    kind: &ScriptKind,
    script: &Script,
    case: &TestCase,
    options: &RunOptions,
    results: StepRuns,
) -> Vec<StepCheck> {
    let flavor = ScriptFlavor::from(kind);
    let converted;
    let original = match &results {
        StepRuns::Custom { original, .. } => Some(original.object()),
        _ => {
            converted = case_original(case).map(YamlNode::to_json);
            converted.as_ref()
        }
    };
    let resource_kind = original.and_then(|object| {
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
        original,
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
    let original = case_original(case).map(YamlNode::to_json);
    check_steps(
        model,
        flavor,
        script,
        case,
        original.as_ref(),
        options,
        StepRuns::None,
    )
}

/// Every step of `case`, with its `original` already read.
fn check_steps(
    model: &dyn RoutingModel,
    flavor: ScriptFlavor,
    script: &Script,
    case: &TestCase,
    original: Option<&JsonValue>,
    options: &RunOptions,
    results: StepRuns,
) -> Vec<StepCheck> {
    // The steps of a case share most patterns: compiled (and sampled) once for the case.
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
    results: StepRuns,
) -> Vec<StepCheck> {
    // Ingress steps chain (each runs on the canary Ingress the earlier ones left): one pass
    // for the whole case, unless the caller's run made it.
    let chain = (flavor == ScriptFlavor::Ingress).then(|| Chain {
        given: match results {
            StepRuns::Ingress(all) if all.len() == case.steps.len() => Some(all),
            _ => None,
        },
        ran: OnceCell::new(),
        script,
        case,
        options,
    });
    let (stored_spec, mut reused) = match results {
        StepRuns::Custom {
            original,
            resources,
        } => (Some(original.stored_spec()), resources.into_iter()),
        _ => (None, Vec::new().into_iter()),
    };
    // The steps route through the same original configuration: what it does is shared, and
    // so are the tables the models derive from it (`routing::memo`, for the whole case). The
    // memo keys tables by address, so every configuration a step routes through is kept, at
    // an address of its own, until the case is done (`configs`): no later one can stand at an
    // address an earlier one had.
    crate::routing::memo::with_derived_memo(|| {
        let mut before = BeforeRouting::default();
        let mut configs = CaseConfigs::default();
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
                        chained: chain.as_ref(),
                        reused: reused.next().flatten(),
                        stored_spec,
                        options,
                    },
                    &mut configs,
                    &mut before,
                ),
            })
            .collect()
    })
}

/// An ingress case's steps as the controller runs them: the caller's, else replayed in one
/// pass when a step first needs them (a case none of whose steps asks anything of the routing
/// never runs the script here).
struct Chain<'a> {
    given: Option<&'a [steps::ControllerIngressResult]>,
    ran: OnceCell<Vec<steps::ControllerIngressResult>>,
    script: &'a Script,
    case: &'a TestCase,
    options: &'a RunOptions,
}

impl Chain<'_> {
    fn step(&self, index: usize) -> &steps::ControllerIngressResult {
        let all = match self.given {
            Some(all) => all,
            None => self.ran.get_or_init(|| {
                steps::controller_ingress_results(self.script, self.case, self.options)
            }),
        };
        &all[index]
    }
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

/// What [`check_one`] checks: step `index`; `chained` holds the controller results for an
/// ingress script (`None` for a custom one, whose resource is `reused` from the caller's run,
/// or run and made here: `stored_spec` is the original's original-spec annotation when the
/// caller made it).
struct StepInputs<'a> {
    model: &'a dyn RoutingModel,
    script: &'a Script,
    case: &'a TestCase,
    index: usize,
    original: Option<&'a JsonValue>,
    chained: Option<&'a Chain<'a>>,
    reused: Option<JsonValue>,
    stored_spec: Option<&'a str>,
    options: &'a RunOptions,
}

/// One step, sharing the original configuration, and what it does, with the case's other
/// steps. The configuration the step leaves is kept in `configs` (see [`check_steps_compiled`]).
fn check_one(
    inputs: StepInputs,
    configs: &mut CaseConfigs,
    before: &mut BeforeRouting,
) -> StepIntentOutcome {
    let StepInputs {
        model,
        script,
        case,
        index,
        original,
        chained,
        reused,
        stored_spec,
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
    let intent = intent.in_namespace_of(original);
    let failed = |error: &dyn std::fmt::Display| {
        ScriptFailed(format!("the script fails on this step ({error})"))
    };
    // `ingress_result`: an ingress step's, whose provenance run starts from the annotations
    // it left.
    let flavor = if chained.is_some() {
        ScriptFlavor::Ingress
    } else {
        ScriptFlavor::Custom
    };
    let (ran, ingress_result);
    let left = match (chained, reused) {
        (Some(chain), _) => {
            let chained = chain.step(index);
            if let Some(why) = chained.not_called {
                return ScriptFailed(format!("the controller does not run the script: {why}"));
            }
            match &chained.result {
                Ok(result) => {
                    ingress_result = Some(result);
                    StepLeft::Result(result)
                }
                Err(error) => return failed(error),
            }
        }
        (None, Some(reused)) => {
            ingress_result = None;
            StepLeft::Resource(reused)
        }
        (None, None) => {
            ingress_result = None;
            ran = runner::run_custom(script, &step.obj, options);
            match ran.result(Mode::Production) {
                Ok(result) => StepLeft::Result(result),
                Err(error) => return failed(error),
            }
        }
    };
    let base = configs.of(model, flavor, original, &step.obj, stored_spec);
    let before_seen = match base.seen() {
        Ok(before) => before,
        Err(why) => return NotChecked(why.to_owned()),
    };
    let after = match after_config(model, base, original, &step.obj, left) {
        Ok(after) => Box::new(after),
        Err(why) => return NotChecked(why),
    };
    let mut report = check_step_sharing(model, before_seen, &after, &intent, before);
    let no_paths = base.no_paths;
    configs.after.push(after);
    if no_paths && report.violations.is_empty() {
        return NotChecked(NO_PATHS.to_owned());
    }
    if report.violations.iter().any(|v| v.request.is_some()) {
        // Misrouted: one more run of this step, recording which line wrote what, so that the
        // violations can name the script line (steps that route as asked never pay for it).
        let written = match ingress_result {
            None => provenance::record_custom(script, &step.obj, options),
            Some(result) => {
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
    let base = BeforeConfig::of(model, flavor, original, obj, None);
    let before = base.seen().map_err(str::to_owned)?.clone();
    let after = after_config(model, &base, original, obj, StepLeft::Result(result))?;
    Ok(StepConfigs {
        intent: intent.in_namespace_of(original),
        before,
        after,
        no_paths: base.no_paths,
    })
}

/// What a step's configurations take from the case rather than from the step: the
/// configuration before the rollout, made for a step's stable and canary services.
struct BeforeConfig {
    /// The stable and canary services it was made for.
    services: (String, String),
    flavor: ScriptFlavor,
    /// The configuration before the rollout, as the script's resource has it (what
    /// [`RoutingModel::surroundings`] is given as `original`).
    before: GatewayConfig,
    /// The same as the gateway sees it ([`RoutingModel::surroundings`]); `Ok(None)` when that
    /// is [`Self::before`] itself (no copy is kept). See [`Self::seen`].
    before_seen: Result<Option<GatewayConfig>, String>,
    /// What each step's configuration is built from besides the step's result.
    step_base: StepBase,
    /// See [`StepConfigs::no_paths`].
    no_paths: bool,
}

impl BeforeConfig {
    /// The configuration before the rollout as the gateway sees it, or why the model cannot
    /// read it alone.
    fn seen(&self) -> Result<&GatewayConfig, &str> {
        match &self.before_seen {
            Ok(Some(seen)) => Ok(seen),
            Ok(None) => Ok(&self.before),
            Err(why) => Err(why),
        }
    }

    /// `stored_spec`: the original's original-spec annotation, when the caller made it.
    fn of(
        model: &dyn RoutingModel,
        flavor: ScriptFlavor,
        original: &JsonValue,
        obj: &LuaData,
        stored_spec: Option<&str>,
    ) -> BeforeConfig {
        // An Ingress without paths routes nothing: only configuration problems can be found.
        let mut no_paths = false;
        let (before, step_base) = match flavor {
            ScriptFlavor::Custom => (
                GatewayConfig::Resource(original.clone()),
                StepBase::Resource {
                    stored_spec: stored_spec
                        .map_or_else(|| original_spec_annotation(original), str::to_owned),
                },
            ),
            ScriptFlavor::Ingress => {
                // An `original` that is the canary Ingress stands for the stable one beside it.
                let stable =
                    stable_of_canary_ingress(original, &obj.stable_service, &obj.canary_service)
                        .unwrap_or_else(|| original.clone());
                // Without rules, a class that decides on annotations alone is routed through
                // one rule standing for every stable-service path (see
                // `representative_stable_ingress`); any other class routes nothing.
                let stable = if ingress_has_paths(&stable) {
                    stable
                } else if model.canary_decision_is_path_independent() {
                    representative_stable_ingress(&stable, &obj.stable_service)
                } else {
                    no_paths = true;
                    stable
                };
                let canary = bare_canary_ingress(&stable, &obj.stable_service, &obj.canary_service);
                let stable = Arc::new(stable);
                let before = GatewayConfig::Ingress {
                    stable: stable.clone(),
                    canary: None,
                };
                (before, StepBase::Ingress { stable, canary })
            }
        };
        let before_seen =
            model.surroundings(&before, &before, &obj.stable_service, &obj.canary_service);
        BeforeConfig {
            services: (obj.stable_service.clone(), obj.canary_service.clone()),
            flavor,
            before,
            before_seen,
            step_base,
            no_paths,
        }
    }
}

/// What [`after_config`] builds a step's configuration from besides the step's result.
enum StepBase {
    /// A custom provider: the original-spec annotation every step's resource carries
    /// ([`original_spec_annotation`]: made once per case rather than once per step, as it
    /// serialises the original's spec).
    Resource { stored_spec: String },
    /// An ingress class: the stable Ingress the canary Ingress is built beside, and that
    /// canary Ingress without annotations (made once per case: each step's differs from it
    /// only in the annotations its script leaves).
    Ingress {
        stable: Arc<JsonValue>,
        canary: JsonValue,
    },
}

/// The configurations a case's steps route through, each at an address of its own (a box),
/// kept until the case is done (see [`check_steps_compiled`]).
#[derive(Default)]
#[allow(
    clippy::vec_box,
    reason = "each configuration must keep its address while the vector grows (the memo keys by it)"
)]
struct CaseConfigs {
    /// The [`BeforeConfig`] of the steps, made again only for a step with other services: the
    /// last is the current one.
    before: Vec<Box<BeforeConfig>>,
    /// The configuration each step leaves.
    after: Vec<Box<GatewayConfig>>,
}

impl CaseConfigs {
    fn of(
        &mut self,
        model: &dyn RoutingModel,
        flavor: ScriptFlavor,
        original: &JsonValue,
        obj: &LuaData,
        stored_spec: Option<&str>,
    ) -> &BeforeConfig {
        let same = self.before.last().is_some_and(|known| {
            known.flavor == flavor
                && known.services.0 == obj.stable_service
                && known.services.1 == obj.canary_service
        });
        if !same {
            let made = Box::new(BeforeConfig::of(model, flavor, original, obj, stored_spec));
            self.before.push(made);
        }
        self.before.last().expect("made above")
    }
}

/// What a step left, as the intent check has it.
enum StepLeft<'a> {
    /// The script's result: a custom provider's (patched onto the original here), an ingress
    /// class's canary Ingress annotations.
    Result(&'a Data),
    /// A custom provider's resource, already patched by the caller ([`StepRuns::Custom`]).
    Resource(JsonValue),
}

/// The configuration after a step that left `left`, as the gateway sees it (`Err(why)` when
/// the model cannot read it alone).
fn after_config(
    model: &dyn RoutingModel,
    base: &BeforeConfig,
    original: &JsonValue,
    obj: &LuaData,
    left: StepLeft,
) -> Result<GatewayConfig, String> {
    let after = match (&base.step_base, left) {
        (_, StepLeft::Resource(resource)) => GatewayConfig::Resource(resource),
        (StepBase::Resource { stored_spec }, StepLeft::Result(result)) => {
            GatewayConfig::Resource(patched_resource_storing(original, stored_spec, result))
        }
        (StepBase::Ingress { stable, canary }, StepLeft::Result(result)) => {
            GatewayConfig::Ingress {
                stable: stable.clone(),
                canary: Some(with_canary_annotations(
                    canary.clone(),
                    result.annotations.as_ref(),
                )),
            }
        }
    };
    let seen = model.surroundings(
        &after,
        &base.before,
        &obj.stable_service,
        &obj.canary_service,
    )?;
    Ok(seen.unwrap_or(after))
}
