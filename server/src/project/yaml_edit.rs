//! Minimal edits of a case file's `expected[i]` entries: walk the entry as written against the
//! value it should hold and change only what differs — a scalar's text, a subtree, a key or
//! item added or removed — keeping the author's key order, style (block or flow), comments,
//! anchors, indentation and line endings. Every result is re-read and checked before use.
//!
//! Positions come from the parser's events (`saphyr-parser`, as the engine's reader uses),
//! read by [`layout`].

use std::ops::Range;

use kruise_lua_engine::render::to_yaml;
use kruise_lua_engine::value::JsonValue;
use kruise_lua_engine::yaml::{YamlNode, YamlValue, parse_first_document};
use layout::{Kind, Layout, Scan, scan};

/// A byte range of the text and what replaces it.
pub type Edit = (Range<usize>, String);

/// The rewrite of `expected[index]` entries to new values, as edits of `text`.
/// Fails, saying why, when that cannot be done without changing something else (an anchor
/// in the entry that other nodes repeat) or the text cannot be read.
pub fn rewrite_expected(text: &str, targets: &[(usize, JsonValue)]) -> Result<Vec<Edit>, String> {
    let (doc, edits) = plan(text, targets, false)?;
    let new_text = apply_edits(text, edits.clone());
    if verify(&doc, &new_text, targets).is_ok() {
        return Ok(edits);
    }
    // A layout the minimal edit does not handle: each entry written anew (anchor kept).
    let (doc, edits) = plan(text, targets, true)?;
    let new_text = apply_edits(text, edits.clone());
    verify(&doc, &new_text, targets)?;
    Ok(edits)
}

/// The edits, unverified, and the document they apply to; `whole`: replace each differing
/// entry as a whole instead of editing inside it.
fn plan(
    text: &str,
    targets: &[(usize, JsonValue)],
    whole: bool,
) -> Result<(YamlNode, Vec<Edit>), String> {
    let doc = parse_first_document(text)
        .map_err(|e| e.to_string())?
        .ok_or("the case file is empty")?;
    let scan = scan(text)?;
    let (layout_seq, node_seq) = expected_sequence(&scan.root, &doc)?;
    let Kind::Seq {
        flow: seq_flow,
        items,
    } = &layout_seq.kind
    else {
        return Err("`expected` is not a list".into());
    };
    let YamlValue::Seq(nodes) = &node_seq.value else {
        return Err("`expected` is not a list".into());
    };
    let eol = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let mut walk = Walk {
        text,
        eol,
        edits: Vec::new(),
        anchored: Vec::new(),
    };
    for (index, target) in targets {
        let (Some(layout), Some(node)) = (items.get(*index), nodes.get(*index)) else {
            return Err(format!("there is no expected[{index}]"));
        };
        let context = if *seq_flow {
            Context::Flow
        } else {
            Context::SeqItem
        };
        if !whole {
            walk.diff(layout, node, target, context);
        } else if !same(&node.to_json(), target) {
            if layout.anchor != 0 {
                walk.anchored
                    .push((layout.anchor, layout.start..layout.end));
            }
            walk.rewrite_node(layout, node, target, context);
        }
    }
    let Walk {
        edits, anchored, ..
    } = walk;
    check_anchors(text, &scan, &anchored, &edits)?;
    Ok((doc, edits))
}

/// Applies non-overlapping edits; edits at the same place apply in the order given.
pub fn apply_edits(text: &str, mut edits: Vec<Edit>) -> String {
    edits.sort_by_key(|(range, _)| range.start); // stable: same-place inserts keep their order
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (range, replacement) in edits {
        let start = range.start.max(at);
        out.push_str(&text[at..start]);
        out.push_str(&replacement);
        at = range.end.max(start);
    }
    out.push_str(&text[at..]);
    out
}

/// The layout and node of the root's `expected` value (the entry the reader uses when the
/// key is repeated).
fn expected_sequence<'a>(
    root: &'a Layout,
    doc: &'a YamlNode,
) -> Result<(&'a Layout, &'a YamlNode), String> {
    let missing = || "the case has no `expected` list".to_string();
    let key = doc.get_key("expected").ok_or_else(missing)?;
    let node = doc.get("expected").ok_or_else(missing)?;
    let Kind::Map { entries, .. } = &root.kind else {
        return Err(missing());
    };
    let (_, layout) = entries
        .iter()
        .find(|(k, _)| k.start == key.span.start.offset)
        .ok_or_else(missing)?;
    Ok((layout, node))
}

