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

use crate::json::{field_name_matches, gotext};
use crate::luadata::{
    Data, HeaderModifier, HttpPathMatch, HttpRouteMatch, LuaData, NameValueMatch,
};
use crate::value::JsonValue;
use crate::yaml::{self, Span, YamlNode, YamlValue};

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
    /// Shared with every [`crate::runner::StepOutcome`] of the step (a run hands it back
    /// without copying it).
    pub obj: Arc<LuaData>,
    /// The `steps[i]` node (rollout) or the `trafficRouting` node.
    pub span: Option<Span>,
    /// Whether the controller's strategy for this step has a `traffic` (a Rollout step's
    /// `traffic` string, a TrafficRouting's `weight`): `canaryWeight` alone cannot tell an
    /// absent `traffic` from `traffic: "-1%"`, and the controller only calls a provider for a
    /// step with traffic or matches (see [`crate::controller::reaches_provider`]).
    pub traffic_set: bool,
}

impl CaseStep {
    /// Whether Kruise's traffic-routing manager calls the provider (and so the script) for
    /// this step at all.
    pub fn reaches_provider(&self) -> bool {
        crate::controller::reaches_provider(self.traffic_set, self.obj.matches.as_deref())
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

// ---------------------------------------------------------------------------------------------
// The Go types Kruise decodes a case into.

/// A Go type, as far as decoding a case needs to know it.
#[derive(Debug)]
enum Ty {
    /// `string` or a named string type (the name is for messages).
    Str(&'static str),
    Bool,
    Int32,
    Int64,
    /// `intstr.IntOrString`: its own UnmarshalJSON (a string, or a number that fits int32).
    IntOrString,
    /// `metav1.Time`: its own UnmarshalJSON (null, or an RFC 3339 string).
    Time,
    /// `unstructured.Unstructured`: its own UnmarshalJSON (an object with a `kind`).
    Unstructured,
    /// Not modelled: anything is accepted and nothing is reported inside.
    Any,
    Ptr(&'static Ty),
    Slice(&'static Ty),
    /// `map[string]string`.
    StrMap,
    Struct(&'static StructTy),
}

#[derive(Debug)]
struct StructTy {
    /// Package and type name, as Go prints them in errors.
    pkg: &'static str,
    name: &'static str,
    fields: &'static [Field],
}

#[derive(Debug)]
struct Field {
    /// The JSON name.
    name: &'static str,
    ty: Ty,
    /// For a field promoted from an embedded struct: that struct. sigs.k8s.io/yaml's
    /// conversion looks the key up to the embedded struct, not to the field (see module docs).
    embedded: Option<&'static Ty>,
}

const fn field(name: &'static str, ty: Ty) -> Field {
    Field {
        name,
        ty,
        embedded: None,
    }
}

const fn promoted(name: &'static str, ty: Ty, from: &'static Ty) -> Field {
    Field {
        name,
        ty,
        embedded: Some(from),
    }
}

static STRING: Ty = Ty::Str("string");

static TYPE_META: StructTy = StructTy {
    pkg: "v1",
    name: "TypeMeta",
    fields: &[
        field("apiVersion", Ty::Str("string")),
        field("kind", Ty::Str("string")),
    ],
};
static TYPE_META_TY: Ty = Ty::Struct(&TYPE_META);

static OBJECT_META: StructTy = StructTy {
    pkg: "v1",
    name: "ObjectMeta",
    fields: &[
        field("name", Ty::Str("string")),
        field("generateName", Ty::Str("string")),
        field("namespace", Ty::Str("string")),
        field("selfLink", Ty::Str("string")),
        field("uid", Ty::Str("types.UID")),
        field("resourceVersion", Ty::Str("string")),
        field("generation", Ty::Int64),
        field("creationTimestamp", Ty::Time),
        field("deletionTimestamp", Ty::Ptr(&Ty::Time)),
        field("deletionGracePeriodSeconds", Ty::Ptr(&Ty::Int64)),
        field("labels", Ty::StrMap),
        field("annotations", Ty::StrMap),
        field("ownerReferences", Ty::Any),
        field("finalizers", Ty::Slice(&STRING)),
        field("managedFields", Ty::Any),
    ],
};

static OBJECT_REF: StructTy = StructTy {
    pkg: "v1beta1",
    name: "ObjectRef",
    fields: &[
        field("apiVersion", Ty::Str("string")),
        field("kind", Ty::Str("string")),
        field("name", Ty::Str("string")),
    ],
};

static INGRESS_TRAFFIC_ROUTING: StructTy = StructTy {
    pkg: "v1alpha1",
    name: "IngressTrafficRouting",
    fields: &[
        field("classType", Ty::Str("string")),
        field("name", Ty::Str("string")),
    ],
};

static GATEWAY_TRAFFIC_ROUTING: StructTy = StructTy {
    pkg: "v1alpha1",
    name: "GatewayTrafficRouting",
    fields: &[field("httpRouteName", Ty::Ptr(&STRING))],
};

static TRAFFIC_ROUTING_REF: StructTy = StructTy {
    pkg: "v1alpha1",
    name: "TrafficRoutingRef",
    fields: &[
        field("service", Ty::Str("string")),
        field("gracePeriodSeconds", Ty::Int32),
        field("ingress", Ty::Ptr(&Ty::Struct(&INGRESS_TRAFFIC_ROUTING))),
        field("gateway", Ty::Ptr(&Ty::Struct(&GATEWAY_TRAFFIC_ROUTING))),
        field("customNetworkRefs", Ty::Slice(&Ty::Struct(&OBJECT_REF))),
    ],
};

static HTTP_HEADER: StructTy = StructTy {
    pkg: "v1beta1",
    name: "HTTPHeader",
    fields: &[
        field("name", Ty::Str("v1beta1.HTTPHeaderName")),
        field("value", Ty::Str("string")),
    ],
};

static HTTP_HEADER_FILTER: StructTy = StructTy {
    pkg: "v1beta1",
    name: "HTTPHeaderFilter",
    fields: &[
        field("set", Ty::Slice(&Ty::Struct(&HTTP_HEADER))),
        field("add", Ty::Slice(&Ty::Struct(&HTTP_HEADER))),
        field("remove", Ty::Slice(&STRING)),
    ],
};

static HTTP_PATH_MATCH: StructTy = StructTy {
    pkg: "v1beta1",
    name: "HTTPPathMatch",
    fields: &[
        field("type", Ty::Ptr(&Ty::Str("v1beta1.PathMatchType"))),
        field("value", Ty::Ptr(&STRING)),
    ],
};

static HTTP_HEADER_MATCH: StructTy = StructTy {
    pkg: "v1beta1",
    name: "HTTPHeaderMatch",
    fields: &[
        field("type", Ty::Ptr(&Ty::Str("v1beta1.HeaderMatchType"))),
        field("name", Ty::Str("v1beta1.HTTPHeaderName")),
        field("value", Ty::Str("string")),
    ],
};

static HTTP_QUERY_PARAM_MATCH: StructTy = StructTy {
    pkg: "v1beta1",
    name: "HTTPQueryParamMatch",
    fields: &[
        field("type", Ty::Ptr(&Ty::Str("v1beta1.QueryParamMatchType"))),
        field("name", Ty::Str("string")),
        field("value", Ty::Str("string")),
    ],
};

static HTTP_ROUTE_MATCH_V1BETA1: StructTy = StructTy {
    pkg: "v1beta1",
    name: "HttpRouteMatch",
    fields: &[
        field("path", Ty::Ptr(&Ty::Struct(&HTTP_PATH_MATCH))),
        field("headers", Ty::Slice(&Ty::Struct(&HTTP_HEADER_MATCH))),
        field(
            "queryParams",
            Ty::Slice(&Ty::Struct(&HTTP_QUERY_PARAM_MATCH)),
        ),
    ],
};

static TRAFFIC_ROUTING_STRATEGY_V1BETA1: StructTy = StructTy {
    pkg: "v1beta1",
    name: "TrafficRoutingStrategy",
    fields: &[
        field("traffic", Ty::Ptr(&STRING)),
        field(
            "requestHeaderModifier",
            Ty::Ptr(&Ty::Struct(&HTTP_HEADER_FILTER)),
        ),
        field("matches", Ty::Slice(&Ty::Struct(&HTTP_ROUTE_MATCH_V1BETA1))),
    ],
};
static TRAFFIC_ROUTING_STRATEGY_V1BETA1_TY: Ty = Ty::Struct(&TRAFFIC_ROUTING_STRATEGY_V1BETA1);

static ROLLOUT_PAUSE: StructTy = StructTy {
    pkg: "v1beta1",
    name: "RolloutPause",
    fields: &[field("duration", Ty::Ptr(&Ty::Int32))],
};

static CANARY_STEP: StructTy = StructTy {
    pkg: "v1beta1",
    name: "CanaryStep",
    fields: &[
        promoted(
            "traffic",
            Ty::Ptr(&STRING),
            &TRAFFIC_ROUTING_STRATEGY_V1BETA1_TY,
        ),
        promoted(
            "requestHeaderModifier",
            Ty::Ptr(&Ty::Struct(&HTTP_HEADER_FILTER)),
            &TRAFFIC_ROUTING_STRATEGY_V1BETA1_TY,
        ),
        promoted(
            "matches",
            Ty::Slice(&Ty::Struct(&HTTP_ROUTE_MATCH_V1BETA1)),
            &TRAFFIC_ROUTING_STRATEGY_V1BETA1_TY,
        ),
        field("replicas", Ty::Ptr(&Ty::IntOrString)),
        field("pause", Ty::Struct(&ROLLOUT_PAUSE)),
    ],
};

static PATCH_POD_TEMPLATE_METADATA: StructTy = StructTy {
    pkg: "v1beta1",
    name: "PatchPodTemplateMetadata",
    fields: &[
        field("annotations", Ty::StrMap),
        field("labels", Ty::StrMap),
    ],
};

static CANARY_STRATEGY: StructTy = StructTy {
    pkg: "v1beta1",
    name: "CanaryStrategy",
    fields: &[
        field("steps", Ty::Slice(&Ty::Struct(&CANARY_STEP))),
        field(
            "trafficRoutings",
            Ty::Slice(&Ty::Struct(&TRAFFIC_ROUTING_REF)),
        ),
        field("failureThreshold", Ty::Ptr(&Ty::IntOrString)),
        field(
            "patchPodTemplateMetadata",
            Ty::Ptr(&Ty::Struct(&PATCH_POD_TEMPLATE_METADATA)),
        ),
        field("enableExtraWorkloadForCanary", Ty::Bool),
        field("trafficRoutingRef", Ty::Str("string")),
        field("disableGenerateCanaryService", Ty::Bool),
    ],
};

static BLUE_GREEN_STRATEGY: StructTy = StructTy {
    pkg: "v1beta1",
    name: "BlueGreenStrategy",
    fields: &[
        field("steps", Ty::Slice(&Ty::Struct(&CANARY_STEP))),
        field(
            "trafficRoutings",
            Ty::Slice(&Ty::Struct(&TRAFFIC_ROUTING_REF)),
        ),
        field("failureThreshold", Ty::Ptr(&Ty::IntOrString)),
        field("trafficRoutingRef", Ty::Str("string")),
        field("disableGenerateCanaryService", Ty::Bool),
    ],
};

static ROLLOUT_STRATEGY: StructTy = StructTy {
    pkg: "v1beta1",
    name: "RolloutStrategy",
    fields: &[
        field("paused", Ty::Bool),
        field("canary", Ty::Ptr(&Ty::Struct(&CANARY_STRATEGY))),
        field("blueGreen", Ty::Ptr(&Ty::Struct(&BLUE_GREEN_STRATEGY))),
    ],
};

static ROLLOUT_SPEC: StructTy = StructTy {
    pkg: "v1beta1",
    name: "RolloutSpec",
    fields: &[
        field("workloadRef", Ty::Struct(&OBJECT_REF)),
        field("strategy", Ty::Struct(&ROLLOUT_STRATEGY)),
        field("disabled", Ty::Bool),
    ],
};

static ROLLOUT: StructTy = StructTy {
    pkg: "v1beta1",
    name: "Rollout",
    fields: &[
        promoted("apiVersion", Ty::Str("string"), &TYPE_META_TY),
        promoted("kind", Ty::Str("string"), &TYPE_META_TY),
        field("metadata", Ty::Struct(&OBJECT_META)),
        field("spec", Ty::Struct(&ROLLOUT_SPEC)),
        field("status", Ty::Any),
    ],
};

static HTTP_ROUTE_MATCH_V1ALPHA1: StructTy = StructTy {
    pkg: "v1alpha1",
    name: "HttpRouteMatch",
    fields: &[field("headers", Ty::Slice(&Ty::Struct(&HTTP_HEADER_MATCH)))],
};

static TRAFFIC_ROUTING_STRATEGY_V1ALPHA1: StructTy = StructTy {
    pkg: "v1alpha1",
    name: "TrafficRoutingStrategy",
    fields: &[
        field("weight", Ty::Ptr(&Ty::Int32)),
        field(
            "requestHeaderModifier",
            Ty::Ptr(&Ty::Struct(&HTTP_HEADER_FILTER)),
        ),
        field(
            "matches",
            Ty::Slice(&Ty::Struct(&HTTP_ROUTE_MATCH_V1ALPHA1)),
        ),
    ],
};

static TRAFFIC_ROUTING_SPEC: StructTy = StructTy {
    pkg: "v1alpha1",
    name: "TrafficRoutingSpec",
    fields: &[
        field("objectRef", Ty::Slice(&Ty::Struct(&TRAFFIC_ROUTING_REF))),
        field("strategy", Ty::Struct(&TRAFFIC_ROUTING_STRATEGY_V1ALPHA1)),
    ],
};

static TRAFFIC_ROUTING: StructTy = StructTy {
    pkg: "v1alpha1",
    name: "TrafficRouting",
    fields: &[
        promoted("apiVersion", Ty::Str("string"), &TYPE_META_TY),
        promoted("kind", Ty::Str("string"), &TYPE_META_TY),
        field("metadata", Ty::Struct(&OBJECT_META)),
        field("spec", Ty::Struct(&TRAFFIC_ROUTING_SPEC)),
        field("status", Ty::Any),
    ],
};

static TEST_CASE: StructTy = StructTy {
    pkg: "custom",
    name: "TestCase",
    fields: &[
        field("rollout", Ty::Ptr(&Ty::Struct(&ROLLOUT))),
        field("trafficRouting", Ty::Ptr(&Ty::Struct(&TRAFFIC_ROUTING))),
        field("original", Ty::Ptr(&Ty::Unstructured)),
        field("expected", Ty::Slice(&Ty::Ptr(&Ty::Unstructured))),
    ],
};
static TEST_CASE_TY: Ty = Ty::Struct(&TEST_CASE);

impl Ty {
    /// The type's name as Go's `reflect.Type.String()` prints it.
    fn go_name(&self) -> String {
        match self {
            Ty::Str(name) => name.to_string(),
            Ty::Bool => "bool".into(),
            Ty::Int32 => "int32".into(),
            Ty::Int64 => "int64".into(),
            Ty::IntOrString => "intstr.IntOrString".into(),
            Ty::Time => "v1.Time".into(),
            Ty::Unstructured => "unstructured.Unstructured".into(),
            Ty::Any => "interface {}".into(),
            Ty::Ptr(inner) => format!("*{}", inner.go_name()),
            Ty::Slice(inner) => format!("[]{}", inner.go_name()),
            Ty::StrMap => "map[string]string".into(),
            Ty::Struct(st) => format!("{}.{}", st.pkg, st.name),
        }
    }
}

/// The field a JSON key decodes into: an exact match first, else the first case-insensitive one.
fn find_field<'t>(st: &'t StructTy, key: &str) -> Option<&'t Field> {
    st.fields
        .iter()
        .find(|f| f.name == key)
        .or_else(|| st.fields.iter().find(|f| field_name_matches(f.name, key)))
}

// ---------------------------------------------------------------------------------------------
// Stage 1: YAML → the JSON Go decodes (sigs.k8s.io/yaml's conversion).

/// A JSON value as sigs.k8s.io/yaml hands it to `encoding/json`, with its YAML node.
#[derive(Debug)]
struct GoNode<'a> {
    v: GoVal<'a>,
    src: &'a YamlNode,
}

/// Strings are borrowed from the YAML tree where they are the same text (most are), so the
/// JSON stage does not copy a case's text once more.
#[derive(Debug)]
enum GoVal<'a> {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Cow<'a, str>),
    Arr(Vec<GoNode<'a>>),
    /// Keys sorted bytewise (Go marshals maps so), each with its key node.
    Obj(Vec<(Cow<'a, str>, &'a YamlNode, GoNode<'a>)>),
    /// A non-null value bound for an `Unstructured` (`original`, `expected[i]`): nothing in it
    /// is converted, so it stays the YAML node (already checked to convert) and becomes JSON
    /// once, when decoded. A big resource is not held a third time as converted nodes.
    Raw,
}

impl GoVal<'_> {
    /// How Go's JSON errors name a value's kind.
    fn kind(&self) -> &'static str {
        match self {
            GoVal::Null => "null",
            GoVal::Bool(_) => "bool",
            GoVal::Int(_) | GoVal::Float(_) => "number",
            GoVal::Str(_) => "string",
            GoVal::Arr(_) => "array",
            GoVal::Obj(_) => "object",
            // Only `Unstructured` decodes it, and names its kind with `yaml_kind`.
            GoVal::Raw => "value",
        }
    }
}

/// How Go's JSON errors name the kind of a YAML value converted as is.
fn yaml_kind(node: &YamlNode) -> &'static str {
    match node.value {
        YamlValue::Null => "null",
        YamlValue::Bool(_) => "bool",
        YamlValue::Int(_) | YamlValue::Float(_) => "number",
        YamlValue::String(_) => "string",
        YamlValue::Seq(_) => "array",
        YamlValue::Map(_) => "object",
    }
}

/// Whether values of `ty` decode themselves as `Unstructured` (through pointers).
fn is_unstructured(ty: Option<&'static Ty>) -> bool {
    match ty {
        Some(Ty::Ptr(inner)) => is_unstructured(Some(inner)),
        Some(Ty::Unstructured) => true,
        _ => false,
    }
}

/// Checks that `node` converts to JSON as [`convert`] would convert it without a target (the
/// same errors, in the same order), with the same warnings, without building anything.
fn check_plain_conversion(
    node: &YamlNode,
    warnings: &mut Vec<CaseWarning>,
) -> Result<(), CaseError> {
    let fail = |n: &YamlNode, message: String| CaseError {
        message: format!("error converting YAML to JSON: {message}"),
        span: Some(n.span),
    };
    match &node.value {
        YamlValue::Map(entries) => {
            let mut seen: std::collections::HashMap<Cow<'_, str>, u32> =
                std::collections::HashMap::new();
            for (key, value) in entries {
                let Some(name) = json_key(key) else {
                    return Err(fail(key, "unsupported map key of type: <nil>".into()));
                };
                check_plain_conversion(value, warnings)?;
                if let Some(earlier) = seen.insert(name.clone(), key.span.start.line) {
                    warnings.push(key_collision_warning(&name, earlier, key));
                }
            }
        }
        YamlValue::Seq(items) => {
            for item in items {
                check_plain_conversion(item, warnings)?;
            }
        }
        YamlValue::Float(f) if !f.is_finite() => {
            let text = gotext::go_special_float(*f);
            return Err(fail(node, format!("json: unsupported value: {text}")));
        }
        _ => {}
    }
    Ok(())
}

/// Two keys of one mapping became the same JSON key.
fn key_collision_warning(name: &str, earlier_line: u32, key: &YamlNode) -> CaseWarning {
    CaseWarning {
        message: format!(
            "this key and the one on line {earlier_line} both become the JSON key `{name}`; Kruise keeps the later value"
        ),
        span: Some(key.span),
    }
}

/// The concrete type a value lands in, as sigs.k8s.io/yaml resolves it: through pointers, and
/// `None` for types that decode themselves (their contents are never converted).
fn conversion_target(ty: Option<&'static Ty>) -> Option<&'static Ty> {
    match ty? {
        Ty::Ptr(inner) => conversion_target(Some(inner)),
        Ty::IntOrString | Ty::Time | Ty::Unstructured => None,
        other => Some(other),
    }
}

/// A map key as sigs.k8s.io/yaml turns it into a JSON key, borrowed when it is a string.
fn json_key(key: &YamlNode) -> Option<Cow<'_, str>> {
    match &key.value {
        YamlValue::String(s) => Some(Cow::Borrowed(s)),
        _ => key.key_string().map(Cow::Owned),
    }
}

/// Converts a YAML node to the JSON sigs.k8s.io/yaml produces for a value of type `target`.
/// Two keys of one mapping that become the same JSON key (`on:` and `"true":`) keep the later
/// value, as Go's map does, with a warning.
fn convert<'a>(
    node: &'a YamlNode,
    target: Option<&'static Ty>,
    warnings: &mut Vec<CaseWarning>,
) -> Result<GoNode<'a>, CaseError> {
    if is_unstructured(target) && node.value != YamlValue::Null {
        check_plain_conversion(node, warnings)?;
        return Ok(GoNode {
            v: GoVal::Raw,
            src: node,
        });
    }
    let target = conversion_target(target);
    let fail = |n: &YamlNode, message: String| CaseError {
        message: format!("error converting YAML to JSON: {message}"),
        span: Some(n.span),
    };
    let v = match &node.value {
        YamlValue::Map(entries) => {
            let mut out: BTreeMap<Cow<'a, str>, (&'a YamlNode, GoNode<'a>)> = BTreeMap::new();
            for (key, value) in entries {
                let Some(name) = json_key(key) else {
                    return Err(fail(key, "unsupported map key of type: <nil>".into()));
                };
                let child_target = match target {
                    Some(Ty::Struct(st)) => {
                        find_field(st, &name).map(|f| f.embedded.unwrap_or(&f.ty))
                    }
                    Some(Ty::StrMap) => Some(&STRING),
                    _ => None,
                };
                let converted = convert(value, child_target, warnings)?;
                if let Some((earlier, _)) = out.insert(name.clone(), (key, converted)) {
                    warnings.push(key_collision_warning(&name, earlier.span.start.line, key));
                }
            }
            GoVal::Obj(out.into_iter().map(|(k, (key, v))| (k, key, v)).collect())
        }
        YamlValue::Seq(items) => {
            let elem = match target {
                Some(Ty::Slice(elem)) => Some(*elem),
                _ => None,
            };
            GoVal::Arr(
                items
                    .iter()
                    .map(|item| convert(item, elem, warnings))
                    .collect::<Result<_, _>>()?,
            )
        }
        scalar => {
            let to_string = matches!(target, Some(Ty::Str(_)));
            match scalar {
                YamlValue::Null => GoVal::Null,
                YamlValue::String(s) => GoVal::Str(Cow::Borrowed(s)),
                YamlValue::Bool(b) if to_string => GoVal::Str(Cow::Owned(b.to_string())),
                YamlValue::Bool(b) => GoVal::Bool(*b),
                YamlValue::Int(i) if to_string => GoVal::Str(Cow::Owned(i.to_string())),
                YamlValue::Int(i) => GoVal::Int(*i),
                YamlValue::Float(f) if to_string => {
                    GoVal::Str(Cow::Owned(yaml::go_format_float_g32(*f)))
                }
                YamlValue::Float(f) if !f.is_finite() => {
                    let text = gotext::go_special_float(*f);
                    return Err(fail(node, format!("json: unsupported value: {text}")));
                }
                YamlValue::Float(f) => GoVal::Float(*f),
                YamlValue::Seq(_) | YamlValue::Map(_) => unreachable!("collections handled above"),
            }
        }
    };
    Ok(GoNode { v, src: node })
}

