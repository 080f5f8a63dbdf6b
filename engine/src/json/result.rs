//! From the encoder's JSON to Kruise's result types, as Go's `json.Unmarshal` fills them
//! (conformance 2.5, 2.6, 2.8), and the canonical text of a result.

use std::collections::BTreeMap;

use super::gotext;
use super::parse::{self, TopLevel};
use crate::luadata::Data;
use crate::value::JsonValue;

/// The JSON type name Go uses in an `UnmarshalTypeError`.
fn kind(value: &JsonValue) -> &'static str {
    match value {
        JsonValue::Null => "null",
        JsonValue::Bool(_) => "bool",
        JsonValue::Int(_) | JsonValue::Float(_) => "number",
        JsonValue::String(_) => "string",
        JsonValue::Array(_) => "array",
        JsonValue::Object(_) => "object",
    }
}

/// Go's case-insensitive field-name match for a struct field whose name is lower-case ASCII
/// and contains an `s` or `k` (true of `spec`, `labels`, `annotations`): ASCII letters match
/// either case, and `s`/`k` also match U+017F (ſ) and U+212A (Kelvin sign).
fn field_name_matches(field: &str, key: &str) -> bool {
    let mut rest = key.as_bytes();
    for &f in field.as_bytes() {
        let Some(&k) = rest.first() else { return false };
        if k.is_ascii() {
            if !f.eq_ignore_ascii_case(&k) {
                return false;
            }
            rest = &rest[1..];
            continue;
        }
        let special = match f {
            b's' => "\u{17f}",
            b'k' => "\u{212a}",
            _ => return false,
        };
        match rest.strip_prefix(special.as_bytes()) {
            Some(after) => rest = after,
            None => return false,
        }
    }
    rest.is_empty()
}

/// Decodes one member into a `map[string]string` the way Go does: `null` sets the map to nil,
/// an object is merged into the existing map (later keys win; a `null` value stores ""),
/// anything else is an unmarshal error.
fn merge_string_map(
    target: &mut Option<BTreeMap<String, String>>,
    value: JsonValue,
    field: &str,
) -> Result<(), String> {
    match value {
        JsonValue::Null => {
            *target = None;
            Ok(())
        }
        JsonValue::Object(members) => {
            let map = target.get_or_insert_with(BTreeMap::new);
            for (key, item) in members {
                match item {
                    JsonValue::String(s) => {
                        map.insert(key, s);
                    }
                    JsonValue::Null => {
                        // Go leaves the string element at its zero value and stores it.
                        map.insert(key, String::new());
                    }
                    other => {
                        return Err(format!(
                            "json: cannot unmarshal {} into Go struct field Data.{field} of type string (key {key:?})",
                            kind(&other)
                        ));
                    }
                }
            }
            Ok(())
        }
        other => Err(format!(
            "json: cannot unmarshal {} into Go struct field Data.{field} of type map[string]string",
            kind(&other)
        )),
    }
}

/// See [`super::decode_custom_result`].
pub(super) fn decode_custom(raw: &[u8]) -> Result<Data, String> {
    let members = match parse::parse_top_level(raw)? {
        TopLevel::Object(members) => members,
        // Unmarshalling `null` into a struct leaves it untouched.
        TopLevel::Other(JsonValue::Null) => return Ok(Data::default()),
        TopLevel::Other(other) => {
            return Err(format!(
                "json: cannot unmarshal {} into Go value of type Data",
                kind(&other)
            ));
        }
    };
    let mut data = Data::default();
    // Members in document order (the encoder's sorted order): `Spec` replaces nothing and is
    // replaced by a later `spec`; `Labels` and `labels` merge.
    for (key, value) in members {
        if field_name_matches("spec", &key) {
            data.spec = match value {
                JsonValue::Null => None,
                v => Some(v),
            };
        } else if field_name_matches("labels", &key) {
            merge_string_map(&mut data.labels, value, "labels")?;
        } else if field_name_matches("annotations", &key) {
            merge_string_map(&mut data.annotations, value, "annotations")?;
        }
    }
    // `omitempty`: an empty map is as good as none.
    data.labels = data.labels.filter(|m| !m.is_empty());
    data.annotations = data.annotations.filter(|m| !m.is_empty());
    Ok(data)
}

/// See [`super::decode_ingress_result`].
pub(super) fn decode_ingress(raw: &[u8]) -> Result<Option<BTreeMap<String, String>>, String> {
    match parse::parse(raw)? {
        JsonValue::Null => Ok(None),
        JsonValue::Object(members) => {
            let mut map = BTreeMap::new();
            for (key, item) in members {
                match item {
                    JsonValue::String(s) => map.insert(key, s),
                    JsonValue::Null => map.insert(key, String::new()),
                    other => {
                        return Err(format!(
                            "json: cannot unmarshal {} into Go value of type string (key {key:?})",
                            kind(&other)
                        ));
                    }
                };
            }
            Ok(Some(map))
        }
        other => Err(format!(
            "json: cannot unmarshal {} into Go value of type map[string]string",
            kind(&other)
        )),
    }
}

/// Appends a `map[string]string` as Go marshals it (keys sorted, Go escaping).
pub(super) fn write_string_map(out: &mut String, map: &BTreeMap<String, String>) {
    out.push('{');
    for (i, (key, value)) in map.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        gotext::write_go_str(out, key);
        out.push(':');
        gotext::write_go_str(out, value);
    }
    out.push('}');
}

/// See [`Data::to_canonical_json`].
pub(super) fn data_to_canonical(data: &Data) -> String {
    let mut out = String::from("{");
    if let Some(spec) = &data.spec {
        out.push_str("\"spec\":");
        spec.write_canonical(&mut out);
    }
    for (name, map) in [("labels", &data.labels), ("annotations", &data.annotations)] {
        if let Some(map) = map.as_ref().filter(|m| !m.is_empty()) {
            if out.len() > 1 {
                out.push(',');
            }
            out.push('"');
            out.push_str(name);
            out.push_str("\":");
            write_string_map(&mut out, map);
        }
    }
    out.push('}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_field_folding() {
        for key in ["spec", "Spec", "SPEC", "sPeC", "\u{17f}pec", "\u{17f}PEC"] {
            assert!(field_name_matches("spec", key), "{key}");
        }
        for key in ["spe", "specs", "spec ", "ſpeç", "\u{212a}pec", "s\u{17f}ec"] {
            assert!(!field_name_matches("spec", key), "{key}");
        }
        assert!(field_name_matches("labels", "LABEL\u{17f}"));
        assert!(field_name_matches("annotations", "AnNotations"));
    }
}
