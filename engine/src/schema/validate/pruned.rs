//! What pruning does to an object's fields, as the API server prunes before it validates
//! (apiextensions `pkg/apiserver/schema/pruning/algorithm.go`, and
//! `schema/defaulting/prunenulls.go` for nulls): the walk reports each dropped field, and the
//! branches of `allOf`/`anyOf`/`oneOf`/`not` validate the value as pruning leaves it.

use crate::schema::compile::{Additional, Schema};
use crate::value::{JsonMap, JsonValue};

use super::META_FIELDS;

/// What pruning does with a field of an object.
pub(super) enum Fate<'s> {
    /// The resource's own `apiVersion`, `kind` or `metadata` (object-meta rules check them).
    Meta,
    /// Declared: kept, with its schema.
    Declared(&'s Schema),
    /// Not declared, and kept (`x-kubernetes-preserve-unknown-fields`, `additionalProperties:
    /// true`, an embedded resource's own meta fields).
    Kept,
    /// Not declared: dropped.
    Undeclared,
    /// `null` in a declared field that does not allow it: replaced by the field's default
    /// when it has one, else dropped.
    Null { schema: &'s Schema, defaulted: bool },
}

/// The fate of field `key` (value `field`) of an object that `schema` describes (`root`: the
/// resource itself).
pub(super) fn fate<'s>(schema: &'s Schema, key: &str, field: &JsonValue, root: bool) -> Fate<'s> {
    if root && META_FIELDS.contains(&key) {
        return Fate::Meta;
    }
    match schema.child(key) {
        None => {
            let embedded = root || schema.embedded_resource;
            let kept = schema.preserve_unknown_fields
                || matches!(schema.additional, Additional::Any)
                || (embedded && META_FIELDS.contains(&key));
            if kept { Fate::Kept } else { Fate::Undeclared }
        }
        Some(child) if matches!(field, JsonValue::Null) && !child.nullable => Fate::Null {
            schema: child,
            defaulted: child.default.is_some(),
        },
        Some(child) => Fate::Declared(child),
    }
}

/// `value` as pruning by `schema` leaves it (`root`: the resource itself), or `None` when
/// pruning changes nothing (most values: nothing is copied then). `depth` bounds the walk as
/// compiled schemas' nesting does.
pub(super) fn pruned(
    schema: &Schema,
    value: &JsonValue,
    root: bool,
    depth: usize,
) -> Option<JsonValue> {
    if depth > crate::schema::compile::LOOKAHEAD_DEPTH {
        return None;
    }
    match value {
        JsonValue::Object(fields) => {
            // Built from the first change on: the fields before it are copied then.
            let mut changed: Option<Vec<(String, JsonValue)>> = None;
            for (index, (key, field)) in fields.iter().enumerate() {
                let now = match fate(schema, key, field, root) {
                    Fate::Undeclared
                    | Fate::Null {
                        defaulted: false, ..
                    } => Some(None),
                    Fate::Declared(child) => pruned(child, field, false, depth + 1).map(Some),
                    Fate::Meta
                    | Fate::Kept
                    | Fate::Null {
                        defaulted: true, ..
                    } => None,
                };
                match (now, &mut changed) {
                    (None, None) => {}
                    (None, Some(out)) => out.push((key.clone(), field.clone())),
                    (Some(replaced), _) => {
                        let out = changed.get_or_insert_with(|| {
                            fields
                                .iter()
                                .take(index)
                                .map(|(k, v)| (k.clone(), v.clone()))
                                .collect()
                        });
                        out.extend(replaced.map(|field| (key.clone(), field)));
                    }
                }
            }
            changed.map(|out| JsonValue::Object(out.into_iter().collect::<JsonMap>()))
        }
        JsonValue::Array(items) => {
            let item_schema = schema.items.as_deref()?;
            let mut changed: Option<Vec<JsonValue>> = None;
            for (index, item) in items.iter().enumerate() {
                match (pruned(item_schema, item, false, depth + 1), &mut changed) {
                    (None, None) => {}
                    (None, Some(out)) => out.push(item.clone()),
                    (Some(item), _) => changed
                        .get_or_insert_with(|| items[..index].to_vec())
                        .push(item),
                }
            }
            changed.map(JsonValue::Array)
        }
        _ => None,
    }
}
