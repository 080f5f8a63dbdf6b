//! Parsing, costing and evaluating a `x-kubernetes-validations` rule on a value, converted for
//! CEL as the API server converts it under the rule's schema (apiextensions-apiserver
//! `pkg/apiserver/schema/cel/values.go` and `model/`: `integer` is int, `number` is double,
//! objects are maps of the fields left after pruning).
//!
//! What is reported as "not checked" rather than guessed: rules the crate cannot parse or that
//! exceed our bounds, and rules whose evaluation fails for want of a function of the Kubernetes
//! CEL libraries the crate lacks (`quantity`, `url`, `ip`, …). Evaluation errors the API server
//! would report (`no such key`, a failed conversion) are field errors.

use std::collections::HashMap;
use std::sync::Arc;

use cel::common::types::CelOptional;
use cel::common::value::Val;
use cel::objects::Key;
use cel::{Context, ExecutionError, Value};

use super::cel::{CelOutcome, CelRule, Check, Failure, Old, Parsed, escape_property, short_rule};
use super::compile::{Additional, Schema, SchemaType};
use super::{cel_bounds, cel_cost, cel_library};
use crate::value::JsonValue;

/// Values nested deeper than this (below fields the schema leaves free) are not converted.
const MAX_VALUE_DEPTH: usize = 100;

impl CelRule {
    /// The parsed rule (parsed and costed on first use; every later use shares it).
    fn check(&self, schema: &Schema) -> &Check {
        self.check.get_or_init(|| {
            let parsed = match self.parse(&self.rule, Some(schema)) {
                Ok(parsed) => parsed,
                Err(refused) => return refused,
            };
            // A messageExpression the crate cannot use falls back to the message, as the API
            // server falls back when one fails.
            let message = self
                .text
                .message_expression
                .as_deref()
                .and_then(|source| self.parse(source, None).ok());
            let transition = parsed.program.references().has_variable("oldSelf");
            let cost = cel_cost::estimate(parsed.program.expression(), schema);
            let message_cost = message
                .as_ref()
                .map_or(0, |m| cel_cost::estimate(m.program.expression(), schema));
            Check::Ready {
                program: parsed,
                message,
                transition,
                cost,
                message_cost,
            }
        })
    }

    /// The rule's estimated cost and its messageExpression's, for the CRD's total (parsing
    /// the rule if it was not yet); a rule over the per-rule limit counts as that limit (it
    /// is reported on its own), one that cannot be parsed as nothing.
    pub(crate) fn estimated_costs(&self, schema: &Schema) -> (u64, u64) {
        match self.check(schema) {
            Check::Ready {
                cost, message_cost, ..
            } => (*cost, *message_cost),
            Check::CrdRefused(_) => (cel_cost::STATIC_ESTIMATED_COST_LIMIT, 0),
            Check::Refused(_) => (0, 0),
        }
    }

    /// Parses `source` within our bounds (once per text, see `RuleEnv`), and with `schema`
    /// given, checks its estimated cost.
    fn parse(&self, source: &str, schema: Option<&Schema>) -> Result<Arc<Parsed>, Check> {
        let program = self.parsed(source).map_err(Check::Refused)?;
        if let Some(schema) = schema {
            let cost = cel_cost::estimate(program.program.expression(), schema);
            if cost > cel_cost::STATIC_ESTIMATED_COST_LIMIT {
                return Err(Check::CrdRefused(format!(
                    "the API server refuses this CRD: the estimated cost of rule {} is \
                     {cost}, more than the {} it allows a rule (apiextensions \
                     StaticEstimatedCostLimit; shorten the lists it walks with maxItems, \
                     maxLength, maxProperties)",
                    short_rule(&self.rule),
                    cel_cost::STATIC_ESTIMATED_COST_LIMIT
                )));
            }
        }
        Ok(program)
    }

