//! From the encoder's JSON to Kruise's result types, as Go's `json.Unmarshal` fills them
//! (conformance 2.5, 2.6, 2.8), and the canonical text of a result.

use std::collections::BTreeMap;

use crate::go;
use crate::go::json_parse::TopLevel;
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

/// Go's case-insensitive match of a JSON key to a struct field whose name is ASCII (every
/// field Kruise's types have): ASCII letters match either case, and `s`/`k` also match
/// U+017F (ſ) and U+212A (Kelvin sign); no other non-ASCII character matches.
pub(crate) fn field_name_matches(field: &str, key: &str) -> bool {
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
        let special = match f.to_ascii_lowercase() {
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

/// Decodes a value into a `map[string]string` the way Go does: `null` sets the map to nil,
/// an object is merged into the existing map (later keys win; a `null` value stores ""),
/// anything else is an unmarshal error. `go_target` names the destination in the error
/// (`Go struct field Data.labels`, `Go value`).
fn merge_string_map(
    target: &mut Option<BTreeMap<String, String>>,
    value: JsonValue,
    go_target: &str,
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
                            "json: cannot unmarshal {} into {go_target} of type string (key {key:?})",
                            kind(&other)
                        ));
                    }
                }
            }
            Ok(())
        }
        other => Err(format!(
            "json: cannot unmarshal {} into {go_target} of type map[string]string",
            kind(&other)
        )),
    }
}

/// See [`super::decode_custom_result`].
pub(super) fn decode_custom(raw: &[u8]) -> Result<Data, String> {
    let members = match go::json_parse::parse_top_level(raw)? {
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
            merge_string_map(&mut data.labels, value, "Go struct field Data.labels")?;
        } else if field_name_matches("annotations", &key) {
            merge_string_map(
                &mut data.annotations,
                value,
                "Go struct field Data.annotations",
            )?;
        }
    }
    // `omitempty`: an empty map is as good as none.
    data.labels = data.labels.filter(|m| !m.is_empty());
    data.annotations = data.annotations.filter(|m| !m.is_empty());
    Ok(data)
}

/// See [`super::decode_ingress_result`].
pub(super) fn decode_ingress(raw: &[u8]) -> Result<Option<BTreeMap<String, String>>, String> {
    let mut annotations = None;
    merge_string_map(&mut annotations, go::json_parse::parse(raw)?, "Go value")?;
    Ok(annotations)
}

/// Appends a `map[string]string` as Go marshals it (keys sorted, Go escaping).
pub(super) fn write_string_map(out: &mut String, map: &BTreeMap<String, String>) {
    out.push('{');
    for (i, (key, value)) in map.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        go::json_text::write_go_str(out, key);
        out.push(':');
        go::json_text::write_go_str(out, value);
    }
    out.push('}');
}

/// See [`Data::to_canonical_json`].
pub(super) fn data_to_canonical(data: &Data) -> String {
    parts_to_canonical(
        data.spec.as_ref(),
        data.labels.as_ref(),
        data.annotations.as_ref(),
    )
}

/// [`data_to_canonical`] of the [`Data`] with these members, without building it.
pub(crate) fn parts_to_canonical(
    spec: Option<&JsonValue>,
    labels: Option<&BTreeMap<String, String>>,
    annotations: Option<&BTreeMap<String, String>>,
) -> String {
    let mut out = String::from("{");
    if let Some(spec) = spec {
        start_member(&mut out, "spec");
        spec.write_canonical(&mut out);
    }
    for (name, map) in [("labels", labels), ("annotations", annotations)] {
        if let Some(map) = map.filter(|m| !m.is_empty()) {
            start_member(&mut out, name);
            write_string_map(&mut out, map);
        }
    }
    out.push('}');
    out
}

/// Appends `"name":` to an object's text begun with `{`, after a comma unless it is the first.
fn start_member(out: &mut String, name: &str) {
    if out.len() > 1 {
        out.push(',');
    }
    out.push('"');
    out.push_str(name);
    out.push_str("\":");
}

/// Whether `raw` contains the text `\ufffd` (every occurrence starts at a backslash, and
/// every backslash is looked at).
fn contains_replacement_escape(raw: &[u8]) -> bool {
    let mut rest = raw;
    while let Some(i) = rest.iter().position(|&b| b == b'\\') {
        rest = &rest[i + 1..];
        if rest.starts_with(b"ufffd") {
            return true;
        }
    }
    false
}

