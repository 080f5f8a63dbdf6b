//! JSON values as Kruise's Go code sees them (their canonical Go `encoding/json` text is
//! [`crate::go::marshal`]).
//!
//! Numbers keep the distinction Go makes: values decoded into `interface{}` are float64
//! ([`JsonValue::Float`]); integers from test-case YAML stay exact 64-bit ([`JsonValue::Int`]).
//! Objects are [`JsonMap`]s, so keys are in Go's sorted (bytewise) order.

mod map;

pub use map::JsonMap;
pub(crate) use map::sort_keeping_last;
/// The iterators of [`JsonMap`].
pub mod map_iter {
    pub use super::map::{IntoIter, Iter, IterMut};
}

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
    Object(JsonMap),
}

impl JsonValue {
    /// The member `key` of an object (`None` for other values or a missing key).
    pub fn get(&self, key: &str) -> Option<&JsonValue> {
        match self {
            JsonValue::Object(members) => members.get(key),
            _ => None,
        }
    }

    /// The value at a path of object keys (`value.at(&["spec", "http"])`).
    pub fn at(&self, keys: &[&str]) -> Option<&JsonValue> {
        keys.iter().try_fold(self, |value, key| value.get(key))
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            JsonValue::String(text) => Some(text),
            _ => None,
        }
    }

    /// The items of an array; `None` for other values (a missing list reads as `None` too).
    pub fn as_array(&self) -> Option<&[JsonValue]> {
        match self {
            JsonValue::Array(items) => Some(items),
            _ => None,
        }
    }

    pub fn as_object(&self) -> Option<&JsonMap> {
        match self {
            JsonValue::Object(members) => Some(members),
            _ => None,
        }
    }

    /// A number (`Int` or `Float`) as f64.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            JsonValue::Int(i) => Some(*i as f64),
            JsonValue::Float(f) => Some(*f),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            JsonValue::Bool(b) => Some(*b),
            _ => None,
        }
    }
}