// ---------------------------------------------------------------------------------------------
// Stage 2: JSON → Go values (`encoding/json` semantics).

/// A decoded Go value. Absent fields and nil pointers/slices/maps are simply missing.
#[derive(Debug, Clone)]
enum Dv<'a> {
    /// A nil item of a slice (or the zero value of a struct item written as `null`).
    Nil,
    Str(String),
    Int(i64),
    List(Vec<DNode<'a>>),
    /// Set fields by JSON name, in the order they were first set.
    Struct(Vec<(&'static str, DNode<'a>)>),
    Map(BTreeMap<String, String>),
    /// An `Unstructured` object: its JSON with integers kept exact.
    Unstructured(BTreeMap<String, JsonValue>),
    /// A value of a type that is not modelled, or whose contents do not matter here.
    Opaque,
}

#[derive(Debug, Clone)]
struct DNode<'a> {
    v: Dv<'a>,
    src: &'a YamlNode,
}

impl<'a> DNode<'a> {
    fn field(&self, name: &str) -> Option<&DNode<'a>> {
        match &self.v {
            Dv::Struct(fields) => fields.iter().find(|(n, _)| *n == name).map(|(_, v)| v),
            _ => None,
        }
    }

    fn field_mut(&mut self, name: &str) -> Option<&mut DNode<'a>> {
        match &mut self.v {
            Dv::Struct(fields) => fields.iter_mut().find(|(n, _)| *n == name).map(|(_, v)| v),
            _ => None,
        }
    }

    fn string(&self) -> Option<&str> {
        match &self.v {
            Dv::Str(s) => Some(s),
            _ => None,
        }
    }

    fn items(&self) -> &[DNode<'a>] {
        match &self.v {
            Dv::List(items) => items,
            _ => &[],
        }
    }

    fn field_string(&self, name: &str) -> String {
        self.field(name)
            .and_then(DNode::string)
            .unwrap_or_default()
            .to_string()
    }
}

