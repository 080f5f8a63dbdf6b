//! `string.format` as gopher-lua does it: the format string goes to Go's `fmt.Sprintf` with
//! the Lua values as operands, so verbs, flags, padding and the `%!v(MISSING)`-style
//! diagnostics follow Go's rules (numbers format themselves as int64 or float64 per verb).

use crate::go::math::go_float_to_int64;

/// One operand, already inspected on the Lua stack.
pub enum Arg<'a> {
    /// A number and its `tostring` text (from the VM's own conversion).
    Num(f64, &'a [u8]),
    Str(&'a [u8]),
    Bool(bool),
    Nil,
    /// Tables, functions, userdata, threads: Go's type name and their `String()` text.
    Other {
        go_type: &'static str,
        text: String,
    },
}

#[derive(Default, Clone, Copy)]
struct Spec {
    plus: bool,
    minus: bool,
    sharp: bool,
    space: bool,
    zero: bool,
    wid: Option<usize>,
    prec: Option<usize>,
}

/// Counts the verbs gopher-lua lets through: `%` count minus non-overlapping `%%` count.
fn verb_budget(fmt: &[u8]) -> usize {
    let pct = fmt.iter().filter(|&&b| b == b'%').count();
    let mut pairs = 0;
    let mut i = 0;
    while i + 1 < fmt.len() {
        if fmt[i] == b'%' && fmt[i + 1] == b'%' {
            pairs += 1;
            i += 2;
        } else {
            i += 1;
        }
    }
    pct - pairs
}

fn decode_rune(s: &[u8]) -> (char, usize) {
    let n = match s[0] {
        0x00..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf7 => 4,
        _ => 0,
    };
    if n > 0
        && s.len() >= n
        && let Ok(t) = std::str::from_utf8(&s[..n])
        && let Some(c) = t.chars().next()
    {
        return (c, n);
    }
    ('\u{fffd}', 1)
}

fn rune_count(s: &[u8]) -> usize {
    let mut i = 0;
    let mut n = 0;
    while i < s.len() {
        i += decode_rune(&s[i..]).1;
        n += 1;
    }
    n
}

/// Formats like Go's `fmt.Sprintf(format, args[:min(verbs, len(args))]...)`, following
/// fmt/print.go `doPrintf`: flags, `[n]` argument indexes, width, precision, verb.
pub fn sprintf(fmt: &[u8], all_args: &[Arg<'_>]) -> Vec<u8> {
    let args = &all_args[..verb_budget(fmt).min(all_args.len())];
    let mut out = Vec::with_capacity(fmt.len() + 16);
    let mut next_arg = 0;
    // An explicit index was used: EXTRA is not reported then.
    let mut reordered = false;
    let mut i = 0;
    while i < fmt.len() {
        if fmt[i] != b'%' {
            let start = i;
            while i < fmt.len() && fmt[i] != b'%' {
                i += 1;
            }
            out.extend_from_slice(&fmt[start..i]);
            continue;
        }
        i += 1;
        let mut good_arg_num = true;
        let mut sp = Spec::default();
        while i < fmt.len() {
            match fmt[i] {
                b'#' => sp.sharp = true,
                b'0' => sp.zero = !sp.minus,
                b'+' => sp.plus = true,
                b'-' => {
                    sp.minus = true;
                    sp.zero = false;
                }
                b' ' => sp.space = true,
                _ => break,
            }
            i += 1;
        }
        let mut index = arg_number(fmt, i, next_arg, args.len());
        let mut after_index = index.found;
        reordered |= index.bracket;
        good_arg_num &= index.good;
        next_arg = index.arg;
        i = index.end;
        // Width.
        if i < fmt.len() && fmt[i] == b'*' {
            i += 1;
            // A Lua value is never a Go int, so a `*` width is always bad.
            if next_arg < args.len() {
                next_arg += 1;
            }
            out.extend_from_slice(b"%!(BADWIDTH)");
            after_index = false;
        } else {
            match parse_num(&fmt[i..]) {
                Num::Value(n, len) => {
                    i += len;
                    sp.wid = Some(n);
                    if after_index {
                        // "%[3]2d"
                        good_arg_num = false;
                    }
                }
                Num::Absent => {}
                // The rest of the format is consumed: the verb is missing.
                Num::Overflow => i = fmt.len(),
            }
        }
        // Precision: a `.` with something after it.
        if i + 1 < fmt.len() && fmt[i] == b'.' {
            i += 1;
            if after_index {
                // "%[3].2d"
                good_arg_num = false;
            }
            index = arg_number(fmt, i, next_arg, args.len());
            after_index = index.found;
            reordered |= index.bracket;
            good_arg_num &= index.good;
            next_arg = index.arg;
            i = index.end;
            if i < fmt.len() && fmt[i] == b'*' {
                i += 1;
                if next_arg < args.len() {
                    next_arg += 1;
                }
                out.extend_from_slice(b"%!(BADPREC)");
                after_index = false;
            } else {
                match parse_num(&fmt[i..]) {
                    Num::Value(n, len) => {
                        i += len;
                        sp.prec = Some(n);
                    }
                    Num::Absent => sp.prec = Some(0),
                    Num::Overflow => {
                        sp.prec = Some(0);
                        i = fmt.len();
                    }
                }
            }
        }
        if !after_index {
            index = arg_number(fmt, i, next_arg, args.len());
            reordered |= index.bracket;
            good_arg_num &= index.good;
            next_arg = index.arg;
            i = index.end;
        }
        if i >= fmt.len() {
            out.extend_from_slice(b"%!(NOVERB)");
            break;
        }
        let (verb, vlen) = decode_rune(&fmt[i..]);
        i += vlen;
        if verb == '%' {
            out.push(b'%');
            continue;
        }
        if !good_arg_num {
            out.extend_from_slice(b"%!");
            push_char(&mut out, verb);
            out.extend_from_slice(b"(BADINDEX)");
            continue;
        }
        if next_arg >= args.len() {
            out.extend_from_slice(b"%!");
            push_char(&mut out, verb);
            out.extend_from_slice(b"(MISSING)");
            continue;
        }
        let arg = &args[next_arg];
        next_arg += 1;
        format_arg(&mut out, arg, verb, &sp);
    }
    if !reordered && next_arg < args.len() {
        out.extend_from_slice(b"%!(EXTRA ");
        for (k, arg) in args[next_arg..].iter().enumerate() {
            if k > 0 {
                out.extend_from_slice(b", ");
            }
            out.extend_from_slice(lua_type_name(arg).as_bytes());
            out.push(b'=');
            format_arg(&mut out, arg, 'v', &Spec::default());
        }
        out.push(b')');
    }
    out
}

/// What fmt's `argNumber` read at a position.
struct ArgIndex {
    /// The operand to use next.
    arg: usize,
    /// Where parsing goes on.
    end: usize,
    /// A valid `[n]` was read (`afterIndex`).
    found: bool,
    /// A `[` was there at all (the call is `reordered`).
    bracket: bool,
    /// False for an index that is malformed or out of range (`goodArgNum`).
    good: bool,
}

/// fmt's `argNumber`/`parseArgNumber`: an optional `[n]` (1-based) at `i`.
fn arg_number(fmt: &[u8], i: usize, arg: usize, nargs: usize) -> ArgIndex {
    let none = ArgIndex {
        arg,
        end: i,
        found: false,
        bracket: false,
        good: true,
    };
    if i >= fmt.len() || fmt[i] != b'[' {
        return none;
    }
    let rest = &fmt[i..];
    let bad = |width: usize, ok: bool| ArgIndex {
        arg,
        end: i + width,
        found: ok,
        bracket: true,
        good: false,
    };
    // There must be at least 3 bytes: [n].
    if rest.len() < 3 {
        return bad(1, false);
    }
    let Some(close) = rest.iter().position(|&b| b == b']') else {
        return bad(1, false);
    };
    let (n, ok) = match parse_num(&rest[1..close]) {
        Num::Value(n, len) if len == close - 1 => (n, true),
        _ => (0, false),
    };
    if !ok {
        return bad(close + 1, false);
    }
    match n.checked_sub(1) {
        Some(index) if index < nargs => ArgIndex {
            arg: index,
            end: i + close + 1,
            found: true,
            bracket: true,
            good: true,
        },
        _ => bad(close + 1, true),
    }
}

/// A width or precision as Go's `parsenum` (fmt/print.go) reads it.
enum Num {
    /// The value and how many digits it took.
    Value(usize, usize),
    Absent,
    /// A digit came while the value was already above 10^6 (`tooLarge`): parsenum then
    /// returns the end of the whole format string, so nothing after it is printed.
    Overflow,
}

fn parse_num(s: &[u8]) -> Num {
    let mut n: usize = 0;
    let mut len = 0;
    while len < s.len() && s[len].is_ascii_digit() {
        if n > 1_000_000 {
            return Num::Overflow;
        }
        n = n * 10 + (s[len] - b'0') as usize;
        len += 1;
    }
    if len == 0 {
        Num::Absent
    } else {
        Num::Value(n, len)
    }
}

fn push_char(out: &mut Vec<u8>, c: char) {
    let mut buf = [0u8; 4];
    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
}

fn lua_type_name(arg: &Arg<'_>) -> &'static str {
    match arg {
        Arg::Num(..) => "lua.LNumber",
        Arg::Str(_) => "lua.LString",
        Arg::Bool(_) => "lua.LBool",
        Arg::Nil => "*lua.LNilType",
        Arg::Other { go_type, .. } => go_type,
    }
}

fn is_integer(f: f64) -> bool {
    f.is_finite() && f == (go_float_to_int64(f) as f64)
}

/// One operand through Go's `printArg` with gopher's `Format` methods (value.go):
/// `%T` and `%p` are decided by fmt before any method; LNumber and LString format
/// themselves by re-formatting an int64/float64/string with the same flags; LBool, nil
/// and the other values print through `String()` for v/s/x/X/q and by reflection else.
fn format_arg(out: &mut Vec<u8>, arg: &Arg<'_>, verb: char, sp: &Spec) {
    if verb == 'T' {
        fmt_string(out, lua_type_name(arg).as_bytes(), 's', sp);
        return;
    }
    // `%p` (fmtPointer) and `%w` (only valid in Errorf) report a bad verb before any
    // Format method runs, showing the value by reflection.
    if verb == 'p' || verb == 'w' {
        match arg {
            Arg::Num(f, _) => {
                bad_verb_with(out, verb, "lua.LNumber", |b| fmt_float(b, *f, 'v', sp))
            }
            Arg::Str(s) => bad_verb_with(out, verb, "lua.LString", |b| fmt_string(b, s, 's', sp)),
            Arg::Bool(v) => bad_verb_with(out, verb, "lua.LBool", |b| fmt_bool(b, *v, sp)),
            Arg::Nil if verb == 'w' => out.extend_from_slice(b"%!w(*lua.LNilType=&{})"),
            // A pointer's `%p` is its address, which has no stable value to reproduce.
            Arg::Nil => out.extend_from_slice(b"0x0"),
            Arg::Other { text, .. } => out.extend_from_slice(text.as_bytes()),
        }
        return;
    }
    // For `v`, fmt turns `+` and `#` into plusV/sharpV: no sign, no alternate form (a
    // string under `%#v` is quoted, Go syntax).
    let vsp;
    let sp = if verb == 'v' && (sp.plus || sp.sharp) {
        vsp = Spec {
            plus: false,
            sharp: false,
            ..*sp
        };
        if sp.sharp {
            match arg {
                Arg::Str(s) => {
                    let body = quote(truncated(s, &vsp), false);
                    pad(out, &body, &vsp, vsp.zero);
                    return;
                }
                Arg::Nil => {
                    out.extend_from_slice(b"&lua.LNilType{}");
                    return;
                }
                // No String() under sharpV: the bool itself, padded, never truncated.
                Arg::Bool(b) => {
                    fmt_bool(out, *b, &vsp);
                    return;
                }
                _ => {}
            }
        }
        &vsp
    } else {
        sp
    };
    match arg {
        Arg::Num(f, text) => match verb {
            'q' | 's' => fmt_string(out, text, verb, sp),
            'b' | 'c' | 'd' | 'o' | 'x' | 'X' | 'U' => {
                fmt_int(out, go_float_to_int64(*f), verb, sp)
            }
            'e' | 'E' | 'f' | 'F' | 'g' | 'G' => fmt_float(out, *f, verb, sp),
            'i' => fmt_int(out, go_float_to_int64(*f), 'd', sp),
            _ if is_integer(*f) => fmt_int(out, go_float_to_int64(*f), verb, sp),
            _ => fmt_float(out, *f, verb, sp),
        },
        Arg::Str(s) => match verb {
            'd' | 'i' => {
                if parse_go_number(s).is_some() {
                    fmt_string(out, s, 's', sp)
                } else {
                    // gopher formats the failed parse result (0) here.
                    fmt_int(out, 0, 'd', sp)
                }
            }
            _ => fmt_string(out, s, verb, sp),
        },
        Arg::Bool(b) => {
            let text: &[u8] = if *b { b"true" } else { b"false" };
            match verb {
                'v' | 's' | 'x' | 'X' | 'q' => fmt_string(out, text, verb, sp),
                't' => fmt_bool(out, *b, sp),
                _ => bad_verb_with(out, verb, "lua.LBool", |o| fmt_bool(o, *b, sp)),
            }
        }
        Arg::Nil => match verb {
            'v' | 's' | 'x' | 'X' | 'q' => fmt_string(out, b"nil", verb, sp),
            // A pointer to an empty struct, printed by reflection, unpadded.
            _ => out.extend_from_slice(b"&{}"),
        },
        Arg::Other { go_type, text } => match verb {
            'v' | 's' | 'x' | 'X' | 'q' => fmt_string(out, text.as_bytes(), verb, sp),
            _ => bad_verb(out, verb, go_type, text.as_bytes()),
        },
    }
}

/// fmtBoolean: "true"/"false", padded (with zeros under `0`, as Go 1.19/1.20 pad).
fn fmt_bool(out: &mut Vec<u8>, b: bool, sp: &Spec) {
    pad(out, if b { b"true" } else { b"false" }, sp, sp.zero);
}

/// Go's badVerb: `%!verb(type=value)`, the value printed as `%v` with the same flags
/// (fmt keeps width, precision and `+` while it reports).
fn bad_verb_with(out: &mut Vec<u8>, verb: char, ty: &str, value: impl FnOnce(&mut Vec<u8>)) {
    out.extend_from_slice(b"%!");
    push_char(out, verb);
    out.push(b'(');
    out.extend_from_slice(ty.as_bytes());
    out.push(b'=');
    value(out);
    out.push(b')');
}

fn bad_verb(out: &mut Vec<u8>, verb: char, ty: &str, value: &[u8]) {
    out.extend_from_slice(b"%!");
    push_char(out, verb);
    out.push(b'(');
    out.extend_from_slice(ty.as_bytes());
    out.push(b'=');
    out.extend_from_slice(value);
    out.push(b')');
}

fn pad(out: &mut Vec<u8>, body: &[u8], sp: &Spec, zero: bool) {
    let width = sp.wid.unwrap_or(0);
    let n = rune_count(body);
    if n >= width {
        out.extend_from_slice(body);
        return;
    }
    let fill = if zero { b'0' } else { b' ' };
    if sp.minus {
        out.extend_from_slice(body);
        out.extend(std::iter::repeat_n(b' ', width - n));
    } else {
        out.extend(std::iter::repeat_n(fill, width - n));
        out.extend_from_slice(body);
    }
}

/// A Go string operand (non-string values only come here with the verbs strings accept).
fn fmt_string(out: &mut Vec<u8>, s: &[u8], verb: char, sp: &Spec) {
    match verb {
        's' | 'v' => {
            let body = match sp.prec {
                Some(p) => truncate_runes(s, p),
                None => s,
            };
            pad(out, body, sp, sp.zero);
        }
        'q' => {
            // fmtQ: the precision truncates first; `#` backquotes when Go's CanBackquote.
            let s = truncated(s, sp);
            let body = if sp.sharp && can_backquote(s) {
                let mut b = Vec::with_capacity(s.len() + 2);
                b.push(b'`');
                b.extend_from_slice(s);
                b.push(b'`');
                b
            } else {
                quote(s, sp.plus)
            };
            pad(out, &body, sp, sp.zero);
        }
        'x' | 'X' => {
            let body = match sp.prec {
                Some(p) => &s[..p.min(s.len())],
                None => s,
            };
            let digits: &[u8; 16] = if verb == 'x' {
                b"0123456789abcdef"
            } else {
                b"0123456789ABCDEF"
            };
            let mut hex = Vec::with_capacity(body.len() * 2);
            for (k, &b) in body.iter().enumerate() {
                if sp.space && k > 0 {
                    hex.push(b' ');
                }
                if sp.sharp && (k == 0 || sp.space) {
                    hex.extend_from_slice(if verb == 'x' { b"0x" } else { b"0X" });
                }
                hex.push(digits[(b >> 4) as usize]);
                hex.push(digits[(b & 15) as usize]);
            }
            pad(out, &hex, sp, sp.zero);
        }
        _ => bad_verb_with(out, verb, "string", |o| fmt_string(o, s, 's', sp)),
    }
}

/// The string cut to the precision in runes (fmt's truncateString).
fn truncated<'a>(s: &'a [u8], sp: &Spec) -> &'a [u8] {
    match sp.prec {
        Some(p) => truncate_runes(s, p),
        None => s,
    }
}

/// strconv.CanBackquote: one line of valid UTF-8 without backquotes, other control
/// characters than tab, or U+FEFF.
fn can_backquote(s: &[u8]) -> bool {
    let Ok(t) = std::str::from_utf8(s) else {
        return false;
    };
    t.chars()
        .all(|c| c != '`' && c != '\u{feff}' && (c == '\t' || !(c < ' ' || c == '\u{7f}')))
}

fn truncate_runes(s: &[u8], p: usize) -> &[u8] {
    let mut i = 0;
    let mut n = 0;
    while i < s.len() && n < p {
        i += decode_rune(&s[i..]).1;
        n += 1;
    }
    &s[..i]
}

fn is_printable(c: char) -> bool {
    !(c.is_control()
        || (c.is_whitespace() && c != ' ')
        || matches!(c, '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{2060}'..='\u{206f}' | '\u{feff}')
        || ('\u{e000}'..='\u{f8ff}').contains(&c)
        // Private use planes 15-16 and the noncharacters are not graphic either.
        || c >= '\u{f0000}'
        || ('\u{fdd0}'..='\u{fdef}').contains(&c)
        || (c as u32) & 0xfffe == 0xfffe)
}

/// Go's strconv.Quote (or QuoteToASCII with `+`).
fn quote(s: &[u8], ascii: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len() + 2);
    out.push(b'"');
    let mut i = 0;
    while i < s.len() {
        let (c, n) = decode_rune(&s[i..]);
        if c == '\u{fffd}' && n == 1 && !s[i..].starts_with("\u{fffd}".as_bytes()) {
            out.extend_from_slice(format!("\\x{:02x}", s[i]).as_bytes());
            i += 1;
            continue;
        }
        i += n;
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\u{7}' => out.extend_from_slice(b"\\a"),
            '\u{8}' => out.extend_from_slice(b"\\b"),
            '\u{c}' => out.extend_from_slice(b"\\f"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\r' => out.extend_from_slice(b"\\r"),
            '\t' => out.extend_from_slice(b"\\t"),
            '\u{b}' => out.extend_from_slice(b"\\v"),
            c if c.is_ascii() && (' '..='~').contains(&c) => out.push(c as u8),
            c if !c.is_ascii() && is_printable(c) && !ascii => push_char(&mut out, c),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.extend_from_slice(format!("\\x{:02x}", c as u32).as_bytes())
            }
            c if (c as u32) < 0x10000 => {
                out.extend_from_slice(format!("\\u{:04x}", c as u32).as_bytes())
            }
            c => out.extend_from_slice(format!("\\U{:08x}", c as u32).as_bytes()),
        }
    }
    out.push(b'"');
    out
}

