//! The verdict: the result of checking cases as plain data (scripts → cases → engine outcomes
//! and findings, in walk order), the rules that decide a step's and a case's verdict
//! ([`CaseFacts`]), and the summary and exit code derived from them. `check` (every report
//! format, `--watch`) and the language server (diagnostics, lenses, `runAll`) read these rules;
//! none decides a verdict of its own.

use std::fmt::Write as _;

use kruise_lua_engine::ScriptError;
use kruise_lua_engine::schema;
use kruise_lua_engine::steps::{CaseOutcome, StepOutcome, StepStatus};
use kruise_lua_engine::yaml::Span;

use super::crd_sources::SourceProblem;
use super::intent::{IntentFinding, IntentUnverified};
use crate::chunk_positions::ScriptPlace;

/// Everything `check` found, in walk order (independent of how the work was scheduled).
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub scripts: Vec<ScriptReport>,
    /// How many shuffled-key-order reruns each case had (`--shuffle N`; 0 when off).
    pub shuffle_runs: u32,
    /// Remarks about the inputs themselves (e.g. a ConfigMap Kruise would not read).
    pub notes: Vec<Note>,
    /// CRD files (or `kruise-lua.toml` `crds` entries) that could not be used: errors, shown
    /// in every format at the file and line, and exit code 1 (the steps of their kinds say
    /// they were not checked against them: [`CaseReport::schema_not_checked`]).
    pub crd_errors: Vec<Note>,
}

/// A remark about an input file (a warning), or an error about one (a CRD not loaded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub location: Location,
    pub message: String,
}

impl Note {
    /// The error about a CRD source that could not be used, at its file and line: what every
    /// format shows of it (`CRD not loaded: <cause>`).
    pub fn crd_not_loaded(problem: &SourceProblem) -> Note {
        Note {
            location: Location {
                file: problem.file.clone(),
                line: Some(problem.line).filter(|line| *line > 0),
            },
            message: format!("CRD not loaded: {}", problem.message),
        }
    }
}

/// One script and the outcome of each of its cases.
#[derive(Debug, Clone, Default)]
pub struct ScriptReport {
    /// Display path of the file holding the script (a `.lua` file or a ConfigMap manifest).
    pub path: String,
    /// The ConfigMap key, for a script embedded in a manifest.
    pub key: Option<String>,
    /// For a ConfigMap script, the line of `path` where each script line starts (see
    /// [`ScriptPlace`]); empty for a `.lua` file.
    pub lines: Vec<u32>,
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
    /// Steps the intent check could not verify, and why (shown in every format).
    pub intent_unverified: Vec<IntentUnverified>,
    /// What the API server would say about each step's output and `expected[i]` (empty with
    /// `--no-schema`; only label and annotation findings when no CRD is loaded for the
    /// script's kind).
    pub schema: Vec<SchemaFinding>,
    /// Why the steps were not checked against a CRD schema though schema validation is on (no
    /// CRD loaded for the script's kind), shown on every step in every format.
    pub schema_not_checked: Option<SchemaNotChecked>,
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
        let crd = match &self.finding.crd {
            Some(crd) => format!(" [CRD {crd}]"),
            None => String::new(),
        };
        format!(
            "{target} {}: {} ({}){crd}",
            self.finding.path_text(),
            self.finding.message,
            self.finding.rule
        )
    }
}

/// Why a script's results were not checked against a CRD schema, though schema validation is
/// on: every step of its cases says so in every front end (silence means "checked and fine").
/// `reason` is worded once, in `schema_check::not_checked`, for `check`, the language server,
/// the debugger and `plan`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaNotChecked {
    pub reason: String,
}

/// A part of a step's checks that did not run, and why (silence means checked and fine):
/// [`CaseFacts::step_notes`].
#[derive(Debug, Clone, PartialEq)]
pub struct StepNote {
    /// `intent` or `schema`.
    pub check: &'static str,
    /// `intent not checked: …` / `schema not checked: …`.
    pub message: String,
}