/// Where decoding is: the innermost struct and the JSON field names leading to it (as Go's
/// errors name them), plus a path with indices for our own messages.
#[derive(Clone)]
struct Ctx {
    structure: Option<&'static str>,
    fields: Vec<&'static str>,
    display: String,
}

impl Ctx {
    fn field(&self, structure: &'static str, name: &'static str) -> Ctx {
        let mut fields = self.fields.clone();
        fields.push(name);
        Ctx {
            structure: Some(structure),
            fields,
            display: self.child_display(name),
        }
    }

    fn index(&self, i: usize) -> Ctx {
        Ctx {
            display: format!("{}[{}]", self.display, i),
            ..self.clone()
        }
    }

    fn child_display(&self, key: &str) -> String {
        if self.display.is_empty() {
            key.to_string()
        } else {
            format!("{}.{}", self.display, key)
        }
    }
}

struct Decoder {
    warnings: Vec<CaseWarning>,
    /// The first type mismatch: Go's decoder notes it, goes on, and fails at the end.
    first_error: Option<CaseError>,
}

impl Decoder {
    fn type_error(&mut self, node: &GoNode<'_>, value: String, ty: &Ty, ctx: &Ctx) {
        if self.first_error.is_some() {
            return;
        }
        let target = match ctx.structure {
            Some(st) if !ctx.fields.is_empty() => {
                format!("Go struct field {}.{}", st, ctx.fields.join("."))
            }
            _ => "Go value".to_string(),
        };
        self.first_error = Some(CaseError {
            message: format!(
                "json: cannot unmarshal {value} into {target} of type {}",
                ty.go_name()
            ),
            span: Some(node.src.span),
        });
    }

