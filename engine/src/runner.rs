//! Running scripts: one run of a script against an obj (both result modes from one execution),
//! and a whole test case → one outcome per step, with structural and unified diffs.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ffi::c_int;
use std::sync::Arc;

use mlua::ffi;

use crate::vm::hooks::RunObserver;
use crate::discovery::ScriptKind;
use crate::error::{ErrorKind, ScriptError};
use crate::json::{self, EmptyTable, KeyOrder, decode_custom_result, decode_ingress_result};
use crate::luadata::{Data, IngressData, LuaData};
use crate::stdlib;
use crate::testcase::{CaseError, CaseWarning, TestCase};
use crate::value::JsonValue;
use crate::vm::{self, Limits, Sandbox, State};
use crate::yaml::{PathSeg, Span};

mod diff;
mod prepared;
mod production;
pub use diff::{PathDiff, diff_canonical, format_path, short_value};
use diff::{diff_values, span_in_expected, unified_yaml_diff};
use prepared::PreparedSandboxes;
pub use production::{
    ControllerIngressStep, NOT_CALLED_NO_TRAFFIC, NOT_CALLED_NOT_CREATED, controller_ingress_step,
    ingress_step_obj,
};

/// Which rules decide a step's verdict (conformance 2.5 and 2.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Upstream's unit test (`go test ./pkg/trafficrouting/network/customNetworkProvider/`):
    /// empty table → `[]`, a non-table result → `{}`.
    #[default]
    Harness,
    /// The controller: empty table → `null`, a non-table result is an error.
    Production,
}

/// Options of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunOptions {
    pub limits: Limits,
    /// Key order of `obj`'s maps (Go's map order is random; sorted by default).
    pub key_order: KeyOrder,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            limits: Limits::default(),
            key_order: KeyOrder::Sorted,
        }
    }
}

/// One execution of a custom-provider script, with the result under both rules.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptRun {
    /// What the script printed, one entry per `print` call.
    pub prints: Vec<String>,
    pub harness: Result<Data, ScriptError>,
    pub production: Result<Data, ScriptError>,
}

impl ScriptRun {
    /// The result under `mode`'s rules.
    pub fn result(&self, mode: Mode) -> &Result<Data, ScriptError> {
        match mode {
            Mode::Harness => &self.harness,
            Mode::Production => &self.production,
        }
    }
}

/// One execution of an ingress-class script: its annotations (`None` for an empty result).
#[derive(Debug, Clone, PartialEq)]
pub struct IngressRun {
    pub prints: Vec<String>,
    pub result: Result<Option<BTreeMap<String, String>>, ScriptError>,
}

/// Verdict of one step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepStatus {
    Pass,
    Fail,
    Error,
}

/// One differing JSON path between expected and actual.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldDiff {
    /// Path from the result root, e.g. `spec.http[0].route[1].weight`.
    pub path: Vec<PathSeg>,
    /// `None` where the path is absent on that side.
    pub expected: Option<JsonValue>,
    pub actual: Option<JsonValue>,
    /// Where the path sits in the case's `expected[i]` node, when it exists there.
    pub span: Option<Span>,
}

/// The outcome of one step of a case.
#[derive(Debug, Clone, PartialEq)]
pub struct StepOutcome {
    pub index: usize,
    pub status: StepStatus,
    /// The obj the script received (the case step's own, shared).
    pub obj: Arc<LuaData>,
    /// Canonical JSON of the actual result under the chosen mode, when there is one.
    pub actual: Option<String>,
    /// Canonical JSON of `expected[index]`, when it exists.
    pub expected: Option<String>,
    pub error: Option<ScriptError>,
    /// Every differing path (empty unless `status` is `Fail`).
    pub diff: Vec<FieldDiff>,
    /// Unified diff of expected vs actual rendered as YAML (empty unless `Fail`).
    pub unified_diff: String,
    /// Step-level warnings, e.g. the controller's result differing from the harness's.
    pub warnings: Vec<String>,
    /// Production mode: why the controller does not run the script for this step (e.g.
    /// [`NOT_CALLED_NO_TRAFFIC`]); `None` when it does, and always in harness mode. For an
    /// ingress script the verdict then compares what the canary Ingress keeps; for a custom
    /// provider it stays the script's result (the conformance vectors' production verdicts),
    /// and a warning says what the resource keeps.
    pub not_called: Option<&'static str>,
    pub prints: Vec<String>,
    /// The `expected[index]` node's span, and the step's span in the case.
    pub expected_span: Option<Span>,
    pub step_span: Option<Span>,
}

