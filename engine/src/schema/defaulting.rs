//! Structural defaulting, as the API server applies it while decoding a custom resource and
//! before any validation (apiextensions-apiserver `pkg/apiserver/schema/defaulting/algorithm.go`,
//! `Default`): in every object present, a declared property that is absent — or null while the
//! schema does not allow null — gets a copy of its `default`; then defaulting continues below
//! every field, list item and map value, the defaulted ones included. So CEL rules, list-map
//! keys and required fields see the object the API server stores.

use std::borrow::Cow;

use super::compile::{Below, Schema};
use crate::value::JsonValue;
use crate::yaml::PathSeg;

/// `value` with `schema`'s defaults applied; borrowed when nothing was defaulted (checked
/// first, without copying: most values get no default even where the schema declares some).
/// The paths (from `value`) of nulls replaced by a default are added to `replaced_nulls`.
pub(crate) fn apply_defaults<'v>(
    schema: &Schema,
    value: &'v JsonValue,
    replaced_nulls: &mut Vec<Vec<PathSeg>>,
) -> Cow<'v, JsonValue> {
    if !needs_defaults(schema, value, 0) {
        return Cow::Borrowed(value);
    }
    let mut owned = value.clone();
    let mut path = Vec::new();
    default_in_place(schema, &mut owned, &mut path, replaced_nulls);
    Cow::Owned(owned)
}

/// A step of [`default_in_place`]'s path, a declared property's name borrowed from the
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

/// Whether [`default_in_place`] would change `value`: a declared property with a default is
/// absent, or null where the schema does not allow null, somewhere below. Walks only the
/// parts of `value` whose schema has defaults below it.
fn needs_defaults(schema: &Schema, value: &JsonValue, depth: usize) -> bool {
    if depth > LOOKAHEAD_DEPTH || !schema.has_below(Below::Defaults) {
        return false;
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
            defaulted_here
                || fields.iter().any(|(name, field)| {
                    schema
                        .child(name)
                        .is_some_and(|child| needs_defaults(child, field, depth + 1))
                })
        }
        JsonValue::Array(items) => schema.items.as_deref().is_some_and(|item_schema| {
            items
                .iter()
                .any(|item| needs_defaults(item_schema, item, depth + 1))
        }),
        _ => false,
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
                let Some((declared, child)) = schema.child_declared(name) else {
                    continue;
                };
                if !child.has_below(Below::Defaults) {
                    continue;
                }
                // A declared property's name is borrowed from the schema (the same text).
                path.push(declared.map_or_else(|| Seg::Key(name.clone()), Seg::Property));
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

    /// An unchanged value comes back borrowed (nothing copied); the nulls replaced in list
    /// items and map values are reported in the order the walk meets them, each at its path.
    #[test]
    fn an_unchanged_value_is_borrowed_and_replaced_nulls_keep_their_order() {
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
