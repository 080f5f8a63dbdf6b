//! One CRD version's `openAPIV3Schema`, read from YAML once into a [`Schema`] tree with its
//! patterns compiled, so every step is validated without re-reading the CRD.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use regex::Regex;

use super::cel::{self, CelRule, RuleText};
use super::re2::{self, PatternError};

use crate::value::JsonValue;
use crate::yaml::{YamlNode, YamlValue};

/// Schemas nested deeper than this are refused: published CRDs stay far below (an embedded
/// pod template is about 30 levels), and compiling and validating recurse once per level.
const MAX_DEPTH: usize = 100;

/// The `type` keyword. A schema without one accepts any type (the API server only allows that
/// with `x-kubernetes-int-or-string` or `x-kubernetes-preserve-unknown-fields`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaType {
    Object,
    Array,
    String,
    Integer,
    Number,
    Boolean,
}

impl SchemaType {
    pub fn as_str(self) -> &'static str {
        match self {
            SchemaType::Object => "object",
            SchemaType::Array => "array",
            SchemaType::String => "string",
            SchemaType::Integer => "integer",
            SchemaType::Number => "number",
            SchemaType::Boolean => "boolean",
        }
    }
}

/// `additionalProperties`.
#[derive(Debug, Clone, Default)]
pub enum Additional {
    /// Not given: undeclared fields are pruned.
    #[default]
    Absent,
    /// `true`: any field is kept, whatever its value.
    Any,
    /// `false`: the same as absent for a structural schema (undeclared fields are pruned).
    None,
    /// A schema every undeclared field's value must match (a map).
    Schema(Box<Schema>),
}

/// A `pattern`, compiled the first time a value is matched against it: compiling one costs
/// about as much as checking a hundred steps (Unicode classes), and most patterns of a
/// gateway's CRD sit on fields no script writes.
#[derive(Debug, Clone)]
pub struct Pattern {
    pub source: String,
    compiled: OnceLock<Result<Regex, PatternError>>,
}

impl Pattern {
    pub fn new(source: String) -> Pattern {
        Pattern {
            source,
            compiled: OnceLock::new(),
        }
    }

    /// The regex, read with Go's syntax as the API server reads it (`re2.rs`), or why there
    /// is none.
    pub(crate) fn regex(&self) -> &Result<Regex, PatternError> {
        self.compiled.get_or_init(|| re2::compile(&self.source))
    }
}

/// A fact about a schema node and the nodes below it that the walks ask before going down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Below {
    /// A node declares a `default` (most schemas have none): defaulting walks only there.
    Defaults,
    /// A rule may read `oldSelf` (its text names it: a CEL variable cannot be spelled
    /// otherwise). Below a node without, the old value is never read (it only serves
    /// transition rules), so validation does not follow it there.
    TransitionRules,
}

/// How deep [`Schema::has_below`] looks; past `MAX_DEPTH`, so only a hostile schema reaches it.
pub(super) const LOOKAHEAD_DEPTH: usize = 200;

/// A compiled schema node. Fields are named after the OpenAPI/Kubernetes keywords.
#[derive(Debug, Clone, Default)]
pub struct Schema {
    pub schema_type: Option<SchemaType>,
    pub format: Option<String>,
    /// `description`, kept for hover documentation.
    pub description: Option<String>,
    pub nullable: bool,
    pub default: Option<JsonValue>,
    pub required: Vec<String>,
    /// `enum` values with their canonical JSON text (the comparison key).
    pub enum_values: Option<Vec<(JsonValue, String)>>,
    pub pattern: Option<Pattern>,
    pub minimum: Option<f64>,
    pub exclusive_minimum: bool,
    pub maximum: Option<f64>,
    pub exclusive_maximum: bool,
    pub multiple_of: Option<f64>,
    pub min_length: Option<u64>,
    pub max_length: Option<u64>,
    pub min_items: Option<u64>,
    pub max_items: Option<u64>,
    pub min_properties: Option<u64>,
    pub max_properties: Option<u64>,
    pub properties: BTreeMap<String, Schema>,
    pub additional: Additional,
    pub items: Option<Box<Schema>>,
    pub all_of: Vec<Schema>,
    pub any_of: Vec<Schema>,
    pub one_of: Vec<Schema>,
    pub not: Option<Box<Schema>>,
    pub int_or_string: bool,
    pub preserve_unknown_fields: bool,
    pub embedded_resource: bool,
    /// `x-kubernetes-list-type`: `atomic`, `set` or `map`.
    pub list_type: Option<String>,
    pub list_map_keys: Vec<String>,
    /// The `x-kubernetes-validations` rules, compiled.
    pub cel_rules: Vec<CelRule>,
    /// Whether this node or one below it declares a `default` (`defaulting.rs`), worked out
    /// the first time a value is defaulted against it.
    defaults_below: OnceLock<bool>,
    /// Whether a rule of this node or of one below it may read `oldSelf` (`validate.rs`),
    /// worked out the first time a value is validated against it.
    transitions_below: OnceLock<bool>,
}

