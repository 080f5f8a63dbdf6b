//! A JSON reader that accepts and rejects exactly what Go's `encoding/json` does when it
//! decodes into `interface{}`: strict grammar, nesting limited to 10000, invalid UTF-8 in
//! strings replaced byte by byte with U+FFFD, lone surrogate escapes read as U+FFFD, and
//! numbers as float64 (out of range is an error).
//!
//! The reader is iterative (an explicit stack), so deep input cannot overflow the Rust stack.

use crate::value::JsonMap;
use crate::value::JsonValue;

/// Go's `maxNestingDepth`: a document may open at most this many arrays/objects at once.
pub(crate) const MAX_NESTING_DEPTH: usize = 10000;

/// A parsed document whose top-level object keeps its members in document order (Go decodes
/// struct fields member by member, so `Labels` then `labels` merge in that order).
pub(crate) enum TopLevel {
    Object(Vec<(String, JsonValue)>),
    Other(JsonValue),
}

impl JsonValue {
    /// Parses JSON text as Go decodes into `interface{}`: every number becomes a float64
    /// (`Float`), `\ufffd` escapes and invalid UTF-8 bytes in strings become U+FFFD, and
    /// Go's syntax rules and 10000-level nesting limit apply. Err is Go's error message.
    pub fn parse_go_interface(text: &[u8]) -> Result<JsonValue, String> {
        parse(text)
    }
}

/// Parses `text` into a [`JsonValue`] (numbers as `Float`).
pub(crate) fn parse(text: &[u8]) -> Result<JsonValue, String> {
    match Reader::new(text).document(false)? {
        TopLevel::Other(v) => Ok(v),
        TopLevel::Object(_) => unreachable!("only kept top-level order gives TopLevel::Object"),
    }
}

/// Parses `text`, keeping a top-level object's members in document order.
pub(crate) fn parse_top_level(text: &[u8]) -> Result<TopLevel, String> {
    Reader::new(text).document(true)
}

enum Members {
    Sorted(JsonMap),
    Ordered(Vec<(String, JsonValue)>),
}

enum Open {
    Array(Vec<JsonValue>),
    Object(Members, String),
}

struct Reader<'a> {
    s: &'a [u8],
    pos: usize,
    /// Go checks the whole syntax first and reports type errors (a number out of float64
    /// range) only afterwards; this holds the first such error.
    type_error: Option<String>,
}

fn describe(c: u8) -> String {
    match c {
        b'\'' => "'\\''".to_string(),
        b'"' => "'\"'".to_string(),
        0x20..=0x7e => format!("'{}'", c as char),
        _ => format!("'\\x{c:02x}'"),
    }
}

