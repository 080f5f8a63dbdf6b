//! The members of a JSON object: sorted by key (bytewise: Go's `encoding/json` order), compact for
//! the small objects resources are made of, a B-tree for large ones.
//!
//! A `BTreeMap` node holds room for 11 members (about 600 bytes for `String` keys and
//! [`JsonValue`]s), so an object of two members cost ten times its contents; resources are
//! mostly such objects. A sorted vector holds exactly its members; past [`LARGE_FROM`] members
//! the map becomes a `BTreeMap`, so inserting n keys in any order stays O(n log n).

use std::collections::{BTreeMap, btree_map};

use super::JsonValue;

/// Members from which an object is kept as a B-tree.
const LARGE_FROM: usize = 32;

/// A JSON object's members, by key in bytewise order.
#[derive(Clone, Default)]
pub struct JsonMap(Repr);

#[derive(Clone)]
enum Repr {
    /// Sorted by key, keys unique.
    Small(Vec<(String, JsonValue)>),
    Large(BTreeMap<String, JsonValue>),
}

impl Default for Repr {
    fn default() -> Self {
        Repr::Small(Vec::new())
    }
}

impl JsonMap {
    pub fn new() -> Self {
        JsonMap::default()
    }

    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Small(v) => v.len(),
            Repr::Large(m) => m.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn position(entries: &[(String, JsonValue)], key: &str) -> Result<usize, usize> {
        entries.binary_search_by(|(k, _)| k.as_str().cmp(key))
    }

    pub fn get(&self, key: &str) -> Option<&JsonValue> {
        match &self.0 {
            Repr::Small(v) => Self::position(v, key).ok().map(|i| &v[i].1),
            Repr::Large(m) => m.get(key),
        }
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut JsonValue> {
        match &mut self.0 {
            Repr::Small(v) => Self::position(v, key).ok().map(|i| &mut v[i].1),
            Repr::Large(m) => m.get_mut(key),
        }
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Sets `key`; returns the value it replaced.
    pub fn insert(&mut self, key: String, value: JsonValue) -> Option<JsonValue> {
        match &mut self.0 {
            Repr::Small(v) => match Self::position(v, &key) {
                Ok(i) => Some(std::mem::replace(&mut v[i].1, value)),
                Err(i) => {
                    // Exactly one more: small objects are the bulk of a resource, and doubling
                    // would leave up to half of each unused.
                    v.reserve_exact(1);
                    v.insert(i, (key, value));
                    if v.len() >= LARGE_FROM {
                        let entries = std::mem::take(v);
                        self.0 = Repr::Large(entries.into_iter().collect());
                    }
                    None
                }
            },
            Repr::Large(m) => m.insert(key, value),
        }
    }

    pub fn remove(&mut self, key: &str) -> Option<JsonValue> {
        match &mut self.0 {
            Repr::Small(v) => Self::position(v, key).ok().map(|i| v.remove(i).1),
            Repr::Large(m) => m.remove(key),
        }
    }

    /// Keeps the members `keep` says yes to.
    pub fn retain(&mut self, mut keep: impl FnMut(&String, &mut JsonValue) -> bool) {
        match &mut self.0 {
            Repr::Small(v) => v.retain_mut(|(k, value)| keep(k, value)),
            Repr::Large(m) => m.retain(|k, value| keep(k, value)),
        }
    }

    pub fn iter(&self) -> Iter<'_> {
        match &self.0 {
            Repr::Small(v) => Iter::Small(v.iter()),
            Repr::Large(m) => Iter::Large(m.iter()),
        }
    }

    pub fn iter_mut(&mut self) -> IterMut<'_> {
        match &mut self.0 {
            Repr::Small(v) => IterMut::Small(v.iter_mut()),
            Repr::Large(m) => IterMut::Large(m.iter_mut()),
        }
    }

    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &String> + ExactSizeIterator {
        self.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl DoubleEndedIterator<Item = &JsonValue> + ExactSizeIterator {
        self.iter().map(|(_, v)| v)
    }

    pub fn values_mut(
        &mut self,
    ) -> impl DoubleEndedIterator<Item = &mut JsonValue> + ExactSizeIterator {
        self.iter_mut().map(|(_, v)| v)
    }

    /// The member at `key`, inserted by `default` when absent.
    pub fn get_or_insert_with(
        &mut self,
        key: &str,
        default: impl FnOnce() -> JsonValue,
    ) -> &mut JsonValue {
        if !self.contains_key(key) {
            self.insert(key.to_owned(), default());
        }
        self.get_mut(key).expect("inserted above")
    }
}

impl std::ops::Index<&str> for JsonMap {
    type Output = JsonValue;

