//! Diagnostics from test runs: a script's results turned into diagnostics on its cases and on
//! the script (the summary on its first line), with the verdicts [`crate::project::verdict`]
//! decides. [`super::diagnostic_store`] keeps them per file.

use std::path::PathBuf;

use kruise_lua_engine::error::ErrorKind;
use kruise_lua_engine::path_text::format_path;
use kruise_lua_engine::steps::{StepOutcome, StepStatus};
use kruise_lua_engine::value::JsonValue;
use kruise_lua_engine::yaml::Span;
use tower_lsp_server::ls_types::{
    Diagnostic, DiagnosticRelatedInformation, DiagnosticSeverity, Location, NumberOrString,
    Position, Range,
};

use super::documents::path_uri;
use super::runs::{CaseResult, ScriptResults};
use super::text::{LineIndex, line_range};
use crate::chunk_positions::{ScriptPlace, map_positions, message_after_position};
use crate::project::schema_check::field_node;
use crate::project::verdict::SchemaTarget;
use kruise_lua_engine::testcase::TestCase;

pub const SOURCE: &str = "kruise-lua";

pub fn span_range(text: &str, index: &LineIndex, span: Span) -> Range {
    index.range(
        text,
        span.start.offset..span.end.offset.max(span.start.offset),
    )
}

/// The line a sequence entry starts on, from its `- ` to the line's end (`span` is the
/// entry's node, which starts after the dash).
fn entry_line_range(text: &str, index: &LineIndex, span: Span) -> Range {
    let at = span.start.offset.min(text.len());
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let dash = text[line_start..at]
        .find('-')
        .map_or(at, |i| line_start + i);
    let line_end = text[at..].find('\n').map_or(text.len(), |i| at + i);
    let line_end = if text[..line_end].ends_with('\r') {
        line_end - 1
    } else {
        line_end
    };
    index.range(text, dash..line_end)
}

pub fn diagnostic(
    range: Range,
    severity: DiagnosticSeverity,
    code: &str,
    message: String,
) -> Diagnostic {
    Diagnostic {
        range,
        severity: Some(severity),
        code: Some(NumberOrString::String(code.to_string())),
        source: Some(SOURCE.to_string()),
        message,
        ..Diagnostic::default()
    }
}

/// Shortened canonical JSON of a value, `(absent)` for a missing one.
pub fn value_text(value: Option<&JsonValue>) -> String {
    match value {
        None => "(absent)".to_string(),
        Some(v) => {
            let text = v.to_canonical_json();
            if text.chars().count() > 80 {
                format!("{}…", text.chars().take(80).collect::<String>())
            } else {
                text
            }
        }
    }
}

/// The message of a failing step: the differing paths and the unified diff.
pub fn failure_message(step: &StepOutcome) -> String {
    let mut message = format!(
        "step {} fails: expected[{}] differs from the script's result\n",
        step.index + 1,
        step.index
    );
    for diff in &step.diff {
        let path = format_path(&diff.path);
        message.push_str(&format!(
            "  {}: expected {}, actual {}\n",
            path,
            value_text(diff.expected.as_ref()),
            value_text(diff.actual.as_ref())
        ));
    }
    if !step.unified_diff.is_empty() {
        message.push('\n');
        message.push_str(step.unified_diff.trim_end());
    }
    message
}

/// The 1-based line of the script's top-level `return` (the last unindented one), else its last
/// non-blank line: where timeouts and memory errors are reported.
pub fn top_level_return_line(source: &str) -> u32 {
    let mut last_return = None;
    let mut last_code = 1;
    for (i, line) in source.lines().enumerate() {
        if line.starts_with("return")
            && !line[6..].starts_with(|c: char| c.is_alphanumeric() || c == '_')
        {
            last_return = Some(i as u32 + 1);
        }
        if !line.trim().is_empty() {
            last_code = i as u32 + 1;
        }
    }
    last_return.unwrap_or(last_code)
}