fn fmt_int(out: &mut Vec<u8>, v: i64, verb: char, sp: &Spec) {
    let neg = v < 0;
    let mag = v.unsigned_abs();
    let mut digits: Vec<u8> = match verb {
        'd' | 'v' => mag.to_string().into_bytes(),
        'b' => format!("{mag:b}").into_bytes(),
        'o' => format!("{mag:o}").into_bytes(),
        'x' => format!("{mag:x}").into_bytes(),
        'X' => format!("{mag:X}").into_bytes(),
        'c' => {
            let c = if neg {
                None
            } else {
                u32::try_from(mag).ok().and_then(char::from_u32)
            };
            let mut body = Vec::new();
            push_char(&mut body, c.unwrap_or('\u{fffd}'));
            pad(out, &body, sp, sp.zero);
            return;
        }
        'U' => {
            // Go formats a negative int64 as its uint64 bits.
            // fmtUnicode: at least 4 hex digits, more when the precision asks.
            let digits = sp.prec.unwrap_or(0).max(4);
            let mut body = format!("U+{:0digits$X}", if neg { v as u64 } else { mag }).into_bytes();
            if sp.sharp
                && let Some(c) = u32::try_from(mag)
                    .ok()
                    .and_then(char::from_u32)
                    .filter(|_| !neg)
                && is_printable(c)
            {
                body.extend_from_slice(b" '");
                push_char(&mut body, c);
                body.push(b'\'');
            }
            pad(out, &body, sp, false);
            return;
        }
        _ => {
            bad_verb_with(out, verb, "int64", |o| fmt_int(o, v, 'd', sp));
            return;
        }
    };
    // fmtInteger: an explicit precision 0 prints the value 0 as padding alone (no sign,
    // no prefix, never zeros).
    if sp.prec == Some(0) && v == 0 {
        pad(out, b"", sp, false);
        return;
    }
    // Precision (or zero padding turned into precision) is the minimum digit count.
    let mut prec = sp.prec;
    if prec.is_none()
        && sp.zero
        && !sp.minus
        && let Some(w) = sp.wid
    {
        let signed = neg || sp.plus || sp.space;
        prec = Some(if signed { w.saturating_sub(1) } else { w });
    }
    if let Some(p) = prec {
        if p == 0 && v == 0 && sp.prec.is_some() {
            digits.clear();
        }
        if digits.len() < p {
            let mut z = vec![b'0'; p - digits.len()];
            z.extend_from_slice(&digits);
            digits = z;
        }
    }
    let mut body = Vec::with_capacity(digits.len() + 3);
    if neg {
        body.push(b'-');
    } else if sp.plus {
        body.push(b'+');
    } else if sp.space {
        body.push(b' ');
    }
    if sp.sharp {
        match verb {
            'o' if !digits.starts_with(b"0") => body.push(b'0'),
            'x' => body.extend_from_slice(b"0x"),
            'X' => body.extend_from_slice(b"0X"),
            'b' => body.extend_from_slice(b"0b"),
            _ => {}
        }
    }
    body.extend_from_slice(&digits);
    pad(out, &body, sp, false);
}

