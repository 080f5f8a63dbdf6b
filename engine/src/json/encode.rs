//! Kruise's encoder for a returned Lua value (conformance 2.4), writing Go `encoding/json`
//! text into one buffer.
//!
//! Rules: an empty table is `null` or `[]` (by [`EmptyTable`]); a table whose keys are exactly
//! 1..n is an array; a table whose keys are all strings is an object with sorted keys;
//! anything else, non-finite numbers, functions/userdata/threads and any table reached twice
//! in one encoding are errors. Contents are read raw, so metatables play no part. Nesting
//! deeper than Go's 10000 levels is an error too: Go re-validates the encoder's output with
//! its scanner, which has that limit.
//!
//! The walk is iterative (a stack of open tables), so deep tables cannot overflow the stack.
//! It reads the tables through the C API (`lua_next`, raw gets) and runs no Lua code; it
//! allocates in the Lua state only for tables nested deeper than the Lua stack holds, and
//! holds the collector off meanwhile, so the key bytes it keeps stay valid throughout.

use std::collections::HashSet;
use std::ffi::{c_int, c_void};
use std::hash::{BuildHasherDefault, Hasher};

use mlua::ffi;

use super::EmptyTable;
use super::tables::OpenTables;
use crate::go::json_parse::MAX_NESTING_DEPTH;
use crate::go::{self, json_text::Sink};
use crate::vm::State;

unsafe extern "C-unwind" {
    // lua51-sys/csrc/kruise_host.c: the allocation total at which the next GC step runs.
    fn kruise_gc_threshold(state: State) -> usize;
    fn kruise_set_gc_threshold(state: State, threshold: usize);
    // Pushes the live string whose bytes `lua_tolstring` returned, without re-interning it.
    fn kruise_push_string_at(state: State, bytes: *const u8);
}

/// Hashes a table's address (aligned, so the low bits carry nothing) for the visited set.
#[derive(Default)]
struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_usize(&mut self, address: usize) {
        let h = (address as u64 >> 4).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.0 = h ^ (h >> 29);
    }
}

/// An open array (written up to item `next` of `len`) or object (keys
/// `keys[start..end]`, written up to `start + next`).
enum Frame {
    Array {
        len: i64,
        next: i64,
    },
    Object {
        start: usize,
        end: usize,
        next: usize,
    },
}

/// A member key's bytes inside its Lua string. Valid while the table keeps the key, which
/// holds during the encoding: no Lua code runs and the collector does not either.
#[derive(Clone, Copy)]
struct KeyBytes(*const u8, usize);

impl KeyBytes {
    fn bytes<'a>(self) -> &'a [u8] {
        // SAFETY: see the type's comment.
        unsafe { std::slice::from_raw_parts(self.0, self.1) }
    }
}

struct Encoder<'a> {
    l: State,
    out: &'a mut Vec<u8>,
    empty: EmptyTable,
    /// Every table entered so far, by identity (Go's `visited` map is never cleared).
    visited: HashSet<*const c_void, BuildHasherDefault<AddressHasher>>,
    frames: Vec<Frame>,
    /// Member keys of the open objects, each object's sorted in its range.
    keys: Vec<KeyBytes>,
    open: OpenTables,
    saw_empty: bool,
    /// The collector's threshold before the walk held it off (deep tables only).
    held_gc: Option<usize>,
}

