//! Validating a value against a compiled [`Schema`] with the API server's order and rules:
//! defaulting first (`defaulting.rs`), then pruning (undeclared fields and non-nullable nulls
//! are dropped, reported as warnings), then value validation of what is left (errors), then list-type uniqueness.
//! On an update, the errors of values the update leaves unchanged are ratcheted (`ratchet.rs`).
//!
//! Sources, all read, none copied: pruning is apiextensions-apiserver
//! `pkg/apiserver/schema/pruning/algorithm.go` (`prune`, `skipPrune`: fields of
//! `metaFields` are kept at an embedded resource) and `schema/defaulting/prunenulls.go`
//! (`isNonNullableNonDefaultableNull`); type, enum and bounds checks are kube-openapi
//! `pkg/validation/validate` (`type.go` `typeValidator.Validate`: an int64 passes `integer`, a
//! float64 only when integral and within swag's `IsFloat64AJSONInteger` bound of 2^53-1; `validator.go`
//! `stringValidator` counts runes for lengths, `pattern` is an unanchored search);
//! list types are `schema/listtype/validation.go` (`validate/list_type.rs`; `validateListSet`, `validateListMap`: the
//! second occurrence of a value or key is reported, once); embedded resources are
//! `schema/objectmeta/validation.go` (`validateEmbeddedResource`).

use std::borrow::Cow;

use super::cel::{CelOutcome, Old};
use super::compile::{Below, Schema, SchemaType};
use super::defaulting::apply_defaults;
use super::formats::{FormatCheck, check_string_format};
use super::ratchet::{self, Correlation};
use super::re2::PatternError;
use super::{Finding, Severity};
use crate::path_text::format_path;
use crate::value::JsonMap;
use crate::value::JsonValue;
use crate::yaml::PathSeg;
use pruned::Fate;

mod junctors;
mod list_type;
mod pruned;

/// swag's `maxJSONFloat`/`minJSONFloat`: beyond ±(2^53-1) a float64 is not a JSON integer.
const MAX_JSON_INTEGER: f64 = 9_007_199_254_740_991.0;

/// 2^63: integral floats below it in magnitude reach the API server as int64 (see `type_of`).
const INT64_LIMIT: f64 = 9_223_372_036_854_775_808.0;

/// Fields the API server keeps at an embedded resource whatever its schema says.
const META_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// Validates `value` (found at `path`) against `schema`, with pruning, and appends findings.
pub fn validate_value(
    schema: &Schema,
    value: &JsonValue,
    path: &[PathSeg],
    out: &mut Vec<Finding>,
) {
    run(schema, value, Old::Unknown, false, path, false, out);
}

/// Validates a whole resource: the root is an embedded resource whose `apiVersion`, `kind` and
/// `metadata` are the API server's business, not the schema's.
/// `old` is the object before the update (for transition rules), when this is one;
/// `old_defaulted`: it is defaulted against `schema` already (as this returned it when it was
/// validated). Returns `value` defaulted against `schema` (borrowed when defaulting changed
/// nothing), for the update that follows to read as its old object.
pub(crate) fn validate_root<'v>(
    schema: &Schema,
    value: &'v JsonValue,
    old: Old<'_>,
    old_defaulted: bool,
    out: &mut Vec<Finding>,
) -> Cow<'v, JsonValue> {
    run(schema, value, old, old_defaulted, &[], true, out)
}

/// Schema errors of these kinds make the API server skip every CEL rule (apiextensions-apiserver
/// `pkg/registry/customresource/strategy.go`, `hasBlockingErr`: NotSupported, Required, TooLong,
/// TooMany and TypeInvalid field errors).
const BLOCKING_RULES: [&str; 6] = [
    "enum",
    "required",
    "maxLength",
    "maxItems",
    "maxProperties",
    "type",
];

