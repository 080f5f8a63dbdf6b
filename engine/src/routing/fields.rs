//! Reading gateway resources: the typed reads the routing models share on top of
//! [`JsonValue::get`]/[`JsonValue::at`] (missing or mistyped fields read as absent, as Go's
//! decoding into typed structs leaves zero values), and compiling unanchored patterns.

use regex::Regex;

use crate::value::JsonValue;
use smol_str::SmolStr;

/// The string at `value.key`.
pub fn str_field<'a>(value: &'a JsonValue, key: &str) -> Option<&'a str> {
    value.get(key).and_then(JsonValue::as_str)
}

/// The items of the array at `value.key` (none when absent or not an array).
pub fn items<'a>(value: &'a JsonValue, key: &str) -> &'a [JsonValue] {
    value.get(key).and_then(JsonValue::as_array).unwrap_or(&[])
}

/// The integer at `value.key`: YAML integers and integral floats (what went through Lua).
pub fn int_field(value: &JsonValue, key: &str) -> Option<i64> {
    match value.get(key)? {
        JsonValue::Int(i) => Some(*i),
        JsonValue::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Some(*f as i64),
        _ => None,
    }
}

/// A port as a resource names it: a number or a name.
pub fn port_field(value: &JsonValue, key: &str) -> Option<SmolStr> {
    match value.get(key)? {
        JsonValue::String(s) => Some(s.as_str().into()),
        JsonValue::Int(i) => Some(smol_str::format_smolstr!("{i}")),
        JsonValue::Float(f) if f.fract() == 0.0 => Some(smol_str::format_smolstr!("{}", *f as i64)),
        _ => None,
    }
}

/// Whether `value` is set to something: present, not null, and not an empty string, list or
/// map (Go's decoding leaves those as the zero value, which restricts nothing).
pub fn is_set(value: Option<&JsonValue>) -> bool {
    match value {
        None | Some(JsonValue::Null) => false,
        Some(JsonValue::String(s)) => !s.is_empty(),
        Some(JsonValue::Array(a)) => !a.is_empty(),
        Some(JsonValue::Object(o)) => !o.is_empty(),
        Some(_) => true,
    }
}

/// The size limit of one compiled pattern: resources are user input, and a pattern that
/// compiles to more than this is refused like an invalid one (bounded memory).
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// Compiles an unanchored RE2-style pattern (Go `regexp`, as Traefik matches; the `regex`
/// crate follows the same syntax and semantics for the features they share).
pub fn compile(pattern: &str) -> Result<std::rc::Rc<Regex>, String> {
    super::matching::compiled(pattern, REGEX_SIZE_LIMIT).map_err(|e| {
        e.to_string()
            .lines()
            .last()
            .unwrap_or("invalid")
            .trim()
            .to_owned()
    })
}

/// Whether `pattern` (unanchored, as Go's `MatchString` and Lua-side APISIX `~~`) finds a
/// match in `text`; an invalid pattern matches nothing.
pub fn finds(pattern: &str, text: &str) -> bool {
    compile(pattern).is_ok_and(|re| re.is_match(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_read_as_absent_when_mistyped() {
        let mut map = crate::value::JsonMap::new();
        map.insert("w".to_owned(), JsonValue::Float(3.0));
        map.insert("s".to_owned(), JsonValue::Int(1));
        let v = JsonValue::Object(map);
        assert_eq!(int_field(&v, "w"), Some(3));
        assert_eq!(str_field(&v, "s"), None);
        assert!(items(&v, "w").is_empty());
        assert_eq!(port_field(&v, "s").as_deref(), Some("1"));
    }

    #[test]
    fn patterns_are_unanchored_and_bounded() {
        assert!(finds("b", "abc"));
        assert!(!finds("(", "("));
        assert!(compile("a{1000}{1000}").is_err());
    }
}