/// Decimal digits (no leading zeros, no trailing zeros) and decimal point position.
fn digits_of(sci: &str) -> (Vec<u8>, i32) {
    let (mant, exp) = sci.split_once('e').expect("scientific form");
    let exp: i32 = exp.parse().expect("exponent");
    let mut d: Vec<u8> = mant.bytes().filter(u8::is_ascii_digit).collect();
    while d.len() > 1 && d.last() == Some(&b'0') {
        d.pop();
    }
    if d == b"0" {
        return (Vec::new(), 0);
    }
    (d, exp + 1)
}

fn fmt_e(digits: &[u8], dp: i32, prec: usize, upper: bool) -> Vec<u8> {
    let mut s = Vec::new();
    s.push(*digits.first().unwrap_or(&b'0'));
    if prec > 0 {
        s.push(b'.');
        for k in 1..=prec {
            s.push(*digits.get(k).unwrap_or(&b'0'));
        }
    }
    s.push(if upper { b'E' } else { b'e' });
    let exp = if digits.is_empty() { 0 } else { dp - 1 };
    s.push(if exp < 0 { b'-' } else { b'+' });
    let e = exp.unsigned_abs();
    if e < 10 {
        s.push(b'0');
    }
    s.extend_from_slice(e.to_string().as_bytes());
    s
}

