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
use crate::project::verdict::Note;

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
    let mut log = LogWriter::begin(rules, out)?;
    for finding in findings {
        log.result(finding, out)?;
    }
    log.end(out)
}

/// A SARIF log written while its results arrive: the document around the run's `results`
/// array is written first (up to the array) and last (after it), each result as it comes, so
/// a report holds one script's results at a time, not the whole log. The text is exactly
/// what `serde_json::to_writer_pretty` writes for the whole document.
pub struct LogWriter {
    rule_ids: Vec<String>,
    /// The indentation of the `"results"` line (the array's closing bracket goes there).
    indent: String,
    /// What follows the results array, to the end of the document.
    suffix: String,
    any: bool,
}

impl LogWriter {
    /// Writes the log up to its results array.
    pub fn begin(rules: &[Rule], out: &mut dyn Write) -> io::Result<LogWriter> {
        // The document with a marker where the results go, written as a whole once, then cut
        // at the marker: the text around the results is serde_json's own, whatever its key
        // order and layout.
        const MARKER: &str = "\u{1}kruise-lua sarif results\u{1}";
        let skeleton = serde_json::to_string_pretty(&log_json(rules, json!(MARKER)))?;
        let marker = serde_json::to_string(MARKER)?;
        let at = skeleton
            .find(&marker)
            .expect("the marker is in the skeleton it was put in");
        let (prefix, rest) = skeleton.split_at(at);
        let line_start = prefix.rfind('\n').map_or(0, |newline| newline + 1);
        let indent: String = prefix[line_start..]
            .chars()
            .take_while(|c| *c == ' ')
            .collect();
        out.write_all(prefix.as_bytes())?;
        Ok(LogWriter {
            rule_ids: rules.iter().map(|rule| rule.id.clone()).collect(),
            indent,
            suffix: rest[marker.len()..].to_string(),
            any: false,
        })
    }

    /// Writes one result.
    pub fn result(&mut self, finding: &Finding, out: &mut dyn Write) -> io::Result<()> {
        let index = self.rule_ids.iter().position(|id| *id == finding.rule_id);
        let text = serde_json::to_string_pretty(&result_json(finding, index))?;
        out.write_all(if self.any { b",\n" } else { b"[\n" })?;
        self.any = true;
        // A pretty-printed value at the array's depth: every line one level in (a JSON
        // string never holds a raw line break, so lines are the printer's own).
        for (n, line) in text.split('\n').enumerate() {
            if n > 0 {
                out.write_all(b"\n")?;
            }
            write!(out, "{}  {line}", self.indent)?;
        }
        Ok(())
    }

    /// Closes the results array and the document.
    pub fn end(self, out: &mut dyn Write) -> io::Result<()> {
        if self.any {
            write!(out, "\n{}]", self.indent)?;
        } else {
            out.write_all(b"[]")?;
        }
        out.write_all(self.suffix.as_bytes())?;
        writeln!(out)
    }
}