    /// `source` parsed, or why it cannot be checked: from the environment's cache, else
    /// parsed now (outside the lock) and kept.
    fn parsed(&self, source: &str) -> Result<Arc<Parsed>, String> {
        if let Some(reason) = cel_bounds::refuse_before_parse(source) {
            return Err(reason);
        }
        let cache = || self.env.parsed.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(known) = cache().get(source) {
            return known.clone();
        }
        let env = Arc::clone(&self.env.env);
        let parsed = cel_bounds::parse_guarded(|| {
            let program = env
                .compile(source)
                .map_err(|errors| format!("the CEL crate cannot parse it: {errors}"))?;
            let depth = cel_bounds::tree_depth(program.expression());
            if depth > cel_bounds::MAX_TREE_DEPTH {
                return Err(format!(
                    "its parsed tree is {depth} levels deep, more than the {} this checker \
                     evaluates",
                    cel_bounds::MAX_TREE_DEPTH
                ));
            }
            // A call the environment lacks fails only if it runs: found here, the rule is not
            // checked even where that call sits in a branch the value does not take.
            if let Some(reason) = cel_library::unsupported_function(program.expression(), &env) {
                return Err(reason);
            }
            let metered = cel_bounds::metered(program.expression());
            // Within MAX_METERED_DEPTH by construction; checked, as the stack is sized by it.
            let depth = cel_bounds::tree_depth(&metered);
            if depth > cel_bounds::MAX_METERED_DEPTH {
                return Err(format!(
                    "its metered tree is {depth} levels deep, more than the {} this checker \
                     evaluates",
                    cel_bounds::MAX_METERED_DEPTH
                ));
            }
            Ok(Arc::new(Parsed {
                program,
                metered,
                metered_depth: depth,
            }))
        });
        let result = parsed.unwrap_or_else(Err);
        cache().insert(source.to_owned(), result.clone());
        result
    }

