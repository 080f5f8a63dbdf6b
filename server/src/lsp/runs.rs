//! Live test runs: a script's cases through the shared case run (`project::check`), reusing
//! unchanged cases' outcomes; where and when a run executes is `run_lanes.rs`.
//!
//! A run re-reads the script and every case (open buffers first, then disk), so created,
//! deleted and renamed case files are picked up by the next run. Cases whose text and script
//! are unchanged since the last run keep their previous outcome instead of running again.

use std::path::PathBuf;
use std::sync::Arc;

use kruise_lua_engine::discovery;
use kruise_lua_engine::runner::{self, Mode, RunOptions};
use kruise_lua_engine::steps::StepOutcome;
use kruise_lua_engine::testcase::{self, CaseError, TestCase};
use kruise_lua_engine::value::JsonValue;
use rayon::prelude::*;

use kruise_lua_engine::schema::SchemaSet;

use super::documents::{Documents, FileStamp, disk_stamp};
use super::project::{EmbeddedMap, ScriptId, ScriptTarget};
use super::text::LineIndex;
use crate::project::MAX_ANALYSED_BYTES;
use crate::project::check::{self as check, CaseChecks, CaseToRun, Checks};
use crate::project::crd_sources::SourceProblem;
use crate::project::intent::{IntentFinding, IntentUnverified};
use crate::project::schema_check::{self, CaseSchema, SchemaSubject};
use crate::project::targets::unreadable_case;
use crate::project::verdict::{CaseFacts, Location, SchemaFinding, SchemaNotChecked, Verdict};
use kruise_lua_engine::input::ReadError;

/// One case file's outcome.
#[derive(Debug, Clone)]
pub struct CaseResult {
    pub path: PathBuf,
    /// The case text the outcome belongs to (positions refer to it).
    pub text: String,
    /// The file on disk it was read from (`None`: an open buffer, or too large to read).
    pub stamp: Option<FileStamp>,
    pub case: Result<TestCase, CaseError>,
    pub steps: Vec<StepOutcome>,
    /// The steps the intent check finds misrouting (empty when the gateway has no routing
    /// model).
    pub misrouted: Vec<IntentFinding>,
    /// The steps the intent check could not verify, and why (a hint on the step: silence
    /// means checked and fine).
    pub intent_unverified: Vec<IntentUnverified>,
    /// What the API server would say about each step's output and `expected[i]` (see
    /// [`ScriptResults::validate_schemas`]), in step order.
    pub schema: Vec<SchemaFinding>,
    /// Why the steps were not checked against a CRD schema (no CRD loaded for the script's
    /// kind): a hint on each step, as `check` says it.
    pub schema_not_checked: Option<SchemaNotChecked>,
}

impl CaseResult {
    /// A case as read, before any of its steps ran (`case`: parsed, or why it cannot run).
    fn unrun(
        path: PathBuf,
        text: String,
        stamp: Option<FileStamp>,
        case: Result<TestCase, CaseError>,
    ) -> CaseResult {
        CaseResult {
            path,
            text,
            stamp,
            case,
            steps: Vec::new(),
            misrouted: Vec::new(),
            intent_unverified: Vec::new(),
            schema: Vec::new(),
            schema_not_checked: None,
        }
    }

    /// The case's name: its file name without extension.
    pub fn name(&self) -> String {
        self.path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// The parts of this result the verdict rules ([`crate::project::verdict`]) read: the same
    /// rules as `check`'s. A case that parses but yields no step checks nothing: an error.
    pub fn facts(&self) -> CaseFacts<'_> {
        CaseFacts {
            case_error: self
                .case
                .as_ref()
                .map_or(true, |case| case.steps.is_empty()),
            steps: &self.steps,
            schema: &self.schema,
            misrouted: &self.misrouted,
            intent_unverified: &self.intent_unverified,
            schema_not_checked: self.schema_not_checked.as_ref(),
            // The language server does not rerun cases in shuffled key order.
            order_dependent: &[],
        }
    }

    pub fn verdict(&self) -> Verdict {
        self.facts().verdict()
    }

