//! The `obj` Kruise hands to scripts (`LuaData`, and the ingress provider's variant), as plain data.

use std::collections::BTreeMap;

use crate::value::{JsonMap, JsonValue};

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
    /// Shared: every step of a case hands the script the same `original` data, which may be
    /// large; the steps hold it once.
    pub data: std::sync::Arc<Data>,
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
        self.to_json_with_data(self.data.to_obj_json())
    }

    /// [`Self::to_json`] with `data` as the `data` member (the runner leaves `spec` out of
    /// it, to convert the spec without copying it).
    pub(crate) fn to_json_with_data(&self, data: JsonValue) -> JsonValue {
        let mut obj = JsonMap::new();
        obj.insert(
            "canaryService".to_string(),
            JsonValue::String(self.canary_service.clone()),
        );
        obj.insert(
            "canaryWeight".to_string(),
            JsonValue::Int(self.canary_weight as i64),
        );
        obj.insert("data".to_string(), data);
        obj.insert("matches".to_string(), matches_json(self.matches.as_deref()));
        obj.insert(
            "requestHeaderModifier".to_string(),
            self.request_header_modifier
                .as_ref()
                .map_or(JsonValue::Null, HeaderModifier::to_json),
        );
        obj.insert(
            "stableService".to_string(),
            JsonValue::String(self.stable_service.clone()),
        );
        obj.insert(
            "stableWeight".to_string(),
            JsonValue::Int(self.stable_weight as i64),
        );
        JsonValue::Object(obj)
    }

    /// Kruise's weight rule for a rollout step's `traffic`: see conformance 2.7.
    ///
    /// `None` (no `traffic`) gives -1. Otherwise the string must end in `%` and the rest must
    /// be a base-10 int64 with an optional sign (Go's `strconv.Atoi`); anything else gives 0.
    /// Kruise then scales the percentage through float64 (`ceil(v * 100 / 100)`, apimachinery's
    /// `GetScaledValueFromIntOrPercent`) and converts to int32 by truncation. For the values the
    /// conformance vectors list this equals two's-complement truncation of the integer
    /// (`"3000000000%"` → -1294967296); above 2^53 the float rounding shows, as it does in Go.
    pub fn canary_weight_from_traffic(traffic: Option<&str>) -> i32 {
        let Some(traffic) = traffic else {
            return -1;
        };
        let Some(number) = traffic.strip_suffix('%') else {
            return 0;
        };
        let Some(percent) = go_atoi(number) else {
            return 0;
        };
        let scaled = (percent as f64 * 100.0 / 100.0).ceil();
        crate::go::math::go_float_to_int64(scaled) as i32
    }
}

/// Go's `strconv.Atoi` on a 64-bit platform: optional sign, then decimal digits only.
pub fn go_atoi(text: &str) -> Option<i64> {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse::<i64>().ok()
}

impl Data {
    /// The `data` member of an obj as Go marshals Kruise's `Data` (`omitempty` on every
    /// field): `spec` absent when `None`, labels and annotations absent when `None` or empty.
    /// Also the shape results and `expected[i]` are compared (and diffed) in.
    pub fn to_obj_json(&self) -> JsonValue {
        let mut data = JsonMap::new();
        if let Some(annotations) = self.annotations.as_ref().filter(|m| !m.is_empty()) {
            data.insert("annotations".to_string(), string_map_json(annotations));
        }
        if let Some(labels) = self.labels.as_ref().filter(|m| !m.is_empty()) {
            data.insert("labels".to_string(), string_map_json(labels));
        }
        if let Some(spec) = &self.spec {
            data.insert("spec".to_string(), spec.clone());
        }
        JsonValue::Object(data)
    }
}

/// An Ingress's annotations as the script's `obj.annotations` holds them: `null` when absent.
pub fn annotations_json(annotations: Option<&BTreeMap<String, String>>) -> JsonValue {
    annotations.map_or(JsonValue::Null, string_map_json)
}

/// A string→string map (labels, annotations) as a JSON object.
pub fn string_map_json(map: &BTreeMap<String, String>) -> JsonValue {
    JsonValue::Object(
        map.iter()
            .map(|(k, v)| (k.clone(), JsonValue::String(v.clone())))
            .collect(),
    )
}

