//! How a check's findings read in every report format: where each points (file and line),
//! script errors with Lua's chunk positions mapped to the script's file, values as compact
//! JSON, diffs as `path: expected X, actual Y`.

use std::fmt::Write as _;

pub use kruise_lua_engine::path_text::format_path;
use kruise_lua_engine::steps::{FieldDiff, StepOutcome};
use kruise_lua_engine::testcase::{CaseError, CaseWarning};
use kruise_lua_engine::value::JsonValue;
use kruise_lua_engine::{ErrorKind, ScriptError};

use crate::chunk_positions::{map_positions, message_after_position};
pub use crate::project::verdict::{
    CaseReport, Location, Report, SchemaFinding, ScriptReport, Summary, Verdict,
    case_field_location, skip_reason, span_line, step_number,
};

/// Where a step's error is: the Lua line for script errors, the step's YAML line for case
/// errors (e.g. a missing `expected[i]`) and for script errors without a line.
pub fn step_error_location(
    script: &ScriptReport,
    case: &CaseReport,
    step: &StepOutcome,
) -> Location {
    match &step.error {
        Some(error) if error.kind == ErrorKind::Case => expected_location(case, step, None),
        Some(ScriptError {
            line: Some(line), ..
        }) => Location {
            file: script.path.clone(),
            line: Some(script.file_line(*line)),
        },
        // A script error without a Lua line (timeout, memory, encode, …): point at the step.
        _ => Location {
            file: case.path.clone(),
            line: span_line(step.step_span.as_ref()),
        },
    }
}

/// Where a script's syntax error is: its Lua line, else the script's first line.
pub fn syntax_error_location(script: &ScriptReport, error: &ScriptError) -> Location {
    Location {
        file: script.path.clone(),
        line: Some(script.file_line(error.line.unwrap_or(1))),
    }
}

/// Whether `step` failed with the script's own syntax error (which reports show once, for the
/// script).
pub fn is_script_syntax_error(script: &ScriptReport, step: &StepOutcome) -> bool {
    script.syntax_error.is_some()
        && step
            .error
            .as_ref()
            .is_some_and(|error| error.kind == ErrorKind::Syntax)
}

/// Where a failing step points: its first differing field with a position, else `expected[i]`.
pub fn fail_location(case: &CaseReport, step: &StepOutcome) -> Location {
    let field = step
        .diff
        .iter()
        .find_map(|diff| span_line(diff.span.as_ref()));
    expected_location(case, step, field)
}

/// Where one differing field is written (its own line, else the `expected[i]` node's).
pub fn diff_location(case: &CaseReport, step: &StepOutcome, diff: &FieldDiff) -> Location {
    expected_location(case, step, span_line(diff.span.as_ref()))
}

/// `line` in the case, else the `expected[i]` node's line, else the step's.
fn expected_location(case: &CaseReport, step: &StepOutcome, line: Option<u32>) -> Location {
    case_field_location(&case.path, step, line)
}

pub fn case_error_location(case: &CaseReport, error: &CaseError) -> Location {
    Location {
        file: case.path.clone(),
        line: span_line(error.span.as_ref()),
    }
}

pub fn case_warning_location(case: &CaseReport, warning: &CaseWarning) -> Location {
    Location {
        file: case.path.clone(),
        line: span_line(warning.span.as_ref()),
    }
}

/// A script error's message for reports that print its position in front of it: without
/// the leading `<string>:LINE: `, and with every other chunk position mapped to the script's
/// file and line (the manifest's YAML line for a ConfigMap script).
pub fn error_message(script: &ScriptReport, error: &ScriptError) -> String {
    message_after_position(&error.message, script.place())
}

/// A script error's whole message with every `<string>:LINE:` mapped to the script's file and
/// line (`lua_configuration/x/Y/trafficRouting.lua:156: …`).
pub fn located_error(script: &ScriptReport, error: &ScriptError) -> String {
    map_positions(&error.message, script.place())
}

/// A step's warnings with Lua's `<string>:LINE:` positions mapped to the script's file and
/// line (a warning may quote an error of another run).
pub fn step_warnings(script: &ScriptReport, step: &StepOutcome) -> Vec<String> {
    step.warnings
        .iter()
        .map(|warning| map_positions(warning, script.place()))
        .collect()
}

/// A field value for messages: compact JSON (keys sorted, Go's number format, but without
/// Go's HTML escapes, which only hinder reading), or `(absent)`.
pub fn format_value(value: Option<&JsonValue>) -> String {
    match value {
        Some(value) => {
            let mut out = String::new();
            write_compact(&mut out, value);
            out
        }
        None => "(absent)".to_string(),
    }
}

fn write_compact(out: &mut String, value: &JsonValue) {
    match value {
        JsonValue::Null => out.push_str("null"),
        JsonValue::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        JsonValue::Int(i) => {
            let _ = write!(out, "{i}");
        }
        JsonValue::Float(f) => out.push_str(&go_number(*f)),
        JsonValue::String(s) => out.push_str(&json_string(s)),
        JsonValue::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_compact(out, item);
            }
            out.push(']');
        }
        JsonValue::Object(map) => {
            out.push('{');
            for (index, (key, item)) in map.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                out.push_str(&json_string(key));
                out.push(':');
                write_compact(out, item);
            }
            out.push('}');
        }
    }
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("{s:?}"))
}

/// A double as Go's `encoding/json` writes it (`50`, `0.5`, `1e+21`, `1e-7`).
pub fn go_number(f: f64) -> String {
    kruise_lua_engine::go::json_text::go_json_float_text(f).unwrap_or_else(|| f.to_string())
}

/// `path: expected X, actual Y` for one differing field.
pub fn describe_diff(diff: &FieldDiff) -> String {
    format!(
        "{}: expected {}, actual {}",
        format_path(&diff.path),
        format_value(diff.expected.as_ref()),
        format_value(diff.actual.as_ref())
    )
}

/// Both canonical results, one per line: what a failure shows when no field differs (e.g. the
/// results differ only in number formatting).
pub fn canonical_texts(step: &StepOutcome) -> String {
    format!(
        "expected {}\nactual   {}",
        step.expected.as_deref().unwrap_or("(none)"),
        step.actual.as_deref().unwrap_or("(none)")
    )
}
