//! gopher-lua's string library: byte/sub index rules, find/match/gmatch/gsub over the
//! gopher pattern matcher, Go-`fmt` `format`, Unicode-aware `upper`/`lower`, a `rep` that
//! cannot exhaust the process, and a `dump` that refuses as gopher's does.

use std::ffi::c_int;

use mlua::ffi;

use super::capi::{
    Poll, R, Raise, STRING_LIMIT, State, check_bytes, check_int, lua_fns, opt_int, push_bytes,
    to_bytes, type_error,
};
use super::pattern::{Cap, Finder, Match, PatError, Pattern, go_bytes_capacity};
use crate::go::{self, fmt::Arg};

lua_fns! {
    lua_byte => byte_imp,
    lua_char => char_imp,
    lua_dump => dump_imp,
    lua_find => find_imp,
    lua_format => format_imp,
    lua_gsub => gsub_imp,
    lua_len => len_imp,
    lua_lower => lower_imp,
    lua_match => match_imp,
    lua_rep => rep_imp,
    lua_reverse => reverse_imp,
    lua_sub => sub_imp,
    lua_upper => upper_imp,
    lua_gmatch => gmatch_imp,
    lua_gmatch_iter => gmatch_iter_imp,
    lua_gettable_helper => gettable_helper_imp,
}

pub(super) unsafe fn install(l: State, t: c_int) {
    unsafe {
        for (name, f) in [
            (c"byte", lua_byte as ffi::lua_CFunction),
            (c"char", lua_char),
            (c"dump", lua_dump),
            (c"find", lua_find),
            (c"format", lua_format),
            (c"gsub", lua_gsub),
            (c"len", lua_len),
            (c"lower", lua_lower),
            (c"match", lua_match),
            (c"rep", lua_rep),
            (c"reverse", lua_reverse),
            (c"sub", lua_sub),
            (c"upper", lua_upper),
            (c"gmatch", lua_gmatch),
            (c"gfind", lua_gmatch),
        ] {
            super::capi::set_fn(l, t, name, f);
        }
    }
}

fn pat_error(e: PatError) -> Raise {
    match e {
        PatError::Lua(m) => Raise::Msg(m),
        PatError::Panic(m) => Raise::Raw(m),
        PatError::Budget => Raise::Msg("timeout: pattern matching took too long".into()),
    }
}

/// gopher's luaIndex2StringIndex: Lua index to a 0-based byte offset, in Go's wrapping
/// int arithmetic (`int(1/0)` is MinInt64, minus one is MaxInt64: past any end).
fn str_index(len: usize, i: i64, start: bool) -> usize {
    let l = len as i64;
    let mut i = i;
    if start && i != 0 {
        i = i.wrapping_sub(1);
    }
    if i < 0 {
        i = l.wrapping_add(i).wrapping_add(1);
    }
    i = i.max(0);
    if !start && i > l {
        i = l;
    }
    i as usize
}

unsafe fn len_imp(l: State) -> R<c_int> {
    unsafe {
        let s = check_bytes(l, 1, "len")?;
        ffi::lua_pushnumber(l, s.len() as f64);
        Ok(1)
    }
}

unsafe fn sub_imp(l: State) -> R<c_int> {
    unsafe {
        let s = check_bytes(l, 1, "sub")?;
        let start = str_index(s.len(), check_int(l, 2, "sub")?, true);
        let end = str_index(s.len(), opt_int(l, 3, -1, "sub")?, false);
        if start >= s.len() || end < start {
            push_bytes(l, b"");
        } else {
            push_bytes(l, &s[start..end]);
        }
        Ok(1)
    }
}