/// `null` for nil matches, else the array (possibly empty).
fn matches_json(matches: Option<&[HttpRouteMatch]>) -> JsonValue {
    match matches {
        None => JsonValue::Null,
        Some(list) => JsonValue::Array(list.iter().map(HttpRouteMatch::to_json).collect()),
    }
}

/// Whether Kruise's traffic-routing manager calls a provider (custom, ingress or Gateway API)
/// for a step: `DoTrafficRouting` returns "done" before building any provider when the
/// strategy's `Traffic` is nil and `len(Matches) == 0` (manager.go; the test was on `Weight`
/// before v1beta1, commit 9dcf365). A header modifier alone does not count, and an empty
/// `matches: []` is no match.
pub fn reaches_provider(traffic_set: bool, matches: Option<&[HttpRouteMatch]>) -> bool {
    traffic_set || matches.is_some_and(|matches| !matches.is_empty())
}

impl HttpRouteMatch {
    /// Gateway API JSON: `path`, `headers` and `queryParams` left out when unset or empty.
    pub fn to_json(&self) -> JsonValue {
        let mut obj = JsonMap::new();
        if let Some(headers) = self.headers.as_ref().filter(|h| !h.is_empty()) {
            obj.insert(
                "headers".to_string(),
                JsonValue::Array(headers.iter().map(NameValueMatch::to_json).collect()),
            );
        }
        if let Some(path) = &self.path {
            obj.insert("path".to_string(), path.to_json());
        }
        if let Some(params) = self.query_params.as_ref().filter(|q| !q.is_empty()) {
            obj.insert(
                "queryParams".to_string(),
                JsonValue::Array(params.iter().map(NameValueMatch::to_json).collect()),
            );
        }
        JsonValue::Object(obj)
    }
}

impl HttpPathMatch {
    /// `type` and `value` left out when unset (both are pointers in Go).
    pub fn to_json(&self) -> JsonValue {
        let mut obj = JsonMap::new();
        if let Some(t) = &self.match_type {
            obj.insert("type".to_string(), JsonValue::String(t.clone()));
        }
        if let Some(v) = &self.value {
            obj.insert("value".to_string(), JsonValue::String(v.clone()));
        }
        JsonValue::Object(obj)
    }
}

impl NameValueMatch {
    /// `name` and `value` always present; `type` left out when unset.
    pub fn to_json(&self) -> JsonValue {
        let mut obj = JsonMap::new();
        obj.insert("name".to_string(), JsonValue::String(self.name.clone()));
        if let Some(t) = &self.match_type {
            obj.insert("type".to_string(), JsonValue::String(t.clone()));
        }
        obj.insert("value".to_string(), JsonValue::String(self.value.clone()));
        JsonValue::Object(obj)
    }
}

impl HeaderModifier {
    /// `set`, `add` and `remove` left out when unset or empty; `{}` when nothing is set.
    pub fn to_json(&self) -> JsonValue {
        let pairs = |list: &[(String, String)]| {
            JsonValue::Array(
                list.iter()
                    .map(|(name, value)| {
                        let mut h = JsonMap::new();
                        h.insert("name".to_string(), JsonValue::String(name.clone()));
                        h.insert("value".to_string(), JsonValue::String(value.clone()));
                        JsonValue::Object(h)
                    })
                    .collect(),
            )
        };
        let mut obj = JsonMap::new();
        if let Some(add) = self.add.as_ref().filter(|l| !l.is_empty()) {
            obj.insert("add".to_string(), pairs(add));
        }
        if let Some(remove) = self.remove.as_ref().filter(|l| !l.is_empty()) {
            obj.insert(
                "remove".to_string(),
                JsonValue::Array(
                    remove
                        .iter()
                        .map(|h| JsonValue::String(h.clone()))
                        .collect(),
                ),
            );
        }
        if let Some(set) = self.set.as_ref().filter(|l| !l.is_empty()) {
            obj.insert("set".to_string(), pairs(set));
        }
        JsonValue::Object(obj)
    }
}