fn run<'v>(
    schema: &Schema,
    value: &'v JsonValue,
    old: Old<'_>,
    old_defaulted: bool,
    path: &[PathSeg],
    root: bool,
    out: &mut Vec<Finding>,
) -> Cow<'v, JsonValue> {
    // The rules' regex patterns are compiled once per validation (or per caller's wider
    // scope, e.g. a case's steps), and dropped after it.
    super::re2::with_shared_patterns(|| {
        run_validation(schema, value, old, old_defaulted, path, root, out)
    })
}

/// [`run`] inside its memo of patterns: `value` defaulted, validated, and returned defaulted.
fn run_validation<'v>(
    schema: &Schema,
    value: &'v JsonValue,
    old: Old<'_>,
    old_defaulted: bool,
    path: &[PathSeg],
    root: bool,
    out: &mut Vec<Finding>,
) -> Cow<'v, JsonValue> {
    // The API server defaults while decoding, before pruning and validation.
    let mut replaced_nulls = Vec::new();
    let defaulted = apply_defaults(schema, value, &mut replaced_nulls);
    let value = &*defaulted;
    for replaced in replaced_nulls {
        let mut at = path.to_vec();
        at.extend(replaced);
        out.push(Finding::warning(
            &at,
            "nullable",
            "null in a non-nullable field: the API server would write the default instead",
        ));
    }
    // The stored object was defaulted when it was written. Transition rules read it, and
    // an update ratchets the errors of what it leaves unchanged (`ratchet.rs`).
    let old_defaulted = match old {
        Old::Value(old) if old_defaulted => Some(Cow::Borrowed(old)),
        Old::Value(old) => Some(apply_defaults(schema, old, &mut Vec::new())),
        _ => None,
    };
    let correlated = old_defaulted.as_deref();
    let old = correlated.map_or(old, Old::Value);
    let first = out.len();
    let mut cel = Vec::new();
    let mut correlation = Correlation::default();
    let mut walker = Walker {
        prefix: path,
        // Room for a resource's usual depth, so the path is not grown as the walk descends.
        path: Vec::with_capacity(16),
        out,
        cel: Some(&mut cel),
        prune: true,
        correlation: &mut correlation,
    };
    walker.walk(schema, value, old, correlated, root);
    if let Some(old) = correlated {
        ratchet::list_types(&mut out[first..], || has_list_type_errors(schema, old));
    }
    let blocked = out[first..]
        .iter()
        .any(|f| f.severity == Severity::Error && BLOCKING_RULES.contains(&f.rule));
    if blocked {
        if !cel.is_empty() {
            out.push(Finding::warning(
                path,
                "cel",
                "x-kubernetes-validations rules not checked: the API server skips them while \
                 the object has the errors above",
            ));
        }
    } else {
        out.extend(cel);
    }
    defaulted
}

/// The list-type errors of `old` (for [`ratchet::list_types`]).
fn has_list_type_errors(schema: &Schema, old: &JsonValue) -> bool {
    Walker::findings_of(schema, old, true)
        .iter()
        .any(ratchet::is_list_type_error)
}

/// A step of the walker's path, borrowing its key from the value or the schema: the path is
/// copied into [`PathSeg`]s only for a finding (most fields have none).
#[derive(Debug, Clone, Copy)]
enum Seg<'v> {
    Key(&'v str),
    Index(usize),
}

/// The old value as `schema` reads it: only transition rules read it, so below a node with
/// none it is left out (the walk then does not follow it).
fn old_read_by<'o>(schema: &Schema, old: Old<'o>) -> Old<'o> {
    match old {
        Old::Value(_) | Old::Absent if !schema.has_below(Below::TransitionRules) => Old::Unknown,
        old => old,
    }
}

struct Walker<'a, 'v> {
    /// Where the walk started.
    prefix: &'a [PathSeg],
    /// Where it is, below `prefix`.
    path: Vec<Seg<'v>>,
    out: &'a mut Vec<Finding>,
    /// Outcomes of CEL rules, kept apart: they count only when no blocking error is found.
    /// `None` for a walk that runs no rule: inside `allOf`, `anyOf`, `oneOf` or `not` (the API
    /// server refuses a CRD with rules there: `structural.rs`), or one that only asks whether
    /// a value has errors.
    cel: Option<&'a mut Vec<Finding>>,
    /// False inside `allOf`/`anyOf`/`oneOf`/`not`: those only validate values.
    prune: bool,
    /// The correlated old values of an update, for ratcheting (empty otherwise, and in a
    /// junctor's branch, whose errors its node ratchets: `junctors.rs`).
    correlation: &'a mut Correlation<'v>,
}