impl StepNote {
    /// `intent-not-checked`, `schema-not-checked`: what report formats name the note by.
    pub fn id(&self) -> String {
        format!("{}-not-checked", self.check)
    }
}

impl SchemaNotChecked {
    /// `schema not checked: <why>`.
    pub fn message(&self) -> String {
        format!("schema not checked: {}", self.reason)
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

    /// Line of [`ScriptReport::path`] where the script's line 1 sits (1 for a `.lua` file).
    pub fn first_line(&self) -> u32 {
        self.file_line(1)
    }

    /// Where the script's lines are, for mapping Lua's `<string>:LINE:` positions.
    pub fn place(&self) -> ScriptPlace<'_> {
        ScriptPlace {
            file: &self.path,
            lines: &self.lines,
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

/// Where a step's field is in its case file: `line` when known, else the `expected[i]` node's
/// line, else the step's.
pub fn case_field_location(case_path: &str, step: &StepOutcome, line: Option<u32>) -> Location {
    Location {
        file: case_path.to_string(),
        line: line
            .or(span_line(step.expected_span.as_ref()))
            .or(span_line(step.step_span.as_ref())),
    }
}

/// Why a passing step shows as skipped: the controller does not run the script for it
/// (production mode; see `StepOutcome::not_called`). A failing or erroring step keeps its
/// verdict (a custom provider's verdict stays the script's result, and a warning explains).
pub fn skip_reason(step: &StepOutcome) -> Option<&'static str> {
    step.not_called.filter(|_| step.status == StepStatus::Pass)
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

/// A step's verdict as it reads beside the step: the verdict, and for a step that got its
/// expected result yet fails, why (it misroutes, or depends on key order). `check`'s JSON
/// `status` and the editor's words are these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepLabel {
    Pass,
    Invalid,
    Fail,
    Error,
    Misrouted,
    Nondeterministic,
}

impl StepLabel {
    pub fn as_str(self) -> &'static str {
        match self {
            StepLabel::Pass => "pass",
            StepLabel::Invalid => "invalid",
            StepLabel::Fail => "fail",
            StepLabel::Error => "error",
            StepLabel::Misrouted => "misrouted",
            StepLabel::Nondeterministic => "nondeterministic",
        }
    }

    /// What one step does: `step 2 errors`.
    pub fn verb(self) -> &'static str {
        match self {
            StepLabel::Pass => "passes",
            StepLabel::Invalid => "is invalid",
            StepLabel::Fail => "fails",
            StepLabel::Error => "errors",
            StepLabel::Misrouted => "misroutes",
            StepLabel::Nondeterministic => "is nondeterministic",
        }
    }