    /// Evaluates the rule with `self` = `value` (which has passed `schema`'s type check).
    pub(crate) fn evaluate(
        &self,
        schema: &Schema,
        value: &JsonValue,
        old: Old<'_>,
        root: bool,
    ) -> CelOutcome {
        let (program, message_program, transition) = match self.check(schema) {
            Check::Ready {
                program,
                message,
                transition,
                ..
            } => (program, message, *transition),
            Check::CrdRefused(reason) => return CelOutcome::CrdRefused(reason.clone()),
            Check::Refused(reason) => return CelOutcome::NotChecked(reason.clone()),
        };
        // apiextensions-apiserver `pkg/apiserver/schema/cel/validation.go`: a transition rule
        // runs only where the old object has the node, unless it declares `optionalOldSelf`;
        // then it runs on new values too, with `oldSelf` an optional (`optional.none()` there).
        let optional = self.text.optional_old_self;
        let old_value = match (transition, old) {
            (false, _) => None,
            (true, Old::Value(old)) => Some(Some(old)),
            (true, Old::Absent) if optional => Some(None),
            (true, Old::Absent) => return CelOutcome::Passed,
            (true, Old::Unknown) => {
                return CelOutcome::NotChecked(
                    "a transition rule (it reads oldSelf, the object before the update, not \
                     known here)"
                        .into(),
                );
            }
        };
        let Some(this) = to_cel(Some(schema), value, root, 0) else {
            return CelOutcome::NotChecked(format!(
                "the value is nested deeper than {MAX_VALUE_DEPTH} levels"
            ));
        };
        let mut context = Context::with_env(Arc::clone(&self.env.env));
        context.add_variable_from_value("self", this);
        if let Some(old) = old_value {
            let old = match old.map(|old| to_cel(Some(schema), old, root, 0)) {
                Some(None) => {
                    return CelOutcome::NotChecked(format!(
                        "the old value is nested deeper than {MAX_VALUE_DEPTH} levels"
                    ));
                }
                Some(Some(old)) => Some(old),
                None => None,
            };
            match (optional, old) {
                (false, Some(old)) => context.add_variable_from_value("oldSelf", old),
                (true, old) => {
                    let optional = match old.map(Box::<dyn Val>::try_from) {
                        Some(Ok(old)) => CelOptional::of(old),
                        Some(Err(_)) => {
                            return CelOutcome::NotChecked(
                                "the old value cannot be made an optional".into(),
                            );
                        }
                        None => CelOptional::none(),
                    };
                    context.add_variable_as_val("oldSelf", Box::new(optional));
                }
                (false, None) => {}
            }
        }
        let text = &self.text;
        // apiextensions `schema/cel/validation.go`: `ruleErrorString` and `ruleMessageOrDefault`.
        let rule_error_string = || {
            text.message
                .as_deref()
                .map(str::trim)
                .filter(|m| !m.is_empty())
                .map_or_else(|| short_rule(&text.rule), str::to_owned)
        };
        let executed = match cel_bounds::evaluate_metered(program.metered_depth, || {
            Value::resolve(&program.metered, &context)
        }) {
            Ok((_, true)) => {
                // The API server counts cost as it runs and cancels a rule past its per-call
                // limit; our meter counts in the same order, not to cel-go's figure, so
                // whether the API server stops this rule too is likely but not certain.
                return CelOutcome::NotChecked(format!(
                    "evaluating it costs more than {} by our count (steps and the sizes of \
                         what it builds), the API server's limit for one rule (PerCallLimit), \
                         which likely stops it with \"operation cancelled: actual cost limit \
                         exceeded\"",
                    cel_bounds::PER_CALL_LIMIT
                ));
            }
            Ok((executed, false)) => executed,
            Err(panic) => return CelOutcome::NotChecked(panic),
        };
        let at_node = |message: String| {
            CelOutcome::Failed(Failure {
                message,
                field_path: Vec::new(),
                ratchets: false,
            })
        };
        match executed {
            Ok(Value::Bool(true)) => CelOutcome::Passed,
            Ok(Value::Bool(false)) => {
                let message = message_program
                    .as_ref()
                    .and_then(|p| {
                        cel_bounds::evaluate_metered(p.metered_depth, || {
                            Value::resolve(&p.metered, &context)
                        })
                        .ok()
                    })
                    // Past the budget, the message falls back as on any failure.
                    .and_then(|(result, overrun)| (!overrun).then_some(result))
                    .and_then(|result| match result {
                        // An empty or multi-line result falls back to the message.
                        Ok(Value::String(s)) if !s.trim().is_empty() && !s.contains('\n') => {
                            Some(s.to_string())
                        }
                        _ => None,
                    })
                    .unwrap_or_else(|| match text.message.as_deref().map(str::trim) {
                        Some(message) if !message.is_empty() => message.to_owned(),
                        _ => format!("failed rule: {}", rule_error_string()),
                    });
                let message = match text.reason.as_deref() {
                    Some("FieldValueForbidden") => format!("Forbidden: {message}"),
                    Some("FieldValueRequired") => format!("Required value: {message}"),
                    Some("FieldValueDuplicate") => format!("Duplicate value: {message}"),
                    _ => message,
                };
                CelOutcome::Failed(Failure {
                    message,
                    field_path: text.field_path.clone(),
                    ratchets: !transition,
                })
            }
            Ok(other) => {
                CelOutcome::NotChecked(format!("it gives {:?}, not a boolean", other.type_of()))
            }
            // What cel-go fails on too at run time: the API server reports it as an invalid
            // value, "<error> evaluating rule: <message or rule>".
            Err(
                error @ (ExecutionError::NoSuchKey(_)
                | ExecutionError::FunctionError { .. }
                | ExecutionError::DivisionByZero(_)
                | ExecutionError::RemainderByZero(_)
                | ExecutionError::Overflow(..)
                | ExecutionError::IndexOutOfBounds(_)
                | ExecutionError::DuplicateKey(_)),
            ) => at_node(format!(
                "{} evaluating rule: {}",
                api_server_error_text(&error),
                rule_error_string()
            )),
            // A value past what this checker's Kubernetes functions model (cel_library).
            Err(ExecutionError::InternalError(reason)) => CelOutcome::NotChecked(reason),
            Err(error) => {
                CelOutcome::NotChecked(format!("the CEL crate could not evaluate it: {error}"))
            }
        }
    }
}

