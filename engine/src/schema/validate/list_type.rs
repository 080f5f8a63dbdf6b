//! List-type uniqueness, which the API server checks apart from the schema validator
//! (apiextensions `schema/listtype/validation.go`, `validateListSet` and `validateListMap`: the
//! second occurrence of a value or key is reported, once).

use std::collections::HashMap;

use super::{Seg, Walker, same_list_map_key, show};
use crate::schema::compile::Schema;
use crate::value::{JsonMap, JsonValue};

impl Walker<'_, '_> {
    /// Every item after the first that repeats an earlier one, reported once per value.
    fn report_duplicates(
        &mut self,
        keys: &[String],
        describe: impl Fn(usize) -> String,
        rule: &'static str,
    ) {
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for (index, key) in keys.iter().enumerate() {
            let times = seen.entry(key.as_str()).or_insert(0);
            *times += 1;
            if *times == 2 {
                self.path.push(Seg::Index(index));
                self.error(rule, describe(index));
                self.path.pop();
            }
        }
    }

    pub(super) fn check_list_set(&mut self, items: &[JsonValue]) {
        let keys: Vec<String> = items.iter().map(JsonValue::to_canonical_json).collect();
        self.report_duplicates(
            &keys,
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
        if items.len() <= PAIRWISE_ITEMS {
            for (index, item) in items.iter().enumerate() {
                let earlier = items[..index]
                    .iter()
                    .filter(|other| same_list_map_key(schema, other, item))
                    .count();
                if earlier == 1 {
                    self.path.push(Seg::Index(index));
                    let message = duplicate_key_message(schema, item);
                    self.error("x-kubernetes-list-map-keys", message);
                    self.path.pop();
                }
            }
            return;
        }
        let texts: Vec<String> = items
            .iter()
            .map(|item| key_of(schema, item).to_canonical_json())
            .collect();
        self.report_duplicates(
            &texts,
            |i| duplicate_key_message(schema, &items[i]),
            "x-kubernetes-list-map-keys",
        );
    }
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