unsafe fn byte_imp(l: State) -> R<c_int> {
    unsafe {
        let s = check_bytes(l, 1, "byte")?;
        let n = s.len() as i64;
        // Go int arithmetic wraps (strByte).
        let mut start = opt_int(l, 2, 1, "byte")?.wrapping_sub(1);
        let mut end = opt_int(l, 3, -1, "byte")?;
        if start < 0 {
            start = n.wrapping_add(start).wrapping_add(1);
        }
        if end < 0 {
            end = n.wrapping_add(end).wrapping_add(1);
        }
        if ffi::lua_gettop(l) == 2 {
            if start < 0 || start >= n {
                return Ok(0);
            }
            ffi::lua_pushnumber(l, s[start as usize] as f64);
            return Ok(1);
        }
        let start = start.max(0);
        let end = end.min(n);
        if end < 0 || end <= start || start >= n {
            return Ok(0);
        }
        if end - start >= super::capi::REGISTRY_SIZE {
            return Err(Raise::Msg("registry overflow".into()));
        }
        let count = (end - start) as c_int;
        ffi::luaL_checkstack(l, count, c"registry overflow".as_ptr());
        for &b in &s[start as usize..end as usize] {
            ffi::lua_pushnumber(l, b as f64);
        }
        Ok(count)
    }
}

unsafe fn char_imp(l: State) -> R<c_int> {
    unsafe {
        let n = ffi::lua_gettop(l);
        let mut out = Vec::with_capacity(n.max(0) as usize);
        for i in 1..=n {
            out.push(check_int(l, i, "char")? as u8);
        }
        push_bytes(l, &out);
        Ok(1)
    }
}

unsafe fn dump_imp(_l: State) -> R<c_int> {
    Err(Raise::Msg(
        "GopherLua does not support the string.dump".into(),
    ))
}

unsafe fn reverse_imp(l: State) -> R<c_int> {
    unsafe {
        let s = check_bytes(l, 1, "reverse")?;
        let r: Vec<u8> = s.iter().rev().copied().collect();
        push_bytes(l, &r);
        Ok(1)
    }
}

/// `rep(s, n)`: n <= 0 gives "". The result is built in Lua memory, so the VM's memory cap
/// applies, and sizes beyond any cap fail before allocating.
unsafe fn rep_imp(l: State) -> R<c_int> {
    unsafe {
        let s = check_bytes(l, 1, "rep")?;
        let n = check_int(l, 2, "rep")?;
        if n <= 0 || s.is_empty() {
            push_bytes(l, b"");
            return Ok(1);
        }
        // Go's strings.Repeat panics (a catchable error in gopher) when len*n overflows an
        // int, and make() when the size is past amd64's 2^48-byte address space; smaller
        // sizes that no memory holds end the run here (Go would die out of memory).
        let total = match (s.len() as i64).checked_mul(n) {
            Some(total) => total,
            None => return Err(Raise::Raw("strings: Repeat count causes overflow".into())),
        };
        if total > 1 << 48 {
            return Err(Raise::Raw(
                "runtime error: makeslice: cap out of range".into(),
            ));
        }
        if total > STRING_LIMIT as i64 {
            return Err(super::capi::too_large(l));
        }
        let mut b: ffi::luaL_Buffer = std::mem::zeroed();
        ffi::luaL_buffinit(l, &mut b);
        for _ in 0..n {
            ffi::luaL_addlstring(&mut b, s.as_ptr().cast(), s.len());
        }
        ffi::luaL_pushresult(&mut b);
        Ok(1)
    }
}

/// Go's strings.ToUpper/ToLower: ASCII fast path, else per rune with simple case mapping;
/// invalid UTF-8 bytes become U+FFFD.
pub(crate) fn go_case(s: &[u8], upper: bool) -> Vec<u8> {
    if s.is_ascii() {
        return if upper {
            s.to_ascii_uppercase()
        } else {
            s.to_ascii_lowercase()
        };
    }
    let mut out = Vec::with_capacity(s.len() + 4);
    for chunk in s.utf8_chunks() {
        for c in chunk.valid().chars() {
            let mapped = if upper {
                simple_upper(c)
            } else {
                simple_lower(c)
            };
            let mut buf = [0u8; 4];
            out.extend_from_slice(mapped.encode_utf8(&mut buf).as_bytes());
        }
        // Go maps each byte of an invalid run to its own U+FFFD (the run's later bytes are
        // continuation bytes, invalid on their own).
        for _ in chunk.invalid() {
            out.extend_from_slice("\u{fffd}".as_bytes());
        }
    }
    out
}