fn fmt_f(digits: &[u8], dp: i32, prec: usize) -> Vec<u8> {
    let mut s = Vec::new();
    if dp > 0 {
        for k in 0..dp as usize {
            s.push(*digits.get(k).unwrap_or(&b'0'));
        }
    } else {
        s.push(b'0');
    }
    if prec > 0 {
        s.push(b'.');
        for k in 0..prec as i32 {
            let idx = dp + k;
            s.push(if idx >= 0 {
                *digits.get(idx as usize).unwrap_or(&b'0')
            } else {
                b'0'
            });
        }
    }
    s
}

/// Go's %e/%f/%g body (no sign) for a finite non-negative value.
fn float_body(a: f64, verb: char, prec: Option<usize>) -> Vec<u8> {
    let upper = verb.is_ascii_uppercase();
    match verb.to_ascii_lowercase() {
        'f' => format!("{:.*}", prec.unwrap_or(6), a).into_bytes(),
        'e' => {
            let p = prec.unwrap_or(6);
            let (d, dp) = digits_of(&format!("{:.*e}", p, a));
            fmt_e(&d, dp, p, upper)
        }
        _ => {
            // %g: shortest digits without a precision, else that many significant digits.
            let (d, dp) = match prec {
                None => digits_of(&format!("{a:e}")),
                Some(p) => digits_of(&format!("{:.*e}", p.max(1) - 1, a)),
            };
            g_from_digits(&d, dp, prec, upper)
        }
    }
}

