//! Go `encoding/json` text primitives: float64 formatting and string escaping, byte for byte.
//!
//! Both the Lua encoder (bytes, possibly invalid UTF-8) and [`crate::JsonValue`] (Rust strings)
//! write through these, so the two can never disagree on a number or a string.

use std::fmt::Write as _;

/// Where text is written: a `String` or a byte buffer. Only complete UTF-8 goes in.
pub(crate) trait Sink {
    fn put(&mut self, s: &str);
    /// `b` must be ASCII.
    fn put_ascii(&mut self, b: u8);
}

impl Sink for String {
    #[inline]
    fn put(&mut self, s: &str) {
        self.push_str(s);
    }
    #[inline]
    fn put_ascii(&mut self, b: u8) {
        debug_assert!(b.is_ascii());
        self.push(b as char);
    }
}

impl Sink for Vec<u8> {
    #[inline]
    fn put(&mut self, s: &str) {
        self.extend_from_slice(s.as_bytes());
    }
    #[inline]
    fn put_ascii(&mut self, b: u8) {
        self.push(b);
    }
}

/// A small fixed buffer for `{:e}` output, so formatting a number allocates nothing.
struct StackText {
    buf: [u8; 48],
    len: usize,
}

impl std::fmt::Write for StackText {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        if end > self.buf.len() {
            return Err(std::fmt::Error);
        }
        self.buf[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

fn put_zeros<S: Sink>(out: &mut S, mut n: usize) {
    const ZEROS: &str = "00000000000000000000000000000000";
    while n > 0 {
        let k = n.min(ZEROS.len());
        out.put(&ZEROS[..k]);
        n -= k;
    }
}

fn put_digits<S: Sink>(out: &mut S, digits: &[u8]) {
    for &d in digits {
        out.put_ascii(d);
    }
}

/// Writes a finite float64 exactly as Go's `encoding/json` does: the shortest decimal that
/// round-trips, in `%f` style when `1e-6 <= |x| < 1e21` (or x is ±0), else in `%e` style with
/// the exponent's leading zeros removed (`1e-7`, `1e+21`). `-0` stays `-0`.
///
/// The caller must reject NaN and ±Inf (Go's encoder refuses them).
pub(crate) fn write_go_float<S: Sink>(out: &mut S, value: f64) {
    debug_assert!(value.is_finite());
    // Integers below 2^53 (the common case) print as their decimal digits; -0 does not.
    if value.fract() == 0.0
        && value.abs() < 9.007_199_254_740_992e15
        && value.to_bits() != (-0.0f64).to_bits()
    {
        write_go_int(out, value as i64);
        return;
    }
    // Rust's `{:e}` without precision gives the shortest round-trip digits (closest to the
    // exact value), the same digits Go's strconv picks with precision -1.
    let mut text = StackText {
        buf: [0; 48],
        len: 0,
    };
    write!(text, "{value:e}").expect("a float64 in {:e} form fits in 48 bytes");
    let text = &text.buf[..text.len];
    let (negative, text) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    let e_at = text
        .iter()
        .position(|&b| b == b'e')
        .expect("{:e} output has an exponent");
    let mut digits = [0u8; 24];
    let mut n = 0;
    for &b in &text[..e_at] {
        if b != b'.' {
            digits[n] = b;
            n += 1;
        }
    }
    let digits = &digits[..n];
    let exponent: i32 = std::str::from_utf8(&text[e_at + 1..])
        .ok()
        .and_then(|s| s.parse().ok())
        .expect("{:e} exponent is an integer");

    if negative {
        out.put_ascii(b'-');
    }
    let abs = value.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        out.put_ascii(digits[0]);
        if digits.len() > 1 {
            out.put_ascii(b'.');
            put_digits(out, &digits[1..]);
        }
        out.put_ascii(b'e');
        out.put_ascii(if exponent < 0 { b'-' } else { b'+' });
        write_u64(out, u64::from(exponent.unsigned_abs()));
    } else {
        // The decimal point sits after `point` digits (may be <= 0 or past the digits).
        let point = exponent + 1;
        if point <= 0 {
            out.put("0.");
            put_zeros(out, point.unsigned_abs() as usize);
            put_digits(out, digits);
        } else {
            let point = point as usize;
            if point >= digits.len() {
                put_digits(out, digits);
                put_zeros(out, point - digits.len());
            } else {
                put_digits(out, &digits[..point]);
                out.put_ascii(b'.');
                put_digits(out, &digits[point..]);
            }
        }
    }
}

/// The number text Go's `encoding/json` writes for a float64 (`1e+21`, `1e-7`, `0.5`,
/// `100000000000000000000`). `None` for NaN and infinities, which it refuses.
pub fn go_json_float_text(f: f64) -> Option<String> {
    if !f.is_finite() {
        return None;
    }
    let mut text = String::new();
    write_go_float(&mut text, f);
    Some(text)
}

/// How Go prints a non-finite float64 (`NaN`, `+Inf`, `-Inf`), for the messages that name one.
pub(crate) fn go_special_float(value: f64) -> &'static str {
    debug_assert!(!value.is_finite());
    if value.is_nan() {
        "NaN"
    } else if value > 0.0 {
        "+Inf"
    } else {
        "-Inf"
    }
}

