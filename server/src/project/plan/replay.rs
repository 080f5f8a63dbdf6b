//! The controller's sequence replayed on one real resource, as [`kruise_lua_engine::controller`]
//! models it: for a custom provider the original-spec annotation stored, each step's script
//! run on the stored original (a step with neither traffic nor matches not calling it) and
//! patched onto the object, and the original restored at the end; for an ingress class the
//! canary Ingress created and chained from step to step (`ensure_ingress_routes`), and deleted
//! at the end. Each stage gets its diff, traffic table (intent check) and schema findings.

use std::collections::BTreeMap;

use kruise_lua_engine::ScriptError;
use kruise_lua_engine::controller::{IngressEnsure, ensure_ingress_routes};
use kruise_lua_engine::intent::{
    Intent, NO_PATHS, NOTHING_TO_PROBE, check_step, step_configs, traffic_table,
};
use kruise_lua_engine::luadata::{Data, LuaData};
use kruise_lua_engine::render::to_yaml;
use kruise_lua_engine::routing::{
    RoutingModel, canary_ingress, model_for, stable_of_canary_ingress,
};
use kruise_lua_engine::runner::{Mode, Script, run_custom, run_ingress};
use kruise_lua_engine::schema::{self, metadata, patched_resource};
use kruise_lua_engine::script::{ScriptFlavor, ScriptKind};
use kruise_lua_engine::steps::{NOT_CALLED_NO_TRAFFIC, NOT_CALLED_NOT_CREATED, ingress_obj};
use kruise_lua_engine::testcase::{TestCase, parse_case};
use kruise_lua_engine::value::JsonValue;

use super::case_file::{CaseInputs, case_text, expected_entry, without_server_fields};
use super::manifests::Manifest;
use super::{ResourcePlan, Settings, Stage, StageKind, Traffic, asks, diff, provider, string_map};
use crate::project::schema_check::{self, SchemaSubject};

/// Plans `resource` with the script for `kind` under the (narrowed) Rollout `rollout`.
pub fn plan_resource(
    rollout_kind: &str,
    rollout: &JsonValue,
    resource: &Manifest,
    kind: &ScriptKind,
    settings: &Settings<'_>,
) -> ResourcePlan {
    let flavor = ScriptFlavor::from(kind);
    let mut plan = ResourcePlan {
        resource: resource.describe(),
        place: resource.place.clone(),
        provider: provider(kind),
        script: None,
        shown: match flavor {
            ScriptFlavor::Custom => resource.describe(),
            ScriptFlavor::Ingress => format!("Ingress {}-canary", resource.name()),
        },
        model: None,
        error: None,
        stages: Vec::new(),
        case: None,
    };
    let found = match settings.scripts.find(kind) {
        Ok(found) => found,
        Err(why) => {
            plan.error = Some(why);
            return plan;
        }
    };
    plan.script = Some(found.origin);
    let mut inputs = CaseInputs {
        key: if rollout_kind == "Rollout" {
            "rollout"
        } else {
            "trafficRouting"
        },
        rollout: rollout.clone(),
        original: resource.object.clone(),
        kind: kind.clone(),
        expected: Vec::new(),
        modes_differ: Vec::new(),
    };
    // The steps' objs as Kruise's decoder builds them from the Rollout and the resource.
    let case = match parse_case(&case_text(&inputs, &[], "")) {
        Ok(case) => case,
        Err(error) => {
            plan.error = Some(format!(
                "Kruise cannot read the Rollout with this resource: {}",
                error.message
            ));
            return plan;
        }
    };
    let script = Script::new(found.source);
    let model = model_for(kind);
    plan.model = model.as_ref().map(|m| m.name().to_owned());
    let replay = Replay {
        script: &script,
        case: &case,
        original: &resource.object,
        kind,
        model: model.as_deref(),
        settings,
    };
    let (stages, _) = match flavor {
        ScriptFlavor::Custom => replay.custom(),
        ScriptFlavor::Ingress => replay.ingress(),
    };
    plan.stages = stages;
    if let Some(start) = plan.stages.first_mut() {
        start.warnings.extend(
            case.warnings
                .iter()
                .map(|w| format!("in the Rollout: {}", w.message)),
        );
    }
    // The saved case: the unit test's result per step, on the cleaned original.
    inputs.original = without_server_fields(&resource.object);
    inputs.rollout = without_server_fields(rollout);
    let (expected, modes_differ) = expected_results(&inputs, &script, settings);
    inputs.expected = expected;
    inputs.modes_differ = modes_differ;
    plan.case = Some(inputs);
    plan
}