/// The outcome of a whole case: a case-level error (then `steps` is empty), or one
/// outcome per step (every step runs even after one fails).
#[derive(Debug, Clone, PartialEq)]
pub struct CaseOutcome {
    pub case_error: Option<CaseError>,
    pub warnings: Vec<CaseWarning>,
    pub steps: Vec<StepOutcome>,
}

/// A script compiled once, to run any number of times (each run in a fresh state). A
/// syntax error is kept and reported by every run, as Kruise reports it per run.
///
/// Clones share the sandboxes kept ready for the script (see `prepared`), so a script may
/// be run from several threads at once; each run has a sandbox of its own.
#[derive(Debug, Clone)]
pub struct Script {
    source: String,
    /// The bytecode of the chunk (`=<string>`), or its syntax error.
    compiled: Result<Vec<u8>, ScriptError>,
    prepared: Arc<PreparedSandboxes>,
}

impl PartialEq for Script {
    fn eq(&self, other: &Script) -> bool {
        self.source == other.source
    }
}

impl Script {
    pub fn new(source: impl Into<String>) -> Script {
        let source = source.into();
        let compiled = vm::compile(source.as_bytes());
        Script {
            source,
            compiled,
            prepared: Arc::default(),
        }
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    /// The error every run of this script fails with, when it does not compile.
    pub fn syntax_error(&self) -> Option<&ScriptError> {
        self.compiled.as_ref().err()
    }
}

/// Runs a custom-provider script once against `obj`.
pub fn run_custom(script: &Script, obj: &LuaData, options: &RunOptions) -> ScriptRun {
    let (prints, results) = execute_custom(script, Obj::Data(obj), options, None);
    script_run(prints, results)
}

/// Runs a custom-provider script with an `obj` given as JSON (as the conformance vectors and
/// debugging tools have it) rather than as a [`LuaData`].
pub fn run_custom_json(script: &Script, obj: &JsonValue, options: &RunOptions) -> ScriptRun {
    let (prints, results) = execute_custom(script, Obj::Json(obj), options, None);
    script_run(prints, results)
}

fn script_run(prints: Vec<String>, results: Results) -> ScriptRun {
    let (harness, production) = match results {
        Results::Same(result) => (result.clone(), result),
        Results::Encoded { raw, .. } => {
            let result = decode_raw(&raw, decode_custom_result);
            (result.clone(), result)
        }
        Results::Split {
            harness,
            production,
        } => (harness, production),
    };
    ScriptRun {
        prints,
        harness,
        production,
    }
}

/// The result of one run under both rules: `Same` when they agree (the usual case: the
/// result holds no empty table), so that it is decoded and kept once.
enum Results {
    Same(Result<Data, ScriptError>),
    /// Like `Same`, for a result not decoded yet: its encoding (which decodes without
    /// error) and canonical JSON. Most steps need only the canonical JSON.
    Encoded {
        raw: Vec<u8>,
        canonical: String,
    },
    Split {
        harness: Result<Data, ScriptError>,
        production: Result<Data, ScriptError>,
    },
}

impl Results {
    /// The result under `mode`; decodes an `Encoded` one (then it is `Cow::Owned`).
    fn get(&self, mode: Mode) -> Cow<'_, Result<Data, ScriptError>> {
        Cow::Borrowed(match (self, mode) {
            (Results::Encoded { raw, .. }, _) => {
                return Cow::Owned(decode_raw(raw, decode_custom_result));
            }
            (Results::Same(result), _) => result,
            (Results::Split { harness, .. }, Mode::Harness) => harness,
            (Results::Split { production, .. }, Mode::Production) => production,
        })
    }
}

