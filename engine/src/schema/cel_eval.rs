//! Evaluating a `x-kubernetes-validations` rule on a value, which is converted for CEL as the
//! API server converts it under the rule's schema (apiextensions-apiserver
//! `pkg/apiserver/schema/cel/values.go`).

use std::collections::HashMap;
use std::sync::Arc;

use cel::objects::Key;
use cel::{Context, ExecutionError, Value};

use super::cel::{CelOutcome, CelRule, Check};
use super::compile::{Additional, Schema, SchemaType};
use crate::value::JsonValue;

/// Values nested deeper than this (below fields the schema leaves free) are not converted.
const MAX_VALUE_DEPTH: usize = 100;

impl CelRule {
    /// Evaluates the rule with `self` = `value` (which has passed `schema`'s type check).
    pub(crate) fn evaluate(&self, schema: &Schema, value: &JsonValue, root: bool) -> CelOutcome {
        let (program, env) = match self.check() {
            Check::Ready(program, env) => (program, env),
            Check::Transition => {
                return CelOutcome::NotChecked(
                    "a transition rule (it reads oldSelf, the object before the update)".into(),
                );
            }
            Check::Refused(reason) => return CelOutcome::NotChecked(reason.clone()),
        };
        let Some(this) = to_cel(Some(schema), value, root, 0) else {
            return CelOutcome::NotChecked(format!(
                "the value is nested deeper than {MAX_VALUE_DEPTH} levels"
            ));
        };
        let mut context = Context::with_env(Arc::clone(env));
        context.add_variable_from_value("self", this);
        let failure = || {
            self.message
                .clone()
                .unwrap_or_else(|| format!("failed rule: {}", self.rule))
        };
        match program.execute(&context) {
            Ok(Value::Bool(true)) => CelOutcome::Passed,
            Ok(Value::Bool(false)) => CelOutcome::Failed(failure()),
            Ok(other) => {
                CelOutcome::NotChecked(format!("it gives {:?}, not a boolean", other.type_of()))
            }
            Err(ExecutionError::NoSuchKey(key)) => {
                CelOutcome::Failed(format!("no such key: {key} evaluating rule: {}", self.rule))
            }
            Err(error) => {
                CelOutcome::NotChecked(format!("the CEL crate could not evaluate it: {error}"))
            }
        }
    }
}

