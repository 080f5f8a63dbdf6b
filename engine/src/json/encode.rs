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

use std::collections::HashSet;
use std::ffi::c_void;

use mlua::{Integer, Table, Value};

use super::EmptyTable;
use super::gotext::{self, Sink};
use super::parse::MAX_NESTING_DEPTH;

/// An open array or object: its entries in output order and how many are written.
enum Frame {
    Array {
        items: Vec<(Integer, Value)>,
        next: usize,
    },
    Object {
        members: Vec<(mlua::LuaString, Value)>,
        next: usize,
    },
}

struct Encoder {
    out: Vec<u8>,
    empty: EmptyTable,
    /// Every table entered so far, by identity (Go's `visited` map is never cleared).
    visited: HashSet<*const c_void>,
    stack: Vec<Frame>,
    /// Emptied entry vectors kept for reuse by later tables.
    spare_items: Vec<Vec<(Integer, Value)>>,
    spare_members: Vec<Vec<(mlua::LuaString, Value)>>,
}

/// Why a table's keys cannot be encoded.
enum KeyProblem {
    Mixed,
    Invalid(&'static str),
    Lua(mlua::Error),
}

pub(super) fn encode(value: &Value, empty: EmptyTable, out: Vec<u8>) -> Result<Vec<u8>, String> {
    let mut encoder = Encoder {
        out,
        empty,
        visited: HashSet::new(),
        stack: Vec::new(),
        spare_items: Vec::new(),
        spare_members: Vec::new(),
    };
    match encoder.run(value) {
        Ok(()) => Ok(encoder.out),
        Err(problem) => Err(encoder.message(&problem)),
    }
}

impl Encoder {
    fn run(&mut self, value: &Value) -> Result<(), String> {
        self.value(value)?;
        while let Some(frame) = self.stack.last_mut() {
            let out = &mut self.out;
            let item = match frame {
                Frame::Array { items, next } => match items.get_mut(*next) {
                    Some((_, item)) => {
                        if *next > 0 {
                            out.push(b',');
                        }
                        *next += 1;
                        std::mem::take(item)
                    }
                    None => {
                        out.push(b']');
                        self.close();
                        continue;
                    }
                },
                Frame::Object { members, next } => match members.get_mut(*next) {
                    Some((key, item)) => {
                        if *next > 0 {
                            out.push(b',');
                        }
                        *next += 1;
                        gotext::write_go_string(out, &key.as_bytes());
                        out.push(b':');
                        std::mem::take(item)
                    }
                    None => {
                        out.push(b'}');
                        self.close();
                        continue;
                    }
                },
            };
            self.value(&item)?;
        }
        Ok(())
    }

    /// Pops the finished innermost frame and keeps its vector for reuse.
    fn close(&mut self) {
        match self.stack.pop() {
            Some(Frame::Array { mut items, .. }) => {
                items.clear();
                self.spare_items.push(items);
            }
            Some(Frame::Object { mut members, .. }) => {
                members.clear();
                self.spare_members.push(members);
            }
            None => {}
        }
    }

    /// Writes a scalar, or opens a table (pushing a frame for a non-empty one).
    fn value(&mut self, value: &Value) -> Result<(), String> {
        match value {
            Value::Nil => self.out.put("null"),
            Value::Boolean(true) => self.out.put("true"),
            Value::Boolean(false) => self.out.put("false"),
            // mlua hands integral doubles over as Integer; Go formats every number as a float64.
            Value::Integer(i) => gotext::write_go_float(&mut self.out, *i as f64),
            Value::Number(n) if n.is_finite() => gotext::write_go_float(&mut self.out, *n),
            Value::Number(n) => {
                let shown = if n.is_nan() {
                    "NaN"
                } else if *n > 0.0 {
                    "+Inf"
                } else {
                    "-Inf"
                };
                return Err(format!("unsupported number {shown}"));
            }
            Value::String(s) => gotext::write_go_string(&mut self.out, &s.as_bytes()),
            Value::Table(t) => self.open_table(t)?,
            other => return Err(format!("a {} cannot be encoded", other.type_name())),
        }
        Ok(())
    }