fn execute_custom(
    script: &Script,
    obj: Obj<'_>,
    options: &RunOptions,
    observer: Option<&mut dyn RunObserver>,
) -> (Vec<String>, Results) {
    execute(script, obj, options, observer, |returned| {
        let (l, idx) = match returned {
            Err(error) => return Results::Same(Err(error)),
            Ok(value) => value,
        };
        // SAFETY: `idx` is the returned value in the live state, inside a protected call.
        let type_name = unsafe { stdlib::type_name(l, idx) };
        if type_name != "table" {
            return Results::Split {
                harness: Ok(Data::default()),
                production: Err(not_table(&type_name)),
            };
        }
        let mut raw = Vec::new();
        // SAFETY: as above.
        let harness = match unsafe { json::encode_at(l, idx, EmptyTable::EmptyArray, &mut raw) } {
            // No empty table: the controller's encoder writes the same text.
            Ok(false) => {
                return match json::canonical_from_encoded(&raw) {
                    Some(canonical) => {
                        debug_assert_eq!(
                            decode_custom_result(&raw).map(|data| data.to_canonical_json()),
                            Ok(canonical.clone()),
                            "the canonical shortcut agrees with decoding"
                        );
                        Results::Encoded { raw, canonical }
                    }
                    None => Results::Same(decode_raw(&raw, decode_custom_result)),
                };
            }
            Ok(true) => decode_raw(&raw, decode_custom_result),
            Err(message) => Err(ScriptError::new(ErrorKind::Encode, message)),
        };
        raw.clear();
        // SAFETY: as above.
        let production = match unsafe { json::encode_at(l, idx, EmptyTable::Null, &mut raw) } {
            Ok(_) => decode_raw(&raw, decode_custom_result),
            Err(message) => Err(ScriptError::new(ErrorKind::Encode, message)),
        };
        Results::Split {
            harness,
            production,
        }
    })
}

/// Runs an ingress-class script once against `obj`.
pub fn run_ingress(script: &Script, obj: &IngressData, options: &RunOptions) -> IngressRun {
    run_ingress_json(script, &obj.to_json(), options)
}

/// Runs an ingress-class script with an `obj` given as JSON.
pub fn run_ingress_json(script: &Script, obj: &JsonValue, options: &RunOptions) -> IngressRun {
    execute_ingress(script, obj, options, None)
}

fn execute_ingress(
    script: &Script,
    obj: &JsonValue,
    options: &RunOptions,
    observer: Option<&mut dyn RunObserver>,
) -> IngressRun {
    let (prints, result) = execute(script, Obj::Json(obj), options, observer, |returned| {
        let (l, idx) = returned?;
        // SAFETY: `idx` is the returned value in the live state, inside a protected call.
        let type_name = unsafe { stdlib::type_name(l, idx) };
        if type_name != "table" {
            return Err(not_table(&type_name));
        }
        let mut raw = Vec::new();
        // SAFETY: as above.
        match unsafe { json::encode_at(l, idx, EmptyTable::Null, &mut raw) } {
            Ok(_) => decode_raw(&raw, decode_ingress_result),
            Err(message) => Err(ScriptError::new(ErrorKind::Encode, message)),
        }
    });
    IngressRun { prints, result }
}

/// Decodes an encoded result into its type, classifying a failure as `unmarshal`.
fn decode_raw<T>(
    raw: &[u8],
    decode: impl FnOnce(&[u8]) -> Result<T, String>,
) -> Result<T, ScriptError> {
    decode(raw).map_err(|message| ScriptError::new(ErrorKind::Unmarshal, message))
}

/// Takes a fresh state with the environment and the compiled chunk, sets `obj`, runs the
/// chunk and hands the last returned value (Kruise takes the top of the stack) to `finish`
/// while the state lives. `finish` may be called a second time with an error (see
/// `Sandbox::run`). With an observer (a debugger), the run gets a sandbox of its own (the
/// debugger checkpoints and rewinds it) and the observer is told of its lines.
fn execute<T>(
    script: &Script,
    obj: Obj<'_>,
    options: &RunOptions,
    observer: Option<&mut dyn RunObserver>,
    finish: impl FnMut(Result<(State, c_int), ScriptError>) -> T,
) -> (Vec<String>, T) {
    let mut finish = finish;
    let bytecode = match &script.compiled {
        Ok(bytecode) => bytecode,
        // The state would not change the outcome: skip it.
        Err(error) => return (Vec::new(), finish(Err(error.clone()))),
    };
    let sandbox = match &observer {
        None => script.prepared.take(bytecode, options).map(Lent::Pooled),
        Some(_) => prepared::loaded_sandbox(bytecode, options).map(|sandbox| {
            sandbox.begin_run(options.limits.timeout);
            Lent::Own(sandbox)
        }),
    };
    let sandbox = match sandbox {
        Ok(sandbox) => sandbox,
        Err(error) => return (Vec::new(), finish(Err(error))),
    };
    if let Err(error) = set_obj(&sandbox, obj, options.key_order) {
        return (Vec::new(), finish(Err(cannot_prepare(error))));
    }
    sandbox.start_collector();
    let result = match observer {
        Some(observer) => sandbox.run_observed(observer, finish),
        None => sandbox.run(finish),
    };
    (sandbox.take_prints(), result)
}