/// A problem in a schema, at a YAML line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileError {
    pub line: u32,
    pub message: String,
}

fn fail(node: &YamlNode, message: impl Into<String>) -> CompileError {
    CompileError {
        line: node.span.start.line,
        message: message.into(),
    }
}

impl Schema {
    /// Whether `what` holds of this node or of a node below it, worked out once per node
    /// (whichever node asked first) and kept in the node.
    pub(crate) fn has_below(&self, what: Below) -> bool {
        self.has_below_at(what, 0)
    }

    fn has_below_at(&self, what: Below, depth: usize) -> bool {
        let cell = match what {
            Below::Defaults => &self.defaults_below,
            Below::TransitionRules => &self.transitions_below,
        };
        if let Some(known) = cell.get() {
            return *known;
        }
        // Compiled schemas nest at most `MAX_DEPTH` levels; deeper, the answer that only
        // costs work (never a missed default or rule).
        if depth > LOOKAHEAD_DEPTH {
            return what == Below::TransitionRules;
        }
        let below = |child: &Schema| child.has_below_at(what, depth + 1);
        let additional = match &self.additional {
            Additional::Schema(values) => Some(&**values),
            _ => None,
        };
        // The nodes describing parts of this value: where structural defaults may sit.
        let mut nested = self
            .properties
            .values()
            .chain(self.items.as_deref())
            .chain(additional);
        let found = match what {
            Below::Defaults => self.default.is_some() || nested.any(below),
            // Rules inside junctors never run (`structural.rs`), so they are not looked for.
            Below::TransitionRules => {
                self.cel_rules
                    .iter()
                    .any(|rule| rule.rule.contains("oldSelf"))
                    || nested.any(below)
            }
        };
        *cell.get_or_init(|| found)
    }

    /// Reads a schema node (`openAPIV3Schema` or any node below it).
    pub fn compile(node: &YamlNode) -> Result<Schema, CompileError> {
        Schema::compile_sharing(node, &OnceLock::new())
    }

    /// [`Schema::compile`] with the CEL environment of `env` (made at the first rule met, and
    /// kept there for the next schemas: making one costs as much as compiling a small CRD).
    pub(crate) fn compile_sharing(
        node: &YamlNode,
        env: &OnceLock<Arc<cel::RuleEnv>>,
    ) -> Result<Schema, CompileError> {
        compile_at(node, 0, env)
    }

    /// The schema for a declared property, or for any key under `additionalProperties`.
    pub fn child(&self, key: &str) -> Option<&Schema> {
        self.child_declared(key).map(|(_, schema)| schema)
    }

    /// [`Self::child`], with the declared property's name as the schema holds it (`None` for
    /// an `additionalProperties` key): a walk's path can borrow it instead of copying the key.
    pub fn child_declared(&self, key: &str) -> Option<(Option<&str>, &Schema)> {
        match self.properties.get_key_value(key) {
            Some((declared, schema)) => Some((Some(declared.as_str()), schema)),
            None => match &self.additional {
                Additional::Schema(schema) => Some((None, schema)),
                _ => None,
            },
        }
    }
}