/// Runs' diagnostics for every file a script's run concerns: the script's host file and each
/// case file.
pub fn run_diagnostics(results: &ScriptResults) -> Vec<(PathBuf, Vec<Diagnostic>)> {
    let host = results.target.id.host().to_path_buf();
    let host_index = LineIndex::new(&results.host_text);
    let script_uri = path_uri(&host);
    let script_name = results.target.id.display();
    // A script line (1-based) as a range in the host file.
    let source_index = results
        .embedded
        .as_ref()
        .map(|map| (map, LineIndex::new(&results.source)));
    let script_line_range = |line: u32| -> Range {
        match &source_index {
            None => line_range(&results.host_text, &host_index, line),
            // The script line's own bytes: a double-quoted script has several on one
            // manifest line.
            Some((map, index)) => {
                let source = &results.source;
                let start = index.line_start(line.max(1) as usize - 1, source);
                let end = source[start..]
                    .find('\n')
                    .map_or(source.len(), |i| start + i);
                host_index.range(&results.host_text, map.to_host(start)..map.to_host(end))
            }
        }
    };
    let script_location = |line: u32| {
        script_uri
            .clone()
            .map(|uri| Location::new(uri, script_line_range(line)))
    };
    // Lua's `<string>:LINE:` positions in messages, mapped to the host file and its line.
    let host_name = host.display().to_string();
    let place = ScriptPlace {
        file: &host_name,
        lines: results.embedded.as_ref().map_or(&[], |map| map.lines()),
    };
    if let Some(reason) = &results.target.skipped {
        // Not run, as `check` lists it: "skipped: … never read".
        let start = script_line_range(1).start;
        let d = diagnostic(
            Range::new(start, start),
            DiagnosticSeverity::INFORMATION,
            "skipped",
            format!("skipped: {reason}"),
        );
        return vec![(host, vec![d])];
    }
    let return_line = top_level_return_line(&results.source);
    let mut script_diags = Vec::new();
    let mut out = Vec::new();
    if let Some(error) = &results.script_error {
        // `check` refuses the file (its line is the host file's): none of its cases ran.
        script_diags.push(diagnostic(
            line_range(&results.host_text, &host_index, error.line),
            DiagnosticSeverity::ERROR,
            "read",
            error.message.clone(),
        ));
    }
    let mut syntax_reported = false;
    type Group = (
        u32,
        DiagnosticSeverity,
        &'static str,
        Vec<String>,
        String,
        Vec<DiagnosticRelatedInformation>,
    );
    let mut groups: Vec<Group> = Vec::new();

    for case in &results.cases {
        let name = case.name();
        let (diags, script_side) =
            case_diagnostics(case, &name, &script_name, place, &script_location);
        out.push((case.path.clone(), diags));
        for (line, severity, code, label, message, kind) in script_side {
            if kind == Some(ErrorKind::Syntax) {
                // The analysis reports syntax errors with exact ranges; say it once here.
                if syntax_reported {
                    continue;
                }
                syntax_reported = true;
            }
            // A timeout or memory error has no meaningful line of its own: the whole run
            // failed, so it goes on the top-level `return`.
            let line = match kind {
                Some(ErrorKind::Timeout | ErrorKind::Memory) => return_line,
                _ => line.unwrap_or(return_line),
            };
            let related = path_uri(&case.path).map(|uri| DiagnosticRelatedInformation {
                location: Location::new(uri, Range::default()),
                message: label.clone(),
            });
            // The same problem in several steps is one diagnostic naming them all.
            match groups
                .iter_mut()
                .find(|g| g.0 == line && g.2 == code && g.4 == message)
            {
                Some(group) => {
                    group.3.push(label);
                    group.5.extend(related);
                }
                None => groups.push((
                    line,
                    severity,
                    code,
                    vec![label],
                    message,
                    related.into_iter().collect(),
                )),
            }
        }
    }
    for (line, severity, code, labels, message, related) in groups {
        let more = match labels.len() {
            1 => String::new(),
            n => format!(" (and {} more: {})", n - 1, labels[1..].join(", ")),
        };
        let mut d = diagnostic(
            script_line_range(line),
            severity,
            code,
            format!("{}{more}: {message}", labels[0]),
        );
        d.related_information = Some(related);
        script_diags.push(d);
    }

    // The summary, on the first line of the script.
    let total = results.cases.len();
    if let Some(error) = &results.cases_error {
        script_diags.push(diagnostic(
            script_line_range(1),
            DiagnosticSeverity::WARNING,
            "run",
            format!("no test cases: {}", error.message),
        ));
    } else if total > 0 {
        let passed = results.passed_count();
        // Steps too: `check` counts steps, the lens and the status bar cases (defect 12).
        let (steps, steps_passed) = results.step_counts();
        let mut summary = format!("{passed}/{total} cases pass ({steps_passed}/{steps} steps)");
        let invalid = results.invalid_count();
        if invalid > 0 {
            summary.push_str(&format!(", {invalid} invalid"));
        }
        let failing: Vec<String> = results
            .cases
            .iter()
            .filter(|c| !c.passed())
            .take(3)
            .map(|c| match &c.case {
                Err(_) => format!("{} cannot be read", c.name()),
                Ok(parsed) if parsed.steps.is_empty() => format!("{} yields no step", c.name()),
                Ok(_) => format!(
                    "{} {}",
                    c.name(),
                    super::step_phrases::failing_steps_phrase(c)
                ),
            })
            .collect();
        if !failing.is_empty() {
            summary.push_str(" — ");
            summary.push_str(&failing.join("; "));
            if total - passed > 3 {
                summary.push_str(&format!("; and {} more", total - passed - 3));
            }
        }
        let severity = if passed == total {
            DiagnosticSeverity::HINT
        } else {
            DiagnosticSeverity::INFORMATION
        };
        // At the start of line 1, not under it: the line is usually a comment, and the lens
        // above it says the verdict already (defect 7).
        let start = script_line_range(1).start;
        let mut d = diagnostic(Range::new(start, start), severity, "summary", summary);
        if passed < total {
            d.related_information = Some(
                results
                    .cases
                    .iter()
                    .filter(|c| !c.passed())
                    .filter_map(|c| {
                        Some(DiagnosticRelatedInformation {
                            location: Location::new(path_uri(&c.path)?, Range::default()),
                            message: if c.invalid() {
                                format!("case {} is invalid", c.name())
                            } else {
                                format!("case {} fails", c.name())
                            },
                        })
                    })
                    .collect(),
            );
        }
        script_diags.push(d);
    }
    out.push((host, script_diags));
    out
}

