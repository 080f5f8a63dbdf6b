//! The result of a `check` run as plain data (scripts → cases → engine outcomes, in walk
//! order), the summary and exit code derived from it, and the formatters that print it.

use std::fmt::Write as _;
use std::io::{self, Write};

use kruise_lua_engine::schema;
pub use kruise_lua_engine::steps::format_path;
use kruise_lua_engine::steps::{CaseOutcome, FieldDiff, StepOutcome, StepStatus};
use kruise_lua_engine::testcase::{CaseError, CaseWarning};
use kruise_lua_engine::value::JsonValue;
use kruise_lua_engine::yaml::Span;
use kruise_lua_engine::{ErrorKind, ScriptError};

use crate::chunk_positions::{ScriptPlace, map_positions, message_after_position};
pub use intent::IntentFinding;

pub mod github;
pub mod human;
pub mod intent;
pub mod json;
pub mod junit;
pub mod sarif;

/// Everything `check` found, in walk order (independent of how the work was scheduled).
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub scripts: Vec<ScriptReport>,
    /// How many shuffled-key-order reruns each case had (`--shuffle N`; 0 when off).
    pub shuffle_runs: u32,
    /// Remarks about the inputs themselves (e.g. a ConfigMap Kruise would not read).
    pub notes: Vec<Note>,
}

/// A remark about an input file, shown as a warning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub location: Location,
    pub message: String,
}

/// One script and the outcome of each of its cases.
#[derive(Debug, Clone, Default)]
pub struct ScriptReport {
    /// Display path of the file holding the script (a `.lua` file or a ConfigMap manifest).
    pub path: String,
    /// The ConfigMap key, for a script embedded in a manifest.
    pub key: Option<String>,
    /// Line of `path` where the script's line 1 sits (1 for a `.lua` file).
    pub first_line: u32,
    /// Display folder case names are shown relative to in the human report.
    pub case_base: String,
    pub cases: Vec<CaseReport>,
    /// Why the script was not run at all (e.g. an ingress-class script has no test format).
    pub skipped: Option<String>,
    /// The script's syntax error: every step fails with it, and reports show it once for the
    /// script instead of once per step.
    pub syntax_error: Option<ScriptError>,
}

/// One case file (or the missing `testdata` folder) and what happened to it.
#[derive(Debug, Clone)]
pub struct CaseReport {
    /// Display path of the case file.
    pub path: String,
    pub outcome: CaseOutcome,
    /// Steps whose result changed when `obj`'s keys were inserted in another order.
    pub order_dependent: Vec<OrderFinding>,
    /// Steps whose configuration routes requests other than the step asks (`--intent`).
    pub misrouted: Vec<IntentFinding>,
    /// What the API server would say about each step's output and `expected[i]` (empty with
    /// `--no-schema`, or when no CRD is loaded for the script's kind).
    pub schema: Vec<SchemaFinding>,
}

/// One schema finding of a step: on its output (patched onto the case's original as Kruise
/// writes it), on its `expected[i]`, or on both when they are equal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaFinding {
    /// The step's index in the case.
    pub step: usize,
    pub target: SchemaTarget,
    pub finding: schema::Finding,
    /// The field in the case (its line in `expected[i]`, else `expected[i]`, else the step).
    pub location: Location,
}

/// What a schema finding is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaTarget {
    /// The script's result, as Kruise patches it onto the resource.
    Output,
    /// `expected[i]`: an expectation the API server would reject is a bug of the test.
    Expected,
    /// Both (they are equal).
    Both,
}

impl SchemaTarget {
    pub fn as_str(self) -> &'static str {
        match self {
            SchemaTarget::Output => "output",
            SchemaTarget::Expected => "expected",
            SchemaTarget::Both => "output and expected",
        }
    }
}

impl SchemaFinding {
    pub fn is_error(&self) -> bool {
        self.finding.severity == schema::Severity::Error
    }