    pub fn passed(&self) -> bool {
        self.verdict() == Verdict::Pass
    }

    /// Whether the case's verdict is `invalid` (every step passes, some are invalid).
    pub fn invalid(&self) -> bool {
        self.verdict() == Verdict::Invalid
    }

    /// The 1-based numbers of steps that do not pass: they fail, error or misroute.
    #[cfg(test)]
    pub fn failing_steps(&self) -> Vec<usize> {
        let facts = self.facts();
        self.steps
            .iter()
            .filter(|step| matches!(facts.step_verdict(step), Verdict::Fail | Verdict::Error))
            .map(|step| step.index + 1)
            .collect()
    }
}

/// The last completed run of a script.
#[derive(Debug, Clone)]
pub struct ScriptResults {
    pub target: ScriptTarget,
    /// The script source that ran.
    pub source: String,
    /// The text of the file holding the script (the script itself, or its manifest).
    pub host_text: String,
    pub embedded: Option<EmbeddedMap>,
    /// Why there are no cases, when the folder is missing and required.
    pub cases_error: Option<CaseError>,
    /// Why the script's file was not run (see [`RunInput::script_error`]).
    pub script_error: Option<ScriptReadError>,
    pub cases: Vec<CaseResult>,
    pub mode: Mode,
    /// The CRD schemas the steps were validated against (`None`: not validated).
    pub schemas: Option<Arc<SchemaSet>>,
}

impl ScriptResults {
    pub fn passed_count(&self) -> usize {
        self.cases.iter().filter(|c| c.passed()).count()
    }

    /// The steps of all cases (what `kruise-lua check` counts) and how many of them pass,
    /// by the shared verdict rules.
    pub fn step_counts(&self) -> (usize, usize) {
        let mut counts = (0, 0);
        for case in &self.cases {
            let facts = case.facts();
            counts.0 += case.steps.len();
            counts.1 += case
                .steps
                .iter()
                .filter(|step| facts.step_verdict(step) == Verdict::Pass)
                .count();
        }
        counts
    }

    /// Cases whose steps all pass but the API server would reject an output or expectation.
    pub fn invalid_count(&self) -> usize {
        self.cases.iter().filter(|c| c.invalid()).count()
    }

    /// Validates every case's steps against `schemas` as `check` does
    /// ([`schema_check::case_schema`]; `problems`: the CRD sources of the root that could not
    /// be used, which a step of their kind names); each run does it again for every case
    /// (reused outcomes too: the schemas may have changed since).
    pub fn validate_schemas(
        &mut self,
        schemas: Option<Arc<SchemaSet>>,
        problems: &[SourceProblem],
    ) {
        let subject = self.target.kind.as_ref().map(SchemaSubject::from);
        for case in &mut self.cases {
            let checked = match (&schemas, &subject, &case.case) {
                (Some(schemas), Some(subject), Ok(parsed)) => schema_check::case_schema(
                    schemas,
                    problems,
                    subject,
                    parsed,
                    &case.path.display().to_string(),
                    &case.steps,
                    None,
                ),
                _ => CaseSchema::default(),
            };
            case.schema = checked.findings;
            case.schema_not_checked = checked.not_checked;
        }
        self.schemas = schemas;
    }

    /// The version named by the cases' `original.apiVersion`s, for the spec's schema.
    pub fn api_versions(&self) -> Vec<String> {
        let mut versions: Vec<String> = self
            .cases
            .iter()
            .filter_map(|c| c.case.as_ref().ok())
            .filter_map(schema_check::original_api_version)
            .collect();
        versions.dedup();
        versions
    }

    /// `obj.data.spec` of every step, for inferring the spec's shape.
    pub fn specs(&self) -> Vec<JsonValue> {
        self.cases
            .iter()
            .filter_map(|c| c.case.as_ref().ok())
            .filter_map(|c| c.steps.first())
            .filter_map(|s| s.obj.data.spec.clone())
            .collect()
    }
}