/// What a step's verdict does not cover (the intent check not done, no CRD schema), one hint
/// per note of [`CaseFacts::step_notes`](crate::project::verdict::CaseFacts::step_notes), the
/// notes every front end shows (silence means checked and fine).
fn step_note_diagnostics(case: &CaseResult, step: &StepOutcome, range: Range) -> Vec<Diagnostic> {
    case.facts()
        .step_notes(step.index)
        .into_iter()
        .map(|note| {
            diagnostic(
                range,
                DiagnosticSeverity::HINT,
                // `step-intent-not-checked`, `step-schema-not-checked`.
                if note.check == "intent" {
                    "step-intent-not-checked"
                } else {
                    "step-schema-not-checked"
                },
                format!("step {}: {}", step.index + 1, note.message),
            )
        })
        .collect()
}

/// What a step says about the script: line, severity, code, `case X step N`, message, kind.
type ScriptSide = (
    Option<u32>,
    DiagnosticSeverity,
    &'static str,
    String,
    String,
    Option<ErrorKind>,
);

/// The intent check's violations for a step, on one line (`None` when it routes as asked or
/// was not checked).
fn misrouted(case: &CaseResult, step: usize) -> Option<String> {
    let finding = case.facts().intent_finding(step)?;
    let mut text = finding.violations.join("; ");
    if finding.more > 0 {
        text.push_str(&format!("; and {} more", finding.more));
    }
    Some(text)
}

/// The script lines that wrote the routes that took a misrouted step's probes (one entry per
/// line), as related information: `check` names the same lines (`written at FILE:LINE`).
fn misrouted_related(
    case: &CaseResult,
    step: usize,
    script_location: &dyn Fn(u32) -> Option<Location>,
) -> Option<Vec<DiagnosticRelatedInformation>> {
    let finding = case.facts().intent_finding(step)?;
    let related: Vec<DiagnosticRelatedInformation> = finding
        .lines_written()
        .into_iter()
        .filter_map(|(line, violation)| {
            Some(DiagnosticRelatedInformation {
                location: script_location(line)?,
                message: format!("written here: {violation}"),
            })
        })
        .collect();
    (!related.is_empty()).then_some(related)
}