/// The sandbox of one run: from the script's pool, or made for a debugged run.
enum Lent<'a> {
    Pooled(prepared::Lease<'a>),
    Own(Sandbox),
}

impl std::ops::Deref for Lent<'_> {
    type Target = Sandbox;

    fn deref(&self) -> &Sandbox {
        match self {
            Lent::Pooled(lease) => lease,
            Lent::Own(sandbox) => sandbox,
        }
    }
}

/// The error of a run whose state could not be made (the memory cap is too small for it).
fn cannot_prepare(error: String) -> ScriptError {
    ScriptError::new(
        ErrorKind::Runtime,
        format!("cannot prepare the Lua state: {error}"),
    )
}

/// The `obj` of a run, as JSON or as the data of a test-case step.
#[derive(Clone, Copy)]
enum Obj<'a> {
    Json(&'a JsonValue),
    Data(&'a LuaData),
}

/// A fresh sandbox with Kruise's environment (libraries, `json`): what every run starts
/// from, before the chunk is loaded and `obj` set (exposed for benchmarks).
pub fn fresh_sandbox(options: &RunOptions) -> Result<Sandbox, String> {
    let sandbox = Sandbox::new(&options.limits)?;
    let order = options.key_order;
    sandbox.protected(|l| {
        // SAFETY: a protected call in a state with the standard libraries open.
        unsafe {
            stdlib::install_raw(l);
            json::install_module_raw(l, order);
        }
    })?;
    Ok(sandbox)
}

/// Sets the global `obj` in a sandbox with Kruise's environment.
fn set_obj(sandbox: &Sandbox, obj: Obj<'_>, order: KeyOrder) -> Result<(), String> {
    // A step's obj is converted without copying its spec into JSON first: everything else
    // goes through `LuaData::to_json`, and `data.spec` is added afterwards, which is where
    // sorted insertion puts it anyway ("spec" sorts after "annotations" and "labels").
    let (shell, late_spec) = match obj {
        Obj::Json(json) => (Cow::Borrowed(json), None),
        Obj::Data(data) if order != KeyOrder::Sorted => (Cow::Owned(data.to_json()), None),
        Obj::Data(data) => {
            let without_spec = Data {
                spec: None,
                labels: data.data.labels.clone(),
                annotations: data.data.annotations.clone(),
            };
            let shell = data.to_json_with_data(without_spec.to_obj_json());
            let spec = data.data.spec.as_ref().filter(|s| **s != JsonValue::Null);
            (Cow::Owned(shell), spec)
        }
    };
    sandbox.protected(|l| {
        // SAFETY: a protected call in a prepared state. A memory error leaks the
        // conversion's work stack (see json::push_json).
        unsafe {
            ffi::lua_pushlstring(l, c"obj".as_ptr(), 3);
            json::push_json(l, &shell, order);
            if let Some(spec) = late_spec {
                ffi::lua_getfield(l, -1, c"data".as_ptr());
                ffi::lua_pushlstring(l, c"spec".as_ptr(), 4);
                json::push_json(l, spec, order);
                ffi::lua_rawset(l, -3);
                ffi::lua_pop(l, 1);
            }
            ffi::lua_rawset(l, ffi::LUA_GLOBALSINDEX);
        }
    })
}

fn not_table(type_name: &str) -> ScriptError {
    ScriptError::new(
        ErrorKind::NotTable,
        format!("expect table output from Lua script, not {type_name}"),
    )
}

/// Which `obj` and result a script gets: a custom network provider's, or an ingress class's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ScriptFlavor {
    #[default]
    Custom,
    /// Ingress-class scripts: the step's obj is turned into an [`IngressData`] (weight as a
    /// string, `original`'s annotations) and only annotations are compared.
    Ingress,
}