    /// The member at `key`; panics when there is none, as `BTreeMap`'s index does.
    fn index(&self, key: &str) -> &JsonValue {
        self.get(key)
            .expect("no member with this key in the JSON object")
    }
}

impl std::fmt::Debug for JsonMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl PartialEq for JsonMap {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl FromIterator<(String, JsonValue)> for JsonMap {
    /// A later member with an equal key replaces the earlier one, as in a `BTreeMap`.
    fn from_iter<I: IntoIterator<Item = (String, JsonValue)>>(members: I) -> Self {
        let mut entries: Vec<(String, JsonValue)> = members.into_iter().collect();
        if entries.len() >= LARGE_FROM {
            return JsonMap(Repr::Large(entries.into_iter().collect()));
        }
        sort_keeping_last(&mut entries);
        JsonMap(Repr::Small(entries))
    }
}

/// Sorts `entries` by key and keeps, of each key, the entry that came last: what inserting
/// them into a map in turn leaves.
pub(crate) fn sort_keeping_last<K: Ord, V>(entries: &mut Vec<(K, V)>) {
    // Stable: equal keys keep their order, so the last of each run is the later entry.
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    // `dedup_by` keeps the first of a run: move each later one into its place.
    entries.dedup_by(|later, kept| {
        let same = later.0 == kept.0;
        if same {
            std::mem::swap(later, kept);
        }
        same
    });
}

impl Extend<(String, JsonValue)> for JsonMap {
    fn extend<I: IntoIterator<Item = (String, JsonValue)>>(&mut self, members: I) {
        for (k, v) in members {
            self.insert(k, v);
        }
    }
}

impl From<BTreeMap<String, JsonValue>> for JsonMap {
    fn from(map: BTreeMap<String, JsonValue>) -> Self {
        if map.len() >= LARGE_FROM {
            JsonMap(Repr::Large(map))
        } else {
            JsonMap(Repr::Small(map.into_iter().collect()))
        }
    }
}

impl<const N: usize> From<[(String, JsonValue); N]> for JsonMap {
    fn from(members: [(String, JsonValue); N]) -> Self {
        members.into_iter().collect()
    }
}

/// Members by reference, in key order.
pub enum Iter<'a> {
    Small(std::slice::Iter<'a, (String, JsonValue)>),
    Large(btree_map::Iter<'a, String, JsonValue>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a String, &'a JsonValue);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Iter::Small(i) => i.next().map(|(k, v)| (k, v)),
            Iter::Large(i) => i.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            Iter::Small(i) => i.size_hint(),
            Iter::Large(i) => i.size_hint(),
        }
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        match self {
            Iter::Small(i) => i.next_back().map(|(k, v)| (k, v)),
            Iter::Large(i) => i.next_back(),
        }
    }
}

impl ExactSizeIterator for Iter<'_> {}

/// Members by mutable reference to the value, in key order.
pub enum IterMut<'a> {
    Small(std::slice::IterMut<'a, (String, JsonValue)>),
    Large(btree_map::IterMut<'a, String, JsonValue>),
}

impl<'a> Iterator for IterMut<'a> {
    type Item = (&'a String, &'a mut JsonValue);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            IterMut::Small(i) => i.next().map(|(k, v)| (&*k, v)),
            IterMut::Large(i) => i.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            IterMut::Small(i) => i.size_hint(),
            IterMut::Large(i) => i.size_hint(),
        }
    }
}

