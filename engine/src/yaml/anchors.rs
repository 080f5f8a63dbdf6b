//! The anchored nodes of the document being built, for its aliases. An anchored node is found
//! where it lies in the tree (a list index per level, from an open frame or from the root)
//! rather than copied when it is finished: an alias copies it then, and a node nobody aliases
//! is never copied (CRDs anchor whole schemas; the copy each anchor kept was a tenth of what
//! reading one cost). A node leaves the tree only where the builder takes it apart (a merge
//! value) or drops it (a key written again replaces its value): its anchored parts are copied
//! out first.

use std::collections::HashMap;

use super::{Frame, Size, YamlNode, YamlValue};

/// Every anchor of the document so far, and where each lies.
#[derive(Default)]
pub(super) struct Anchors {
    nodes: HashMap<usize, (Place, Size)>,
    /// The anchors below each open frame (by its depth on the stack), by their index in it.
    by_frame: Vec<HashMap<usize, Vec<usize>>>,
}

/// Where an anchored node is.
enum Place {
    /// Out of the tree: a copy.
    Copy(YamlNode),
    /// Below the open frame at `depth`: the indexes that lead to it, innermost first (the last
    /// is its index in that frame's list; a closing frame adds its own at the end).
    Frame { depth: usize, steps: Vec<usize> },
    /// Below the document's root, the indexes innermost first.
    Root { steps: Vec<usize> },
}

impl Anchors {
    /// Forgets every anchor (a document starts).
    pub(super) fn clear(&mut self) {
        self.nodes.clear();
        self.by_frame.clear();
    }

    /// The expanded size of the node anchored as `id`, if it is known.
    pub(super) fn size(&self, id: usize) -> Option<Size> {
        self.nodes.get(&id).map(|(_, size)| *size)
    }

    /// The node anchored as `id`, found in the open `stack` or below `root`.
    pub(super) fn resolve<'t>(
        &'t self,
        id: usize,
        stack: &'t [Frame],
        root: Option<&'t YamlNode>,
    ) -> Option<&'t YamlValue> {
        let node = match &self.nodes.get(&id)?.0 {
            Place::Copy(node) => node,
            Place::Frame { depth, steps } => {
                let (index, inner) = steps.split_last()?;
                let top = match stack.get(*depth)? {
                    Frame::Seq { items, .. } => items.get(*index)?,
                    Frame::Map { entries, .. } => &entries.entries.get(*index)?.1,
                };
                descend(top, inner)?
            }
            Place::Root { steps } => descend(root?, steps)?,
        };
        Some(&node.value)
    }

    /// A finished node, anchored as `anchor` (0: not anchored) with expanded size `size`, is
    /// put at `index` in the list of the frame at `inner - 1`; the anchors below it were in
    /// the frame at `inner` (closed, if the node is a collection).
    pub(super) fn placed(&mut self, inner: usize, index: usize, anchor: usize, size: Size) {
        if anchor == 0 && !self.holds(inner) {
            return;
        }
        let depth = inner.saturating_sub(1);
        let below = self.take_frame(inner);
        if self.by_frame.len() <= depth {
            self.by_frame.resize_with(depth + 1, HashMap::new);
        }
        let group = self.by_frame[depth].entry(index).or_default();
        for id in below.into_values().flatten() {
            if let Some((Place::Frame { depth: at, steps }, _)) = self.nodes.get_mut(&id) {
                *at = depth;
                steps.push(index);
                group.push(id);
            }
        }
        if anchor != 0 {
            let place = Place::Frame {
                depth,
                steps: vec![index],
            };
            self.nodes.insert(anchor, (place, size));
            group.push(anchor);
        }
    }

    /// A finished node becomes the document's root ([`Anchors::placed`]'s arguments).
    pub(super) fn at_root(&mut self, inner: usize, anchor: usize, size: Size) {
        for id in self.take_frame(inner).into_values().flatten() {
            if let Some((place, _)) = self.nodes.get_mut(&id)
                && let Place::Frame { steps, .. } = place
            {
                *place = Place::Root {
                    steps: std::mem::take(steps),
                };
            }
        }
        if anchor != 0 {
            self.nodes
                .insert(anchor, (Place::Root { steps: Vec::new() }, size));
        }
    }

    /// A finished node is taken apart or kept aside (a merge value, a key): it and what is
    /// anchored below it are copied ([`Anchors::placed`]'s arguments).
    pub(super) fn taken(&mut self, inner: usize, node: &YamlNode, anchor: usize, size: Size) {
        if anchor == 0 && !self.holds(inner) {
            return;
        }
        for id in self.take_frame(inner).into_values().flatten() {
            self.copy_out(id, node, 0);
        }
        if anchor != 0 {
            self.nodes.insert(anchor, (Place::Copy(node.clone()), size));
        }
    }

    /// The value at `index` in the frame at `depth`, `old`, was replaced (its key was written
    /// again): what is anchored below it is copied out before it is dropped.
    pub(super) fn replaced(&mut self, depth: usize, index: usize, old: &YamlNode) {
        let Some(ids) = self
            .by_frame
            .get_mut(depth)
            .and_then(|frame| frame.remove(&index))
        else {
            return;
        };
        for id in ids {
            self.copy_out(id, old, 1);
        }
    }

    /// Turns anchor `id`, lying below the frame that `node` came from or sits in, into a copy
    /// (`skip`: how many of its outermost steps lead to `node` itself).
    fn copy_out(&mut self, id: usize, node: &YamlNode, skip: usize) {
        let Some((place, _)) = self.nodes.get_mut(&id) else {
            return;
        };
        let Place::Frame { steps, .. } = place else {
            return;
        };
        let inner = &steps[..steps.len().saturating_sub(skip)];
        match descend(node, inner) {
            Some(found) => *place = Place::Copy(found.clone()),
            // Never: the steps were kept with the tree. Unknown beats a wrong node.
            None => {
                self.nodes.remove(&id);
            }
        }
    }

    /// Whether anchors lie below the frame at `depth` (most nodes hold none: nothing to do).
    fn holds(&self, depth: usize) -> bool {
        self.by_frame
            .get(depth)
            .is_some_and(|frame| !frame.is_empty())
    }

    /// The anchors below the frame at `depth`, which no longer holds them.
    fn take_frame(&mut self, depth: usize) -> HashMap<usize, Vec<usize>> {
        self.by_frame
            .get_mut(depth)
            .map(std::mem::take)
            .unwrap_or_default()
    }
}

/// The node `steps` (innermost first) lead to from `node`.
fn descend<'t>(mut node: &'t YamlNode, steps: &[usize]) -> Option<&'t YamlNode> {
    for index in steps.iter().rev() {
        node = match &node.value {
            YamlValue::Seq(items) => items.get(*index)?,
            YamlValue::Map(entries) => &entries.get(*index)?.1,
            _ => return None,
        };
    }
    Some(node)
}