/// `value` as CEL sees it under `schema` (`None`: a field the schema leaves free, converted by
/// its JSON type). `None` when nested too deep.
fn to_cel(schema: Option<&Schema>, value: &JsonValue, root: bool, depth: usize) -> Option<Value> {
    if depth > MAX_VALUE_DEPTH {
        return None;
    }
    let schema_type = schema.and_then(|s| s.schema_type);
    Some(match value {
        JsonValue::Null => Value::Null,
        JsonValue::Bool(b) => Value::Bool(*b),
        JsonValue::Int(i) if schema_type == Some(SchemaType::Number) => Value::Float(*i as f64),
        JsonValue::Int(i) => Value::Int(*i),
        JsonValue::Float(f) => {
            // On the wire an integral float below 2^63 is digits, decoded as int64.
            let integral = f.trunc() == *f && f.abs() < 9_223_372_036_854_775_808.0;
            if integral && schema_type != Some(SchemaType::Number) {
                Value::Int(*f as i64)
            } else {
                Value::Float(*f)
            }
        }
        JsonValue::String(s) => Value::String(Arc::new(s.clone())),
        JsonValue::Array(items) => {
            let item_schema = schema.and_then(|s| s.items.as_deref());
            let list = items
                .iter()
                .map(|item| to_cel(item_schema, item, false, depth + 1))
                .collect::<Option<Vec<_>>>()?;
            Value::List(Arc::new(list))
        }
        JsonValue::Object(fields) => {
            let mut map = HashMap::new();
            for (key, field) in fields {
                let child = match schema {
                    None => None,
                    Some(s) => match s.child(key) {
                        Some(child) => {
                            if matches!(field, JsonValue::Null) && !child.nullable {
                                continue; // pruned before validation
                            }
                            Some(child)
                        }
                        None => {
                            let kept = s.preserve_unknown_fields
                                || matches!(s.additional, Additional::Any)
                                || (root
                                    && matches!(key.as_str(), "apiVersion" | "kind" | "metadata"));
                            if !kept {
                                continue; // pruned
                            }
                            None
                        }
                    },
                };
                let converted = to_cel(child, field, false, depth + 1)?;
                map.insert(Key::String(Arc::new(key.clone())), converted);
            }
            Value::Map(map.into())
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::parse_first_document;

    fn outcome(schema_yaml: &str, value_yaml: &str) -> CelOutcome {
        let schema = Schema::compile(&parse_first_document(schema_yaml).unwrap().unwrap()).unwrap();
        let value = parse_first_document(value_yaml).unwrap().unwrap().to_json();
        let rule = &schema.cel_rules[0];
        rule.evaluate(&schema, &value, false)
    }

    const LIMITS: &str =
        "type: object\nproperties:\n  low: {type: integer}\n  high: {type: integer}\n";

    #[test]
    fn rules_pass_and_fail() {
        let schema = format!(
            "{LIMITS}x-kubernetes-validations:\n- rule: self.low <= self.high\n  message: low must not exceed high\n"
        );
        assert_eq!(outcome(&schema, "{low: 1, high: 2}"), CelOutcome::Passed);
        assert_eq!(
            outcome(&schema, "{low: 3, high: 2}"),
            CelOutcome::Failed("low must not exceed high".into())
        );
        // A missing field is an error, as in the API server.
        assert!(
            matches!(outcome(&schema, "{low: 3}"), CelOutcome::Failed(m) if m.contains("no such key: high"))
        );
    }

    #[test]
    fn macros_and_string_functions() {
        let schema = "type: array\nitems: {type: string}\nx-kubernetes-validations:\n- rule: \"self.all(s, s.startsWith('/') && size(s) < 5) && self.exists(s, s.lowerAscii() == '/a')\"\n";
        assert_eq!(outcome(schema, "[/A, /bc]"), CelOutcome::Passed);
        assert!(
            matches!(outcome(schema, "[/A, bc]"), CelOutcome::Failed(m) if m.starts_with("failed rule: "))
        );
        let has = format!(
            "{LIMITS}x-kubernetes-validations:\n- rule: \"!has(self.low) || self.low >= 0\"\n"
        );
        assert_eq!(outcome(&has, "{high: 1}"), CelOutcome::Passed);
        assert!(matches!(outcome(&has, "{low: -1}"), CelOutcome::Failed(_)));
    }

    #[test]
    fn what_cannot_be_checked_says_so() {
        let transition =
            format!("{LIMITS}x-kubernetes-validations:\n- rule: self.low >= oldSelf.low\n");
        assert!(
            matches!(outcome(&transition, "{low: 1}"), CelOutcome::NotChecked(m) if m.contains("oldSelf"))
        );
        let k8s_library = "type: string\nx-kubernetes-validations:\n- rule: isURL(self)\n";
        assert!(matches!(
            outcome(k8s_library, "x"),
            CelOutcome::NotChecked(_)
        ));
        let unparsable = "type: string\nx-kubernetes-validations:\n- rule: \"self ==\"\n";
        assert!(
            matches!(outcome(unparsable, "x"), CelOutcome::NotChecked(m) if m.contains("parse"))
        );
    }

    #[test]
    fn integral_floats_are_ints_and_pruned_fields_are_absent() {
        let schema = format!(
            "{LIMITS}x-kubernetes-validations:\n- rule: \"self.low == 2 && !has(self.extra)\"\n"
        );
        let value = JsonValue::Object(
            [
                ("low".to_owned(), JsonValue::Float(2.0)),
                ("extra".to_owned(), JsonValue::Int(1)),
            ]
            .into_iter()
            .collect(),
        );
        let schema = Schema::compile(&parse_first_document(&schema).unwrap().unwrap()).unwrap();
        assert_eq!(
            schema.cel_rules[0].evaluate(&schema, &value, false),
            CelOutcome::Passed
        );
    }
}
