//! A `launch` configuration (`script`, `case`, `step`, `mode`, `stopOnEntry`, `timeout`) read into a
//! runnable step, and the verdict shown in the debug console at the end: the step's verdict as
//! [`crate::project::verdict`] decides it for `check` and the editor (the intent check and the
//! CRD schemas of the script's tree included).

use std::path::{Path, PathBuf};

use kruise_lua_engine::discovery;
use kruise_lua_engine::input::{self, DEFAULT_MAX_INPUT_BYTES};
use kruise_lua_engine::path_text::format_path;
use kruise_lua_engine::runner::{Mode, RunOptions, Script};
use kruise_lua_engine::script::ScriptFlavor;
use kruise_lua_engine::steps::{StepOutcome, StepStatus, StepToRun, run_case_step, short_value};
use kruise_lua_engine::testcase::{TestCase, parse_case};
use serde_json::Value;

use crate::chunk_positions::ScriptPlace;
use crate::project::check::{CaseToRun, Checks};
use crate::project::intent::{IntentFinding, IntentUnverified};
use crate::project::schema_check::SchemaSubject;
use crate::project::verdict::{CaseFacts, Location, SchemaFinding, SchemaNotChecked, Verdict};
use crate::project::{check, crd_sources, targets};

/// The step a session debugs.
pub struct Launch {
    pub script_path: PathBuf,
    pub script: Script,
    pub case_path: PathBuf,
    pub case: TestCase,
    /// 0-based; shown from 1.
    pub index: usize,
    pub mode: Mode,
    pub flavor: ScriptFlavor,
    pub options: RunOptions,
    pub stop_on_entry: bool,
}

impl Launch {
    pub fn from_arguments(arguments: &Value) -> Result<Launch, String> {
        let base = arguments
            .get("cwd")
            .and_then(Value::as_str)
            .map(PathBuf::from)
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_default();
        let path = |name: &str| -> Result<PathBuf, String> {
            let given = arguments
                .get(name)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .ok_or_else(|| format!("the launch configuration needs `{name}` (a path)"))?;
            Ok(base.join(given))
        };
        let script_path = path("script")?;
        let case_path = path("case")?;
        let read = |path: &Path| {
            input::read_text(path, DEFAULT_MAX_INPUT_BYTES)
                .map_err(|error| format!("{}: {error}", path.display()))
        };
        let script = Script::new(read(&script_path)?);
        let case = parse_case(&read(&case_path)?).map_err(|error| {
            let line = error
                .span
                .map(|span| format!(":{}", span.start.line))
                .unwrap_or_default();
            format!(
                "{}{line}: case error: {}",
                case_path.display(),
                error.message
            )
        })?;
        let step = match arguments.get("step") {
            None | Some(Value::Null) => 1,
            Some(value) => value
                .as_u64()
                .or_else(|| value.as_str().and_then(|s| s.trim().parse().ok()))
                .ok_or_else(|| format!("`step` must be a step number (from 1), not {value}"))?,
        };
        if step == 0 || step as usize > case.steps.len() {
            return Err(format!(
                "step {step}: {} has {} step(s), numbered from 1",
                case_path.display(),
                case.steps.len()
            ));
        }
        let mode = match arguments.get("mode").and_then(Value::as_str) {
            None | Some("harness") => Mode::Harness,
            Some("production") => Mode::Production,
            Some(other) => {
                return Err(format!(
                    "`mode` is `harness` or `production`, not `{other}`"
                ));
            }
        };
        let flavor = if discovery::is_ingress_script(&script_path) {
            ScriptFlavor::Ingress
        } else {
            ScriptFlavor::Custom
        };
        let mut options = RunOptions::default();
        match arguments.get("timeout") {
            None | Some(Value::Null) => {}
            Some(value) => {
                let ms = value.as_u64().filter(|ms| *ms > 0).ok_or_else(|| {
                    format!("`timeout` is the script's time budget in milliseconds (Kruise's is 1000), not {value}")
                })?;
                options.limits.timeout = std::time::Duration::from_millis(ms);
            }
        }
        Ok(Launch {
            script_path,
            script,
            case_path,
            case,
            index: step as usize - 1,
            mode,
            flavor,
            options,
            stop_on_entry: arguments
                .get("stopOnEntry")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        })
    }

    /// Whether a breakpoint's source path is the launched script.
    pub fn is_script(&self, path: &str) -> bool {
        let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
            (Ok(a), Ok(b)) => a == b,
            _ => a == b,
        };
        same(Path::new(path), &self.script_path)
    }

    /// Step `index` of the launched case, as this launch runs it.
    pub fn step(&self, index: usize) -> StepToRun<'_> {
        StepToRun {
            script: &self.script,
            flavor: self.flavor,
            case: &self.case,
            index,
            mode: self.mode,
            options: &self.options,
        }
    }

    /// The thread's name: which case and step.
    pub fn title(&self) -> String {
        let case = self
            .case_path
            .file_name()
            .map_or_else(String::new, |name| name.to_string_lossy().into_owned());
        format!("{case}: step {}", self.index + 1)
    }
}

/// What the step is checked for besides its expected result, as `check` checks it: the intent
/// check and the CRD schemas of the script's `lua_configuration` tree. `None` when the script is
/// not one Kruise would find (its kind, hence its routing model and CRD, is unknown).
pub struct StepChecks {
    pub schema: Vec<SchemaFinding>,
    pub misrouted: Vec<IntentFinding>,
    /// Why the intent check could not verify the step, when it could not (said in the verdict).
    pub intent_unverified: Vec<IntentUnverified>,
    /// Why the step was not checked against a CRD schema, when it was not (said in the verdict).
    pub schema_not_checked: Option<SchemaNotChecked>,
}