fn simple_upper(c: char) -> char {
    let mut it = c.to_uppercase();
    match (it.next(), it.next()) {
        (Some(u), None) => u,
        // Full mappings with several characters (ß → SS) have no simple mapping.
        _ => c,
    }
}

fn simple_lower(c: char) -> char {
    if c == '\u{130}' {
        return 'i';
    }
    let mut it = c.to_lowercase();
    match (it.next(), it.next()) {
        (Some(u), None) => u,
        _ => c,
    }
}

unsafe fn upper_imp(l: State) -> R<c_int> {
    unsafe {
        let s = check_bytes(l, 1, "upper")?;
        push_bytes(l, &go_case(s, true));
        Ok(1)
    }
}

unsafe fn lower_imp(l: State) -> R<c_int> {
    unsafe {
        let s = check_bytes(l, 1, "lower")?;
        push_bytes(l, &go_case(s, false));
        Ok(1)
    }
}

unsafe fn push_cap(l: State, s: &[u8], cap: Cap) {
    unsafe {
        match cap {
            Cap::Pos(p) => ffi::lua_pushnumber(l, p as f64),
            Cap::Range(a, b) => push_bytes(l, &s[a..b]),
        }
    }
}

unsafe fn first_match(l: State, pat: &Pattern, s: &[u8], offset: usize) -> R<Option<Match>> {
    let mut poll = Poll::new(l);
    Finder::new(pat, s, offset)
        .next_match(&mut || poll.keep_going())
        .map_err(pat_error)
}

unsafe fn find_imp(l: State) -> R<c_int> {
    unsafe {
        let s = check_bytes(l, 1, "find")?;
        let p = check_bytes(l, 2, "find")?;
        if p.is_empty() {
            ffi::lua_pushnumber(l, 1.0);
            ffi::lua_pushnumber(l, 0.0);
            return Ok(2);
        }
        let init = str_index(s.len(), opt_int(l, 3, 1, "find")?, true);
        let plain = ffi::lua_gettop(l) == 4 && ffi::lua_toboolean(l, 4) != 0;
        if plain {
            if init > s.len() {
                return Err(Raise::Raw(format!(
                    "runtime error: slice bounds out of range [{init}:{}]",
                    s.len()
                )));
            }
            return match s[init..].windows(p.len()).position(|w| w == p) {
                Some(pos) => {
                    ffi::lua_pushnumber(l, (init + pos + 1) as f64);
                    ffi::lua_pushnumber(l, (init + pos + p.len()) as f64);
                    Ok(2)
                }
                None => {
                    ffi::lua_pushnil(l);
                    Ok(1)
                }
            };
        }
        let pat = Pattern::parse(p).map_err(pat_error)?;
        match first_match(l, &pat, s, init)? {
            None => {
                ffi::lua_pushnil(l);
                Ok(1)
            }
            Some(m) => {
                ffi::luaL_checkstack(l, m.caps.len() as c_int + 2, c"too many captures".as_ptr());
                ffi::lua_pushnumber(l, (m.start + 1) as f64);
                ffi::lua_pushnumber(l, m.end as f64);
                for &c in &m.caps {
                    push_cap(l, s, c);
                }
                Ok(m.caps.len() as c_int + 2)
            }
        }
    }
}

/// Pushes what `match`/`gmatch` return for a match: the captures, or the whole match.
unsafe fn push_match_values(l: State, s: &[u8], m: &Match) -> c_int {
    unsafe {
        if m.caps.is_empty() {
            push_bytes(l, &s[m.start..m.end]);
            return 1;
        }
        ffi::luaL_checkstack(l, m.caps.len() as c_int, c"too many captures".as_ptr());
        for &c in &m.caps {
            push_cap(l, s, c);
        }
        m.caps.len() as c_int
    }
}