/// Where a node sits, which decides how a new value is written there.
#[derive(Clone, Copy)]
enum Context {
    /// Inside `[...]` or `{...}`: flow syntax only.
    Flow,
    /// A block sequence item, after its `- `.
    SeqItem,
    /// A block mapping value; its key's start and end offsets.
    MapValue(usize, usize),
}

struct Walk<'a> {
    text: &'a str,
    eol: &'static str,
    edits: Vec<Edit>,
    /// Anchored nodes whose value changes: (anchor id, node range).
    anchored: Vec<(usize, Range<usize>)>,
}

/// Values compare as Kruise compares them: by their JSON text (`50` and `50.0` are equal).
fn same(a: &JsonValue, b: &JsonValue) -> bool {
    a.to_canonical_json() == b.to_canonical_json()
}

impl Walk<'_> {
    /// Edits turning `layout` (whose value is `node`) into `target`.
    fn diff(&mut self, layout: &Layout, node: &YamlNode, target: &JsonValue, context: Context) {
        if same(&node.to_json(), target) {
            return;
        }
        if layout.anchor != 0 {
            self.anchored
                .push((layout.anchor, layout.start..layout.end));
        }
        if let (Kind::Map { flow, entries }, YamlValue::Map(nodes), JsonValue::Object(wanted)) =
            (&layout.kind, &node.value, target)
            && let Some(written) = written_entries(entries, nodes)
        {
            return self.diff_map(layout, *flow, &written, nodes, wanted, context);
        }
        match (&layout.kind, &node.value, target) {
            (Kind::Seq { flow, items }, YamlValue::Seq(nodes), JsonValue::Array(wanted))
                if items.len() == nodes.len() && !items.is_empty() && !wanted.is_empty() =>
            {
                self.diff_seq(*flow, items, nodes, wanted)
            }
            _ => self.rewrite_node(layout, node, target, context),
        }
    }

    /// Edits turning a map into `wanted` entry by entry: `entries` are its written entries,
    /// each with the reader's key and value for it; `merges` its `<<` entries, which stay as
    /// they are (no removal runs across them).
    fn diff_entries(
        &mut self,
        layout: &Layout,
        flow: bool,
        entries: &[WrittenEntry],
        merges: &[&(Layout, Layout)],
        wanted: &kruise_lua_engine::value::JsonMap,
        context: Context,
    ) {
        let keys: Vec<Option<String>> = entries.iter().map(|(_, (k, _))| k.key_string()).collect();
        let kept: Vec<bool> = keys
            .iter()
            .map(|k| k.as_ref().is_some_and(|k| wanted.contains_key(k)))
            .collect();
        let added: Vec<(&String, &JsonValue)> = wanted
            .iter()
            .filter(|(k, _)| !keys.iter().any(|have| have.as_ref() == Some(*k)))
            .collect();
        if !kept.contains(&true) && merges.is_empty() {
            // Nothing of the old map stays: write it anew. (A merge always stays, so a map
            // with one is never written anew here: the keys go below its merge lines.)
            let target = JsonValue::Object(wanted.clone());
            return self.replace(layout, &target, context);
        }
        let inner = if flow {
            Context::Flow
        } else {
            Context::MapValue(0, 0)
        };
        for (((key, value), (_, node)), name) in entries.iter().zip(&keys) {
            if let Some(want) = name.as_ref().and_then(|k| wanted.get(k)) {
                let context = match inner {
                    Context::MapValue(..) => Context::MapValue(key.start, key.end),
                    other => other,
                };
                self.diff(value, node, want, context);
            }
        }
        // The entries in the order written, the merges among them as kept.
        let mut written: Vec<((usize, usize), bool)> = entries
            .iter()
            .map(|((k, v), _)| (k.start, v.end))
            .zip(kept)
            .chain(merges.iter().map(|(k, v)| ((k.start, v.end), true)))
            .collect();
        written.sort_by_key(|((start, _), _)| *start);
        let (spans, kept): (Vec<(usize, usize)>, Vec<bool>) = written.into_iter().unzip();
        self.remove_runs(&spans, &kept, flow);
        let last = kept.iter().rposition(|k| *k).unwrap_or(0);
        for (key, value) in added {
            let mut single = kruise_lua_engine::value::JsonMap::new();
            single.insert(key.clone(), value.clone());
            let entry = JsonValue::Object(single);
            if flow {
                let text = flow_text(&entry);
                // `{k: v}` → `, k: v` after the last kept entry.
                let body = &text[1..text.len() - 1];
                self.edits
                    .push((spans[last].1..spans[last].1, format!(", {body}")));
            } else {
                let at = self.line_end(spans[last].1);
                let column = self.column(spans[last].0);
                let block = self.block_lines(&entry, column);
                self.edits
                    .push((at..at, format!("{}{}{block}", self.eol, spaces(column))));
            }
        }
    }

    /// Edits turning a map (its written entries: [`written_entries`]) into `wanted`. A map
    /// with `<<` merges keeps them as they are: its written entries are edited, removed or
    /// added as in a plain map, and a key the merges give is written out only when its value
    /// must change. A key only the merges give cannot be removed by an edit: then the map is
    /// written anew. (`rewrite_expected` checks the result reads back as wanted, and writes
    /// the entry anew when it does not: a removed entry that uncovers a merged value of the
    /// same key, say.)
    fn diff_map(
        &mut self,
        layout: &Layout,
        flow: bool,
        written: &[WrittenEntry],
        nodes: &[(YamlNode, YamlNode)],
        wanted: &kruise_lua_engine::value::JsonMap,
        context: Context,
    ) {
        let merges: Vec<&(Layout, Layout)> = match &layout.kind {
            Kind::Map { entries, .. } => entries.iter().filter(|(k, _)| is_merge_key(k)).collect(),
            _ => Vec::new(),
        };
        if merges.is_empty() {
            return self.diff_entries(layout, flow, written, &[], wanted, context);
        }
        let written_keys: Vec<Option<String>> =
            written.iter().map(|(_, (k, _))| k.key_string()).collect();
        let is_written = |key: &str| written_keys.iter().any(|k| k.as_deref() == Some(key));
        let mut merged = kruise_lua_engine::value::JsonMap::new();
        for (key, value) in nodes {
            if let Some(key) = key.key_string()
                && !is_written(&key)
            {
                merged.insert(key, value.to_json());
            }
        }
        // Only a merged key that must go makes the map written anew: the merge lines stay
        // otherwise, even when no written entry does (`- <<: *be` alone, a whole entry that
        // is one merge), and what differs goes below them.
        if merged.keys().any(|key| !wanted.contains_key(key)) {
            return self.replace(layout, &JsonValue::Object(wanted.clone()), context);
        }
        let mut explicit = kruise_lua_engine::value::JsonMap::new();
        for (key, value) in wanted.iter() {
            let from_merge = merged.get(key).is_some_and(|held| same(held, value));
            if is_written(key) || !from_merge {
                explicit.insert(key.clone(), value.clone());
            }
        }
        self.diff_entries(layout, flow, written, &merges, &explicit, context);
    }

    fn diff_seq(&mut self, flow: bool, items: &[Layout], nodes: &[YamlNode], wanted: &[JsonValue]) {
        let inner = if flow {
            Context::Flow
        } else {
            Context::SeqItem
        };
        for ((item, node), want) in items.iter().zip(nodes).zip(wanted) {
            self.diff(item, node, want, inner);
        }
        let kept: Vec<bool> = (0..items.len()).map(|i| i < wanted.len()).collect();
        let spans: Vec<(usize, usize)> = items
            .iter()
            .map(|i| (if flow { i.start } else { self.dash(i) }, i.end))
            .collect();
        self.remove_runs(&spans, &kept, flow);
        let last = wanted.len().min(items.len()) - 1;
        for value in wanted.iter().skip(items.len()) {
            if flow {
                self.edits.push((
                    spans[last].1..spans[last].1,
                    format!(", {}", flow_text(value)),
                ));
            } else {
                let at = self.line_end(spans[last].1);
                let column = self.column(spans[last].0);
                let block = self.block_lines(&JsonValue::Array(vec![value.clone()]), column);
                self.edits
                    .push((at..at, format!("{}{}{block}", self.eol, spaces(column))));
            }
        }
    }

    /// Removes the entries or items (`(start, end)` each) not `kept`, run by run, with their
    /// separators: whole lines in block style, the `, ` in flow style. At least one is kept.
    fn remove_runs(&mut self, spans: &[(usize, usize)], kept: &[bool], flow: bool) {
        let mut i = 0;
        while i < spans.len() {
            if kept[i] {
                i += 1;
                continue;
            }
            let mut j = i;
            while j < spans.len() && !kept[j] {
                j += 1;
            }
            let range = if flow {
                if j < spans.len() {
                    spans[i].0..spans[j].0
                } else {
                    spans[i - 1].1..spans[j - 1].1
                }
            } else {
                let line_start = self.line_start(spans[i].0);
                if self.text[line_start..spans[i].0].trim().is_empty() {
                    // From the line break before the run to the end of its last line, so that
                    // an insertion after the run's last line still lands after what stays.
                    let before = self.text[..line_start]
                        .strip_suffix('\n')
                        .map_or(line_start, |t| t.strip_suffix('\r').unwrap_or(t).len());
                    before..self.line_end(spans[j - 1].1)
                } else if j < spans.len() {
                    // The first entry shares its line with a `- `: the next kept one moves up.
                    spans[i].0..spans[j].0
                } else {
                    self.line_end(spans[i - 1].1)..self.line_end(spans[j - 1].1)
                }
            };
            self.edits.push((range, String::new()));
            i = j;
        }
    }

    /// Replaces a node (whose value is `node`) with `target`: a block scalar keeps its style
    /// when that style can hold the new value, anything else is written anew.
    fn rewrite_node(
        &mut self,
        layout: &Layout,
        node: &YamlNode,
        target: &JsonValue,
        context: Context,
    ) {
        if let (Kind::Scalar { block: true, .. }, JsonValue::String(value)) = (&layout.kind, target)
            && let JsonValue::String(old) = node.to_json()
            && let Some(edits) = self.block_scalar(layout, &old, value, context)
        {
            self.edits.extend(edits);
            return;
        }
        self.replace(layout, target, context);
    }

    /// Replaces a whole node with `target`, keeping its anchor.
    fn replace(&mut self, layout: &Layout, target: &JsonValue, context: Context) {
        let anchor = anchor_text(&self.text[layout.start..layout.content]);
        let mut range = layout.start..layout.end;
        if range.is_empty() {
            // An empty value (`key:`, `-`): the parser's position for it may be elsewhere on
            // the line; the new value goes right after the indicator.
            let after = |from: usize, indicator: char| {
                self.text[from..].find(indicator).map(|i| from + i + 1)
            };
            let at = match context {
                Context::MapValue(_, key_end) => after(key_end, ':'),
                Context::SeqItem => after(self.line_start(layout.start), '-'),
                Context::Flow => None,
            };
            if let Some(at) = at {
                range = at..at;
            }
        }
        let simple = match target {
            JsonValue::Object(m) => m.is_empty(),
            JsonValue::Array(a) => a.is_empty(),
            _ => true,
        };
        let was_flow = matches!(
            layout.kind,
            Kind::Seq { flow: true, .. } | Kind::Map { flow: true, .. }
        );
        let text = match context {
            Context::Flow => format!("{}{}", prefix(anchor, " "), flow_text(target)),
            _ if simple || was_flow => {
                if let Context::MapValue(..) = context {
                    // A value on the line below its key moves up to the key's line.
                    let before = self.text[..range.start].trim_end();
                    if before.ends_with(':') && self.text[before.len()..range.start].contains('\n')
                    {
                        range.start = before.len();
                    }
                }
                let space = if range.is_empty() || self.text[..range.start].ends_with(':') {
                    " "
                } else {
                    ""
                };
                format!("{space}{}{}", prefix(anchor, " "), flow_text(target))
            }
            Context::SeqItem => {
                let column = self.column(layout.content);
                match anchor {
                    // `- &a` then the block on the following lines.
                    Some(anchor) => {
                        let column = self.column(self.dash(layout)) + 2;
                        let block = self.block_lines(target, column);
                        format!("{anchor}{}{}{block}", self.eol, spaces(column))
                    }
                    None => self.block_lines(target, column),
                }
            }
            Context::MapValue(key, _) => {
                let own_line = self.line_start(range.start) != self.line_start(key);
                if own_line && anchor.is_none() {
                    let column = self.column(layout.content);
                    self.block_lines(target, column)
                } else {
                    // After `key:` on the key's line: the block goes below, one step in.
                    range.start = self.text[..layout.start]
                        .trim_end_matches([' ', '\t'])
                        .len();
                    let column = self.column(key) + 2;
                    let block = self.block_lines(target, column);
                    format!(
                        "{}{}{}{block}",
                        anchor.map_or(String::new(), |a| format!(" {a}")),
                        self.eol,
                        spaces(column)
                    )
                }
            }
        };
        self.edits.push((range, text));
    }

    /// The edits writing `value` into a block scalar in its own style ([`block_scalar`]), or
    /// None when that style cannot hold it.
    fn block_scalar(
        &self,
        layout: &Layout,
        old: &str,
        value: &str,
        context: Context,
    ) -> Option<Vec<Edit>> {
        let parent = match context {
            Context::MapValue(key, _) => {
                // An explicit `? key` entry is indented as its `?`.
                let line = self.line_start(key);
                let before = self.text[line..key].trim_end_matches(' ');
                Some(self.column(if before.ends_with('?') {
                    line + before.len() - 1
                } else {
                    key
                }))
            }
            Context::SeqItem => {
                let dash = self.dash(layout);
                self.text[dash..]
                    .starts_with('-')
                    .then(|| self.column(dash))
            }
            Context::Flow => None,
        };
        let site = block_scalar::Site {
            text: self.text,
            eol: self.eol,
            indicator: layout.content,
            end: layout.end,
            parent,
        };
        block_scalar::rewrite(&site, old, value)
    }

    /// A block rendering whose first line goes where the cursor is and whose other lines are
    /// indented to `column`, with the file's line ending.
    fn block_lines(&self, value: &JsonValue, column: usize) -> String {
        let yaml = to_yaml(value);
        yaml.trim_end_matches('\n')
            .split('\n')
            .collect::<Vec<_>>()
            .join(&format!("{}{}", self.eol, spaces(column)))
    }

    /// The `-` of a block sequence item.
    fn dash(&self, item: &Layout) -> usize {
        let before = self.text[..item.start].trim_end_matches([' ', '\t', '\r', '\n']);
        if before.ends_with('-') {
            before.len() - 1
        } else {
            item.start
        }
    }

    fn line_start(&self, at: usize) -> usize {
        self.text[..at].rfind('\n').map_or(0, |i| i + 1)
    }

    /// The end of `at`'s line, before its line break.
    fn line_end(&self, at: usize) -> usize {
        block_scalar::line_end(self.text, at)
    }

    /// The column (in chars) of a byte offset.
    fn column(&self, at: usize) -> usize {
        self.text[self.line_start(at)..at].chars().count()
    }
}