/// Why a table's keys cannot be encoded.
enum KeyProblem {
    Mixed,
    Invalid(&'static str),
}

/// Encodes the value at `idx` of `l`'s stack into `out` with the rules of `empty`. On
/// success, tells whether any empty table was written (when none was, the other
/// [`EmptyTable`] rule gives the same text). On error, `out` holds a partial encoding and
/// the message names the path of the value that failed.
///
/// # Safety
/// `l` is valid, in a protected call (growing the stack may raise a memory error; the
/// buffers are then leaked, not freed), and `idx` is a valid index. The stack is left as
/// it was.
pub(crate) unsafe fn encode_at(
    l: State,
    idx: c_int,
    empty: EmptyTable,
    out: &mut Vec<u8>,
) -> Result<bool, String> {
    // SAFETY: `l` is valid, in the protected call encode_at requires, with the stack the walk keeps (see OpenTables).
    unsafe {
        let idx = ffi::lua_absindex(l, idx);
        ffi::luaL_checkstack(l, 4, c"no room to encode".as_ptr());
        let entry_top = ffi::lua_gettop(l);
        let mut encoder = Encoder {
            l,
            out,
            empty,
            visited: HashSet::default(),
            frames: Vec::new(),
            keys: Vec::new(),
            open: OpenTables::new(l),
            saw_empty: false,
            held_gc: None,
        };
        ffi::lua_pushvalue(l, idx);
        let result = match encoder.run() {
            Ok(()) => Ok(encoder.saw_empty),
            Err(problem) => Err(encoder.message(&problem)),
        };
        if let Some(threshold) = encoder.held_gc {
            kruise_set_gc_threshold(l, threshold);
        }
        ffi::lua_settop(l, entry_top);
        result
    }
}

impl Encoder<'_> {
    unsafe fn run(&mut self) -> Result<(), String> {
        // SAFETY: `l` is valid, in the protected call encode_at requires, with the stack the walk keeps (see OpenTables).
        unsafe {
            self.value_on_top()?;
            while let Some(frame) = self.frames.last_mut() {
                let table = self.open.innermost(self.l);
                match frame {
                    Frame::Array { len, next } if *next < *len => {
                        if *next > 0 {
                            self.out.push(b',');
                        }
                        *next += 1;
                        ffi::lua_rawgeti_(self.l, table, *next as c_int);
                    }
                    Frame::Object { start, end, next } if *start + *next < *end => {
                        if *next > 0 {
                            self.out.push(b',');
                        }
                        let key = self.keys[*start + *next];
                        *next += 1;
                        go::json_text::write_go_string(self.out, key.bytes());
                        self.out.push(b':');
                        // The key is alive in `table` (see KeyBytes): pushed as the
                        // same string, without hashing it again.
                        kruise_push_string_at(self.l, key.0);
                        ffi::lua_rawget(self.l, table);
                    }
                    _ => {
                        self.open.release(self.l, table);
                        self.close();
                        continue;
                    }
                }
                // The value is on top, `table` below it when `innermost` pushed it.
                self.open.release(self.l, table);
                self.value_on_top()?;
            }
            Ok(())
        }
    }

    /// Writes the frame's closing bracket and closes the innermost table.
    unsafe fn close(&mut self) {
        match self.frames.pop() {
            Some(Frame::Array { .. }) => self.out.push(b']'),
            Some(Frame::Object { start, .. }) => {
                self.out.push(b'}');
                self.keys.truncate(start);
            }
            None => {}
        }
        // SAFETY: `l` is valid, in the protected call encode_at requires, with the stack the walk keeps (see OpenTables).
        unsafe { self.open.pop(self.l) };
    }

    /// Writes the scalar on top of the stack and pops it, or opens the table there.
    unsafe fn value_on_top(&mut self) -> Result<(), String> {
        // SAFETY: `l` is valid, in the protected call encode_at requires, with the stack the walk keeps (see OpenTables).
        unsafe {
            let l = self.l;
            match ffi::lua_type(l, -1) {
                ffi::LUA_TTABLE => return self.open_table(),
                ffi::LUA_TNIL => self.out.put("null"),
                ffi::LUA_TBOOLEAN if ffi::lua_toboolean(l, -1) != 0 => self.out.put("true"),
                ffi::LUA_TBOOLEAN => self.out.put("false"),
                ffi::LUA_TNUMBER => {
                    let n = ffi::lua_tonumber(l, -1);
                    if !n.is_finite() {
                        return Err(format!(
                            "unsupported number {}",
                            go::json_text::go_special_float(n)
                        ));
                    }
                    go::json_text::write_go_float(self.out, n);
                }
                ffi::LUA_TSTRING => {
                    let mut len = 0;
                    let p = ffi::lua_tolstring(l, -1, &mut len);
                    go::json_text::write_go_string(
                        self.out,
                        std::slice::from_raw_parts(p.cast(), len),
                    );
                }
                t => {
                    let name = std::ffi::CStr::from_ptr(ffi::lua_typename(l, t)).to_string_lossy();
                    return Err(format!("a {name} cannot be encoded"));
                }
            }
            ffi::lua_pop(l, 1);
            Ok(())
        }
    }