/// One result's JSON (`ruleIndex` when its rule is listed).
fn result_json(finding: &Finding, rule_index: Option<usize>) -> Value {
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
    if let Some(index) = rule_index {
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
}

/// The whole log with `results` as the run's results.
fn log_json(rules: &[Rule], results: Value) -> Value {
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
    json!({
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
    })
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
            "check/crd-not-loaded",
            "crd-not-loaded",
            "A CRD file (or a kruise-lua.toml crds entry) could not be used: the steps of its kinds were not checked against it",
            Level::Error,
        ),
        rule(
            "check/schema-not-checked",
            "schema-not-checked",
            "A step was not checked against a CRD schema (no CRD for the script's kind was loaded): only labels and annotations were",
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

/// A misrouted step's related locations: each violation's script line, once per line.
fn misrouted_related(script: &ScriptReport, finding: &IntentFinding) -> Vec<Related> {
    finding
        .lines_written()
        .into_iter()
        .map(|(line, violation)| Related {
            file: script.path.clone(),
            line: script.file_line(line),
            message: format!("written here: {violation}"),
        })
        .collect()
}

/// The results of a `check` run, at the places the other reports point at.
pub fn check_findings(report: &Report) -> Vec<Finding> {
    let mut findings = input_findings(&report.notes, &report.crd_errors);
    for script in &report.scripts {
        findings.extend(script_findings(script));
    }
    findings
}

/// A finding of `check` at `location` (its line, when it has one).
fn check_finding(rule: &str, level: Level, location: &Location, message: String) -> Finding {
    Finding {
        rule_id: rule.to_string(),
        level,
        message,
        file: location.file.clone(),
        region: location.line.filter(|line| *line > 0).map(|line| Region {
            start_line: line,
            ..Region::default()
        }),
        fix: None,
        related: Vec::new(),
    }
}

/// The errors and remarks about the inputs themselves (they open the results): the CRD
/// sources that could not be used, then the remarks.
pub fn input_findings(notes: &[Note], crd_errors: &[Note]) -> Vec<Finding> {
    let errors = crd_errors.iter().map(|error| {
        check_finding(
            "check/crd-not-loaded",
            Level::Error,
            &error.location,
            error.message.clone(),
        )
    });
    let remarks = notes.iter().map(|note| {
        check_finding(
            "check/warning",
            Level::Warning,
            &note.location,
            note.message.clone(),
        )
    });
    errors.chain(remarks).collect()
}

/// The results of one script of a `check` run, in report order.
pub fn script_findings(script: &ScriptReport) -> Vec<Finding> {
    let mut findings = Vec::new();
    // Related locations of the next finding pushed (a misrouted step's script lines).
    let related = std::cell::RefCell::new(Vec::new());
    let mut push = |rule: &str, level, location: &Location, message: String| {
        let mut finding = check_finding(rule, level, location, message);
        finding.related = related.take();
        findings.push(finding)
    };
    {
        if let Some(reason) = &script.skipped {
            let location = Location {
                file: script.path.clone(),
                line: Some(script.first_line()),
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
                for note in case.step_notes(step.index) {
                    push(
                        &format!("check/{}", note.id()),
                        Level::Note,
                        &step_location,
                        format!("{title}: {}", note.message),
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

    /// The log written around its results, a result at a time, reads byte for byte as
    /// serde_json's pretty text of the whole document (what `write_log` wrote before it
    /// streamed): with no result, with the check fixture's results, and with a fix.
    #[test]
    fn a_streamed_log_is_the_whole_document_pretty_printed() {
        let whole = |rules: &[Rule], findings: &[Finding]| {
            let results: Vec<Value> = findings
                .iter()
                .map(|finding| {
                    let index = rules.iter().position(|rule| rule.id == finding.rule_id);
                    result_json(finding, index)
                })
                .collect();
            let mut out = serde_json::to_vec_pretty(&log_json(rules, json!(results))).unwrap();
            out.push(b'\n');
            String::from_utf8(out).unwrap()
        };
        let streamed = |rules: &[Rule], findings: &[Finding]| {
            let mut out = Vec::new();
            write_log(rules, findings, &mut out).unwrap();
            String::from_utf8(out).unwrap()
        };
        let rules = check_rules();
        let mut findings = check_findings(&fixtures::report());
        assert!(findings.len() > 3);
        findings.push(Finding {
            rule_id: "KL999".to_string(),
            level: Level::Note,
            message: "a \"quoted\"\nmessage".to_string(),
            file: "/abs/x y.lua".to_string(),
            region: Some(Region {
                start_line: 2,
                start_column: Some(3),
                end_line: Some(2),
                end_column: Some(9),
            }),
            fix: Some(Fix {
                description: "replace".to_string(),
                region: Region {
                    start_line: 2,
                    ..Region::default()
                },
                replacement: "a\n\tb".to_string(),
            }),
            related: vec![Related {
                file: "x.lua".to_string(),
                line: 4,
                message: "written here".to_string(),
            }],
        });
        for findings in [&[][..], &findings[..1], &findings[..]] {
            assert_eq!(streamed(&rules, findings), whole(&rules, findings));
        }
        assert_eq!(streamed(&[], &[]), whole(&[], &[]));
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
