//! Diagnostics from test runs (on the cases and on the script), and the per-file store that
//! merges them with the Lua analysis and remembers what was published, so stale ones get cleared.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use kruise_lua_engine::error::ErrorKind;
use kruise_lua_engine::intent::StepIntentOutcome;
use kruise_lua_engine::steps::{StepOutcome, StepStatus, format_path};
use kruise_lua_engine::value::JsonValue;
use kruise_lua_engine::yaml::Span;
use tower_lsp_server::ls_types::{
    Diagnostic, DiagnosticRelatedInformation, DiagnosticSeverity, Location, NumberOrString,
    Position, Range,
};

use super::documents::path_uri;
use super::project::ScriptId;
use super::runs::{CaseResult, ScriptResults};
use super::text::{LineIndex, line_range};
use crate::chunk_positions::{ScriptPlace, map_positions, message_after_position};
use crate::cli::report::SchemaTarget;
use crate::cli::schema_check::field_node;
use kruise_lua_engine::testcase::TestCase;

pub const SOURCE: &str = "kruise-lua";

/// Diagnostics of a file, by producer: the Lua analysis, and each script's runs.
#[derive(Debug, Default)]
pub struct FileDiagnostics {
    pub analysis: Vec<Diagnostic>,
    /// Whether the Lua analysis has looked at this file. It reports every syntax error (the
    /// compiler's limits included) with its exact range, so a run's "syntax error" is then
    /// the same problem said again, or one of an older text.
    pub analysed: bool,
    pub runs: BTreeMap<ScriptId, Vec<Diagnostic>>,
}

/// Put before what a script's last run said while a newer run of it is pending: those results
/// belong to an older text and must not read as current.
pub const OUTDATED: &str = "(outdated: rerunning after a change) ";

fn outdated(d: &Diagnostic) -> Diagnostic {
    let mut d = d.clone();
    d.message = format!("{OUTDATED}{}", d.message);
    d
}

impl FileDiagnostics {
    fn runs_marked(&self, stale: &HashSet<ScriptId>) -> impl Iterator<Item = Diagnostic> + '_ {
        let stale: Vec<bool> = self.runs.keys().map(|id| stale.contains(id)).collect();
        let analysed = self.analysed;
        self.runs
            .values()
            .zip(stale)
            .flat_map(move |(list, stale)| {
                list.iter()
                    .filter(move |d| !(analysed && is_syntax(d)))
                    .map(move |d| if stale { outdated(d) } else { d.clone() })
            })
    }
}

/// A syntax error, from the analysis, the quick check or a run (`ErrorKind::Syntax`).
fn is_syntax(d: &Diagnostic) -> bool {
    d.code == Some(NumberOrString::String("syntax".into()))
}

/// Everything published, per file.
#[derive(Debug, Default)]
pub struct DiagnosticStore {
    files: HashMap<PathBuf, FileDiagnostics>,
    /// The files each script's runs put diagnostics in (so a run touches only those).
    reach: HashMap<ScriptId, Vec<PathBuf>>,
    /// Scripts with a run pending: their stored run diagnostics are from an older text.
    stale: HashSet<ScriptId>,
}

impl DiagnosticStore {
    fn all(&self, path: &Path) -> Vec<Diagnostic> {
        let Some(file) = self.files.get(path) else {
            return Vec::new();
        };
        let mut all = file.analysis.clone();
        all.extend(file.runs_marked(&self.stale));
        all
    }

    /// Sets the analysis layer of a file; returns the file's full list to publish.
    pub fn set_analysis(&mut self, path: &Path, diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
        let file = self.files.entry(path.to_path_buf()).or_default();
        file.analysis = diagnostics;
        file.analysed = true;
        self.all(path)
    }

    /// What to publish right after an edit, before the full analysis: the quick syntax
    /// verdict in place of the syntax errors, the previous lints when the lines did not move
    /// (`keep_lints`), and the runs' diagnostics. The store is not changed.
    pub fn quick(
        &self,
        path: &Path,
        syntax: Option<Diagnostic>,
        keep_lints: bool,
    ) -> Vec<Diagnostic> {
        let mut all: Vec<Diagnostic> = syntax.into_iter().collect();
        if let Some(file) = self.files.get(path) {
            if keep_lints {
                all.extend(file.analysis.iter().filter(|d| !is_syntax(d)).cloned());
            }
            all.extend(file.runs_marked(&self.stale));
        }
        all
    }