impl DoubleEndedIterator for IterMut<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        match self {
            IterMut::Small(i) => i.next_back().map(|(k, v)| (&*k, v)),
            IterMut::Large(i) => i.next_back(),
        }
    }
}

impl ExactSizeIterator for IterMut<'_> {}

/// Members by value, in key order.
pub enum IntoIter {
    Small(std::vec::IntoIter<(String, JsonValue)>),
    Large(btree_map::IntoIter<String, JsonValue>),
}

impl Iterator for IntoIter {
    type Item = (String, JsonValue);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            IntoIter::Small(i) => i.next(),
            IntoIter::Large(i) => i.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            IntoIter::Small(i) => i.size_hint(),
            IntoIter::Large(i) => i.size_hint(),
        }
    }
}

impl DoubleEndedIterator for IntoIter {
    fn next_back(&mut self) -> Option<Self::Item> {
        match self {
            IntoIter::Small(i) => i.next_back(),
            IntoIter::Large(i) => i.next_back(),
        }
    }
}

impl ExactSizeIterator for IntoIter {}

impl IntoIterator for JsonMap {
    type Item = (String, JsonValue);
    type IntoIter = IntoIter;

    fn into_iter(self) -> IntoIter {
        match self.0 {
            Repr::Small(v) => IntoIter::Small(v.into_iter()),
            Repr::Large(m) => IntoIter::Large(m.into_iter()),
        }
    }
}

impl<'a> IntoIterator for &'a JsonMap {
    type Item = (&'a String, &'a JsonValue);
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl<'a> IntoIterator for &'a mut JsonMap {
    type Item = (&'a String, &'a mut JsonValue);
    type IntoIter = IterMut<'a>;

    fn into_iter(self) -> IterMut<'a> {
        self.iter_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: usize) -> String {
        format!("k{i:03}")
    }

    #[test]
    fn sorted_unique_and_the_same_small_or_large() {
        for n in [0, 3, LARGE_FROM - 1, LARGE_FROM, 100] {
            // Inserted in reverse, every key twice: the later value wins, order is bytewise.
            let mut inserted = JsonMap::new();
            for i in (0..n).rev() {
                inserted.insert(key(i), JsonValue::Int(0));
                assert_eq!(
                    inserted.insert(key(i), JsonValue::Int(i as i64)),
                    Some(JsonValue::Int(0))
                );
            }
            let collected: JsonMap = (0..n)
                .rev()
                .flat_map(|i| {
                    [
                        (key(i), JsonValue::Int(0)),
                        (key(i), JsonValue::Int(i as i64)),
                    ]
                })
                .collect();
            let reference: BTreeMap<String, JsonValue> =
                (0..n).map(|i| (key(i), JsonValue::Int(i as i64))).collect();
            for map in [&inserted, &collected] {
                assert_eq!(map.len(), n);
                assert!(map.iter().eq(reference.iter()), "n = {n}");
                assert!(map.iter().rev().eq(reference.iter().rev()));
            }
            assert_eq!(inserted, collected);
            assert_eq!(inserted, JsonMap::from(reference.clone()));
            if n > 0 {
                assert_eq!(
                    inserted.get(&key(n - 1)),
                    Some(&JsonValue::Int(n as i64 - 1))
                );
                assert_eq!(inserted.remove(&key(0)), Some(JsonValue::Int(0)));
                assert!(!inserted.contains_key(&key(0)));
            }
            assert_eq!(inserted.get("absent"), None);
        }
    }

    #[test]
    fn small_objects_hold_only_their_members() {
        let map: JsonMap = [("a".to_owned(), JsonValue::Null)].into();
        match &map.0 {
            Repr::Small(v) => assert_eq!(v.capacity(), 1),
            Repr::Large(_) => panic!("one member is small"),
        }
    }
}
