//! A case's step as Kruise's test harness or its controller runs it: the step's obj through
//! the script once (harness), or as the controller would (`production`: the canary Ingress the
//! earlier steps left, a step the controller does not run the script for), then the verdict
//! against `expected[i]` with structural and unified diffs (`diff`).

use std::borrow::Cow;
use std::sync::Arc;

use crate::error::{ErrorKind, ScriptError};
use crate::luadata::{Data, IngressData, LuaData};
use crate::path_text::format_path;
use crate::runner::{self, Mode, Obj, Results, RunOptions, Script};
use crate::script::ScriptFlavor;
use crate::testcase::{CaseError, CaseWarning, TestCase};
use crate::value::JsonValue;
use crate::vm::hooks::RunObserver;
use crate::yaml::{PathSeg, Span};

mod diff;
mod production;
pub use diff::{PathDiff, diff_canonical, short_value};
use diff::{diff_values, span_in_expected, unified_yaml_diff};
pub use production::{
    ControllerIngressResult, ControllerIngressStep, NOT_CALLED_NO_TRAFFIC, NOT_CALLED_NOT_CREATED,
    controller_ingress_results, controller_ingress_step, ingress_step_obj,
};

/// A case's step to run: step `index` (0-based) of `case` through `script`, whose flavor
/// decides the obj it gets, under `mode`'s rules.
#[derive(Debug, Clone, Copy)]
pub struct StepToRun<'a> {
    pub script: &'a Script,
    pub flavor: ScriptFlavor,
    pub case: &'a TestCase,
    pub index: usize,
    pub mode: Mode,
    pub options: &'a RunOptions,
}

/// Verdict of one step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepStatus {
    Pass,
    Fail,
    Error,
}

/// One differing JSON path between expected and actual.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldDiff {
    /// Path from the result root, e.g. `spec.http[0].route[1].weight`.
    pub path: Vec<PathSeg>,
    /// `None` where the path is absent on that side.
    pub expected: Option<JsonValue>,
    pub actual: Option<JsonValue>,
    /// Where the path sits in the case's `expected[i]` node, when it exists there.
    pub span: Option<Span>,
}

/// The outcome of one step of a case.
#[derive(Debug, Clone, PartialEq)]
pub struct StepOutcome {
    pub index: usize,
    pub status: StepStatus,
    /// The obj the script received (the case step's own, shared).
    pub obj: Arc<LuaData>,
    /// Canonical JSON of the actual result under the chosen mode, when there is one.
    pub actual: Option<String>,
    /// Canonical JSON of `expected[index]`, when it exists.
    pub expected: Option<String>,
    pub error: Option<ScriptError>,
    /// Every differing path (empty unless `status` is `Fail`).
    pub diff: Vec<FieldDiff>,
    /// Unified diff of expected vs actual rendered as YAML (empty unless `Fail`).
    pub unified_diff: String,
    /// Step-level warnings, e.g. the controller's result differing from the harness's.
    pub warnings: Vec<String>,
    /// Production mode: why the controller does not run the script for this step (e.g.
    /// [`NOT_CALLED_NO_TRAFFIC`]); `None` when it does, and always in harness mode. For an
    /// ingress script the verdict then compares what the canary Ingress keeps; for a custom
    /// provider it stays the script's result (the conformance vectors' production verdicts),
    /// and a warning says what the resource keeps.
    pub not_called: Option<&'static str>,
    pub prints: Vec<String>,
    /// The `expected[index]` node's span, and the step's span in the case.
    pub expected_span: Option<Span>,
    pub step_span: Option<Span>,
}

/// The outcome of a whole case: a case-level error (then `steps` is empty), or one
/// outcome per step (every step runs even after one fails).
#[derive(Debug, Clone, PartialEq)]
pub struct CaseOutcome {
    pub case_error: Option<CaseError>,
    pub warnings: Vec<CaseWarning>,
    pub steps: Vec<StepOutcome>,
}

