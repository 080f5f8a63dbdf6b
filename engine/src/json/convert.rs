//! JSON → Lua as Kruise converts input (conformance 2.2): objects become string-keyed tables
//! without their `null` members, arrays are filled by appending and skip `null` items, and
//! every number becomes a double.

use mlua::{Lua, Table, Value};
use rand::SeedableRng;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;

use super::KeyOrder;
use crate::value::JsonValue;

/// Key order source for one conversion: sorted, or shuffled by a seeded generator.
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

/// A JSON number as the Lua double Go hands over (`int64` → `float64` rounds to nearest).
fn number(value: &JsonValue) -> Option<f64> {
    match value {
        JsonValue::Int(i) => Some(*i as f64),
        JsonValue::Float(f) => Some(*f),
        _ => None,
    }
}

fn scalar(lua: &Lua, value: &JsonValue) -> mlua::Result<Value> {
    Ok(match value {
        JsonValue::Null => Value::Nil,
        JsonValue::Bool(b) => Value::Boolean(*b),
        JsonValue::String(s) => Value::String(lua.create_string(s)?),
        other => Value::Number(number(other).unwrap_or(0.0)),
    })
}

/// Converts `value`, walking containers with an explicit stack (input can be deep).
pub(super) fn to_lua(lua: &Lua, value: &JsonValue, orderer: &mut Orderer) -> mlua::Result<Value> {
    // Each open table with its pending children; children are set once converted.
    struct Open<'a> {
        table: Table,
        /// (key, child) pairs left to convert.
        pending: std::vec::IntoIter<(Key<'a>, &'a JsonValue)>,
        /// The key the child being converted goes under.
        current: Option<Key<'a>>,
    }

    fn children<'a>(value: &'a JsonValue, orderer: &mut Orderer) -> Vec<(Key<'a>, &'a JsonValue)> {
        match value {
            JsonValue::Array(items) => items
                .iter()
                .filter(|v| **v != JsonValue::Null)
                .enumerate()
                .map(|(i, v)| (Key::Index(i + 1), v))
                .collect(),
            JsonValue::Object(members) => {
                let mut list: Vec<(Key<'a>, &'a JsonValue)> = members
                    .iter()
                    .filter(|(_, v)| **v != JsonValue::Null)
                    .map(|(k, v)| (Key::Name(k.as_str()), v))
                    .collect();
                if let Orderer::Shuffled(rng) = orderer {
                    list.shuffle(rng);
                }
                list
            }
            _ => Vec::new(),
        }
    }

    fn new_table<'a>(
        lua: &Lua,
        value: &'a JsonValue,
        orderer: &mut Orderer,
    ) -> mlua::Result<Open<'a>> {
        let list = children(value, orderer);
        let table = match value {
            JsonValue::Array(_) => lua.create_table_with_capacity(list.len(), 0)?,
            _ => lua.create_table_with_capacity(0, list.len())?,
        };
        Ok(Open {
            table,
            pending: list.into_iter(),
            current: None,
        })
    }

    if !matches!(value, JsonValue::Array(_) | JsonValue::Object(_)) {
        return scalar(lua, value);
    }
    let mut stack = vec![new_table(lua, value, orderer)?];
    loop {
        let top = stack
            .last_mut()
            .expect("the stack holds the root until it is returned");
        match top.pending.next() {
            Some((key, child)) => {
                if matches!(child, JsonValue::Array(_) | JsonValue::Object(_)) {
                    top.current = Some(key);
                    let opened = new_table(lua, child, orderer)?;
                    stack.push(opened);
                } else {
                    let v = scalar(lua, child)?;
                    store(&top.table, key, v)?;
                }
            }
            None => {
                let done = stack.pop().expect("non-empty");
                match stack.last_mut() {
                    None => return Ok(Value::Table(done.table)),
                    Some(parent) => {
                        let key = parent.current.take().expect("a child was being converted");
                        store(&parent.table, key, Value::Table(done.table))?;
                    }
                }
            }
        }
    }
}

/// Where a converted child goes: an array position (nulls already skipped) or a member name.
#[derive(Clone, Copy)]
enum Key<'a> {
    Index(usize),
    Name(&'a str),
}

/// Sets `t[key] = v` raw (the table is new and has no metatable).
fn store(table: &Table, key: Key<'_>, value: Value) -> mlua::Result<()> {
    match key {
        Key::Index(i) => table.raw_set(i, value),
        Key::Name(k) => table.raw_set(k, value),
    }
}