/// What `expected[i]` says for each step: the script's result as Kruise's unit test gets it
/// (the step's obj on the cleaned original); and the steps (from 1) where `check --mode
/// production` gets another result (the controller's rules: a custom provider's result encoded
/// as the controller encodes it, an ingress class's steps chained).
fn expected_results(
    inputs: &CaseInputs,
    script: &Script,
    settings: &Settings<'_>,
) -> (Vec<Result<JsonValue, String>>, Vec<usize>) {
    let case = match parse_case(&case_text(inputs, &[], "")) {
        Ok(case) => case,
        Err(error) => return (vec![Err(error.message)], Vec::new()),
    };
    let mut expected = Vec::new();
    let mut differ = Vec::new();
    let mut canary: Option<BTreeMap<String, String>> = None;
    for (index, step) in case.steps.iter().enumerate() {
        let (unit, controller) = match &inputs.kind {
            ScriptKind::Custom { .. } => {
                let run = run_custom(script, &step.obj, settings.options);
                (
                    run.result(Mode::Harness).clone(),
                    run.result(Mode::Production).clone(),
                )
            }
            ScriptKind::Ingress { .. } => {
                let obj = ingress_obj(&step.obj);
                let unit = run_ingress(script, &obj, settings.options)
                    .result
                    .map(|annotations| Data {
                        annotations: annotations.filter(|m| !m.is_empty()),
                        ..Data::default()
                    });
                let routes = ensure_ingress_routes(
                    script,
                    canary.as_ref(),
                    step.traffic_set,
                    &obj,
                    settings.options,
                );
                canary = routes.canary;
                let controller = match routes.ensure {
                    IngressEnsure::Failed(error) => Err(error),
                    _ => Ok(Data {
                        annotations: canary.clone().filter(|m| !m.is_empty()),
                        ..Data::default()
                    }),
                };
                (unit, controller)
            }
        };
        let same = match (&unit, &controller) {
            (Ok(unit), Ok(controller)) => {
                unit.to_canonical_json() == controller.to_canonical_json()
            }
            _ => false,
        };
        if !same {
            differ.push(index + 1);
        }
        expected.push(
            unit.map(|data| expected_entry(&inputs.original, &inputs.kind, &data))
                .map_err(|error| error_text(&error)),
        );
    }
    (expected, differ)
}

/// A script error as a stage shows it: `line 12: runtime error: …`.
fn error_text(error: &ScriptError) -> String {
    let line = error
        .line
        .map(|l| format!("line {l}: "))
        .unwrap_or_default();
    format!("{line}{} error: {}", error.kind, error.message)
}

struct Replay<'a> {
    script: &'a Script,
    case: &'a TestCase,
    original: &'a JsonValue,
    kind: &'a ScriptKind,
    model: Option<&'a dyn RoutingModel>,
    settings: &'a Settings<'a>,
}

/// The YAML a stage shows of an object (`None`: it does not exist).
fn shown(object: Option<&JsonValue>) -> String {
    object.map(to_yaml).unwrap_or_default()
}

