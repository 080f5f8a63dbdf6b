//! GitHub Actions workflow commands: `::error file=…,line=…,title=…::message` per failing
//! field (at the field's line in the case, else at `expected[i]`), per script error (at the
//! Lua line), per case error, and `::warning` for warnings; then the summary line.
//! Values are escaped as the Actions toolkit does (`%`, CR, LF; plus `:` and `,` in properties).

use std::io::{self, Write};

use kruise_lua_engine::steps::StepStatus;

use super::describe::{
    CaseReport, Location, Report, ScriptReport, Summary, canonical_texts, case_error_location,
    case_warning_location, diff_location, fail_location, format_path, format_value,
    step_error_location, step_number,
};
use crate::project::paths;
use crate::project::verdict::Note;

pub fn write(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    begin(&report.notes, &report.crd_errors, out)?;
    for script in &report.scripts {
        script_part(script, out)?;
    }
    end(&Summary::of(report), out)
}

/// What comes before the scripts: the CRD sources that could not be used (errors), and the
/// remarks about the inputs.
pub fn begin(notes: &[Note], crd_errors: &[Note], out: &mut dyn Write) -> io::Result<()> {
    for error in crd_errors {
        command(
            out,
            "error",
            &error.location,
            "CRD not loaded",
            &error.message,
        )?;
    }
    for note in notes {
        command(
            out,
            "warning",
            &note.location,
            &note.location.file,
            &note.message,
        )?;
    }
    Ok(())
}

/// The annotations of one script.
pub fn script_part(script: &ScriptReport, out: &mut dyn Write) -> io::Result<()> {
    if let Some(reason) = &script.skipped {
        let location = Location {
            file: script.path.clone(),
            line: Some(script.first_line()),
        };
        command(
            out,
            "notice",
            &location,
            &format!("{} skipped", script.id()),
            reason,
        )?;
    }
    if let Some(error) = &script.syntax_error {
        // One annotation for the script; its steps do not repeat it.
        command(
            out,
            "error",
            &super::describe::syntax_error_location(script, error),
            &format!("{}: syntax error", script.id()),
            &super::describe::error_message(script, error),
        )?;
    }
    for case in &script.cases {
        write_case(out, script, case)?;
    }
    Ok(())
}

/// The summary line, last.
pub fn end(summary: &Summary, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{}", summary.line())
}

fn write_case(out: &mut dyn Write, script: &ScriptReport, case: &CaseReport) -> io::Result<()> {
    let short = paths::relative(&case.path, &script.case_base);
    for warning in &case.outcome.warnings {
        command(
            out,
            "warning",
            &case_warning_location(case, warning),
            short,
            &warning.message,
        )?;
    }
    if let Some(error) = &case.outcome.case_error {
        command(
            out,
            "error",
            &case_error_location(case, error),
            &format!("{short}: case error"),
            &error.message,
        )?;
    }
    for step in &case.outcome.steps {
        let title = format!("{short} step {}", step_number(step.index));
        match step.status {
            StepStatus::Pass => {}
            StepStatus::Fail => {
                for (position, diff) in step.diff.iter().enumerate() {
                    let mut message = format!(
                        "expected {}, actual {}",
                        format_value(diff.expected.as_ref()),
                        format_value(diff.actual.as_ref())
                    );
                    if position == 0 && !step.unified_diff.is_empty() {
                        message.push_str("\n\n");
                        message.push_str(&step.unified_diff);
                    }
                    let title = format!("{title}: {} differs", format_path(&diff.path));
                    command(
                        out,
                        "error",
                        &diff_location(case, step, diff),
                        &title,
                        &message,
                    )?;
                }
                if step.diff.is_empty() {
                    command(
                        out,
                        "error",
                        &fail_location(case, step),
                        &format!("{title}: result differs"),
                        &canonical_texts(step),
                    )?;
                }
            }
            StepStatus::Error if super::describe::is_script_syntax_error(script, step) => {}
            StepStatus::Error => {
                let (kind, message) = match &step.error {
                    Some(error) => (
                        error.kind.as_str(),
                        super::describe::error_message(script, error),
                    ),
                    None => ("unknown", String::new()),
                };
                let location = step_error_location(script, case, step);
                command(
                    out,
                    "error",
                    &location,
                    &format!("{title}: {kind} error"),
                    &message,
                )?;
            }
        }
        let step_location = Location {
            file: case.path.clone(),
            line: step.step_span.map(|span| span.start.line),
        };
        if let Some(reason) = super::describe::skip_reason(step) {
            command(
                out,
                "notice",
                &step_location,
                &format!("{title} skipped"),
                reason,
            )?;
        }
        if let Some(finding) = case.order_finding(step.index) {
            command(
                out,
                "error",
                &step_location,
                &format!("{title}: nondeterministic"),
                &finding.message(),
            )?;
        }
        if let Some(finding) = case.intent_finding(step.index) {
            command(
                out,
                "error",
                &step_location,
                &format!("{title}: misrouted"),
                &finding.message(script.place()),
            )?;
        }
        for note in case.step_notes(step.index) {
            command(
                out,
                "notice",
                &step_location,
                &format!("{title}: {} not checked", note.check),
                &note.message,
            )?;
        }
        for warning in super::describe::step_warnings(script, step) {
            command(out, "warning", &step_location, &title, &warning)?;
        }
        for found in case.schema_findings(step.index) {
            let (name, what) = if found.is_error() {
                ("error", "invalid")
            } else {
                ("warning", "schema warning")
            };
            command(
                out,
                name,
                &found.location,
                &format!("{title}: {what}"),
                &found.message(),
            )?;
        }
    }
    Ok(())
}

