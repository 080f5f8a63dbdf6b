//! The documented shape of the `obj` global for custom and ingress scripts (conformance README
//! 2.3 and 2.8): field names, types and the docs a script author needs. Used by KL001,
//! completion and hover.

use std::fmt;

use crate::lua_source::is_identifier;

/// Which provider runs the script: it decides the shape of `obj` and of the result (the
/// engine's flavor, so the language server passes its targets' flavor as is).
use kruise_lua_engine::script::ScriptFlavor;

/// One step of a path into `obj`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PathSeg {
    /// A string key: `.name` or `["name"]`.
    Key(String),
    /// A literal positive integer index: `[1]` (Lua's 1-based index).
    Index(u32),
    /// Some element whose key is not known statically: `[i]`, a loop variable over the table.
    Any,
}

/// A path into `obj`, e.g. `obj.data.spec.http[1]` is `[Key(data), Key(spec), Key(http), Index(1)]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct ObjPath(pub Vec<PathSeg>);

impl ObjPath {
    /// The path of `obj` itself.
    pub fn root() -> Self {
        ObjPath(Vec::new())
    }

    /// This path extended by one step.
    pub fn child(&self, seg: PathSeg) -> Self {
        let mut segs = self.0.clone();
        segs.push(seg);
        ObjPath(segs)
    }