    fn warn(&mut self, message: String, span: Span) {
        self.warnings.push(CaseWarning {
            message,
            span: Some(span),
        });
    }

    /// Decodes `node` into a Go value of type `ty` that currently holds `existing` (`None`:
    /// zero or nil). Returns the new value (`None`: zero or nil). Err stops decoding at once
    /// (errors of types that decode themselves); type mismatches are noted and decoding goes on.
    fn decode<'a>(
        &mut self,
        node: &GoNode<'a>,
        ty: &'static Ty,
        existing: Option<DNode<'a>>,
        ctx: &Ctx,
    ) -> Result<Option<DNode<'a>>, CaseError> {
        let src = node.src;
        let keep = |existing: Option<DNode<'a>>| Ok(existing);
        let made = |v: Dv<'a>| Ok(Some(DNode { v, src }));
        match ty {
            Ty::Any => match node.v {
                GoVal::Null => Ok(None),
                _ => made(Dv::Opaque),
            },
            Ty::Ptr(inner) => match node.v {
                GoVal::Null => Ok(None),
                _ => self.decode(node, inner, existing, ctx),
            },
            Ty::Str(_) => match &node.v {
                GoVal::Str(s) => made(Dv::Str(s.to_string())),
                GoVal::Null => keep(existing),
                other => {
                    self.type_error(node, other.kind().to_string(), ty, ctx);
                    keep(existing)
                }
            },
            Ty::Bool => match &node.v {
                GoVal::Bool(_) => made(Dv::Opaque),
                GoVal::Null => keep(existing),
                other => {
                    self.type_error(node, other.kind().to_string(), ty, ctx);
                    keep(existing)
                }
            },
            Ty::Int32 | Ty::Int64 => {
                let (min, max) = match ty {
                    Ty::Int32 => (i32::MIN as i128, i32::MAX as i128),
                    _ => (i64::MIN as i128, i64::MAX as i128),
                };
                match &node.v {
                    GoVal::Null => keep(existing),
                    GoVal::Int(i) if (min..=max).contains(&(*i as i128)) => made(Dv::Int(*i)),
                    GoVal::Int(i) => {
                        self.type_error(node, format!("number {i}"), ty, ctx);
                        keep(existing)
                    }
                    GoVal::Float(f) => match json_integer_text(*f) {
                        Some(i) if (min..=max).contains(&i) => made(Dv::Int(i as i64)),
                        _ => {
                            let text = gotext::go_json_float_text(*f).unwrap_or_default();
                            self.type_error(node, format!("number {text}"), ty, ctx);
                            keep(existing)
                        }
                    },
                    other => {
                        self.type_error(node, other.kind().to_string(), ty, ctx);
                        keep(existing)
                    }
                }
            }
            Ty::IntOrString => match &node.v {
                GoVal::Str(_) | GoVal::Null => made(Dv::Opaque),
                GoVal::Int(i) if i32::try_from(*i).is_ok() => made(Dv::Opaque),
                GoVal::Float(f)
                    if json_integer_text(*f).is_some_and(|i| i32::try_from(i).is_ok()) =>
                {
                    made(Dv::Opaque)
                }
                other => Err(CaseError {
                    message: format!(
                        "json: cannot unmarshal {} into Go value of type int32",
                        other.kind()
                    ),
                    span: Some(src.span),
                }),
            },
            Ty::Time => match &node.v {
                GoVal::Null => made(Dv::Opaque),
                GoVal::Str(s) if is_rfc3339(s) => made(Dv::Opaque),
                GoVal::Str(s) => Err(CaseError {
                    message: format!(
                        "parsing time {s:?} as \"2006-01-02T15:04:05Z07:00\": cannot parse it as RFC 3339 ({})",
                        ctx.display
                    ),
                    span: Some(src.span),
                }),
                other => Err(CaseError {
                    message: format!(
                        "json: cannot unmarshal {} into Go value of type string",
                        other.kind()
                    ),
                    span: Some(src.span),
                }),
            },
            Ty::Unstructured => decode_unstructured(node, ctx).map(|obj| {
                Some(DNode {
                    v: Dv::Unstructured(obj),
                    src,
                })
            }),
            Ty::StrMap => match &node.v {
                GoVal::Null => Ok(None),
                GoVal::Obj(entries) => {
                    let mut map = match existing {
                        Some(DNode { v: Dv::Map(m), .. }) => m,
                        _ => BTreeMap::new(),
                    };
                    for (key, _, value) in entries {
                        match &value.v {
                            GoVal::Str(s) => {
                                map.insert(key.to_string(), s.to_string());
                            }
                            GoVal::Null => {
                                map.insert(key.to_string(), String::new());
                            }
                            other => self.type_error(value, other.kind().to_string(), &STRING, ctx),
                        }
                    }
                    made(Dv::Map(map))
                }
                other => {
                    self.type_error(node, other.kind().to_string(), ty, ctx);
                    keep(existing)
                }
            },
            Ty::Slice(elem) => match &node.v {
                GoVal::Null => Ok(None),
                GoVal::Arr(items) => {
                    let mut out = Vec::with_capacity(items.len());
                    for (i, item) in items.iter().enumerate() {
                        let decoded = self.decode(item, elem, None, &ctx.index(i))?;
                        out.push(decoded.unwrap_or(DNode {
                            v: Dv::Nil,
                            src: item.src,
                        }));
                    }
                    made(Dv::List(out))
                }
                other => {
                    self.type_error(node, other.kind().to_string(), ty, ctx);
                    keep(existing)
                }
            },
            Ty::Struct(st) => match &node.v {
                GoVal::Null => keep(existing),
                GoVal::Obj(entries) => {
                    let mut fields = match existing {
                        Some(DNode {
                            v: Dv::Struct(f), ..
                        }) => f,
                        _ => Vec::new(),
                    };
                    for (key, key_node, value) in entries {
                        let Some(f) = find_field(st, key) else {
                            self.warn(
                                unknown_field_message(st, key, &ctx.child_display(key)),
                                key_node.span,
                            );
                            continue;
                        };
                        if f.name != key {
                            self.warn(
                                format!(
                                    "`{}` is matched to the field `{}` case-insensitively ({}); Kruise accepts it, but the spelling differs",
                                    key,
                                    f.name,
                                    ctx.child_display(key)
                                ),
                                key_node.span,
                            );
                        }
                        let slot = fields.iter().position(|(n, _)| *n == f.name);
                        let current = slot.map(|i| fields.remove(i).1);
                        let child_ctx = ctx.field(st.name, f.name);
                        if let Some(decoded) = self.decode(value, &f.ty, current, &child_ctx)? {
                            fields.push((f.name, decoded));
                        }
                    }
                    Ok(Some(DNode {
                        v: Dv::Struct(fields),
                        src,
                    }))
                }
                other => {
                    self.type_error(node, other.kind().to_string(), ty, ctx);
                    keep(existing)
                }
            },
        }
    }
}

