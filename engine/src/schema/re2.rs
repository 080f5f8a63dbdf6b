//! Go's regular expressions, read as Go's `regexp/syntax` parses them and written out as the
//! `regex` crate pattern that matches the same strings. The API server compiles a CRD's
//! `pattern` with Go's `regexp.Compile` (kube-openapi `pkg/validation/validate/values.go`,
//! `Pattern`) and cel-go compiles the arguments of `matches`, `find` and `findAll` the same way,
//! so both go through [`compile`] here.
//!
//! The two syntaxes are close but not equal, and a pattern taken as it is would be read
//! differently by the `regex` crate (facts from Go's `regexp/syntax/parse.go` and
//! `perl_groups.go`, as of Go 1.24, the Go of Kubernetes 1.34):
//! * `\d \s \w` and their negations are ASCII in Go (`[0-9]`, `[\t\n\f\r ]`, `[0-9A-Za-z_]`),
//!   Unicode in the crate; `\b`/`\B` are ASCII word boundaries in Go;
//! * inside a class Go reads `[`, `--`, `&&` and `~~` literally, the crate as nesting and set
//!   operations;
//! * `\Q…\E` and octal escapes (`\0`, `\012`) exist only in Go; `\<`, `\>` are literals in Go
//!   and word boundaries in the crate; a `{` that does not start a well-formed count
//!   (`a{,5}`, `a{01}`, `{x}`) is a literal in Go;
//! * Go refuses what the crate accepts: flags other than `imsU`, `\u`/`\U` escapes, counts
//!   over 1000 (also as a product of nested counts), stacked repetitions (`a**`), `\p` names
//!   that are not exactly a general category, a script or `Any`, unknown `[:name:]` classes;
//! * `\p{Greek}` is the Script in Go and the Script_Extensions in the crate; Go's `\pC` leaves
//!   out unassigned code points (`Cn`).
//!
//! What the crate refuses of the translation (nesting deeper than its limit, a program past
//! its size limit) is [`PatternError::Unsupported`]: not checked, rather than guessed.

use std::fmt;
use std::rc::Rc;

use regex::Regex;

use names::{CATEGORY_ALIASES, GO_CATEGORIES, GO_SCRIPTS};

/// Why a pattern gives no regex.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PatternError {
    /// Go's `regexp.Compile` refuses it, with Go's message: the API server refuses a CRD with
    /// this pattern, and kube-openapi's `Pattern` fails every value against it.
    Invalid(String),
    /// Go accepts it but the `regex` crate cannot compile what it reads as.
    Unsupported(String),
}

impl fmt::Display for PatternError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PatternError::Invalid(reason) => write!(f, "{reason}"),
            PatternError::Unsupported(reason) => {
                write!(f, "the regex crate cannot compile it: {reason}")
            }
        }
    }
}

/// Compiles a Go regular expression into a `regex` crate regex matching the same strings.
pub(crate) fn compile(pattern: &str) -> Result<Regex, PatternError> {
    let translated = translate(pattern)?;
    Regex::new(&translated).map_err(|error| PatternError::Unsupported(error.to_string()))
}

/// At most this many patterns are kept by [`compile_shared`]'s memo.
const SHARED_LIMIT: usize = 256;

/// Compiled (or refused) patterns by their Go text.
type Compiled = std::collections::HashMap<String, Result<Rc<Regex>, PatternError>>;