    /// Reads the keys of the table on top of the stack and writes it: `null`/`[]` when
    /// empty, else its opening bracket (making it the innermost open table).
    unsafe fn open_table(&mut self) -> Result<(), String> {
        // SAFETY: `l` is valid, in the protected call encode_at requires, with the stack the walk keeps (see OpenTables).
        unsafe {
            let l = self.l;
            if !self.visited.insert(ffi::lua_topointer(l, -1)) {
                return Err(
                    "the same table is reached twice (a cycle or a shared table); copy shared tables"
                        .into(),
                );
            }
            let table = ffi::lua_gettop(l);
            let start = self.keys.len();
            let mut items: i64 = 0;
            let mut largest: i64 = 0;
            let mut problem = None;
            ffi::lua_pushnil(l);
            while ffi::lua_next(l, table) != 0 {
                let found = match ffi::lua_type(l, -2) {
                    ffi::LUA_TNUMBER => match integer_key(ffi::lua_tonumber(l, -2)) {
                        Some(i) if i >= 1 => {
                            if self.keys.len() > start {
                                KeyProblem::Mixed
                            } else {
                                items += 1;
                                largest = largest.max(i);
                                ffi::lua_pop(l, 1);
                                continue;
                            }
                        }
                        Some(0) => KeyProblem::Invalid("key 0"),
                        Some(_) => KeyProblem::Invalid("a negative key"),
                        None => KeyProblem::Invalid("a non-integer number key"),
                    },
                    ffi::LUA_TSTRING => {
                        if items > 0 {
                            KeyProblem::Mixed
                        } else {
                            let mut len = 0;
                            let p = ffi::lua_tolstring(l, -2, &mut len);
                            self.keys.push(KeyBytes(p.cast(), len));
                            ffi::lua_pop(l, 1);
                            continue;
                        }
                    }
                    ffi::LUA_TBOOLEAN => KeyProblem::Invalid("a boolean key"),
                    ffi::LUA_TTABLE => KeyProblem::Invalid("a table key"),
                    _ => KeyProblem::Invalid("a key that is neither a string nor a number"),
                };
                problem = Some(found);
                ffi::lua_pop(l, 2);
                break;
            }
            let members = self.keys.len() - start;
            let is_empty = items == 0 && members == 0;
            let result = match problem {
                Some(KeyProblem::Mixed) => Err("a table mixes number and string keys".to_string()),
                Some(KeyProblem::Invalid(what)) => Err(format!("a table has {what}")),
                None if self.frames.len() + 1 > MAX_NESTING_DEPTH
                    && !(is_empty && self.empty == EmptyTable::Null) =>
                {
                    Err(format!(
                        "tables are nested more than {MAX_NESTING_DEPTH} levels deep"
                    ))
                }
                // Distinct keys, all in 1..n: exactly 1..n.
                None if items > 0 && largest > items => {
                    Err("an array has a hole (its keys are not exactly 1..n)".to_string())
                }
                None if items > 0 => {
                    self.out.push(b'[');
                    self.push_frame(Frame::Array {
                        len: items,
                        next: 0,
                    });
                    return Ok(());
                }
                None if members > 0 => {
                    // Go sorts map keys bytewise on the raw key bytes.
                    self.keys[start..].sort_unstable_by(|a, b| a.bytes().cmp(b.bytes()));
                    self.out.push(b'{');
                    self.push_frame(Frame::Object {
                        start,
                        end: self.keys.len(),
                        next: 0,
                    });
                    return Ok(());
                }
                None => {
                    self.saw_empty = true;
                    self.out.put(match self.empty {
                        EmptyTable::Null => "null",
                        EmptyTable::EmptyArray => "[]",
                    });
                    ffi::lua_pop(l, 1);
                    return Ok(());
                }
            };
            self.keys.truncate(start);
            result
        }
    }