impl Replay<'_> {
    /// The stages of a custom provider, and the controller's result per step (`None`: none).
    fn custom(&self) -> (Vec<Stage>, Vec<Option<Data>>) {
        let ScriptKind::Custom { group, kind } = self.kind else {
            return (Vec::new(), Vec::new());
        };
        let original_data = Data {
            spec: self.original.get("spec").cloned(),
            labels: Some(string_map(self.original, "labels")).filter(|m| !m.is_empty()),
            annotations: Some(string_map(self.original, "annotations")).filter(|m| !m.is_empty()),
        };
        let mut stages = Vec::new();
        let mut results = Vec::new();
        let mut previous_yaml = shown(Some(self.original));
        let mut previous = self.original.clone();
        // The rollout starts: Kruise stores the original in an annotation (an Update).
        let started = patched_resource(self.original, &original_data);
        let mut start = Stage::new(StageKind::Start, "the rollout starts".to_owned());
        self.validate(&mut start, &started, &previous, group, kind);
        self.set_diff(&mut start, &mut previous_yaml, Some(&started));
        stages.push(start);
        previous = started;
        for (index, step) in self.case.steps.iter().enumerate() {
            let mut stage = Stage::new(
                StageKind::Step(index + 1),
                asks(&step.obj, step.traffic_set),
            );
            if !step.reaches_provider() {
                stage.not_called = Some(NOT_CALLED_NO_TRAFFIC.to_owned());
                stage.traffic = Traffic::NothingAsked;
                results.push(
                    run_custom(self.script, &step.obj, self.settings.options)
                        .result(Mode::Production)
                        .clone()
                        .ok(),
                );
                stages.push(stage);
                continue;
            }
            let run = run_custom(self.script, &step.obj, self.settings.options);
            stage.prints = run.prints.clone();
            match run.result(Mode::Production) {
                Ok(data) => {
                    let now = patched_resource(self.original, data);
                    self.validate(&mut stage, &now, &previous, group, kind);
                    self.traffic(&mut stage, &step.obj, step.traffic_set, data);
                    self.set_diff(&mut stage, &mut previous_yaml, Some(&now));
                    previous = now;
                    results.push(Some(data.clone()));
                }
                Err(error) => {
                    stage.error = Some(error_text(error));
                    stage.traffic = Traffic::Unavailable(
                        "the script fails on this step, so the controller keeps retrying it and the resource stays as the previous stage left it".to_owned(),
                    );
                    results.push(None);
                }
            }
            stages.push(stage);
        }
        let mut restore = Stage::new(StageKind::Restore, "the rollout ends".to_owned());
        self.validate(&mut restore, self.original, &previous, group, kind);
        self.set_diff(&mut restore, &mut previous_yaml, Some(self.original));
        stages.push(restore);
        (stages, results)
    }

    /// The stages of an ingress class: the canary Ingress Kruise creates beside the user's,
    /// chained from step to step; and the controller's result per step.
    fn ingress(&self) -> (Vec<Stage>, Vec<Option<Data>>) {
        let mut stages = Vec::new();
        let mut results = Vec::new();
        let (stable_service, canary_service) = self
            .case
            .steps
            .first()
            .map(|s| (s.obj.stable_service.clone(), s.obj.canary_service.clone()))
            .unwrap_or_default();
        let stable = stable_of_canary_ingress(self.original, &stable_service, &canary_service)
            .unwrap_or_else(|| self.original.clone());
        let mut previous_yaml = String::new();
        let mut start = Stage::new(StageKind::Start, "the rollout starts".to_owned());
        start.exists = false;
        start.warnings.push(
            "the canary Ingress does not exist yet: Kruise creates it at the first step with traffic or matches".to_owned(),
        );
        stages.push(start);
        let mut canary: Option<BTreeMap<String, String>> = None;
        for (index, step) in self.case.steps.iter().enumerate() {
            let mut stage = Stage::new(
                StageKind::Step(index + 1),
                asks(&step.obj, step.traffic_set),
            );
            let routes = ensure_ingress_routes(
                self.script,
                canary.as_ref(),
                step.traffic_set,
                &ingress_obj(&step.obj),
                self.settings.options,
            );
            stage.prints = routes.prints;
            canary = routes.canary;
            let as_data = |canary: &Option<BTreeMap<String, String>>| Data {
                annotations: canary.clone().filter(|m| !m.is_empty()),
                ..Data::default()
            };
            match routes.ensure {
                IngressEnsure::Skipped => {
                    stage.not_called = Some(NOT_CALLED_NO_TRAFFIC.to_owned());
                    stage.traffic = Traffic::NothingAsked;
                }
                IngressEnsure::NotCreated => {
                    stage.not_called = Some(NOT_CALLED_NOT_CREATED.to_owned());
                    stage.traffic = Traffic::NothingAsked;
                }
                IngressEnsure::Failed(error) => {
                    stage.error = Some(error_text(&error));
                    stage.traffic = Traffic::Unavailable(
                        "the script fails on this step, so the controller keeps retrying it and the canary Ingress stays as the previous stage left it".to_owned(),
                    );
                }
                IngressEnsure::Unsettled { runs, changing } => {
                    stage.warnings.push(format!(
                        "not idempotent: run on its own output, the script changes the annotations again every time ({runs} runs; changing: {}), so the controller patches the canary Ingress on every reconcile and never finishes this step",
                        changing.join(", ")
                    ));
                }
                IngressEnsure::Settled { .. } => {}
            }
            let failed = stage.error.is_some();
            results.push((!failed).then(|| as_data(&canary)));
            if !failed && stage.not_called.is_none() {
                let data = as_data(&canary);
                let mut findings = Vec::new();
                if let Some(annotations) = &data.annotations {
                    metadata::validate_annotations(annotations, &mut findings);
                }
                stage.schema = findings;
                self.traffic(&mut stage, &step.obj, step.traffic_set, &data);
            }
            let object = canary.as_ref().map(|annotations| {
                canary_ingress(&stable, &stable_service, &canary_service, Some(annotations))
            });
            stage.exists = object.is_some();
            self.set_diff(&mut stage, &mut previous_yaml, object.as_ref());
            stages.push(stage);
        }
        let mut restore = Stage::new(StageKind::Restore, "the rollout ends".to_owned());
        restore.exists = false;
        restore.warnings.push(
            "Kruise deletes the canary Ingress; the user's Ingress was never changed".to_owned(),
        );
        self.set_diff(&mut restore, &mut previous_yaml, None);
        stages.push(restore);
        (stages, results)
    }

    fn set_diff(&self, stage: &mut Stage, previous_yaml: &mut String, now: Option<&JsonValue>) {
        let now_yaml = shown(now);
        let (lines, more) = diff::diff(previous_yaml, &now_yaml);
        stage.diff = lines;
        stage.diff_more = more;
        *previous_yaml = now_yaml;
    }

    /// Schema findings of writing `now` over `before` (Kruise writes with Update).
    fn validate(
        &self,
        stage: &mut Stage,
        now: &JsonValue,
        before: &JsonValue,
        group: &str,
        kind: &str,
    ) {
        let Some(schemas) = self.settings.schemas else {
            stage.schema_unchecked = Some("schema validation is off (--no-schema)".to_owned());
            return;
        };
        let validation = schema::validate_update_as(&schemas.schemas, group, kind, now, before);
        let subject = SchemaSubject::Resource {
            group: group.to_owned(),
            kind: kind.to_owned(),
        };
        stage.schema_unchecked =
            schema_check::not_checked(&subject, &schemas.schemas, &schemas.problems)
                .map(|note| note.reason);
        stage.schema = validation.findings;
    }

    /// The traffic table and intent findings of a step whose script returned `result`.
    fn traffic(&self, stage: &mut Stage, obj: &LuaData, traffic_set: bool, result: &Data) {
        let Some(model) = self.model else {
            stage.traffic = Traffic::Unavailable(format!(
                "the engine has no routing model for {}",
                provider(self.kind)
            ));
            return;
        };
        let Some(asked) = Intent::of(obj, traffic_set) else {
            stage.traffic = Traffic::NothingAsked;
            return;
        };
        let flavor = ScriptFlavor::from(self.kind);
        let configs = match step_configs(model, flavor, self.original, obj, asked, result) {
            Ok(configs) => configs,
            Err(why) => {
                stage.traffic = Traffic::Unavailable(why);
                return;
            }
        };
        let report = check_step(model, &configs.before, &configs.after, &configs.intent);
        // What `check` says of a step only partly verified, said here the same way.
        let unverified = report.unverified();
        stage.more_violations = report.more;
        stage.violations = report.violations.into_iter().map(|v| v.message).collect();
        if configs.no_paths && stage.violations.is_empty() {
            stage.traffic = Traffic::Unavailable(NO_PATHS.replace("the case's original", "the"));
            return;
        }
        let table = traffic_table(model, &configs.before, &configs.after, &configs.intent);
        if table.probes == 0 {
            stage.traffic =
                Traffic::Unavailable(unverified.unwrap_or_else(|| NOTHING_TO_PROBE.to_owned()));
            return;
        }
        stage.warnings.extend(unverified);
        stage.traffic = Traffic::Table(table);
    }
}
