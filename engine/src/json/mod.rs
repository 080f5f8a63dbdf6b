//! Lua ⇄ JSON as Kruise does it: the encoder for returned tables (2.4), the `json` module,
//! input conversion (2.2) and decoding the encoded result into its Go types (2.5, 2.6, 2.8).
//!
//! The controller (2.5) and the unit-test harness (2.6) share every step here; they differ only
//! in the [`EmptyTable`] passed to [`encode_lua`].

mod convert;
pub(crate) mod encode;
mod module;
mod result;
mod tables;

use std::collections::BTreeMap;
use std::ffi::c_int;

use mlua::{Lua, Value};

pub(crate) use result::{field_name_matches, parts_to_canonical};

use crate::luadata::Data;
use crate::value::JsonValue;
use crate::vm::State;

/// How an empty table encodes: `null` (controller, `json.encode`) or `[]` (the unit-test harness).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmptyTable {
    Null,
    EmptyArray,
}

/// Insertion order of object keys when converting input to Lua tables. Go's map order is
/// random; `Sorted` is the deterministic default, `Shuffled(seed)` reproduces the randomness.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyOrder {
    Sorted,
    Shuffled(u64),
}

/// Encodes a Lua value with Kruise's encoder (2.4). Err is the encode error message, naming
/// the path of the value that failed (e.g. `spec.http[1].route`, Lua indices).
pub fn encode_lua(value: &Value, empty: EmptyTable) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    encode_lua_into(value, empty, &mut out)?;
    Ok(out)
}

/// Like [`encode_lua`], appending to `out` (reuse one buffer across encodings). On error `out`
/// holds a partial encoding.
pub fn encode_lua_into(value: &Value, empty: EmptyTable, out: &mut Vec<u8>) -> Result<(), String> {
    let Some(lua) = value.weak_lua().map(mlua::WeakLua::upgrade) else {
        return encode::encode_scalar(value, out);
    };
    let mut result = Ok(false);
    // SAFETY: exec_raw makes a protected call with the value as argument 1.
    let called =
        unsafe { lua.exec_raw::<()>(value, |l| result = json_encode_at(l, 1, empty, out)) };
    called.map_err(|e| format!("cannot encode as JSON: {e}"))?;
    result.map(|_| ())
}

/// Encodes the value at `idx` of a raw state's stack into `out` (see [`encode_lua`]); Ok
/// tells whether an empty table was written (else both [`EmptyTable`] rules agree).
///
/// # Safety
/// `l` is valid, in a protected call, and `idx` a valid index; the stack is left as it was.
pub(crate) unsafe fn encode_at(
    l: State,
    idx: c_int,
    empty: EmptyTable,
    out: &mut Vec<u8>,
) -> Result<bool, String> {
    unsafe { json_encode_at(l, idx, empty, out) }
}

/// [`encode::encode_at`] with our wording of the error (naming its path).
unsafe fn json_encode_at(
    l: State,
    idx: c_int,
    empty: EmptyTable,
    out: &mut Vec<u8>,
) -> Result<bool, String> {
    unsafe { encode::encode_at(l, idx, empty, out).map_err(|e| e.message) }
}

/// Converts a JSON value to Lua as 2.2 says (null members absent, null array items dropped,
/// numbers as doubles; an `Int` above 2^53 rounds to the nearest double), inserting object
/// keys in `order`. A top-level `Null` gives `nil`.
pub fn json_to_lua(lua: &Lua, value: &JsonValue, order: KeyOrder) -> mlua::Result<Value> {
    // Scalars are built here: read back from the stack, a number would become an Integer.
    match value {
        JsonValue::Null => return Ok(Value::Nil),
        JsonValue::Bool(b) => return Ok(Value::Boolean(*b)),
        JsonValue::Int(i) => return Ok(Value::Number(*i as f64)),
        JsonValue::Float(f) => return Ok(Value::Number(*f)),
        JsonValue::String(s) => return Ok(Value::String(lua.create_string(s)?)),
        JsonValue::Array(_) | JsonValue::Object(_) => {}
    }
    let mut orderer = convert::Orderer::new(order);
    // SAFETY: exec_raw makes a protected call; push_json leaves exactly the value pushed.
    unsafe { lua.exec_raw::<Value>((), |l| convert::push_json(l, value, &mut orderer)) }
}

/// Pushes `value` converted as [`json_to_lua`] does onto a raw state's stack.
///
/// # Safety
/// `l` is valid with a free stack slot, in a protected call.
pub(crate) unsafe fn push_json(l: State, value: &JsonValue, order: KeyOrder) {
    unsafe { convert::push_json(l, value, &mut convert::Orderer::new(order)) }
}

/// Installs the `json` global module (`json.encode`, `json.decode`) as Kruise's runtime has it;
/// `json.decode` inserts object keys in sorted order.
pub fn install_module(lua: &Lua) -> mlua::Result<()> {
    install_module_with_order(lua, KeyOrder::Sorted)
}

/// [`install_module`] with `json.decode` inserting object keys in `order` (a shuffled order
/// keeps drawing from one generator, so each decode differs, as Go's map order does).
pub fn install_module_with_order(lua: &Lua, order: KeyOrder) -> mlua::Result<()> {
    // SAFETY: exec_raw makes a protected call in a state with the base library.
    unsafe { lua.exec_raw::<()>((), |l| module::install_raw(l, order)) }
}

/// Installs the `json` module into a raw state (see [`install_module_with_order`]).
///
/// # Safety
/// `l` is a valid state with the base library open, in a protected call.
pub(crate) unsafe fn install_module_raw(l: State, order: KeyOrder) {
    unsafe { module::install_raw(l, order) }
}

/// Decodes the encoded result into Kruise's `Data` (2.5): case-insensitive top-level keys,
/// string→string labels/annotations. Err is the unmarshal error message.
pub fn decode_custom_result(raw: &[u8]) -> Result<Data, String> {
    result::decode_custom(raw)
}

/// The canonical JSON of [`decode_custom_result`]`(raw)` for `raw` made by this crate's
/// encoder, without decoding, when the result has the usual simple shape (see
/// `result::canonical_from_encoded`); `None` otherwise.
pub(crate) fn canonical_from_encoded(raw: &[u8]) -> Option<String> {
    result::canonical_from_encoded(raw)
}

/// Decodes an ingress script's encoded result into its annotations (2.8); `None` for `null`.
pub fn decode_ingress_result(raw: &[u8]) -> Result<Option<BTreeMap<String, String>>, String> {
    result::decode_ingress(raw)
}

/// Go's JSON text of an ingress result (2.8 `output`): `null` for `None`, else the map with
/// sorted keys and Go string escaping.
pub fn annotations_to_canonical_json(annotations: Option<&BTreeMap<String, String>>) -> String {
    match annotations {
        None => "null".to_string(),
        Some(map) => {
            let mut out = String::new();
            result::write_string_map(&mut out, map);
            out
        }
    }
}

impl Data {
    /// Canonical JSON of a result: `{"spec":…,"labels":…,"annotations":…}` with empty parts
    /// left out, as Go marshals Kruise's `Data`.
    pub fn to_canonical_json(&self) -> String {
        result::data_to_canonical(self)
    }
}