    /// Makes the table on top of the stack the innermost open one, under `frame`.
    unsafe fn push_frame(&mut self, frame: Frame) {
        // SAFETY: `l` is valid, in the protected call encode_at requires, with the stack the walk keeps (see OpenTables).
        unsafe {
            if self.open.next_is_deep() && self.held_gc.is_none() {
                // The helper table grows from here on: no collection step (which could run
                // finalizers, i.e. Lua code) until the walk ends.
                self.held_gc = Some(kruise_gc_threshold(self.l));
                kruise_set_gc_threshold(self.l, usize::MAX - 2);
            }
            self.open.push(self.l);
        }
        self.frames.push(frame);
    }

    /// The error text with the path of the failing value, e.g. `spec.http[1].route`. A path
    /// deeper than [`PATH_ENDS_KEPT`] levels at each end keeps only its ends (a 10,000-deep
    /// result would otherwise give a 60 KB message), and long keys are cut.
    fn message(&self, problem: &str) -> String {
        let mut segments: Vec<String> = Vec::new();
        for frame in &self.frames {
            match *frame {
                Frame::Array { next, .. } => {
                    if next > 0 {
                        segments.push(format!("[{next}]"));
                    }
                }
                Frame::Object { start, next, .. } => {
                    if next > 0 {
                        let key = String::from_utf8_lossy(self.keys[start + next - 1].bytes());
                        let key = shorten_key(&key);
                        let plain = !key.is_empty()
                            && !key.starts_with(|c: char| c.is_ascii_digit())
                            && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                        if plain {
                            segments.push(format!(".{key}"));
                        } else {
                            segments.push(format!("[{key:?}]"));
                        }
                    }
                }
            }
        }
        if segments.is_empty() {
            return format!("cannot encode as JSON: {problem}");
        }
        let path = if segments.len() > 2 * PATH_ENDS_KEPT {
            let hidden = segments.len() - 2 * PATH_ENDS_KEPT;
            format!(
                "{} …({hidden} levels)… {}",
                segments[..PATH_ENDS_KEPT].concat(),
                segments[segments.len() - PATH_ENDS_KEPT..]
                    .concat()
                    .trim_start_matches('.')
            )
        } else {
            segments.concat()
        };
        let path = path.strip_prefix('.').unwrap_or(&path);
        format!("cannot encode as JSON at {path}: {problem}")
    }
}

/// How many levels an encode error's path keeps at each end when it is longer.
pub(crate) const PATH_ENDS_KEPT: usize = 16;

/// A key as an error path shows it: at most 64 chars, the rest replaced by `…`.
fn shorten_key(key: &str) -> std::borrow::Cow<'_, str> {
    const MAX: usize = 64;
    match key.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &key[..cut]).into(),
        None => key.into(),
    }
}

/// A number key as an integer when it is one exactly within i64 (as mlua reads keys: `-0`
/// and 2^63 are not), else `None`.
fn integer_key(n: f64) -> Option<i64> {
    if (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&n) {
        let i = n as i64;
        ((i as f64).to_bits() == n.to_bits()).then_some(i)
    } else {
        None
    }
}

/// Writes a scalar that has no Lua state behind it (nil, boolean, number).
pub(super) fn encode_scalar(value: &mlua::Value, out: &mut Vec<u8>) -> Result<(), String> {
    match value {
        mlua::Value::Nil => out.put("null"),
        mlua::Value::Boolean(true) => out.put("true"),
        mlua::Value::Boolean(false) => out.put("false"),
        mlua::Value::Integer(i) => go::json_text::write_go_float(out, *i as f64),
        mlua::Value::Number(n) if n.is_finite() => go::json_text::write_go_float(out, *n),
        mlua::Value::Number(n) => {
            return Err(format!(
                "cannot encode as JSON: unsupported number {}",
                go::json_text::go_special_float(*n)
            ));
        }
        other => {
            return Err(format!(
                "cannot encode as JSON: a {} cannot be encoded",
                other.type_name()
            ));
        }
    }
    Ok(())
}