/// What a run needs, read from buffers and disk.
pub struct RunInput {
    pub target: ScriptTarget,
    pub source: String,
    pub host_text: String,
    pub embedded: Option<EmbeddedMap>,
    pub cases_error: Option<CaseError>,
    /// Why the script's file cannot be run, as `check` refuses it (not UTF-8 on disk): its
    /// cases are not run, the file gets the error.
    pub script_error: Option<ScriptReadError>,
    pub cases: Vec<(PathBuf, CaseText)>,
}

/// A script file `check` would refuse to read: the line of the problem and its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptReadError {
    pub line: u32,
    pub message: String,
}

/// One case file's content as a run reads it.
pub struct CaseText {
    /// Its text, or why it cannot be a case (too large to read at all, not UTF-8) and what is
    /// shown of it: for a file that is not UTF-8, its lossy reading, where the error's
    /// position points; else nothing.
    pub text: Result<String, (CaseError, String)>,
    /// Where it was read on disk (`None`: an open buffer).
    pub stamp: Option<FileStamp>,
}

impl From<String> for CaseText {
    fn from(text: String) -> CaseText {
        CaseText {
            text: Ok(text),
            stamp: None,
        }
    }
}

impl From<&str> for CaseText {
    fn from(text: &str) -> CaseText {
        CaseText::from(text.to_string())
    }
}

/// Reads a script and its cases; `None` when the script is gone (deleted file or key).
/// A case file on disk whose stamp is that of `previous`'s reading is not read again, and one
/// over [`MAX_ANALYSED_BYTES`] is never read.
pub fn gather(
    target: &ScriptTarget,
    docs: &Documents,
    previous: Option<&ScriptResults>,
) -> Option<RunInput> {
    let (host_text, unreadable) = docs.read(target.id.host())?;
    let script_error = unreadable.map(|error| ScriptReadError {
        line: match error {
            ReadError::NotUtf8 { line, .. } => line,
            _ => 1,
        },
        message: discovery::script_read_error(target.id.host(), &error),
    });
    let (source, embedded) = match &target.id {
        ScriptId::File(_) => (host_text.clone(), None),
        ScriptId::Embedded { key, .. } => {
            // Only the script's text and place are needed here: the target already says where
            // its cases are.
            let script = discovery::read_configmap(&host_text)
                .ok()?
                .scripts
                .into_iter()
                .find(|s| &s.key == key)?;
            let map = EmbeddedMap::new(&script);
            (script.source, Some(map))
        }
    };
    let mut cases_error = None;
    let mut cases = Vec::new();
    if let Some(testdata) = &target.testdata {
        match discovery::find_cases(testdata, target.testdata_required) {
            Ok(mut paths) => {
                // New buffers not yet saved under testdata count too.
                for open in docs.open_paths() {
                    let is_case = open.starts_with(testdata)
                        && open.extension().is_some_and(|e| e == "yaml" || e == "yml");
                    if is_case && !paths.contains(&open) {
                        paths.push(open);
                    }
                }
                for path in paths {
                    if let Some(case) = read_case(path, docs, previous) {
                        cases.push(case);
                    }
                }
            }
            Err(e) => cases_error = Some(e),
        }
    }
    Some(RunInput {
        target: target.clone(),
        source,
        host_text,
        embedded,
        cases_error,
        script_error,
        cases,
    })
}

fn read_case(
    path: PathBuf,
    docs: &Documents,
    previous: Option<&ScriptResults>,
) -> Option<(PathBuf, CaseText)> {
    if let Some(doc) = docs.get(&path) {
        return Some((path, doc.text.into()));
    }
    let stamp = disk_stamp(&path)?;
    if stamp.len > MAX_ANALYSED_BYTES as u64 {
        let text = CaseText {
            text: Err((too_large(stamp.len), String::new())),
            stamp: Some(stamp),
        };
        return Some((path, text));
    }
    let known = previous
        .and_then(|p| {
            p.cases
                .iter()
                .find(|c| c.path == path && c.stamp == Some(stamp))
        })
        .map(|c| c.text.clone());
    let text = match known {
        Some(text) => Ok(text),
        // As `check` reads it: a file that is not UTF-8 is a case error, not a repaired copy.
        None => match docs.read(&path)? {
            (lossy, Some(error)) => {
                let mut error = unreadable_case(&error);
                if let Some(span) = &mut error.span {
                    // On the line of the bad byte (the error's `line`, from 1).
                    let line = span.start.line.saturating_sub(1) as usize;
                    let start = LineIndex::new(&lossy).line_start(line, &lossy);
                    span.start.offset = start;
                    span.end.offset = start;
                }
                Err((error, lossy))
            }
            (text, None) => Ok(text),
        },
    };
    let text = CaseText {
        text,
        stamp: Some(stamp),
    };
    Some((path, text))
}

