//! The report for people: per script, per case, per step ✓/✗/!, with the differing JSON
//! paths and a coloured unified diff for failures, `file:line:` errors and warnings, and a
//! final `N passed, N failed, N errors` line.

use std::io::{self, Write};

use kruise_lua_engine::steps::{StepOutcome, StepStatus};

use super::describe::{
    CaseReport, Location, Report, ScriptReport, Summary, Verdict, canonical_texts,
    case_error_location, case_warning_location, describe_diff, diff_location, step_error_location,
    step_number,
};
use crate::project::paths;
use crate::project::verdict::Note;

const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const YELLOW: &str = "\x1b[33m";
const CYAN: &str = "\x1b[36m";
const BOLD: &str = "\x1b[1m";
const DIM: &str = "\x1b[2m";
const RESET: &str = "\x1b[0m";

struct Painter {
    color: bool,
}

impl Painter {
    /// `text` (control characters escaped: it may come from a script) in `style`.
    fn paint(&self, style: &str, text: &str) -> String {
        let text = crate::cli::terminal::escape_controls(text);
        if self.color && !text.is_empty() {
            format!("{style}{text}{RESET}")
        } else {
            text.to_string()
        }
    }

    fn mark(&self, verdict: Verdict) -> String {
        match verdict {
            Verdict::Pass => self.paint(GREEN, "✓"),
            Verdict::Fail | Verdict::Invalid => self.paint(RED, "✗"),
            Verdict::Error => self.paint(RED, "!"),
        }
    }
}

pub fn write(report: &Report, color: bool, out: &mut dyn Write) -> io::Result<()> {
    begin(&report.notes, &report.crd_errors, color, out)?;
    for script in &report.scripts {
        script_part(script, color, out)?;
    }
    end(
        &Summary::of(report),
        !report.scripts.is_empty(),
        report.shuffle_runs,
        color,
        out,
    )
}

/// What comes before the scripts: the CRD sources that could not be used, and the remarks
/// about the inputs.
pub fn begin(
    notes: &[Note],
    crd_errors: &[Note],
    color: bool,
    out: &mut dyn Write,
) -> io::Result<()> {
    let painter = Painter { color };
    for error in crd_errors {
        let text = format!("{}: error: {}", error.location, error.message);
        writeln!(out, "{}", painter.paint(RED, &text))?;
    }
    for note in notes {
        let text = format!("{}: warning: {}", note.location, note.message);
        writeln!(out, "{}", painter.paint(YELLOW, &text))?;
    }
    Ok(())
}

/// One script, its cases and steps.
pub fn script_part(script: &ScriptReport, color: bool, out: &mut dyn Write) -> io::Result<()> {
    write_script(&Painter { color }, script, out)
}

/// What comes after the scripts: the key-order remark and the summary line.
pub fn end(
    summary: &Summary,
    any_script: bool,
    shuffle_runs: u32,
    color: bool,
    out: &mut dyn Write,
) -> io::Result<()> {
    let painter = Painter { color };
    let style = if summary.exit_code() == 0 { GREEN } else { RED };
    if any_script {
        writeln!(out)?;
    }
    if shuffle_runs > 0 {
        writeln!(
            out,
            "key order: every case also ran {shuffle_runs} times with obj's keys shuffled"
        )?;
    }
    writeln!(out, "{}", painter.paint(style, &summary.line()))
}

fn write_script(painter: &Painter, script: &ScriptReport, out: &mut dyn Write) -> io::Result<()> {
    let title = match &script.key {
        Some(key) => format!("{} [{}]", script.path, key),
        None => script.path.clone(),
    };
    if let Some(reason) = &script.skipped {
        writeln!(out, "- {}", painter.paint(BOLD, &title))?;
        writeln!(
            out,
            "    {}",
            painter.paint(YELLOW, &format!("skipped: {reason}"))
        )?;
        return Ok(());
    }
    writeln!(
        out,
        "{} {}",
        painter.mark(script.verdict()),
        painter.paint(BOLD, &title)
    )?;
    if let Some(error) = &script.syntax_error {
        // Shown once here; its steps only name it.
        let location = super::describe::syntax_error_location(script, error);
        let message = format!(
            "{location}: syntax error: {}",
            super::describe::error_message(script, error)
        );
        write_block(out, "    ", &painter.paint(RED, &message))?;
    }
    for case in &script.cases {
        write_case(painter, script, case, out)?;
    }
    Ok(())
}

