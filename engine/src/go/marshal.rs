//! Go `encoding/json`'s text of a [`JsonValue`] (what `json.Marshal` of the decoded
//! `interface{}` gives): the one text results are compared, printed and diffed in. It sits with
//! the other Go ports, above the value type, so `value` knows nothing of Go's formatting.

use crate::value::{JsonValue, map_iter as map};

impl JsonValue {
    /// Go `encoding/json` text of this value: sorted keys, Go float formatting
    /// (`1e+21`, `1e-7`, `100000000000000000000`), Go string escaping with HTML escapes.
    pub fn to_canonical_json(&self) -> String {
        let mut out = String::new();
        self.write_canonical(&mut out);
        out
    }

    /// Appends the canonical text to `out` (see [`JsonValue::to_canonical_json`]).
    ///
    /// `Float` must be finite: Go's encoder refuses NaN and ±Inf, and no `JsonValue` this
    /// crate produces holds one (Lua values are checked by the encoder, parsed text cannot
    /// express them, YAML floats are checked by the case reader). A non-finite float is
    /// written as `null` rather than as invalid JSON.
    pub fn write_canonical(&self, out: &mut String) {
        // Iterative, so a deeply nested value cannot overflow the stack.
        enum Frame<'a> {
            Array(std::slice::Iter<'a, JsonValue>, bool),
            Object(map::Iter<'a>, bool),
        }
        let mut stack: Vec<Frame<'_>> = Vec::new();
        let mut next = Some(self);
        loop {
            if let Some(value) = next.take() {
                match value {
                    JsonValue::Null => out.push_str("null"),
                    JsonValue::Bool(true) => out.push_str("true"),
                    JsonValue::Bool(false) => out.push_str("false"),
                    JsonValue::Int(i) => super::json_text::write_go_int(out, *i),
                    JsonValue::Float(f) if f.is_finite() => {
                        super::json_text::write_go_float(out, *f)
                    }
                    JsonValue::Float(_) => out.push_str("null"),
                    JsonValue::String(s) => super::json_text::write_go_str(out, s),
                    JsonValue::Array(items) => {
                        out.push('[');
                        stack.push(Frame::Array(items.iter(), true));
                    }
                    JsonValue::Object(members) => {
                        out.push('{');
                        stack.push(Frame::Object(members.iter(), true));
                    }
                }
            }
            // Find the next element of the innermost open container, closing finished ones.
            let Some(frame) = stack.last_mut() else {
                return;
            };
            match frame {
                Frame::Array(items, first) => match items.next() {
                    Some(item) => {
                        if !std::mem::take(first) {
                            out.push(',');
                        }
                        next = Some(item);
                    }
                    None => {
                        out.push(']');
                        stack.pop();
                    }
                },
                Frame::Object(members, first) => match members.next() {
                    Some((key, item)) => {
                        if !std::mem::take(first) {
                            out.push(',');
                        }
                        super::json_text::write_go_str(out, key);
                        out.push(':');
                        next = Some(item);
                    }
                    None => {
                        out.push('}');
                        stack.pop();
                    }
                },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(members: &[(&str, JsonValue)]) -> JsonValue {
        JsonValue::Object(
            members
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        )
    }

    #[test]
    fn canonical_text_is_go_marshal() {
        let value = object(&[
            (
                "b",
                JsonValue::Array(vec![
                    JsonValue::Int(9007199254740993),
                    JsonValue::Float(1e21),
                    JsonValue::Null,
                ]),
            ),
            ("a", JsonValue::String("<é>\u{2028}\n".into())),
            ("é", JsonValue::Bool(false)),
            ("B", object(&[])),
            ("_", JsonValue::Array(vec![])),
            ("10", JsonValue::Float(-0.0)),
            ("9", JsonValue::Float(0.000001)),
        ]);
        assert_eq!(
            value.to_canonical_json(),
            r#"{"10":-0,"9":0.000001,"B":{},"_":[],"a":"\u003cé\u003e\u2028\n","b":[9007199254740993,1e+21,null],"é":false}"#
        );
        assert_eq!(JsonValue::Float(f64::NAN).to_canonical_json(), "null");
    }

    #[test]
    fn deep_values_write_without_recursion() {
        let mut value = JsonValue::Null;
        for _ in 0..100_000 {
            value = JsonValue::Array(vec![value]);
        }
        let text = value.to_canonical_json();
        assert_eq!(text.len(), 200_004);
        // Dropping is recursive in Rust; unwind the nesting by hand.
        while let JsonValue::Array(mut items) = value {
            value = items.pop().unwrap_or(JsonValue::Null);
        }
    }
}