    /// The keys of the path when all its steps are string keys (`["data","spec","http"]`).
    pub fn keys(&self) -> Option<Vec<&str>> {
        self.0
            .iter()
            .map(|s| match s {
                PathSeg::Key(k) => Some(k.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The path below `obj.data.spec` when the path goes through it (custom scripts).
    pub fn spec_suffix(&self) -> Option<&[PathSeg]> {
        match self.0.as_slice() {
            [PathSeg::Key(d), PathSeg::Key(s), rest @ ..] if d == "data" && s == "spec" => {
                Some(rest)
            }
            _ => None,
        }
    }
}

impl fmt::Display for ObjPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("obj")?;
        for seg in &self.0 {
            match seg {
                PathSeg::Key(k) if is_identifier(k) => write!(f, ".{k}")?,
                PathSeg::Key(k) => write!(f, "[{k:?}]")?,
                PathSeg::Index(i) => write!(f, "[{i}]")?,
                PathSeg::Any => f.write_str("[…]")?,
            }
        }
        Ok(())
    }
}

/// The shape of a value inside `obj`.
#[derive(Debug)]
pub struct Shape {
    pub kind: ShapeKind,
    /// A short type name for completion details and hover (`"number"`, `"array of header match"`).
    pub type_name: &'static str,
}

#[derive(Debug)]
pub enum ShapeKind {
    Number,
    String,
    /// A table with a fixed set of fields.
    Object(&'static [Field]),
    /// An array (1-based) of the given element shape.
    Array(&'static Shape),
    /// A string → string map (labels, annotations): any key is fine, in random `pairs` order.
    StringMap,
    /// The resource's spec: any JSON, free-form (completion uses the test cases' specs).
    Spec,
}

/// A named field of an object shape.
#[derive(Debug)]
pub struct Field {
    pub name: &'static str,
    pub shape: &'static Shape,
    pub doc: &'static str,
}

impl Shape {
    /// The fields, for object shapes.
    pub fn fields(&self) -> &'static [Field] {
        match self.kind {
            ShapeKind::Object(fields) => fields,
            _ => &[],
        }
    }

    pub fn field(&self, name: &str) -> Option<&'static Field> {
        self.fields().iter().find(|f| f.name == name)
    }

    /// Whether `pairs()` over this value visits keys in random order in Kruise.
    pub fn is_random_order_map(&self) -> bool {
        matches!(
            self.kind,
            ShapeKind::StringMap | ShapeKind::Spec | ShapeKind::Object(_)
        )
    }
}

const NUMBER: Shape = Shape {
    kind: ShapeKind::Number,
    type_name: "number",
};
const STRING: Shape = Shape {
    kind: ShapeKind::String,
    type_name: "string",
};
const STRING_MAP: Shape = Shape {
    kind: ShapeKind::StringMap,
    type_name: "table (string → string)",
};
const SPEC: Shape = Shape {
    kind: ShapeKind::Spec,
    type_name: "table (the resource's spec)",
};
const STRINGS: Shape = Shape {
    kind: ShapeKind::Array(&STRING),
    type_name: "array of string",
};

const MATCH_TYPE_DOC: &str = "How `value` is matched: `\"Exact\"` or `\"RegularExpression\"`. Absent (nil) when the step leaves it unset; treat nil as exact.";

const HEADER_MATCH: Shape = Shape {
    kind: ShapeKind::Object(&[
        Field {
            name: "type",
            shape: &STRING,
            doc: MATCH_TYPE_DOC,
        },
        Field {
            name: "name",
            shape: &STRING,
            doc: "The header name. Always present (possibly `\"\"`).",
        },
        Field {
            name: "value",
            shape: &STRING,
            doc: "The value (or regular expression) to match. Always present (possibly `\"\"`).",
        },
    ]),
    type_name: "header match",
};
const QUERY_MATCH: Shape = Shape {
    kind: ShapeKind::Object(&[
        Field {
            name: "type",
            shape: &STRING,
            doc: MATCH_TYPE_DOC,
        },
        Field {
            name: "name",
            shape: &STRING,
            doc: "The query parameter name. Always present (possibly `\"\"`).",
        },
        Field {
            name: "value",
            shape: &STRING,
            doc: "The value (or regular expression) to match. Always present (possibly `\"\"`).",
        },
    ]),
    type_name: "query parameter match",
};
const PATH_MATCH: Shape = Shape {
    kind: ShapeKind::Object(&[
        Field {
            name: "type",
            shape: &STRING,
            doc: "`\"Exact\"`, `\"PathPrefix\"` or `\"RegularExpression\"`; absent when unset.",
        },
        Field {
            name: "value",
            shape: &STRING,
            doc: "The path to match; absent when unset.",
        },
    ]),
    type_name: "path match",
};
const HEADER_MATCHES: Shape = Shape {
    kind: ShapeKind::Array(&HEADER_MATCH),
    type_name: "array of header match",
};
const QUERY_MATCHES: Shape = Shape {
    kind: ShapeKind::Array(&QUERY_MATCH),
    type_name: "array of query parameter match",
};
const MATCH: Shape = Shape {
    kind: ShapeKind::Object(&[
        Field {
            name: "path",
            shape: &PATH_MATCH,
            doc: "The path match: `{type = ..., value = ...}`. Absent when unset; always absent for a TrafficRouting CR (only headers are kept).",
        },
        Field {
            name: "headers",
            shape: &HEADER_MATCHES,
            doc: "Header matches (all must match): `{{type = \"Exact\", name = \"user-agent\", value = \"Android\"}, ...}`. Absent when unset or empty.",
        },
        Field {
            name: "queryParams",
            shape: &QUERY_MATCHES,
            doc: "Query parameter matches: `{{type = ..., name = ..., value = ...}, ...}`. Absent when unset or empty.",
        },
    ]),
    type_name: "match",
};
const MATCHES: Shape = Shape {
    kind: ShapeKind::Array(&MATCH),
    type_name: "array of match | nil",
};
const HEADER_VALUE: Shape = Shape {
    kind: ShapeKind::Object(&[
        Field {
            name: "name",
            shape: &STRING,
            doc: "The header name. Always present (possibly `\"\"`).",
        },
        Field {
            name: "value",
            shape: &STRING,
            doc: "The header value. Always present (possibly `\"\"`).",
        },
    ]),
    type_name: "header",
};
const HEADER_VALUES: Shape = Shape {
    kind: ShapeKind::Array(&HEADER_VALUE),
    type_name: "array of header",
};
const HEADER_MODIFIER: Shape = Shape {
    kind: ShapeKind::Object(&[
        Field {
            name: "set",
            shape: &HEADER_VALUES,
            doc: "Headers to overwrite: `{{name = ..., value = ...}, ...}`. Absent when unset or empty.",
        },
        Field {
            name: "add",
            shape: &HEADER_VALUES,
            doc: "Headers to append: `{{name = ..., value = ...}, ...}`. Absent when unset or empty.",
        },
        Field {
            name: "remove",
            shape: &STRINGS,
            doc: "Names of headers to remove: `{\"x-debug\", ...}`. Absent when unset or empty.",
        },
    ]),
    type_name: "header modifier | nil",
};

const MATCHES_DOC: &str = "The step's traffic matches (array of `{path?, headers?, queryParams?}`). **nil** for a rollout step without matches; for a TrafficRouting CR always a table, possibly empty, whose entries keep only `headers`. Iterate with `for _, m in ipairs(obj.matches or {}) do`.";
const MODIFIER_DOC: &str = "The step's `requestHeaderModifier`: `{set?, add?, remove?}`, or nil when the step has none. An empty modifier is an empty table.";

const DATA: Shape = Shape {
    kind: ShapeKind::Object(&[
        Field {
            name: "spec",
            shape: &SPEC,
            doc: "The routed resource's `.spec` as Lua tables (any JSON; numbers are doubles, null members are absent, null array items are skipped, `{}`/`[]` come back as `null`). Absent when the resource has no spec. Its content is free-form.",
        },
        Field {
            name: "labels",
            shape: &STRING_MAP,
            doc: "The resource's labels (string → string). **Absent** (nil) when it has none, so write `obj.data.labels or {}`. `pairs()` over it visits keys in random order.",
        },
        Field {
            name: "annotations",
            shape: &STRING_MAP,
            doc: "The resource's annotations (string → string). **Absent** (nil) when it has none, so write `obj.data.annotations or {}`. `pairs()` over it visits keys in random order.",
        },
    ]),
    type_name: "table {spec, labels, annotations}",
};

const CUSTOM: Shape = Shape {
    kind: ShapeKind::Object(&[
        Field {
            name: "data",
            shape: &DATA,
            doc: "The routed resource: `{spec, labels, annotations}`. Return it (after editing) or a table of the same shape: `return obj.data`. Only `spec`, `labels` and `annotations` of the result are used (keys matched case-insensitively).",
        },
        Field {
            name: "canaryWeight",
            shape: &NUMBER,
            doc: "The canary's traffic percentage for this step, an integer (a Lua number). **-1** when the step sets no traffic (then `stableWeight` is 101). From the rollout step's `traffic: 20%` (a value without `%` gives 0), or a TrafficRouting CR's `strategy.weight`.",
        },
        Field {
            name: "stableWeight",
            shape: &NUMBER,
            doc: "`100 - canaryWeight`, an integer. **101** when the step sets no traffic (canaryWeight -1).",
        },
        Field {
            name: "matches",
            shape: &MATCHES,
            doc: MATCHES_DOC,
        },
        Field {
            name: "canaryService",
            shape: &STRING,
            doc: "The canary Service's name: for a rollout the stable service with `-canary` appended; for a TrafficRouting CR the same as `stableService`.",
        },
        Field {
            name: "stableService",
            shape: &STRING,
            doc: "The stable Service's name (the rollout's `trafficRoutings[0].service`, or a TrafficRouting CR's `objectRef[0].service`).",
        },
        Field {
            name: "requestHeaderModifier",
            shape: &HEADER_MODIFIER,
            doc: MODIFIER_DOC,
        },
    ]),
    type_name: "custom provider obj",
};

const INGRESS: Shape = Shape {
    kind: ShapeKind::Object(&[
        Field {
            name: "annotations",
            shape: &STRING_MAP,
            doc: "The Ingress's annotations (string → string), nil when it has none. Return the annotations to set, as a table of string → string (numbers are an error; an empty table clears them).",
        },
        Field {
            name: "weight",
            shape: &STRING,
            doc: "The canary weight as a **string** (`\"20\"`, `\"-1\"` when the step sets no traffic). `obj.weight == -1` is always false: compare with `\"-1\"` or use `tonumber(obj.weight)`.",
        },
        Field {
            name: "matches",
            shape: &MATCHES,
            doc: MATCHES_DOC,
        },
        Field {
            name: "canaryService",
            shape: &STRING,
            doc: "The canary Service's name.",
        },
        Field {
            name: "requestHeaderModifier",
            shape: &HEADER_MODIFIER,
            doc: MODIFIER_DOC,
        },
    ]),
    type_name: "ingress provider obj",
};

/// The shape of `obj` itself for a flavor.
pub fn root(flavor: ScriptFlavor) -> &'static Shape {
    match flavor {
        ScriptFlavor::Custom => &CUSTOM,
        ScriptFlavor::Ingress => &INGRESS,
    }
}

/// Doc of the `obj` global itself.
pub fn root_doc(flavor: ScriptFlavor) -> &'static str {
    match flavor {
        ScriptFlavor::Custom => {
            "The input of a custom-provider script: `{data = {spec, labels, annotations}, canaryWeight, stableWeight, matches, canaryService, stableService, requestHeaderModifier}`. The script must return a table `{spec = ..., labels = ..., annotations = ...}` (often `obj.data`)."
        }
        ScriptFlavor::Ingress => {
            "The input of an ingress-class script: `{annotations, weight (a string), matches, canaryService, requestHeaderModifier}`. The script must return the annotations to set (string → string)."
        }
    }
}

