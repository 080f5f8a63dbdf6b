//! The inferred shape of `obj.data.spec`: field names and types merged from the `original.spec`
//! of a script's test cases, for completion and hover below the free-form spec; with the CRD's
//! schema of the spec beside it when one is loaded ([`SpecSchema`]).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use kruise_lua_engine::JsonValue;

use super::obj_schema::PathSeg;
use super::spec_schema::SpecSchema;
use crate::lua_source;

/// A JSON type seen at some place in the specs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum JsonKind {
    Object,
    Array,
    String,
    Number,
    Boolean,
    Null,
}

impl JsonKind {
    fn name(self) -> &'static str {
        match self {
            JsonKind::Object => "table",
            JsonKind::Array => "array",
            JsonKind::String => "string",
            JsonKind::Number => "number",
            JsonKind::Boolean => "boolean",
            JsonKind::Null => "nil",
        }
    }
}

/// One place in the merged spec tree.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ShapeNode {
    /// The types seen here.
    pub kinds: BTreeSet<JsonKind>,
    /// Members, when objects were seen here.
    pub fields: BTreeMap<String, ShapeNode>,
    /// The merged shape of the items, when arrays were seen here.
    pub items: Option<Box<ShapeNode>>,
    /// A few distinct scalar values seen here, as Lua source (`"echo"`, `20`, `true`).
    pub examples: Vec<String>,
    /// How many values were merged into this node.
    pub occurrences: usize,
}

const MAX_EXAMPLES: usize = 3;

impl ShapeNode {
    fn merge(&mut self, value: &JsonValue) {
        self.occurrences += 1;
        let scalar = match value {
            JsonValue::Null => {
                self.kinds.insert(JsonKind::Null);
                None
            }
            JsonValue::Bool(b) => {
                self.kinds.insert(JsonKind::Boolean);
                Some(b.to_string())
            }
            JsonValue::Int(i) => {
                self.kinds.insert(JsonKind::Number);
                Some(i.to_string())
            }
            JsonValue::Float(f) => {
                self.kinds.insert(JsonKind::Number);
                Some(lua_source::number(*f))
            }
            JsonValue::String(s) => {
                self.kinds.insert(JsonKind::String);
                Some(lua_source::string(s))
            }
            JsonValue::Array(items) => {
                self.kinds.insert(JsonKind::Array);
                let node = self.items.get_or_insert_with(Default::default);
                for item in items {
                    node.merge(item);
                }
                None
            }
            JsonValue::Object(members) => {
                self.kinds.insert(JsonKind::Object);
                for (key, member) in members {
                    self.fields.entry(key.clone()).or_default().merge(member);
                }
                None
            }
        };
        if let Some(text) = scalar
            && self.examples.len() < MAX_EXAMPLES
            && !self.examples.contains(&text)
        {
            self.examples.push(text);
        }
    }

    /// A short type description: `string`, `array of table`, `number | string`.
    pub fn type_summary(&self) -> String {
        let parts: Vec<String> = self
            .kinds
            .iter()
            .filter(|k| **k != JsonKind::Null || self.kinds.len() == 1)
            .map(|k| match (k, &self.items) {
                (JsonKind::Array, Some(items)) if !items.kinds.is_empty() => {
                    format!("array of {}", items.type_summary())
                }
                _ => k.name().to_string(),
            })
            .collect();
        if parts.is_empty() {
            "unknown".to_string()
        } else {
            parts.join(" | ")
        }
    }

    /// Whether only arrays were seen here (`pairs` over them is in index order).
    pub fn is_array(&self) -> bool {
        self.kinds
            .iter()
            .all(|k| matches!(k, JsonKind::Array | JsonKind::Null))
            && self.kinds.contains(&JsonKind::Array)
    }

    /// Markdown docs for completion/hover: type, examples, how often it was seen.
    pub fn describe(&self) -> String {
        let mut text = format!("`{}`", self.type_summary());
        if !self.examples.is_empty() {
            let _ = write!(text, " — e.g. {}", self.examples.join(", "));
        }
        let _ = write!(
            text,
            "\n\nFrom the test cases' `original.spec` (seen {} time{}).",
            self.occurrences,
            if self.occurrences == 1 { "" } else { "s" }
        );
        text
    }
}

/// The merged shape of several specs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SpecShape {
    pub root: ShapeNode,
    /// How many specs were merged.
    pub cases: usize,
    /// The CRD's schema of the spec, when one is loaded for the script's group and kind.
    pub schema: Option<SpecSchema>,
}

impl SpecShape {
    /// This shape with the CRD's schema of the spec beside it.
    pub fn with_schema(mut self, schema: Option<SpecSchema>) -> SpecShape {
        self.schema = schema;
        self
    }

    /// The node at `path` below `obj.data.spec`: keys go into objects, indices into arrays.
    pub fn node(&self, path: &[PathSeg]) -> Option<&ShapeNode> {
        let mut node = &self.root;
        for seg in path {
            node = match seg {
                PathSeg::Key(key) => node.fields.get(key)?,
                PathSeg::Index(_) | PathSeg::Any => node.items.as_deref()?,
            };
        }
        Some(node)
    }

    /// The field names known at `path` below the spec: the cases' and the schema's
    /// declared properties, in name order.
    pub fn field_names(&self, path: &[PathSeg]) -> Vec<String> {
        let mut names: BTreeSet<String> = self
            .node(path)
            .map(|node| node.fields.keys().cloned().collect())
            .unwrap_or_default();
        if let Some(schema) = self.schema.as_ref().and_then(|s| s.at(path)) {
            names.extend(schema.properties.keys().cloned());
        }
        names.into_iter().collect()
    }

