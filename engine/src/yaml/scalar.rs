//! Scalar resolution as go-yaml v2's `resolve` does it (gopkg.in/yaml.v2 resolve.go): YAML 1.1
//! booleans, nulls, integers (`0x`, `0o`, `0b`, leading-`0` octal, `_`), floats, timestamps
//! (kept as strings), and explicit tags checked against what the text resolves to.

use std::borrow::Cow;

use saphyr_parser::ScalarStyle;

use super::YamlValue;

const TAG_PREFIX: &str = "tag:yaml.org,2002:";

/// What a scalar resolved to, with the short name of its YAML type (for tag checks).
#[derive(Debug, Clone, PartialEq)]
enum Resolved {
    Null,
    Bool(bool),
    Int(i64),
    /// An integer beyond int64 but within uint64 (go-yaml gives a uint64).
    Uint(u64),
    Float(f64),
    Str,
    Timestamp,
}

impl Resolved {
    fn short_tag(&self) -> &'static str {
        match self {
            Resolved::Null => "!!null",
            Resolved::Bool(_) => "!!bool",
            Resolved::Int(_) | Resolved::Uint(_) => "!!int",
            Resolved::Float(_) => "!!float",
            Resolved::Str => "!!str",
            Resolved::Timestamp => "!!timestamp",
        }
    }
}

/// The fixed spellings go-yaml v2 looks up before anything else.
fn lookup_fixed(text: &str) -> Option<Resolved> {
    Some(match text {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            Resolved::Bool(true)
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            Resolved::Bool(false)
        }
        "" | "~" | "null" | "Null" | "NULL" => Resolved::Null,
        ".nan" | ".NaN" | ".NAN" => Resolved::Float(f64::NAN),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => Resolved::Float(f64::INFINITY),
        "-.inf" | "-.Inf" | "-.INF" => Resolved::Float(f64::NEG_INFINITY),
        _ => return None,
    })
}

