//! Stage 1 of reading a case: YAML → the JSON Go decodes (sigs.k8s.io/yaml's conversion,
//! which turns numbers and booleans into strings where the Go field is a string).

use super::*;

/// A JSON value as sigs.k8s.io/yaml hands it to `encoding/json`, with its YAML node.
#[derive(Debug)]
pub(super) struct GoNode<'a> {
    pub(super) v: GoVal<'a>,
    pub(super) src: &'a YamlNode,
}

/// Strings are borrowed from the YAML tree where they are the same text (most are), so the
/// JSON stage does not copy a case's text once more.
#[derive(Debug)]
pub(super) enum GoVal<'a> {
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
    pub(super) fn kind(&self) -> &'static str {
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
pub(super) fn yaml_kind(node: &YamlNode) -> &'static str {
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
pub(super) fn is_unstructured(ty: Option<&'static Ty>) -> bool {
    match ty {
        Some(Ty::Ptr(inner)) => is_unstructured(Some(inner)),
        Some(Ty::Unstructured) => true,
        _ => false,
    }
}

/// Checks that `node` converts to JSON as [`convert`] would convert it without a target (the
/// same errors, in the same order), with the same warnings, without building anything.
pub(super) fn check_plain_conversion(
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
            let text = go::json_text::go_special_float(*f);
            return Err(fail(node, format!("json: unsupported value: {text}")));
        }
        _ => {}
    }
    Ok(())
}

/// Two keys of one mapping became the same JSON key.
pub(super) fn key_collision_warning(name: &str, earlier_line: u32, key: &YamlNode) -> CaseWarning {
    CaseWarning {
        message: format!(
            "this key and the one on line {earlier_line} both become the JSON key `{name}`; Kruise keeps the later value"
        ),
        span: Some(key.span),
    }
}

/// The concrete type a value lands in, as sigs.k8s.io/yaml resolves it: through pointers, and
/// `None` for types that decode themselves (their contents are never converted).
pub(super) fn conversion_target(ty: Option<&'static Ty>) -> Option<&'static Ty> {
    match ty? {
        Ty::Ptr(inner) => conversion_target(Some(inner)),
        Ty::IntOrString | Ty::Time | Ty::Unstructured => None,
        other => Some(other),
    }
}

/// A map key as sigs.k8s.io/yaml turns it into a JSON key, borrowed when it is a string.
pub(super) fn json_key(key: &YamlNode) -> Option<Cow<'_, str>> {
    match &key.value {
        YamlValue::String(s) => Some(Cow::Borrowed(s)),
        _ => key.key_string().map(Cow::Owned),
    }
}

/// Converts a YAML node to the JSON sigs.k8s.io/yaml produces for a value of type `target`.
/// Two keys of one mapping that become the same JSON key (`on:` and `"true":`) keep the later
/// value, as Go's map does, with a warning.
pub(super) fn convert<'a>(
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
                    let text = go::json_text::go_special_float(*f);
                    return Err(fail(node, format!("json: unsupported value: {text}")));
                }
                YamlValue::Float(f) => GoVal::Float(*f),
                YamlValue::Seq(_) | YamlValue::Map(_) => unreachable!("collections handled above"),
            }
        }
    };
    Ok(GoNode { v, src: node })
}