fn spaces(n: usize) -> String {
    " ".repeat(n)
}

/// `&name` and `separator`, or nothing without an anchor.
fn prefix(anchor: Option<&str>, separator: &str) -> String {
    anchor.map_or(String::new(), |a| format!("{a}{separator}"))
}

/// The `&name` among a node's properties.
fn anchor_text(properties: &str) -> Option<&str> {
    properties
        .split_whitespace()
        .take_while(|t| t.starts_with(['&', '!']))
        .find(|t| t.starts_with('&'))
}

/// A value in flow syntax (`{a: 1, b: [x, "50"]}`): scalars as the block renderer writes them,
/// plain only when that cannot be misread (no `,`, `:`, brackets or YAML 1.1 words).
fn flow_text(value: &JsonValue) -> String {
    match value {
        JsonValue::Object(map) if !map.is_empty() => {
            let entries: Vec<String> = map
                .iter()
                .map(|(k, v)| {
                    format!(
                        "{}: {}",
                        scalar_text(&JsonValue::String(k.clone())),
                        flow_text(v)
                    )
                })
                .collect();
            format!("{{{}}}", entries.join(", "))
        }
        JsonValue::Array(items) if !items.is_empty() => {
            let items: Vec<String> = items.iter().map(flow_text).collect();
            format!("[{}]", items.join(", "))
        }
        scalar => scalar_text(scalar),
    }
}