/// An evaluation error as cel-go words the common ones (`no such key: x`).
fn api_server_error_text(error: &ExecutionError) -> String {
    match error {
        ExecutionError::NoSuchKey(key) => format!("no such key: {key}"),
        ExecutionError::DivisionByZero(_) => "division by zero".to_owned(),
        ExecutionError::RemainderByZero(_) => "modulus by zero".to_owned(),
        ExecutionError::Overflow(..) => "integer overflow".to_owned(),
        other => other.to_string(),
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
            // An object with declared properties has its fields under their escaped names
            // (`__namespace__`, `a__dash__b`); a name that cannot be escaped stays as it is,
            // which no field selection can name (it is iterated so too: apiserver
            // `pkg/cel/common/valuesunstructured.go`, `unstructuredMap.Iterator`). A map's
            // keys (`additionalProperties`) are data and are not escaped.
            let structured = schema.is_some_and(|s| !s.properties.is_empty());
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
                let name = match structured.then(|| escape_property(key)).flatten() {
                    Some(escaped) => escaped,
                    None => key.clone(),
                };
                let converted = to_cel(child, field, false, depth + 1)?;
                map.insert(Key::String(Arc::new(name)), converted);
            }
            Value::Map(map.into())
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::cel::parse_field_path;
    use crate::yaml::PathSeg;
    use crate::yaml::parse_first_document;

    fn outcome(schema_yaml: &str, value_yaml: &str) -> CelOutcome {
        let schema = Schema::compile(&parse_first_document(schema_yaml).unwrap().unwrap()).unwrap();
        let value = parse_first_document(value_yaml).unwrap().unwrap().to_json();
        let rule = &schema.cel_rules[0];
        rule.evaluate(&schema, &value, Old::Unknown, false)
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
            CelOutcome::Failed(Failure {
                message: "low must not exceed high".into(),
                field_path: Vec::new(),
                ratchets: true,
            })
        );
        // A missing field is an error, as in the API server.
        assert!(
            matches!(outcome(&schema, "{low: 3}"), CelOutcome::Failed(f) if f.message.contains("no such key: high"))
        );
    }

    #[test]
    fn macros_and_string_functions() {
        let schema = "type: array\nmaxItems: 10\nitems: {type: string, maxLength: 10}\nx-kubernetes-validations:\n- rule: \"self.all(s, s.startsWith('/') && size(s) < 5) && self.exists(s, s.lowerAscii() == '/a')\"\n";
        assert_eq!(outcome(schema, "[/A, /bc]"), CelOutcome::Passed);
        assert!(
            matches!(outcome(schema, "[/A, bc]"), CelOutcome::Failed(f) if f.message.starts_with("failed rule: "))
        );
        let has = format!(
            "{LIMITS}x-kubernetes-validations:\n- rule: \"!has(self.low) || self.low >= 0\"\n"
        );
        assert_eq!(outcome(&has, "{high: 1}"), CelOutcome::Passed);
        assert!(matches!(outcome(&has, "{low: -1}"), CelOutcome::Failed(_)));
    }

    #[test]
    fn evaluation_errors_are_field_errors_with_the_rules_texts() {
        // apiextensions `schema/cel/validation.go`: "<error> evaluating rule: <message or rule>".
        let conversion = "type: object\nproperties:\n  port: {type: string}\n  timeout: {type: string}\nx-kubernetes-validations:\n- rule: int(self.port) > 0\n  message: port must be a number\n";
        assert!(matches!(
            outcome(conversion, "{port: apple}"),
            CelOutcome::Failed(f) if f.message.ends_with("evaluating rule: port must be a number")
        ));
        let duration = "type: object\nproperties:\n  timeout: {type: string}\nx-kubernetes-validations:\n- rule: duration(self.timeout) > duration('0s')\n";
        assert!(matches!(
            outcome(duration, "{timeout: apple}"),
            CelOutcome::Failed(f) if f.message.contains("evaluating rule: duration(self.timeout)")
        ));
        assert_eq!(outcome(duration, "{timeout: 10s}"), CelOutcome::Passed);
        // messageExpression, reason and fieldPath of a false rule.
        let texts = format!(
            "{LIMITS}x-kubernetes-validations:\n- rule: self.low <= self.high\n  message: static\n  messageExpression: \"'low ' + string(self.low) + ' exceeds high'\"\n  reason: FieldValueForbidden\n  fieldPath: .low\n"
        );
        assert_eq!(
            outcome(&texts, "{low: 3, high: 2}"),
            CelOutcome::Failed(Failure {
                message: "Forbidden: low 3 exceeds high".into(),
                field_path: vec![PathSeg::Key("low".into())],
                ratchets: true,
            })
        );
        // A messageExpression giving an empty string falls back to the message.
        let empty = format!(
            "{LIMITS}x-kubernetes-validations:\n- rule: self.low <= self.high\n  message: static\n  messageExpression: \"''\"\n"
        );
        assert_eq!(
            outcome(&empty, "{low: 3, high: 2}"),
            CelOutcome::Failed(Failure {
                message: "static".into(),
                field_path: Vec::new(),
                ratchets: true,
            })
        );
        assert_eq!(
            parse_field_path(".a['b.c'].d"),
            Some(vec![
                PathSeg::Key("a".into()),
                PathSeg::Key("b.c".into()),
                PathSeg::Key("d".into())
            ])
        );
        assert_eq!(parse_field_path("a"), None);
    }

    #[test]
    fn what_cannot_be_checked_says_so() {
        let transition =
            format!("{LIMITS}x-kubernetes-validations:\n- rule: self.low >= oldSelf.low\n");
        assert!(
            matches!(outcome(&transition, "{low: 1}"), CelOutcome::NotChecked(m) if m.contains("oldSelf"))
        );
        // A function this checker lacks, even in a branch that does not run.
        let k8s_library = "type: string\nx-kubernetes-validations:\n- rule: \"size(self) > 0 || [1].all(i, v, v > 0)\"\n";
        assert!(matches!(
            outcome(k8s_library, "x"),
            CelOutcome::NotChecked(m) if m.contains("two-variable")
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
            schema.cel_rules[0].evaluate(&schema, &value, Old::Unknown, false),
            CelOutcome::Passed
        );
    }

    fn outcome_with_old(schema_yaml: &str, value_yaml: &str, old: Option<&str>) -> CelOutcome {
        let schema = Schema::compile(&parse_first_document(schema_yaml).unwrap().unwrap()).unwrap();
        let value = parse_first_document(value_yaml).unwrap().unwrap().to_json();
        let old = old.map(|old| parse_first_document(old).unwrap().unwrap().to_json());
        let old = old.as_ref().map_or(Old::Absent, Old::Value);
        schema.cel_rules[0].evaluate(&schema, &value, old, false)
    }

    #[test]
    fn optional_old_self_runs_on_new_values_with_an_optional() {
        // apiextensions `schema/cel/validation.go`: with optionalOldSelf the rule runs on a
        // create too, `oldSelf` being optional.none(); otherwise it does not run there.
        let schema = "type: string\nx-kubernetes-validations:\n- rule: \"oldSelf.hasValue() ? self == oldSelf.value() : self.startsWith('v')\"\n  optionalOldSelf: true\n";
        assert_eq!(outcome_with_old(schema, "v1", None), CelOutcome::Passed);
        assert!(matches!(
            outcome_with_old(schema, "x1", None),
            CelOutcome::Failed(_)
        ));
        assert_eq!(
            outcome_with_old(schema, "x1", Some("x1")),
            CelOutcome::Passed
        );
        assert!(matches!(
            outcome_with_old(schema, "v2", Some("v1")),
            CelOutcome::Failed(_)
        ));
        let plain = "type: string\nx-kubernetes-validations:\n- rule: self == oldSelf\n";
        assert_eq!(outcome_with_old(plain, "x", None), CelOutcome::Passed);
        assert!(matches!(
            outcome_with_old(plain, "x", Some("y")),
            CelOutcome::Failed(_)
        ));
    }

    #[test]
    fn kubernetes_library_rules_are_checked() {
        // Istio's jwksUri rule (security/v1beta1 RequestAuthentication, JWTRule).
        let jwks = "type: string\nmaxLength: 2048\nx-kubernetes-validations:\n- rule: url(self).getScheme() in ['http', 'https']\n  message: url must have scheme http:// or https://\n";
        assert_eq!(
            outcome(jwks, "https://example.com/.well-known/jwks.json"),
            CelOutcome::Passed
        );
        assert_eq!(
            outcome(jwks, "ftp://example.com/keys"),
            CelOutcome::Failed(Failure {
                message: "url must have scheme http:// or https://".into(),
                field_path: Vec::new(),
                ratchets: true,
            })
        );
        // Not a URL at all: an evaluation error, reported as the API server reports it.
        assert!(matches!(
            outcome(jwks, "../keys"),
            CelOutcome::Failed(f) if f.message.contains("evaluating rule: url must have scheme")
        ));
        let quantity = "type: string\nx-kubernetes-validations:\n- rule: quantity(self).compareTo(quantity('1Gi')) <= 0\n  message: at most 1Gi\n";
        assert_eq!(outcome(quantity, "512Mi"), CelOutcome::Passed);
        assert!(
            matches!(outcome(quantity, "2Gi"), CelOutcome::Failed(f) if f.message == "at most 1Gi")
        );
        assert!(
            matches!(outcome(quantity, "lots"), CelOutcome::Failed(f) if f.message.contains("evaluating rule"))
        );
    }

    #[test]
    fn rules_that_would_run_for_ever_or_exhaust_memory_end() {
        // Each walks or builds lists of `lists.range`: the estimate prices what they build, so
        // the API server refuses such a CRD, and they are not run.
        for hostile in [
            "lists.range(1000000).all(x, lists.range(1000000).all(y, y >= 0))",
            "lists.range(100000).map(x, lists.range(100000)).size() > 0",
        ] {
            let schema = format!(
                "type: object\nproperties:\n  name: {{type: string, maxLength: 10}}\nx-kubernetes-validations:\n- rule: '{hostile}'\n"
            );
            assert!(
                matches!(outcome(&schema, "{name: a}"), CelOutcome::CrdRefused(m) if m.contains("StaticEstimatedCostLimit")),
                "{hostile}"
            );
        }
    }

    #[test]
    fn property_names_are_escaped_as_the_api_server_escapes_them() {
        // k8s.io/apiserver `pkg/cel/escaping.go`: reserved words become `__word__`; `__`, `.`,
        // `-` and `/` become `__underscores__`, `__dot__`, `__dash__`, `__slash__`; a name
        // with any other character, or starting with a digit, is not accessible.
        let schema = "type: object\nproperties:\n  namespace: {type: string}\n  if: {type: integer}\n  a-b: {type: integer}\n  a.b/c: {type: integer}\n  x__y: {type: integer}\n  plain_name: {type: integer}\n  1st: {type: integer}\n  a b: {type: integer}\nx-kubernetes-validations:\n- rule: \"has(self.__namespace__) && self.__namespace__ == 'ns' && self.__if__ == 1 && self.a__dash__b == 2 && self.a__dot__b__slash__c == 3 && self.x__underscores__y == 4 && self.plain_name == 5 && !has(self.a) && !has(self.a__dot__b)\"\n";
        let value =
            "{namespace: ns, if: 1, a-b: 2, a.b/c: 3, x__y: 4, plain_name: 5, 1st: 6, a b: 7}";
        assert_eq!(outcome(schema, value), CelOutcome::Passed);
        // Without the field, `has` is false (and the rule fails), as in the API server.
        let absent = "{if: 1, a-b: 2, a.b/c: 3, x__y: 4, plain_name: 5}";
        assert!(matches!(outcome(schema, absent), CelOutcome::Failed(_)));
        // The unescaped names are not fields in CEL.
        let raw = "type: object\nproperties:\n  a-b: {type: integer}\nx-kubernetes-validations:\n- rule: \"!has(self.a) && self.a__dash__b == 2\"\n";
        assert_eq!(outcome(raw, "{a-b: 2}"), CelOutcome::Passed);
        // A map's keys (additionalProperties) are data, not escaped.
        let map = "type: object\nadditionalProperties: {type: integer}\nx-kubernetes-validations:\n- rule: \"self['a-b'] == 2 && !('a__dash__b' in self)\"\n";
        assert_eq!(outcome(map, "{a-b: 2}"), CelOutcome::Passed);
    }

    #[test]
    fn a_rule_repeated_at_many_nodes_is_parsed_once() {
        let schema = "type: object\nproperties:\n  a: &timeout\n    type: string\n    x-kubernetes-validations:\n    - rule: duration(self) >= duration('1ms')\n  b: *timeout\n  c: *timeout\n";
        let schema = Schema::compile(&parse_first_document(schema).unwrap().unwrap()).unwrap();
        let value = JsonValue::String("5s".into());
        for field in ["a", "b", "c"] {
            let node = &schema.properties[field];
            assert_eq!(
                node.cel_rules[0].evaluate(node, &value, Old::Unknown, false),
                CelOutcome::Passed
            );
        }
        let env = &schema.properties["a"].cel_rules[0].env;
        assert!(Arc::ptr_eq(env, &schema.properties["c"].cel_rules[0].env));
        assert_eq!(env.parsed.lock().unwrap().len(), 1);
    }
}
