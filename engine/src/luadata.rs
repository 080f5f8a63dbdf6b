//! The `obj` Kruise hands to scripts (`LuaData`, and the ingress provider's variant), as plain data.

use std::collections::BTreeMap;

use crate::value::JsonValue;

/// A resource's spec, labels and annotations: what a script reads in `obj.data` and returns.
/// Also the shape results and `expected[i]` are compared in.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Data {
    /// `None` when the resource has no spec (Go `omitempty`).
    pub spec: Option<JsonValue>,
    /// `None` when nil or empty.
    pub labels: Option<BTreeMap<String, String>>,
    /// `None` when nil or empty.
    pub annotations: Option<BTreeMap<String, String>>,
}

/// Kruise's `HttpRouteMatch`: any of path, headers and query params.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HttpRouteMatch {
    pub path: Option<HttpPathMatch>,
    /// `None` when unset or empty.
    pub headers: Option<Vec<NameValueMatch>>,
    /// `None` when unset or empty.
    pub query_params: Option<Vec<NameValueMatch>>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct HttpPathMatch {
    pub match_type: Option<String>,
    pub value: Option<String>,
}

/// A header or query-param match; `name`/`value` are always present (possibly "").
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NameValueMatch {
    pub match_type: Option<String>,
    pub name: String,
    pub value: String,
}

/// Gateway API `HTTPHeaderFilter`: `requestHeaderModifier` of a step.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HeaderModifier {
    /// `None` when unset or empty.
    pub set: Option<Vec<(String, String)>>,
    pub add: Option<Vec<(String, String)>>,
    pub remove: Option<Vec<String>>,
}

/// The `obj` of a custom network provider script (Kruise's `LuaData`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LuaData {
    pub data: Data,
    /// -1 when the step sets no traffic.
    pub canary_weight: i32,
    /// `100 - canary_weight` in 32-bit arithmetic (101 when there is no traffic).
    pub stable_weight: i32,
    /// `None` (nil) when the step had no matches; `Some(vec![])` for `matches: []`.
    pub matches: Option<Vec<HttpRouteMatch>>,
    pub canary_service: String,
    pub stable_service: String,
    pub request_header_modifier: Option<HeaderModifier>,
}

/// The `obj` of an ingress-class script.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct IngressData {
    pub annotations: Option<BTreeMap<String, String>>,
    /// The canary weight as a string, e.g. `"20"` or `"-1"`.
    pub weight: String,
    pub matches: Option<Vec<HttpRouteMatch>>,
    pub canary_service: String,
    pub request_header_modifier: Option<HeaderModifier>,
}

impl LuaData {
    /// The obj as Go marshals it before converting it to Lua: nil fields are `null`
    /// (`"matches":null`), field names lower camel case, keys sorted.
    pub fn to_json(&self) -> JsonValue {
        todo!("testcase helper")
    }

    /// Kruise's weight rule for a rollout step's `traffic`: see conformance 2.7.
    pub fn canary_weight_from_traffic(traffic: Option<&str>) -> i32 {
        let _ = traffic;
        todo!("testcase helper")
    }
}

impl IngressData {
    /// The ingress obj as JSON (nil fields `null`), as handed to the script.
    pub fn to_json(&self) -> JsonValue {
        todo!("testcase helper")
    }
}