/// A case file's diagnostics, and what the run says about the script (line, severity, code,
/// message, error kind).
fn case_diagnostics(
    case: &CaseResult,
    name: &str,
    script_name: &str,
    place: ScriptPlace<'_>,
    script_location: &dyn Fn(u32) -> Option<Location>,
) -> (Vec<Diagnostic>, Vec<ScriptSide>) {
    let text = &case.text;
    let index = LineIndex::new(text);
    let mut diags = Vec::new();
    let mut script_side = Vec::new();
    let first_line = Range::new(
        Position::new(0, 0),
        index.position(text, text.find('\n').unwrap_or(text.len())),
    );
    let parsed = match &case.case {
        Err(error) => {
            let range = error
                .span
                .map_or(first_line, |s| span_range(text, &index, s));
            diags.push(diagnostic(
                range,
                DiagnosticSeverity::ERROR,
                "case",
                error.message.clone(),
            ));
            return (diags, script_side);
        }
        Ok(parsed) => parsed,
    };
    for warning in &parsed.warnings {
        let range = warning
            .span
            .map_or(first_line, |s| span_range(text, &index, s));
        diags.push(diagnostic(
            range,
            DiagnosticSeverity::WARNING,
            "case",
            warning.message.clone(),
        ));
    }
    let related = |line: u32, message: String| {
        script_location(line)
            .map(|location| vec![DiagnosticRelatedInformation { location, message }])
    };
    // A script that does not compile: one note for the case, not an error per step (the
    // syntax error itself is the script's own diagnostic, at its place).
    if let Some(error) = case
        .steps
        .iter()
        .find_map(|s| s.error.as_ref().filter(|e| e.kind == ErrorKind::Syntax))
    {
        let range = parsed
            .expected_span
            .map_or(first_line, |s| entry_line_range(text, &index, s));
        let mut d = diagnostic(
            range,
            DiagnosticSeverity::INFORMATION,
            "script-does-not-compile",
            format!(
                "no step ran: the script does not compile ({})",
                map_positions(&error.message, place)
            ),
        );
        let line = error.line.unwrap_or(1);
        d.related_information = related(line, "syntax error here".into());
        diags.push(d);
        script_side.push((
            error.line,
            DiagnosticSeverity::ERROR,
            error.kind.as_str(),
            format!("case {name}"),
            format!(
                "{} error: {}",
                error.kind,
                message_after_position(&error.message, place)
            ),
            Some(error.kind),
        ));
        // No step ran, so none was checked: each says so, as `check` says it.
        for step in &case.steps {
            let step_range = step
                .step_span
                .map_or(first_line, |s| span_range(text, &index, s));
            diags.extend(step_note_diagnostics(case, step, step_range));
        }
        return (diags, script_side);
    }
    for step in &case.steps {
        let number = step.index + 1;
        let step_range = step
            .step_span
            .map_or(first_line, |s| span_range(text, &index, s));
        for warning in &step.warnings {
            // A warning may quote an error of another run: its positions are mapped too.
            let warning = map_positions(warning, place);
            diags.push(diagnostic(
                step_range,
                DiagnosticSeverity::WARNING,
                "step-warning",
                format!("step {number}: {warning}"),
            ));
            script_side.push((
                None,
                DiagnosticSeverity::WARNING,
                "step-warning",
                format!("case {name} step {number}"),
                warning,
                None,
            ));
        }
        if let Some(violations) = misrouted(case, step.index) {
            let mut d = diagnostic(
                step_range,
                DiagnosticSeverity::ERROR,
                "step-misrouted",
                format!("step {number} misroutes (intent check): {violations}"),
            );
            d.related_information = misrouted_related(case, step.index, script_location);
            diags.push(d);
        }
        diags.extend(step_note_diagnostics(case, step, step_range));
        match step.status {
            StepStatus::Pass => {
                // Production mode: the controller does not run the script for this step.
                if let Some(reason) = step.not_called {
                    diags.push(diagnostic(
                        step_range,
                        DiagnosticSeverity::HINT,
                        "step-skipped",
                        format!("step {number} {reason}"),
                    ));
                }
            }
            StepStatus::Fail => {
                // The `- ` line of the entry only: the differing fields have their own
                // diagnostics (under the whole entry, one edit gave dozens of lines of errors).
                let range = step
                    .expected_span
                    .map_or(step_range, |s| entry_line_range(text, &index, s));
                let mut d = diagnostic(
                    range,
                    DiagnosticSeverity::ERROR,
                    "step-fails",
                    failure_message(step),
                );
                d.related_information =
                    related(1, format!("{script_name} returns a different result"));
                diags.push(d);
                for diff in &step.diff {
                    let Some(span) = diff.span else { continue };
                    if Some(span) == step.expected_span {
                        continue;
                    }
                    let path = format_path(&diff.path);
                    diags.push(diagnostic(
                        span_range(text, &index, span),
                        DiagnosticSeverity::ERROR,
                        "field-differs",
                        format!(
                            "step {number}: {path}: expected {}, actual {}",
                            value_text(diff.expected.as_ref()),
                            value_text(diff.actual.as_ref())
                        ),
                    ));
                }
            }
            StepStatus::Error => {
                let Some(error) = &step.error else { continue };
                if error.kind == ErrorKind::Case {
                    // Too few expected entries: point at the `expected` list.
                    let range = parsed
                        .expected_span
                        .map_or(step_range, |s| span_range(text, &index, s));
                    diags.push(diagnostic(
                        range,
                        DiagnosticSeverity::ERROR,
                        "case",
                        format!("step {number}: {}", error.message),
                    ));
                    continue;
                }
                let line = error.line.unwrap_or(1);
                // The message names the script's file and line (the manifest's YAML line
                // for an embedded script), not Lua's `<string>:LINE:`.
                let mut d = diagnostic(
                    step_range,
                    DiagnosticSeverity::ERROR,
                    "step-error",
                    format!(
                        "step {number}: {} error: {}",
                        error.kind,
                        map_positions(&error.message, place)
                    ),
                );
                d.related_information = related(line, format!("{} error here", error.kind));
                diags.push(d);
                script_side.push((
                    error.line,
                    DiagnosticSeverity::ERROR,
                    error.kind.as_str(),
                    format!("case {name} step {number}"),
                    // The diagnostic sits on the line: the position is not repeated.
                    format!(
                        "{} error: {}",
                        error.kind,
                        message_after_position(&error.message, place)
                    ),
                    Some(error.kind),
                ));
            }
        }
    }
    schema_diagnostics(case, parsed, text, &index, first_line, &mut diags);
    (diags, script_side)
}