thread_local! {
    /// [`compile_shared`]'s patterns, while [`with_shared_patterns`] runs.
    static SHARED: std::cell::RefCell<Option<Compiled>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f` with each pattern of CEL's regex functions compiled at most once (nested calls
/// share the outer memo); the memo is dropped when the outermost call returns, so nothing
/// outlives the validation that filled it (the language server validates for days).
pub fn with_shared_patterns<R>(f: impl FnOnce() -> R) -> R {
    crate::routing::memo::scoped(&SHARED, f)
}

/// [`compile`], kept by pattern inside [`with_shared_patterns`]: CEL's regex functions are
/// called once per value a rule walks (`self.all(x, x.matches(p))`), with the same few
/// patterns. Shared by `Rc` rather than cloned, as a clone of a `Regex` gets a cache of its
/// own. Past [`SHARED_LIMIT`] patterns the kept ones are dropped and kept anew. Outside
/// [`with_shared_patterns`] every call compiles.
pub(crate) fn compile_shared(pattern: &str) -> Result<Rc<Regex>, PatternError> {
    let found = SHARED.with_borrow(|shared| shared.as_ref().map(|memo| memo.get(pattern).cloned()));
    let compiled = match found {
        Some(Some(compiled)) => return compiled,
        Some(None) => compile(pattern).map(Rc::new),
        None => return compile(pattern).map(Rc::new),
    };
    SHARED.with_borrow_mut(|shared| {
        if let Some(memo) = shared.as_mut() {
            if memo.len() >= SHARED_LIMIT {
                memo.clear();
            }
            memo.insert(pattern.to_owned(), compiled.clone());
        }
    });
    compiled
}

/// The `regex` crate pattern for Go pattern `pattern`, or why there is none.
pub(crate) fn translate(pattern: &str) -> Result<String, PatternError> {
    let mut translator = Translator {
        whole: pattern,
        at: 0,
        out: String::with_capacity(pattern.len() + 16),
        frames: vec![Frame::default()],
        last_repeat_at: None,
    };
    translator.run()?;
    Ok(translator.out)
}

// Go's `syntax.ErrorCode` texts (regexp/syntax/parse.go).
const INVALID_CHAR_RANGE: &str = "invalid character class range";
const INVALID_ESCAPE: &str = "invalid escape sequence";
const INVALID_NAMED_CAPTURE: &str = "invalid named capture";
const INVALID_PERL_OP: &str = "invalid or unsupported Perl syntax";
const INVALID_REPEAT_OP: &str = "invalid nested repetition operator";
const INVALID_REPEAT_SIZE: &str = "invalid repeat count";
const MISSING_BRACKET: &str = "missing closing ]";
const MISSING_PAREN: &str = "missing closing )";
const MISSING_REPEAT_ARGUMENT: &str = "missing argument to repetition operator";
const TRAILING_BACKSLASH: &str = "trailing backslash at end of expression";
const UNEXPECTED_PAREN: &str = "unexpected )";

/// Go's refusal, worded as `syntax.Error.Error()`.
fn go_error(code: &str, expr: &str) -> PatternError {
    PatternError::Invalid(format!("error parsing regexp: {code}: `{expr}`"))
}

/// Go's limit on a count, and on the product of nested counts (parse.go `repeatIsValid`).
const MAX_REPEAT: u64 = 1000;

/// A class that matches nothing: what a literal surrogate (`\x{D800}`, which Go accepts and no
/// valid UTF-8 text contains) stands for.
const MATCHES_NOTHING: &str = r"[^\x{0}-\x{10FFFF}]";

/// A class that matches every character.
const ANY_CHARACTER: &str = r"[\x{0}-\x{10FFFF}]";

/// One group being read (the whole pattern is the outermost): what Go's `repeatIsValid` needs
/// to know of what it holds so far.
#[derive(Default)]
struct Frame {
    /// The largest product of counts on a path through the items before `last`.
    widest_before_last: u64,
    /// The product of counts inside the item a repetition would apply to; `None` at the start
    /// of the group or of an alternative, where Go reports a missing argument.
    last: Option<u64>,
}

impl Frame {
    fn widest(&self) -> u64 {
        self.widest_before_last.max(self.last.unwrap_or(1))
    }
}

struct Translator<'p> {
    whole: &'p str,
    /// Byte offset of what is read next.
    at: usize,
    out: String,
    frames: Vec<Frame>,
    /// Where the repetition operator just read started, for Go's "stacked repetition" error.
    last_repeat_at: Option<usize>,
}

impl<'p> Translator<'p> {
    fn rest(&self) -> &'p str {
        &self.whole[self.at..]
    }

    fn frame(&mut self) -> &mut Frame {
        self.frames
            .last_mut()
            .expect("the outermost frame is never popped")
    }

    /// A complete item (literal, class, assertion, group) whose counts multiply to `product`.
    fn item(&mut self, product: u64) {
        let frame = self.frame();
        frame.widest_before_last = frame.widest();
        frame.last = Some(product);
    }

    fn run(&mut self) -> Result<(), PatternError> {
        while let Some(c) = self.rest().chars().next() {
            let repeat_at = self.at;
            let mut repeated = false;
            match c {
                '(' => self.open_group()?,
                '|' => {
                    let frame = self.frame();
                    frame.widest_before_last = frame.widest();
                    frame.last = None;
                    self.out.push('|');
                    self.at += 1;
                }
                ')' => self.close_group()?,
                '^' | '$' | '.' => {
                    self.out.push(c);
                    self.at += 1;
                    self.item(1);
                }
                '[' => self.class()?,
                '*' | '+' | '?' => {
                    self.repeat(1, Count::Simple(c))?;
                    repeated = true;
                }
                '{' => match counted_repeat(self.rest()) {
                    Some((min, max, len)) => {
                        // parse.go `parse`, case '{': bounds before anything else.
                        let too_big = |n: i64| !(0..=MAX_REPEAT as i64).contains(&n);
                        if too_big(min) || max > MAX_REPEAT as i64 || (max >= 0 && min > max) {
                            return Err(go_error(INVALID_REPEAT_SIZE, &self.rest()[..len]));
                        }
                        self.repeat(len, Count::Counted { min, max })?;
                        repeated = true;
                    }
                    None => {
                        // Not a count: Go reads `{` as a literal.
                        self.literal(u32::from('{'));
                        self.at += 1;
                    }
                },
                '\\' => self.escape()?,
                _ => {
                    self.literal(u32::from(c));
                    self.at += c.len_utf8();
                }
            }
            self.last_repeat_at = repeated.then_some(repeat_at);
        }
        if self.frames.len() > 1 {
            return Err(go_error(MISSING_PAREN, self.whole));
        }
        Ok(())
    }

    fn literal(&mut self, rune: u32) {
        push_literal(&mut self.out, rune);
        self.item(1);
    }

    /// `*`, `+`, `?` or a count (`len` bytes long), with Go's checks (parse.go `repeat`).
    fn repeat(&mut self, len: usize, count: Count) -> Result<(), PatternError> {
        let start = self.at;
        let mut end = start + len;
        let non_greedy = self.whole[end..].starts_with('?');
        if non_greedy {
            end += 1;
        }
        if let Some(previous) = self.last_repeat_at {
            return Err(go_error(INVALID_REPEAT_OP, &self.whole[previous..end]));
        }
        let Some(inner) = self.frame().last else {
            return Err(go_error(MISSING_REPEAT_ARGUMENT, &self.whole[start..end]));
        };
        let product = match count {
            Count::Simple(op) => {
                self.out.push(op);
                inner
            }
            Count::Counted { min, max } => {
                // repeatIsValid: a count's maximum (its minimum when unbounded) multiplies the
                // counts inside it; a zero ends the path.
                let factor = if max < 0 { min } else { max } as u64;
                let product = if factor == 0 {
                    1
                } else {
                    factor.saturating_mul(inner)
                };
                if (min >= 2 || max >= 2) && product > MAX_REPEAT {
                    return Err(go_error(INVALID_REPEAT_SIZE, &self.whole[start..end]));
                }
                match max {
                    _ if max == min => self.out.push_str(&format!("{{{min}}}")),
                    -1 => self.out.push_str(&format!("{{{min},}}")),
                    _ => self.out.push_str(&format!("{{{min},{max}}}")),
                }
                product
            }
        };
        if non_greedy {
            self.out.push('?');
        }
        self.frame().last = Some(product);
        self.at = end;
        Ok(())
    }

    fn open_group(&mut self) -> Result<(), PatternError> {
        let rest = self.rest();
        if !rest.starts_with("(?") {
            self.out.push('(');
            self.at += 1;
            self.frames.push(Frame::default());
            return Ok(());
        }
        // Named captures: `(?P<name>` and, since Go 1.22, `(?<name>`. The name does not change
        // what matches, so the group is written unnamed (the crate's rules for names differ).
        let bytes = rest.as_bytes();
        let name_start = if rest.len() > 4 && bytes[2] == b'P' && bytes[3] == b'<' {
            Some(4)
        } else if rest.len() > 3 && bytes[2] == b'<' {
            Some(3)
        } else {
            None
        };
        if let Some(name_start) = name_start {
            let Some(end) = rest.find('>') else {
                return Err(go_error(INVALID_NAMED_CAPTURE, rest));
            };
            let name = &rest[name_start..end];
            // isValidCaptureName: [A-Za-z0-9_]+.
            if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                return Err(go_error(INVALID_NAMED_CAPTURE, &rest[..=end]));
            }
            self.out.push('(');
            self.at += end + 1;
            self.frames.push(Frame::default());
            return Ok(());
        }
        // Flags, and a non-capturing group (parse.go `parsePerlFlags`).
        let mut on = String::new();
        let mut off = String::new();
        let mut negative = false;
        let mut saw_flag = false;
        for (index, c) in rest[2..].char_indices() {
            let consumed = 2 + index + c.len_utf8();
            match c {
                'i' | 'm' | 's' | 'U' => {
                    saw_flag = true;
                    let (set, other) = if negative {
                        (&mut off, &mut on)
                    } else {
                        (&mut on, &mut off)
                    };
                    other.retain(|f| f != c);
                    if !set.contains(c) {
                        set.push(c);
                    }
                }
                '-' if !negative => {
                    negative = true;
                    saw_flag = false;
                }
                ':' | ')' if !negative || saw_flag => {
                    let flags = match (on.is_empty(), off.is_empty()) {
                        (true, true) => String::new(),
                        (false, true) => on,
                        _ => format!("{on}-{off}"),
                    };
                    if c == ':' {
                        self.out.push_str(&format!("(?{flags}:"));
                        self.frames.push(Frame::default());
                    } else if !flags.is_empty() {
                        // A flag-only group changes no item: a repetition after it applies to
                        // the item before it, as in Go.
                        self.out.push_str(&format!("(?{flags})"));
                    }
                    self.at += consumed;
                    return Ok(());
                }
                _ => return Err(go_error(INVALID_PERL_OP, &rest[..consumed])),
            }
        }
        Err(go_error(INVALID_PERL_OP, rest))
    }

    fn close_group(&mut self) -> Result<(), PatternError> {
        if self.frames.len() == 1 {
            return Err(go_error(UNEXPECTED_PAREN, self.whole));
        }
        let closed = self.frames.pop().expect("more than one frame");
        self.out.push(')');
        self.at += 1;
        self.item(closed.widest());
        Ok(())
    }

    /// A backslash outside a class (parse.go `parse`, case '\\').
    fn escape(&mut self) -> Result<(), PatternError> {
        let rest = self.rest();
        let Some(letter) = rest[1..].chars().next() else {
            return Err(go_error(TRAILING_BACKSLASH, ""));
        };
        let assertion = match letter {
            'A' => Some(r"\A"),
            'z' => Some(r"\z"),
            // Go's word boundary is ASCII (`isWordChar`).
            'b' => Some(r"(?-u:\b)"),
            'B' => Some(r"(?-u:\B)"),
            'C' => return Err(go_error(INVALID_ESCAPE, &rest[..2])),
            _ => None,
        };
        if let Some(assertion) = assertion {
            self.out.push_str(assertion);
            self.at += 2;
            self.item(1);
            return Ok(());
        }
        if letter == 'Q' {
            // Literal text up to `\E` or the end; each character is an item of its own, so a
            // repetition after `\E` applies to the last one, as in Go.
            let body = &rest[2..];
            let (literal, consumed) = match body.find(r"\E") {
                Some(end) => (&body[..end], 2 + end + 2),
                None => (body, rest.len()),
            };
            self.at += consumed;
            for c in literal.chars() {
                self.literal(u32::from(c));
            }
            return Ok(());
        }
        if let Some((set, len)) = named_set(rest)? {
            set.push_alone(&mut self.out);
            self.at += len;
            self.item(1);
            return Ok(());
        }
        let (rune, len) = parse_escape(rest)?;
        self.at += len;
        self.literal(rune);
        Ok(())
    }

    /// A bracketed class (parse.go `parseClass`), written with every character escaped so the
    /// crate reads no nesting or set operation into it.
    fn class(&mut self) -> Result<(), PatternError> {
        let whole_class = self.rest();
        let mut t = &whole_class[1..];
        let negated = t.starts_with('^');
        if negated {
            t = &t[1..];
        }
        let mut body = String::new();
        let mut first = true;
        while first || !t.starts_with(']') {
            first = false;
            // POSIX `[:alpha:]`; without a closing `:]` the `[` is a literal.
            if t.len() > 2
                && t.starts_with("[:")
                && let Some(end) = t[2..].find(":]")
            {
                let name = &t[..end + 4];
                let set = posix_class(name).ok_or_else(|| go_error(INVALID_CHAR_RANGE, name))?;
                set.push_in_class(&mut body);
                t = &t[name.len()..];
                continue;
            }
            if let Some((set, len)) = named_set(t)? {
                set.push_in_class(&mut body);
                t = &t[len..];
                continue;
            }
            let range_start = t;
            let (low, rest) = class_char(t, whole_class)?;
            t = rest;
            let mut high = low;
            // `[a-]` is `a` and `-`.
            if t.len() >= 2 && t.starts_with('-') && !t[1..].starts_with(']') {
                let (end, rest) = class_char(&t[1..], whole_class)?;
                t = rest;
                if end < low {
                    let text = &range_start[..range_start.len() - t.len()];
                    return Err(go_error(INVALID_CHAR_RANGE, text));
                }
                high = end;
            }
            push_range(&mut body, low, high);
        }
        t = &t[1..];
        self.at = self.whole.len() - t.len();
        NamedSet {
            negated,
            items: body,
        }
        .push_alone(&mut self.out);
        self.item(1);
        Ok(())
    }
}

/// A repetition operator: `*`, `+` or `?`, or a count (`max` -1 when unbounded).
enum Count {
    Simple(char),
    Counted { min: i64, max: i64 },
}

/// Go's `parseRepeat`: `{n}`, `{n,}` or `{n,m}` at the start of `text`, with its length.
/// Numbers have no leading zeros (`parseInt`); one past 10^8 reads as -1 (refused later as
/// too big). Anything else is not a count, and its `{` a literal.
fn counted_repeat(text: &str) -> Option<(i64, i64, usize)> {
    let number = |s: &str| -> Option<(i64, usize)> {
        let digits = s.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 || (digits >= 2 && s.starts_with('0')) {
            return None;
        }
        let mut n: i64 = 0;
        for b in s[..digits].bytes() {
            if n >= 100_000_000 {
                n = -1;
                break;
            }
            n = n * 10 + i64::from(b - b'0');
        }
        Some((n, digits))
    };
    let mut at = 1;
    let (mut min, len) = number(&text[at..])?;
    at += len;
    let max = if text[at..].starts_with(',') {
        at += 1;
        if text[at..].starts_with('}') {
            -1
        } else {
            let (max, len) = number(&text[at..])?;
            at += len;
            if max < 0 {
                min = -1;
            }
            max
        }
    } else {
        min
    };
    text[at..].starts_with('}').then_some((min, max, at + 1))
}

/// Go's `parseEscape`: an escape that stands for one character (a code point, possibly a
/// surrogate), with the escape's length. Shared by classes and the rest of a pattern.
fn parse_escape(text: &str) -> Result<(u32, usize), PatternError> {
    let mut chars = text[1..].chars();
    let Some(c) = chars.next() else {
        return Err(go_error(TRAILING_BACKSLASH, ""));
    };
    let after = &text[1 + c.len_utf8()..];
    let invalid = || go_error(INVALID_ESCAPE, &text[..1 + c.len_utf8()]);
    let octal = |s: &str| s.bytes().next().filter(|b| (b'0'..=b'7').contains(b));
    match c {
        // Any ASCII punctuation escapes itself.
        _ if c.is_ascii() && !c.is_ascii_alphanumeric() => Ok((u32::from(c), 2)),
        // Octal: `\0` and up to two more digits, or a nonzero digit followed by one (a lone
        // `\1` would be a backreference, which Go does not support).
        '0'..='7' if c == '0' || octal(after).is_some() => {
            let mut rune = u32::from(c) - u32::from('0');
            let mut len = 2;
            for _ in 1..3 {
                let Some(digit) = octal(&text[len..]) else {
                    break;
                };
                rune = rune * 8 + u32::from(digit - b'0');
                len += 1;
            }
            Ok((rune, len))
        }
        'x' => {
            if let Some(braced) = after.strip_prefix('{') {
                // Any number of hex digits (at least one) up to `}`, never past U+10FFFF.
                let mut rune: u32 = 0;
                // Go's message quotes the escape up to and with the character that ended it
                // (all of the text when it ran out): `consumed`, in bytes from the `\`. Every
                // character before `at` is a hex digit, so `at` also counts them.
                let mut consumed = text.len();
                for (at, c) in braced.char_indices() {
                    if c == '}' && at > 0 {
                        return Ok((rune, 3 + at + 1));
                    }
                    let end = 3 + at + c.len_utf8();
                    let Some(digit) = c.to_digit(16) else {
                        consumed = end;
                        break;
                    };
                    rune = rune * 16 + digit;
                    if rune > 0x10FFFF {
                        consumed = end;
                        break;
                    }
                }
                Err(go_error(INVALID_ESCAPE, &text[..consumed]))
            } else {
                let hex: Vec<char> = after.chars().take(2).collect();
                match hex.as_slice() {
                    [a, b] if a.is_ascii_hexdigit() && b.is_ascii_hexdigit() => {
                        let rune = a.to_digit(16).unwrap_or(0) * 16 + b.to_digit(16).unwrap_or(0);
                        Ok((rune, 4))
                    }
                    _ => {
                        let len: usize = 2 + hex.iter().map(|c| c.len_utf8()).sum::<usize>();
                        Err(go_error(INVALID_ESCAPE, &text[..len]))
                    }
                }
            }
        }
        'a' => Ok((0x07, 2)),
        'f' => Ok((0x0C, 2)),
        'n' => Ok((0x0A, 2)),
        'r' => Ok((0x0D, 2)),
        't' => Ok((0x09, 2)),
        'v' => Ok((0x0B, 2)),
        _ => Err(invalid()),
    }
}

/// Go's `parseClassChar`: one character of a class, escaped or not.
fn class_char<'t>(text: &'t str, whole_class: &str) -> Result<(u32, &'t str), PatternError> {
    match text.chars().next() {
        None => Err(go_error(MISSING_BRACKET, whole_class)),
        Some('\\') => {
            let (rune, len) = parse_escape(text)?;
            Ok((rune, &text[len..]))
        }
        Some(c) => Ok((u32::from(c), &text[c.len_utf8()..])),
    }
}

fn is_surrogate(rune: u32) -> bool {
    (0xD800..=0xDFFF).contains(&rune)
}

/// A literal outside a class: escaped where the crate would read it as syntax.
fn push_literal(out: &mut String, rune: u32) {
    match char::from_u32(rune) {
        Some(c) => {
            if regex_syntax::is_meta_character(c) {
                out.push('\\');
            }
            out.push(c);
        }
        None => out.push_str(MATCHES_NOTHING),
    }
}

/// A character inside a class: ASCII letters and digits as they are, the rest as `\x{…}`, so
/// that nothing reads as nesting (`[`) or a set operation (`--`, `&&`, `~~`).
fn push_class_char(out: &mut String, c: char) {
    if c.is_ascii_alphanumeric() {
        out.push(c);
    } else {
        out.push_str(&format!(r"\x{{{:X}}}", u32::from(c)));
    }
}

/// A range inside a class, without the surrogates no `char` (and no valid UTF-8) has.
fn push_range(out: &mut String, low: u32, high: u32) {
    let low = if is_surrogate(low) { 0xE000 } else { low };
    let high = if is_surrogate(high) { 0xD7FF } else { high };
    let (Some(low), Some(high)) = (char::from_u32(low), char::from_u32(high)) else {
        return;
    };
    if low > high {
        return;
    }
    push_class_char(out, low);
    if high != low {
        out.push('-');
        push_class_char(out, high);
    }
}

/// A set of characters Go names: a Perl class (`\d`), a POSIX class (`[:alpha:]`) or a Unicode
/// class (`\pL`), as items of a crate class.
struct NamedSet {
    negated: bool,
    items: String,
}

impl NamedSet {
    fn from_ranges(negated: bool, ranges: &[(char, char)]) -> NamedSet {
        let mut items = String::new();
        for &(low, high) in ranges {
            push_range(&mut items, u32::from(low), u32::from(high));
        }
        NamedSet { negated, items }
    }

    /// Standing alone (outside a class).
    fn push_alone(&self, out: &mut String) {
        if self.items.is_empty() {
            // An empty set (Go's `\p{Cs}`, which no valid UTF-8 text holds, or a class that
            // names nothing): the crate has no empty class.
            let set = if self.negated {
                ANY_CHARACTER
            } else {
                MATCHES_NOTHING
            };
            out.push_str(set);
            return;
        }
        out.push('[');
        if self.negated {
            out.push('^');
        }
        out.push_str(&self.items);
        out.push(']');
    }

    /// Inside a class: a negated set as a nested class, which the crate unites with the rest.
    fn push_in_class(&self, out: &mut String) {
        if self.negated || self.items.is_empty() {
            self.push_alone(out);
        } else {
            out.push_str(&self.items);
        }
    }
}

/// A Perl class (`\d \D \s \S \w \W`, parse.go `parsePerlClassEscape`) or a Unicode class
/// (`\pL`, `\p{Greek}`, `\PL`, `\p{^Greek}`, parse.go `parseUnicodeClass`) at the start of
/// `text`, with its length; `None` when `text` starts with neither.
fn named_set(text: &str) -> Result<Option<(NamedSet, usize)>, PatternError> {
    let Some(rest) = text.strip_prefix('\\') else {
        return Ok(None);
    };
    let Some(letter) = rest.chars().next() else {
        return Ok(None);
    };
    // perl_groups.go.
    let perl: Option<&[(char, char)]> = match letter.to_ascii_lowercase() {
        'd' => Some(&[('0', '9')]),
        's' => Some(&[('\t', '\n'), ('\x0C', '\r'), (' ', ' ')]),
        'w' => Some(&[('0', '9'), ('A', 'Z'), ('_', '_'), ('a', 'z')]),
        _ => None,
    };
    if let Some(ranges) = perl {
        return Ok(Some((
            NamedSet::from_ranges(letter.is_ascii_uppercase(), ranges),
            2,
        )));
    }
    if letter != 'p' && letter != 'P' {
        return Ok(None);
    }
    let mut negated = letter == 'P';
    let after = &rest[1..];
    let (mut name, sequence_len) = match after.chars().next() {
        Some('{') => {
            let Some(end) = text.find('}') else {
                return Err(go_error(INVALID_CHAR_RANGE, text));
            };
            (&text[3..end], end + 1)
        }
        Some(c) => (&after[..c.len_utf8()], 2 + c.len_utf8()),
        None => ("", 2),
    };
    if let Some(positive) = name.strip_prefix('^') {
        negated = !negated;
        name = positive;
    }
    let Some(items) = unicode_class_items(name) else {
        if newer_go_accepts(name) {
            return Err(PatternError::Unsupported(format!(
                "Go 1.25 reads `{}` (its Unicode class names are loose), Go 1.24 refuses it: \
                 which the API server does depends on the Go it was built with",
                &text[..sequence_len]
            )));
        }
        return Err(go_error(INVALID_CHAR_RANGE, &text[..sequence_len]));
    };
    Ok(Some((NamedSet { negated, items }, sequence_len)))
}

/// The crate's class items for a Go Unicode class name (parse.go `unicodeTable`: `Any`, a key
/// of `unicode.Categories` or of `unicode.Scripts`, spelt exactly).
fn unicode_class_items(name: &str) -> Option<String> {
    if name == "Any" {
        return Some(r"\p{Any}".to_owned());
    }
    // Go's `unicode.C` is Cc, Cf, Co and Cs; the Unicode `C` the crate knows adds Cn.
    if name == "C" {
        return Some(r"\p{gc=Cc}\p{gc=Cf}\p{gc=Co}".to_owned());
    }
    if GO_CATEGORIES.contains(&name) {
        // Surrogates are no `char`: the crate's class for them is empty anyway.
        if name == "Cs" {
            return Some(String::new());
        }
        return Some(format!(r"\p{{gc={name}}}"));
    }
    // Go's tables are the Script property; the crate's bare name is Script_Extensions.
    GO_SCRIPTS
        .contains(&name)
        .then(|| format!(r"\p{{sc={name}}}"))
}

/// Whether Go 1.25 or later reads a Unicode class name Go 1.24 refuses: from 1.25, parse.go
/// `unicodeTable` compares names by `canonicalName` (case, `_`, `-` and spaces ignored) and
/// adds `Assigned`, `ASCII`, `LC`, `Cn` and `unicode.CategoryAliases` (`Letter`, …).
fn newer_go_accepts(name: &str) -> bool {
    let canonical = |n: &str| -> String {
        n.chars()
            .filter(|c| !matches!(c, '_' | '-' | ' '))
            .flat_map(char::to_lowercase)
            .collect()
    };
    let wanted = canonical(name);
    ["Any", "Assigned", "ASCII", "LC", "Cn"]
        .iter()
        .chain(GO_CATEGORIES)
        .chain(GO_SCRIPTS)
        .chain(CATEGORY_ALIASES)
        .any(|known| canonical(known) == wanted)
}

/// A POSIX class (parse.go `parseNamedClass`, perl_groups.go `posixGroup`), e.g. `[:^alpha:]`.
fn posix_class(name: &str) -> Option<NamedSet> {
    let inner = name.strip_prefix("[:")?.strip_suffix(":]")?;
    let (negated, inner) = match inner.strip_prefix('^') {
        Some(positive) => (true, positive),
        None => (false, inner),
    };
    let ranges: &[(char, char)] = match inner {
        "alnum" => &[('0', '9'), ('A', 'Z'), ('a', 'z')],
        "alpha" => &[('A', 'Z'), ('a', 'z')],
        "ascii" => &[('\0', '\x7F')],
        "blank" => &[('\t', '\t'), (' ', ' ')],
        "cntrl" => &[('\0', '\x1F'), ('\x7F', '\x7F')],
        "digit" => &[('0', '9')],
        "graph" => &[('!', '~')],
        "lower" => &[('a', 'z')],
        "print" => &[(' ', '~')],
        "punct" => &[('!', '/'), (':', '@'), ('[', '`'), ('{', '~')],
        "space" => &[('\t', '\r'), (' ', ' ')],
        "upper" => &[('A', 'Z')],
        "word" => &[('0', '9'), ('A', 'Z'), ('_', '_'), ('a', 'z')],
        "xdigit" => &[('0', '9'), ('A', 'F'), ('a', 'f')],
        _ => return None,
    };
    Some(NamedSet::from_ranges(negated, ranges))
}

mod names;
#[cfg(test)]
mod tests;
