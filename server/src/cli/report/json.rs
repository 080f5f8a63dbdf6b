//! JSON Lines report: one object per step, and one with `"step": null` per case-level error.
//!
//! Fields: `script`, `case`, `step`, `index`, `status` (`pass`/`invalid`/`fail`/`error`, or
//! `misrouted` for a step that passed but fails the intent check), `error_kind`, `error`,
//! `line`, `actual`, `expected` (canonical JSON strings), `warnings`, `located_error`,
//! `skipped`, `misrouted`, `schema_errors`, `schema_warnings`. `step` is the step's number as
//! every other output shows it (from 1, as Kruise
//! numbers a rollout's steps); `index` is its 0-based YAML index (`steps[i]`, `expected[i]`). `line` is a line of the script file for script errors, of the case file
//! otherwise (the failing field or `expected[i]` for failures, the offending node for case
//! errors; `null` for passes). Case warnings (`file:line: message`) are listed with the case's
//! first object.
//!
//! `error` is the engine's text as Kruise's controller logs it (gopher-lua's `<string>:LINE:`
//! positions included, to compare with the controller's log); `located_error` is the same
//! text with those positions mapped to the script's file and line (the manifest's YAML line
//! for a ConfigMap script). `skipped` says why the controller does not run the script for a
//! step (production mode), else `null`; `status` stays the step's verdict. `misrouted` lists
//! the intent check's violations for the step (`check --intent`, the default), else `[]`;
//! `misrouted_written_at` is as long as `misrouted`: for each violation the script line that
//! last wrote the route that took the probe, `{"file", "line", "script_line"}` (`line` in
//! `file`, the manifest for a ConfigMap script; `script_line` in the script), or `null`;
//! `intent_not_checked` says why the intent check could not verify the step (no routing model
//! for the resource, nothing to probe, probes cut short), else `null` (checked, or nothing to
//! check, or `--no-intent`).
//!
//!
//! `schema_errors` and `schema_warnings` list what the API server would say about the step's
//! output and its `expected[i]` (see [`SchemaIssue`]); a passing step with schema errors has
//! `status` `invalid`. Both are empty with `--no-schema`. `schema_not_checked` says why the
//! step was not checked against a CRD schema though validation is on (no CRD for the script's
//! kind was loaded, or its CRD file could not be used: only labels and annotations were
//! checked), else `null` (checked against a CRD, an ingress class's annotations, or
//! `--no-schema`).
//!
//! A CRD source that could not be used comes first, as its own object
//! `{"type": "crd", "file", "line", "severity": "error", "message"}` (the step objects have no
//! `type`; `check --lint`'s findings are `"type": "lint"` objects). A script `check` does not
//! run is `{"type": "skipped", "script", "message"}` (the reason), where its steps would be.

use std::io::{self, Write};

use kruise_lua_engine::steps::StepOutcome;
use serde::Serialize;

use kruise_lua_engine::ErrorKind;

use crate::project::verdict::{Note, StepLabel};

use super::describe::{
    CaseReport, Report, SchemaFinding, ScriptReport, case_error_location, case_warning_location,
    fail_location, located_error, step_error_location, step_number,
};

/// One line of the report.
#[derive(Debug, Serialize)]
pub struct Line<'a> {
    pub script: String,
    pub case: &'a str,
    /// The step's number, from 1 (`null` for a case-level line).
    pub step: Option<usize>,
    /// The step's 0-based index in the case (`expected[index]`).
    pub index: Option<usize>,
    pub status: &'static str,
    pub error_kind: Option<&'static str>,
    pub error: Option<String>,
    pub line: Option<u32>,
    pub actual: Option<&'a str>,
    pub expected: Option<&'a str>,
    pub warnings: Vec<String>,
    pub located_error: Option<String>,
    pub skipped: Option<&'static str>,
    /// The intent check's violations for the step (empty when it routes as asked or was not
    /// checked); a step that passed but misroutes has status `misrouted`.
    pub misrouted: Vec<String>,
    /// For each of `misrouted`, the script line that last wrote the route that took the probe
    /// (see docs/ROUTING_MODELS.md), else `null`.
    pub misrouted_written_at: Vec<Option<WrittenAt>>,
    /// Why the intent check could not verify the step, else `null`.
    pub intent_not_checked: Option<String>,
    pub schema_errors: Vec<SchemaIssue>,
    pub schema_warnings: Vec<SchemaIssue>,
    /// Why the step was not checked against a CRD schema, else `null`.
    pub schema_not_checked: Option<String>,
}

/// A CRD source that could not be used (its kinds' steps were not checked against it).
#[derive(Debug, Serialize)]
pub struct CrdErrorLine<'a> {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub file: &'a str,
    pub line: Option<u32>,
    pub severity: &'static str,
    pub message: &'a str,
}

/// A script `check` does not run (a ConfigMap script Kruise never reads, a bundled one a
/// ConfigMap script replaces, one with no cases to run), and why: its own object, as it has no
/// step to carry it.
#[derive(Debug, Serialize)]
pub struct SkippedScriptLine<'a> {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub script: String,
    pub message: &'a str,
}