    /// `expected[1] spec.weight: must be of type integer (type)`: what reports print.
    pub fn message(&self) -> String {
        let target = match self.target {
            SchemaTarget::Output => "output".to_string(),
            SchemaTarget::Expected => format!("expected[{}]", self.step),
            SchemaTarget::Both => format!("output and expected[{}]", self.step),
        };
        format!(
            "{target} {}: {} ({})",
            self.finding.path_text(),
            self.finding.message,
            self.finding.rule
        )
    }
}

/// A step whose result depends on the order `pairs()` visits `obj`'s keys.
#[derive(Debug, Clone, PartialEq)]
pub struct OrderFinding {
    /// The step's index in the case (`steps[i]`; shown numbered from 1).
    pub step: usize,
    /// Distinct results seen across `runs` runs.
    pub distinct: usize,
    pub runs: usize,
    /// How another run's result differs from the sorted-order run's: the differing JSON paths
    /// with both values, or the other run's error.
    pub sample: String,
    /// Where the script calls `pairs()`: the calls whose order can reach the result.
    pub pairs_calls: Vec<Location>,
}

impl OrderFinding {
    pub fn message(&self) -> String {
        let calls = match self.pairs_calls.as_slice() {
            [] => "obj's keys".to_string(),
            calls => {
                let places: Vec<String> = calls.iter().map(ToString::to_string).collect();
                format!("obj's keys (pairs() at {})", places.join(", "))
            }
        };
        format!(
            "nondeterministic: the result depends on the order pairs() visits {calls}: {} distinct results in {} runs with shuffled key order; another run gave {}",
            self.distinct, self.runs, self.sample
        )
    }
}

/// How steps are numbered in every message, option and report: from 1, as Kruise numbers a
/// rollout's steps (`expected[i]` and `steps[i]` keep the YAML's 0-based index).
pub fn step_number(index: usize) -> usize {
    index + 1
}

impl ScriptReport {
    /// The script's identity in machine-readable reports: its path, plus `#key` when it
    /// is embedded in a ConfigMap.
    pub fn id(&self) -> String {
        match &self.key {
            Some(key) => format!("{}#{}", self.path, key),
            None => self.path.clone(),
        }
    }

    /// The line of [`ScriptReport::path`] holding the script's line `lua_line`.
    pub fn file_line(&self, lua_line: u32) -> u32 {
        self.place().file_line(lua_line)
    }

    /// Where the script's lines are, for mapping Lua's `<string>:LINE:` positions.
    pub fn place(&self) -> ScriptPlace<'_> {
        ScriptPlace {
            file: &self.path,
            first_line: self.first_line,
        }
    }
}

/// A file and (when known) a 1-based line in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub file: String,
    pub line: Option<u32>,
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{}", self.file, line),
            None => f.write_str(&self.file),
        }
    }
}

/// A span's 1-based line, when it has a real one.
pub fn span_line(span: Option<&Span>) -> Option<u32> {
    span.map(|span| span.start.line).filter(|line| *line > 0)
}

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

/// [`expected_location`] for a case file not yet in a [`CaseReport`].
pub fn case_field_location(case_path: &str, step: &StepOutcome, line: Option<u32>) -> Location {
    Location {
        file: case_path.to_string(),
        line: line
            .or(span_line(step.expected_span.as_ref()))
            .or(span_line(step.step_span.as_ref())),
    }
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

/// Why a passing step shows as skipped: the controller does not run the script for it
/// (production mode; see `StepOutcome::not_called`). A failing or erroring step keeps its
/// verdict (a custom provider's verdict stays the script's result, and a warning explains).
pub fn skip_reason(step: &StepOutcome) -> Option<&'static str> {
    step.not_called.filter(|_| step.status == StepStatus::Pass)
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

/// A case's overall verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    Pass,
    /// The step's result is what was expected, but the API server would reject the output or
    /// the expectation (schema errors).
    Invalid,
    Fail,
    Error,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Invalid => "invalid",
            Verdict::Fail => "fail",
            Verdict::Error => "error",
        }
    }
}

impl From<StepStatus> for Verdict {
    fn from(status: StepStatus) -> Verdict {
        match status {
            StepStatus::Pass => Verdict::Pass,
            StepStatus::Fail => Verdict::Fail,
            StepStatus::Error => Verdict::Error,
        }
    }
}

