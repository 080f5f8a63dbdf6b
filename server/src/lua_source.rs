//! Writes JSON values as Lua 5.1 table constructors that load back to what a script sees
//! (conformance 2.2): `null` members left out, `null` array items dropped, keys sorted,
//! strings escaped for Lua, integral numbers without `.0`.

use kruise_lua_engine::value::JsonValue;

/// Lua 5.1 keywords: not names (a key spelled like one needs `["end"]`; completion, hover and
/// rename know them too).
pub const KEYWORDS: [&str; 21] = [
    "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "if", "in", "local",
    "nil", "not", "or", "repeat", "return", "then", "true", "until", "while",
];

/// Lua source of `value`, nested tables indented by two spaces from `indent`.
pub fn to_lua(value: &JsonValue, indent: usize) -> String {
    let mut out = String::new();
    write_value(&mut out, value, indent);
    out
}

fn write_value(out: &mut String, value: &JsonValue, indent: usize) {
    match value {
        JsonValue::Null => out.push_str("nil"),
        JsonValue::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        JsonValue::Int(i) => out.push_str(&i.to_string()),
        JsonValue::Float(f) => out.push_str(&number(*f)),
        JsonValue::String(s) => out.push_str(&string(s)),
        JsonValue::Array(items) => {
            let items: Vec<&JsonValue> = items
                .iter()
                .filter(|item| !matches!(item, JsonValue::Null))
                .collect();
            if items.is_empty() {
                out.push_str("{}");
                return;
            }
            out.push_str("{\n");
            for item in items {
                push_indent(out, indent + 2);
                write_value(out, item, indent + 2);
                out.push_str(",\n");
            }
            push_indent(out, indent);
            out.push('}');
        }
        JsonValue::Object(map) => {
            let members: Vec<(&String, &JsonValue)> = map
                .iter()
                .filter(|(_, value)| !matches!(value, JsonValue::Null))
                .collect();
            if members.is_empty() {
                out.push_str("{}");
                return;
            }
            out.push_str("{\n");
            for (key, value) in members {
                push_indent(out, indent + 2);
                if is_identifier(key) {
                    out.push_str(key);
                } else {
                    out.push('[');
                    out.push_str(&string(key));
                    out.push(']');
                }
                out.push_str(" = ");
                write_value(out, value, indent + 2);
                out.push_str(",\n");
            }
            push_indent(out, indent);
            out.push('}');
        }
    }
}

fn push_indent(out: &mut String, indent: usize) {
    out.extend(std::iter::repeat_n(' ', indent));
}

/// A double as a Lua numeral: integral values without `.0`, others in the shortest form
/// that reads back to the same double.
pub fn number(f: f64) -> String {
    if f.is_nan() {
        return "(0/0)".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "math.huge * 2".to_string()
        } else {
            "-(math.huge * 2)".to_string()
        };
    }
    // Every integral double below 2^63 converts to i64 exactly, and its decimal reads back
    // to the same double.
    if f == f.trunc() && f.abs() < 9.2e18 {
        if f == 0.0 && f.is_sign_negative() {
            return "-0".to_string();
        }
        return format!("{}", f as i64);
    }
    format!("{f:?}")
}

/// Whether `key` is a Lua name (`t.key` works; otherwise `t["key"]`).
pub fn is_identifier(key: &str) -> bool {
    let mut chars = key.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !KEYWORDS.contains(&key)
}

/// A Lua double-quoted string literal. Control bytes use three-digit `\ddd` escapes so a
/// following digit cannot join them; other bytes (UTF-8 included) are written as they are.
pub fn string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\{:03}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_lua_numerals() {
        assert_eq!(number(50.0), "50");
        assert_eq!(number(-1.0), "-1");
        assert_eq!(number(0.5), "0.5");
        assert_eq!(number(1e21), "1e21");
        assert_eq!(number(1e-7), "1e-7");
        assert_eq!(number(-0.0), "-0");
        assert_eq!(number(9007199254740993.0), "9007199254740992");
        assert_eq!(number(1e300), "1e300");
    }

    #[test]
    fn strings_escape_quotes_and_controls() {
        assert_eq!(string("a\"b\\c\nd"), r#""a\"b\\c\nd""#);
        assert_eq!(string("\u{1}9"), r#""\0019""#);
        assert_eq!(string("é"), "\"é\"");
    }

    #[test]
    fn tables_drop_nulls_and_quote_odd_keys() {
        let mut map = kruise_lua_engine::value::JsonMap::new();
        map.insert(
            "b".to_string(),
            JsonValue::Array(vec![JsonValue::Int(1), JsonValue::Null, JsonValue::Int(3)]),
        );
        map.insert("a-b".to_string(), JsonValue::Bool(true));
        map.insert("end".to_string(), JsonValue::String("x".into()));
        map.insert("gone".to_string(), JsonValue::Null);
        map.insert(
            "empty".to_string(),
            JsonValue::Object(kruise_lua_engine::value::JsonMap::new()),
        );
        let lua = to_lua(&JsonValue::Object(map), 0);
        assert_eq!(
            lua,
            "{\n  [\"a-b\"] = true,\n  b = {\n    1,\n    3,\n  },\n  empty = {},\n  [\"end\"] = \"x\",\n}"
        );
    }
}