fn write_case(
    painter: &Painter,
    script: &ScriptReport,
    case: &CaseReport,
    out: &mut dyn Write,
) -> io::Result<()> {
    let name = paths::relative(&case.path, &script.case_base);
    writeln!(out, "  {} {}", painter.mark(case.verdict()), name)?;
    for warning in &case.outcome.warnings {
        let location = case_warning_location(case, warning);
        writeln!(
            out,
            "      {}",
            painter.paint(YELLOW, &format!("{location}: warning: {}", warning.message))
        )?;
    }
    if let Some(error) = &case.outcome.case_error {
        let location = case_error_location(case, error);
        write_block(
            out,
            "      ",
            &painter.paint(RED, &format!("{location}: case error: {}", error.message)),
        )?;
    }
    for step in &case.outcome.steps {
        write_step(painter, script, case, step, out)?;
    }
    Ok(())
}

fn write_step(
    painter: &Painter,
    script: &ScriptReport,
    case: &CaseReport,
    step: &StepOutcome,
    out: &mut dyn Write,
) -> io::Result<()> {
    let finding = case.order_finding(step.index);
    let misrouted = case.intent_finding(step.index);
    let verdict = case.step_verdict(step);
    const DETAIL: &str = "          ";
    match super::describe::skip_reason(step) {
        // Production mode: the controller does not run the script for this step.
        Some(reason) if !case.fails_despite_pass(step.index) => {
            writeln!(out, "      - step {}", step_number(step.index))?;
            writeln!(out, "{DETAIL}{}", painter.paint(YELLOW, reason))?;
        }
        _ if super::describe::is_script_syntax_error(script, step) => {
            writeln!(
                out,
                "      {} step {} (the syntax error above)",
                painter.mark(verdict),
                step_number(step.index)
            )?;
        }
        _ if verdict == Verdict::Invalid => writeln!(
            out,
            "      {} step {}: invalid (the API server would reject it)",
            painter.mark(verdict),
            step_number(step.index)
        )?,
        _ => writeln!(
            out,
            "      {} step {}",
            painter.mark(verdict),
            step_number(step.index)
        )?,
    }
    match step.status {
        StepStatus::Pass => {}
        StepStatus::Fail => {
            for diff in &step.diff {
                let location = diff_location(case, step, diff);
                writeln!(
                    out,
                    "{DETAIL}{}  {}",
                    describe_diff(diff),
                    painter.paint(DIM, &format!("({location})"))
                )?;
            }
            if step.diff.is_empty() {
                write_block(out, DETAIL, &canonical_texts(step))?;
            }
            for line in step.unified_diff.lines() {
                let style = if line.starts_with("---") || line.starts_with("+++") {
                    BOLD
                } else if line.starts_with('-') {
                    RED
                } else if line.starts_with('+') {
                    GREEN
                } else if line.starts_with("@@") {
                    CYAN
                } else {
                    ""
                };
                writeln!(out, "{DETAIL}{}", painter.paint(style, line))?;
            }
        }
        StepStatus::Error if super::describe::is_script_syntax_error(script, step) => {}
        StepStatus::Error => {
            let location = step_error_location(script, case, step);
            let message = match &step.error {
                Some(error) => format!(
                    "{} error: {}",
                    error.kind,
                    super::describe::error_message(script, error)
                ),
                None => "error".to_string(),
            };
            write_block(
                out,
                DETAIL,
                &painter.paint(RED, &format!("{location}: {message}")),
            )?;
        }
    }
    if let Some(finding) = finding {
        write_block(out, DETAIL, &painter.paint(RED, &finding.message()))?;
    }
    if let Some(misrouted) = misrouted {
        let location = Location {
            file: case.path.clone(),
            line: super::describe::span_line(step.step_span.as_ref()),
        };
        let mut lines = misrouted.lines(script.place());
        lines[0] = format!("{location}: {}", lines[0]);
        write_block(out, DETAIL, &painter.paint(RED, &lines.join("\n")))?;
    }
    let notes = case.step_notes(step.index);
    if !notes.is_empty() {
        let location = Location {
            file: case.path.clone(),
            line: super::describe::span_line(step.step_span.as_ref()),
        };
        for note in notes {
            let text = format!("{location}: {}", note.message);
            write_block(out, DETAIL, &painter.paint(YELLOW, &text))?;
        }
    }
    for found in case.schema_findings(step.index) {
        let (style, label) = if found.is_error() {
            (RED, "schema error")
        } else {
            (YELLOW, "warning")
        };
        let text = format!("{}: {label}: {}", found.location, found.message());
        write_block(out, DETAIL, &painter.paint(style, &text))?;
    }
    for warning in super::describe::step_warnings(script, step) {
        write_block(
            out,
            DETAIL,
            &painter.paint(YELLOW, &format!("warning: {warning}")),
        )?;
    }
    if step.status != StepStatus::Pass {
        for print in &step.prints {
            write_block(out, DETAIL, &painter.paint(DIM, &format!("print: {print}")))?;
        }
    }
    Ok(())
}

