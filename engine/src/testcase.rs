//! Test cases (`testdata/*.yaml`): typed decoding as Kruise's test does, the `obj` of every
//! step, the expected results, and warnings for what Kruise silently ignores.

use crate::luadata::{Data, LuaData};
use crate::yaml::{Span, YamlNode};

/// Which input drives the case (when both are present, `rollout` wins).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaseKind {
    /// `rollout` (v1beta1): one step per `spec.strategy.canary.steps[i]`.
    Rollout,
    /// `trafficRouting` (v1alpha1): a single step.
    TrafficRouting,
}

/// A problem with the case file as a whole (kind `case`), at a position when known.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseError {
    pub message: String,
    pub span: Option<Span>,
}

/// Something Kruise accepts silently but that is probably a mistake (an unknown field such as
/// `weight:` on a v1beta1 step, more `expected` entries than steps, …).
#[derive(Debug, Clone, PartialEq)]
pub struct CaseWarning {
    pub message: String,
    pub span: Option<Span>,
}

/// The input of one step: the obj and where the step is written.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseStep {
    pub obj: LuaData,
    /// The `steps[i]` node (rollout) or the `trafficRouting` node.
    pub span: Option<Span>,
}

/// One `expected[i]` entry: the result it asks for and its node (for positions of fields).
#[derive(Debug, Clone, PartialEq)]
pub struct ExpectedEntry {
    pub data: Data,
    pub node: YamlNode,
}

/// A parsed test case.
#[derive(Debug, Clone, PartialEq)]
pub struct TestCase {
    pub kind: CaseKind,
    pub steps: Vec<CaseStep>,
    pub expected: Vec<ExpectedEntry>,
    /// The `expected` sequence node, to point at when entries are missing.
    pub expected_span: Option<Span>,
    pub warnings: Vec<CaseWarning>,
    /// The whole document, for callers that want to look up more positions.
    pub root: YamlNode,
}

/// Parses a test case the way Kruise's unit test reads it (conformance 2.7).
pub fn parse_case(source: &str) -> Result<TestCase, CaseError> {
    let _ = source;
    todo!("testcase helper")
}