/// Go's `%g` body from a non-negative value's decimal digits (see [`digits_of`]): with no
/// precision, the digits are the shortest round-trip ones and `%e` is used from exponent 6
/// on (`strconv.FormatFloat(x, 'g', -1, _)`).
fn g_from_digits(d: &[u8], dp: i32, prec: Option<usize>, upper: bool) -> Vec<u8> {
    if d.is_empty() {
        return b"0".to_vec();
    }
    let nd = d.len() as i32;
    let mut p = match prec {
        None => nd,
        Some(p) => p.max(1) as i32,
    };
    let mut eprec = p;
    if eprec > nd && nd >= dp {
        eprec = nd;
    }
    if prec.is_none() {
        eprec = 6;
    }
    let exp = dp - 1;
    if exp < -4 || exp >= eprec {
        if p > nd {
            p = nd;
        }
        fmt_e(d, dp, (p - 1).max(0) as usize, upper)
    } else {
        if p > dp {
            p = nd;
        }
        fmt_f(d, dp, (p - dp).max(0) as usize)
    }
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 32)` of a finite value: shortest float32 digits.
pub(crate) fn go_shortest_g32(f: f32) -> String {
    let (d, dp) = digits_of(&format!("{:e}", f.abs()));
    let mut text = if f.is_sign_negative() {
        "-".to_string()
    } else {
        String::new()
    };
    text.push_str(std::str::from_utf8(&g_from_digits(&d, dp, None, false)).expect("ASCII"));
    text
}

fn fmt_float(out: &mut Vec<u8>, v: f64, verb: char, sp: &Spec) {
    let verb = if verb == 'v' { 'g' } else { verb };
    if !matches!(verb, 'e' | 'E' | 'f' | 'F' | 'g' | 'G') {
        bad_verb_with(out, verb, "float64", |o| fmt_float(o, v, 'v', sp));
        return;
    }
    if v.is_nan() || v.is_infinite() {
        let mut body = Vec::new();
        if v.is_nan() {
            if sp.plus {
                body.push(b'+');
            } else if sp.space {
                body.push(b' ');
            }
            body.extend_from_slice(b"NaN");
        } else {
            body.push(if v < 0.0 {
                b'-'
            } else if sp.space && !sp.plus {
                b' '
            } else {
                b'+'
            });
            body.extend_from_slice(b"Inf");
        }
        pad(out, &body, sp, false);
        return;
    }
    let neg = v.is_sign_negative();
    let mut num = float_body(v.abs(), verb, sp.prec);
    if sp.sharp {
        sharp_float(&mut num, verb, sp.prec);
    }
    let sign = if neg {
        Some(b'-')
    } else if sp.plus {
        Some(b'+')
    } else if sp.space {
        Some(b' ')
    } else {
        None
    };
    match sign {
        Some(s) => {
            let width = sp.wid.unwrap_or(0);
            if sp.zero && width > num.len() + 1 {
                out.push(s);
                out.extend(std::iter::repeat_n(b'0', width - num.len() - 1));
                out.extend_from_slice(&num);
            } else {
                let mut body = vec![s];
                body.extend_from_slice(&num);
                pad(out, &body, sp, sp.zero);
            }
        }
        None => pad(out, &num, sp, sp.zero),
    }
}

/// fmt.fmtFloat's `#` flag: always a decimal point, and for %g/%G the trailing zeros up
/// to the precision (6 when none is given) of significant digits.
fn sharp_float(num: &mut Vec<u8>, verb: char, prec: Option<usize>) {
    let mut digits: i64 = match verb {
        'g' | 'G' => prec.map_or(6, |p| p as i64),
        _ => 0,
    };
    let mut tail = Vec::new();
    let mut has_point = false;
    let mut saw_nonzero = false;
    let mut i = 0;
    while i < num.len() {
        match num[i] {
            b'.' => has_point = true,
            b'e' | b'E' => {
                tail = num.split_off(i);
                break;
            }
            d => {
                if d != b'0' {
                    saw_nonzero = true;
                }
                if saw_nonzero {
                    digits -= 1;
                }
            }
        }
        i += 1;
    }
    if !has_point {
        // A lone 0 counts once.
        if num.as_slice() == b"0" {
            digits -= 1;
        }
        num.push(b'.');
    }
    while digits > 0 {
        num.push(b'0');
        digits -= 1;
    }
    num.extend_from_slice(&tail);
}