/// The old items of a list, ready to be matched with the new ones in transition rules: the
/// item of the same key in a `map` list; none in a `set` or atomic list, which the API server
/// does not correlate ("only map-type lists support self-oldSelf correlation for cel rules":
/// apiextensions `schema/cel/validation.go`, `validateArray`), so their items' transition
/// rules do not run.
enum OldItems<'a> {
    Unknown,
    /// No old list (or one that is not a `map`): every item is new.
    Absent,
    /// A `map` list's old items.
    Map(&'a [JsonValue]),
}

/// Whether two items of a `map` list have the same key: each key field absent from both, or
/// present in both with the same canonical JSON text (compared without writing the text for
/// strings, whose encoding is one-to-one and the only one that starts with a quote).
fn same_list_map_key(schema: &Schema, a: &JsonValue, b: &JsonValue) -> bool {
    fn field<'j>(value: &'j JsonValue, key: &str) -> Option<&'j JsonValue> {
        match value {
            JsonValue::Object(fields) => fields.get(key),
            _ => None,
        }
    }
    schema
        .list_map_keys
        .iter()
        .all(|key| match (field(a, key), field(b, key)) {
            (None, None) => true,
            (Some(JsonValue::String(a)), Some(JsonValue::String(b))) => a == b,
            (Some(JsonValue::String(_)), Some(_)) | (Some(_), Some(JsonValue::String(_))) => false,
            (Some(a), Some(b)) => a.to_canonical_json() == b.to_canonical_json(),
            _ => false,
        })
}

impl<'a> OldItems<'a> {
    fn new(schema: &Schema, old: Old<'a>) -> OldItems<'a> {
        let old_items = match old {
            Old::Unknown => return OldItems::Unknown,
            Old::Value(JsonValue::Array(items)) => items,
            _ => return OldItems::Absent,
        };
        match schema.list_type.as_deref() {
            Some("map") => OldItems::Map(old_items),
            _ => OldItems::Absent,
        }
    }

    /// The old item `item` is compared with: the first of the same key.
    fn of(&self, schema: &Schema, item: &JsonValue) -> Old<'a> {
        let found = match self {
            OldItems::Unknown => return Old::Unknown,
            OldItems::Absent => None,
            OldItems::Map(old_items) => old_items
                .iter()
                .find(|old| same_list_map_key(schema, old, item)),
        };
        found.map_or(Old::Absent, Old::Value)
    }
}

/// The JSON type name the API server sees for a value, and whether it passes `integer`.
///
/// Kruise sends a float64 as Go's encoding/json writes it: integral values below 1e21 as plain
/// digits. apimachinery `pkg/util/json` (`convertNumber`) decodes digits that fit int64 as
/// int64, anything else as float64, and a float64 passes `integer` only up to 2^53-1.
fn type_of(value: &JsonValue) -> (&'static str, bool) {
    match value {
        JsonValue::Null => ("null", false),
        JsonValue::Bool(_) => ("boolean", false),
        JsonValue::Int(_) => ("integer", true),
        JsonValue::Float(f) => {
            let integral = f.is_finite() && f.trunc() == *f;
            let as_int64 = integral && (-INT64_LIMIT..INT64_LIMIT).contains(f);
            (
                "number",
                as_int64 || (integral && f.abs() <= MAX_JSON_INTEGER),
            )
        }
        JsonValue::String(_) => ("string", false),
        JsonValue::Array(_) => ("array", false),
        JsonValue::Object(_) => ("object", false),
    }
}

fn as_f64(value: &JsonValue) -> Option<f64> {
    match value {
        JsonValue::Int(i) => Some(*i as f64),
        JsonValue::Float(f) => Some(*f),
        _ => None,
    }
}

