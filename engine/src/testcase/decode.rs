//! Stage 2 of reading a case: JSON → Go values with `encoding/json` semantics (field
//! matching, type errors, unknown fields as warnings, `Unstructured`, `IntOrString`, `Time`).

use super::*;
use crate::value::JsonMap;

/// A decoded Go value. Absent fields and nil pointers/slices/maps are simply missing.
#[derive(Debug, Clone)]
pub(super) enum Dv<'a> {
    /// A nil item of a slice (or the zero value of a struct item written as `null`).
    Nil,
    Str(String),
    Int(i64),
    List(Vec<DNode<'a>>),
    /// Set fields by JSON name, in the order they were first set.
    Struct(Vec<(&'static str, DNode<'a>)>),
    Map(BTreeMap<String, String>),
    /// An `Unstructured` object: its JSON with integers kept exact.
    Unstructured(JsonMap),
    /// A value of a type that is not modelled, or whose contents do not matter here.
    Opaque,
}

#[derive(Debug, Clone)]
pub(super) struct DNode<'a> {
    pub(super) v: Dv<'a>,
    pub(super) src: &'a YamlNode,
}

impl<'a> DNode<'a> {
    pub(super) fn field(&self, name: &str) -> Option<&DNode<'a>> {
        match &self.v {
            Dv::Struct(fields) => fields.iter().find(|(n, _)| *n == name).map(|(_, v)| v),
            _ => None,
        }
    }

    pub(super) fn field_mut(&mut self, name: &str) -> Option<&mut DNode<'a>> {
        match &mut self.v {
            Dv::Struct(fields) => fields.iter_mut().find(|(n, _)| *n == name).map(|(_, v)| v),
            _ => None,
        }
    }

    pub(super) fn string(&self) -> Option<&str> {
        match &self.v {
            Dv::Str(s) => Some(s),
            _ => None,
        }
    }

    pub(super) fn items(&self) -> &[DNode<'a>] {
        match &self.v {
            Dv::List(items) => items,
            _ => &[],
        }
    }

    pub(super) fn field_string(&self, name: &str) -> String {
        self.field(name)
            .and_then(DNode::string)
            .unwrap_or_default()
            .to_string()
    }
}

/// Where decoding is: the innermost struct and the JSON field names leading to it (as Go's
/// errors name them), plus a path with indices for our own messages.
#[derive(Clone)]
pub(super) struct Ctx {
    pub(super) structure: Option<&'static str>,
    pub(super) fields: Vec<&'static str>,
    pub(super) display: String,
}

impl Ctx {
    pub(super) fn field(&self, structure: &'static str, name: &'static str) -> Ctx {
        let mut fields = self.fields.clone();
        fields.push(name);
        Ctx {
            structure: Some(structure),
            fields,
            display: self.child_display(name),
        }
    }

    pub(super) fn index(&self, i: usize) -> Ctx {
        Ctx {
            display: format!("{}[{}]", self.display, i),
            ..self.clone()
        }
    }

    pub(super) fn child_display(&self, key: &str) -> String {
        if self.display.is_empty() {
            key.to_string()
        } else {
            format!("{}.{}", self.display, key)
        }
    }
}

pub(super) struct Decoder {
    pub(super) warnings: Vec<CaseWarning>,
    /// The first type mismatch: Go's decoder notes it, goes on, and fails at the end.
    pub(super) first_error: Option<CaseError>,
}

impl Decoder {
    pub(super) fn type_error(&mut self, node: &GoNode<'_>, value: String, ty: &Ty, ctx: &Ctx) {
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

    pub(super) fn warn(&mut self, message: String, span: Span) {
        self.warnings.push(CaseWarning {
            message,
            span: Some(span),
        });
    }

    /// Decodes `node` into a Go value of type `ty` that currently holds `existing` (`None`:
    /// zero or nil). Returns the new value (`None`: zero or nil). Err stops decoding at once
    /// (errors of types that decode themselves); type mismatches are noted and decoding goes on.
    pub(super) fn decode<'a>(
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
                            let text = go::json_text::go_json_float_text(*f).unwrap_or_default();
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
pub(super) fn unknown_field_message(st: &StructTy, key: &str, path: &str) -> String {
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
pub(super) fn json_integer_text(f: f64) -> Option<i128> {
    let text = go::json_text::go_json_float_text(f)?;
    if text.contains(['.', 'e']) {
        return None;
    }
    text.parse::<i128>().ok()
}

/// A JSON number as `Unstructured` keeps it: int64 when its text is an integer that fits,
/// float64 otherwise (apimachinery's number conversion).
pub(super) fn unstructured_number(f: f64) -> JsonValue {
    match json_integer_text(f).and_then(|i| i64::try_from(i).ok()) {
        Some(i) => JsonValue::Int(i),
        None => JsonValue::Float(f),
    }
}

pub(super) fn unstructured_json(node: &GoNode<'_>) -> JsonValue {
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
pub(super) fn yaml_unstructured_json(node: &YamlNode) -> JsonValue {
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
pub(super) fn decode_unstructured(node: &GoNode<'_>, ctx: &Ctx) -> Result<JsonMap, CaseError> {
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
pub(super) fn string_map_of(
    object: &JsonMap,
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
pub(super) fn data_of(
    mut object: JsonMap,
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
pub(super) fn is_rfc3339(s: &str) -> bool {
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