    /// A file's current list (what its last publish said), for pull diagnostics.
    pub fn current(&self, path: &Path) -> Vec<Diagnostic> {
        self.all(path)
    }

    /// Every file with diagnostics, with its list, for `workspace/diagnostic`.
    pub fn every_file(&self) -> Vec<(PathBuf, Vec<Diagnostic>)> {
        let mut files: Vec<(PathBuf, Vec<Diagnostic>)> = self
            .files
            .keys()
            .map(|p| (p.clone(), self.all(p)))
            .filter(|(_, list)| !list.is_empty())
            .collect();
        files.sort_by(|a, b| a.0.cmp(&b.0));
        files
    }

    /// Drops everything about a file (it was deleted).
    pub fn forget(&mut self, path: &Path) {
        self.files.remove(path);
    }

    /// Drops everything about the files under a folder (it was deleted or moved); returns them.
    pub fn forget_under(&mut self, dir: &Path) -> Vec<PathBuf> {
        let gone: Vec<PathBuf> = self
            .files
            .keys()
            .filter(|p| p.starts_with(dir))
            .cloned()
            .collect();
        for path in &gone {
            self.files.remove(path);
        }
        gone
    }

    /// A run of `script` is pending: what its last run said is marked outdated from now on.
    pub fn mark_stale(&mut self, script: &ScriptId) {
        self.stale.insert(script.clone());
    }

    /// While `script` is marked outdated: the files showing its run diagnostics, with their
    /// lists (to republish them marked).
    pub fn stale_lists(&self, script: &ScriptId) -> Vec<(PathBuf, Vec<Diagnostic>)> {
        if !self.stale.contains(script) {
            return Vec::new();
        }
        let reach = self.reach.get(script).cloned().unwrap_or_default();
        reach
            .into_iter()
            .filter(|p| {
                self.files
                    .get(p)
                    .is_some_and(|f| f.runs.get(script).is_some_and(|l| !l.is_empty()))
            })
            .map(|p| {
                let all = self.all(&p);
                (p, all)
            })
            .collect()
    }

    /// Replaces everything a script's runs said, in every file; returns each touched file's
    /// full list (files the script no longer reaches get their run diagnostics cleared).
    /// Costs the files this script reaches, not every file of the workspace.
    pub fn set_runs(
        &mut self,
        script: &ScriptId,
        per_file: Vec<(PathBuf, Vec<Diagnostic>)>,
    ) -> Vec<(PathBuf, Vec<Diagnostic>)> {
        self.stale.remove(script);
        let mut touched = self.reach.remove(script).unwrap_or_default();
        for path in &touched {
            if let Some(file) = self.files.get_mut(path) {
                file.runs.remove(script);
            }
        }
        let mut reach = Vec::with_capacity(per_file.len());
        for (path, list) in per_file {
            self.files
                .entry(path.clone())
                .or_default()
                .runs
                .insert(script.clone(), list);
            reach.push(path.clone());
            if !touched.contains(&path) {
                touched.push(path);
            }
        }
        if !reach.is_empty() {
            self.reach.insert(script.clone(), reach);
        }
        touched
            .into_iter()
            .map(|p| {
                let all = self.all(&p);
                (p, all)
            })
            .collect()
    }
}