fn write_u64<S: Sink>(out: &mut S, mut v: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    put_digits(out, &buf[i..]);
}

/// Writes an exact 64-bit integer (Go marshals int64 in plain decimal).
pub(crate) fn write_go_int<S: Sink>(out: &mut S, value: i64) {
    if value < 0 {
        out.put_ascii(b'-');
    }
    write_u64(out, value.unsigned_abs());
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Bytes that start an escape in valid UTF-8 text: control bytes, `"`, `\\`, `<`, `>`, `&`,
/// and 0xE2 (the lead byte of U+2028 / U+2029).
const ESCAPE_START: [bool; 256] = byte_table(0xe2);
/// Bytes after which text may need care: the escapes above and every non-ASCII byte.
const NOT_PLAIN: [bool; 256] = byte_table(0x80);

const fn byte_table(high_from: usize) -> [bool; 256] {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = b < 0x20
            || b == b'"' as usize
            || b == b'\\' as usize
            || b == b'<' as usize
            || b == b'>' as usize
            || b == b'&' as usize
            || (b >= high_from && (high_from == 0x80 || b == high_from));
        b += 1;
    }
    table
}

/// Writes valid UTF-8 text with Go's escaping, without the quotes.
fn write_escaped_valid<S: Sink>(out: &mut S, s: &str) {
    let bytes = s.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if !ESCAPE_START[usize::from(b)] {
            i += 1;
            continue;
        }
        let width = match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | b'<' | b'>' | b'&' | 0x00..=0x1f => 1,
            // U+2028 / U+2029 are E2 80 A8 / E2 80 A9.
            0xe2 if bytes.get(i + 1) == Some(&0x80)
                && matches!(bytes.get(i + 2), Some(0xa8 | 0xa9)) =>
            {
                3
            }
            _ => {
                i += 1;
                continue;
            }
        };
        out.put(&s[start..i]);
        match b {
            b'"' => out.put("\\\""),
            b'\\' => out.put("\\\\"),
            b'\n' => out.put("\\n"),
            b'\r' => out.put("\\r"),
            b'\t' => out.put("\\t"),
            0xe2 => out.put(if bytes[i + 2] == 0xa8 {
                "\\u2028"
            } else {
                "\\u2029"
            }),
            // Other control bytes (including \b and \f, as in Go 1.19) and <, >, &.
            _ => {
                out.put("\\u00");
                out.put_ascii(HEX[usize::from(b >> 4)]);
                out.put_ascii(HEX[usize::from(b & 0xf)]);
            }
        }
        i += width;
        start = i;
    }
    out.put(&s[start..]);
}

/// Writes a quoted JSON string from bytes as Go encodes a `string`: each byte of invalid
/// UTF-8 becomes the escape `\ufffd`; valid text is escaped as in [`write_go_str`].
pub(crate) fn write_go_string<S: Sink>(out: &mut S, bytes: &[u8]) {
    out.put_ascii(b'"');
    // The usual key or value: printable ASCII that needs no escape, written as is.
    if !bytes.iter().any(|&b| NOT_PLAIN[usize::from(b)]) {
        // SAFETY: every byte is ASCII (NOT_PLAIN holds all bytes from 0x80), so valid UTF-8.
        out.put(unsafe { std::str::from_utf8_unchecked(bytes) });
        out.put_ascii(b'"');
        return;
    }
    if let Ok(text) = std::str::from_utf8(bytes) {
        write_escaped_valid(out, text);
        out.put_ascii(b'"');
        return;
    }
    for chunk in bytes.utf8_chunks() {
        write_escaped_valid(out, chunk.valid());
        // Go decodes one byte at a time: every byte of an invalid run is its own U+FFFD.
        // (Rust's invalid chunk is a maximal subpart; its later bytes are continuation bytes,
        // which Go also rejects one by one.)
        for _ in chunk.invalid() {
            out.put("\\ufffd");
        }
    }
    out.put_ascii(b'"');
}