fn too_large(len: u64) -> CaseError {
    CaseError {
        message: format!("the case file is too large to run ({len} bytes)"),
        span: None,
    }
}

/// Runs every case of `input` in turn on this thread (see [`execute_with`]).
#[cfg(test)]
pub fn execute(
    input: RunInput,
    previous: Option<&ScriptResults>,
    mode: Mode,
    options: &RunOptions,
    cancelled: &(dyn Fn() -> bool + Sync),
) -> Option<ScriptResults> {
    execute_with(input, previous, mode, options, cancelled, false)
}

/// Runs every case of `input` through the shared case run ([`check::check_case`], as `check`
/// runs it, without shuffled reruns; schemas are validated afterwards by
/// [`ScriptResults::validate_schemas`], since reused outcomes are validated again), reusing
/// `previous` outcomes of cases whose text and script did not change. With `parallel`, the
/// cases and their steps are tasks of the current rayon pool; otherwise they run in turn on
/// this thread (a one-thread lane: handing them to a pool only costs thread wake-ups).
/// Returns `None` as soon as `cancelled()` says the run is superseded.
pub fn execute_with(
    input: RunInput,
    previous: Option<&ScriptResults>,
    mode: Mode,
    options: &RunOptions,
    cancelled: &(dyn Fn() -> bool + Sync),
    parallel: bool,
) -> Option<ScriptResults> {
    let flavor = input.target.flavor();
    let same_script = previous.is_some_and(|p| p.source == input.source && p.mode == mode);
    let oversized = input.source.len() > MAX_ANALYSED_BYTES;
    // Compiled once per run; its steps share the script's prepared states. Not kept between
    // runs: an idle server then holds no Lua state, and compiling is cheap beside a rerun.
    let script = runner::Script::new(if oversized { "" } else { input.source.as_str() });
    let mut cases: Vec<CaseResult> = input
        .cases
        .into_iter()
        .map(|(path, CaseText { text, stamp })| {
            let text = match text {
                Ok(text) if text.len() > MAX_ANALYSED_BYTES => {
                    Err((too_large(text.len() as u64), String::new()))
                }
                other => other,
            };
            let text = match text {
                Ok(text) => text,
                Err((error, shown)) => {
                    return CaseResult::unrun(path, shown, None, Err(error));
                }
            };
            if let Some(error) = &input.script_error {
                // `check` refuses the script: nothing of it runs here either.
                let not_run = CaseError {
                    message: format!("not run: {}", error.message),
                    span: None,
                };
                return CaseResult::unrun(path, text, stamp, Err(not_run));
            }
            if oversized {
                // Not run: the editor must not show its cases as passing (`check`, which has
                // no such limit, runs them).
                let not_run = CaseError {
                    message: format!(
                        "not run: the script has {} bytes, more than the {MAX_ANALYSED_BYTES} \
                         the editor runs (`kruise-lua check` runs it)",
                        input.source.len()
                    ),
                    span: None,
                };
                return CaseResult::unrun(path, text, stamp, Err(not_run));
            }
            let reuse = same_script
                .then(|| {
                    previous?
                        .cases
                        .iter()
                        .find(|c| c.path == path && c.text == text)
                })
                .flatten();
            match reuse {
                Some(done) => CaseResult {
                    stamp,
                    ..done.clone()
                },
                None => {
                    let case = testcase::parse_case(&text);
                    CaseResult::unrun(path, text, stamp, case)
                }
            }
        })
        .collect();
    // Every case still to run (not reused, parsed, with steps).
    let todo: Vec<usize> = cases
        .iter()
        .enumerate()
        .filter(|(_, c)| c.steps.is_empty())
        .filter(|(_, c)| c.case.as_ref().is_ok_and(|case| !case.steps.is_empty()))
        .map(|(i, _)| i)
        .collect();
    let checks = Checks {
        mode,
        // The editor does not rerun cases in shuffled key order (a lighter setting of the
        // same run).
        shuffle: 0,
        intent: true,
        parallel_steps: parallel,
    };
    let subject = input
        .target
        .kind
        .as_ref()
        .map_or(SchemaSubject::IngressAnnotations, SchemaSubject::from);
    let host = input.target.id.host().display().to_string();
    let embedded = input.embedded;
    let script_line = |lua_line: u32| Location {
        file: host.clone(),
        line: Some(match &embedded {
            Some(map) => map.host_line(lua_line),
            None => lua_line,
        }),
    };
    let run = |i: &usize| -> Option<(usize, CaseChecks)> {
        if cancelled() {
            return None;
        }
        let case = cases[*i].case.as_ref().ok()?;
        let case_path = cases[*i].path.display().to_string();
        let to_run = CaseToRun {
            script: &script,
            flavor,
            kind: input.target.kind.as_ref(),
            subject: &subject,
            case,
            case_path: &case_path,
            script_line: &script_line,
        };
        // A panic in one case ends the run without results (as a superseded one), never the
        // server.
        let checked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            check::check_case(&to_run, checks, options, None, cancelled)
        }))
        .ok()??;
        Some((*i, checked))
    };
    let ran: Vec<Option<(usize, CaseChecks)>> = if parallel {
        todo.par_iter().map(run).collect()
    } else {
        todo.iter().map(run).collect()
    };
    if cancelled() || ran.iter().any(Option::is_none) {
        return None;
    }
    for (i, checked) in ran.into_iter().flatten() {
        let case = &mut cases[i];
        case.steps = checked.steps;
        case.misrouted = checked.intent.misrouted;
        case.intent_unverified = checked.intent.unverified;
    }
    Some(ScriptResults {
        target: input.target,
        source: input.source,
        host_text: input.host_text,
        embedded,
        cases_error: input.cases_error,
        script_error: input.script_error,
        cases,
        mode,
        schemas: None,
    })
}