impl CaseReport {
    pub fn verdict(&self) -> Verdict {
        if self.outcome.case_error.is_some() {
            return Verdict::Error;
        }
        let mut verdict = if self.order_dependent.is_empty() && self.misrouted.is_empty() {
            Verdict::Pass
        } else {
            Verdict::Fail
        };
        for step in &self.outcome.steps {
            verdict = verdict.max(self.step_verdict(step));
        }
        verdict
    }

    /// A step's verdict: its status, `fail` for a passing step whose result depends on key
    /// order or that misroutes, `invalid` for a passing one with schema errors.
    pub fn step_verdict(&self, step: &StepOutcome) -> Verdict {
        match step.status {
            StepStatus::Pass if self.fails_despite_pass(step.index) => Verdict::Fail,
            StepStatus::Pass if self.schema_errors(step.index).next().is_some() => Verdict::Invalid,
            status => status.into(),
        }
    }

    /// The schema findings of step `index`, errors and warnings.
    pub fn schema_findings(&self, index: usize) -> impl Iterator<Item = &SchemaFinding> {
        self.schema.iter().filter(move |found| found.step == index)
    }

    pub fn schema_errors(&self, index: usize) -> impl Iterator<Item = &SchemaFinding> {
        self.schema_findings(index).filter(|found| found.is_error())
    }

    pub fn schema_warnings(&self, index: usize) -> impl Iterator<Item = &SchemaFinding> {
        self.schema_findings(index)
            .filter(|found| !found.is_error())
    }

    pub fn order_finding(&self, step: usize) -> Option<&OrderFinding> {
        self.order_dependent
            .iter()
            .find(|finding| finding.step == step)
    }

    pub fn intent_finding(&self, step: usize) -> Option<&IntentFinding> {
        self.misrouted.iter().find(|finding| finding.step == step)
    }

    /// Whether a step that passed still fails: its result depends on key order, or its
    /// configuration misroutes.
    pub fn fails_despite_pass(&self, step: usize) -> bool {
        self.order_finding(step).is_some() || self.intent_finding(step).is_some()
    }
}

impl ScriptReport {
    pub fn verdict(&self) -> Verdict {
        self.cases
            .iter()
            .map(CaseReport::verdict)
            .max()
            .unwrap_or(Verdict::Pass)
    }
}

/// Counts for the final line, and the exit code they imply.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    pub passed: usize,
    /// Passing steps the controller does not run the script for (production mode).
    pub skipped_steps: usize,
    pub failed: usize,
    /// Steps whose result was as expected but that the API server would reject (schema
    /// errors); they make the exit code 1.
    pub invalid: usize,
    /// Step errors plus case-level errors.
    pub errors: usize,
    pub warnings: usize,
    /// Steps whose result depends on key order (`--shuffle`); they make the exit code 1.
    pub nondeterministic: usize,
    /// Steps the intent check finds misrouting (`--intent`); they make the exit code 1.
    pub misrouted: usize,
    pub skipped_scripts: usize,
}

impl Summary {
    pub fn of(report: &Report) -> Summary {
        let mut summary = Summary::of_scripts(&report.scripts);
        summary.warnings += report.notes.len();
        summary
    }

    /// The counts of some scripts (without the report's notes).
    pub fn of_scripts(scripts: &[ScriptReport]) -> Summary {
        let mut summary = Summary::default();
        for script in scripts {
            if script.skipped.is_some() {
                summary.skipped_scripts += 1;
            }
            for case in &script.cases {
                summary.warnings += case.outcome.warnings.len();
                summary.nondeterministic += case.order_dependent.len();
                summary.misrouted += case.misrouted.len();
                if case.outcome.case_error.is_some() {
                    summary.errors += 1;
                }
                summary.warnings += case.schema.iter().filter(|f| !f.is_error()).count();
                for step in &case.outcome.steps {
                    summary.warnings += step.warnings.len();
                    match step.status {
                        StepStatus::Pass if case.schema_errors(step.index).next().is_some() => {
                            summary.invalid += 1
                        }
                        StepStatus::Pass if skip_reason(step).is_some() => {
                            summary.skipped_steps += 1
                        }
                        StepStatus::Pass => summary.passed += 1,
                        StepStatus::Fail => summary.failed += 1,
                        StepStatus::Error => summary.errors += 1,
                    }
                }
            }
        }
        summary
    }