/// Writes a quoted JSON string with Go's escaping: `\"`, `\\`, `\n`, `\r`, `\t`, other control
/// bytes as `\u00xx`, HTML `<`, `>`, `&` as `\u003c` etc., U+2028/U+2029 escaped, the rest raw.
pub(crate) fn write_go_str<S: Sink>(out: &mut S, s: &str) {
    out.put_ascii(b'"');
    write_escaped_valid(out, s);
    out.put_ascii(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn float(v: f64) -> String {
        let mut s = String::new();
        write_go_float(&mut s, v);
        s
    }

    #[test]
    fn float_formatting_matches_go_table() {
        let table: &[(f64, &str)] = &[
            (1e21, "1e+21"),
            (1e-7, "1e-7"),
            (5e-324, "5e-324"),
            (1e100, "1e+100"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (100000000000000000000.0, "100000000000000000000"),
            (0.000001, "0.000001"),
            (12345678901234567000.0, "12345678901234567000"),
            (9223372036854776000.0, "9223372036854776000"),
            (-0.0, "-0"),
            (0.0, "0"),
            (50.0, "50"),
            (-0.5, "-0.5"),
            (1.0 / 3.0, "0.3333333333333333"),
            (150.0, "150"),
            (1.5e-7, "1.5e-7"),
            (1.234e-10, "1.234e-10"),
            (-2.5e22, "-2.5e+22"),
            (123.456, "123.456"),
            (9007199254740993.0, "9007199254740992"),
            (999999999999999900000.0, "999999999999999900000"),
            (0.0000012345, "0.0000012345"),
            (1e20 * 10.0, "1e+21"),
            (2f64.powi(60), "1152921504606847000"),
        ];
        for &(v, want) in table {
            assert_eq!(float(v), want, "formatting {v:?}");
        }
        // The thresholds are on the value: just below 1e-6 and 1e21 switch style.
        let below_micro = f64::from_bits(1e-6f64.to_bits() - 1);
        assert!(
            float(below_micro).starts_with("9.99999999999999")
                && float(below_micro).ends_with("e-7")
        );
        let below_1e21 = f64::from_bits(1e21f64.to_bits() - 1);
        assert_eq!(float(below_1e21), "999999999999999900000");
    }

    #[test]
    fn json_float_text() {
        assert_eq!(go_json_float_text(1e21).unwrap(), "1e+21");
        assert_eq!(go_json_float_text(1e20).unwrap(), "100000000000000000000");
        assert_eq!(go_json_float_text(1e-7).unwrap(), "1e-7");
        assert_eq!(go_json_float_text(0.000001).unwrap(), "0.000001");
        assert_eq!(go_json_float_text(0.5).unwrap(), "0.5");
        assert_eq!(go_json_float_text(-0.0).unwrap(), "-0");
        assert_eq!(
            go_json_float_text(2f64.powi(62)).unwrap(),
            "4611686018427388000"
        );
        assert_eq!(go_json_float_text(5e-324).unwrap(), "5e-324");
        assert!(go_json_float_text(f64::NAN).is_none());
    }

    #[test]
    fn float_text_round_trips() {
        let mut x = 1.0e-30f64;
        while x < 1e30 {
            for v in [x, -x, x * 1.2345678901234567, x / 7.0] {
                let text = float(v);
                assert_eq!(
                    text.parse::<f64>().unwrap().to_bits(),
                    v.to_bits(),
                    "{text}"
                );
            }
            x *= 3.7;
        }
    }

    #[test]
    fn int_formatting() {
        let mut s = String::new();
        write_go_int(&mut s, i64::MIN);
        s.push(' ');
        write_go_int(&mut s, 9007199254740993);
        s.push(' ');
        write_go_int(&mut s, 0);
        assert_eq!(s, "-9223372036854775808 9007199254740993 0");
    }

    fn string(bytes: &[u8]) -> String {
        let mut out = Vec::new();
        write_go_string(&mut out, bytes);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn string_escaping_matches_go() {
        assert_eq!(string(b"a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(string(b"\n\r\t"), r#""\n\r\t""#);
        assert_eq!(
            string(b"\x00\x01\x08\x0c\x1f"),
            r#""\u0000\u0001\u0008\u000c\u001f""#
        );
        assert_eq!(string(b"\x7f"), "\"\x7f\"");
        assert_eq!(string(b"<a>&"), r#""\u003ca\u003e\u0026""#);
        assert_eq!(
            string("x\u{2028}y\u{2029}".as_bytes()),
            r#""x\u2028y\u2029""#
        );
        assert_eq!(string("é€😀/".as_bytes()), "\"é€😀/\"");
        assert_eq!(string(b"a\xffb"), r#""a\ufffdb""#);
        // A truncated 3-byte sequence is two invalid bytes for Go.
        assert_eq!(string(b"\xe2\x82A"), r#""\ufffd\ufffdA""#);
        // Surrogates and overlong forms are invalid, byte by byte.
        assert_eq!(string(b"\xed\xa0\x80"), r#""\ufffd\ufffd\ufffd""#);
        assert_eq!(string(b"\xc0\xaf"), r#""\ufffd\ufffd""#);
        assert_eq!(string(b"\xe2\x80"), r#""\ufffd\ufffd""#);
    }
}