/// Where a misrouted step's script wrote the route that took a probe.
#[derive(Debug, Serialize)]
pub struct WrittenAt {
    /// The file to open: the script, or the manifest of a ConfigMap script.
    pub file: String,
    /// The line in `file` (the manifest's YAML line for a ConfigMap script).
    pub line: u32,
    /// The line in the script itself (from 1; equal to `line` for a `.lua` file).
    pub script_line: u32,
}

/// One schema finding of a step.
#[derive(Debug, Serialize)]
pub struct SchemaIssue {
    /// `output`, `expected`, or `output and expected` (they are equal).
    pub target: &'static str,
    /// The JSON path from the resource's root (`spec.http[0].route[1].weight`).
    pub path: String,
    /// The schema keyword or check: `type`, `required`, `enum`, `pruned`, `cel`, `label-key`, …
    pub rule: &'static str,
    pub message: String,
    /// The line of the field (else of `expected[i]`) in the case file.
    pub line: Option<u32>,
    /// The CRD the finding comes from, `<file>:<line>, version <name>` (null for Kubernetes'
    /// own label and annotation rules).
    pub crd: Option<String>,
}

impl SchemaIssue {
    fn of(found: &SchemaFinding) -> SchemaIssue {
        SchemaIssue {
            target: found.target.as_str(),
            path: found.finding.path_text(),
            rule: found.finding.rule,
            message: found.finding.message.clone(),
            line: found.location.line,
            crd: found.finding.crd.clone(),
        }
    }
}

pub fn write(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    begin(&report.crd_errors, out)?;
    for script in &report.scripts {
        script_part(script, out)?;
    }
    Ok(())
}

/// The lines of one script's cases (or the one saying why it is skipped).
pub fn script_part(script: &ScriptReport, out: &mut dyn Write) -> io::Result<()> {
    if let Some(reason) = &script.skipped {
        let line = SkippedScriptLine {
            kind: "skipped",
            script: script.id(),
            message: reason,
        };
        serde_json::to_writer(&mut *out, &line)?;
        out.write_all(b"\n")?;
    }
    for case in &script.cases {
        for line in case_lines(script, case) {
            serde_json::to_writer(&mut *out, &line)?;
            out.write_all(b"\n")?;
        }
    }
    Ok(())
}

/// The lines of one case, in step order.
pub fn case_lines<'a>(script: &ScriptReport, case: &'a CaseReport) -> Vec<Line<'a>> {
    let mut case_warnings: Vec<String> = case
        .outcome
        .warnings
        .iter()
        .map(|warning| {
            format!(
                "{}: {}",
                case_warning_location(case, warning),
                warning.message
            )
        })
        .collect();
    let mut lines = Vec::new();
    if let Some(error) = &case.outcome.case_error {
        lines.push(Line {
            script: script.id(),
            case: &case.path,
            step: None,
            index: None,
            status: "error",
            error_kind: Some("case"),
            error: Some(error.message.clone()),
            line: case_error_location(case, error).line,
            actual: None,
            expected: None,
            warnings: std::mem::take(&mut case_warnings),
            located_error: None,
            skipped: None,
            misrouted: Vec::new(),
            misrouted_written_at: Vec::new(),
            intent_not_checked: None,
            schema_errors: Vec::new(),
            schema_warnings: Vec::new(),
            schema_not_checked: None,
        });
    }
    for step in &case.outcome.steps {
        let mut warnings = std::mem::take(&mut case_warnings);
        warnings.extend(super::describe::step_warnings(script, step));
        if let Some(finding) = case.order_finding(step.index) {
            warnings.push(finding.message());
        }
        let mut line = step_line(script, case, step, warnings);
        if let Some(finding) = case.intent_finding(step.index) {
            line.misrouted.clone_from(&finding.violations);
            line.misrouted_written_at = (0..finding.violations.len())
                .map(|i| {
                    finding.script_line(i).map(|script_line| WrittenAt {
                        file: script.path.clone(),
                        line: script.file_line(script_line),
                        script_line,
                    })
                })
                .collect();
        }
        line.intent_not_checked = case
            .intent_unverified(step.index)
            .map(|note| note.reason.clone());
        lines.push(line);
    }
    lines
}

/// What comes before the steps: one object per CRD source that could not be used.
pub fn begin(crd_errors: &[Note], out: &mut dyn Write) -> io::Result<()> {
    for error in crd_errors {
        let line = CrdErrorLine {
            kind: "crd",
            file: &error.location.file,
            line: error.location.line,
            severity: "error",
            message: &error.message,
        };
        serde_json::to_writer(&mut *out, &line)?;
        writeln!(out)?;
    }
    Ok(())
}

