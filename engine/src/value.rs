//! JSON values as Kruise's Go code sees them, and their canonical (Go `encoding/json`) text.
//!
//! Numbers keep the distinction Go makes: values decoded into `interface{}` are float64
//! ([`JsonValue::Float`]); integers from test-case YAML stay exact 64-bit ([`JsonValue::Int`]).
//! Objects are `BTreeMap`s, so keys are in Go's sorted (bytewise) order.

use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq)]
pub enum JsonValue {
    Null,
    Bool(bool),
    /// An exact integer (from YAML test cases; Go keeps these as int64).
    Int(i64),
    /// A float64 (everything that went through Lua or `interface{}` decoding).
    Float(f64),
    String(String),
    Array(Vec<JsonValue>),
    Object(BTreeMap<String, JsonValue>),
}

impl JsonValue {
    /// Go `encoding/json` text of this value: sorted keys, Go float formatting
    /// (`1e+21`, `1e-7`, `100000000000000000000`), Go string escaping with HTML escapes.
    pub fn to_canonical_json(&self) -> String {
        let mut out = String::new();
        self.write_canonical(&mut out);
        out
    }

    /// Appends the canonical text to `out` (see [`JsonValue::to_canonical_json`]).
    pub fn write_canonical(&self, out: &mut String) {
        let _ = out;
        todo!("json helper")
    }

    /// Parses JSON text as Go decodes into `interface{}`: every number becomes a float64.
    pub fn parse_go_interface(text: &[u8]) -> Result<JsonValue, String> {
        let _ = text;
        todo!("json helper")
    }
}