    /// What several steps do: `steps 1, 2 error`.
    pub fn verb_plural(self) -> &'static str {
        match self {
            StepLabel::Pass => "pass",
            StepLabel::Invalid => "are invalid",
            StepLabel::Fail => "fail",
            StepLabel::Error => "error",
            StepLabel::Misrouted => "misroute",
            StepLabel::Nondeterministic => "are nondeterministic",
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

/// What a case's verdict is decided from: the parts of its result every front end keeps
/// (`check`'s [`CaseReport`], the language server's case result). The rules below are the only
/// place a verdict is decided.
#[derive(Debug, Clone, Copy)]
pub struct CaseFacts<'a> {
    /// The case could not be read or parsed, or yields no step (it would check nothing).
    pub case_error: bool,
    pub steps: &'a [StepOutcome],
    pub schema: &'a [SchemaFinding],
    pub misrouted: &'a [IntentFinding],
    /// Steps the intent check could not verify: not a failure, but every front end says so.
    pub intent_unverified: &'a [IntentUnverified],
    /// Why no step of the case was checked against a CRD schema: not a failure, but every
    /// front end says so on each step.
    pub schema_not_checked: Option<&'a SchemaNotChecked>,
    pub order_dependent: &'a [OrderFinding],
}

impl<'a> CaseFacts<'a> {
    /// The case's verdict: `error` for a case error, else its worst step verdict (a case with
    /// order-dependent or misrouted steps fails).
    pub fn verdict(&self) -> Verdict {
        if self.case_error {
            return Verdict::Error;
        }
        let mut verdict = if self.order_dependent.is_empty() && self.misrouted.is_empty() {
            Verdict::Pass
        } else {
            Verdict::Fail
        };
        for step in self.steps {
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

    /// The step's verdict as it reads ([`StepLabel`]): a step that got its expected result but
    /// fails misroutes (the intent check) or is nondeterministic (key order).
    pub fn step_label(&self, step: &StepOutcome) -> StepLabel {
        match self.step_verdict(step) {
            Verdict::Pass => StepLabel::Pass,
            Verdict::Invalid => StepLabel::Invalid,
            Verdict::Error => StepLabel::Error,
            Verdict::Fail if step.status == StepStatus::Pass => {
                if self.intent_finding(step.index).is_some() {
                    StepLabel::Misrouted
                } else {
                    StepLabel::Nondeterministic
                }
            }
            Verdict::Fail => StepLabel::Fail,
        }
    }

    /// The schema findings of step `index`, errors and warnings.
    pub fn schema_findings(
        &self,
        index: usize,
    ) -> impl Iterator<Item = &'a SchemaFinding> + use<'a> {
        self.schema.iter().filter(move |found| found.step == index)
    }

    pub fn schema_errors(&self, index: usize) -> impl Iterator<Item = &'a SchemaFinding> + use<'a> {
        self.schema_findings(index).filter(|found| found.is_error())
    }

    pub fn order_finding(&self, step: usize) -> Option<&'a OrderFinding> {
        self.order_dependent
            .iter()
            .find(|finding| finding.step == step)
    }

    pub fn intent_finding(&self, step: usize) -> Option<&'a IntentFinding> {
        self.misrouted.iter().find(|finding| finding.step == step)
    }

    /// Why the intent check could not verify the step, when it could not.
    pub fn intent_unverified(&self, step: usize) -> Option<&'a IntentUnverified> {
        self.intent_unverified.iter().find(|note| note.step == step)
    }

    /// Why the case's steps were not checked against a CRD schema, when they were not (the
    /// script's kind has no CRD loaded: the same for every step).
    pub fn schema_not_checked(&self) -> Option<&'a SchemaNotChecked> {
        self.schema_not_checked
    }

    /// What step `step`'s verdict does not cover, as every front end shows it beside the step:
    /// the intent check's note, then schema validation's.
    pub fn step_notes(&self, step: usize) -> Vec<StepNote> {
        let intent = self.intent_unverified(step).map(|note| StepNote {
            check: "intent",
            message: note.message(),
        });
        let schema = self.schema_not_checked.map(|note| StepNote {
            check: "schema",
            message: note.message(),
        });
        intent.into_iter().chain(schema).collect()
    }

    /// Whether a step that passed still fails: its result depends on key order, or its
    /// configuration misroutes.
    pub fn fails_despite_pass(&self, step: usize) -> bool {
        self.order_finding(step).is_some() || self.intent_finding(step).is_some()
    }
}

