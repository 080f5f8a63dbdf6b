//! JSON → Lua as Kruise converts input (conformance 2.2): objects become string-keyed tables
//! without their `null` members, arrays are filled by appending and skip `null` items, and
//! every number becomes a double.
//!
//! The conversion builds the tables through the C API (sized up front, raw stores) in one
//! protected call, walking the input with an explicit stack (input can be deep).

use std::ffi::c_int;

use mlua::ffi;
use rand::SeedableRng;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;

use super::KeyOrder;
use super::tables::OpenTables;
use crate::value::JsonValue;
use crate::vm::State;

/// Key order source for one conversion: sorted, or shuffled by a seeded generator.
#[derive(Clone)]
pub(super) enum Orderer {
    Sorted,
    Shuffled(SmallRng),
}

impl Orderer {
    pub(super) fn new(order: KeyOrder) -> Self {
        match order {
            KeyOrder::Sorted => Orderer::Sorted,
            KeyOrder::Shuffled(seed) => Orderer::Shuffled(SmallRng::seed_from_u64(seed)),
        }
    }
}

/// The children of an open container still to convert.
enum Pending<'a> {
    /// Array items (nulls are skipped) and the index the next one gets.
    Items(std::slice::Iter<'a, JsonValue>, c_int),
    /// Object members in key order (nulls are skipped).
    Members(crate::value::map_iter::Iter<'a>),
    /// Object members (without nulls) in a shuffled order.
    Shuffled(std::vec::IntoIter<(&'a String, &'a JsonValue)>),
}

fn is_container(value: &JsonValue) -> bool {
    matches!(value, JsonValue::Array(_) | JsonValue::Object(_))
}

/// Pushes `value` converted to Lua (`nil` for a top-level `Null`; an `Int` above 2^53
/// rounds to the nearest double as Go's int64 → float64 does).
///
/// # Safety
/// `l` is valid with a free stack slot, in a protected call. A Lua error (memory) unwinds
/// past this function with `longjmp`: its work stack is then leaked, not freed.
pub(crate) unsafe fn push_json(l: State, value: &JsonValue, orderer: &mut Orderer) {
    // SAFETY: `l` is valid, in the protected call push_json requires, with the stack the walk keeps (see OpenTables).
    unsafe {
        if !is_container(value) {
            push_scalar(l, value);
            return;
        }
        let mut open = OpenTables::new(l);
        let mut pending = vec![open_container(l, value, orderer)];
        open.push(l);
        while let Some(top) = pending.last_mut() {
            let next = match top {
                Pending::Items(items, index) => items.find(|v| **v != JsonValue::Null).map(|v| {
                    *index += 1;
                    (Key::Index(*index), v)
                }),
                Pending::Members(members) => members
                    .find(|(_, v)| **v != JsonValue::Null)
                    .map(|(k, v)| (Key::Name(k), v)),
                Pending::Shuffled(members) => members.next().map(|(k, v)| (Key::Name(k), v)),
            };
            let Some((key, child)) = next else {
                pending.pop();
                if pending.is_empty() {
                    break;
                }
                open.pop(l);
                continue;
            };
            let parent = open.innermost(l);
            if is_container(child) {
                let children = open_container(l, child, orderer);
                // parent[key] = child, keeping the child on top as the innermost table.
                ffi::lua_pushvalue(l, -1);
                key.store(l, parent);
                open.release(l, parent);
                open.push(l);
                pending.push(children);
            } else {
                push_scalar(l, child);
                key.store(l, parent);
                open.release(l, parent);
            }
        }
        // The root stays on top; drop the helper slot below it.
        ffi::lua_replace(l, -2);
    }
}

/// Creates the (sized) table of a container on top of the stack and returns its children.
unsafe fn open_container<'a>(l: State, value: &'a JsonValue, orderer: &mut Orderer) -> Pending<'a> {
    // SAFETY: `l` is valid, in the protected call push_json requires, with the stack the walk keeps (see OpenTables).
    unsafe {
        match value {
            JsonValue::Array(items) => {
                let n = items.iter().filter(|v| **v != JsonValue::Null).count();
                ffi::lua_createtable(l, n.min(c_int::MAX as usize) as c_int, 0);
                Pending::Items(items.iter(), 0)
            }
            JsonValue::Object(members) => {
                let n = members.values().filter(|v| **v != JsonValue::Null).count();
                ffi::lua_createtable(l, 0, n.min(c_int::MAX as usize) as c_int);
                match orderer {
                    Orderer::Sorted => Pending::Members(members.iter()),
                    Orderer::Shuffled(rng) => {
                        let mut list: Vec<_> = members
                            .iter()
                            .filter(|(_, v)| **v != JsonValue::Null)
                            .collect();
                        list.shuffle(rng);
                        Pending::Shuffled(list.into_iter())
                    }
                }
            }
            _ => unreachable!("only containers are opened"),
        }
    }
}

/// Pushes a scalar (`nil` for `Null`).
unsafe fn push_scalar(l: State, value: &JsonValue) {
    // SAFETY: `l` is valid, in the protected call push_json requires, with the stack the walk keeps (see OpenTables).
    unsafe {
        match value {
            JsonValue::Null => ffi::lua_pushnil(l),
            JsonValue::Bool(b) => ffi::lua_pushboolean(l, *b as c_int),
            JsonValue::String(s) => {
                ffi::lua_pushlstring(l, s.as_ptr().cast(), s.len());
            }
            JsonValue::Int(i) => ffi::lua_pushnumber(l, *i as f64),
            JsonValue::Float(f) => ffi::lua_pushnumber(l, *f),
            JsonValue::Array(_) | JsonValue::Object(_) => ffi::lua_pushnil(l),
        }
    }
}

/// Where a converted child goes: an array position (nulls already skipped) or a member name.
#[derive(Clone, Copy)]
enum Key<'a> {
    Index(c_int),
    Name(&'a str),
}

impl Key<'_> {
    /// Pops the value on top of the stack into `table[self]` (raw).
    unsafe fn store(self, l: State, table: c_int) {
        // SAFETY: `l` is valid, in the protected call push_json requires, with the stack the walk keeps (see OpenTables).
        unsafe {
            match self {
                Key::Index(i) => ffi::lua_rawseti_(l, table, i),
                Key::Name(k) => {
                    ffi::lua_pushlstring(l, k.as_ptr().cast(), k.len());
                    ffi::lua_insert(l, -2);
                    ffi::lua_rawset(l, table);
                }
            }
        }
    }
}