    /// The type and Markdown docs of the value at `path` below the spec: the schema's type
    /// and description first, then what the cases show; `None` when neither knows it.
    pub fn describe_at(&self, path: &[PathSeg]) -> Option<(String, String)> {
        let from_schema = self
            .schema
            .as_ref()
            .and_then(|s| Some((s.type_text_at(path)?, s.describe(s.at(path)?))));
        let from_cases = self
            .node(path)
            .map(|node| (node.type_summary(), node.describe()));
        match (from_schema, from_cases) {
            (Some((kind, schema_doc)), Some((_, cases_doc))) => {
                Some((kind, format!("{schema_doc}\n\n---\n\n{cases_doc}")))
            }
            (Some(found), None) | (None, Some(found)) => Some(found),
            (None, None) => None,
        }
    }
}

/// The shape the test cases' originals show at `suffix` below `obj.data.spec` (hover's sketch of
/// a local). Field names and descriptions merged with the CRD schema are
/// [`SpecShape::field_names`] and [`SpecShape::describe_at`].
pub fn spec_shape_at<'a>(
    cases: Option<&'a SpecShape>,
    suffix: &[PathSeg],
) -> Option<&'a ShapeNode> {
    cases.and_then(|shape| shape.node(suffix))
}

impl ShapeNode {
    /// A one-line sketch of an object's members for hover: `{ match: […], route: […], weight:
    /// number }` (at most `MAX_SKETCH_FIELDS` members; None when no member was seen).
    pub fn sketch(&self) -> Option<String> {
        if self.fields.is_empty() {
            return None;
        }
        let mut parts: Vec<String> = self
            .fields
            .iter()
            .take(MAX_SKETCH_FIELDS)
            .map(|(name, field)| {
                let name = if lua_source::is_identifier(name) {
                    name.clone()
                } else {
                    format!("[{}]", lua_source::string(name))
                };
                let kind = if field.is_array() {
                    "[…]".to_string()
                } else if field.kinds.iter().all(|k| *k == JsonKind::Object) {
                    "{…}".to_string()
                } else {
                    field.type_summary()
                };
                format!("{name}: {kind}")
            })
            .collect();
        if self.fields.len() > MAX_SKETCH_FIELDS {
            parts.push("…".to_string());
        }
        Some(format!("{{ {} }}", parts.join(", ")))
    }
}

const MAX_SKETCH_FIELDS: usize = 8;

/// Merges the `original.spec` values of a script's test cases into one shape tree.
pub fn infer_spec_shape(specs: &[JsonValue]) -> SpecShape {
    let mut shape = SpecShape::default();
    for spec in specs {
        shape.root.merge(spec);
        shape.cases += 1;
    }
    shape
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(members: &[(&str, JsonValue)]) -> JsonValue {
        JsonValue::Object(
            members
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        )
    }

    fn s(text: &str) -> JsonValue {
        JsonValue::String(text.to_string())
    }

    #[test]
    fn merges_fields_items_and_types() {
        let route = object(&[("destination", object(&[("host", s("echo"))]))]);
        let first = object(&[
            ("hosts", JsonValue::Array(vec![s("a.example.com")])),
            (
                "http",
                JsonValue::Array(vec![object(&[("route", JsonValue::Array(vec![route]))])]),
            ),
        ]);
        let second = object(&[
            ("hosts", JsonValue::Array(vec![s("b.example.com")])),
            (
                "http",
                JsonValue::Array(vec![object(&[
                    ("match", JsonValue::Array(vec![])),
                    ("timeout", JsonValue::Int(5)),
                ])]),
            ),
            ("timeout", s("5s")),
        ]);
        let shape = infer_spec_shape(&[first, second]);
        assert_eq!(shape.cases, 2);
        let fields: Vec<&str> = shape.root.fields.keys().map(String::as_str).collect();
        assert_eq!(fields, vec!["hosts", "http", "timeout"]);
        let http_item = shape
            .node(&[PathSeg::Key("http".into()), PathSeg::Index(1)])
            .unwrap();
        let item_fields: Vec<&str> = http_item.fields.keys().map(String::as_str).collect();
        assert_eq!(item_fields, vec!["match", "route", "timeout"]);
        let host = shape
            .node(&[
                PathSeg::Key("http".into()),
                PathSeg::Any,
                PathSeg::Key("route".into()),
                PathSeg::Any,
                PathSeg::Key("destination".into()),
                PathSeg::Key("host".into()),
            ])
            .unwrap();
        assert_eq!(host.type_summary(), "string");
        assert_eq!(host.examples, vec!["\"echo\""]);
        assert_eq!(shape.root.fields["hosts"].type_summary(), "array of string");
        assert!(shape.root.fields["hosts"].is_array());
        let timeout = &shape.root.fields["timeout"];
        assert_eq!(timeout.type_summary(), "string");
        assert!(
            timeout.describe().contains("seen 1 time)"),
            "{}",
            timeout.describe()
        );
        assert_eq!(
            shape.root.fields["http"].items.as_ref().unwrap().fields["timeout"].type_summary(),
            "number"
        );
        assert!(shape.node(&[PathSeg::Key("nope".into())]).is_none());
    }
}
