//! Running scripts: one run of a script against an obj (both result modes from one execution),
//! and a whole test case → one outcome per step, with structural and unified diffs.

use std::collections::BTreeMap;

use crate::error::ScriptError;
use crate::json::KeyOrder;
use crate::luadata::{Data, IngressData, LuaData};
use crate::testcase::{CaseError, CaseWarning, TestCase};
use crate::value::JsonValue;
use crate::vm::Limits;
use crate::yaml::{PathSeg, Span};

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
        RunOptions { limits: Limits::default(), key_order: KeyOrder::Sorted }
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
    /// The obj the script received.
    pub obj: LuaData,
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

/// Runs a custom-provider script once against `obj`.
pub fn run_custom(source: &str, obj: &LuaData, options: &RunOptions) -> ScriptRun {
    let _ = (source, obj, options);
    todo!("runner")
}

/// Runs an ingress-class script once against `obj`.
pub fn run_ingress(source: &str, obj: &IngressData, options: &RunOptions) -> IngressRun {
    let _ = (source, obj, options);
    todo!("runner")
}

/// Runs every step of `case` through `source` and compares with `expected` under `mode`.
pub fn run_case(source: &str, case: &TestCase, mode: Mode, options: &RunOptions) -> CaseOutcome {
    let _ = (source, case, mode, options);
    todo!("runner")
}
