//! Structural defaulting, as the API server applies it while decoding a custom resource and
//! before any validation (apiextensions-apiserver `pkg/apiserver/schema/defaulting/algorithm.go`,
//! `Default`): in every object present, a declared property that is absent — or null while the
//! schema does not allow null — gets a copy of its `default`; then defaulting continues below
//! every field, list item and map value, the defaulted ones included. So CEL rules, list-map
//! keys and required fields see the object the API server stores.

use std::borrow::Cow;

use super::compile::{Additional, Below, Schema};
use crate::value::JsonValue;
use crate::yaml::PathSeg;

/// `value` with `schema`'s defaults applied; borrowed when nothing was defaulted (most values
/// get no default even where the schema declares some).
/// The paths (from `value`) of nulls replaced by a default are added to `replaced_nulls`.
pub(crate) fn apply_defaults<'v>(
    schema: &Schema,
    value: &'v JsonValue,
    replaced_nulls: &mut Vec<Vec<PathSeg>>,
) -> Cow<'v, JsonValue> {
    match defaulted(schema, value, &mut Vec::new(), replaced_nulls) {
        Some(owned) => Cow::Owned(owned),
        None => Cow::Borrowed(value),
    }
}

/// A step of the defaulting walk's path, a declared property's name borrowed from the
/// schema: copied into a [`PathSeg`] only for a replaced null (the walk visits every field
/// with defaults below). An `additionalProperties` key is the value's own, copied.
enum Seg<'s> {
    Property(&'s str),
    Key(String),
    Index(usize),
}

// Compiled schemas nest at most 100 levels (`compile`); the walk stops where the look-ahead
// does, below any stack limit.
use super::compile::LOOKAHEAD_DEPTH;

/// `value` (at `path`) with `schema`'s defaults applied, `None` when none applies anywhere
/// below: one walk, which copies an object or list only when something below it changes (an
/// object that gets a default itself is copied whole and defaulted in place).
fn defaulted<'s>(
    schema: &'s Schema,
    value: &JsonValue,
    path: &mut Vec<Seg<'s>>,
    replaced_nulls: &mut Vec<Vec<PathSeg>>,
) -> Option<JsonValue> {
    if path.len() > LOOKAHEAD_DEPTH || !schema.has_below(Below::Defaults) {
        return None;
    }
    match value {
        JsonValue::Object(fields) => {
            let defaulted_here = schema.properties.iter().any(|(name, child)| {
                child.default.is_some()
                    && match fields.get(name) {
                        None => true,
                        Some(JsonValue::Null) => !child.nullable,
                        Some(_) => false,
                    }
            });
            if defaulted_here {
                let mut owned = value.clone();
                default_in_place(schema, &mut owned, path, replaced_nulls);
                return Some(owned);
            }
            // The members are copied from the first one that changes on.
            let mut changed: Option<Vec<(String, JsonValue)>> = None;
            for (index, (name, field)) in fields.iter().enumerate() {
                let below = match child_of(schema, name) {
                    Some((seg, child)) => {
                        path.push(seg);
                        let below = defaulted(child, field, path, replaced_nulls);
                        path.pop();
                        below
                    }
                    None => None,
                };
                match (below, &mut changed) {
                    (None, None) => {}
                    (None, Some(members)) => members.push((name.clone(), field.clone())),
                    (Some(new), Some(members)) => members.push((name.clone(), new)),
                    (Some(new), None) => {
                        let mut members = Vec::with_capacity(fields.len());
                        members.extend(
                            fields
                                .iter()
                                .take(index)
                                .map(|(name, field)| (name.clone(), field.clone())),
                        );
                        members.push((name.clone(), new));
                        changed = Some(members);
                    }
                }
            }
            changed.map(|members| JsonValue::Object(members.into_iter().collect()))
        }
        JsonValue::Array(items) => {
            let item_schema = schema.items.as_deref()?;
            let mut changed: Option<Vec<JsonValue>> = None;
            for (index, item) in items.iter().enumerate() {
                path.push(Seg::Index(index));
                let below = defaulted(item_schema, item, path, replaced_nulls);
                path.pop();
                match (below, &mut changed) {
                    (None, None) => {}
                    (None, Some(copied)) => copied.push(item.clone()),
                    (Some(new), Some(copied)) => copied.push(new),
                    (Some(new), None) => {
                        let mut copied = Vec::with_capacity(items.len());
                        copied.extend_from_slice(&items[..index]);
                        copied.push(new);
                        changed = Some(copied);
                    }
                }
            }
            changed.map(JsonValue::Array)
        }
        _ => None,
    }
}

/// The schema of field `name` of an object `schema` describes, with the path step to it; `None`
/// when the field has none or no default sits below it.
fn child_of<'s>(schema: &'s Schema, name: &str) -> Option<(Seg<'s>, &'s Schema)> {
    match schema.properties.get_key_value(name) {
        Some((declared, child)) => Some((Seg::Property(declared), child)),
        None => match &schema.additional {
            Additional::Schema(child) if child.has_below(Below::Defaults) => {
                Some((Seg::Key(name.to_owned()), &**child))
            }
            _ => None,
        },
    }
}

