//! How `lint` (and `check --lint`) print findings: for people (rustc/ruff-like: code and
//! message, `--> file:line:col`, the source line with carets, the fix), JSON Lines, GitHub
//! annotations, or SARIF through [`super::report::sarif`].

use std::io::{self, Write};

use serde_json::json;

use super::lint_finding::FixCount;
use super::lint_finding::{CONFIGMAP, Finding, LintFormat, SYNTAX, TOO_LARGE};
use super::report::github::{escape_data, escape_property};
use super::report::{self, Format, Report, sarif};
use crate::analysis::{Severity, lints};

const RED: &str = "\x1b[31m";
const YELLOW: &str = "\x1b[33m";
const CYAN: &str = "\x1b[36m";
const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";

/// The one-line summary: `3 problems (1 error, 2 hints) in 4 files, 1 fixable with --fix`.
pub fn summary(findings: &[Finding], files: usize, fixed: Option<FixCount>) -> String {
    let count = |severity| findings.iter().filter(|f| f.severity == severity).count();
    let files = plural(files, "file", "files");
    let mut line = if findings.is_empty() {
        format!("no problems in {files}")
    } else {
        let parts: Vec<String> = [
            (Severity::Error, "error", "errors"),
            (Severity::Warning, "warning", "warnings"),
            (Severity::Information, "info", "infos"),
            (Severity::Hint, "hint", "hints"),
        ]
        .into_iter()
        .filter_map(|(severity, one, many)| {
            let n = count(severity);
            (n > 0).then(|| plural(n, one, many))
        })
        .collect();
        format!(
            "{} ({}) in {files}",
            plural(findings.len(), "problem", "problems"),
            parts.join(", ")
        )
    };
    let fixable = findings.iter().filter(|f| f.fix.is_some()).count();
    if let Some(fixed) = fixed {
        line.push_str(&format!("; {}", fixed.line()));
    } else if fixable > 0 {
        line.push_str(&format!(", {fixable} fixable with --fix"));
    }
    line
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Writes `findings` in `format`, ending with `summary` (except in SARIF).
pub fn write(
    findings: &[Finding],
    summary: &str,
    format: LintFormat,
    color: bool,
    out: &mut dyn Write,
) -> io::Result<()> {
    match format {
        LintFormat::Human => {
            write_human(findings, color, out)?;
            writeln!(out, "{summary}")
        }
        LintFormat::Json => write_json(findings, out),
        LintFormat::Github => {
            write_github(findings, out)?;
            writeln!(out, "{summary}")
        }
        LintFormat::Sarif => sarif::write_log(&rules(), &sarif_findings(findings), out),
    }
}

/// `check --lint`: the lint findings and their summary, then `check`'s report (SARIF: one log
/// with both).
pub fn write_with_check(
    report: &Report,
    findings: &[Finding],
    lint_summary: &str,
    format: Format,
    color: bool,
    out: &mut dyn Write,
) -> io::Result<()> {
    match format {
        Format::Sarif => {
            let mut rules = sarif::check_rules();
            rules.extend(self::rules());
            let mut results = sarif::check_findings(report);
            results.extend(sarif_findings(findings));
            sarif::write_log(&rules, &results, out)
        }
        Format::Json => {
            write_json(findings, out)?;
            report::write(report, format, color, out)
        }
        Format::Github => {
            write_github(findings, out)?;
            writeln!(out, "{lint_summary}")?;
            report::write(report, format, color, out)
        }
        Format::Human | Format::Junit => {
            write_human(findings, color, out)?;
            writeln!(out, "{lint_summary}\n")?;
            report::write(report, format, color, out)
        }
    }
}

fn paint(color: bool, style: &str, text: &str) -> String {
    if color {
        format!("{style}{text}{RESET}")
    } else {
        text.to_string()
    }
}

pub fn write_human(findings: &[Finding], color: bool, out: &mut dyn Write) -> io::Result<()> {
    for f in findings {
        let style = match f.severity {
            Severity::Error => RED,
            Severity::Warning => YELLOW,
            Severity::Information | Severity::Hint => CYAN,
        };
        let head = paint(
            color,
            &format!("{BOLD}{style}"),
            &format!("{}[{}]", f.severity, f.code),
        );
        writeln!(out, "{head}: {}", f.message)?;
        let key = f
            .key
            .as_ref()
            .map(|k| format!(" ({k})"))
            .unwrap_or_default();
        let gutter = f.start.line.to_string().len();
        let pad = " ".repeat(gutter);
        writeln!(
            out,
            "{pad}--> {}:{}:{}{key}",
            f.file, f.start.line, f.start.column
        )?;
        writeln!(out, "{pad} |")?;
        writeln!(out, "{} | {}", f.start.line, f.source_line)?;
        let width = if f.end.line == f.start.line {
            f.end.column.saturating_sub(f.start.column).max(1)
        } else {
            (f.source_line.chars().count() as u32 + 1)
                .saturating_sub(f.start.column)
                .max(1)
        };
        let carets = "^".repeat(width as usize);
        writeln!(
            out,
            "{pad} | {}{}",
            " ".repeat(f.start.column.saturating_sub(1) as usize),
            paint(color, style, &carets)
        )?;
        if let Some(fix) = &f.fix {
            writeln!(out, "{pad} = fix: {}", fix.title)?;
        }
        if let Some(why) = &f.fix_refused {
            writeln!(out, "{pad} = no automatic fix here: {why}")?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// One JSON object per line; `"type": "lint"` tells them from `check`'s lines.
pub fn write_json(findings: &[Finding], out: &mut dyn Write) -> io::Result<()> {
    for f in findings {
        let fix = f.fix.as_ref().map(|fix| {
            json!({
                "title": fix.title,
                "replacement": fix.replacement,
                "line": fix.start.line,
                "column": fix.start.column,
                "end_line": fix.end.line,
                "end_column": fix.end.column,
            })
        });
        let line = json!({
            "type": "lint",
            "file": f.file,
            "key": f.key,
            "line": f.start.line,
            "column": f.start.column,
            "end_line": f.end.line,
            "end_column": f.end.column,
            "code": f.code,
            "severity": f.severity.to_string(),
            "message": f.message,
            "fix": fix,
            "fix_refused": f.fix_refused,
        });
        writeln!(out, "{line}")?;
    }
    Ok(())
}

pub fn write_github(findings: &[Finding], out: &mut dyn Write) -> io::Result<()> {
    for f in findings {
        let command = match f.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Information | Severity::Hint => "notice",
        };
        let mut message = f.message.clone();
        if let Some(fix) = &f.fix {
            message.push_str(&format!(" (fix: {})", fix.title));
        }
        writeln!(
            out,
            "::{command} file={},line={},col={},endLine={},endColumn={},title={}::{}",
            escape_property(&f.file),
            f.start.line,
            f.start.column,
            f.end.line,
            f.end.column,
            escape_property(&title(f.code)),
            escape_data(&message)
        )?;
    }
    Ok(())
}

/// `KL001 unknown-obj-field`, or the pseudo-code alone.
fn title(code: &str) -> String {
    match lints::find(code) {
        Some(lint) => format!("{} {}", lint.code(), lint.name()),
        None => code.to_string(),
    }
}

fn level(severity: Severity) -> sarif::Level {
    match severity {
        Severity::Error => sarif::Level::Error,
        Severity::Warning => sarif::Level::Warning,
        Severity::Information | Severity::Hint => sarif::Level::Note,
    }
}

/// Every lint as a SARIF rule, plus syntax errors and ConfigMap remarks.
pub fn rules() -> Vec<sarif::Rule> {
    let mut rules: Vec<sarif::Rule> = lints::all()
        .iter()
        .map(|lint| sarif::Rule {
            id: lint.code().to_string(),
            name: lint.name().to_string(),
            description: format!("{} ({})", lint.name().replace('-', " "), lint.code()),
            level: level(lint.default_severity()),
        })
        .collect();
    rules.push(sarif::Rule {
        id: SYNTAX.to_string(),
        name: "syntax-error".to_string(),
        description: "The script does not parse as Lua 5.1 (as gopher-lua parses it)".to_string(),
        level: sarif::Level::Error,
    });
    rules.push(sarif::Rule {
        id: CONFIGMAP.to_string(),
        name: "configmap-remark".to_string(),
        description: "A ConfigMap manifest that Kruise would not read as written".to_string(),
        level: sarif::Level::Warning,
    });
    rules.push(sarif::Rule {
        id: TOO_LARGE.to_string(),
        name: "file-too-large".to_string(),
        description: "A file larger than the analysis takes (2 MiB), not analysed".to_string(),
        level: sarif::Level::Warning,
    });
    rules
}

pub fn sarif_findings(findings: &[Finding]) -> Vec<sarif::Finding> {
    let region = |start: super::lint_finding::Pos, end: super::lint_finding::Pos| sarif::Region {
        start_line: start.line,
        start_column: Some(start.column),
        end_line: Some(end.line),
        end_column: Some(end.column),
    };
    findings
        .iter()
        .map(|f| sarif::Finding {
            rule_id: f.code.to_string(),
            level: level(f.severity),
            message: match &f.key {
                Some(key) => format!("{} (ConfigMap key {key})", f.message),
                None => f.message.clone(),
            },
            file: f.file.clone(),
            region: Some(region(f.start, f.end)),
            fix: f.fix.as_ref().map(|fix| sarif::Fix {
                description: fix.title.clone(),
                region: region(fix.start, fix.end),
                replacement: fix.replacement.clone(),
            }),
            related: Vec::new(),
        })
        .collect()
}
