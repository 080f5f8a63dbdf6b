//! List-type uniqueness, which the API server checks apart from the schema validator
//! (apiextensions `schema/listtype/validation.go`, `validateListSet` and `validateListMap`: the
//! second occurrence of a value or key is reported, once).

use std::collections::HashMap;

use super::{Seg, Walker, show};
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
        // The key of an item: the present key fields as an object (absent ones left out,
        // as `validateListMap` builds it).
        let key_of = |item: &JsonValue| -> JsonValue {
            let mut key = JsonMap::new();
            if let JsonValue::Object(fields) = item {
                for name in &schema.list_map_keys {
                    if let Some(v) = fields.get(name) {
                        key.insert(name.clone(), v.clone());
                    }
                }
            }
            JsonValue::Object(key)
        };
        let keys: Vec<JsonValue> = items.iter().map(key_of).collect();
        let texts: Vec<String> = keys.iter().map(JsonValue::to_canonical_json).collect();
        self.report_duplicates(
            &texts,
            |i| {
                format!(
                    "duplicate key {} in a list of type map (keys: {})",
                    show(&keys[i]),
                    schema.list_map_keys.join(", ")
                )
            },
            "x-kubernetes-list-map-keys",
        );
    }
}