/// gopher-lua's parseNumber: Go integer syntax (base prefixes, underscores), then Go floats;
/// the VM's own coercion of strings in arithmetic.
pub fn parse_go_number(s: &[u8]) -> Option<f64> {
    // lua51-sys/csrc/kruise_gopher.c: the patched VM's own number rules, so that library
    // functions and operators cannot disagree.
    unsafe extern "C" {
        /// String to number as arithmetic coerces it (gopher's parseNumber): 1 and
        /// `*result` on success.
        fn kruise_str2number(
            s: *const std::ffi::c_char,
            len: usize,
            result: *mut f64,
        ) -> std::ffi::c_int;
    }
    let mut result = 0.0;
    // SAFETY: reads the `s.len()` bytes of `s` and writes `result`.
    let ok = unsafe { kruise_str2number(s.as_ptr().cast(), s.len(), &mut result) };
    (ok != 0).then_some(result)
}

/// Trims what gopher trims (`strings.Trim(s, " \t\n")`).
pub fn trim_go(s: &[u8]) -> &[u8] {
    let is_ws = |b: &u8| matches!(b, b' ' | b'\t' | b'\n');
    let start = s.iter().position(|b| !is_ws(b)).unwrap_or(s.len());
    let end = s.iter().rposition(|b| !is_ws(b)).map_or(start, |e| e + 1);
    &s[start..end]
}