/// `env` is the CEL environment, made when the first rule is met and shared by the rest.
fn compile_at(
    node: &YamlNode,
    depth: usize,
    env: &OnceLock<Arc<cel::RuleEnv>>,
) -> Result<Schema, CompileError> {
    if depth > MAX_DEPTH {
        return Err(fail(
            node,
            format!("schema nested deeper than {MAX_DEPTH} levels"),
        ));
    }
    let YamlValue::Map(entries) = &node.value else {
        return Err(fail(node, "a schema must be a mapping"));
    };
    let mut schema = Schema::default();
    for (key_node, value) in entries {
        let Some(key) = key_node.key_text() else {
            return Err(fail(key_node, "schema keys must be strings"));
        };
        match &*key {
            "type" => {
                schema.schema_type = Some(match string(value, &key)?.as_str() {
                    "object" => SchemaType::Object,
                    "array" => SchemaType::Array,
                    "string" => SchemaType::String,
                    "integer" => SchemaType::Integer,
                    "number" => SchemaType::Number,
                    "boolean" => SchemaType::Boolean,
                    other => return Err(fail(value, format!("unknown type {other:?}"))),
                })
            }
            "format" => schema.format = Some(string(value, &key)?),
            "description" => schema.description = Some(string(value, &key)?),
            "nullable" => schema.nullable = boolean(value, &key)?,
            "default" => schema.default = Some(value.to_json()),
            "required" => schema.required = strings(value, &key)?,
            "enum" => {
                let YamlValue::Seq(items) = &value.value else {
                    return Err(fail(value, "`enum` must be a list"));
                };
                schema.enum_values = Some(
                    items
                        .iter()
                        .map(|item| {
                            let json = item.to_json();
                            let text = json.to_canonical_json();
                            (json, text)
                        })
                        .collect(),
                );
            }
            "pattern" => {
                // Go's regexp (RE2) is what kube-openapi uses; `re2.rs` reads Go's syntax into
                // the regex crate's, when a value is first matched against it.
                schema.pattern = Some(Pattern::new(string(value, &key)?));
            }
            "minimum" => schema.minimum = Some(number(value, &key)?),
            "maximum" => schema.maximum = Some(number(value, &key)?),
            "exclusiveMinimum" => schema.exclusive_minimum = boolean(value, &key)?,
            "exclusiveMaximum" => schema.exclusive_maximum = boolean(value, &key)?,
            "multipleOf" => schema.multiple_of = Some(number(value, &key)?),
            "minLength" => schema.min_length = Some(count(value, &key)?),
            "maxLength" => schema.max_length = Some(count(value, &key)?),
            "minItems" => schema.min_items = Some(count(value, &key)?),
            "maxItems" => schema.max_items = Some(count(value, &key)?),
            "minProperties" => schema.min_properties = Some(count(value, &key)?),
            "maxProperties" => schema.max_properties = Some(count(value, &key)?),
            "properties" => {
                let YamlValue::Map(props) = &value.value else {
                    return Err(fail(value, "`properties` must be a mapping"));
                };
                for (name, prop) in props {
                    let Some(name) = name.key_string() else {
                        return Err(fail(name, "property names must be strings"));
                    };
                    schema
                        .properties
                        .insert(name, compile_at(prop, depth + 1, env)?);
                }
            }
            "additionalProperties" => {
                schema.additional = match &value.value {
                    YamlValue::Bool(true) => Additional::Any,
                    YamlValue::Bool(false) => Additional::None,
                    _ => Additional::Schema(Box::new(compile_at(value, depth + 1, env)?)),
                }
            }
            "items" => schema.items = Some(Box::new(compile_at(value, depth + 1, env)?)),
            "allOf" => schema.all_of = schema_list(value, &key, depth, env)?,
            "anyOf" => schema.any_of = schema_list(value, &key, depth, env)?,
            "oneOf" => schema.one_of = schema_list(value, &key, depth, env)?,
            "not" => schema.not = Some(Box::new(compile_at(value, depth + 1, env)?)),
            "x-kubernetes-int-or-string" => schema.int_or_string = boolean(value, &key)?,
            "x-kubernetes-preserve-unknown-fields" => {
                schema.preserve_unknown_fields = boolean(value, &key)?
            }
            "x-kubernetes-embedded-resource" => schema.embedded_resource = boolean(value, &key)?,
            "x-kubernetes-list-type" => {
                let list_type = string(value, &key)?;
                if !matches!(list_type.as_str(), "atomic" | "set" | "map") {
                    return Err(fail(
                        value,
                        format!(
                            "x-kubernetes-list-type must be atomic, set or map, not {list_type:?}"
                        ),
                    ));
                }
                schema.list_type = Some(list_type);
            }
            "x-kubernetes-list-map-keys" => schema.list_map_keys = strings(value, &key)?,
            "x-kubernetes-validations" => {
                let YamlValue::Seq(rules) = &value.value else {
                    return Err(fail(value, "`x-kubernetes-validations` must be a list"));
                };
                for rule in rules {
                    let text = rule
                        .get("rule")
                        .ok_or_else(|| fail(rule, "a validation rule needs `rule`"))?;
                    let optional = |key: &str| -> Result<Option<String>, CompileError> {
                        rule.get(key).map(|node| string(node, key)).transpose()
                    };
                    let field_path = match rule.get("fieldPath") {
                        None => Vec::new(),
                        Some(node) => cel::parse_field_path(&string(node, "fieldPath")?)
                            .ok_or_else(|| {
                                fail(node, "`fieldPath` must be a path like .a.b or .a['b']")
                            })?,
                    };
                    let text = RuleText {
                        rule: string(text, "rule")?,
                        message: optional("message")?,
                        message_expression: optional("messageExpression")?,
                        reason: optional("reason")?,
                        field_path,
                        optional_old_self: match rule.get("optionalOldSelf") {
                            Some(node) => boolean(node, "optionalOldSelf")?,
                            None => false,
                        },
                    };
                    let env = env.get_or_init(cel::environment);
                    schema.cel_rules.push(CelRule::compile(text, env));
                }
            }
            // Documentation and keywords with no effect on validation (`title`, `example`,
            // `externalDocs`, `x-kubernetes-map-type`, …).
            _ => {}
        }
    }
    if schema.list_type.as_deref() == Some("map") && schema.list_map_keys.is_empty() {
        return Err(fail(
            node,
            "x-kubernetes-list-type: map needs x-kubernetes-list-map-keys",
        ));
    }
    Ok(schema)
}