impl From<&ScriptKind> for ScriptFlavor {
    fn from(kind: &ScriptKind) -> Self {
        match kind {
            ScriptKind::Custom { .. } => ScriptFlavor::Custom,
            ScriptKind::Ingress { .. } => ScriptFlavor::Ingress,
        }
    }
}

/// Runs every step of `case` through `script` and compares with `expected` under `mode`.
pub fn run_case(script: &Script, case: &TestCase, mode: Mode, options: &RunOptions) -> CaseOutcome {
    let steps = (0..case.steps.len())
        .map(|index| run_case_step(script, ScriptFlavor::Custom, case, index, mode, options))
        .collect();
    CaseOutcome {
        case_error: None,
        warnings: case.warnings.clone(),
        steps,
    }
}

/// The obj an ingress-class script gets for a case step.
pub fn ingress_obj(obj: &LuaData) -> IngressData {
    IngressData {
        annotations: obj.data.annotations.clone(),
        weight: obj.canary_weight.to_string(),
        matches: obj.matches.clone(),
        canary_service: obj.canary_service.clone(),
        request_header_modifier: obj.request_header_modifier.clone(),
    }
}

/// Runs step `index` of `case` (so callers can spread the steps of a case over threads).
///
/// In production mode the step is run as the controller runs it: an ingress-class script on
/// the canary Ingress as the earlier steps left them (this replays those steps), and a step
/// with neither traffic nor matches is marked [`StepOutcome::not_called`] (see `production`).
pub fn run_case_step(
    script: &Script,
    flavor: ScriptFlavor,
    case: &TestCase,
    index: usize,
    mode: Mode,
    options: &RunOptions,
) -> StepOutcome {
    run_step_with(script, flavor, case, index, mode, options, None)
}

/// [`run_case_step`] with a debugger attached to the script's run (see `crate::debug`).
pub(crate) fn run_case_step_debugged(
    script: &Script,
    flavor: ScriptFlavor,
    case: &TestCase,
    index: usize,
    mode: Mode,
    options: &RunOptions,
    observer: &mut dyn RunObserver,
) -> StepOutcome {
    if flavor == ScriptFlavor::Ingress && mode == Mode::Production {
        // The debugger follows the controller's first run of the script for this step.
        match production::ingress_step_obj(script, case, index, options) {
            Ok(Some(obj)) => {
                execute_ingress(script, &obj.to_json(), options, Some(observer));
            }
            Ok(None) => observer.notice(
                "the controller does not run the script for this step: an earlier step failed while the canary Ingress was created".to_owned(),
            ),
            Err(reason) => observer.notice(format!(
                "the controller does not run the script for this step: {reason}"
            )),
        }
        return run_step_with(script, flavor, case, index, mode, options, None);
    }
    run_step_with(script, flavor, case, index, mode, options, Some(observer))
}