    /// 0 when every step passed deterministically, 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        if self.failed + self.invalid + self.errors + self.nondeterministic + self.misrouted > 0 {
            1
        } else {
            0
        }
    }

    /// [`Summary::exit_code`], where with `deny_warnings` a warning also gives 1.
    pub fn exit_code_denying(&self, deny_warnings: bool) -> u8 {
        if deny_warnings && self.warnings > 0 {
            1
        } else {
            self.exit_code()
        }
    }

    /// `N passed, N failed, N errors` and the optional counts after it.
    pub fn line(&self) -> String {
        let mut line = format!(
            "{} passed, {} failed, {}",
            self.passed,
            self.failed,
            count(self.errors, "error", "errors")
        );
        for (n, one, many) in [
            (self.invalid, "invalid", "invalid"),
            (
                self.nondeterministic,
                "nondeterministic",
                "nondeterministic",
            ),
            (self.misrouted, "misrouted", "misrouted"),
            (self.skipped_steps, "step skipped", "steps skipped"),
            (self.warnings, "warning", "warnings"),
            (self.skipped_scripts, "script skipped", "scripts skipped"),
        ] {
            if n > 0 {
                let _ = write!(line, ", {}", count(n, one, many));
            }
        }
        line
    }
}

fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Output formats of `check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Format {
    /// Per script, case and step, with diffs (for people)
    #[default]
    Human,
    /// JSON Lines, one object per step (and per case-level error)
    Json,
    /// JUnit XML: a testsuite per script, a testcase per step
    Junit,
    /// GitHub Actions workflow annotations (::error / ::warning)
    Github,
    /// SARIF 2.1.0 (GitHub code scanning)
    Sarif,
}

/// Writes `report` in `format`.
pub fn write(report: &Report, format: Format, color: bool, out: &mut dyn Write) -> io::Result<()> {
    match format {
        Format::Human => human::write(report, color, out),
        Format::Json => json::write(report, out),
        Format::Junit => junit::write(report, out),
        Format::Github => github::write(report, out),
        Format::Sarif => sarif::write(report, out),
    }
}

#[cfg(test)]
pub(crate) mod fixtures {
    //! Hand-built outcomes for the formatters' unit tests (no engine run needed).

    use super::*;
    use kruise_lua_engine::yaml::{PathSeg, Pos};

    pub fn span(line: u32) -> Option<Span> {
        Some(Span {
            start: Pos {
                line,
                column: 5,
                offset: 0,
            },
            end: Pos {
                line,
                column: 9,
                offset: 0,
            },
        })
    }

    pub fn step(index: usize, status: StepStatus) -> StepOutcome {
        StepOutcome {
            index,
            status,
            obj: Default::default(),
            actual: Some(r#"{"spec":{"weight":10}}"#.to_string()),
            expected: Some(r#"{"spec":{"weight":10}}"#.to_string()),
            error: None,
            diff: vec![],
            unified_diff: String::new(),
            warnings: vec![],
            not_called: None,
            prints: vec![],
            expected_span: span(20 + 10 * index as u32),
            step_span: span(5 + index as u32),
        }
    }

    /// One script with a passing case, a failing step, a runtime error, a case error and
    /// warnings; the failing step has `<&>` and a quote in its values to exercise escaping.
    pub fn report() -> Report {
        let mut failing = step(1, StepStatus::Fail);
        failing.actual = Some(r#"{"spec":{"host":"a<&>\"b","weight":30}}"#.to_string());
        failing.expected = Some(r#"{"spec":{"weight":20}}"#.to_string());
        failing.diff = vec![
            FieldDiff {
                path: vec![PathSeg::Key("spec".into()), PathSeg::Key("weight".into())],
                expected: Some(JsonValue::Int(20)),
                actual: Some(JsonValue::Float(30.0)),
                span: span(34),
            },
            FieldDiff {
                path: vec![PathSeg::Key("spec".into()), PathSeg::Key("host".into())],
                expected: None,
                actual: Some(JsonValue::String("a<&>\"b".into())),
                span: None,
            },
        ];
        failing.unified_diff =
            "--- expected\n+++ actual\n@@ -1,2 +1,3 @@\n spec:\n-  weight: 20\n+  host: a<&>\"b\n+  weight: 30\n"
                .to_string();
        failing.warnings = vec!["the controller's result differs: {\"spec\":null}".to_string()];
        failing.prints = vec!["debug 100%".to_string()];

        let mut erroring = step(0, StepStatus::Error);
        erroring.actual = None;
        erroring.error = Some(
            ScriptError::new(
                ErrorKind::Runtime,
                "<string>:7: attempt to index a nil value\nstack traceback",
            )
            .at_line(Some(7)),
        );
        let mut timing_out = step(1, StepStatus::Error);
        timing_out.actual = None;
        timing_out.error = Some(ScriptError::new(
            ErrorKind::Timeout,
            "script exceeded 100 ms",
        ));

        let script = ScriptReport {
            path: "lua_configuration/example.io/Demo/trafficRouting.lua".into(),
            key: None,
            first_line: 1,
            case_base: "lua_configuration/example.io/Demo".into(),
            skipped: None,
            syntax_error: None,
            cases: vec![
                CaseReport {
                    path: "lua_configuration/example.io/Demo/testdata/pass.yaml".into(),
                    outcome: CaseOutcome {
                        case_error: None,
                        warnings: vec![CaseWarning {
                            message: "unknown field `weight` in steps[0]".into(),
                            span: span(12),
                        }],
                        steps: vec![step(0, StepStatus::Pass)],
                    },
                    order_dependent: vec![],
                    misrouted: vec![],
                    schema: vec![],
                },
                CaseReport {
                    path: "lua_configuration/example.io/Demo/testdata/fail.yaml".into(),
                    outcome: CaseOutcome {
                        case_error: None,
                        warnings: vec![],
                        steps: vec![step(0, StepStatus::Pass), failing],
                    },
                    order_dependent: vec![],
                    misrouted: vec![],
                    schema: vec![],
                },
                CaseReport {
                    path: "lua_configuration/example.io/Demo/testdata/error.yaml".into(),
                    outcome: CaseOutcome {
                        case_error: None,
                        warnings: vec![],
                        steps: vec![erroring, timing_out],
                    },
                    order_dependent: vec![],
                    misrouted: vec![],
                    schema: vec![],
                },
                CaseReport {
                    path: "lua_configuration/example.io/Demo/testdata/broken.yaml".into(),
                    outcome: CaseOutcome {
                        case_error: Some(CaseError {
                            message: "neither rollout nor trafficRouting defined".into(),
                            span: span(1),
                        }),
                        warnings: vec![],
                        steps: vec![],
                    },
                    order_dependent: vec![],
                    misrouted: vec![],
                    schema: vec![],
                },
            ],
        };
        Report {
            scripts: vec![script],
            shuffle_runs: 0,
            notes: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kruise_lua_engine::yaml::PathSeg;

    #[test]
    fn paths_read_as_written_in_yaml() {
        let path = vec![
            PathSeg::Key("spec".into()),
            PathSeg::Key("http".into()),
            PathSeg::Index(0),
            PathSeg::Key("a.b".into()),
        ];
        assert_eq!(format_path(&path), r#"spec.http[0]["a.b"]"#);
        assert_eq!(format_path(&[]), "(root)");
        assert_eq!(format_path(&[PathSeg::Index(2)]), "[2]");
    }

    #[test]
    fn values_read_like_go_json() {
        assert_eq!(go_number(50.0), "50");
        assert_eq!(go_number(0.5), "0.5");
        assert_eq!(go_number(1e21), "1e+21");
        assert_eq!(go_number(1e-7), "1e-7");
        assert_eq!(go_number(1e20), "100000000000000000000");
        let value = JsonValue::Array(vec![
            JsonValue::Int(1),
            JsonValue::String("a\"<".into()),
            JsonValue::Null,
        ]);
        assert_eq!(format_value(Some(&value)), r#"[1,"a\"<",null]"#);
        assert_eq!(format_value(None), "(absent)");
    }

    #[test]
    fn lua_positions_map_to_the_script_file() {
        let script = ScriptReport {
            path: "cm.yaml".into(),
            first_line: 10,
            ..Default::default()
        };
        let error = ScriptError::new(
            ErrorKind::Runtime,
            "<string>:4: attempt to index a nil value",
        );
        assert_eq!(
            error_message(&script, &error),
            "attempt to index a nil value"
        );
        assert_eq!(
            located_error(&script, &error),
            "cm.yaml:13: attempt to index a nil value"
        );
        let error = ScriptError::new(ErrorKind::Runtime, "<string>: odd");
        assert_eq!(error_message(&script, &error), "<string>: odd");
    }

    #[test]
    fn positions_quoted_in_warnings_are_mapped_too() {
        let mut report = fixtures::report();
        let script = &mut report.scripts[0];
        script.cases[0].outcome.steps[0].warnings =
            vec!["Kruise's unit test gets a runtime error (<string>:3: boom)".into()];
        assert_eq!(
            step_warnings(script, &script.cases[0].outcome.steps[0]),
            [
                "Kruise's unit test gets a runtime error (lua_configuration/example.io/Demo/trafficRouting.lua:3: boom)"
            ]
        );
    }

    #[test]
    fn passing_steps_the_controller_skips_count_apart() {
        let mut report = fixtures::report();
        let step = &mut report.scripts[0].cases[0].outcome.steps[0];
        step.not_called = Some(kruise_lua_engine::steps::NOT_CALLED_NO_TRAFFIC);
        assert!(skip_reason(step).is_some());
        let summary = Summary::of(&report);
        assert_eq!((summary.passed, summary.skipped_steps), (1, 1));
        assert_eq!(
            summary.line(),
            "1 passed, 1 failed, 3 errors, 1 step skipped, 2 warnings"
        );
    }

    #[test]
    fn summary_counts_steps_and_case_errors() {
        let summary = Summary::of(&fixtures::report());
        assert_eq!((summary.passed, summary.failed, summary.errors), (2, 1, 3));
        assert_eq!(summary.warnings, 2);
        assert_eq!(summary.exit_code(), 1);
        assert_eq!(summary.line(), "2 passed, 1 failed, 3 errors, 2 warnings");
    }

    #[test]
    fn deny_warnings_fails_a_green_run_with_warnings() {
        let mut report = fixtures::report();
        report.scripts[0].cases.truncate(1);
        let summary = Summary::of(&report);
        assert_eq!(summary.warnings, 1);
        assert_eq!(summary.exit_code_denying(false), 0);
        assert_eq!(summary.exit_code_denying(true), 1);
    }

    #[test]
    fn order_dependence_alone_fails_the_run() {
        let mut report = fixtures::report();
        report.scripts[0].cases.truncate(1);
        assert_eq!(Summary::of(&report).exit_code(), 0);
        report.scripts[0].cases[0]
            .order_dependent
            .push(OrderFinding {
                step: 0,
                distinct: 2,
                runs: 4,
                sample: "{}".into(),
                pairs_calls: Vec::new(),
            });
        let summary = Summary::of(&report);
        assert_eq!(summary.exit_code(), 1);
        assert_eq!(report.scripts[0].cases[0].verdict(), Verdict::Fail);
    }

    #[test]
    fn configmap_lines_are_offset() {
        let script = ScriptReport {
            first_line: 10,
            key: Some("lua.traffic.routing.K.g".into()),
            path: "cm.yaml".into(),
            ..Default::default()
        };
        assert_eq!(script.file_line(1), 10);
        assert_eq!(script.file_line(4), 13);
        assert_eq!(script.id(), "cm.yaml#lua.traffic.routing.K.g");
    }
}