pub fn span_range(text: &str, index: &LineIndex, span: Span) -> Range {
    index.range(
        text,
        span.start.offset..span.end.offset.max(span.start.offset),
    )
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
    let script_line_range = |line: u32| -> Range {
        match &results.embedded {
            None => line_range(&results.host_text, &host_index, line),
            Some(map) => {
                let host_line = map.first_line as u32 + line;
                line_range(&results.host_text, &host_index, host_line)
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
        first_line: results
            .embedded
            .as_ref()
            .map_or(1, |map| map.first_line as u32 + 1),
    };
    let return_line = top_level_return_line(&results.source);
    let mut script_diags = Vec::new();
    let mut out = Vec::new();
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
        let mut summary = format!("{passed}/{total} cases pass");
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
                Ok(_) if c.invalid() => {
                    let steps = c.invalid_steps();
                    let list = steps
                        .iter()
                        .map(|s| s.to_string())
                        .collect::<Vec<_>>()
                        .join(", ");
                    format!(
                        "{} step{} {list} invalid (schema)",
                        c.name(),
                        if steps.len() > 1 { "s" } else { "" },
                    )
                }
                Ok(_) => {
                    let steps = c.failing_steps();
                    let list = steps
                        .iter()
                        .map(|s| s.to_string())
                        .collect::<Vec<_>>()
                        .join(", ");
                    format!(
                        "{} step{} {list} fail{}",
                        c.name(),
                        if steps.len() > 1 { "s" } else { "" },
                        if steps.len() > 1 { "" } else { "s" }
                    )
                }
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
        let mut d = diagnostic(script_line_range(1), severity, "summary", summary);
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
    let check = case.intent.iter().find(|check| check.index == step)?;
    let StepIntentOutcome::Checked(report) = &check.outcome else {
        return None;
    };
    if report.violations.is_empty() {
        return None;
    }
    let mut text = report
        .violations
        .iter()
        .map(|v| v.message.as_str())
        .collect::<Vec<_>>()
        .join("; ");
    if report.more > 0 {
        text.push_str(&format!("; and {} more", report.more));
    }
    Some(text)
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
            diags.push(diagnostic(
                step_range,
                DiagnosticSeverity::ERROR,
                "step-misrouted",
                format!("step {number} misroutes (intent check): {violations}"),
            ));
        }
        // A step the intent check could not verify says so (silence means checked and fine).
        if let Some(why) = case
            .intent
            .iter()
            .find(|check| check.index == step.index)
            .and_then(|check| check.outcome.unverified())
        {
            diags.push(diagnostic(
                step_range,
                DiagnosticSeverity::HINT,
                "step-intent-not-checked",
                format!("step {number}: intent check not done: {why}"),
            ));
        }
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
                let range = step
                    .expected_span
                    .map_or(step_range, |s| span_range(text, &index, s));
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
mod tests {
    use super::*;
    use crate::lsp::project::lua_target;
    use crate::lsp::runs::{RunInput, execute};
    use kruise_lua_engine::runner::{Mode, RunOptions};

    fn run(script: &str, case: &str) -> ScriptResults {
        let input = RunInput {
            target: lua_target(Path::new("/t/x/Route/trafficRouting.lua")),
            source: script.into(),
            host_text: script.into(),
            embedded: None,
            cases_error: None,
            cases: vec![(PathBuf::from("/t/x/Route/testdata/three.yaml"), case.into())],
        };
        execute(input, None, Mode::Harness, &RunOptions::default(), &|| {
            false
        })
        .unwrap()
    }

    const CASE: &str = crate::lsp::runs::tests::CASE;

    /// A VirtualService case whose step 1 asks for /beta requests (which `frontend` serves)
    /// and whose script sends them to the canary ahead of every route.
    const MISROUTING_CASE: &str = "\
rollout:
  spec:
    strategy:
      canary:
        trafficRoutings:
        - service: web
        steps:
        - matches:
          - path:
              value: /beta
original:
  apiVersion: networking.istio.io/v1
  kind: VirtualService
  metadata:
    name: web
  spec:
    http:
    - match:
      - uri:
          prefix: /api
      route:
      - destination:
          host: web
    - route:
      - destination:
          host: frontend
";

    #[test]
    fn misrouting_step_gets_a_diagnostic_on_the_step() {
        let script = "table.insert(obj.data.spec.http, 1, {match = {{uri = {prefix = '/beta'}}}, \
            route = {{destination = {host = obj.canaryService}}}})\nreturn obj.data\n";
        let files = files_of(&run(script, MISROUTING_CASE));
        let (_, case_diags) = &files[0];
        let misrouted: Vec<_> = case_diags
            .iter()
            .filter(|d| d.code == Some(NumberOrString::String("step-misrouted".into())))
            .collect();
        assert_eq!(misrouted.len(), 1, "{case_diags:?}");
        // steps[0] is on line 8 (0-based 7).
        assert_eq!(misrouted[0].range.start.line, 7);
        assert!(
            misrouted[0].message.contains(
                "GET /beta → web-canary 100 % (by spec.http[0]), expected frontend 100 %"
            ),
            "{}",
            misrouted[0].message
        );
    }

    #[test]
    fn a_step_without_a_routing_model_gets_a_hint() {
        let case = MISROUTING_CASE
            .replace("networking.istio.io/v1", "example.com/v1")
            .replace("kind: VirtualService", "kind: Route");
        let files = files_of(&run("return obj.data\n", &case));
        let (_, case_diags) = &files[0];
        let hints: Vec<_> = case_diags
            .iter()
            .filter(|d| d.code == Some(NumberOrString::String("step-intent-not-checked".into())))
            .collect();
        assert_eq!(hints.len(), 1, "{case_diags:?}");
        assert_eq!(hints[0].severity, Some(DiagnosticSeverity::HINT));
        assert_eq!(hints[0].range.start.line, 7);
        assert!(
            hints[0]
                .message
                .contains("no routing model for Route (example.com)"),
            "{}",
            hints[0].message
        );
    }

    #[test]
    fn failing_step_marks_expected_entry_and_field() {
        let script =
            "local spec = obj.data.spec\nspec.weight = obj.canaryWeight\nreturn obj.data\n";
        let files = run(script, CASE);
        let (case_path, case_diags) = &files_of(&files)[0];
        assert!(case_path.ends_with("three.yaml"));
        let fails: Vec<_> = case_diags
            .iter()
            .filter(|d| d.code == Some(NumberOrString::String("step-fails".into())))
            .collect();
        assert_eq!(fails.len(), 1);
        // expected[1] starts on line 24 (0-based 23): `- apiVersion: x/v1`.
        assert_eq!(fails[0].range.start.line, 23);
        assert!(
            fails[0]
                .message
                .contains("spec.weight: expected 60, actual 50"),
            "{}",
            fails[0].message
        );
        assert!(fails[0].message.contains("+++ actual"));
        let field: Vec<_> = case_diags
            .iter()
            .filter(|d| d.code == Some(NumberOrString::String("field-differs".into())))
            .collect();
        assert_eq!(field.len(), 1);
        assert_eq!(field[0].range.start.line, 28, "the `weight: 60` line");
        let (_, script_diags) = files_of(&files).pop().unwrap();
        assert!(
            script_diags
                .iter()
                .any(|d| d.message == "0/1 cases pass — three step 2 fails"),
            "{script_diags:?}"
        );
    }

    /// A CRD of our own for the tests' `x`/`Route`: `spec.weight` is an integer up to 10.
    fn route_crd() -> String {
        crate::crd_sources::test_crd("x", "Route", "{weight: {type: integer, maximum: 10}}")
    }

    fn validated(script: &str, case: &str) -> ScriptResults {
        let mut results = run(script, case);
        let mut set = kruise_lua_engine::schema::SchemaSet::new();
        set.add_text("route.yaml", &route_crd()).unwrap();
        results.validate_schemas(Some(std::sync::Arc::new(set)));
        results
    }

    fn with_code<'a>(diags: &'a [Diagnostic], code: &str) -> Vec<&'a Diagnostic> {
        diags
            .iter()
            .filter(|d| d.code == Some(NumberOrString::String(code.into())))
            .collect()
    }

    #[test]
    fn schema_errors_mark_the_expected_field_and_the_step_and_count_as_invalid() {
        let script =
            "local spec = obj.data.spec\nspec.weight = obj.canaryWeight\nreturn obj.data\n";
        // Step 1 passes but 20 is over the CRD's maximum (output and expectation alike);
        // step 2 fails, and its output (50) and expectation (60) are both over it.
        let files = files_of(&validated(script, CASE));
        let (_, case_diags) = &files[0];
        let schema = with_code(case_diags, "schema");
        let shown: Vec<(u32, String)> = schema
            .iter()
            .map(|d| (d.range.start.line, d.message.clone()))
            .collect();
        assert_eq!(
            shown,
            vec![
                (22, "step 1: output and expected[0] spec.weight: 20 must be less than or equal to 10 (maximum) [CRD route.yaml:1, version v1] — the API server would reject it (an expectation the API server rejects is a bug of the test)".to_string()),
                (8, "step 2: output spec.weight: 50 must be less than or equal to 10 (maximum) [CRD route.yaml:1, version v1] — the API server would reject it".to_string()),
                (28, "step 2: expected[1] spec.weight: 60 must be less than or equal to 10 (maximum) [CRD route.yaml:1, version v1] — the API server would reject it (an expectation the API server rejects is a bug of the test)".to_string()),
            ]
        );
        assert!(
            schema
                .iter()
                .all(|d| d.severity == Some(DiagnosticSeverity::ERROR))
        );

        // A case whose only step passes but is invalid: counted apart in the summary.
        let one_step = CASE
            .replace("        - traffic: \"50%\"\n", "")
            .split("- apiVersion: x/v1\n  kind: Route\n  metadata:\n    name: r\n  spec:\n    weight: 60\n")
            .next()
            .unwrap()
            .to_string();
        let results = validated(script, &one_step);
        assert!(results.cases[0].invalid() && !results.cases[0].passed());
        let (_, script_diags) = files_of(&results).pop().unwrap();
        let summary = with_code(&script_diags, "summary");
        assert_eq!(
            summary[0].message,
            "0/1 cases pass, 1 invalid — three step 1 invalid (schema)"
        );
        // Without schemas the same case passes.
        let unvalidated = run(script, &one_step);
        assert!(unvalidated.cases[0].passed());
    }

    #[test]
    fn pruned_fields_are_warnings() {
        let script =
            "local spec = obj.data.spec\nspec.weight = 5\nspec.extra = true\nreturn obj.data\n";
        let case = CASE
            .replace("        - traffic: \"50%\"\n", "")
            .split("- apiVersion: x/v1\n  kind: Route\n  metadata:\n    name: r\n  spec:\n    weight: 60\n")
            .next()
            .unwrap()
            .replace("    weight: 20\n", "    weight: 5\n    extra: true\n");
        let results = validated(script, &case);
        assert!(
            results.cases[0].passed(),
            "warnings do not make a case invalid"
        );
        let files = files_of(&results);
        let schema = with_code(&files[0].1, "schema");
        assert_eq!(schema.len(), 1);
        assert_eq!(schema[0].severity, Some(DiagnosticSeverity::WARNING));
        assert_eq!(schema[0].range.start.line, 22, "the `extra: true` line");
        assert!(
            schema[0].message.contains("would drop `spec.extra`"),
            "{}",
            schema[0].message
        );
    }

    #[test]
    fn runtime_error_lands_on_its_script_line() {
        let script =
            "local x = obj.canaryWeight\nif x > 30 then error('too much') end\nreturn obj.data\n";
        let files = files_of(&run(script, CASE));
        let (_, script_diags) = files.last().unwrap();
        let runtime: Vec<_> = script_diags
            .iter()
            .filter(|d| d.code == Some(NumberOrString::String("runtime".into())))
            .collect();
        assert_eq!(runtime.len(), 1, "{script_diags:?}");
        assert_eq!(runtime[0].range.start.line, 1);
        assert!(
            runtime[0]
                .message
                .starts_with("case three step 2: runtime error"),
            "{}",
            runtime[0].message
        );
    }

    #[test]
    fn error_messages_name_the_manifest_and_its_yaml_line_not_lua_chunk_positions() {
        // The script's line 1 is the manifest's line 6 (0-based 5): its error on script line
        // 2 is on manifest line 7.
        let script =
            "local x = obj.canaryWeight\nif x > 30 then error('too much') end\nreturn obj.data\n";
        let manifest = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: kruise-rollout-configuration}}\ndata:\n  lua.traffic.routing.Route.x: |\n{}",
            script
                .lines()
                .map(|l| format!("    {l}\n"))
                .collect::<String>()
        );
        let mut target = lua_target(Path::new("/t/x/Route/trafficRouting.lua"));
        target.id = ScriptId::Embedded {
            manifest: PathBuf::from("/t/cm.yaml"),
            key: "lua.traffic.routing.Route.x".into(),
        };
        let input = RunInput {
            target,
            source: script.into(),
            host_text: manifest,
            embedded: Some(crate::lsp::project::EmbeddedMap {
                first_line: 5,
                indent: 4,
            }),
            cases_error: None,
            cases: vec![(PathBuf::from("/t/x/Route/testdata/three.yaml"), CASE.into())],
        };
        let results = execute(input, None, Mode::Harness, &RunOptions::default(), &|| {
            false
        })
        .unwrap();
        let files = files_of(&results);
        let messages: Vec<&str> = files
            .iter()
            .flat_map(|(_, diags)| diags.iter().map(|d| d.message.as_str()))
            .collect();
        assert!(
            messages.iter().all(|m| !m.contains("<string>")),
            "{messages:#?}"
        );
        let case_error = messages
            .iter()
            .find(|m| m.starts_with("step 2: runtime error"))
            .expect("the step's error on the case");
        assert!(
            case_error.contains("/t/cm.yaml:7: too much"),
            "{case_error}"
        );
        let (host, script_diags) = files.last().unwrap();
        assert_eq!(host, Path::new("/t/cm.yaml"));
        let runtime = script_diags
            .iter()
            .find(|d| d.code == Some(NumberOrString::String("runtime".into())))
            .expect("the error on the script");
        assert_eq!(runtime.range.start.line, 6, "0-based manifest line 6");
        assert_eq!(
            runtime.message,
            "case three step 2: runtime error: too much"
        );
    }

    #[test]
    fn production_mode_marks_steps_the_controller_skips() {
        let script =
            "local spec = obj.data.spec\nspec.weight = obj.canaryWeight\nreturn obj.data\n";
        let case = CASE
            .replace("        - traffic: \"50%\"\n", "        - replicas: 2\n")
            .replace("weight: 60", "weight: -1");
        let input = |mode| {
            let input = RunInput {
                target: lua_target(Path::new("/t/x/Route/trafficRouting.lua")),
                source: script.into(),
                host_text: script.into(),
                embedded: None,
                cases_error: None,
                cases: vec![(
                    PathBuf::from("/t/x/Route/testdata/c.yaml"),
                    case.clone().into(),
                )],
            };
            let results = execute(input, None, mode, &RunOptions::default(), &|| false).unwrap();
            files_of(&results).remove(0).1
        };
        let skipped = |diags: &[Diagnostic]| {
            diags
                .iter()
                .filter(|d| d.code == Some(NumberOrString::String("step-skipped".into())))
                .map(|d| (d.range.start.line, d.message.clone()))
                .collect::<Vec<_>>()
        };
        assert!(skipped(&input(Mode::Harness)).is_empty());
        let production = input(Mode::Production);
        assert_eq!(
            skipped(&production),
            vec![(
                8,
                "step 2 skipped: the controller does not call the script for a step with neither traffic nor matches".to_string()
            )],
            "{production:?}"
        );
        assert!(
            production
                .iter()
                .any(|d| d.message.contains("the resource keeps step 1's result")),
            "{production:?}"
        );
    }

    #[test]
    fn timeout_lands_on_top_level_return() {
        let script = "local function f()\n  return 1\nend\nwhile true do end\nreturn obj.data\n";
        let options = RunOptions {
            limits: kruise_lua_engine::vm::Limits {
                timeout: std::time::Duration::from_millis(50),
                ..Default::default()
            },
            ..Default::default()
        };
        let input = RunInput {
            target: lua_target(Path::new("/t/x/Route/trafficRouting.lua")),
            source: script.into(),
            host_text: script.into(),
            embedded: None,
            cases_error: None,
            cases: vec![(PathBuf::from("/t/c.yaml"), CASE.into())],
        };
        let results = execute(input, None, Mode::Harness, &options, &|| false).unwrap();
        let files = run_diagnostics(&results);
        let (_, script_diags) = files.last().unwrap();
        let timeouts: Vec<_> = script_diags
            .iter()
            .filter(|d| d.message.contains("timeout"))
            .collect();
        assert!(!timeouts.is_empty(), "{script_diags:?}");
        assert!(
            timeouts.iter().all(|d| d.range.start.line == 4),
            "{timeouts:?}"
        );
    }

    #[test]
    fn store_clears_what_no_longer_holds() {
        let mut store = DiagnosticStore::default();
        let id = ScriptId::File("/s.lua".into());
        let d = diagnostic(Range::default(), DiagnosticSeverity::ERROR, "x", "m".into());
        store.set_runs(
            &id,
            vec![
                ("/a.yaml".into(), vec![d.clone()]),
                ("/b.yaml".into(), vec![d]),
            ],
        );
        let touched = store.set_runs(&id, vec![("/a.yaml".into(), vec![])]);
        let b = touched
            .iter()
            .find(|(p, _)| p == Path::new("/b.yaml"))
            .unwrap();
        assert!(b.1.is_empty(), "a deleted case's diagnostics are cleared");
    }

    #[test]
    fn pending_runs_mark_their_old_results_outdated() {
        let mut store = DiagnosticStore::default();
        let id = ScriptId::File("/s.lua".into());
        let d = diagnostic(
            Range::default(),
            DiagnosticSeverity::HINT,
            "summary",
            "4/4 cases pass".into(),
        );
        store.set_runs(&id, vec![("/s.lua".into(), vec![d])]);
        assert!(store.stale_lists(&id).is_empty(), "not pending yet");
        store.mark_stale(&id);
        let touched = store.stale_lists(&id);
        assert_eq!(touched.len(), 1);
        assert!(touched[0].1[0].message.starts_with(OUTDATED), "{touched:?}");
        // Every publish of the file says so until a run of the new text lands.
        let quick = store.quick(Path::new("/s.lua"), None, true);
        assert!(quick[0].message.starts_with(OUTDATED));
        let touched = store.set_runs(&id, vec![("/s.lua".into(), vec![])]);
        assert!(touched[0].1.is_empty());
    }

    #[test]
    fn a_run_syntax_error_is_not_repeated_beside_the_analysis() {
        let script = "local x = = 1\nreturn obj.data\n";
        let results = run(script, CASE);
        let path = PathBuf::from("/t/x/Route/trafficRouting.lua");
        let runs = files_of(&results);
        let on_script = &runs.iter().find(|(p, _)| *p == path).unwrap().1;
        assert!(on_script.iter().any(is_syntax), "{on_script:?}");
        let mut store = DiagnosticStore::default();
        // A script no editor has open: the run is the only one to say it.
        store.set_runs(&results.target.id, runs);
        assert_eq!(store.all(&path).iter().filter(|d| is_syntax(d)).count(), 1);
        let analysis = crate::lsp::lua::diagnostics(
            &path,
            script,
            &[],
            &crate::analysis::LintConfig::default(),
            &|_| None,
        );
        let all = store.set_analysis(&path, analysis);
        let syntax: Vec<&Diagnostic> = all.iter().filter(|d| is_syntax(d)).collect();
        assert_eq!(syntax.len(), 1, "one problem, one diagnostic: {syntax:?}");
        assert_eq!(syntax[0].range.start, Position::new(0, 8));
        // Right after an edit too.
        let quick = store.quick(
            &path,
            crate::lsp::lua::quick_syntax_diagnostic(script),
            true,
        );
        assert_eq!(
            quick.iter().filter(|d| is_syntax(d)).count(),
            1,
            "{quick:?}"
        );
    }

    fn files_of(results: &ScriptResults) -> Vec<(PathBuf, Vec<Diagnostic>)> {
        run_diagnostics(results)
    }
}