/// The per-step budget of a background run's first pass. Steps that run into it are run again
/// with the full timeout after the runs queued meanwhile, so a workspace's looping scripts
/// delay a healthy script's verdict by this much each, not by their whole timeout. Healthy
/// steps take microseconds to a few milliseconds.
pub const QUICK_PASS: std::time::Duration = std::time::Duration::from_millis(100);

impl ScriptResults {
    /// Whether a step ran into its timeout.
    pub fn timed_out(&self) -> bool {
        self.cases.iter().any(CaseResult::timed_out)
    }

    /// These results without the cases where a step timed out, to be run again.
    pub fn without_timed_out_cases(&self) -> ScriptResults {
        ScriptResults {
            target: self.target.clone(),
            source: self.source.clone(),
            host_text: self.host_text.clone(),
            embedded: self.embedded.clone(),
            cases_error: self.cases_error.clone(),
            script_error: self.script_error.clone(),
            cases: self
                .cases
                .iter()
                .filter(|c| !c.timed_out())
                .cloned()
                .collect(),
            mode: self.mode,
            schemas: self.schemas.clone(),
        }
    }
}

impl CaseResult {
    fn timed_out(&self) -> bool {
        self.steps.iter().any(|s| {
            s.error
                .as_ref()
                .is_some_and(|e| e.kind == kruise_lua_engine::ErrorKind::Timeout)
        })
    }
}

/// Runs whose cases hold more than this many bytes give their freed memory back afterwards.
const LARGE_RUN_BYTES: usize = 1024 * 1024;

impl ScriptResults {
    /// Whether this run read enough to leave a lot of freed memory behind.
    pub fn is_large(&self) -> bool {
        self.cases.iter().map(|c| c.text.len()).sum::<usize>() + self.source.len() > LARGE_RUN_BYTES
    }
}

#[cfg(test)]
pub(crate) mod tests;