fn run_step_with(
    script: &Script,
    flavor: ScriptFlavor,
    case: &TestCase,
    index: usize,
    mode: Mode,
    options: &RunOptions,
    observer: Option<&mut dyn RunObserver>,
) -> StepOutcome {
    let step = &case.steps[index];
    let mut not_called = None;
    let mut controller_warnings = Vec::new();
    let (prints, results) = match (flavor, mode) {
        (ScriptFlavor::Custom, _) => execute_custom(script, Obj::Data(&step.obj), options, observer),
        (ScriptFlavor::Ingress, Mode::Harness) => {
            let run = execute_ingress(script, &ingress_obj(&step.obj).to_json(), options, observer);
            let result = run.result.map(|annotations| Data {
                annotations,
                ..Data::default()
            });
            (run.prints, Results::Same(result))
        }
        // The controller runs the script on the canary Ingress the earlier steps left.
        (ScriptFlavor::Ingress, Mode::Production) => {
            let chained = production::controller_ingress_step(script, case, index, options);
            not_called = chained.not_called;
            controller_warnings = chained.warnings;
            (chained.prints, Results::Same(chained.result))
        }
    };
    // Ingress scripts are compared on annotations only.
    let expected_entry = case.expected.get(index).map(|entry| match flavor {
        ScriptFlavor::Custom => (Cow::Borrowed(&entry.data), entry),
        ScriptFlavor::Ingress => {
            let annotations = Data {
                annotations: entry.data.annotations.clone(),
                ..Data::default()
            };
            (Cow::Owned(annotations), entry)
        }
    });
    let mut warnings = match &results {
        Results::Same(_) | Results::Encoded { .. } => Vec::new(),
        Results::Split {
            harness,
            production,
        } => mode_difference_warning(harness, production, mode)
            .into_iter()
            .collect(),
    };
    warnings.extend(controller_warnings);
    if flavor == ScriptFlavor::Custom && mode == Mode::Production && !step.reaches_provider() {
        not_called = Some(NOT_CALLED_NO_TRAFFIC);
        let expected = case.expected.get(index).map(|entry| entry.canonical_json());
        warnings.push(production::custom_skip_warning(
            script, case, index, expected, options,
        ));
    }
    let mut outcome = StepOutcome {
        index,
        status: StepStatus::Error,
        obj: step.obj.clone(),
        actual: None,
        expected: expected_entry.as_ref().map(|(data, entry)| match data {
            Cow::Borrowed(_) => entry.canonical_json().to_owned(),
            Cow::Owned(data) => data.to_canonical_json(),
        }),
        error: None,
        diff: Vec::new(),
        unified_diff: String::new(),
        warnings,
        not_called,
        prints,
        expected_span: expected_entry.as_ref().map(|(_, entry)| entry.node.span),
        step_span: step.span,
    };
    // The actual result's canonical JSON, and its data when already decoded.
    let actual = match &results {
        Results::Encoded { canonical, .. } => Ok((canonical.clone(), None)),
        other => match other.get(mode) {
            Cow::Borrowed(Ok(data)) => Ok((data.to_canonical_json(), Some(data))),
            Cow::Borrowed(Err(error)) => Err(error.clone()),
            Cow::Owned(_) => unreachable!("only Encoded results are decoded on demand"),
        },
    };
    match actual {
        Err(error) => outcome.error = Some(error),
        Ok((canonical, decoded)) => {
            outcome.actual = Some(canonical);
            match &expected_entry {
                None => {
                    outcome.error = Some(ScriptError::new(
                        ErrorKind::Case,
                        format!(
                            "no expected[{index}]: the case has {} expected entries for {} steps (upstream's test panics: index out of range)",
                            case.expected.len(),
                            case.steps.len()
                        ),
                    ));
                }
                Some(_) if outcome.actual == outcome.expected => outcome.status = StepStatus::Pass,
                Some((expected, entry)) => {
                    outcome.status = StepStatus::Fail;
                    let actual = match decoded {
                        Some(data) => Cow::Borrowed(data),
                        None => match results.get(mode).into_owned() {
                            Ok(data) => Cow::Owned(data),
                            Err(_) => unreachable!("an Encoded result decodes"),
                        },
                    };
                    let expected_json = expected.to_obj_json();
                    let actual_json = actual.to_obj_json();
                    outcome.diff = diff_values(&expected_json, &actual_json)
                        .into_iter()
                        .map(|(path, expected, actual)| FieldDiff {
                            span: span_in_expected(&entry.node, &path),
                            path,
                            expected,
                            actual,
                        })
                        .collect();
                    outcome.unified_diff = unified_yaml_diff(&expected_json, &actual_json);
                }
            }
        }
    }
    // A skipped ingress step is compared on what the canary Ingress keeps; when that fails,
    // the reason must still show (reports mark only passing steps as skipped).
    if let (Some(reason), StepStatus::Fail | StepStatus::Error) =
        (outcome.not_called, outcome.status)
        && flavor == ScriptFlavor::Ingress
    {
        outcome.warnings.push(format!(
            "{reason}: the result is what the canary Ingress keeps from the earlier steps"
        ));
    }
    outcome
}