/// Go's `strconv.ParseUint(s, 0, 64)` on a string without underscores: `0x`/`0o`/`0b`
/// prefixes (either case), a leading `0` for octal, no sign.
fn go_parse_uint_base0(s: &str) -> Option<u64> {
    let bytes = s.as_bytes();
    let (radix, digits) = if bytes.len() >= 2 && bytes[0] == b'0' {
        match bytes[1] {
            b'x' | b'X' => (16, &s[2..]),
            b'o' | b'O' => (8, &s[2..]),
            b'b' | b'B' => (2, &s[2..]),
            _ => (8, &s[1..]),
        }
    } else {
        (10, s)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// Go's `strconv.ParseInt(s, 0, 64)` on a string without underscores.
fn go_parse_int_base0(s: &str) -> Option<i64> {
    let (neg, rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let magnitude = go_parse_uint_base0(rest)?;
    if neg {
        if magnitude <= i64::MAX as u64 + 1 {
            Some((magnitude as i64).wrapping_neg())
        } else {
            None
        }
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// go-yaml v2's float shape: `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`.
fn is_yaml_style_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    if i < b.len() && b[i] == b'.' {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if i < b.len() && b[i] == b'.' {
            i += 1;
            digits(&mut i);
        }
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// Go's `strconv.ParseFloat` for the decimal forms that reach it here; out of range is an error.
fn go_parse_float(s: &str) -> Option<f64> {
    let f: f64 = s.parse().ok()?;
    f.is_finite().then_some(f)
}

/// Whether `s` looks like one of go-yaml v2's timestamp formats (they stay strings anyway;
/// this only matters for an explicit `!!timestamp` tag).
fn looks_like_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 8 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    let rest = &s[5..];
    let mut parts = rest.splitn(2, '-');
    let month = parts.next().unwrap_or("");
    let tail = parts.next().unwrap_or("");
    let day_len = tail.bytes().take_while(u8::is_ascii_digit).count();
    let ok_num = |t: &str| !t.is_empty() && t.len() <= 2 && t.bytes().all(|c| c.is_ascii_digit());
    ok_num(month) && ok_num(&tail[..day_len])
}

/// Resolves an untagged plain scalar (or a tagged one, `tag` being its long form) as go-yaml
/// v2's `resolve` does, before the tag check.
fn resolve_text(text: &str, tag: Option<&str>) -> Resolved {
    let hint = match text.as_bytes().first() {
        None => b'N',
        Some(b'+' | b'-') => b'S',
        Some(b'0'..=b'9') => b'D',
        Some(b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~') => b'M',
        Some(b'.') => b'.',
        Some(_) => 0,
    };
    if hint == 0 {
        return Resolved::Str;
    }
    if let Some(r) = lookup_fixed(text) {
        return r;
    }
    match hint {
        b'.' => {
            // `.5`, `.5e3`: Go's ParseFloat on the text as written.
            if is_yaml_style_float(text)
                && let Some(f) = go_parse_float(text)
            {
                return Resolved::Float(f);
            }
        }
        b'D' | b'S' => {
            let timestamp_ok = tag.is_none() || tag == Some("tag:yaml.org,2002:timestamp");
            if timestamp_ok && looks_like_timestamp(text) {
                return Resolved::Timestamp;
            }
            let plain: String = text.chars().filter(|c| *c != '_').collect();
            if let Some(i) = go_parse_int_base0(&plain) {
                return Resolved::Int(i);
            }
            if let Some(u) = go_parse_uint_base0(&plain) {
                return Resolved::Uint(u);
            }
            if is_yaml_style_float(&plain)
                && let Some(f) = go_parse_float(&plain)
            {
                return Resolved::Float(f);
            }
        }
        _ => {}
    }
    Resolved::Str
}

fn resolved_to_value(r: Resolved, text: Cow<'_, str>) -> YamlValue {
    match r {
        Resolved::Null => YamlValue::Null,
        Resolved::Bool(b) => YamlValue::Bool(b),
        Resolved::Int(i) => YamlValue::Int(i),
        // Beyond int64: Go keeps a uint64, which JSON decoding later reads as a float64.
        Resolved::Uint(u) => YamlValue::Float(u as f64),
        Resolved::Float(f) => YamlValue::Float(f),
        Resolved::Str | Resolved::Timestamp => YamlValue::String(text.into_owned()),
    }
}

/// Standard base64 (with padding), as Go's `base64.StdEncoding` decodes `!!binary`.
fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let clean: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    if !clean.len().is_multiple_of(4) {
        return None;
    }
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => (c - b'A') as u32,
            b'a'..=b'z' => (c - b'a' + 26) as u32,
            b'0'..=b'9' => (c - b'0' + 52) as u32,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        })
    };
    let mut out = Vec::new();
    for (n, chunk) in clean.chunks(4).enumerate() {
        let last = n == clean.len() / 4 - 1;
        let pad = chunk.iter().rev().take_while(|c| **c == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return None;
        }
        let mut acc = 0u32;
        for &c in &chunk[..4 - pad] {
            acc = (acc << 6) | value(c)?;
        }
        acc <<= 6 * pad as u32;
        let bytes = [(acc >> 16) as u8, (acc >> 8) as u8, acc as u8];
        out.extend_from_slice(&bytes[..3 - pad]);
    }
    Some(out)
}

/// Resolves one scalar event as go-yaml v2 decodes it into `interface{}`. A string takes
/// `text` as it is (the parser's own buffer for a plain scalar: a copy cost an allocation per
/// scalar, as many as the parser's).
pub(super) fn resolve_scalar(
    text: Cow<'_, str>,
    style: ScalarStyle,
    tag: Option<&str>,
) -> Result<YamlValue, String> {
    let Some(tag) = tag else {
        return Ok(if style == ScalarStyle::Plain {
            resolved_to_value(resolve_text(&text, None), text)
        } else {
            YamlValue::String(text.into_owned())
        });
    };
    let Some(short) = tag.strip_prefix(TAG_PREFIX) else {
        // Local and unknown tags: the text as a string.
        return Ok(YamlValue::String(text.into_owned()));
    };
    match short {
        "str" => Ok(YamlValue::String(text.into_owned())),
        "binary" => decode_base64(&text)
            .map(|bytes| YamlValue::String(String::from_utf8_lossy(&bytes).into_owned()))
            .ok_or_else(|| "!!binary value contains invalid base64 data".to_string()),
        "bool" | "int" | "float" | "null" | "timestamp" => {
            let r = resolve_text(&text, Some(tag));
            let wanted = format!("!!{short}");
            if r.short_tag() == wanted {
                return Ok(resolved_to_value(r, text));
            }
            if short == "float" {
                match r {
                    Resolved::Int(i) => return Ok(YamlValue::Float(i as f64)),
                    Resolved::Uint(u) => return Ok(YamlValue::Float(u as f64)),
                    _ => {}
                }
            }
            Err(format!(
                "cannot decode {} `{}` as a {}",
                r.short_tag(),
                text,
                wanted
            ))
        }
        _ => Ok(YamlValue::String(text.into_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse_first_document;
    use super::*;

    fn scalar(text: &str) -> YamlValue {
        let doc = parse_first_document(&format!("v: {text}\n"))
            .unwrap()
            .unwrap();
        doc.get("v").unwrap().value.clone()
    }

    #[test]
    fn yaml11_plain_scalars() {
        use YamlValue::*;
        let table: &[(&str, YamlValue)] = &[
            ("yes", Bool(true)),
            ("Yes", Bool(true)),
            ("YES", Bool(true)),
            ("y", Bool(true)),
            ("Y", Bool(true)),
            ("on", Bool(true)),
            ("On", Bool(true)),
            ("ON", Bool(true)),
            ("true", Bool(true)),
            ("True", Bool(true)),
            ("TRUE", Bool(true)),
            ("no", Bool(false)),
            ("No", Bool(false)),
            ("NO", Bool(false)),
            ("n", Bool(false)),
            ("N", Bool(false)),
            ("off", Bool(false)),
            ("Off", Bool(false)),
            ("OFF", Bool(false)),
            ("false", Bool(false)),
            ("False", Bool(false)),
            ("FALSE", Bool(false)),
            ("yEs", String("yEs".into())),
            ("tRUE", String("tRUE".into())),
            ("~", Null),
            ("null", Null),
            ("Null", Null),
            ("NULL", Null),
            ("nUll", String("nUll".into())),
            ("", Null),
            ("0x1F", Int(31)),
            ("0X1f", Int(31)),
            ("010", Int(8)),
            ("0o17", Int(15)),
            ("0b101", Int(5)),
            ("-0b101", Int(-5)),
            ("1_000", Int(1000)),
            ("+5", Int(5)),
            ("-42", Int(-42)),
            ("-0x10", Int(-16)),
            ("0", Int(0)),
            ("9223372036854775807", Int(i64::MAX)),
            ("-9223372036854775808", Int(i64::MIN)),
            ("9223372036854775808", Float(9223372036854775808.0)),
            ("08", Float(8.0)),
            ("1e3", Float(1000.0)),
            ("1E3", Float(1000.0)),
            ("1.0", Float(1.0)),
            (".5", Float(0.5)),
            ("-.5", Float(-0.5)),
            ("+.5", Float(0.5)),
            ("1.", Float(1.0)),
            ("1_000.5", Float(1000.5)),
            (".inf", Float(f64::INFINITY)),
            ("-.Inf", Float(f64::NEG_INFINITY)),
            ("+.INF", Float(f64::INFINITY)),
            ("1e400", String("1e400".into())),
            ("2024-01-02", String("2024-01-02".into())),
            (
                "2024-01-02T10:00:00Z",
                String("2024-01-02T10:00:00Z".into()),
            ),
            ("0x", String("0x".into())),
            ("_1", String("_1".into())),
            ("+", String("+".into())),
            ("-x", String("-x".into())),
            (".", String(".".into())),
            ("0x1p4", String("0x1p4".into())),
            ("1.2.3", String("1.2.3".into())),
            ("50%", String("50%".into())),
            ("'yes'", String("yes".into())),
            ("\"010\"", String("010".into())),
            ("!!str 010", String("010".into())),
            ("!!str yes", String("yes".into())),
            ("!!int \"12\"", Int(12)),
            ("!!float 3", Float(3.0)),
            ("!!bool \"on\"", Bool(true)),
            ("!!null ''", Null),
            ("!!binary aGVsbG8=", String("hello".into())),
            ("!custom 12", String("12".into())),
            ("|\n  yes\n", String("yes\n".into())),
        ];
        for (text, want) in table {
            let got = scalar(text);
            match (&got, want) {
                (Float(a), Float(b)) if a.is_nan() && b.is_nan() => {}
                _ => assert_eq!(&got, want, "scalar {text:?}"),
            }
        }
        assert!(matches!(scalar(".nan"), Float(f) if f.is_nan()));
        assert!(matches!(scalar(".NaN"), Float(f) if f.is_nan()));
    }

    #[test]
    fn tag_mismatch_is_an_error() {
        let err = parse_first_document("v: !!int abc\n").unwrap_err();
        assert!(
            err.message.contains("cannot decode !!str `abc` as a !!int"),
            "{err:?}"
        );
        assert_eq!(err.pos.line, 1);
        assert!(parse_first_document("v: !!binary ***\n").is_err());
    }
}