fn command(
    out: &mut dyn Write,
    name: &str,
    location: &Location,
    title: &str,
    message: &str,
) -> io::Result<()> {
    write!(out, "::{name} file={}", escape_property(&location.file))?;
    if let Some(line) = location.line.filter(|line| *line > 0) {
        write!(out, ",line={line}")?;
    }
    writeln!(
        out,
        ",title={}::{}",
        escape_property(title),
        escape_data(message)
    )
}

/// Escapes a command's message.
pub fn escape_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escapes a command property value (`file`, `title`).
pub fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::super::fixtures;
    use super::*;

    fn render() -> Vec<String> {
        let mut out = Vec::new();
        write(&fixtures::report(), &mut out).unwrap();
        String::from_utf8(out)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn escaping_follows_the_toolkit() {
        assert_eq!(escape_data("100%\r\nok: a,b"), "100%25%0D%0Aok: a,b");
        assert_eq!(escape_property("a:b,c%"), "a%3Ab%2Cc%25");
    }

    #[test]
    fn annotations_point_at_fields_script_lines_and_case_nodes() {
        let lines = render();
        let case = "lua_configuration/example.io/Demo/testdata";
        let expect = [
            format!("::warning file={case}/pass.yaml,line=12,title=testdata/pass.yaml::unknown field `weight` in steps[0]"),
            format!(
                "::error file={case}/fail.yaml,line=34,title=testdata/fail.yaml step 2%3A spec.weight differs::expected 20, actual 30%0A%0A--- expected%0A+++ actual%0A@@ -1,2 +1,3 @@%0A spec:%0A-  weight: 20%0A+  host: a<&>\"b%0A+  weight: 30%0A"
            ),
            format!(
                "::error file={case}/fail.yaml,line=30,title=testdata/fail.yaml step 2%3A spec.host differs::expected (absent), actual \"a<&>\\\"b\""
            ),
            "::error file=lua_configuration/example.io/Demo/trafficRouting.lua,line=7,title=testdata/error.yaml step 1%3A runtime error::attempt to index a nil value%0Astack traceback".to_string(),
            format!("::error file={case}/error.yaml,line=6,title=testdata/error.yaml step 2%3A timeout error::script exceeded 100 ms"),
            format!("::error file={case}/broken.yaml,line=1,title=testdata/broken.yaml%3A case error::neither rollout nor trafficRouting defined"),
        ];
        for line in &expect {
            assert!(
                lines.contains(line),
                "missing {line}\nin:\n{}",
                lines.join("\n")
            );
        }
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("::warning") && l.contains("controller"))
        );
        assert_eq!(
            lines.last().unwrap(),
            "2 passed, 1 failed, 3 errors, 2 warnings"
        );
        for line in &lines[..lines.len() - 1] {
            assert!(
                line.starts_with("::"),
                "every line but the summary is a command: {line}"
            );
        }
    }
}