unsafe fn match_imp(l: State) -> R<c_int> {
    unsafe {
        let s = check_bytes(l, 1, "match")?;
        let p = check_bytes(l, 2, "match")?;
        let mut offset = opt_int(l, 3, 1, "match")?;
        if offset < 0 {
            offset = (s.len() as i64).saturating_add(offset).saturating_add(1);
        }
        let offset = offset.saturating_sub(1).max(0) as usize;
        let pat = Pattern::parse(p).map_err(pat_error)?;
        match first_match(l, &pat, s, offset)? {
            // No match returns no value at all (gopher pushes nil but returns 0).
            None => Ok(0),
            Some(m) => Ok(push_match_values(l, s, &m)),
        }
    }
}

/// `gmatch(s, p)`: gopher's strGmatch finds every match when it is called (so matching
/// errors and the time matching takes come then) and its iterator hands them out in turn.
/// The matches live in a Lua table (upvalue 1, so the VM's memory cap covers them): a
/// match with one value is stored as that value, one with several as a table of them.
/// Upvalue 2 counts the matches handed out.
unsafe fn gmatch_imp(l: State) -> R<c_int> {
    unsafe {
        let s = check_bytes(l, 1, "gmatch")?;
        let p = check_bytes(l, 2, "gmatch")?;
        let pat = Pattern::parse(p).map_err(pat_error)?;
        ffi::lua_settop(l, 2);
        ffi::lua_createtable(l, 0, 0);
        let all = ffi::lua_gettop(l);
        let mut finder = Finder::new(&pat, s, 0).with_capacity(go_bytes_capacity(s.len()));
        let mut poll = Poll::new(l);
        let mut count = 0;
        while let Some(m) = finder
            .next_match(&mut || poll.keep_going())
            .map_err(pat_error)?
        {
            count += 1;
            let n = push_match_values(l, s, &m);
            if n > 1 {
                ffi::lua_createtable(l, n, 0);
                ffi::lua_insert(l, -(n + 1));
                let t = ffi::lua_gettop(l) - n;
                for i in (1..=n).rev() {
                    ffi::lua_rawseti(l, t, i as _);
                }
            }
            ffi::lua_rawseti(l, all, count as _);
        }
        ffi::lua_pushnumber(l, 0.0);
        ffi::lua_pushcclosure(l, lua_gmatch_iter, 2);
        // gopher's strGmatch also returns its match state, a userdata.
        ffi::lua_newuserdata(l, 0);
        Ok(2)
    }
}

/// strGmatchIter: the next stored match's values, nothing after the last. Its state
/// argument (the userdata gmatch returned, which `for` passes) is required.
unsafe fn gmatch_iter_imp(l: State) -> R<c_int> {
    unsafe {
        if ffi::lua_type(l, 1) != ffi::LUA_TUSERDATA {
            return Err(type_error(l, 1, "gmatch", "userdata"));
        }
        let k = ffi::lua_tonumber(l, ffi::lua_upvalueindex(2)) + 1.0;
        ffi::lua_pushnumber(l, k);
        ffi::lua_replace(l, ffi::lua_upvalueindex(2));
        ffi::lua_rawgeti(l, ffi::lua_upvalueindex(1), k as _);
        match ffi::lua_type(l, -1) {
            ffi::LUA_TNIL => Ok(0),
            ffi::LUA_TTABLE => {
                let t = ffi::lua_gettop(l);
                let n = ffi::lua_objlen(l, t) as c_int;
                ffi::luaL_checkstack(l, n, c"too many captures".as_ptr());
                for i in 1..=n {
                    ffi::lua_rawgeti(l, t, i as _);
                }
                Ok(n)
            }
            _ => Ok(1),
        }
    }
}

/// Helper run under lua_pcall: pushes t[k] for (t, k), metamethods included.
unsafe fn gettable_helper_imp(l: State) -> R<c_int> {
    unsafe {
        ffi::lua_gettable(l, 1);
        Ok(1)
    }
}