    fn open_table(&mut self, table: &Table) -> Result<(), String> {
        if !self.visited.insert(table.to_pointer()) {
            return Err(
                "the same table is reached twice (a cycle or a shared table); copy shared tables"
                    .into(),
            );
        }
        let mut items = self.spare_items.pop().unwrap_or_default();
        let mut members = self.spare_members.pop().unwrap_or_default();
        let mut problem = None;
        let walked = table.for_each::<Value, Value>(|key, value| {
            let found = match key {
                Value::Integer(i) if i >= 1 => {
                    if !members.is_empty() {
                        KeyProblem::Mixed
                    } else {
                        items.push((i, value));
                        return Ok(());
                    }
                }
                Value::String(s) => {
                    if !items.is_empty() {
                        KeyProblem::Mixed
                    } else {
                        members.push((s, value));
                        return Ok(());
                    }
                }
                Value::Integer(0) => KeyProblem::Invalid("key 0"),
                Value::Integer(_) => KeyProblem::Invalid("a negative key"),
                Value::Number(_) => KeyProblem::Invalid("a non-integer number key"),
                Value::Boolean(_) => KeyProblem::Invalid("a boolean key"),
                Value::Table(_) => KeyProblem::Invalid("a table key"),
                _ => KeyProblem::Invalid("a key that is neither a string nor a number"),
            };
            problem = Some(found);
            // Stop the walk; the reason is in `problem`.
            Err(mlua::Error::RuntimeError(String::new()))
        });
        if let (Err(e), None) = (walked, &problem) {
            problem = Some(KeyProblem::Lua(e));
        }
        let depth = self.stack.len() + 1;
        let result = match problem {
            Some(KeyProblem::Mixed) => Err("a table mixes number and string keys".to_string()),
            Some(KeyProblem::Invalid(what)) => Err(format!("a table has {what}")),
            Some(KeyProblem::Lua(e)) => Err(format!("cannot read a table: {e}")),
            None if depth > MAX_NESTING_DEPTH
                && !(items.is_empty() && members.is_empty() && self.empty == EmptyTable::Null) =>
            {
                Err(format!(
                    "tables are nested more than {MAX_NESTING_DEPTH} levels deep"
                ))
            }
            None if !items.is_empty() => {
                // Exactly 1..n (keys are distinct, so checking the largest suffices).
                let n = items.len() as Integer;
                if items.iter().any(|&(k, _)| k > n) {
                    Err("an array has a hole (its keys are not exactly 1..n)".to_string())
                } else {
                    if !items.is_sorted_by_key(|&(k, _)| k) {
                        items.sort_unstable_by_key(|&(k, _)| k);
                    }
                    self.out.push(b'[');
                    self.stack.push(Frame::Array { items, next: 0 });
                    self.spare_members.push(members);
                    return Ok(());
                }
            }
            None if !members.is_empty() => {
                // Go sorts map keys bytewise on the raw key bytes. (A key function cannot
                // return the borrowed bytes, hence the comparator.)
                #[allow(clippy::unnecessary_sort_by)]
                members.sort_unstable_by(|a, b| a.0.as_bytes().cmp(&b.0.as_bytes()));
                self.out.push(b'{');
                self.stack.push(Frame::Object { members, next: 0 });
                self.spare_items.push(items);
                return Ok(());
            }
            None => {
                self.out.put(match self.empty {
                    EmptyTable::Null => "null",
                    EmptyTable::EmptyArray => "[]",
                });
                Ok(())
            }
        };
        items.clear();
        members.clear();
        self.spare_items.push(items);
        self.spare_members.push(members);
        result
    }

    /// The error text with the path of the failing value, e.g. `spec.http[1].route`.
    fn message(&self, problem: &str) -> String {
        let mut path = String::new();
        for frame in &self.stack {
            match frame {
                Frame::Array { items, next } => {
                    if let Some((k, _)) = items.get(next.wrapping_sub(1)) {
                        path.push_str(&format!("[{k}]"));
                    }
                }
                Frame::Object { members, next } => {
                    if let Some((k, _)) = members.get(next.wrapping_sub(1)) {
                        let bytes = k.as_bytes();
                        let key = String::from_utf8_lossy(&bytes);
                        let plain = !key.is_empty()
                            && !key.starts_with(|c: char| c.is_ascii_digit())
                            && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                        if plain {
                            if !path.is_empty() {
                                path.push('.');
                            }
                            path.push_str(&key);
                        } else {
                            path.push_str(&format!("[{key:?}]"));
                        }
                    }
                }
            }
        }
        if path.is_empty() {
            format!("cannot encode as JSON: {problem}")
        } else {
            format!("cannot encode as JSON at {path}: {problem}")
        }
    }
}