impl<'a> Reader<'a> {
    fn new(s: &'a [u8]) -> Self {
        Reader {
            s,
            pos: 0,
            type_error: None,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    /// The syntax error for the byte at `pos` (or the end of input), Go-style.
    fn error(&self, context: &str) -> String {
        match self.peek() {
            None => "unexpected end of JSON input".to_string(),
            Some(c) => format!("invalid character {} {}", describe(c), context),
        }
    }

    fn document(mut self, keep_top_order: bool) -> Result<TopLevel, String> {
        let mut stack: Vec<Open> = Vec::new();
        'value: loop {
            self.skip_ws();
            let mut value = match self.peek() {
                Some(b'{') => {
                    self.open_depth(stack.len())?;
                    self.pos += 1;
                    self.skip_ws();
                    if self.peek() == Some(b'}') {
                        self.pos += 1;
                        if stack.is_empty() && keep_top_order {
                            return self.finish(TopLevel::Object(Vec::new()));
                        }
                        JsonValue::Object(JsonMap::new())
                    } else {
                        let key = self.member_key()?;
                        let members = if stack.is_empty() && keep_top_order {
                            Members::Ordered(Vec::new())
                        } else {
                            Members::Sorted(JsonMap::new())
                        };
                        stack.push(Open::Object(members, key));
                        continue 'value;
                    }
                }
                Some(b'[') => {
                    self.open_depth(stack.len())?;
                    self.pos += 1;
                    self.skip_ws();
                    if self.peek() == Some(b']') {
                        self.pos += 1;
                        JsonValue::Array(Vec::new())
                    } else {
                        stack.push(Open::Array(Vec::new()));
                        continue 'value;
                    }
                }
                Some(b'"') => JsonValue::String(self.string()?),
                Some(b't') => self.literal(b"true", JsonValue::Bool(true))?,
                Some(b'f') => self.literal(b"false", JsonValue::Bool(false))?,
                Some(b'n') => self.literal(b"null", JsonValue::Null)?,
                Some(b'-' | b'0'..=b'9') => self.number()?,
                _ => return Err(self.error("looking for beginning of value")),
            };
            // Attach the finished value to its parents, closing every container that ends here.
            loop {
                match stack.last_mut() {
                    None => return self.finish(TopLevel::Other(value)),
                    Some(Open::Array(items)) => {
                        items.push(value);
                        self.skip_ws();
                        match self.peek() {
                            Some(b',') => {
                                self.pos += 1;
                                continue 'value;
                            }
                            Some(b']') => {
                                self.pos += 1;
                                let Some(Open::Array(items)) = stack.pop() else {
                                    unreachable!()
                                };
                                value = JsonValue::Array(items);
                            }
                            _ => return Err(self.error("after array element")),
                        }
                    }
                    Some(Open::Object(members, key)) => {
                        let key = std::mem::take(key);
                        match members {
                            Members::Sorted(map) => {
                                // A repeated key: the later member wins, as in Go's map decoding.
                                map.insert(key, value);
                            }
                            Members::Ordered(list) => list.push((key, value)),
                        }
                        self.skip_ws();
                        match self.peek() {
                            Some(b',') => {
                                self.pos += 1;
                                self.skip_ws();
                                let next_key = self.member_key()?;
                                if let Some(Open::Object(_, key)) = stack.last_mut() {
                                    *key = next_key;
                                }
                                continue 'value;
                            }
                            Some(b'}') => {
                                self.pos += 1;
                                let Some(Open::Object(members, _)) = stack.pop() else {
                                    unreachable!()
                                };
                                match members {
                                    Members::Sorted(map) => value = JsonValue::Object(map),
                                    Members::Ordered(list) => {
                                        debug_assert!(stack.is_empty());
                                        return self.finish(TopLevel::Object(list));
                                    }
                                }
                            }
                            _ => return Err(self.error("after object key:value pair")),
                        }
                    }
                }
            }
        }
    }

    fn finish(mut self, top: TopLevel) -> Result<TopLevel, String> {
        self.skip_ws();
        if self.pos < self.s.len() {
            return Err(self.error("after top-level value"));
        }
        match self.type_error {
            Some(e) => Err(e),
            None => Ok(top),
        }
    }

    fn open_depth(&self, open_now: usize) -> Result<(), String> {
        if open_now + 1 > MAX_NESTING_DEPTH {
            Err(self.error("exceeded max depth"))
        } else {
            Ok(())
        }
    }

    /// Reads `"key"` and the `:` after it (at the first non-space byte of a member).
    fn member_key(&mut self) -> Result<String, String> {
        if self.peek() != Some(b'"') {
            return Err(self.error("looking for beginning of object key string"));
        }
        let key = self.string()?;
        self.skip_ws();
        if self.peek() != Some(b':') {
            return Err(self.error("after object key"));
        }
        self.pos += 1;
        Ok(key)
    }

    fn literal(&mut self, word: &[u8], value: JsonValue) -> Result<JsonValue, String> {
        for (i, &expected) in word.iter().enumerate() {
            match self.peek() {
                Some(c) if c == expected => self.pos += 1,
                _ => {
                    let name = std::str::from_utf8(word).unwrap_or_default();
                    return Err(self.error(&format!(
                        "in literal {name} (expecting {})",
                        describe(word[i])
                    )));
                }
            }
        }
        Ok(value)
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
        self.pos - start
    }

    fn number(&mut self) -> Result<JsonValue, String> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.error("in numeric literal")),
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return Err(self.error("after decimal point in numeric literal"));
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(self.error("in exponent of numeric literal"));
            }
        }
        let text = std::str::from_utf8(&self.s[start..self.pos]).expect("number text is ASCII");
        // Rust's parser is correctly rounded, like Go's strconv.ParseFloat.
        let value: f64 = text
            .parse()
            .expect("JSON number grammar is accepted by f64::from_str");
        if value.is_infinite() {
            self.type_error.get_or_insert_with(|| {
                format!("json: cannot unmarshal number {text} into Go value of type float64")
            });
            return Ok(JsonValue::Null);
        }
        Ok(JsonValue::Float(value))
    }

    fn hex4(&self, at: usize) -> Option<u32> {
        let digits = self.s.get(at..at + 4)?;
        let mut v = 0u32;
        for &d in digits {
            v = v * 16 + (d as char).to_digit(16)?;
        }
        Some(v)
    }

    /// Reads a string literal (at its opening quote).
    fn string(&mut self) -> Result<String, String> {
        self.pos += 1;
        let mut out = String::new();
        loop {
            // Copy the longest run of plain bytes at once.
            let run_start = self.pos;
            while let Some(c) = self.peek() {
                if c == b'"' || c == b'\\' || c < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            push_lossy(&mut out, &self.s[run_start..self.pos]);
            match self.peek() {
                None => return Err(self.error("in string literal")),
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.pos += 1;
                    let Some(c) = self.peek() else {
                        return Err(self.error("in string escape code"));
                    };
                    self.pos += 1;
                    match c {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => out.push(self.unicode_escape()?),
                        _ => {
                            self.pos -= 1;
                            return Err(self.error("in string escape code"));
                        }
                    }
                }
                Some(_) => return Err(self.error("in string literal")),
            }
        }
    }

    /// Reads the XXXX of `\uXXXX` (and a following low surrogate escape when it pairs).
    fn unicode_escape(&mut self) -> Result<char, String> {
        let Some(unit) = self.hex4(self.pos) else {
            // Point at the offending byte for the message.
            while let Some(c) = self.peek() {
                if !c.is_ascii_hexdigit() {
                    break;
                }
                self.pos += 1;
            }
            return Err(self.error("in \\u hexadecimal character escape"));
        };
        self.pos += 4;
        if (0xd800..0xe000).contains(&unit) {
            // A surrogate: it must be a high one followed by an escaped low one; otherwise it
            // reads as U+FFFD and whatever follows is read on its own.
            if unit < 0xdc00
                && self.s.get(self.pos..self.pos + 2) == Some(b"\\u")
                && let Some(low) = self.hex4(self.pos + 2)
                && (0xdc00..0xe000).contains(&low)
            {
                self.pos += 6;
                let c = 0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00);
                return Ok(char::from_u32(c).expect("a surrogate pair is a valid char"));
            }
            return Ok(char::REPLACEMENT_CHARACTER);
        }
        Ok(char::from_u32(unit).expect("a non-surrogate BMP code point is a valid char"))
    }
}