/// Appends a replacement value from the top of the stack (gopher's LVAsString: strings and
/// numbers as text, other true values as ""), or the original text for nil/false. Pops it.
unsafe fn append_replacement(l: State, out: &mut Vec<u8>, original: &[u8]) {
    unsafe {
        match ffi::lua_type(l, -1) {
            ffi::LUA_TNIL => out.extend_from_slice(original),
            ffi::LUA_TBOOLEAN if ffi::lua_toboolean(l, -1) == 0 => out.extend_from_slice(original),
            ffi::LUA_TSTRING | ffi::LUA_TNUMBER => out.extend_from_slice(to_bytes(l, -1)),
            _ => {}
        }
        ffi::lua_pop(l, 1);
    }
}

/// Capture `%d` of a replacement string, with gopher's checks (`%1` without captures is
/// the whole match, a missing capture is an error).
fn template_capture(m: &Match, d: usize, s: &[u8], out: &mut Vec<u8>) -> R<()> {
    let idx = 2 * d;
    let cap_len = 2 + 2 * m.caps.len();
    if idx > 2 && idx >= cap_len {
        return Err(Raise::Msg("invalid capture index".into()));
    }
    let which = if idx >= cap_len && idx == 2 { 0 } else { d };
    match m.capture(which) {
        Cap::Pos(p) => out.extend_from_slice(p.to_string().as_bytes()),
        Cap::Range(a, b) => out.extend_from_slice(&s[a..b]),
    }
    Ok(())
}

fn expand_template(repl: &[u8], m: &Match, s: &[u8], out: &mut Vec<u8>) -> R<()> {
    let mut i = 0;
    while i < repl.len() {
        let c = repl[i];
        if c == b'%' && i + 1 < repl.len() {
            let d = repl[i + 1];
            if d == b'%' {
                out.push(b'%');
            } else if d.is_ascii_digit() {
                template_capture(m, (d - b'0') as usize, s, out)?;
            } else {
                out.push(b'%');
                out.push(d);
            }
            i += 2;
        } else {
            out.push(c);
            i += 1;
        }
    }
    Ok(())
}

unsafe fn gsub_imp(l: State) -> R<c_int> {
    unsafe {
        let s = check_bytes(l, 1, "gsub")?;
        let p = check_bytes(l, 2, "gsub")?;
        let kind = ffi::lua_type(l, 3);
        if !matches!(
            kind,
            ffi::LUA_TSTRING | ffi::LUA_TTABLE | ffi::LUA_TFUNCTION
        ) {
            // gopher's CheckTypes wording.
            return Err(type_error(l, 3, "gsub", "string or table or function"));
        }
        let limit = opt_int(l, 4, -1, "gsub")?;
        ffi::lua_settop(l, 3);
        ffi::luaL_checkstack(l, 40, c"too many captures".as_ptr());
        let pat = Pattern::parse(p).map_err(pat_error)?;
        // gopher collects every match first, then replaces.
        let mut matches = Vec::new();
        {
            let mut finder = Finder::new(&pat, s, 0);
            let mut poll = Poll::new(l);
            while let Some(attempt) = finder
                .attempt(&mut || poll.keep_going())
                .map_err(pat_error)?
            {
                matches.extend(attempt);
                if matches.len() as i64 == limit {
                    break;
                }
            }
        }
        if matches.is_empty() {
            ffi::lua_settop(l, 1);
            ffi::lua_pushnumber(l, 0.0);
            return Ok(2);
        }
        let mut out = Vec::with_capacity(s.len());
        let mut last = 0;
        for m in &matches {
            out.extend_from_slice(&s[last..m.start]);
            last = m.end;
            let original = &s[m.start..m.end];
            match kind {
                ffi::LUA_TSTRING => expand_template(to_bytes(l, 3), m, s, &mut out)?,
                ffi::LUA_TTABLE => {
                    ffi::lua_pushcfunction(l, lua_gettable_helper);
                    ffi::lua_pushvalue(l, 3);
                    push_cap(
                        l,
                        s,
                        if m.caps.is_empty() {
                            m.capture(0)
                        } else {
                            m.caps[0]
                        },
                    );
                    if ffi::lua_pcall(l, 2, 1, 0) != 0 {
                        return Err(Raise::Top);
                    }
                    append_replacement(l, &mut out, original);
                }
                _ => {
                    ffi::lua_pushvalue(l, 3);
                    let nargs = if m.caps.is_empty() {
                        push_bytes(l, original);
                        1
                    } else {
                        for &c in &m.caps {
                            push_cap(l, s, c);
                        }
                        m.caps.len() as c_int
                    };
                    if ffi::lua_pcall(l, nargs, 1, 0) != 0 {
                        return Err(Raise::Top);
                    }
                    append_replacement(l, &mut out, original);
                }
            }
            if out.len() > STRING_LIMIT {
                return Err(super::capi::too_large(l));
            }
        }
        out.extend_from_slice(&s[last..]);
        push_bytes(l, &out);
        ffi::lua_pushnumber(l, matches.len() as f64);
        Ok(2)
    }
}