/// What a mistyped field probably meant, for the warning about it.
fn unknown_field_message(st: &StructTy, key: &str, path: &str) -> String {
    let hint = match (st.name, key) {
        ("CanaryStep", "weight") => {
            " (`weight` is the v1alpha1 step field; a v1beta1 step sets `traffic: \"N%\"`)"
        }
        ("CanaryStep", "pause") | ("CanaryStep", "replicas") => "",
        ("TestCase", _) => " (a case has `rollout`, `trafficRouting`, `original` and `expected`)",
        _ => "",
    };
    format!(
        "unknown field `{key}` in {}.{} at {path} is ignored by Kruise{hint}",
        st.pkg, st.name
    )
}

/// The integer Go's `encoding/json` reads from a float64's text, when that text is an integer
/// literal (Go writes integral floats below 1e21 without exponent or fraction).
fn json_integer_text(f: f64) -> Option<i128> {
    let text = gotext::go_json_float_text(f)?;
    if text.contains(['.', 'e']) {
        return None;
    }
    text.parse::<i128>().ok()
}

/// A JSON number as `Unstructured` keeps it: int64 when its text is an integer that fits,
/// float64 otherwise (apimachinery's number conversion).
fn unstructured_number(f: f64) -> JsonValue {
    match json_integer_text(f).and_then(|i| i64::try_from(i).ok()) {
        Some(i) => JsonValue::Int(i),
        None => JsonValue::Float(f),
    }
}

fn unstructured_json(node: &GoNode<'_>) -> JsonValue {
    match &node.v {
        GoVal::Null => JsonValue::Null,
        GoVal::Bool(b) => JsonValue::Bool(*b),
        GoVal::Int(i) => JsonValue::Int(*i),
        GoVal::Float(f) => unstructured_number(*f),
        GoVal::Str(s) => JsonValue::String(s.to_string()),
        GoVal::Arr(items) => JsonValue::Array(items.iter().map(unstructured_json).collect()),
        GoVal::Raw => yaml_unstructured_json(node.src),
        GoVal::Obj(entries) => JsonValue::Object(
            entries
                .iter()
                .map(|(k, _, v)| (k.to_string(), unstructured_json(v)))
                .collect(),
        ),
    }
}

/// [`unstructured_json`] of a YAML value converted as is (checked by
/// [`check_plain_conversion`]): a later duplicate key wins, as in a Go map.
fn yaml_unstructured_json(node: &YamlNode) -> JsonValue {
    match &node.value {
        YamlValue::Null => JsonValue::Null,
        YamlValue::Bool(b) => JsonValue::Bool(*b),
        YamlValue::Int(i) => JsonValue::Int(*i),
        YamlValue::Float(f) => unstructured_number(*f),
        YamlValue::String(s) => JsonValue::String(s.clone()),
        YamlValue::Seq(items) => {
            JsonValue::Array(items.iter().map(yaml_unstructured_json).collect())
        }
        YamlValue::Map(entries) => JsonValue::Object(
            entries
                .iter()
                .map(|(k, v)| {
                    let key = json_key(k).map_or_else(|| "null".to_string(), Cow::into_owned);
                    (key, yaml_unstructured_json(v))
                })
                .collect(),
        ),
    }
}

/// `Unstructured.UnmarshalJSON`: an object whose `kind` is a non-empty string and whose
/// `apiVersion` (when a string) has at most one `/`.
fn decode_unstructured(
    node: &GoNode<'_>,
    ctx: &Ctx,
) -> Result<BTreeMap<String, JsonValue>, CaseError> {
    let json = unstructured_json(node);
    let JsonValue::Object(object) = json else {
        return Err(CaseError {
            message: format!(
                "json: cannot unmarshal {} into Go value of type map[string]interface {{}} ({})",
                match node.v {
                    GoVal::Raw => yaml_kind(node.src),
                    ref other => other.kind(),
                },
                ctx.display
            ),
            span: Some(node.src.span),
        });
    };
    let kind_ok = matches!(object.get("kind"), Some(JsonValue::String(k)) if !k.is_empty());
    let version_ok = match object.get("apiVersion") {
        Some(JsonValue::String(v)) => v == "/" || v.matches('/').count() <= 1,
        _ => true,
    };
    if !kind_ok || !version_ok {
        let text = JsonValue::Object(object).to_canonical_json();
        return Err(CaseError {
            message: format!("Object 'Kind' is missing in '{text}'"),
            span: Some(node.src.span),
        });
    }
    Ok(object)
}

/// `unstructured.NestedStringMap(obj, "metadata", field)` as Kruise uses it: the map only when
/// every value is a string, else nothing.
fn string_map_of(
    object: &BTreeMap<String, JsonValue>,
    field: &str,
) -> Result<Option<BTreeMap<String, String>>, String> {
    let Some(JsonValue::Object(meta)) = object.get("metadata") else {
        return Ok(None);
    };
    match meta.get(field) {
        None | Some(JsonValue::Null) => Ok(None),
        Some(JsonValue::Object(map)) => {
            let mut out = BTreeMap::new();
            for (k, v) in map {
                match v {
                    JsonValue::String(s) => {
                        out.insert(k.clone(), s.clone());
                    }
                    _ => return Err(k.clone()),
                }
            }
            Ok(Some(out))
        }
        Some(_) => Err(String::new()),
    }
}

/// The `Data` of an `original`/`expected[i]` object, warning when labels or annotations are
/// dropped because of a non-string value.
fn data_of(
    mut object: BTreeMap<String, JsonValue>,
    node: &YamlNode,
    what: &str,
    warnings: &mut Vec<CaseWarning>,
) -> Data {
    let mut map = |field: &str| match string_map_of(&object, field) {
        Ok(map) => map.filter(|m| !m.is_empty()),
        Err(key) => {
            let at = node.get("metadata").and_then(|m| m.get(field));
            let value_span = at
                .and_then(|m| if key.is_empty() { Some(m) } else { m.get(&key) })
                .map(|n| n.span);
            let detail = if key.is_empty() {
                "it is not a map".to_string()
            } else {
                format!("the value of `{key}` is not a string (quote it)")
            };
            warnings.push(CaseWarning {
                message: format!(
                    "{what}.metadata.{field} is dropped entirely, as Kruise drops it: {detail}"
                ),
                span: value_span.or(Some(node.span)),
            });
            None
        }
    };
    let labels = map("labels");
    let annotations = map("annotations");
    let spec = object.remove("spec").filter(|s| *s != JsonValue::Null);
    Data {
        spec,
        labels,
        annotations,
    }
}

/// Whether `s` parses with Go's `time.RFC3339` layout (fractional seconds allowed).
fn is_rfc3339(s: &str) -> bool {
    let b = s.as_bytes();
    let num = |range: std::ops::Range<usize>, max: u32| -> bool {
        b.get(range.clone())
            .is_some_and(|d| d.iter().all(u8::is_ascii_digit))
            && s[range].parse::<u32>().is_ok_and(|v| v <= max)
    };
    if b.len() < 20
        || !num(0..4, 9999)
        || b[4] != b'-'
        || !num(5..7, 12)
        || b[7] != b'-'
        || !num(8..10, 31)
    {
        return false;
    }
    if b[10] != b'T'
        || !num(11..13, 23)
        || b[13] != b':'
        || !num(14..16, 59)
        || b[16] != b':'
        || !num(17..19, 59)
    {
        return false;
    }
    if &s[5..7] == "00" || &s[8..10] == "00" {
        return false;
    }
    let mut i = 19;
    if b[i] == b'.' {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return false;
        }
    }
    match &s[i..] {
        "Z" => true,
        zone => {
            let z = zone.as_bytes();
            z.len() == 6
                && (z[0] == b'+' || z[0] == b'-')
                && z[1..3].iter().all(u8::is_ascii_digit)
                && z[3] == b':'
                && z[4..6].iter().all(u8::is_ascii_digit)
        }
    }
}

// ---------------------------------------------------------------------------------------------
// From the decoded case to steps (what Kruise's test does with it).

fn name_value_match(node: &DNode<'_>) -> NameValueMatch {
    NameValueMatch {
        match_type: node
            .field("type")
            .and_then(DNode::string)
            .map(str::to_string),
        name: node.field_string("name"),
        value: node.field_string("value"),
    }
}