/// Runs every step of `case` through `script` and compares with `expected` under `mode`.
pub fn run_case(script: &Script, case: &TestCase, mode: Mode, options: &RunOptions) -> CaseOutcome {
    let steps = (0..case.steps.len())
        .map(|index| {
            run_case_step(StepToRun {
                script,
                flavor: ScriptFlavor::Custom,
                case,
                index,
                mode,
                options,
            })
        })
        .collect();
    CaseOutcome {
        case_error: None,
        warnings: case.warnings.clone(),
        steps,
    }
}

/// The obj an ingress-class script gets for a case step.
pub fn ingress_obj(obj: &LuaData) -> IngressData {
    IngressData {
        annotations: obj.data.annotations.clone(),
        weight: obj.canary_weight.to_string(),
        matches: obj.matches.clone(),
        canary_service: obj.canary_service.clone(),
        request_header_modifier: obj.request_header_modifier.clone(),
    }
}

/// Runs step `index` of `case` (so callers can spread the steps of a case over threads).
///
/// In production mode the step is run as the controller runs it: an ingress-class script on
/// the canary Ingress as the earlier steps left them (this replays those steps), and a step
/// with neither traffic nor matches is marked [`StepOutcome::not_called`] (see `production`).
pub fn run_case_step(step: StepToRun<'_>) -> StepOutcome {
    run_step_with(step, None)
}

/// [`run_case_step`] with `observer` (a debugger) told of the script's run.
pub(crate) fn run_case_step_observed(
    step: StepToRun<'_>,
    observer: &mut dyn RunObserver,
) -> StepOutcome {
    let StepToRun {
        script,
        flavor,
        case,
        index,
        mode,
        options,
    } = step;
    if flavor == ScriptFlavor::Ingress && mode == Mode::Production {
        // The debugger follows the controller's first run of the script for this step.
        match production::ingress_step_obj(script, case, index, options) {
            Ok(Some(obj)) => {
                runner::execute_ingress(script, &obj.to_json(), options, Some(observer));
            }
            Ok(None) => observer.notice(
                "the controller does not run the script for this step: an earlier step failed while the canary Ingress was created".to_owned(),
            ),
            Err(reason) => observer.notice(format!(
                "the controller does not run the script for this step: {reason}"
            )),
        }
        return run_step_with(step, None);
    }
    run_step_with(step, Some(observer))
}

