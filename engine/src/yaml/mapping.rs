//! The entries of a mapping being built: a key written again replaces the earlier one's value
//! as a Go map does (found through an index in large mappings), and `<<` merge values are
//! applied in place, as go-yaml v2 applies them.

use super::anchors::Anchors;
use super::{Pos, YamlError, YamlNode, YamlValue, error_at};

/// The entries of a mapping being built. Each key is checked against the earlier ones (a Go map
/// keeps one value per key); past [`INDEX_FROM`] entries an index by key makes that check O(1),
/// so a flat mapping of n keys is built in O(n), not O(n²).
#[derive(Default)]
pub(super) struct MapEntries {
    pub(super) entries: Vec<(YamlNode, YamlNode)>,
    /// Positions in `entries` by key, once there are [`INDEX_FROM`] of them.
    index: Option<KeyIndex>,
}

/// Small mappings are scanned; an index costs more than it saves there.
const INDEX_FROM: usize = 16;

/// The entries of a mapping by a hash of their key, which the entries themselves confirm (keys
/// are not copied into the index: a CRD's `properties` maps made it copy thousands). Keyed
/// with std's random state, as a map of the keys was, so that no text can make keys collide.
struct KeyIndex {
    state: std::hash::RandomState,
    /// The first entry of each hash.
    first: std::collections::HashMap<u64, usize, rustc_hash::FxBuildHasher>,
    /// For each entry, the next one whose key has the same hash ([`NO_ENTRY`]: none).
    next: Vec<usize>,
}

/// The end of a chain of [`KeyIndex::next`].
const NO_ENTRY: usize = usize::MAX;

impl KeyIndex {
    fn new(entries: &[(YamlNode, YamlNode)]) -> KeyIndex {
        let mut index = KeyIndex {
            state: std::hash::RandomState::new(),
            first: std::collections::HashMap::default(),
            next: Vec::with_capacity(entries.len()),
        };
        for (k, _) in entries {
            index.push(&k.value);
        }
        index
    }

    /// The hash of a scalar key as [`YamlValue`]'s equality sees it: `Int(1)` and `Float(1.0)`
    /// differ, `0.0` equals `-0.0`, and NaN equals nothing (so it is never indexed).
    fn hash(&self, key: &YamlValue) -> Option<u64> {
        use std::hash::{BuildHasher, Hash, Hasher};
        let mut hasher = self.state.build_hasher();
        match key {
            YamlValue::Null => 0u8.hash(&mut hasher),
            YamlValue::Bool(b) => (1u8, b).hash(&mut hasher),
            YamlValue::Int(i) => (2u8, i).hash(&mut hasher),
            YamlValue::Float(f) if f.is_nan() => return None,
            YamlValue::Float(f) => (3u8, if *f == 0.0 { 0 } else { f.to_bits() }).hash(&mut hasher),
            YamlValue::String(s) => (4u8, s).hash(&mut hasher),
            YamlValue::Seq(_) | YamlValue::Map(_) => return None,
        }
        Some(hasher.finish())
    }

    /// Where `key` is in `entries`; `Err` when it cannot be indexed (NaN, a collection).
    fn find(&self, entries: &[(YamlNode, YamlNode)], key: &YamlValue) -> Result<Option<usize>, ()> {
        let hash = self.hash(key).ok_or(())?;
        let mut at = self.first.get(&hash).copied().unwrap_or(NO_ENTRY);
        while at != NO_ENTRY {
            if entries[at].0.value == *key {
                return Ok(Some(at));
            }
            at = self.next[at];
        }
        Ok(None)
    }

    /// Indexes the entry after the last, whose key is `key`.
    fn push(&mut self, key: &YamlValue) {
        let at = self.next.len();
        self.next.push(NO_ENTRY);
        let Some(hash) = self.hash(key) else { return };
        match self.first.entry(hash) {
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(at);
            }
            std::collections::hash_map::Entry::Occupied(slot) => {
                // A collision of different keys (a key already there is replaced, not pushed).
                let mut last = *slot.get();
                while self.next[last] != NO_ENTRY {
                    last = self.next[last];
                }
                self.next[last] = at;
            }
        }
    }
}

impl MapEntries {
    /// Sets `key` to `value` as a Go map does: an equal key keeps its place and takes the new
    /// key node and value. Returns where the entry is, and the entry it replaced, if any.
    fn insert(&mut self, key: YamlNode, value: YamlNode) -> (usize, Option<(YamlNode, YamlNode)>) {
        if self.index.is_none() && self.entries.len() >= INDEX_FROM {
            self.index = Some(KeyIndex::new(&self.entries));
        }
        let found = match &self.index {
            Some(index) => match index.find(&self.entries, &key.value) {
                Ok(found) => found,
                Err(()) if matches!(key.value, YamlValue::Float(_)) => None, // NaN
                Err(()) => self.entries.iter().position(|(k, _)| k.value == key.value),
            },
            None => self.entries.iter().position(|(k, _)| k.value == key.value),
        };
        if let Some(i) = found {
            let replaced = std::mem::replace(&mut self.entries[i], (key, value));
            return (i, Some(replaced));
        }
        if let Some(index) = &mut self.index {
            index.push(&key.value);
        }
        self.entries.push((key, value));
        (self.entries.len() - 1, None)
    }

    /// [`MapEntries::insert`] into the map open at `depth`, whose anchors `anchors` tracks.
    pub(super) fn insert_tracked(
        &mut self,
        key: YamlNode,
        value: YamlNode,
        anchors: &mut Anchors,
        depth: usize,
    ) -> (usize, Option<Pos>) {
        let (at, replaced) = self.insert(key, value);
        let first = replaced.map(|(old_key, old_value)| {
            anchors.replaced(depth, at, &old_value);
            old_key.span.start
        });
        (at, first)
    }
}

/// Applies a `<<` merge value to `entries` (of the map open at `depth`): a map, or a sequence
/// of maps where earlier maps take precedence.
pub(super) fn apply_merge(
    entries: &mut MapEntries,
    value: YamlNode,
    anchors: &mut Anchors,
    depth: usize,
) -> Result<(), YamlError> {
    let want_map = |n: &YamlNode| {
        error_at(
            n.span.start,
            "map merge requires map or sequence of maps as the value",
        )
    };
    match value.value {
        YamlValue::Map(merged) => {
            for (k, v) in merged {
                entries.insert_tracked(k, v, anchors, depth);
            }
        }
        YamlValue::Seq(items) => {
            for item in items.into_iter().rev() {
                match item.value {
                    YamlValue::Map(merged) => {
                        for (k, v) in merged {
                            entries.insert_tracked(k, v, anchors, depth);
                        }
                    }
                    _ => return Err(want_map(&item)),
                }
            }
        }
        _ => return Err(want_map(&value)),
    }
    Ok(())
}