/// Appends bytes as UTF-8, each byte of invalid UTF-8 becoming U+FFFD (Go's rule).
fn push_lossy(out: &mut String, bytes: &[u8]) {
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for _ in chunk.invalid() {
            out.push(char::REPLACEMENT_CHARACTER);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_then_write_round_trips() {
        let text = r#"{"a":[1,2.5,{"k":"v"}],"n":-0.5,"s":"\u00e9\n\t\"","z":null}"#;
        let value = JsonValue::parse_go_interface(text.as_bytes()).unwrap();
        assert_eq!(
            value.to_canonical_json(),
            r#"{"a":[1,2.5,{"k":"v"}],"n":-0.5,"s":"é\n\t\"","z":null}"#
        );
    }

    fn ok(text: &str) -> JsonValue {
        parse(text.as_bytes()).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn err(text: &[u8]) -> String {
        parse(text).expect_err(&String::from_utf8_lossy(text))
    }

    #[test]
    fn values_and_numbers() {
        assert_eq!(ok(" 42 "), JsonValue::Float(42.0));
        assert_eq!(ok("-0"), JsonValue::Float(-0.0));
        assert_eq!(ok("1.5e2"), JsonValue::Float(150.0));
        assert_eq!(ok("9007199254740993"), JsonValue::Float(9007199254740992.0));
        assert_eq!(ok("1e-400"), JsonValue::Float(0.0));
        assert_eq!(ok("null"), JsonValue::Null);
        assert_eq!(
            ok("[1,null,true]"),
            JsonValue::Array(vec![
                JsonValue::Float(1.0),
                JsonValue::Null,
                JsonValue::Bool(true)
            ])
        );
        let obj = ok(r#"{"b":1,"a":{"x":[]},"b":2}"#);
        let JsonValue::Object(map) = obj else {
            panic!()
        };
        assert_eq!(map.keys().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(map["b"], JsonValue::Float(2.0));
    }

    #[test]
    fn strict_grammar() {
        for bad in [
            &b""[..],
            b"{bad",
            b"[1,]",
            b"{\"a\":1,}",
            b"01",
            b"1.",
            b"1e",
            b"-",
            b"+1",
            b".5",
            b"tru",
            b"nul l",
            b"[1] x",
            b"\"a",
            b"\"\x01\"",
            b"\"\\x\"",
            b"\"\\u12g4\"",
            b"NaN",
            b"{\"a\" 1}",
            b"[1 2]",
            b"\xff",
            b"'a'",
        ] {
            err(bad);
        }
        assert_eq!(err(b""), "unexpected end of JSON input");
        assert_eq!(
            err(b"{bad"),
            "invalid character 'b' looking for beginning of object key string"
        );
        assert_eq!(
            err(b"1e400"),
            "json: cannot unmarshal number 1e400 into Go value of type float64"
        );
        // A syntax error anywhere wins over a number out of range.
        assert!(err(b"[1e400,]").starts_with("invalid character ']'"));
    }

    #[test]
    fn strings_follow_go() {
        assert_eq!(
            ok(r#""a\"\\\/\b\f\n\r\t""#),
            JsonValue::String("a\"\\/\u{8}\u{c}\n\r\t".into())
        );
        assert_eq!(
            ok(r#""\u00e9\uD83D\uDE00""#),
            JsonValue::String("é😀".into())
        );
        assert_eq!(ok(r#""\ufffd""#), JsonValue::String("\u{fffd}".into()));
        // A lone surrogate reads as U+FFFD; a following non-surrogate escape is kept.
        assert_eq!(ok(r#""\ud800x""#), JsonValue::String("\u{fffd}x".into()));
        assert_eq!(
            ok(r#""\ud800\u0041""#),
            JsonValue::String("\u{fffd}A".into())
        );
        assert_eq!(
            ok(r#""\udc00\udc00""#),
            JsonValue::String("\u{fffd}\u{fffd}".into())
        );
        // Invalid UTF-8 bytes inside a string become U+FFFD one by one; DEL is fine.
        assert_eq!(
            parse(b"\"a\xff\xe2\x82b\x7f\"").unwrap(),
            JsonValue::String("a\u{fffd}\u{fffd}\u{fffd}b\x7f".into())
        );
    }

    #[test]
    fn nesting_limit_is_go_max_depth() {
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(parse(deep(MAX_NESTING_DEPTH).as_bytes()).is_ok());
        assert_eq!(
            err(deep(MAX_NESTING_DEPTH + 1).as_bytes()),
            "invalid character '[' exceeded max depth"
        );
        // Far deeper input fails cleanly, without recursion.
        assert!(err("[".repeat(1_000_000).as_bytes()).ends_with("exceeded max depth"));
    }

    #[test]
    fn top_level_order_is_kept() {
        let Ok(TopLevel::Object(members)) = parse_top_level(br#"{"spec":1,"Spec":2,"a":{}}"#)
        else {
            panic!()
        };
        let keys: Vec<&str> = members.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["spec", "Spec", "a"]);
        assert!(matches!(parse_top_level(b" {} "), Ok(TopLevel::Object(m)) if m.is_empty()));
        assert!(matches!(
            parse_top_level(b"null"),
            Ok(TopLevel::Other(JsonValue::Null))
        ));
        assert!(matches!(
            parse_top_level(b"[]"),
            Ok(TopLevel::Other(JsonValue::Array(_)))
        ));
    }
}