fn run_step_with(step: StepToRun<'_>, observer: Option<&mut dyn RunObserver>) -> StepOutcome {
    let StepToRun {
        script,
        flavor,
        case,
        index,
        mode,
        options,
    } = step;
    let step = &case.steps[index];
    let mut not_called = None;
    let mut controller_warnings = Vec::new();
    let (prints, results) = match (flavor, mode) {
        (ScriptFlavor::Custom, _) => {
            runner::execute_custom(script, Obj::Data(&step.obj), options, observer)
        }
        (ScriptFlavor::Ingress, Mode::Harness) => {
            let run = runner::execute_ingress(
                script,
                &ingress_obj(&step.obj).to_json(),
                options,
                observer,
            );
            let result = run.result.map(|annotations| Data {
                annotations,
                ..Data::default()
            });
            (run.prints, Results::Same(result))
        }
        // The controller runs the script on the canary Ingress the earlier steps left.
        (ScriptFlavor::Ingress, Mode::Production) => {
            let chained = production::controller_ingress_step(script, case, index, options);
            not_called = chained.not_called;
            controller_warnings = chained.warnings;
            (chained.prints, Results::Same(chained.result))
        }
    };
    // Ingress scripts are compared on annotations only.
    let expected_entry = case.expected.get(index).map(|entry| match flavor {
        ScriptFlavor::Custom => (Cow::Borrowed(&entry.data), entry),
        ScriptFlavor::Ingress => {
            let annotations = Data {
                annotations: entry.data.annotations.clone(),
                ..Data::default()
            };
            (Cow::Owned(annotations), entry)
        }
    });
    let mut warnings = match &results {
        Results::Same(_) | Results::Encoded { .. } => Vec::new(),
        Results::Split {
            harness,
            production,
        } => mode_difference_warning(harness, production, mode)
            .into_iter()
            .collect(),
    };
    warnings.extend(controller_warnings);
    if flavor == ScriptFlavor::Custom && mode == Mode::Production && !step.reaches_provider() {
        not_called = Some(NOT_CALLED_NO_TRAFFIC);
        let expected = case.expected.get(index).map(|entry| entry.canonical_json());
        warnings.push(production::custom_skip_warning(
            script, case, index, expected, options,
        ));
    }
    let mut outcome = StepOutcome {
        index,
        status: StepStatus::Error,
        obj: step.obj.clone(),
        actual: None,
        expected: expected_entry.as_ref().map(|(data, entry)| match data {
            Cow::Borrowed(_) => entry.canonical_json().to_owned(),
            Cow::Owned(data) => data.to_canonical_json(),
        }),
        error: None,
        diff: Vec::new(),
        unified_diff: String::new(),
        warnings,
        not_called,
        prints,
        expected_span: expected_entry.as_ref().map(|(_, entry)| entry.node.span),
        step_span: step.span,
    };
    // The actual result's canonical JSON, and its data when already decoded.
    let actual = match &results {
        Results::Encoded { canonical, .. } => Ok((canonical.clone(), None)),
        other => match other.get(mode) {
            Cow::Borrowed(Ok(data)) => Ok((data.to_canonical_json(), Some(data))),
            Cow::Borrowed(Err(error)) => Err(error.clone()),
            Cow::Owned(_) => unreachable!("only Encoded results are decoded on demand"),
        },
    };
    match actual {
        Err(error) => outcome.error = Some(error),
        Ok((canonical, decoded)) => {
            outcome.actual = Some(canonical);
            match &expected_entry {
                None => {
                    outcome.error = Some(ScriptError::new(
                        ErrorKind::Case,
                        format!(
                            "no expected[{index}]: the case has {} expected entries for {} steps (upstream's test panics: index out of range)",
                            case.expected.len(),
                            case.steps.len()
                        ),
                    ));
                }
                Some(_) if outcome.actual == outcome.expected => outcome.status = StepStatus::Pass,
                Some((expected, entry)) => {
                    outcome.status = StepStatus::Fail;
                    let actual = match decoded {
                        Some(data) => Cow::Borrowed(data),
                        None => match results.get(mode).into_owned() {
                            Ok(data) => Cow::Owned(data),
                            Err(_) => unreachable!("an Encoded result decodes"),
                        },
                    };
                    let expected_json = expected.to_obj_json();
                    let actual_json = actual.to_obj_json();
                    outcome.diff = diff_values(&expected_json, &actual_json)
                        .into_iter()
                        .map(|(path, expected, actual)| FieldDiff {
                            span: span_in_expected(&entry.node, &path),
                            path,
                            expected,
                            actual,
                        })
                        .collect();
                    outcome.unified_diff = unified_yaml_diff(&expected_json, &actual_json);
                }
            }
        }
    }
    // A skipped ingress step is compared on what the canary Ingress keeps; when that fails,
    // the reason must still show (reports mark only passing steps as skipped).
    if let (Some(reason), StepStatus::Fail | StepStatus::Error) =
        (outcome.not_called, outcome.status)
        && flavor == ScriptFlavor::Ingress
    {
        outcome.warnings.push(format!(
            "{reason}: the result is what the canary Ingress keeps from the earlier steps"
        ));
    }
    outcome
}