/// A scalar (or an empty collection) as one line of YAML.
fn scalar_text(value: &JsonValue) -> String {
    to_yaml(value).trim_end_matches('\n').to_string()
}

/// Whether a map can be edited entry by entry: no `<<` merge and no repeated key (the reader's
/// entries are then the written ones, in order).
fn is_plain_map(entries: &[(Layout, Layout)], nodes: &[(YamlNode, YamlNode)]) -> bool {
    entries.len() == nodes.len()
        && entries
            .iter()
            .all(|(k, _)| !is_merge_key(k) && !matches!(k.kind, Kind::Alias))
}

/// Whether a key is a `<<` merge (written plain, as the reader takes it).
fn is_merge_key(key: &Layout) -> bool {
    matches!(&key.kind, Kind::Scalar { plain_text: Some(t), .. } if t == "<<")
}

/// A map entry as written (key and value layouts) with the reader's key and value for it.
type WrittenEntry<'a> = (&'a (Layout, Layout), &'a (YamlNode, YamlNode));

/// The entries written in a map, each with the reader's: side by side in a plain map, else
/// found among the reader's entries by where its key starts, the `<<` merges left out. `None`
/// when an entry cannot be told apart so (an alias as a key, a key written twice).
fn written_entries<'a>(
    entries: &'a [(Layout, Layout)],
    nodes: &'a [(YamlNode, YamlNode)],
) -> Option<Vec<WrittenEntry<'a>>> {
    if is_plain_map(entries, nodes) {
        return Some(entries.iter().zip(nodes).collect());
    }
    let mut written = Vec::new();
    for entry in entries {
        let (key, _) = entry;
        match &key.kind {
            _ if is_merge_key(key) => continue,
            Kind::Alias => return None,
            _ => {}
        }
        let node = nodes
            .iter()
            .find(|(k, _)| k.span.start.offset == key.start)?;
        written.push((entry, node));
    }
    Some(written)
}

