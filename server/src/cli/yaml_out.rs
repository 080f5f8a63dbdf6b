//! A small block-style YAML emitter for JSON values, for `kruise-lua run`. Strings are left
//! plain only when a YAML 1.1 reader (sigs.k8s.io/yaml) would read them back as the same
//! string; everything else is double-quoted.

use kruise_lua_engine::value::JsonValue;

/// A YAML document for a map whose top-level keys come in the given order.
pub fn document(entries: &[(&str, &JsonValue)]) -> String {
    let mut out = String::new();
    for (key, value) in entries {
        out.push_str(&string(key));
        out.push(':');
        write_entry_value(&mut out, value, 0);
    }
    out
}

/// Writes what follows `key:` — a scalar on the same line or a block below it.
fn write_entry_value(out: &mut String, value: &JsonValue, indent: usize) {
    match value {
        JsonValue::Object(map) if !map.is_empty() => {
            out.push('\n');
            for (key, value) in map {
                push_indent(out, indent + 2);
                out.push_str(&string(key));
                out.push(':');
                write_entry_value(out, value, indent + 2);
            }
        }
        JsonValue::Array(items) if !items.is_empty() => {
            out.push('\n');
            write_items(out, items, indent + 2);
        }
        scalar => {
            out.push(' ');
            out.push_str(&scalar_text(scalar));
            out.push('\n');
        }
    }
}

fn write_items(out: &mut String, items: &[JsonValue], indent: usize) {
    for item in items {
        push_indent(out, indent);
        out.push('-');
        match item {
            JsonValue::Object(map) if !map.is_empty() => {
                // The first entry goes on the dash's line, the others align with it.
                let mut block = String::new();
                write_entry_value(&mut block, item, indent);
                out.push(' ');
                out.push_str(block.trim_start_matches('\n').trim_start_matches(' '));
            }
            JsonValue::Array(inner) if !inner.is_empty() => {
                let mut block = String::new();
                write_items(&mut block, inner, indent + 2);
                out.push(' ');
                out.push_str(block.trim_start_matches(' '));
            }
            scalar => {
                out.push(' ');
                out.push_str(&scalar_text(scalar));
                out.push('\n');
            }
        }
    }
}

fn push_indent(out: &mut String, indent: usize) {
    out.extend(std::iter::repeat_n(' ', indent));
}

fn scalar_text(value: &JsonValue) -> String {
    match value {
        JsonValue::Null => "null".to_string(),
        JsonValue::Bool(b) => b.to_string(),
        JsonValue::Int(i) => i.to_string(),
        JsonValue::Float(f) => number(*f),
        JsonValue::String(s) => string(s),
        JsonValue::Object(_) => "{}".to_string(),
        JsonValue::Array(_) => "[]".to_string(),
    }
}

/// A double as YAML: integral values as integers (as Go prints them in JSON), others in the
/// shortest round-trip form.
pub fn number(f: f64) -> String {
    if f.is_nan() {
        return ".nan".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            ".inf".to_string()
        } else {
            "-.inf".to_string()
        };
    }
    if f == f.trunc() && f.abs() < 1e21 {
        return format!("{f:.0}");
    }
    format!("{f:?}")
}

/// A string scalar: plain when unambiguous, else double-quoted.
pub fn string(s: &str) -> String {
    if is_plain_safe(s) {
        s.to_string()
    } else {
        quoted(s)
    }
}

/// Words YAML 1.1 reads as booleans or null, in any case.
const SPECIAL_WORDS: [&str; 12] = [
    "null", "~", "true", "false", "yes", "no", "on", "off", "y", "n", "=", "<<",
];

fn is_plain_safe(s: &str) -> bool {
    let Some(first) = s.chars().next() else {
        return false;
    };
    if SPECIAL_WORDS
        .iter()
        .any(|word| s.eq_ignore_ascii_case(word))
    {
        return false;
    }
    // Anything that may read as a number, date, or starts with an indicator gets quotes.
    if !(first.is_ascii_alphabetic() || first == '/' || first == '_' || !first.is_ascii()) {
        return false;
    }
    if s.ends_with(' ') || s.ends_with(':') || s.contains(": ") || s.contains(" #") {
        return false;
    }
    s.chars().all(|c| {
        if c.is_ascii() {
            c.is_ascii_alphanumeric() || " _-./+=~()$^;@,%:".contains(c)
        } else {
            !c.is_control() && !c.is_whitespace() && c != '\u{feff}'
        }
    })
}

fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            '\u{85}' | '\u{2028}' | '\u{2029}' | '\u{feff}' => {
                out.push_str(&format!("\\u{:04x}", c as u32))
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
    use std::collections::BTreeMap;

    fn object(entries: &[(&str, JsonValue)]) -> JsonValue {
        JsonValue::Object(
            entries
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect::<BTreeMap<_, _>>(),
        )
    }

    #[test]
    fn ambiguous_strings_are_quoted() {
        for s in [
            "yes",
            "No",
            "ON",
            "null",
            "~",
            "",
            "10",
            "1e3",
            "0x1F",
            "2024-01-02",
            "-x",
            " a",
            "a: b",
            "a #b",
            "x:",
            "*a",
            "=",
            ".inf",
            "a\nb",
        ] {
            assert!(
                string(s).starts_with('"'),
                "{s:?} must be quoted, got {}",
                string(s)
            );
        }
        for s in [
            "demo",
            "demo-canary",
            "example.io/v1",
            "/api",
            "a:b",
            "héllo",
            "Exact",
        ] {
            assert_eq!(string(s), s);
        }
        assert_eq!(string("a\"\\\u{1}"), r#""a\"\\\x01""#);
    }

    #[test]
    fn numbers_print_as_go_json_does_for_integral_values() {
        assert_eq!(number(50.0), "50");
        assert_eq!(number(0.25), "0.25");
        assert_eq!(number(1e20), "100000000000000000000");
        assert_eq!(number(1e21), "1e21");
    }

    #[test]
    fn nested_blocks() {
        let spec = object(&[
            (
                "hosts",
                JsonValue::Array(vec![JsonValue::String("a".into())]),
            ),
            (
                "http",
                JsonValue::Array(vec![object(&[
                    ("name", JsonValue::String("r".into())),
                    (
                        "route",
                        JsonValue::Array(vec![object(&[("weight", JsonValue::Float(80.0))])]),
                    ),
                ])]),
            ),
            ("empty", JsonValue::Object(BTreeMap::new())),
            (
                "list",
                JsonValue::Array(vec![JsonValue::Array(vec![
                    JsonValue::Int(1),
                    JsonValue::Int(2),
                ])]),
            ),
        ]);
        let yaml = document(&[
            ("kind", &JsonValue::String("VirtualService".into())),
            ("spec", &spec),
        ]);
        assert_eq!(
            yaml,
            "kind: VirtualService\nspec:\n  empty: {}\n  hosts:\n    - a\n  http:\n    - name: r\n      route:\n        - weight: 80\n  list:\n    - - 1\n      - 2\n"
        );
    }
}