fn default_in_place<'s>(
    schema: &'s Schema,
    value: &mut JsonValue,
    path: &mut Vec<Seg<'s>>,
    replaced_nulls: &mut Vec<Vec<PathSeg>>,
) {
    if path.len() > LOOKAHEAD_DEPTH || !schema.has_below(Below::Defaults) {
        return;
    }
    match value {
        JsonValue::Object(fields) => {
            for (name, child) in &schema.properties {
                let Some(default) = &child.default else {
                    continue;
                };
                match fields.get(name) {
                    None => {
                        fields.insert(name.clone(), default.clone());
                    }
                    Some(JsonValue::Null) if !child.nullable => {
                        fields.insert(name.clone(), default.clone());
                        let mut at: Vec<PathSeg> = path
                            .iter()
                            .map(|seg| match seg {
                                Seg::Property(key) => PathSeg::Key((*key).to_owned()),
                                Seg::Key(key) => PathSeg::Key(key.clone()),
                                Seg::Index(index) => PathSeg::Index(*index),
                            })
                            .collect();
                        at.push(PathSeg::Key(name.clone()));
                        replaced_nulls.push(at);
                    }
                    Some(_) => {}
                }
            }
            for (name, field) in fields.iter_mut() {
                let Some((seg, child)) = child_of(schema, name) else {
                    continue;
                };
                path.push(seg);
                default_in_place(child, field, path, replaced_nulls);
                path.pop();
            }
        }
        JsonValue::Array(items) => {
            if let Some(item_schema) = schema.items.as_deref() {
                for (index, item) in items.iter_mut().enumerate() {
                    path.push(Seg::Index(index));
                    default_in_place(item_schema, item, path, replaced_nulls);
                    path.pop();
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::parse_first_document;

    fn defaulted(schema: &str, value: &str) -> String {
        let schema = Schema::compile(&parse_first_document(schema).unwrap().unwrap()).unwrap();
        let value = parse_first_document(value).unwrap().unwrap().to_json();
        apply_defaults(&schema, &value, &mut Vec::new()).to_canonical_json()
    }

    #[test]
    fn absent_and_non_nullable_null_fields_get_their_defaults_recursively() {
        let schema = "type: object\nproperties:\n  refs:\n    type: array\n    items:\n      type: object\n      properties:\n        kind: {type: string, default: Service}\n        port: {type: integer}\n  policy:\n    type: object\n    default: {}\n    properties:\n      mode: {type: string, default: strict}\n  note: {type: string, nullable: true, default: x}\n";
        assert_eq!(
            defaulted(schema, "{refs: [{port: 1}, {kind: Other}], note: null}"),
            r#"{"note":null,"policy":{"mode":"strict"},"refs":[{"kind":"Service","port":1},{"kind":"Other"}]}"#
        );
        assert_eq!(
            defaulted(schema, "{policy: {mode: null}}"),
            r#"{"note":"x","policy":{"mode":"strict"}}"#
        );
    }

    /// Only what changes is copied, in one walk: an unchanged value comes back borrowed, and
    /// the nulls replaced in list items, map values and below a default are reported in the
    /// order the walk meets them, each at its path.
    #[test]
    fn a_value_is_copied_only_when_a_default_applies_and_replaced_nulls_keep_their_order() {
        let schema = Schema::compile(
            &parse_first_document(
                "type: object\nproperties:\n  items:\n    type: array\n    items:\n      type: object\n      properties:\n        mode: {type: string, default: fast}\n  by:\n    type: object\n    additionalProperties:\n      type: object\n      properties:\n        size: {type: integer, default: 1}\n  other: {type: string}\n",
            )
            .unwrap()
            .unwrap(),
        )
        .unwrap();
        let json = |text: &str| parse_first_document(text).unwrap().unwrap().to_json();
        let unchanged = json("{items: [{mode: slow}], by: {a: {size: 2}}, other: x}");
        let mut nulls = Vec::new();
        assert!(matches!(
            apply_defaults(&schema, &unchanged, &mut nulls),
            Cow::Borrowed(_)
        ));
        assert!(nulls.is_empty());
        let value =
            json("{other: x, items: [{mode: slow}, {mode: null}], by: {a: {size: null}, b: {}}}");
        let made = apply_defaults(&schema, &value, &mut nulls);
        assert_eq!(
            made.to_canonical_json(),
            r#"{"by":{"a":{"size":1},"b":{"size":1}},"items":[{"mode":"slow"},{"mode":"fast"}],"other":"x"}"#
        );
        let shown: Vec<String> = nulls
            .iter()
            .map(|path| crate::path_text::format_path(path))
            .collect();
        assert_eq!(shown, ["by.a.size", "items[1].mode"]);
    }
}