impl CaseReport {
    /// The parts of this result the verdict rules read.
    pub fn facts(&self) -> CaseFacts<'_> {
        CaseFacts {
            case_error: self.outcome.case_error.is_some(),
            steps: &self.outcome.steps,
            schema: &self.schema,
            misrouted: &self.misrouted,
            intent_unverified: &self.intent_unverified,
            schema_not_checked: self.schema_not_checked.as_ref(),
            order_dependent: &self.order_dependent,
        }
    }

    pub fn verdict(&self) -> Verdict {
        self.facts().verdict()
    }

    pub fn step_verdict(&self, step: &StepOutcome) -> Verdict {
        self.facts().step_verdict(step)
    }

    pub fn step_label(&self, step: &StepOutcome) -> StepLabel {
        self.facts().step_label(step)
    }

    pub fn schema_findings(&self, index: usize) -> impl Iterator<Item = &SchemaFinding> {
        self.facts().schema_findings(index)
    }

    pub fn schema_errors(&self, index: usize) -> impl Iterator<Item = &SchemaFinding> {
        self.facts().schema_errors(index)
    }

    pub fn schema_warnings(&self, index: usize) -> impl Iterator<Item = &SchemaFinding> {
        self.schema_findings(index)
            .filter(|found| !found.is_error())
    }

    pub fn order_finding(&self, step: usize) -> Option<&OrderFinding> {
        self.facts().order_finding(step)
    }

    pub fn intent_finding(&self, step: usize) -> Option<&IntentFinding> {
        self.facts().intent_finding(step)
    }

    /// Why the intent check could not verify the step, when it could not.
    pub fn intent_unverified(&self, step: usize) -> Option<&IntentUnverified> {
        self.facts().intent_unverified(step)
    }

    /// Why the case's steps were not checked against a CRD schema, when they were not.
    pub fn schema_not_checked(&self) -> Option<&SchemaNotChecked> {
        self.facts().schema_not_checked()
    }

    pub fn step_notes(&self, step: usize) -> Vec<StepNote> {
        self.facts().step_notes(step)
    }

    pub fn fails_despite_pass(&self, step: usize) -> bool {
        self.facts().fails_despite_pass(step)
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
    /// Steps whose verdict is pass (not those that got their expected result but misroute or
    /// depend on key order: they count under `misrouted` and `nondeterministic` only).
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
    /// Steps that got their expected result but fail all the same (they misroute or depend on
    /// key order): counted once here, beside `misrouted` and `nondeterministic`, which count
    /// the findings (a failing step can have them too).
    pub expected_but_failing: usize,
    pub skipped_scripts: usize,
    /// CRD sources that could not be used ([`Report::crd_errors`]); they make the exit code 1.
    pub crd_errors: usize,
}

impl Summary {
    pub fn of(report: &Report) -> Summary {
        let mut summary = Summary::of_scripts(&report.scripts);
        summary.add_inputs(&report.notes, &report.crd_errors);
        summary
    }

    /// The counts of some scripts (without the report's notes).
    pub fn of_scripts(scripts: &[ScriptReport]) -> Summary {
        let mut summary = Summary::default();
        for script in scripts {
            summary.add_script(script);
        }
        summary
    }

    /// Adds the counts of the remarks and errors about the inputs themselves.
    pub fn add_inputs(&mut self, notes: &[Note], crd_errors: &[Note]) {
        self.warnings += notes.len();
        self.crd_errors += crd_errors.len();
    }

    /// Adds one script's counts (a report written while it runs counts a script at a time).
    pub fn add_script(&mut self, script: &ScriptReport) {
        let summary = self;
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
            let facts = case.facts();
            for step in &case.outcome.steps {
                summary.warnings += step.warnings.len();
                // By the step's verdict, as the editor counts: a step that got its expected
                // result but misroutes or depends on key order is not "passed"; it is counted
                // under `misrouted` or `nondeterministic` above.
                match facts.step_label(step) {
                    StepLabel::Pass if skip_reason(step).is_some() => summary.skipped_steps += 1,
                    StepLabel::Pass => summary.passed += 1,
                    StepLabel::Invalid => summary.invalid += 1,
                    StepLabel::Misrouted | StepLabel::Nondeterministic => {
                        summary.expected_but_failing += 1
                    }
                    StepLabel::Fail => summary.failed += 1,
                    StepLabel::Error => summary.errors += 1,
                }
            }
        }
    }

    /// 0 when every step passed deterministically, 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        if self.failed
            + self.invalid
            + self.errors
            + self.nondeterministic
            + self.misrouted
            + self.crd_errors
            > 0
        {
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
            (self.crd_errors, "CRD not loaded", "CRDs not loaded"),
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