fn non_empty<T>(list: Vec<T>) -> Option<Vec<T>> {
    (!list.is_empty()).then_some(list)
}

fn route_match(node: &DNode<'_>, keep_only_headers: bool) -> HttpRouteMatch {
    let list = |name: &str| {
        node.field(name)
            .map(|l| l.items().iter().map(name_value_match).collect::<Vec<_>>())
    };
    let headers = list("headers").and_then(non_empty);
    if keep_only_headers {
        return HttpRouteMatch {
            path: None,
            headers,
            query_params: None,
        };
    }
    HttpRouteMatch {
        path: node.field("path").map(|p| HttpPathMatch {
            match_type: p.field("type").and_then(DNode::string).map(str::to_string),
            value: p.field("value").and_then(DNode::string).map(str::to_string),
        }),
        headers,
        query_params: list("queryParams").and_then(non_empty),
    }
}

fn header_modifier(node: &DNode<'_>) -> HeaderModifier {
    let pairs = |name: &str| {
        node.field(name)
            .map(|l| {
                l.items()
                    .iter()
                    .map(|h| (h.field_string("name"), h.field_string("value")))
                    .collect::<Vec<_>>()
            })
            .and_then(non_empty)
    };
    HeaderModifier {
        set: pairs("set"),
        add: pairs("add"),
        remove: node
            .field("remove")
            .map(|l| {
                l.items()
                    .iter()
                    .map(|h| h.string().unwrap_or_default().to_string())
                    .collect::<Vec<_>>()
            })
            .and_then(non_empty),
    }
}

fn case_error(message: impl Into<String>, span: Span) -> CaseError {
    CaseError {
        message: message.into(),
        span: Some(span),
    }
}

type BuiltCase = (CaseKind, Vec<CaseStep>, Vec<ExpectedEntry>, Option<Span>);

/// Builds the case from the decoded document. The resources' JSON is moved out of `top`
/// (not copied): a big `original` exists once while the case is built.
fn build_case(
    top: &mut DNode<'_>,
    root: &YamlNode,
    warnings: &mut Vec<CaseWarning>,
) -> Result<BuiltCase, CaseError> {
    if top.field("rollout").is_none() && top.field("trafficRouting").is_none() {
        return Err(case_error(
            "neither rollout nor trafficRouting defined in test case",
            root.span,
        ));
    }

    // The resources must be objects with a kind (checked while decoding) and must be there.
    let Some(original) = top.field_mut("original") else {
        return Err(case_error(
            "original is missing or null (upstream test panics: nil pointer)",
            root.span,
        ));
    };
    let original_src = original.src;
    let Dv::Unstructured(original_object) = &mut original.v else {
        return Err(case_error("original is not an object", original_src.span));
    };
    let data = data_of(
        std::mem::take(original_object),
        original_src,
        "original",
        warnings,
    );

    let mut expected = Vec::new();
    let no_items = &mut Vec::new();
    let entries = match top.field_mut("expected") {
        Some(DNode {
            v: Dv::List(items), ..
        }) => items,
        _ => no_items,
    };
    for (i, entry) in entries.iter_mut().enumerate() {
        let Dv::Unstructured(object) = &mut entry.v else {
            return Err(case_error(
                format!("expected[{i}] is null (upstream test panics: nil pointer)"),
                entry.src.span,
            ));
        };
        let object = std::mem::take(object);
        let data = data_of(object, entry.src, &format!("expected[{i}]"), warnings);
        expected.push(ExpectedEntry {
            canonical: data.to_canonical_json(),
            data,
            node: entry.src.clone(),
        });
    }
    let expected_span = top.field("expected").map(|n| n.src.span);

    let rollout = top.field("rollout");
    let traffic_routing = top.field("trafficRouting");
    let (kind, steps) = if let Some(rollout) = rollout {
        if let Some(tr) = traffic_routing {
            warnings.push(CaseWarning {
                message: "both rollout and trafficRouting are set; Kruise's test uses rollout and ignores trafficRouting".into(),
                span: Some(tr.src.span),
            });
        }
        (CaseKind::Rollout, rollout_steps(rollout, data, warnings)?)
    } else {
        let tr = traffic_routing.expect("checked above");
        (
            CaseKind::TrafficRouting,
            vec![traffic_routing_step(tr, data)?],
        )
    };

    if expected.len() > steps.len() {
        let extra = &expected[steps.len()];
        warnings.push(CaseWarning {
            message: format!(
                "expected has {} entries but the case has {} step(s); Kruise never compares the extra entries",
                expected.len(),
                steps.len()
            ),
            span: Some(extra.node.span),
        });
    }
    Ok((kind, steps, expected, expected_span))
}

/// The steps of a rollout case. Every step's obj shares `original`'s data (a case with many
/// steps and a big `original` holds it once).
fn rollout_steps(
    rollout: &DNode<'_>,
    data: Data,
    warnings: &mut Vec<CaseWarning>,
) -> Result<Vec<CaseStep>, CaseError> {
    let strategy = rollout.field("spec").and_then(|s| s.field("strategy"));
    let strategy_span = strategy.map_or(rollout.src.span, |s| s.src.span);
    let (name, chosen) = match (
        strategy.and_then(|s| s.field("canary")),
        strategy.and_then(|s| s.field("blueGreen")),
    ) {
        (Some(canary), _) => ("canary", canary),
        (None, Some(blue_green)) => ("blueGreen", blue_green),
        (None, None) => {
            return Err(case_error(
                "rollout.spec.strategy.canary is missing (upstream test panics: nil pointer)",
                strategy_span,
            ));
        }
    };
    let Some(first_ref) = chosen
        .field("trafficRoutings")
        .and_then(|r| r.items().first())
    else {
        return Err(case_error(
            format!(
                "rollout.spec.strategy.{name}.trafficRoutings is empty (upstream test panics: index out of range)"
            ),
            chosen.src.span,
        ));
    };
    let stable_service = first_ref.field_string("service");
    let canary_service = format!("{stable_service}-canary");
    let steps = chosen.field("steps").map(DNode::items).unwrap_or_default();
    if steps.is_empty() {
        warnings.push(CaseWarning {
            message: format!("rollout.spec.strategy.{name}.steps is empty: the case runs nothing"),
            span: Some(chosen.src.span),
        });
    }
    let data = Arc::new(data);
    Ok(steps
        .iter()
        .map(|step| {
            let traffic = step.field("traffic").and_then(DNode::string);
            let canary_weight = LuaData::canary_weight_from_traffic(traffic);
            let matches = step
                .field("matches")
                .map(|m| m.items().iter().map(|m| route_match(m, false)).collect());
            CaseStep {
                obj: Arc::new(LuaData {
                    data: Arc::clone(&data),
                    canary_weight,
                    stable_weight: 100i32.wrapping_sub(canary_weight),
                    matches,
                    canary_service: canary_service.clone(),
                    stable_service: stable_service.clone(),
                    request_header_modifier: step
                        .field("requestHeaderModifier")
                        .map(header_modifier),
                }),
                span: Some(step.src.span),
                traffic_set: traffic.is_some(),
            }
        })
        .collect())
}