/// What the API server would say about each step (see [`CaseResult::schema`]): on the
/// field in `expected[i]` (else the entry) for an expectation, on the step for the output;
/// errors (it would reject the object) and warnings (it would drop a field).
fn schema_diagnostics(
    case: &CaseResult,
    parsed: &TestCase,
    text: &str,
    index: &LineIndex,
    first_line: Range,
    diags: &mut Vec<Diagnostic>,
) {
    for found in &case.schema {
        let step = case.steps.iter().find(|s| s.index == found.step);
        let step_range = step
            .and_then(|s| s.step_span)
            .map_or(first_line, |s| span_range(text, index, s));
        let entry_range = step
            .and_then(|s| s.expected_span)
            .map_or(step_range, |s| span_range(text, index, s));
        let range = match found.target {
            SchemaTarget::Output => step_range,
            SchemaTarget::Expected | SchemaTarget::Both => parsed
                .expected
                .get(found.step)
                .and_then(|entry| field_node(&entry.node, &found.finding))
                .map_or(entry_range, |node| span_range(text, index, node.span)),
        };
        let severity = if found.is_error() {
            DiagnosticSeverity::ERROR
        } else {
            DiagnosticSeverity::WARNING
        };
        let verdict = if found.is_error() {
            "the API server would reject"
        } else {
            "the API server would change"
        };
        let mut d = diagnostic(
            range,
            severity,
            "schema",
            format!(
                "step {}: {} — {verdict} it",
                found.step + 1,
                found.message()
            ),
        );
        if found.is_error() && found.target != SchemaTarget::Output {
            d.message
                .push_str(" (an expectation the API server rejects is a bug of the test)");
        }
        diags.push(d);
    }
}

#[cfg(test)]
mod tests;
