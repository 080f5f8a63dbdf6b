//! Lua ⇄ JSON as Kruise does it: the encoder for returned tables (2.4), the `json` module,
//! input conversion (2.2) and decoding the encoded result into its Go types (2.5, 2.6, 2.8).

use std::collections::BTreeMap;

use mlua::{Lua, Value};

use crate::luadata::Data;
use crate::value::JsonValue;

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

/// Encodes a Lua value with Kruise's encoder (2.4). Err is the encode error message.
pub fn encode_lua(value: &Value, empty: EmptyTable) -> Result<Vec<u8>, String> {
    let _ = (value, empty);
    todo!("json helper")
}

/// Converts a JSON value to Lua as 2.2 says (null members absent, null array items dropped,
/// numbers as doubles), inserting object keys in `order`.
pub fn json_to_lua(lua: &Lua, value: &JsonValue, order: KeyOrder) -> mlua::Result<Value> {
    let _ = (lua, value, order);
    todo!("json helper")
}

/// Installs the `json` global module (`json.encode`, `json.decode`) as Kruise's runtime has it.
pub fn install_module(lua: &Lua) -> mlua::Result<()> {
    let _ = lua;
    todo!("json helper")
}

/// Decodes the encoded result into Kruise's `Data` (2.5): case-insensitive top-level keys,
/// string→string labels/annotations. Err is the unmarshal error message.
pub fn decode_custom_result(raw: &[u8]) -> Result<Data, String> {
    let _ = raw;
    todo!("json helper")
}

/// Decodes an ingress script's encoded result into its annotations (2.8); `None` for `null`.
pub fn decode_ingress_result(raw: &[u8]) -> Result<Option<BTreeMap<String, String>>, String> {
    let _ = raw;
    todo!("json helper")
}

impl Data {
    /// Canonical JSON of a result: `{"spec":…,"labels":…,"annotations":…}` with empty parts
    /// left out, as Go marshals Kruise's `Data`.
    pub fn to_canonical_json(&self) -> String {
        todo!("json helper")
    }
}