/// Go's strconv.ParseInt(s, base, 64). Base 0 reads prefixes and allows underscores.
pub fn parse_go_int(s: &str, base: u32) -> Option<i64> {
    let (neg, body) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let (base, digits, underscores) = if base == 0 {
        let lower = body.to_ascii_lowercase();
        if lower.starts_with("0x") {
            (16, &body[2..], true)
        } else if lower.starts_with("0b") {
            (2, &body[2..], true)
        } else if lower.starts_with("0o") {
            (8, &body[2..], true)
        } else if body.starts_with('0') && body.len() > 1 {
            (8, &body[1..], true)
        } else {
            (10, body, true)
        }
    } else if (2..=36).contains(&base) {
        (base, body, false)
    } else {
        return None;
    };
    if underscores && !underscore_ok(s) {
        return None;
    }
    let mut mag: u64 = 0;
    let mut any = false;
    for ch in digits.chars() {
        if ch == '_' && underscores {
            continue;
        }
        let d = ch.to_digit(base)?;
        mag = mag.checked_mul(base as u64)?.checked_add(d as u64)?;
        any = true;
    }
    if !any {
        return None;
    }
    if neg {
        if mag > 1u64 << 63 {
            return None;
        }
        Some((mag as i64).wrapping_neg())
    } else {
        i64::try_from(mag).ok()
    }
}