unsafe fn format_imp(l: State) -> R<c_int> {
    unsafe {
        let fmt = check_bytes(l, 1, "format")?;
        let top = ffi::lua_gettop(l);
        ffi::luaL_checkstack(l, top + 4, c"too many arguments to format".as_ptr());
        let mut args = Vec::with_capacity(top.max(1) as usize - 1);
        for i in 2..=top {
            let arg = match ffi::lua_type(l, i) {
                ffi::LUA_TNUMBER => {
                    // The number's tostring text, through the VM's own conversion of a copy.
                    ffi::lua_pushvalue(l, i);
                    let text = to_bytes(l, -1);
                    Arg::Num(ffi::lua_tonumber(l, i), text)
                }
                ffi::LUA_TSTRING => Arg::Str(to_bytes(l, i)),
                ffi::LUA_TBOOLEAN => Arg::Bool(ffi::lua_toboolean(l, i) != 0),
                ffi::LUA_TNIL => Arg::Nil,
                t => {
                    let (go_type, kind) = match t {
                        ffi::LUA_TTABLE => ("*lua.LTable", "table"),
                        ffi::LUA_TFUNCTION => ("*lua.LFunction", "function"),
                        ffi::LUA_TTHREAD => ("*lua.LState", "thread"),
                        _ => ("*lua.LUserData", "userdata"),
                    };
                    Arg::Other {
                        go_type,
                        text: format!("{kind}: {:p}", ffi::lua_topointer(l, i)),
                    }
                }
            };
            args.push(arg);
        }
        let out = go::fmt::sprintf(fmt, &args);
        drop(args);
        if out.len() > STRING_LIMIT {
            return Err(super::capi::too_large(l));
        }
        push_bytes(l, &out);
        Ok(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_mapping_is_simple_and_unicode_aware() {
        assert_eq!(go_case("straße é".as_bytes(), true), "STRAßE É".as_bytes());
        assert_eq!(go_case("ÀÉ".as_bytes(), false), "àé".as_bytes());
        assert_eq!(go_case(b"abc-1", true), b"ABC-1");
        assert_eq!(go_case("İ".as_bytes(), false), b"i");
        assert_eq!(
            go_case(b"a\xffb\xc3", true),
            "A\u{fffd}B\u{fffd}".as_bytes()
        );
    }

    #[test]
    fn string_index_rules() {
        // sub('hello', i, j) cases from the str_sub vector.
        let sub = |i: i64, j: i64| {
            let (a, b) = (str_index(5, i, true), str_index(5, j, false));
            if a >= 5 || b < a {
                String::new()
            } else {
                "hello"[a..b].to_string()
            }
        };
        assert_eq!(sub(2, -2), "ell");
        assert_eq!(sub(-3, -1), "llo");
        assert_eq!(sub(0, -1), "hello");
        assert_eq!(sub(10, -1), "");
        assert_eq!(sub(3, 2), "");
        assert_eq!(sub(-100, 2), "he");
    }
}
