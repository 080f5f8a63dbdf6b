//! List-type uniqueness, which the API server checks apart from the schema validator
//! (apiextensions `schema/listtype/validation.go`, `validateListSet` and `validateListMap`: the
//! second occurrence of a value or key is reported, once).

use std::collections::HashMap;

use super::{Seg, Walker, same_list_map_key, show};
use crate::schema::compile::Schema;
use crate::value::{JsonMap, JsonValue};

impl Walker<'_, '_> {
    /// Reports the items at `second_occurrences` (each the second of its value or key).
    fn report_duplicates(
        &mut self,
        second_occurrences: impl IntoIterator<Item = usize>,
        describe: impl Fn(usize) -> String,
        rule: &'static str,
    ) {
        for index in second_occurrences {
            self.path.push(Seg::Index(index));
            self.error(rule, describe(index));
            self.path.pop();
        }
    }

    pub(super) fn check_list_set(&mut self, items: &[JsonValue]) {
        let keys: Vec<String> = items.iter().map(JsonValue::to_canonical_json).collect();
        self.report_duplicates(
            second_occurrences(&keys),
            |i| format!("duplicate item {} in a list of type set", show(&items[i])),
            "x-kubernetes-list-type",
        );
    }

    pub(super) fn check_list_map(&mut self, schema: &Schema, items: &[JsonValue]) {
        for (index, item) in items.iter().enumerate() {
            if !matches!(item, JsonValue::Object(_) | JsonValue::Null) {
                self.path.push(Seg::Index(index));
                self.error(
                    "x-kubernetes-list-type",
                    "must be an object for an array of list-type map".to_owned(),
                );
                self.path.pop();
                return;
            }
        }
        // Few items are compared pairwise by their key fields, as `same_list_map_key` matches
        // old items (keys equal exactly when their canonical texts are): building each item's
        // key object and text cost more than the rest of the walk over a list.
        let seconds = if items.len() <= PAIRWISE_ITEMS {
            (0..items.len())
                .filter(|&index| {
                    items[..index]
                        .iter()
                        .filter(|other| same_list_map_key(schema, other, &items[index]))
                        .count()
                        == 1
                })
                .collect()
        } else {
            let texts: Vec<String> = items
                .iter()
                .map(|item| key_of(schema, item).to_canonical_json())
                .collect();
            second_occurrences(&texts)
        };
        self.report_duplicates(
            seconds,
            |i| duplicate_key_message(schema, &items[i]),
            "x-kubernetes-list-map-keys",
        );
    }
}

/// The indices of the items of `keys` that are the second of their key.
fn second_occurrences(keys: &[String]) -> Vec<usize> {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    keys.iter()
        .enumerate()
        .filter_map(|(index, key)| {
            let times = seen.entry(key.as_str()).or_insert(0);
            *times += 1;
            (*times == 2).then_some(index)
        })
        .collect()
}

/// Lists of a map type up to this many items are checked for duplicate keys pairwise (a
/// longer list by its items' key texts, in linear time).
const PAIRWISE_ITEMS: usize = 16;

/// The key of an item of a `map` list: its present key fields as an object (absent ones left
/// out, as `validateListMap` builds it).
fn key_of(schema: &Schema, item: &JsonValue) -> JsonValue {
    let mut key = JsonMap::new();
    if let JsonValue::Object(fields) = item {
        for name in &schema.list_map_keys {
            if let Some(v) = fields.get(name) {
                key.insert(name.clone(), v.clone());
            }
        }
    }
    JsonValue::Object(key)
}

fn duplicate_key_message(schema: &Schema, item: &JsonValue) -> String {
    format!(
        "duplicate key {} in a list of type map (keys: {})",
        show(&key_of(schema, item)),
        schema.list_map_keys.join(", ")
    )
}