/// Go's rule: underscores only between digits, or between a base prefix and a digit.
fn underscore_ok(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if !b.is_empty() && (b[0] == b'-' || b[0] == b'+') {
        i = 1;
    }
    let mut saw = b'^';
    let mut hex = false;
    if b.len() >= i + 2 && b[i] == b'0' && matches!(b[i + 1] | 0x20, b'b' | b'o' | b'x') {
        hex = b[i + 1] | 0x20 == b'x';
        i += 2;
        saw = b'0';
    }
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_digit() || (hex && c.is_ascii_hexdigit()) {
            saw = b'0';
        } else if c == b'_' {
            if saw != b'0' {
                return false;
            }
            saw = b'_';
        } else {
            if saw == b'_' {
                return false;
            }
            saw = b'!';
        }
        i += 1;
    }
    saw != b'_'
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(fmt: &str, args: &[Arg<'_>]) -> String {
        String::from_utf8(sprintf(fmt.as_bytes(), args)).unwrap()
    }
    fn n(v: f64) -> Arg<'static> {
        Arg::Num(v, b"<num>")
    }

    #[test]
    fn vector_str_format() {
        assert_eq!(f("%d", &[n(42.0)]), "42");
        assert_eq!(f("%5.2f", &[n(1.23456)]), " 1.23");
        assert_eq!(f("%x", &[n(255.0)]), "ff");
        assert_eq!(f("%X", &[n(3735928559.0)]), "DEADBEEF");
        assert_eq!(f("%o", &[n(8.0)]), "10");
        assert_eq!(f("%05d", &[n(42.0)]), "00042");
        assert_eq!(f("%+d", &[n(42.0)]), "+42");
        assert_eq!(f("%.3s", &[Arg::Str(b"abcdef")]), "abc");
        assert_eq!(
            f("%5s|%-5s|", &[Arg::Str(b"ab"), Arg::Str(b"cd")]),
            "   ab|cd   |"
        );
        assert_eq!(f("%c%c", &[n(72.0), n(105.0)]), "Hi");
        assert_eq!(f("%e", &[n(12345.678)]), "1.234568e+04");
        assert_eq!(f("%g", &[n(1e20)]), "1e+20");
        assert_eq!(f("%g", &[n(0.1)]), "0.1");
        assert_eq!(f("%i", &[n(42.0)]), "42");
        assert_eq!(f("%%", &[]), "%");
        assert_eq!(f("%10.4f", &[n(-1.0 / 3.0)]), "   -0.3333");
        assert_eq!(f("%.14g", &[n(1.0 / 3.0)]), "0.33333333333333");
        assert_eq!(f("%d", &[Arg::Str(b"12")]), "12");
    }

    #[test]
    fn vector_quirks() {
        assert_eq!(f("%x", &[n(-1.0)]), "-1");
        assert_eq!(f("%X", &[n(-255.0)]), "-FF");
        assert_eq!(f("%s-%s", &[Arg::Str(b"x")]), "x-%!s(MISSING)");
        assert_eq!(f("%q", &[Arg::Str(b"a\"b\nc\0d")]), "\"a\\\"b\\nc\\x00d\"");
        assert_eq!(
            f("%q", &[Arg::Str(b"tab\there\r\\")]),
            "\"tab\\there\\r\\\\\""
        );
        assert_eq!(f("%q", &[Arg::Num(10.0, b"10")]), "\"10\"");
        assert_eq!(
            f(
                "%s %s %s",
                &[Arg::Num(1.0, b"1"), Arg::Bool(true), Arg::Nil]
            ),
            "1 true nil"
        );
        for (v, want) in [
            (3.7, "3"),
            (-3.7, "-3"),
            (2f64.powi(31), "2147483648"),
            (-0.5, "0"),
        ] {
            assert_eq!(f("%d", &[n(v)]), want);
        }
    }

    #[test]
    fn go_float_rules() {
        assert_eq!(f("%g", &[n(1.0 / 3.0)]), "0.3333333333333333");
        assert_eq!(f("%g", &[n(1234567.0)]), "1.234567e+06");
        assert_eq!(f("%g", &[n(123456.0)]), "123456");
        assert_eq!(f("%v", &[n(0.5)]), "0.5");
        assert_eq!(f("%v", &[n(5.0)]), "5");
        assert_eq!(f("%f", &[n(f64::INFINITY)]), "+Inf");
        assert_eq!(f("%f", &[n(f64::NAN)]), "NaN");
        assert_eq!(f("%08.3f", &[n(-1.23456)]), "-001.235");
        assert_eq!(f("%.0f", &[n(2.5)]), "2");
        assert_eq!(f("%.3g", &[n(100.0)]), "100");
        assert_eq!(f("%.2e", &[n(0.0)]), "0.00e+00");
    }

    #[test]
    fn go_diagnostics() {
        assert_eq!(f("%d", &[Arg::Bool(true)]), "%!d(lua.LBool=true)");
        assert_eq!(f("%t", &[n(5.0)]), "%!t(int64=5)");
        assert_eq!(f("%", &[]), "%!(NOVERB)");
        assert_eq!(f("%%%d", &[n(1.0), n(2.0)]), "%1%!(EXTRA lua.LNumber=2)");
        assert_eq!(f("%5.1s|", &[Arg::Str("é!".as_bytes())]), "    é|");
        assert_eq!(f("%c", &[n(233.0)]), "é");
        assert_eq!(f("%x", &[Arg::Str(b"hi")]), "6869");
    }

    #[test]
    fn go_number_parsing() {
        assert_eq!(parse_go_int("0x10", 0), Some(16));
        assert_eq!(parse_go_int("010", 0), Some(8));
        assert_eq!(parse_go_int("0b11", 0), Some(3));
        assert_eq!(parse_go_int("1_000", 0), Some(1000));
        assert_eq!(parse_go_int("1_000", 10), None);
        assert_eq!(parse_go_int("99999999999999999999", 10), None);
        assert_eq!(parse_go_int("-ff", 16), Some(-255));
        assert_eq!(parse_go_int("0", 0), Some(0));
        assert_eq!(parse_go_number(b"1e2"), Some(100.0));
        assert_eq!(parse_go_number(b"1.5e3"), Some(1500.0));
        assert_eq!(parse_go_number(b"5."), Some(5.0));
        assert_eq!(parse_go_number(b".5"), Some(0.5));
        assert_eq!(parse_go_number(b"0x1p4"), Some(16.0));
        assert_eq!(parse_go_number(b"1e999"), None);
        assert_eq!(parse_go_number(b"1.2.3"), None);
        assert_eq!(parse_go_number(b" 0x10 "), Some(16.0));
        assert_eq!(parse_go_number(b"+nan"), None);
        assert_eq!(parse_go_number(b"-nan"), None);
    }
}
