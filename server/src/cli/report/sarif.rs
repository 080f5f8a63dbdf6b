//! SARIF 2.1.0 (OASIS; what GitHub code scanning uploads): one run of the `kruise-lua` tool
//! whose results are `check` failures and/or lint findings, each at a file region, with the
//! lint's fix as a SARIF `fix` when it has one. The fields used, and their rules, are those of
//! the SARIF 2.1.0 standard (§3.13 sarifLog, §3.14 run, §3.19 toolComponent, §3.27 result,
//! §3.30 region, §3.55 fix) and GitHub's "SARIF support for code scanning" page (relative
//! `uri`s, `ruleId` with a matching `rules` entry, `level`).

use std::io::{self, Write};

use kruise_lua_engine::steps::StepStatus;
use serde_json::{Value, json};

use crate::project::intent::IntentFinding;

use super::describe::{
    Location, Report, ScriptReport, canonical_texts, case_error_location, case_warning_location,
    describe_diff, diff_location, error_message, fail_location, step_error_location, step_number,
};

/// The schema URI the standard publishes for 2.1.0 (errata 01), written as `$schema`.
pub const SCHEMA_URI: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

/// A SARIF `level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Error,
    Warning,
    Note,
}

impl Level {
    fn as_str(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warning => "warning",
            Level::Note => "note",
        }
    }
}

/// A rule (`reportingDescriptor`): a lint, or one kind of `check` finding.
#[derive(Debug, Clone)]
pub struct Rule {
    pub id: String,
    pub name: String,
    pub description: String,
    pub level: Level,
}

/// A 1-based region of a file; columns count Unicode code points (the run says so).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Region {
    pub start_line: u32,
    pub start_column: Option<u32>,
    pub end_line: Option<u32>,
    pub end_column: Option<u32>,
}

/// A replacement that fixes a result.
#[derive(Debug, Clone)]
pub struct Fix {
    pub description: String,
    pub region: Region,
    pub replacement: String,
}

/// One result.
#[derive(Debug, Clone)]
pub struct Finding {
    pub rule_id: String,
    pub level: Level,
    pub message: String,
    /// Display path (as reports show it) of the file.
    pub file: String,
    /// None when the finding has no line (the file as a whole).
    pub region: Option<Region>,
    pub fix: Option<Fix>,
    /// Other places the finding concerns (`relatedLocations`): for a misrouted step, the
    /// script lines that wrote the routes that took the probes.
    pub related: Vec<Related>,
}

/// A `relatedLocations` entry: a file's line and what it has to do with the result.
#[derive(Debug, Clone)]
pub struct Related {
    pub file: String,
    pub line: u32,
    pub message: String,
}

/// Writes one SARIF log with one run holding `findings`, described by `rules` (every
/// finding's rule must be among them).
pub fn write_log(rules: &[Rule], findings: &[Finding], out: &mut dyn Write) -> io::Result<()> {
    let rule_index = |id: &str| rules.iter().position(|rule| rule.id == id);
    let results: Vec<Value> = findings
        .iter()
        .map(|finding| {
            let mut physical = json!({ "artifactLocation": artifact(&finding.file) });
            if let Some(region) = finding.region {
                physical["region"] = region_json(region);
            }
            let mut result = json!({
                "ruleId": finding.rule_id,
                "level": finding.level.as_str(),
                "message": { "text": finding.message },
                "locations": [{ "physicalLocation": physical }],
            });
            if let Some(index) = rule_index(&finding.rule_id) {
                result["ruleIndex"] = json!(index);
            }
            if !finding.related.is_empty() {
                let related: Vec<Value> = finding
                    .related
                    .iter()
                    .enumerate()
                    .map(|(id, related)| {
                        json!({
                            "id": id,
                            "physicalLocation": {
                                "artifactLocation": artifact(&related.file),
                                "region": region_json(Region {
                                    start_line: related.line,
                                    ..Region::default()
                                }),
                            },
                            "message": { "text": related.message },
                        })
                    })
                    .collect();
                result["relatedLocations"] = json!(related);
            }
            if let Some(fix) = &finding.fix {
                result["fixes"] = json!([{
                    "description": { "text": fix.description },
                    "artifactChanges": [{
                        "artifactLocation": artifact(&finding.file),
                        "replacements": [{
                            "deletedRegion": region_json(fix.region),
                            "insertedContent": { "text": fix.replacement },
                        }],
                    }],
                }]);
            }
            result
        })
        .collect();
    let rules: Vec<Value> = rules
        .iter()
        .map(|rule| {
            json!({
                "id": rule.id,
                "name": rule.name,
                "shortDescription": { "text": rule.description },
                "defaultConfiguration": { "level": rule.level.as_str() },
            })
        })
        .collect();
    let log = json!({
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": {
                "name": "kruise-lua",
                "version": env!("CARGO_PKG_VERSION"),
                "informationUri": "https://openkruise.io/rollouts/introduction",
                "rules": rules,
            }},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    });
    serde_json::to_writer_pretty(&mut *out, &log)?;
    writeln!(out)
}