/// A value as the message shows it (short).
fn show(value: &JsonValue) -> String {
    let text = value.to_canonical_json();
    if text.chars().count() > 60 {
        format!("{}…", text.chars().take(60).collect::<String>())
    } else {
        text
    }
}

impl<'v> Walker<'_, 'v> {
    /// The findings of `value` against `schema` alone, from no path and with no rules: for
    /// what only asks whether there are errors (`prune` as at the root of a resource, else
    /// as in a junctor's branch).
    fn findings_of(schema: &'v Schema, value: &'v JsonValue, prune: bool) -> Vec<Finding> {
        let mut out = Vec::new();
        Walker {
            prefix: &[],
            path: Vec::new(),
            out: &mut out,
            cel: None,
            prune,
            correlation: &mut Correlation::default(),
        }
        .walk(schema, value, Old::Unknown, None, prune);
        out
    }

    /// The path where the walk is.
    fn here(&self) -> Vec<PathSeg> {
        let below = self.path.iter().map(|seg| match seg {
            Seg::Key(key) => PathSeg::Key((*key).to_owned()),
            Seg::Index(index) => PathSeg::Index(*index),
        });
        self.prefix.iter().cloned().chain(below).collect()
    }

    /// An error here, ratcheted by the nearest correlated node.
    fn error(&mut self, rule: &'static str, message: String) {
        let here = self.here();
        let finding = self.correlation.finding(&here, rule, message, true);
        self.out.push(finding);
    }

    /// A rule's outcome, kept apart from the other findings (see [`Self::cel`]).
    fn rule_outcome(&mut self, finding: Finding) {
        if let Some(cel) = self.cel.as_deref_mut() {
            cel.push(finding);
        }
    }

    fn warning(&mut self, rule: &'static str, message: String) {
        let here = self.here();
        self.out.push(Finding::warning(&here, rule, message));
    }

    /// Walks `value`; `old` is its old value as transition rules read it, `correlated` its old
    /// value as ratcheting correlates it (none in `set` and atomic lists).
    fn walk(
        &mut self,
        schema: &'v Schema,
        value: &'v JsonValue,
        old: Old<'_>,
        correlated: Option<&'v JsonValue>,
        root: bool,
    ) {
        if let Some(correlated) = correlated {
            self.correlation.enter(value, correlated);
        }
        self.walk_correlated(schema, value, old, correlated, root);
        if correlated.is_some() {
            self.correlation.leave();
        }
    }

    fn walk_correlated(
        &mut self,
        schema: &'v Schema,
        value: &'v JsonValue,
        old: Old<'_>,
        correlated: Option<&'v JsonValue>,
        root: bool,
    ) {
        let old = old_read_by(schema, old);
        if !self.check_type(schema, value) {
            return;
        }
        self.check_format(schema, value);
        self.check_enum(schema, value);
        match value {
            JsonValue::Int(_) | JsonValue::Float(_) => self.check_number(schema, value),
            JsonValue::String(s) => self.check_string(schema, s),
            JsonValue::Array(items) => self.walk_array(schema, items, old, correlated),
            JsonValue::Object(fields) => self.walk_object(schema, fields, old, correlated, root),
            JsonValue::Null | JsonValue::Bool(_) => {}
        }
        self.check_junctors(schema, value, root);
        if self.cel.is_none() {
            return;
        }
        for rule in &schema.cel_rules {
            match rule.evaluate(schema, value, old, root) {
                CelOutcome::Passed => {}
                CelOutcome::Failed(failure) => {
                    let mut at = self.here();
                    at.extend(failure.field_path);
                    let finding =
                        self.correlation
                            .finding(&at, "cel", failure.message, failure.ratchets);
                    self.rule_outcome(finding)
                }
                CelOutcome::CrdRefused(reason) => {
                    self.out
                        .push(Finding::error(&self.here(), "crd-cost", reason))
                }
                CelOutcome::NotChecked(reason) => self.rule_outcome(Finding::warning(
                    &self.here(),
                    "cel",
                    format!(
                        "x-kubernetes-validations rule {} not checked: {reason}",
                        super::cel::short_rule(&rule.rule)
                    ),
                )),
            }
        }
    }

    /// `type`, `nullable` and `x-kubernetes-int-or-string`. False when the value has the
    /// wrong type (nothing below it is checked then, as kube-openapi stops there too).
    fn check_type(&mut self, schema: &Schema, value: &JsonValue) -> bool {
        let (name, integral) = type_of(value);
        if matches!(value, JsonValue::Null) {
            if schema.nullable || (schema.schema_type.is_none() && !schema.int_or_string) {
                return true;
            }
            let wanted = schema
                .schema_type
                .map_or("integer or string", SchemaType::as_str);
            self.error("type", format!("must be of type {wanted}, not null"));
            return false;
        }
        if schema.int_or_string {
            if integral || matches!(value, JsonValue::String(_)) {
                return true;
            }
            self.error(
                "type",
                format!(
                    "must be an integer or a string (x-kubernetes-int-or-string), not {name} {}",
                    show(value)
                ),
            );
            return false;
        }
        let Some(wanted) = schema.schema_type else {
            return true;
        };
        let ok = match wanted {
            SchemaType::Integer => integral,
            SchemaType::Number => matches!(value, JsonValue::Int(_) | JsonValue::Float(_)),
            _ => wanted.as_str() == name,
        };
        if !ok {
            self.error(
                "type",
                format!(
                    "must be of type {}, not {name} {}",
                    wanted.as_str(),
                    show(value)
                ),
            );
        }
        ok
    }

    fn check_format(&mut self, schema: &Schema, value: &JsonValue) {
        let Some(format) = schema.format.as_deref() else {
            return;
        };
        match value {
            JsonValue::String(s) if !schema.int_or_string || schema.schema_type.is_some() => {
                match check_string_format(format, s) {
                    FormatCheck::Invalid => {
                        self.error("format", format!("{s:?} is not a valid {format}"))
                    }
                    FormatCheck::NotChecked => self.warning(
                        "format",
                        format!("format {format} not checked (the API server checks it)"),
                    ),
                    FormatCheck::Valid | FormatCheck::Ignored => {}
                }
            }
            JsonValue::Int(_) | JsonValue::Float(_) => {
                // The API server does not range-check integer formats, but a gateway
                // controller decoding into a Go int32/int64 field fails on such a value.
                let f = as_f64(value).unwrap_or(0.0);
                let fits = match (format, value) {
                    ("int32", JsonValue::Int(i)) => i32::try_from(*i).is_ok(),
                    ("int32", _) => (i32::MIN as f64..=i32::MAX as f64).contains(&f),
                    ("int64", JsonValue::Float(_)) => (-INT64_LIMIT..INT64_LIMIT).contains(&f),
                    _ => true,
                };
                if !fits {
                    self.warning(
                        "format",
                        format!(
                            "{} does not fit {format}: the API server accepts it, but a Go \
                             {format} field cannot hold it",
                            show(value)
                        ),
                    );
                }
            }
            _ => {}
        }
    }

    fn check_enum(&mut self, schema: &Schema, value: &JsonValue) {
        let Some(values) = &schema.enum_values else {
            return;
        };
        // Canonical JSON texts are equal exactly when two strings are (the encoding is
        // one-to-one), so a string is compared as it is, without writing its text.
        let allowed = match value {
            // kube-openapi `SchemaValidator.Validate` hands a null to the common validator
            // (validators[6]), whose `basicCommonValidator.Validate` compares only values with a
            // type (`reflect.ValueOf(nil)` is not valid): a null matches no entry of an enum,
            // not even a null one. A nullable field with an enum cannot be set to null.
            JsonValue::Null => false,
            JsonValue::String(text) => values
                .iter()
                .any(|(allowed, _)| matches!(allowed, JsonValue::String(a) if a == text)),
            _ => {
                let text = value.to_canonical_json();
                values.iter().any(|(_, allowed)| *allowed == text)
            }
        };
        if !allowed {
            let allowed: Vec<&str> = values.iter().map(|(_, t)| t.as_str()).collect();
            self.error(
                "enum",
                format!(
                    "{} is not one of the allowed values: {}",
                    show(value),
                    allowed.join(", ")
                ),
            );
        }
    }

    fn check_number(&mut self, schema: &Schema, value: &JsonValue) {
        let Some(n) = as_f64(value) else { return };
        if let Some(min) = schema.minimum
            && (n < min || (schema.exclusive_minimum && n == min))
        {
            let relation = if schema.exclusive_minimum {
                "greater than"
            } else {
                "greater than or equal to"
            };
            let message = format!("{} must be {relation} {min}", show(value));
            self.error("minimum", message);
        }
        if let Some(max) = schema.maximum
            && (n > max || (schema.exclusive_maximum && n == max))
        {
            let relation = if schema.exclusive_maximum {
                "less than"
            } else {
                "less than or equal to"
            };
            let message = format!("{} must be {relation} {max}", show(value));
            self.error("maximum", message);
        }
        if let Some(factor) = schema.multiple_of.filter(|f| *f > 0.0) {
            let ratio = n / factor;
            if ratio.trunc() != ratio {
                self.error(
                    "multipleOf",
                    format!("{} must be a multiple of {factor}", show(value)),
                );
            }
        }
    }

    fn check_string(&mut self, schema: &Schema, text: &str) {
        let length = text.chars().count() as u64;
        if let Some(min) = schema.min_length.filter(|min| length < *min) {
            self.error(
                "minLength",
                format!("must be at least {min} characters long, is {length}"),
            );
        }
        if let Some(max) = schema.max_length.filter(|max| length > *max) {
            self.error(
                "maxLength",
                format!("must be at most {max} characters long, is {length}"),
            );
        }
        if let Some(pattern) = &schema.pattern {
            match pattern.regex() {
                Ok(regex) if !regex.is_match(text) => self.error(
                    "pattern",
                    format!("{text:?} does not match the pattern {}", pattern.source),
                ),
                Ok(_) => {}
                // kube-openapi `validate.Pattern` fails every value against a pattern Go's
                // regexp refuses (and apiextensions refuses the CRD).
                Err(PatternError::Invalid(reason)) => self.error(
                    "pattern",
                    format!(
                        "{text:?} does not match the pattern {}: the pattern is invalid ({reason})",
                        pattern.source
                    ),
                ),
                Err(reason @ PatternError::Unsupported(_)) => self.warning(
                    "pattern",
                    format!("pattern {} not checked ({reason})", pattern.source),
                ),
            }
        }
    }

    fn walk_array(
        &mut self,
        schema: &'v Schema,
        items: &'v [JsonValue],
        old: Old<'_>,
        correlated: Option<&'v JsonValue>,
    ) {
        let count = items.len() as u64;
        if let Some(min) = schema.min_items.filter(|min| count < *min) {
            self.error(
                "minItems",
                format!("must have at least {min} items, has {count}"),
            );
        }
        if let Some(max) = schema.max_items.filter(|max| count > *max) {
            self.error(
                "maxItems",
                format!("must have at most {max} items, has {count}"),
            );
        }
        if let Some(item_schema) = &schema.items {
            let old_items = OldItems::new(schema, old);
            // Only a `map` list's items are correlated for ratcheting, by their keys.
            let correlated_items = match correlated {
                Some(old) if schema.list_type.as_deref() == Some("map") => {
                    OldItems::new(schema, Old::Value(old))
                }
                _ => OldItems::Unknown,
            };
            for (index, item) in items.iter().enumerate() {
                self.path.push(Seg::Index(index));
                let old_item = old_items.of(schema, item);
                let correlated_item = match correlated_items.of(schema, item) {
                    Old::Value(old) => Some(old),
                    _ => None,
                };
                self.walk(item_schema, item, old_item, correlated_item, false);
                self.path.pop();
            }
        }
        if self.prune {
            match schema.list_type.as_deref() {
                Some("set") => self.check_list_set(items),
                Some("map") => self.check_list_map(schema, items),
                _ => {}
            }
        }
    }

    fn walk_object(
        &mut self,
        schema: &'v Schema,
        fields: &'v JsonMap,
        old: Old<'_>,
        correlated: Option<&'v JsonValue>,
        root: bool,
    ) {
        if schema.embedded_resource && !root {
            self.check_embedded(fields);
        }
        let mut kept = 0u64;
        for (key, value) in fields {
            let fate = self.fate(schema, key, value, root);
            self.path.push(Seg::Key(key));
            match fate {
                // The resource's own apiVersion/kind/metadata: checked by the API server's
                // object-meta rules (metadata.rs), not by the CRD schema.
                Fate::Meta | Fate::Kept => kept += 1,
                Fate::Undeclared => {
                    let message = format!(
                        "the API server would drop `{}`: the schema does not declare it",
                        format_path(&self.here())
                    );
                    self.warning("pruned", message);
                }
                Fate::Null {
                    defaulted: true, ..
                } => {
                    kept += 1;
                    self.warning(
                        "nullable",
                        "null in a non-nullable field: the API server would write the default instead".to_owned(),
                    );
                }
                Fate::Null {
                    defaulted: false, ..
                } => {
                    let message = format!(
                        "the API server would drop `{}`: null in a non-nullable field",
                        format_path(&self.here())
                    );
                    self.warning("nullable", message);
                }
                Fate::Declared(child) => {
                    kept += 1;
                    let correlated = correlated.and_then(|old| old.get(key));
                    self.walk(child, value, old.field(key), correlated, false);
                }
            }
            self.path.pop();
        }
        for name in &schema.required {
            // Defaulting runs before validation, so a default satisfies `required`.
            let defaulted = schema
                .properties
                .get(name)
                .is_some_and(|p| p.default.is_some());
            // Present: there, and not dropped by pruning (looked up again for the few
            // required names rather than collected for every object walked).
            let present = fields.get(name).is_some_and(|value| {
                !matches!(
                    self.fate(schema, name, value, root),
                    Fate::Undeclared
                        | Fate::Null {
                            defaulted: false,
                            ..
                        }
                )
            });
            if !present && !defaulted {
                self.path.push(Seg::Key(name));
                self.error("required", "required field is missing".to_owned());
                self.path.pop();
            }
        }
        if let Some(min) = schema.min_properties.filter(|min| kept < *min) {
            self.error(
                "minProperties",
                format!("must have at least {min} fields, has {kept}"),
            );
        }
        if let Some(max) = schema.max_properties.filter(|max| kept > *max) {
            self.error(
                "maxProperties",
                format!("must have at most {max} fields, has {kept}"),
            );
        }
    }

    /// What pruning does with field `key` of an object `schema` describes, as this walk sees
    /// it: inside a junctor's branch nothing is pruned (the value it walks is already pruned:
    /// `junctors.rs`), so what would be dropped is walked as it is.
    fn fate(&self, schema: &'v Schema, key: &str, value: &JsonValue, root: bool) -> Fate<'v> {
        match pruned::fate(schema, key, value, root) {
            Fate::Undeclared if !self.prune => Fate::Kept,
            Fate::Null { schema, .. } if !self.prune => Fate::Declared(schema),
            fate => fate,
        }
    }

    /// `x-kubernetes-embedded-resource`: `apiVersion` and `kind` are required non-empty strings.
    fn check_embedded(&mut self, fields: &JsonMap) {
        for name in ["apiVersion", "kind"] {
            self.path.push(Seg::Key(name));
            match fields.get(name) {
                None => self.error(
                    "x-kubernetes-embedded-resource",
                    "required field of an embedded resource is missing".to_owned(),
                ),
                Some(JsonValue::String(s)) if s.is_empty() => self.error(
                    "x-kubernetes-embedded-resource",
                    "must not be empty".to_owned(),
                ),
                Some(JsonValue::String(_)) => {}
                Some(other) => self.error(
                    "x-kubernetes-embedded-resource",
                    format!("must be a string, not {}", show(other)),
                ),
            }
            self.path.pop();
        }
    }
}

#[cfg(test)]
mod tests;