/// Where a path into `obj` leads in the schema.
#[derive(Debug)]
pub enum Lookup {
    /// A documented value; `field` is the field the last step named (None for `obj` itself and
    /// for array elements).
    Found {
        shape: &'static Shape,
        field: Option<&'static Field>,
    },
    /// Inside `obj.data.spec` (or a map value): free-form, nothing to check.
    Free,
    /// Step `at` names a field the table at that point does not have.
    UnknownField { at: usize, parent: &'static Shape },
    /// Step `at` indexes a value that is not a table (a number).
    NotATable { at: usize, value: &'static Shape },
}

/// Follows `path` through the schema of `flavor`.
pub fn lookup(flavor: ScriptFlavor, path: &[PathSeg]) -> Lookup {
    let mut shape = root(flavor);
    let mut field = None;
    for (at, seg) in path.iter().enumerate() {
        match (&shape.kind, seg) {
            (ShapeKind::Spec | ShapeKind::StringMap, _) => return Lookup::Free,
            (ShapeKind::Object(_), PathSeg::Key(name)) => match shape.field(name) {
                Some(f) => {
                    field = Some(f);
                    shape = f.shape;
                }
                None => return Lookup::UnknownField { at, parent: shape },
            },
            // `obj[k]` with an unknown key, or `obj.data[1]`: nothing useful to say.
            (ShapeKind::Object(_), _) => return Lookup::Free,
            (ShapeKind::Array(item), PathSeg::Index(_) | PathSeg::Any) => {
                field = None;
                shape = item;
            }
            (ShapeKind::Array(_), PathSeg::Key(_)) => {
                return Lookup::UnknownField { at, parent: shape };
            }
            (ShapeKind::Number, _) => return Lookup::NotATable { at, value: shape },
            // Strings index their methods (`s.upper`); not a schema question.
            (ShapeKind::String, _) => return Lookup::Free,
        }
    }
    Lookup::Found { shape, field }
}

/// The closest field names to `name` (case-insensitive equality first, then small edit
/// distance), best first.
pub fn suggest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let lower = name.to_ascii_lowercase();
    let mut best: Option<(usize, &'a str)> = None;
    for candidate in candidates {
        let c_lower = candidate.to_ascii_lowercase();
        let distance = if c_lower == lower {
            0
        } else {
            edit_distance(&lower, &c_lower)
        };
        let limit = (candidate.len().max(name.len()) / 3).max(1);
        if distance <= limit && best.is_none_or(|(d, _)| distance < d) {
            best = Some((distance, candidate));
        }
    }
    best.map(|(_, c)| c)
}

/// Edit distance over bytes (field names are ASCII), counting a swap of two neighbours as one
/// edit (`hots`/`host`, `nmae`/`name`: the optimal string alignment distance).
pub fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    // Rows i-2, i-1 and i of the table.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = prev[j] + usize::from(ca != cb);
            let mut best = substitution.min(prev[j + 1] + 1).min(cur[j] + 1);
            if i > 0 && j > 0 && *ca == b[j - 1] && a[i - 1] == *cb {
                best = best.min(before[j - 1] + 1);
            }
            cur[j + 1] = best;
        }
        std::mem::swap(&mut before, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(k: &str) -> PathSeg {
        PathSeg::Key(k.to_string())
    }

    #[test]
    fn nested_lookup_and_docs() {
        let path = [
            key("matches"),
            PathSeg::Index(1),
            key("headers"),
            PathSeg::Any,
            key("name"),
        ];
        match lookup(ScriptFlavor::Custom, &path) {
            Lookup::Found { shape, field } => {
                assert_eq!(shape.type_name, "string");
                assert!(field.unwrap().doc.contains("Always present"));
            }
            other => panic!("{other:?}"),
        }
        match lookup(ScriptFlavor::Custom, &[key("canaryWeight")]) {
            Lookup::Found { field, .. } => assert!(field.unwrap().doc.contains("-1")),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            lookup(
                ScriptFlavor::Custom,
                &[key("data"), key("spec"), key("anything"), PathSeg::Any]
            ),
            Lookup::Free
        ));
        assert!(matches!(
            lookup(ScriptFlavor::Custom, &[key("data"), key("specs")]),
            Lookup::UnknownField { at: 1, .. }
        ));
        assert!(matches!(
            lookup(ScriptFlavor::Custom, &[key("weight")]),
            Lookup::UnknownField { at: 0, .. }
        ));
        assert!(matches!(
            lookup(ScriptFlavor::Ingress, &[key("weight")]),
            Lookup::Found { .. }
        ));
        assert!(matches!(
            lookup(ScriptFlavor::Custom, &[key("matches"), key("headers")]),
            Lookup::UnknownField { at: 1, .. }
        ));
        assert!(matches!(
            lookup(ScriptFlavor::Custom, &[key("canaryWeight"), key("x")]),
            Lookup::NotATable { at: 1, .. }
        ));
    }