impl StepChecks {
    pub fn of(launch: &Launch, outcome: &StepOutcome) -> Option<StepChecks> {
        let entry = targets::discover_script(&launch.script_path)
            .ok()?
            .into_iter()
            .next()?;
        let subject = SchemaSubject::from(&entry.kind);
        // Checked as `check` checks the case: Kruise updates the object the step before left
        // (transition rules and ratcheting compare with it), so a custom provider's steps
        // before this one run too, without the debugger, and the intent check reuses them (an
        // ingress class's steps are replayed by the intent check, and validated alone).
        let before = match subject {
            SchemaSubject::Resource { .. } => outcome.index,
            SchemaSubject::IngressAnnotations => 0,
        };
        let mut steps: Vec<StepOutcome> = (outcome.index - before..outcome.index)
            .map(|index| run_case_step(launch.step(index)))
            .collect();
        steps.push(outcome.clone());
        let schemas = crd_sources::for_paths(std::slice::from_ref(&launch.script_path), &[]).ok();
        let case_path = launch.case_path.display().to_string();
        let script_path = launch.script_path.display().to_string();
        let to_run = CaseToRun {
            script: &launch.script,
            flavor: launch.flavor,
            kind: Some(&entry.kind),
            subject: &subject,
            case: &launch.case,
            case_path: &case_path,
            // The debugger runs a `.lua` file: its lines are the script's.
            script_line: &|line| Location {
                file: script_path.clone(),
                line: Some(line),
            },
        };
        let checks = Checks {
            mode: launch.mode,
            shuffle: 0,
            intent: true,
            parallel_steps: false,
        };
        let (intent, schema) = check::step_findings(
            &to_run,
            checks,
            &launch.options,
            schemas.as_ref(),
            &steps,
            before,
        );
        let mut schema_findings = schema.findings;
        schema_findings.retain(|finding| finding.step == outcome.index);
        let misrouted = intent
            .misrouted
            .into_iter()
            .filter(|finding| finding.step == outcome.index)
            .collect();
        let intent_unverified = intent
            .unverified
            .into_iter()
            .filter(|note| note.step == outcome.index)
            .collect();
        Some(StepChecks {
            schema: schema_findings,
            misrouted,
            intent_unverified,
            schema_not_checked: schema.not_checked,
        })
    }
}

/// The debug console's verdict for the step, and whether it passed.
pub fn verdict(
    launch: &Launch,
    outcome: &StepOutcome,
    checks: Option<&StepChecks>,
    terminated: bool,
) -> (String, bool) {
    let title = launch.title();
    let index = outcome.index;
    let mut lines = Vec::new();
    if terminated {
        lines.push(format!("{title}: ended by the debugger"));
        return (lines.join("\n"), false);
    }
    let facts = CaseFacts {
        case_error: false,
        steps: std::slice::from_ref(outcome),
        schema: checks.map_or(&[][..], |c| &c.schema),
        misrouted: checks.map_or(&[][..], |c| &c.misrouted),
        intent_unverified: checks.map_or(&[][..], |c| &c.intent_unverified),
        schema_not_checked: checks.and_then(|c| c.schema_not_checked.as_ref()),
        order_dependent: &[],
    };
    let step_verdict = facts.step_verdict(outcome);
    let passed = step_verdict == Verdict::Pass;
    match outcome.status {
        StepStatus::Pass if step_verdict == Verdict::Fail => {
            lines.push(format!(
                "{title}: FAIL (the result matches expected[{index}], but the step misroutes)"
            ));
            if let Some(finding) = facts.intent_finding(index) {
                // The debugger runs a `.lua` file: its lines are the script's.
                let file = launch.script_path.display().to_string();
                lines.extend(finding.lines(ScriptPlace {
                    file: &file,
                    lines: &[],
                }));
            }
        }
        StepStatus::Pass if step_verdict == Verdict::Invalid => {
            lines.push(format!(
                "{title}: INVALID (the result matches expected[{index}], but the API server would reject it)"
            ));
            for finding in facts.schema_errors(index) {
                lines.push(format!("  {}", finding.message()));
            }
        }
        StepStatus::Pass => lines.push(format!(
            "{title}: PASS (the result matches expected[{index}])"
        )),
        StepStatus::Fail => {
            lines.push(format!(
                "{title}: FAIL (the result differs from expected[{index}])"
            ));
            for diff in &outcome.diff {
                lines.push(format!(
                    "  {}: expected {}, got {}",
                    format_path(&diff.path),
                    short_value(diff.expected.as_ref()),
                    short_value(diff.actual.as_ref())
                ));
            }
            if !outcome.unified_diff.is_empty() {
                lines.push(String::new());
                lines.push(outcome.unified_diff.trim_end().to_owned());
            }
        }
        StepStatus::Error => {
            let error = outcome.error.as_ref().map_or_else(String::new, |e| {
                format!(": {} error: {}", e.kind, e.message)
            });
            lines.push(format!("{title}: ERROR{error}"));
        }
    }
    if let Some(reason) = outcome.not_called {
        lines.push(format!("note: {reason}"));
    }
    for warning in &outcome.warnings {
        lines.push(format!("warning: {warning}"));
    }
    for finding in facts.schema_findings(index).filter(|f| !f.is_error()) {
        lines.push(format!("warning: {}", finding.message()));
    }
    for note in facts.step_notes(index) {
        lines.push(format!("note: {}", note.message));
    }
    if checks.is_none() {
        lines.push(
            "note: not checked against the intent check or CRD schemas: the script is not one Kruise would find (<group>/<Kind>/trafficRouting.lua or trafficrouting_ingress/<class>.lua)"
                .to_string(),
        );
    }
    (lines.join("\n"), passed)
}