/// A warning when the controller would get something else than the test harness sees: the
/// differing JSON paths with both values, and the one rule of Kruise's that explains them.
fn mode_difference_warning(
    harness: &Result<Data, ScriptError>,
    production: &Result<Data, ScriptError>,
    mode: Mode,
) -> Option<String> {
    if harness == production {
        return None;
    }
    // "here" is the side this run's verdict uses; "there" is the other one.
    let (here, there, there_name) = match mode {
        Mode::Harness => (harness, production, "in the cluster"),
        Mode::Production => (production, harness, "in `go test`"),
    };
    let intro = match mode {
        Mode::Harness => "the controller would get something else than this test",
        Mode::Production => "Kruise's unit test would see something else than the controller",
    };
    match (here, there) {
        (Ok(here), Ok(there)) => {
            let diffs = diff_values(&here.to_obj_json(), &there.to_obj_json());
            if diffs.is_empty() {
                return None;
            }
            const SHOWN: usize = 5;
            let mut listed: Vec<String> = diffs
                .iter()
                .take(SHOWN)
                .map(|(path, here, there)| {
                    format!(
                        "{}: {} here, {} {there_name}",
                        format_path(path),
                        short_value(here.as_ref()),
                        short_value(there.as_ref())
                    )
                })
                .collect();
            if diffs.len() > SHOWN {
                listed.push(format!("and {} more", diffs.len() - SHOWN));
            }
            let empty_table = diffs.iter().any(|(_, a, b)| is_empty_list_vs_null(a, b));
            let why = if empty_table {
                " (an empty Lua table encodes as [] in Kruise's test and as null in the controller)"
            } else {
                ""
            };
            Some(format!("{intro}: {}{why}", listed.join("; ")))
        }
        (here, there) => {
            let describe = |result: &Result<Data, ScriptError>| match result {
                Ok(data) => data.to_canonical_json(),
                Err(error) => format!("a {} error ({})", error.kind, error.message),
            };
            let not_table = [here, there]
                .iter()
                .any(|result| matches!(result, Err(error) if error.kind == ErrorKind::NotTable));
            let why = if not_table {
                " (a result that is not a table gives {} in Kruise's test and an error in the controller)"
            } else {
                ""
            };
            Some(format!(
                "{intro}: {} here, {} {there_name}{why}",
                describe(here),
                describe(there)
            ))
        }
    }
}

/// `[]` on one side and `null` on the other: the empty-table encoding rule.
fn is_empty_list_vs_null(a: &Option<JsonValue>, b: &Option<JsonValue>) -> bool {
    let empty_list =
        |v: &Option<JsonValue>| matches!(v, Some(JsonValue::Array(items)) if items.is_empty());
    let null = |v: &Option<JsonValue>| matches!(v, Some(JsonValue::Null));
    (empty_list(a) && null(b)) || (null(a) && empty_list(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::not_table;

    fn spec(fields: &[(&str, JsonValue)]) -> Result<Data, ScriptError> {
        let map = fields
            .iter()
            .map(|(key, value)| (key.to_string(), value.clone()))
            .collect();
        Ok(Data {
            spec: Some(JsonValue::Object(map)),
            ..Data::default()
        })
    }

    #[test]
    fn mode_difference_lists_the_differing_paths_and_the_rule_that_applies() {
        let harness = spec(&[
            ("extra", JsonValue::Array(Vec::new())),
            ("host", JsonValue::String("a".into())),
        ]);
        let production = spec(&[
            ("extra", JsonValue::Null),
            ("host", JsonValue::String("a".into())),
        ]);
        assert_eq!(
            mode_difference_warning(&harness, &production, Mode::Harness).unwrap(),
            "the controller would get something else than this test: spec.extra: [] here, null in the cluster (an empty Lua table encodes as [] in Kruise's test and as null in the controller)"
        );
        assert_eq!(
            mode_difference_warning(&harness, &production, Mode::Production).unwrap(),
            "Kruise's unit test would see something else than the controller: spec.extra: null here, [] in `go test` (an empty Lua table encodes as [] in Kruise's test and as null in the controller)"
        );
    }

    #[test]
    fn a_non_table_result_names_only_its_own_rule() {
        let harness = Ok(Data::default());
        let production = Err(not_table("string"));
        let warning = mode_difference_warning(&harness, &production, Mode::Harness).unwrap();
        assert!(
            warning.contains("a result that is not a table gives {}"),
            "{warning}"
        );
        assert!(!warning.contains("empty Lua table"), "{warning}");
    }
}
