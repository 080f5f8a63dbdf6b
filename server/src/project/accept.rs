//! "Accept actual output as expected", the same for the editor's command and `kruise-lua
//! accept`: what `expected[i]` becomes for a failing step (the resource with the result's
//! parts), written into the case by minimal edits ([`super::yaml_edit`]) that keep every other
//! byte of the file, and the compare-and-swap write of the new text.

use std::path::Path;

use kruise_lua_engine::error::ScriptError;
use kruise_lua_engine::runner::{Mode, RunOptions, Script};
use kruise_lua_engine::script::ScriptFlavor;
use kruise_lua_engine::steps::{StepOutcome, StepStatus, StepToRun, run_case_step};
use kruise_lua_engine::testcase::{TestCase, parse_case};
use kruise_lua_engine::value::{JsonMap, JsonValue};

use super::yaml_edit::{Edit, apply_edits, rewrite_expected};
use crate::atomic_write::{ReplaceError, replace_file};

/// The value `expected[step.index]` takes when the step's actual output is accepted; `None`
/// when the step did not fail, or has no actual result or expected entry.
pub fn accepted_value(
    case: &TestCase,
    step: &StepOutcome,
    flavor: ScriptFlavor,
) -> Option<JsonValue> {
    if step.status != StepStatus::Fail {
        return None;
    }
    let entry = case.expected.get(step.index)?;
    let actual = JsonValue::parse_go_interface(step.actual.as_ref()?.as_bytes()).ok()?;
    Some(merged_resource(&entry.node.to_json(), &actual, flavor))
}

/// The edits of `text` accepting the actual output of `steps` (those that fail); empty when
/// none fails. An error says why the case cannot be rewritten safely.
pub fn accept_edits<'a>(
    text: &str,
    case: &TestCase,
    steps: impl IntoIterator<Item = &'a StepOutcome>,
    flavor: ScriptFlavor,
) -> Result<Vec<Edit>, String> {
    let targets: Vec<(usize, JsonValue)> = steps
        .into_iter()
        .filter_map(|step| Some((step.index, accepted_value(case, step, flavor)?)))
        .collect();
    if targets.is_empty() {
        return Ok(Vec::new());
    }
    rewrite_expected(text, &targets)
}

/// The existing resource with the result's parts replaced: `spec`, `metadata.labels` and
/// `metadata.annotations` for custom scripts, only the annotations for ingress classes.
fn merged_resource(existing: &JsonValue, actual: &JsonValue, flavor: ScriptFlavor) -> JsonValue {
    let mut resource = match existing {
        JsonValue::Object(map) => map.clone(),
        _ => JsonMap::new(),
    };
    let actual = match actual {
        JsonValue::Object(map) => map.clone(),
        _ => JsonMap::new(),
    };
    let mut metadata = match resource.remove("metadata") {
        Some(JsonValue::Object(map)) => map,
        _ => JsonMap::new(),
    };
    let keys: &[&str] = match flavor {
        ScriptFlavor::Custom => {
            resource.remove("spec");
            if let Some(spec) = actual.get("spec") {
                resource.insert("spec".into(), spec.clone());
            }
            &["labels", "annotations"]
        }
        ScriptFlavor::Ingress => &["annotations"],
    };
    for key in keys {
        metadata.remove(key);
        if let Some(value) = actual.get(key) {
            metadata.insert((*key).into(), value.clone());
        }
    }
    if !metadata.is_empty() {
        resource.insert("metadata".into(), JsonValue::Object(metadata));
    }
    JsonValue::Object(resource)
}

/// What accepting did to one selected step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepAcceptance {
    /// The step passes: nothing to accept.
    Passes,
    /// Its `expected` entry is rewritten to the actual output.
    Accepted,
    /// The script fails on it: no output to accept.
    Errored(ScriptError),
    /// It has no actual output to accept, and why.
    Refused(String),
}

/// A case with its failing steps' output accepted.
#[derive(Debug, Clone, PartialEq)]
pub struct Acceptance {
    /// The case text after the edits (the same text when nothing was accepted).
    pub new_text: String,
    /// Each selected step (0-based) and what happened to it.
    pub steps: Vec<(usize, StepAcceptance)>,
}

/// Runs the `selected` steps (0-based; every step when empty) of the case `text` through
/// `script` under `mode` and accepts the failing ones. `Err` when the case does not parse
/// (`line: message`) or cannot be rewritten safely.
pub fn accept_case(
    text: &str,
    script: &Script,
    flavor: ScriptFlavor,
    mode: Mode,
    options: &RunOptions,
    selected: &[usize],
) -> Result<Acceptance, String> {
    let case = parse_case(text).map_err(|error| match error.span {
        Some(span) => format!("line {}: {}", span.start.line, error.message),
        None => error.message,
    })?;
    let indices: Vec<usize> = if selected.is_empty() {
        (0..case.steps.len()).collect()
    } else {
        selected.to_vec()
    };
    if let Some(&out) = indices.iter().find(|&&i| i >= case.steps.len()) {
        return Err(format!(
            "there is no step {}: the case has {} step(s), numbered from 1",
            out + 1,
            case.steps.len()
        ));
    }
    let outcomes: Vec<StepOutcome> = indices
        .iter()
        .map(|&index| {
            run_case_step(StepToRun {
                script,
                flavor,
                case: &case,
                index,
                mode,
                options,
            })
        })
        .collect();
    let steps = outcomes
        .iter()
        .map(|outcome| {
            let status = match outcome.status {
                StepStatus::Pass => StepAcceptance::Passes,
                StepStatus::Fail => StepAcceptance::Accepted,
                StepStatus::Error => match &outcome.error {
                    // Whole, so a front end can place its `<string>:LINE:` in the script file.
                    Some(error) => StepAcceptance::Errored(error.clone()),
                    None => StepAcceptance::Refused("no output".to_owned()),
                },
            };
            (outcome.index, status)
        })
        .collect();
    let edits = accept_edits(text, &case, &outcomes, flavor)?;
    Ok(Acceptance {
        new_text: apply_edits(text, edits),
        steps,
    })
}

/// Writes `new_text` over `path` only if the file still holds `old_text` (atomic; a file
/// changed meanwhile is left alone and reported).
pub fn write_accepted(path: &Path, old_text: &str, new_text: &str) -> Result<(), String> {
    replace_file(path, old_text.as_bytes(), new_text.as_bytes()).map_err(|err| match err {
        ReplaceError::Changed { .. } => format!(
            "{}: the file changed while its steps ran; nothing was written (run accept again)",
            super::paths::display(path)
        ),
        other => other.to_string(),
    })
}

#[cfg(test)]
mod tests;