    #[test]
    fn suggestions() {
        let fields = root(ScriptFlavor::Custom).fields().iter().map(|f| f.name);
        assert_eq!(
            suggest("canaryweight", fields.clone()),
            Some("canaryWeight")
        );
        assert_eq!(
            suggest("stableWieght", fields.clone()),
            Some("stableWeight")
        );
        assert_eq!(suggest("match", fields.clone()), Some("matches"));
        assert_eq!(suggest("zzz", fields), None);
        // A swap of neighbours is one edit.
        assert_eq!(edit_distance("hots", "host"), 1);
        assert_eq!(edit_distance("nmae", "name"), 1);
        assert_eq!(edit_distance("weigth", "weight"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(suggest("hots", ["host", "subset"]), Some("host"));
    }

    /// The schema is written by hand next to the engine's builder of `obj`; every table in an
    /// obj the engine builds (all optional parts set) must have exactly the documented fields.
    #[test]
    fn fields_are_those_the_engine_builds() {
        use kruise_lua_engine::JsonValue;
        use kruise_lua_engine::luadata::{
            Data, HeaderModifier, HttpPathMatch, HttpRouteMatch, IngressData, LuaData,
            NameValueMatch,
        };
        fn check(shape: &Shape, value: &JsonValue, at: &str) {
            match (&shape.kind, value) {
                (ShapeKind::Object(fields), JsonValue::Object(members)) => {
                    let mut documented: Vec<&str> = fields.iter().map(|f| f.name).collect();
                    documented.sort_unstable();
                    let built: Vec<&str> = members.keys().map(String::as_str).collect();
                    assert_eq!(documented, built, "{at}");
                    for f in fields.iter() {
                        check(f.shape, &members[f.name], &format!("{at}.{}", f.name));
                    }
                }
                (ShapeKind::Array(item), JsonValue::Array(items)) => {
                    assert!(!items.is_empty(), "{at}");
                    for value in items {
                        check(item, value, &format!("{at}[1]"));
                    }
                }
                _ => {}
            }
        }
        let name_value = || NameValueMatch {
            match_type: Some("Exact".into()),
            name: "n".into(),
            value: "v".into(),
        };
        let route_match = HttpRouteMatch {
            path: Some(HttpPathMatch {
                match_type: Some("PathPrefix".into()),
                value: Some("/".into()),
            }),
            headers: Some(vec![name_value()]),
            query_params: Some(vec![name_value()]),
        };
        let modifier = HeaderModifier {
            set: Some(vec![("n".into(), "v".into())]),
            add: Some(vec![("n".into(), "v".into())]),
            remove: Some(vec!["n".into()]),
        };
        let map = || Some([("k".to_string(), "v".to_string())].into());
        let custom = LuaData {
            data: Data {
                spec: Some(JsonValue::Object(Default::default())),
                labels: map(),
                annotations: map(),
            }
            .into(),
            matches: Some(vec![route_match.clone()]),
            request_header_modifier: Some(modifier.clone()),
            ..LuaData::default()
        };
        let ingress = IngressData {
            annotations: map(),
            matches: Some(vec![route_match]),
            request_header_modifier: Some(modifier),
            ..IngressData::default()
        };
        check(root(ScriptFlavor::Custom), &custom.to_json(), "obj");
        check(root(ScriptFlavor::Ingress), &ingress.to_json(), "obj");
    }

    #[test]
    fn display() {
        let p = ObjPath(vec![
            key("data"),
            key("spec"),
            key("http"),
            PathSeg::Index(1),
            key("a-b"),
        ]);
        assert_eq!(p.to_string(), "obj.data.spec.http[1][\"a-b\"]");
        assert_eq!(p.spec_suffix().unwrap().len(), 3);
    }
}
