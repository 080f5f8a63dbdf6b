//! Renders JSON values as block-style YAML, for unified diffs and `kruise-lua run` output.
//!
//! Keys come out sorted (as in Kruise's canonical JSON), so two renderings of values that
//! differ in one field differ in one line. Strings that a YAML 1.1 reader would take for
//! something else (`yes`, `50`, `""`, `a: b`, …) are double-quoted.

use crate::value::JsonValue;

/// The value as a YAML document (without `---`), ending in a newline.
pub fn to_yaml(value: &JsonValue) -> String {
    let mut out = String::new();
    match value {
        JsonValue::Object(map) if !map.is_empty() => write_map_body(map, 0, &mut out),
        JsonValue::Array(items) if !items.is_empty() => write_seq_body(items, 0, &mut out),
        scalar => {
            out.push_str(&scalar_text(scalar));
            out.push('\n');
        }
    }
    out
}

fn write_map_body(map: &crate::value::JsonMap, indent: usize, out: &mut String) {
    for (key, value) in map {
        push_indent(indent, out);
        out.push_str(&string_text(key));
        out.push(':');
        write_nested(value, indent, out);
    }
}

fn write_seq_body(items: &[JsonValue], indent: usize, out: &mut String) {
    for item in items {
        push_indent(indent, out);
        out.push('-');
        match item {
            // A map inside a list starts on the dash's line: `- key: value`.
            JsonValue::Object(map) if !map.is_empty() => {
                let mut first = true;
                for (key, value) in map {
                    if first {
                        out.push(' ');
                        first = false;
                    } else {
                        push_indent(indent + 2, out);
                    }
                    out.push_str(&string_text(key));
                    out.push(':');
                    write_nested(value, indent + 2, out);
                }
            }
            JsonValue::Array(inner) if !inner.is_empty() => {
                out.push('\n');
                write_seq_body(inner, indent + 2, out);
            }
            scalar => {
                out.push(' ');
                out.push_str(&scalar_text(scalar));
                out.push('\n');
            }
        }
    }
}

/// Writes what follows `key:` — a scalar on the same line, or a nested block.
fn write_nested(value: &JsonValue, indent: usize, out: &mut String) {
    match value {
        JsonValue::Object(map) if !map.is_empty() => {
            out.push('\n');
            write_map_body(map, indent + 2, out);
        }
        JsonValue::Array(items) if !items.is_empty() => {
            out.push('\n');
            write_seq_body(items, indent, out);
        }
        scalar => {
            out.push(' ');
            out.push_str(&scalar_text(scalar));
            out.push('\n');
        }
    }
}

fn push_indent(indent: usize, out: &mut String) {
    out.extend(std::iter::repeat_n(' ', indent));
}

fn scalar_text(value: &JsonValue) -> String {
    match value {
        JsonValue::String(s) => string_text(s),
        JsonValue::Object(_) => "{}".to_owned(),
        JsonValue::Array(_) => "[]".to_owned(),
        other => other.to_canonical_json(),
    }
}

/// A string as a YAML scalar: plain when unambiguous, else a JSON-style double-quoted string.
fn string_text(s: &str) -> String {
    if is_safe_plain(s) {
        s.to_owned()
    } else {
        // JSON string syntax is valid YAML double-quoted syntax.
        serde_json::to_string(s).expect("strings always serialize")
    }
}

fn is_safe_plain(s: &str) -> bool {
    let Some(first) = s.chars().next() else {
        return false;
    };
    if !(first.is_ascii_alphabetic() || first == '/' || first == '_') {
        return false;
    }
    if !s
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'))
    {
        return false;
    }
    // YAML 1.1 words that would read as booleans or null.
    const RESERVED: &[&str] = &[
        "y", "yes", "n", "no", "true", "false", "on", "off", "null", "nan", "inf",
    ];
    !RESERVED.contains(&s.to_ascii_lowercase().as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> JsonValue {
        JsonValue::parse_go_interface(text.as_bytes()).unwrap()
    }

    #[test]
    fn nested_maps_and_lists() {
        let value = parse(
            r#"{"spec":{"hosts":["*"],"http":[{"route":[{"destination":{"host":"svc"},"weight":50}]},{"match":[]}]},
               "labels":{"app":"demo","on":"yes"}}"#,
        );
        let expected = "\
labels:
  app: demo
  \"on\": \"yes\"
spec:
  hosts:
  - \"*\"
  http:
  - route:
    - destination:
        host: svc
      weight: 50
  - match: []
";
        assert_eq!(to_yaml(&value), expected);
    }

    #[test]
    fn ambiguous_strings_are_quoted() {
        for s in ["", "50", "true", "No", "a: b", "-x", "1e3", " lead"] {
            assert!(!is_safe_plain(s), "{s:?} must be quoted");
        }
        for s in ["demo", "svc-demo-canary", "/api/v1", "x.y_z"] {
            assert!(is_safe_plain(s), "{s:?} may stay plain");
        }
    }

    #[test]
    fn scalars_and_empties() {
        assert_eq!(to_yaml(&JsonValue::Object(Default::default())), "{}\n");
        assert_eq!(to_yaml(&parse(r#"[[1,2],{}]"#)), "-\n  - 1\n  - 2\n- {}\n");
    }
}