impl IngressData {
    /// The ingress obj as JSON (nil fields `null`), as handed to the script.
    pub fn to_json(&self) -> JsonValue {
        let mut obj = JsonMap::new();
        obj.insert(
            "annotations".to_string(),
            annotations_json(self.annotations.as_ref()),
        );
        obj.insert(
            "canaryService".to_string(),
            JsonValue::String(self.canary_service.clone()),
        );
        obj.insert("matches".to_string(), matches_json(self.matches.as_deref()));
        obj.insert(
            "requestHeaderModifier".to_string(),
            self.request_header_modifier
                .as_ref()
                .map_or(JsonValue::Null, HeaderModifier::to_json),
        );
        obj.insert("weight".to_string(), JsonValue::String(self.weight.clone()));
        JsonValue::Object(obj)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weight_table_of_conformance_2_7() {
        let table: &[(Option<&str>, i32)] = &[
            (None, -1),
            (Some("50%"), 50),
            (Some("50"), 0),
            (Some("0%"), 0),
            (Some("100%"), 100),
            (Some("12.5%"), 0),
            (Some("abc"), 0),
            (Some("+5%"), 5),
            (Some("-10%"), -10),
            (Some("150%"), 150),
            (Some("05%"), 5),
            (Some(" 5%"), 0),
            (Some("5 %"), 0),
            (Some("%"), 0),
            (Some("+%"), 0),
            (Some(""), 0),
            (Some("1_0%"), 0),
            (Some("0x10%"), 0),
            (Some("5%%"), 0),
            (Some("3000000000%"), -1294967296),
            (Some("4294967396%"), 100),
            (Some("99999999999999999999%"), 0),
            (Some("9223372036854775807%"), 0),
        ];
        for (traffic, want) in table {
            assert_eq!(
                LuaData::canary_weight_from_traffic(*traffic),
                *want,
                "traffic {traffic:?}"
            );
        }
    }

    #[test]
    fn obj_json_leaves_out_what_go_omits() {
        let obj = LuaData {
            data: Data {
                spec: None,
                labels: Some(BTreeMap::new()),
                annotations: None,
            }
            .into(),
            canary_weight: -1,
            stable_weight: 101,
            matches: Some(vec![
                HttpRouteMatch::default(),
                HttpRouteMatch {
                    path: Some(HttpPathMatch {
                        match_type: None,
                        value: Some("/a".into()),
                    }),
                    headers: Some(vec![]),
                    query_params: Some(vec![NameValueMatch {
                        match_type: Some("Exact".into()),
                        name: String::new(),
                        value: "1".into(),
                    }]),
                },
            ]),
            canary_service: "c".into(),
            stable_service: "s".into(),
            request_header_modifier: Some(HeaderModifier {
                set: Some(vec![]),
                add: None,
                remove: Some(vec!["x".into()]),
            }),
        };
        let json = obj.to_json();
        let JsonValue::Object(top) = &json else {
            panic!()
        };
        assert_eq!(top["data"], JsonValue::Object(JsonMap::new()));
        let JsonValue::Array(matches) = &top["matches"] else {
            panic!()
        };
        assert_eq!(matches[0], JsonValue::Object(JsonMap::new()));
        let JsonValue::Object(second) = &matches[1] else {
            panic!()
        };
        assert_eq!(
            second.keys().collect::<Vec<_>>(),
            vec!["path", "queryParams"]
        );
        let JsonValue::Object(path) = &second["path"] else {
            panic!()
        };
        assert_eq!(path.keys().collect::<Vec<_>>(), vec!["value"]);
        let JsonValue::Array(params) = &second["queryParams"] else {
            panic!()
        };
        let JsonValue::Object(param) = &params[0] else {
            panic!()
        };
        assert_eq!(param["name"], JsonValue::String(String::new()));
        let JsonValue::Object(modifier) = &top["requestHeaderModifier"] else {
            panic!()
        };
        assert_eq!(modifier.keys().collect::<Vec<_>>(), vec!["remove"]);
        let nil = LuaData::default().to_json();
        let JsonValue::Object(nil) = nil else {
            panic!()
        };
        assert_eq!(nil["matches"], JsonValue::Null);
        assert_eq!(nil["requestHeaderModifier"], JsonValue::Null);
    }

    #[test]
    fn ingress_obj_json() {
        let obj = IngressData {
            weight: "-1".into(),
            canary_service: "c".into(),
            ..Default::default()
        };
        let JsonValue::Object(top) = obj.to_json() else {
            panic!()
        };
        assert_eq!(
            top.keys().collect::<Vec<_>>(),
            vec![
                "annotations",
                "canaryService",
                "matches",
                "requestHeaderModifier",
                "weight"
            ]
        );
        assert_eq!(top["annotations"], JsonValue::Null);
        assert_eq!(top["weight"], JsonValue::String("-1".into()));
    }
}
