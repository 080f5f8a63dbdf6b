//! Reading gateway resources: the few accessors the routing models need on [`JsonValue`]
//! (missing or mistyped fields read as absent, as Go's decoding into typed structs leaves
//! zero values), and the regular expressions they compile.

use std::collections::BTreeMap;

use regex::Regex;

use crate::value::JsonValue;

/// `value.key`, when `value` is an object holding `key`.
pub fn field<'a>(value: &'a JsonValue, key: &str) -> Option<&'a JsonValue> {
    match value {
        JsonValue::Object(map) => map.get(key),
        _ => None,
    }
}

/// `value.k1.k2…`.
pub fn at<'a>(value: &'a JsonValue, keys: &[&str]) -> Option<&'a JsonValue> {
    keys.iter().try_fold(value, |v, k| field(v, k))
}

/// The string at `value.key`.
pub fn str_field<'a>(value: &'a JsonValue, key: &str) -> Option<&'a str> {
    match field(value, key) {
        Some(JsonValue::String(s)) => Some(s),
        _ => None,
    }
}

/// The items of the array at `value.key` (none when absent or not an array).
pub fn items<'a>(value: &'a JsonValue, key: &str) -> &'a [JsonValue] {
    match field(value, key) {
        Some(JsonValue::Array(items)) => items,
        _ => &[],
    }
}

/// The strings of the array at `value.key` (other items skipped).
pub fn strings<'a>(value: &'a JsonValue, key: &str) -> Vec<&'a str> {
    items(value, key)
        .iter()
        .filter_map(|v| match v {
            JsonValue::String(s) => Some(s.as_str()),
            _ => None,
        })
        .collect()
}

/// The integer at `value.key`: YAML integers and integral floats (what went through Lua).
pub fn int_field(value: &JsonValue, key: &str) -> Option<i64> {
    match field(value, key)? {
        JsonValue::Int(i) => Some(*i),
        JsonValue::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Some(*f as i64),
        _ => None,
    }
}

/// A port as a resource names it: a number or a name.
pub fn port_field(value: &JsonValue, key: &str) -> Option<String> {
    match field(value, key)? {
        JsonValue::String(s) => Some(s.clone()),
        JsonValue::Int(i) => Some(i.to_string()),
        JsonValue::Float(f) if f.fract() == 0.0 => Some(format!("{}", *f as i64)),
        _ => None,
    }
}

/// The string entries of the object at `value.key`, in key order.
pub fn string_map(value: &JsonValue, key: &str) -> BTreeMap<String, String> {
    match field(value, key) {
        Some(JsonValue::Object(map)) => map
            .iter()
            .filter_map(|(k, v)| match v {
                JsonValue::String(s) => Some((k.clone(), s.clone())),
                _ => None,
            })
            .collect(),
        _ => BTreeMap::new(),
    }
}

/// The size limit of one compiled pattern: resources are user input, and a pattern that
/// compiles to more than this is refused like an invalid one (bounded memory).
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// Compiles an RE2-style pattern (Go `regexp`, Envoy's RE2, Kuma's RE2 — what the gateways
/// in the library use; the `regex` crate follows the same syntax and semantics for the
/// features they share).
pub fn compile(pattern: &str) -> Result<Regex, String> {
    regex::RegexBuilder::new(pattern)
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|e| e.to_string())
}

/// `pattern` anchored at both ends (Envoy's `safe_regex` and Kuma's `RegularExpression`
/// match the whole value).
pub fn compile_full(pattern: &str) -> Result<Regex, String> {
    compile(&format!("^(?:{pattern})$"))
}

/// Whether `pattern` (unanchored) finds a match in `text`; an invalid pattern matches nothing.
pub fn finds(pattern: &str, text: &str) -> bool {
    compile(pattern).is_ok_and(|re| re.is_match(text))
}

/// Whether `pattern` matches the whole of `text`; an invalid pattern matches nothing.
pub fn matches_whole(pattern: &str, text: &str) -> bool {
    compile_full(pattern).is_ok_and(|re| re.is_match(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_read_as_absent_when_mistyped() {
        let mut map = BTreeMap::new();
        map.insert("w".to_owned(), JsonValue::Float(3.0));
        map.insert("s".to_owned(), JsonValue::Int(1));
        let v = JsonValue::Object(map);
        assert_eq!(int_field(&v, "w"), Some(3));
        assert_eq!(str_field(&v, "s"), None);
        assert!(items(&v, "w").is_empty());
        assert_eq!(port_field(&v, "s").as_deref(), Some("1"));
    }

    #[test]
    fn whole_match_is_anchored() {
        assert!(finds("b", "abc"));
        assert!(!matches_whole("b", "abc"));
        assert!(matches_whole("a|abc", "abc"));
        assert!(!finds("(", "("));
    }
}