fn schema_list(
    node: &YamlNode,
    key: &str,
    depth: usize,
    env: &OnceLock<Arc<cel::RuleEnv>>,
) -> Result<Vec<Schema>, CompileError> {
    let YamlValue::Seq(items) = &node.value else {
        return Err(fail(node, format!("`{key}` must be a list of schemas")));
    };
    let mut schemas = Vec::with_capacity(items.len());
    for item in items {
        schemas.push(compile_at(item, depth + 1, env)?);
    }
    Ok(schemas)
}

fn string(node: &YamlNode, key: &str) -> Result<String, CompileError> {
    match &node.value {
        YamlValue::String(s) => Ok(s.clone()),
        _ => Err(fail(node, format!("`{key}` must be a string"))),
    }
}

fn strings(node: &YamlNode, key: &str) -> Result<Vec<String>, CompileError> {
    let YamlValue::Seq(items) = &node.value else {
        return Err(fail(node, format!("`{key}` must be a list of strings")));
    };
    items.iter().map(|item| string(item, key)).collect()
}

fn boolean(node: &YamlNode, key: &str) -> Result<bool, CompileError> {
    match node.value {
        YamlValue::Bool(b) => Ok(b),
        _ => Err(fail(node, format!("`{key}` must be true or false"))),
    }
}

fn number(node: &YamlNode, key: &str) -> Result<f64, CompileError> {
    match node.value {
        YamlValue::Int(i) => Ok(i as f64),
        YamlValue::Float(f) if f.is_finite() => Ok(f),
        _ => Err(fail(node, format!("`{key}` must be a number"))),
    }
}

fn count(node: &YamlNode, key: &str) -> Result<u64, CompileError> {
    match node.value {
        YamlValue::Int(i) if i >= 0 => Ok(i as u64),
        _ => Err(fail(
            node,
            format!("`{key}` must be a non-negative integer"),
        )),
    }
}