/// An `artifactLocation` for a display path: relative paths stay relative (GitHub resolves
/// them against the repository root), absolute ones become `file://` URIs.
fn artifact(file: &str) -> Value {
    let encoded = encode_uri_path(file);
    if file.starts_with('/') {
        json!({ "uri": format!("file://{encoded}") })
    } else {
        json!({ "uri": encoded, "uriBaseId": "%SRCROOT%" })
    }
}

/// Percent-encodes the characters a URI path cannot hold as they are (RFC 3986: anything but
/// unreserved characters, sub-delimiters, `:`, `@` and `/`).
fn encode_uri_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for byte in path.bytes() {
        let keep = byte.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/".contains(&byte);
        if keep {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

fn region_json(region: Region) -> Value {
    let mut value = json!({ "startLine": region.start_line.max(1) });
    if let Some(column) = region.start_column {
        value["startColumn"] = json!(column.max(1));
    }
    if let Some(line) = region.end_line {
        value["endLine"] = json!(line.max(region.start_line.max(1)));
    }
    if let Some(column) = region.end_column {
        value["endColumn"] = json!(column.max(1));
    }
    value
}

/// The rules `check` reports under.
pub fn check_rules() -> Vec<Rule> {
    let rule = |id: &str, name: &str, description: &str, level| Rule {
        id: id.to_string(),
        name: name.to_string(),
        description: description.to_string(),
        level,
    };
    vec![
        rule(
            "check/fail",
            "step-fails",
            "A test case step's result differs from its expected value",
            Level::Error,
        ),
        rule(
            "check/error",
            "step-errors",
            "The script raised an error, timed out or returned something Kruise rejects",
            Level::Error,
        ),
        rule(
            "check/case-error",
            "case-error",
            "A test case cannot be read as Kruise's test reads it",
            Level::Error,
        ),
        rule(
            "check/nondeterministic",
            "nondeterministic",
            "A step's result depends on the order pairs() visits obj's keys",
            Level::Error,
        ),
        rule(
            "check/misrouted",
            "misrouted",
            "A step's configuration routes requests other than the step asks (the intent check)",
            Level::Error,
        ),
        rule(
            "check/intent-not-checked",
            "intent-not-checked",
            "The intent check could not verify a step (no routing model for the resource, nothing to probe, probes cut short)",
            Level::Note,
        ),
        rule(
            "check/invalid",
            "invalid",
            "The API server would reject a step's output or expected value (CRD schema, label and annotation rules)",
            Level::Error,
        ),
        rule(
            "check/schema-warning",
            "schema-warning",
            "The API server would drop a field of a step's output or expected value, or a schema rule was not checked",
            Level::Warning,
        ),
        rule(
            "check/warning",
            "warning",
            "Something the controller would see differently from the test, or an input Kruise would not read as written",
            Level::Warning,
        ),
        rule(
            "check/skipped",
            "skipped",
            "A script that was not run (Kruise would never read it, or it has no cases)",
            Level::Note,
        ),
    ]
}

/// The results of a `check` run, at the places the other reports point at.
/// A misrouted step's related locations: each violation's script line, once per line.
fn misrouted_related(script: &ScriptReport, finding: &IntentFinding) -> Vec<Related> {
    let mut related: Vec<Related> = Vec::new();
    for (i, violation) in finding.violations.iter().enumerate() {
        let Some(line) = finding.script_line(i) else {
            continue;
        };
        let line = script.file_line(line);
        if related.iter().any(|r| r.line == line) {
            continue;
        }
        related.push(Related {
            file: script.path.clone(),
            line,
            message: format!("written here: {violation}"),
        });
    }
    related
}

pub fn check_findings(report: &Report) -> Vec<Finding> {
    let mut findings = Vec::new();
    // Related locations of the next finding pushed (a misrouted step's script lines).
    let related = std::cell::RefCell::new(Vec::new());
    let mut push = |rule: &str, level, location: &Location, message: String| {
        findings.push(Finding {
            rule_id: rule.to_string(),
            level,
            message,
            file: location.file.clone(),
            region: location.line.filter(|line| *line > 0).map(|line| Region {
                start_line: line,
                ..Region::default()
            }),
            fix: None,
            related: related.take(),
        })
    };
    for note in &report.notes {
        push(
            "check/warning",
            Level::Warning,
            &note.location,
            note.message.clone(),
        );
    }
    for script in &report.scripts {
        if let Some(reason) = &script.skipped {
            let location = Location {
                file: script.path.clone(),
                line: Some(script.first_line.max(1)),
            };
            push(
                "check/skipped",
                Level::Note,
                &location,
                format!("{} skipped: {reason}", script.id()),
            );
        }
        for case in &script.cases {
            for warning in &case.outcome.warnings {
                push(
                    "check/warning",
                    Level::Warning,
                    &case_warning_location(case, warning),
                    warning.message.clone(),
                );
            }
            if let Some(error) = &case.outcome.case_error {
                push(
                    "check/case-error",
                    Level::Error,
                    &case_error_location(case, error),
                    format!("case error: {}", error.message),
                );
            }
            for step in &case.outcome.steps {
                let title = format!("{} step {}", case.path, step_number(step.index));
                match step.status {
                    StepStatus::Pass => {}
                    StepStatus::Fail => {
                        for diff in &step.diff {
                            push(
                                "check/fail",
                                Level::Error,
                                &diff_location(case, step, diff),
                                format!("{title}: {}", describe_diff(diff)),
                            );
                        }
                        if step.diff.is_empty() {
                            push(
                                "check/fail",
                                Level::Error,
                                &fail_location(case, step),
                                format!("{title}: result differs\n{}", canonical_texts(step)),
                            );
                        }
                    }
                    StepStatus::Error => {
                        let (kind, message) = match &step.error {
                            Some(error) => (error.kind.as_str(), error_message(script, error)),
                            None => ("unknown", String::new()),
                        };
                        push(
                            "check/error",
                            Level::Error,
                            &step_error_location(script, case, step),
                            format!("{title}: {kind} error: {message}"),
                        );
                    }
                }
                let step_location = Location {
                    file: case.path.clone(),
                    line: step.step_span.map(|span| span.start.line),
                };
                if let Some(reason) = super::describe::skip_reason(step) {
                    push(
                        "check/skipped",
                        Level::Note,
                        &step_location,
                        format!("{title} skipped: {reason}"),
                    );
                }
                if let Some(finding) = case.order_finding(step.index) {
                    push(
                        "check/nondeterministic",
                        Level::Error,
                        &step_location,
                        format!("{title}: {}", finding.message()),
                    );
                }
                if let Some(finding) = case.intent_finding(step.index) {
                    // The script lines that wrote the routes that took the probes.
                    related.replace(misrouted_related(script, finding));
                    push(
                        "check/misrouted",
                        Level::Error,
                        &step_location,
                        format!("{title}: {}", finding.message(script.place())),
                    );
                }
                if let Some(note) = case.intent_unverified(step.index) {
                    push(
                        "check/intent-not-checked",
                        Level::Note,
                        &step_location,
                        format!("{title}: {}", note.message()),
                    );
                }
                for warning in super::describe::step_warnings(script, step) {
                    push(
                        "check/warning",
                        Level::Warning,
                        &step_location,
                        format!("{title}: {warning}"),
                    );
                }
                for found in case.schema_findings(step.index) {
                    let (rule, level, what) = if found.is_error() {
                        ("check/invalid", Level::Error, "invalid")
                    } else {
                        ("check/schema-warning", Level::Warning, "schema warning")
                    };
                    push(
                        rule,
                        level,
                        &found.location,
                        format!("{title}: {what}: {}", found.message()),
                    );
                }
            }
        }
    }
    findings
}

/// `check --format sarif`.
pub fn write(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    write_log(&check_rules(), &check_findings(report), out)
}

#[cfg(test)]
mod tests {
    use super::super::fixtures;
    use super::*;

    fn log(report: &Report) -> Value {
        let mut out = Vec::new();
        write(report, &mut out).unwrap();
        serde_json::from_slice(&out).unwrap()
    }

    #[test]
    fn check_results_point_where_the_other_reports_do() {
        let log = log(&fixtures::report());
        assert_eq!(log["version"], "2.1.0");
        let run = &log["runs"][0];
        let results = run["results"].as_array().unwrap();
        let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
        for result in results {
            let index = result["ruleIndex"].as_u64().unwrap() as usize;
            assert_eq!(rules[index]["id"], result["ruleId"]);
        }
        let at = |rule: &str, uri_end: &str, line: u64| {
            results.iter().any(|r| {
                r["ruleId"] == rule
                    && r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                        .as_str()
                        .unwrap()
                        .ends_with(uri_end)
                    && r["locations"][0]["physicalLocation"]["region"]["startLine"] == line
            })
        };
        assert!(at("check/fail", "testdata/fail.yaml", 34), "{results:#?}");
        assert!(
            at("check/error", "Demo/trafficRouting.lua", 7),
            "{results:#?}"
        );
        assert!(
            at("check/case-error", "testdata/broken.yaml", 1),
            "{results:#?}"
        );
        assert!(
            at("check/warning", "testdata/pass.yaml", 12),
            "{results:#?}"
        );
    }

    #[test]
    fn steps_are_numbered_from_one_as_in_every_other_format() {
        let log = log(&fixtures::report());
        let texts: Vec<&str> = log["runs"][0]["results"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|r| r["message"]["text"].as_str())
            .collect();
        assert!(texts.iter().any(|t| t.contains(" step 1")), "{texts:#?}");
        assert!(!texts.iter().any(|t| t.contains(" step 0")), "{texts:#?}");
    }

    #[test]
    fn uris_are_relative_and_encoded() {
        assert_eq!(
            artifact("a b/x#1.lua"),
            json!({"uri": "a%20b/x%231.lua", "uriBaseId": "%SRCROOT%"})
        );
        assert_eq!(artifact("/abs/x.lua"), json!({"uri": "file:///abs/x.lua"}));
    }
}
