//! Test cases (`testdata/*.yaml`): typed decoding as Kruise's test does, the `obj` of every
//! step, the expected results, and warnings for what Kruise silently ignores.
//!
//! Kruise reads a case with sigs.k8s.io/yaml v1.4.0 into a Go struct
//! `{rollout *v1beta1.Rollout, trafficRouting *v1alpha1.TrafficRouting,
//! original *Unstructured, expected []*Unstructured}`. That happens in two stages, and both
//! are reproduced here over a [`YamlNode`] tree so that every problem keeps its position:
//!
//! 1. **YAML → JSON** ([`convert`]): keys become strings, and a number or boolean becomes a
//!    string where the Go field it lands in is a string. The field lookup of that stage resolves
//!    a field promoted from an embedded struct to the embedded struct itself, so inside
//!    `rollout…steps[i]` (whose `traffic`, `matches` and `requestHeaderModifier` come from the
//!    embedded `TrafficRoutingStrategy`) nothing is converted: `traffic: 50` stays a number.
//! 2. **JSON → Go** ([`Decoder`]): `encoding/json` semantics. Keys are visited in sorted
//!    order and matched to fields exactly first, then case-insensitively; unknown keys are
//!    skipped (reported here as [`CaseWarning`]s); a value of the wrong type is an error of the
//!    whole case; `null` leaves a non-pointer field as it was. `Unstructured`, `IntOrString` and
//!    `metav1.Time` decode themselves, and their errors stop decoding at once.
//!
//! The Go types are described by the static tables below ([`Ty`], [`StructTy`]); `status`,
//! `ownerReferences` and `managedFields` are not modelled (accepted as they are).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::go;
use crate::json::field_name_matches;
use crate::luadata::{
    Data, HeaderModifier, HttpPathMatch, HttpRouteMatch, LuaData, NameValueMatch,
};
use crate::value::JsonValue;
use crate::yaml::{self, Span, YamlNode, YamlValue};

mod decode;
mod go_types;
mod steps;
#[cfg(test)]
mod tests;
mod yaml_to_json;

use decode::*;
use go_types::*;
use steps::*;
use yaml_to_json::*;

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

impl std::fmt::Display for CaseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.span {
            Some(span) => write!(f, "line {}: {}", span.start.line, self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for CaseError {}

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
    /// Shared with every [`crate::steps::StepOutcome`] of the step (a run hands it back
    /// without copying it).
    pub obj: Arc<LuaData>,
    /// The `steps[i]` node (rollout) or the `trafficRouting` node.
    pub span: Option<Span>,
    /// Whether the controller's strategy for this step has a `traffic` (a Rollout step's
    /// `traffic` string, a TrafficRouting's `weight`): `canaryWeight` alone cannot tell an
    /// absent `traffic` from `traffic: "-1%"`, and the controller only calls a provider for a
    /// step with traffic or matches (see [`crate::luadata::reaches_provider`]).
    pub traffic_set: bool,
}

impl CaseStep {
    /// Whether Kruise's traffic-routing manager calls the provider (and so the script) for
    /// this step at all.
    pub fn reaches_provider(&self) -> bool {
        crate::luadata::reaches_provider(self.traffic_set, self.obj.matches.as_deref())
    }
}

/// One `expected[i]` entry: the result it asks for and its node (for positions of fields).
#[derive(Debug, Clone, PartialEq)]
pub struct ExpectedEntry {
    pub data: Data,
    pub node: YamlNode,
    /// `data`'s canonical JSON, made once when parsing: every run of the step compares with it.
    canonical: String,
}

impl ExpectedEntry {
    /// The canonical JSON of `data` (as [`Data::to_canonical_json`]), computed at parse time.
    pub fn canonical_json(&self) -> &str {
        &self.canonical
    }
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
    let parsed = yaml::parse_case_document(source).map_err(|e| CaseError {
        message: format!("error converting YAML to JSON: {e}"),
        span: Some(e.span()),
    })?;
    let root = parsed
        .root
        .unwrap_or_else(|| YamlNode::synthetic(YamlValue::Null));
    let yaml_warnings = parsed.notes.into_iter().map(|note| CaseWarning {
        message: note.message,
        span: Some(Span {
            start: note.pos,
            end: note.pos,
        }),
    });
    let mut decoder = Decoder {
        warnings: yaml_warnings.collect(),
        first_error: None,
    };
    let json = convert(&root, Some(&TEST_CASE_TY), &mut decoder.warnings)?;
    let ctx = Ctx {
        structure: None,
        fields: Vec::new(),
        display: String::new(),
    };
    let decoded = decoder
        .decode(&json, &TEST_CASE_TY, None, &ctx)
        .map_err(unmarshal_error)?;
    // The JSON stage is done with: free it before the case is built (big cases would
    // otherwise hold it next to everything built from it).
    drop(json);
    if let Some(error) = decoder.first_error {
        return Err(unmarshal_error(error));
    }
    let mut warnings = decoder.warnings;
    let mut top = decoded.unwrap_or(DNode {
        v: Dv::Nil,
        src: &root,
    });
    let (kind, steps, expected, expected_span) = build_case(&mut top, &root, &mut warnings)?;
    drop(top);
    Ok(TestCase {
        kind,
        steps,
        expected,
        expected_span,
        warnings,
        root,
    })
}

fn unmarshal_error(error: CaseError) -> CaseError {
    CaseError {
        message: format!(
            "error unmarshaling JSON: while decoding JSON: {}",
            error.message
        ),
        span: error.span,
    }
}