fn traffic_routing_step(tr: &DNode<'_>, data: Data) -> Result<CaseStep, CaseError> {
    let spec = tr.field("spec");
    let Some(object_ref) = spec
        .and_then(|s| s.field("objectRef"))
        .and_then(|r| r.items().first())
    else {
        return Err(case_error(
            "trafficRouting.spec.objectRef is empty (upstream test panics: index out of range)",
            spec.map_or(tr.src.span, |s| s.src.span),
        ));
    };
    let service = object_ref.field_string("service");
    let strategy = spec.and_then(|s| s.field("strategy"));
    let canary_weight = match strategy.and_then(|s| s.field("weight")).map(|w| &w.v) {
        Some(Dv::Int(w)) => Some(*w as i32),
        _ => None,
    };
    // Kruise builds a fresh, never-nil list holding only each match's headers.
    let matches = strategy
        .and_then(|s| s.field("matches"))
        .map(|m| m.items().iter().map(|m| route_match(m, true)).collect())
        .unwrap_or_default();
    // Kruise turns a set weight into the strategy's `traffic` ("N%"; api/v1alpha1/conversion.go,
    // ConversionToV1beta1TrafficRoutingStrategy).
    let traffic_set = canary_weight.is_some();
    let canary_weight = canary_weight.unwrap_or(-1);
    Ok(CaseStep {
        traffic_set,
        obj: Arc::new(LuaData {
            data: Arc::new(data),
            canary_weight,
            stable_weight: 100i32.wrapping_sub(canary_weight),
            matches: Some(matches),
            canary_service: service.clone(),
            stable_service: service,
            request_header_modifier: strategy
                .and_then(|s| s.field("requestHeaderModifier"))
                .map(header_modifier),
        }),
        span: Some(tr.src.span),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::PathSeg;

    const ROLLOUT_HEAD: &str = "rollout:
  apiVersion: rollouts.kruise.io/v1beta1
  kind: Rollout
  spec:
    strategy:
      canary:
        trafficRoutings:
        - service: web
        steps:
";

    const ORIGINAL: &str = "original:
  apiVersion: example.io/v1
  kind: Route
  metadata:
    labels: {app: web}
  spec: {port: 8080}
";

    fn rollout_case(steps: &str, tail: &str) -> String {
        format!("{ROLLOUT_HEAD}{steps}{ORIGINAL}{tail}")
    }

    #[test]
    fn rollout_steps_become_objs() {
        let src = rollout_case(
            "        - traffic: 20%\n          matches:\n          - headers:\n            - {name: x, value: \"1\"}\n        - pause: {}\n",
            "expected:\n- kind: Route\n- kind: Route\n  spec: {x: 1}\n",
        );
        let case = parse_case(&src).unwrap();
        assert_eq!(case.kind, CaseKind::Rollout);
        assert_eq!(case.steps.len(), 2);
        let first = &case.steps[0].obj;
        assert_eq!((first.canary_weight, first.stable_weight), (20, 80));
        assert_eq!(
            (first.stable_service.as_str(), first.canary_service.as_str()),
            ("web", "web-canary")
        );
        let headers = first.matches.as_ref().unwrap()[0].headers.as_ref().unwrap();
        assert_eq!(
            (headers[0].name.as_str(), headers[0].value.as_str()),
            ("x", "1")
        );
        assert_eq!(case.steps[1].obj.canary_weight, -1);
        assert_eq!(case.steps[1].obj.matches, None);
        assert_eq!(
            first.data.spec,
            Some(JsonValue::Object(
                [("port".to_string(), JsonValue::Int(8080))].into()
            ))
        );
        assert_eq!(first.data.labels.as_ref().unwrap()["app"], "web");
        assert_eq!(case.expected.len(), 2);
        // The step's span points at its mapping.
        let step_span = case.steps[1].span.unwrap();
        assert_eq!(
            &src[step_span.start.offset..step_span.end.offset],
            "pause: {}"
        );
    }

    #[test]
    fn spans_of_expected_fields() {
        let src = rollout_case(
            "        - traffic: 20%\n",
            "expected:\n- kind: Route\n- kind: Route\n  spec:\n    x: 1\n",
        );
        let case = parse_case(&src).unwrap();
        let x = case.root.at_path(&[
            PathSeg::Key("expected".into()),
            PathSeg::Index(1),
            PathSeg::Key("spec".into()),
            PathSeg::Key("x".into()),
        ]);
        let x = x.unwrap();
        let line_of_x = src.lines().position(|l| l == "    x: 1").unwrap() as u32 + 1;
        assert_eq!((x.span.start.line, x.span.start.column), (line_of_x, 8));
        // The same node is reachable from the entry.
        let from_entry = case.expected[1]
            .node
            .at_path(&[PathSeg::Key("spec".into()), PathSeg::Key("x".into())])
            .unwrap();
        assert_eq!(from_entry.span, x.span);
        let seq = case.expected_span.unwrap();
        assert_eq!(seq.start.line, line_of_x - 3);
        // More expected entries than steps: a warning on the first extra entry.
        let extra = case
            .warnings
            .iter()
            .find(|w| w.message.contains("expected has 2 entries"))
            .unwrap();
        assert_eq!(extra.span.unwrap().start.line, line_of_x - 2);
    }

    #[test]
    fn unknown_fields_are_warnings_with_spans() {
        let src = rollout_case(
            "        - traffic: 20%\n          weight: 20\n          unknownField: x\n          matches:\n          - headerz: []\n",
            "expected:\n- kind: Route\nexpect: []\n",
        );
        let case = parse_case(&src).unwrap();
        let find = |needle: &str| {
            case.warnings
                .iter()
                .find(|w| w.message.contains(needle))
                .unwrap_or_else(|| panic!("no warning about {needle}: {:?}", case.warnings))
        };
        let weight = find("`weight`");
        assert!(weight.message.contains("traffic"), "{}", weight.message);
        let span = weight.span.unwrap();
        assert_eq!(&src[span.start.offset..span.end.offset], "weight");
        assert_eq!(span.start.column, 11);
        find("`unknownField`");
        let headerz = find("`headerz`");
        assert!(
            headerz.message.contains("steps[0].matches[0].headerz"),
            "{}",
            headerz.message
        );
        find("`expect`");
        // Nothing is reported inside the resources themselves.
        assert!(!case.warnings.iter().any(|w| w.message.contains("`port`")));
        // A case-insensitive match works, with a warning.
        let src = rollout_case("        - Traffic: 30%\n", "expected:\n- kind: Route\n");
        let case = parse_case(&src).unwrap();
        assert_eq!(case.steps[0].obj.canary_weight, 30);
        assert!(
            case.warnings
                .iter()
                .any(|w| w.message.contains("case-insensitively"))
        );
    }

    #[test]
    fn step_fields_are_not_converted_to_strings() {
        for step in [
            "        - traffic: 50\n",
            "        - traffic: true\n",
            "        - matches:\n          - headers:\n            - {name: a, value: 2}\n",
            "        - requestHeaderModifier: {set: [{name: a, value: 1}]}\n",
        ] {
            let err = parse_case(&rollout_case(step, "expected:\n- kind: Route\n")).unwrap_err();
            assert!(
                err.message.contains("cannot unmarshal"),
                "{step}: {}",
                err.message
            );
            assert!(err.span.is_some());
        }
        let err = parse_case(&rollout_case(
            "        - traffic: 50\n",
            "expected:\n- kind: Route\n",
        ))
        .unwrap_err();
        assert!(err.message.ends_with("Go struct field CanaryStep.rollout.spec.strategy.canary.steps.traffic of type string"), "{}", err.message);
        // Strings that look like numbers are fine, and so is `null`.
        let case = parse_case(&rollout_case(
            "        - traffic: \"50\"\n        - traffic: ~\n",
            "expected:\n- kind: Route\n",
        ))
        .unwrap();
        assert_eq!(case.steps[0].obj.canary_weight, 0);
        assert_eq!(case.steps[1].obj.canary_weight, -1);
        // Other step fields keep their Go types: pause.duration is an int32.
        assert!(
            parse_case(&rollout_case(
                "        - pause: {duration: \"5\"}\n",
                "expected:\n- kind: Route\n"
            ))
            .is_err()
        );
        assert!(
            parse_case(&rollout_case(
                "        - replicas: 1.5\n",
                "expected:\n- kind: Route\n"
            ))
            .is_err()
        );
        assert!(
            parse_case(&rollout_case(
                "        - replicas: 50%\n",
                "expected:\n- kind: Route\n"
            ))
            .is_ok()
        );
    }

    const TRAFFIC_ROUTING_HEAD: &str = "trafficRouting:
  apiVersion: rollouts.kruise.io/v1alpha1
  kind: TrafficRouting
  spec:
    objectRef:
    - service: web
    strategy:
";

    #[test]
    fn duplicate_keys_and_later_documents_are_warned_about() {
        let src = format!(
            "{TRAFFIC_ROUTING_HEAD}      weight: 10\n{ORIGINAL}expected:\n- kind: Route\n  spec: {{a: 1, a: 2, on: 3, \"true\": 4}}\n---\nexpected: []\n"
        );
        let case = parse_case(&src).unwrap();
        let messages: Vec<&str> = case.warnings.iter().map(|w| w.message.as_str()).collect();
        assert!(
            messages
                .iter()
                .any(|m| m.contains("the key `a` is written twice")),
            "{messages:?}"
        );
        assert!(
            messages
                .iter()
                .any(|m| m.contains("both become the JSON key `true`")),
            "{messages:?}"
        );
        assert!(
            messages
                .iter()
                .any(|m| m.contains("more than one YAML document")),
            "{messages:?}"
        );
        // Kruise's reading is kept: the later value wins, the first document counts.
        let spec = case.expected[0]
            .data
            .spec
            .as_ref()
            .unwrap()
            .to_canonical_json();
        assert_eq!(spec, r#"{"a":2,"true":4}"#);
        assert_eq!(case.expected.len(), 1);
    }

    #[test]
    fn steps_share_the_data_of_original() {
        let case = parse_case(&rollout_case(
            "        - traffic: 10%\n        - traffic: 20%\n        - traffic: 30%\n",
            "",
        ))
        .unwrap();
        assert_eq!(case.steps.len(), 3);
        assert!(Arc::ptr_eq(
            &case.steps[0].obj.data,
            &case.steps[2].obj.data
        ));
    }

    #[test]
    fn a_nan_in_original_is_a_conversion_error_at_its_line() {
        let src = format!(
            "{TRAFFIC_ROUTING_HEAD}      weight: 10\noriginal:\n  kind: R\n  spec: {{x: .nan}}\nexpected: []\n"
        );
        let err = parse_case(&src).unwrap_err();
        assert!(
            err.message.contains("json: unsupported value: NaN"),
            "{err:?}"
        );
        assert_eq!(err.span.unwrap().start.line, 11);
    }

    #[test]
    fn traffic_routing_converts_numbers_where_go_has_strings() {
        let src = format!(
            "{TRAFFIC_ROUTING_HEAD}      weight: 1e1\n      matches:\n      - path: {{value: /x}}\n        headers:\n        - {{name: 1, value: 8080, type: Exact}}\n        - {{name: on, value: 1.5}}\n      requestHeaderModifier:\n        remove: [1]\n{ORIGINAL}expected:\n- kind: Route\n"
        );
        let case = parse_case(&src).unwrap();
        assert_eq!(case.kind, CaseKind::TrafficRouting);
        let obj = &case.steps[0].obj;
        assert_eq!((obj.canary_weight, obj.stable_weight), (10, 90));
        assert_eq!(
            (obj.canary_service.as_str(), obj.stable_service.as_str()),
            ("web", "web")
        );
        let m = &obj.matches.as_ref().unwrap()[0];
        assert_eq!(m.path, None);
        let headers = m.headers.as_ref().unwrap();
        assert_eq!(
            (headers[0].name.as_str(), headers[0].value.as_str()),
            ("1", "8080")
        );
        assert_eq!(
            (headers[1].name.as_str(), headers[1].value.as_str()),
            ("true", "1.5")
        );
        assert_eq!(
            obj.request_header_modifier.as_ref().unwrap().remove,
            Some(vec!["1".to_string()])
        );
        // `path` is not a v1alpha1 match field.
        assert!(case.warnings.iter().any(|w| w.message.contains("`path`")));
        // Weight must be an int32.
        for weight in ["\"30\"", "1.5", "3000000000", "true"] {
            let src = format!(
                "{TRAFFIC_ROUTING_HEAD}      weight: {weight}\n{ORIGINAL}expected:\n- kind: Route\n"
            );
            assert!(parse_case(&src).is_err(), "weight {weight}");
        }
        // No weight: -1, and matches is an empty list.
        let src = format!("{TRAFFIC_ROUTING_HEAD}      {{}}\n{ORIGINAL}expected:\n- kind: Route\n");
        let obj = parse_case(&src).unwrap().steps[0].obj.clone();
        assert_eq!(
            (obj.canary_weight, obj.stable_weight, obj.matches.clone()),
            (-1, 101, Some(vec![]))
        );
    }

    #[test]
    fn resources_must_have_a_kind() {
        let base = rollout_case("        - traffic: 20%\n", "");
        for expected in [
            "expected:\n- spec: {}\n",
            "expected:\n- kind: \"\"\n",
            "expected:\n- kind: 5\n",
            "expected:\n- [kind]\n",
            "expected:\n- kind: Route\n  apiVersion: a/b/c\n",
            "expected: {kind: Route}\n",
        ] {
            assert!(
                parse_case(&format!("{base}{expected}")).is_err(),
                "{expected}"
            );
        }
        assert!(
            parse_case(&format!(
                "{base}expected:\n- kind: Route\n  apiVersion: v1\n"
            ))
            .is_ok()
        );
        assert!(parse_case(&format!("{base}expected:\n- ~\n")).is_err());
        // No expected at all is not a parse error (the runner reports the missing entries).
        let case = parse_case(&base).unwrap();
        assert!(case.expected.is_empty());
        let no_original =
            format!("{ROLLOUT_HEAD}        - traffic: 20%\nexpected:\n- kind: Route\n");
        assert!(parse_case(&no_original).is_err());
    }

    #[test]
    fn labels_need_every_value_to_be_a_string() {
        let src = format!(
            "{ROLLOUT_HEAD}        - traffic: 20%\noriginal:\n  kind: Route\n  metadata:\n    labels: {{a: x, b: yes}}\n    annotations: {{c: \"3\"}}\nexpected:\n- kind: Route\n  metadata:\n    labels: {{n: 3}}\n"
        );
        let case = parse_case(&src).unwrap();
        let data = &case.steps[0].obj.data;
        assert_eq!(data.labels, None);
        assert_eq!(data.annotations.as_ref().unwrap()["c"], "3");
        assert_eq!(data.spec, None);
        assert_eq!(case.expected[0].data.labels, None);
        let dropped: Vec<_> = case
            .warnings
            .iter()
            .filter(|w| w.message.contains("dropped"))
            .collect();
        assert_eq!(dropped.len(), 2, "{:?}", case.warnings);
    }

    #[test]
    fn structural_errors() {
        let tail = format!("{ORIGINAL}expected:\n- kind: Route\n");
        // Neither input.
        let err = parse_case(&tail).unwrap_err();
        assert_eq!(
            err.message,
            "neither rollout nor trafficRouting defined in test case"
        );
        // Rollout without canary, or without trafficRoutings.
        assert!(parse_case(&format!("rollout: {{spec: {{}}}}\n{tail}")).is_err());
        assert!(
            parse_case(&format!(
                "rollout: {{spec: {{strategy: {{canary: {{steps: [{{}}]}}}}}}}}\n{tail}"
            ))
            .is_err()
        );
        // Blue-green steps are used when there is no canary.
        let bg = format!(
            "rollout: {{spec: {{strategy: {{blueGreen: {{trafficRoutings: [{{service: s}}], steps: [{{traffic: 5%}}]}}}}}}}}\n{tail}"
        );
        let case = parse_case(&bg).unwrap();
        assert_eq!(case.steps[0].obj.canary_weight, 5);
        // Bad YAML.
        let err = parse_case("rollout: [\n").unwrap_err();
        assert!(
            err.message.starts_with("error converting YAML to JSON"),
            "{}",
            err.message
        );
        assert!(err.span.is_some());
        // NaN cannot become JSON.
        assert!(
            parse_case(&format!(
                "{ROLLOUT_HEAD}        - traffic: 20%\noriginal: {{kind: R, spec: {{x: .nan}}}}\n"
            ))
            .is_err()
        );
        // Not a mapping at all.
        assert!(parse_case("- a\n").is_err());
        assert!(parse_case("").is_err());
    }

    #[test]
    fn rollout_wins_over_traffic_routing() {
        let src = format!(
            "{ROLLOUT_HEAD}        - traffic: 60%\n{TRAFFIC_ROUTING_HEAD}      weight: 5\n{ORIGINAL}expected:\n- kind: Route\n"
        );
        let case = parse_case(&src).unwrap();
        assert_eq!(case.kind, CaseKind::Rollout);
        assert_eq!(case.steps[0].obj.canary_weight, 60);
        assert!(
            case.warnings
                .iter()
                .any(|w| w.message.contains("ignores trafficRouting"))
        );
        // ...but the ignored trafficRouting must still decode.
        let src = format!(
            "{ROLLOUT_HEAD}        - traffic: 60%\n{TRAFFIC_ROUTING_HEAD}      weight: \"5\"\n{ORIGINAL}expected:\n- kind: Route\n"
        );
        assert!(parse_case(&src).is_err());
    }

    #[test]
    fn unstructured_numbers() {
        assert_eq!(unstructured_number(1000.0), JsonValue::Int(1000));
        assert_eq!(unstructured_number(-0.0), JsonValue::Int(0));
        assert_eq!(unstructured_number(0.5), JsonValue::Float(0.5));
        assert_eq!(unstructured_number(1e20), JsonValue::Float(1e20));
        assert_eq!(
            unstructured_number(2f64.powi(62)),
            JsonValue::Int(4611686018427388000)
        );
        assert!(is_rfc3339("2024-01-02T03:04:05Z"));
        assert!(is_rfc3339("2024-01-02T03:04:05.123+02:00"));
        assert!(!is_rfc3339("2024-01-02"));
        assert!(!is_rfc3339("2024-13-02T03:04:05Z"));
    }
}