/// Writes possibly multi-line text with every line indented.
fn write_block(out: &mut dyn Write, indent: &str, text: &str) -> io::Result<()> {
    for line in text.lines() {
        writeln!(out, "{indent}{line}")?;
    }
    if text.is_empty() {
        writeln!(out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::fixtures;
    use super::*;

    fn render(color: bool) -> String {
        let mut out = Vec::new();
        write(&fixtures::report(), color, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn plain_report_lists_every_step_with_locations() {
        let text = render(false);
        assert!(!text.contains('\x1b'), "no colour when disabled:\n{text}");
        let expected_lines = [
            "! lua_configuration/example.io/Demo/trafficRouting.lua",
            "  ✓ testdata/pass.yaml",
            "      lua_configuration/example.io/Demo/testdata/pass.yaml:12: warning: unknown field `weight` in steps[0]",
            "  ✗ testdata/fail.yaml",
            "      ✗ step 2",
            "          spec.weight: expected 20, actual 30  (lua_configuration/example.io/Demo/testdata/fail.yaml:34)",
            "          spec.host: expected (absent), actual \"a<&>\\\"b\"  (lua_configuration/example.io/Demo/testdata/fail.yaml:30)",
            "          -  weight: 20",
            "          warning: the controller's result differs: {\"spec\":null}",
            "          print: debug 100%",
            "      ! step 1",
            "          lua_configuration/example.io/Demo/trafficRouting.lua:7: runtime error: attempt to index a nil value",
            "          stack traceback",
            "          lua_configuration/example.io/Demo/testdata/error.yaml:6: timeout error: script exceeded 100 ms",
            "      lua_configuration/example.io/Demo/testdata/broken.yaml:1: case error: neither rollout nor trafficRouting defined",
        ];
        for line in expected_lines {
            assert!(
                text.lines().any(|l| l == line),
                "missing line {line:?} in:\n{text}"
            );
        }
        assert_eq!(
            text.lines().last(),
            Some("2 passed, 1 failed, 3 errors, 2 warnings")
        );
    }

    #[test]
    fn colour_marks_diff_lines() {
        let text = render(true);
        assert!(
            text.contains(&format!("{RED}-  weight: 20{RESET}")),
            "{text}"
        );
        assert!(
            text.contains(&format!("{GREEN}+  weight: 30{RESET}")),
            "{text}"
        );
        assert!(text.contains(&format!("{GREEN}✓{RESET}")), "{text}");
    }
}