/// The canonical JSON of `decode_custom(raw)` for `raw` made by this crate's encoder, found
/// without decoding, in the usual case: a top-level object whose only keys are `annotations`,
/// `labels` and `spec` (lower case), labels and annotations `null` or flat string maps, and
/// no `\ufffd` escape anywhere (the encoder's mark of invalid UTF-8, which decoding turns
/// into U+FFFD and which could then reorder or merge keys). The encoder already writes Go's
/// canonical text (sorted keys, Go numbers and escaping), so the result is the members'
/// text in `spec`, `labels`, `annotations` order. `None` when the shortcut does not apply;
/// the result then needs decoding (which may also fail).
pub(super) fn canonical_from_encoded(raw: &[u8]) -> Option<String> {
    if contains_replacement_escape(raw) {
        return None;
    }
    if raw == b"null" {
        return Some("{}".to_owned());
    }
    let mut scan = Scan { raw, at: 0 };
    scan.expect(b'{')?;
    let mut parts: [Option<&[u8]>; 3] = [None; 3];
    if !scan.eat(b'}') {
        loop {
            let key = scan.simple_string()?;
            scan.expect(b':')?;
            let start = scan.at;
            let slot = match key {
                b"spec" => {
                    scan.skip_value(0)?;
                    0
                }
                b"labels" => {
                    scan.string_map()?;
                    1
                }
                b"annotations" => {
                    scan.string_map()?;
                    2
                }
                _ => return None,
            };
            let value = &raw[start..scan.at];
            if value != b"null" {
                parts[slot] = Some(value);
            }
            if scan.eat(b'}') {
                break;
            }
            scan.expect(b',')?;
        }
    }
    if scan.at != raw.len() {
        return None;
    }
    let mut out = String::with_capacity(raw.len() + 2);
    out.push('{');
    for (name, part) in ["spec", "labels", "annotations"].iter().zip(parts) {
        if let Some(text) = part {
            start_member(&mut out, name);
            // The encoder writes valid UTF-8 (invalid input bytes become \ufffd escapes).
            out.push_str(std::str::from_utf8(text).ok()?);
        }
    }
    out.push('}');
    Some(out)
}

/// A cursor over encoder output (no whitespace, valid JSON).
struct Scan<'a> {
    raw: &'a [u8],
    at: usize,
}

impl<'a> Scan<'a> {
    fn eat(&mut self, byte: u8) -> bool {
        let found = self.raw.get(self.at) == Some(&byte);
        if found {
            self.at += 1;
        }
        found
    }

    fn expect(&mut self, byte: u8) -> Option<()> {
        self.eat(byte).then_some(())
    }

    /// A string without escapes, as its bytes.
    fn simple_string(&mut self) -> Option<&'a [u8]> {
        self.expect(b'"')?;
        let start = self.at;
        let len = self.raw[start..]
            .iter()
            .position(|&b| b == b'"' || b == b'\\')?;
        self.at = start + len;
        self.expect(b'"')?;
        let raw: &'a [u8] = self.raw;
        Some(&raw[start..start + len])
    }

    /// Skips a string (escapes included).
    fn skip_string(&mut self) -> Option<()> {
        self.expect(b'"')?;
        loop {
            match *self.raw.get(self.at)? {
                b'"' => {
                    self.at += 1;
                    return Some(());
                }
                b'\\' => self.at += 2,
                _ => self.at += 1,
            }
        }
    }

    /// Skips any value; deep nesting is left to the decoder (and its depth limit).
    fn skip_value(&mut self, depth: usize) -> Option<()> {
        match *self.raw.get(self.at)? {
            b'"' => self.skip_string(),
            open @ (b'{' | b'[') if depth < 256 => {
                let close = if open == b'{' { b'}' } else { b']' };
                self.at += 1;
                if self.eat(close) {
                    return Some(());
                }
                loop {
                    if open == b'{' {
                        self.skip_string()?;
                        self.expect(b':')?;
                    }
                    self.skip_value(depth + 1)?;
                    if self.eat(close) {
                        return Some(());
                    }
                    self.expect(b',')?;
                }
            }
            b'{' | b'[' => None,
            _ => {
                let len = self.raw[self.at..]
                    .iter()
                    .position(|&b| matches!(b, b',' | b'}' | b']'))
                    .unwrap_or(self.raw.len() - self.at);
                self.at += len;
                Some(())
            }
        }
    }

    /// `null`, or an object whose values are all strings.
    fn string_map(&mut self) -> Option<()> {
        if self.raw[self.at..].starts_with(b"null") {
            self.at += 4;
            return Some(());
        }
        self.expect(b'{')?;
        if self.eat(b'}') {
            return Some(());
        }
        loop {
            self.skip_string()?;
            self.expect(b':')?;
            self.skip_string()?;
            if self.eat(b'}') {
                return Some(());
            }
            self.expect(b',')?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_shortcut_agrees_with_decoding_or_declines() {
        let agree = [
            "null",
            "{}",
            r#"{"spec":{"a":[1,"x\u003c",null,true],"b":1e+21}}"#,
            r#"{"annotations":{"a":"1"},"labels":{"b":"2","c":"\n"},"spec":[]}"#,
            r#"{"labels":null,"spec":null}"#,
            r#"{"spec":"\\ufffe"}"#,
        ];
        for raw in agree {
            let decoded = decode_custom(raw.as_bytes()).map(|d| data_to_canonical(&d));
            assert_eq!(
                canonical_from_encoded(raw.as_bytes()),
                decoded.ok(),
                "{raw}"
            );
        }
        let decline = [
            r#"{"Spec":1}"#,
            r#"{"metadata":{},"spec":1}"#,
            r#"{"labels":[]}"#,
            r#"{"labels":{"a":1}}"#,
            r#"{"spec":"\ufffd"}"#,
            r#"{"spec":"\\ufffd"}"#,
            "[]",
            "1",
        ];
        for raw in decline {
            assert_eq!(canonical_from_encoded(raw.as_bytes()), None, "{raw}");
        }
    }

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