/// A warning when the controller would get something else than the test harness sees: the
/// differing JSON paths with both values, and the one rule of Kruise's that explains them.
fn mode_difference_warning(
    harness: &Result<Data, ScriptError>,
    production: &Result<Data, ScriptError>,
    mode: Mode,
) -> Option<String> {
    if harness == production {
        return None;
    }
    // "here" is the side this run's verdict uses; "there" is the other one.
    let (here, there, there_name) = match mode {
        Mode::Harness => (harness, production, "in the cluster"),
        Mode::Production => (production, harness, "in `go test`"),
    };
    let intro = match mode {
        Mode::Harness => "the controller would get something else than this test",
        Mode::Production => "Kruise's unit test would see something else than the controller",
    };
    match (here, there) {
        (Ok(here), Ok(there)) => {
            let diffs = diff_values(&here.to_obj_json(), &there.to_obj_json());
            if diffs.is_empty() {
                return None;
            }
            const SHOWN: usize = 5;
            let mut listed: Vec<String> = diffs
                .iter()
                .take(SHOWN)
                .map(|(path, here, there)| {
                    format!(
                        "{}: {} here, {} {there_name}",
                        format_path(path),
                        short_value(here.as_ref()),
                        short_value(there.as_ref())
                    )
                })
                .collect();
            if diffs.len() > SHOWN {
                listed.push(format!("and {} more", diffs.len() - SHOWN));
            }
            let empty_table = diffs.iter().any(|(_, a, b)| is_empty_list_vs_null(a, b));
            let why = if empty_table {
                " (an empty Lua table encodes as [] in Kruise's test and as null in the controller)"
            } else {
                ""
            };
            Some(format!("{intro}: {}{why}", listed.join("; ")))
        }
        (here, there) => {
            let describe = |result: &Result<Data, ScriptError>| match result {
                Ok(data) => data.to_canonical_json(),
                Err(error) => format!("a {} error ({})", error.kind, error.message),
            };
            let not_table = [here, there]
                .iter()
                .any(|result| matches!(result, Err(error) if error.kind == ErrorKind::NotTable));
            let why = if not_table {
                " (a result that is not a table gives {} in Kruise's test and an error in the controller)"
            } else {
                ""
            };
            Some(format!(
                "{intro}: {} here, {} {there_name}{why}",
                describe(here),
                describe(there)
            ))
        }
    }
}

/// `[]` on one side and `null` on the other: the empty-table encoding rule.
fn is_empty_list_vs_null(a: &Option<JsonValue>, b: &Option<JsonValue>) -> bool {
    let empty_list =
        |v: &Option<JsonValue>| matches!(v, Some(JsonValue::Array(items)) if items.is_empty());
    let null = |v: &Option<JsonValue>| matches!(v, Some(JsonValue::Null));
    (empty_list(a) && null(b)) || (null(a) && empty_list(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(fields: &[(&str, JsonValue)]) -> Result<Data, ScriptError> {
        let map = fields
            .iter()
            .map(|(key, value)| (key.to_string(), value.clone()))
            .collect();
        Ok(Data {
            spec: Some(JsonValue::Object(map)),
            ..Data::default()
        })
    }

    #[test]
    fn mode_difference_lists_the_differing_paths_and_the_rule_that_applies() {
        let harness = spec(&[
            ("extra", JsonValue::Array(Vec::new())),
            ("host", JsonValue::String("a".into())),
        ]);
        let production = spec(&[
            ("extra", JsonValue::Null),
            ("host", JsonValue::String("a".into())),
        ]);
        assert_eq!(
            mode_difference_warning(&harness, &production, Mode::Harness).unwrap(),
            "the controller would get something else than this test: spec.extra: [] here, null in the cluster (an empty Lua table encodes as [] in Kruise's test and as null in the controller)"
        );
        assert_eq!(
            mode_difference_warning(&harness, &production, Mode::Production).unwrap(),
            "Kruise's unit test would see something else than the controller: spec.extra: null here, [] in `go test` (an empty Lua table encodes as [] in Kruise's test and as null in the controller)"
        );
    }

    #[test]
    fn a_non_table_result_names_only_its_own_rule() {
        let harness = Ok(Data::default());
        let production = Err(not_table("string"));
        let warning = mode_difference_warning(&harness, &production, Mode::Harness).unwrap();
        assert!(
            warning.contains("a result that is not a table gives {}"),
            "{warning}"
        );
        assert!(!warning.contains("empty Lua table"), "{warning}");
    }
}