/// Refuses edits that would change an anchored node another node repeats through an alias
/// (the alias would change too), or remove or rewrite its `&name` (the alias would dangle),
/// unless that alias is itself being rewritten.
fn check_anchors(
    text: &str,
    scan: &Scan,
    anchored: &[(usize, Range<usize>)],
    edits: &[Edit],
) -> Result<(), String> {
    let line = |at: usize| text[..at].matches('\n').count() + 1;
    let rewritten = |r: &Range<usize>| {
        edits
            .iter()
            .any(|(e, _)| e.start <= r.start && r.end <= e.end && e.start < e.end)
    };
    let removed = scan.anchors.iter().filter_map(|(id, start)| {
        edits
            .iter()
            .any(|(e, _)| e.start <= *start && *start < e.end)
            .then_some((*id, *start))
    });
    let changed = anchored.iter().map(|(id, range)| (*id, range.start));
    for (id, start) in changed.chain(removed) {
        let Some(uses) = scan.aliases.get(&id) else {
            continue;
        };
        if let Some(alias) = uses.iter().find(|r| !rewritten(r)) {
            let name = &text[alias.start..alias.end];
            return Err(format!(
                "the value anchored at line {} is repeated by the alias `{name}` at line {}, \
                 which would change too; edit the case by hand",
                line(start),
                line(alias.start)
            ));
        }
    }
    Ok(())
}

/// The rewritten text must read back as the old document with only the targets changed.
fn verify(old: &YamlNode, new_text: &str, targets: &[(usize, JsonValue)]) -> Result<(), String> {
    let failed = |why: String| format!("the rewritten case would not be right ({why})");
    let new = parse_first_document(new_text)
        .map_err(|e| failed(e.to_string()))?
        .ok_or_else(|| failed("it is empty".into()))?;
    let mut wanted = old.to_json();
    if let JsonValue::Object(root) = &mut wanted
        && let Some(JsonValue::Array(items)) = root.get_mut("expected")
    {
        for (index, target) in targets {
            if let Some(item) = items.get_mut(*index) {
                *item = target.clone();
            }
        }
    }
    if !same(&new.to_json(), &wanted) {
        return Err(failed("its other values would change".into()));
    }
    Ok(())
}

mod block_scalar;
mod layout;

#[cfg(test)]
mod tests;