fn step_line<'a>(
    script: &ScriptReport,
    case: &'a CaseReport,
    step: &'a StepOutcome,
    warnings: Vec<String>,
) -> Line<'a> {
    // The step's verdict as it reads (`project::verdict::StepLabel`): a step that got its
    // expected result but fails all the same says why in its status, as the other formats do.
    let label = case.step_label(step);
    let line = match label {
        StepLabel::Invalid => case
            .schema_errors(step.index)
            .find_map(|found| found.location.line),
        StepLabel::Fail => fail_location(case, step).line,
        StepLabel::Error => step_error_location(script, case, step).line,
        StepLabel::Pass | StepLabel::Misrouted | StepLabel::Nondeterministic => None,
    };
    let status = label.as_str();
    Line {
        script: script.id(),
        case: &case.path,
        step: Some(step_number(step.index)),
        index: Some(step.index),
        status,
        error_kind: step.error.as_ref().map(|error| error.kind.as_str()),
        error: step.error.as_ref().map(|error| error.message.clone()),
        line,
        actual: step.actual.as_deref(),
        expected: step.expected.as_deref(),
        warnings,
        located_error: step
            .error
            .as_ref()
            .filter(|error| error.kind != ErrorKind::Case)
            .map(|error| located_error(script, error)),
        skipped: step.not_called,
        misrouted: Vec::new(),
        misrouted_written_at: Vec::new(),
        intent_not_checked: None,
        schema_errors: case
            .schema_errors(step.index)
            .map(SchemaIssue::of)
            .collect(),
        schema_warnings: case
            .schema_warnings(step.index)
            .map(SchemaIssue::of)
            .collect(),
        schema_not_checked: case.schema_not_checked().map(|note| note.reason.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures;
    use super::*;
    use serde_json::Value;

    fn lines() -> Vec<Value> {
        let mut out = Vec::new();
        write(&fixtures::report(), &mut out).unwrap();
        String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    #[test]
    fn one_object_per_step_and_per_case_error() {
        let lines = lines();
        assert_eq!(lines.len(), 6);
        let keys = [
            "script",
            "case",
            "step",
            "index",
            "status",
            "error_kind",
            "error",
            "line",
            "actual",
            "expected",
            "warnings",
            "located_error",
            "skipped",
            "misrouted",
            "misrouted_written_at",
            "intent_not_checked",
            "schema_errors",
            "schema_warnings",
            "schema_not_checked",
        ];
        assert_eq!(lines[0].as_object().unwrap().len(), keys.len());
        let mut out = Vec::new();
        write(&fixtures::report(), &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let first = text.lines().next().unwrap();
        let positions: Vec<usize> = keys
            .iter()
            .map(|key| first.find(&format!("\"{key}\":")).unwrap())
            .collect();
        assert!(
            positions.windows(2).all(|pair| pair[0] < pair[1]),
            "keys in documented order: {first}"
        );
        assert_eq!(
            lines[0]["script"],
            "lua_configuration/example.io/Demo/trafficRouting.lua"
        );
        assert_eq!(lines[0]["status"], "pass");
        assert_eq!(lines[0]["line"], Value::Null);
        assert_eq!(
            lines[0]["warnings"][0],
            "lua_configuration/example.io/Demo/testdata/pass.yaml:12: unknown field `weight` in steps[0]"
        );
    }

    /// A skipped script has no step to say it: its own `"type": "skipped"` object does, as
    /// the other formats list it.
    #[test]
    fn a_skipped_script_is_an_object_of_its_own() {
        let mut report = fixtures::report();
        let mut skipped = report.scripts[0].clone();
        skipped.path = "cm.yaml".into();
        skipped.key = Some("lua.traffic.routing.ingress.mse".into());
        skipped.cases.clear();
        skipped.skipped = Some("another ConfigMap script is taken".into());
        report.scripts.push(skipped);
        let mut out = Vec::new();
        write(&report, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        assert_eq!(
            last,
            serde_json::json!({
                "type": "skipped",
                "script": "cm.yaml#lua.traffic.routing.ingress.mse",
                "message": "another ConfigMap script is taken",
            })
        );
    }

    #[test]
    fn failures_and_errors_carry_kind_line_and_texts() {
        let lines = lines();
        let fail = &lines[2];
        assert_eq!(
            (fail["step"].as_u64(), fail["status"].as_str()),
            (Some(2), Some("fail"))
        );
        assert_eq!(fail["index"], 1, "the YAML index of expected[1]");
        assert_eq!(fail["line"], 34);
        assert_eq!(fail["expected"], r#"{"spec":{"weight":20}}"#);
        assert_eq!(fail["error_kind"], Value::Null);
        let runtime = &lines[3];
        assert_eq!(runtime["error_kind"], "runtime");
        assert_eq!(runtime["line"], 7);
        assert_eq!(
            runtime["error"],
            "<string>:7: attempt to index a nil value\nstack traceback"
        );
        assert_eq!(
            runtime["located_error"],
            "lua_configuration/example.io/Demo/trafficRouting.lua:7: attempt to index a nil value\nstack traceback"
        );
        assert_eq!(runtime["actual"], Value::Null);
        let timeout = &lines[4];
        assert_eq!(timeout["error_kind"], "timeout");
        assert_eq!(
            timeout["line"], 6,
            "a timeout points at the step in the case"
        );
        let case_error = &lines[5];
        assert_eq!(case_error["step"], Value::Null);
        assert_eq!(case_error["error_kind"], "case");
        assert_eq!(case_error["line"], 1);
    }
}
