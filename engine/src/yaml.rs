//! A YAML reader for test cases that keeps the source position of every node and resolves
//! scalars with YAML 1.1 rules, as sigs.k8s.io/yaml v1.4.0 (go-yaml v2) reads them.
//!
//! Parsing is event based (`saphyr-parser`); the tree is built here so that every node,
//! map keys included, carries its [`Span`]. What go-yaml v2 does and this module copies:
//!
//! * Plain scalars are resolved with YAML 1.1 rules: `y`/`yes`/`on`/`true` (and their
//!   `Yes`/`YES` spellings) are booleans, `~`/`null`/empty are null, integers accept `0x`,
//!   `0o`, `0b`, a leading-`0` octal, `_` separators and a sign, floats accept `1e3`, `.5`,
//!   `.inf`/`.nan`; timestamps stay strings. Quoted and block scalars are strings.
//! * Explicit tags (`!!str`, `!!int`, `!!float`, `!!bool`, `!!null`, `!!binary`, …) are honoured;
//!   a tag that does not fit its value (`!!int abc`) is an error. Unknown tags give strings.
//! * Aliases are resolved (the node is copied; its top span is the alias's), and `<<` merge keys
//!   are applied in place, in source order, as go-yaml v2 applies them.
//! * Alias expansion is bounded as go-yaml v2 bounds it against "billion laughs" documents
//!   (gopkg.in/yaml.v2 v2.4.0, decode.go, `allowedAliasRatio` and `decoder.unmarshal`): every
//!   node decoded counts, nodes decoded through an alias count as aliased, and once more than
//!   100 aliased nodes and 1,000 nodes in all are decoded, the aliased share may not exceed 99%
//!   (up to 400,000 nodes) falling linearly to 10% (from 4,000,000 nodes); beyond it the
//!   document fails with go-yaml's "document contains excessive aliasing". Ours adds a bound on
//!   the scalar bytes copied through aliases ([`MAX_ALIAS_EXPANDED_BYTES`]), which go-yaml
//!   does not need (its strings are shared, ours are copied). Both are checked at the alias,
//!   from sizes recorded with each anchor, before anything is copied: an expansion past the
//!   bounds is never built. Anchored nodes are bounded too, by what copies of them would hold
//!   (16 MiB beyond twice the text's size): each anchor kept a copy once, and anchors nested
//!   around one large value copied it once per anchor. Anchors are now found where they lie in
//!   the tree ([`anchors`]); the bound stays, so the same documents are read.
//! * Nesting is bounded ([`MAX_NESTING_DEPTH`], counted while parsing, aliases included with
//!   the depth of their anchor's node): a deeper document fails at the line of the collection
//!   (or alias) that crosses the bound, so no later walk over the tree can overflow the stack.
//! * A key that appears twice keeps its first position and takes the later value (with a
//!   [`YamlNote`], as the author almost certainly made a mistake).
//! * Only the first document counts ([`parse_first_document`]); [`parse_case_document`] notes
//!   when more follow.

use std::borrow::Cow;

use saphyr_parser::{Event, Parser, ScalarStyle, ScanError};

use crate::go::json_text::go_special_float;
use crate::value::JsonValue;

mod anchors;
mod flow;
mod mapping;
mod positions;
mod scalar;
pub mod scalar_map;
use anchors::Anchors;
use flow::{FlowFix, Restore};
use mapping::{MapEntries, apply_merge};
use positions::Positions;
use scalar::resolve_scalar;

/// A position in the source: 1-based line and column (in chars), and the byte offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pos {
    pub line: u32,
    pub column: u32,
    pub offset: usize,
}

/// The source range of a node, `end` exclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Span {
    pub start: Pos,
    pub end: Pos,
}

/// A YAML node with its span. Scalars are already resolved (YAML 1.1: `yes` is true,
/// `0x1F` is 31, `010` is 8, `1_000` is 1000, `~` is null, `2024-01-02` stays a string).
#[derive(Debug, Clone, PartialEq)]
pub struct YamlNode {
    pub value: YamlValue,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum YamlValue {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    String(String),
    Seq(Vec<YamlNode>),
    /// Entries in source order; keys are nodes so their spans are kept.
    Map(Vec<(YamlNode, YamlNode)>),
}

/// A YAML syntax error with the position the parser reported.
#[derive(Debug, Clone, PartialEq)]
pub struct YamlError {
    pub message: String,
    pub pos: Pos,
}

impl YamlError {
    /// The empty span at the error's position.
    pub fn span(&self) -> Span {
        Span {
            start: self.pos,
            end: self.pos,
        }
    }
}

impl std::fmt::Display for YamlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "yaml: line {}: {}", self.pos.line, self.message)
    }
}

impl std::error::Error for YamlError {}

/// One step of a JSON path into a document.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PathSeg {
    Key(String),
    Index(usize),
}

/// Something a document does that its reader accepts but that is probably a mistake: a key
/// written twice in one mapping, or a document after the first in a file where only the first
/// is read.
#[derive(Debug, Clone, PartialEq)]
pub struct YamlNote {
    pub message: String,
    pub pos: Pos,
}

/// The first document of a stream and the notes about it.
#[derive(Debug, Clone, PartialEq)]
pub struct FirstDocument {
    /// `None` for an empty stream.
    pub root: Option<YamlNode>,
    pub notes: Vec<YamlNote>,
}

/// The most scalar bytes one document may copy through aliases (16 MiB): go-yaml v2 shares
/// an aliased node's strings, this reader copies them, so a long string aliased many times
/// needs a bound of its own.
pub const MAX_ALIAS_EXPANDED_BYTES: u64 = 16 << 20;

/// The most mappings and sequences that may be open at once in a document (aliases count
/// with what they expand to). Kruise accepts up to 10,000 (gopkg.in/yaml.v2 v2.4.0,
/// scannerc.go, `max_flow_level` and `max_indents`, "exceeded max depth of 10000"; then
/// `encoding/json`'s `maxNestingDepth`, also 10,000), but the walks over a case in this
/// project recurse, and a debug build's language server overflowed a 2 MiB run thread at
/// about 1,000 block levels: 255 sits four times below that, and is the bound saphyr-parser
/// already puts on flow collections (its `u8` flow level, "recursion limit exceeded"), so
/// flow and block nesting now end at the same depth.
pub const MAX_NESTING_DEPTH: usize = 255;

/// Parses the first document of `source` (later documents are ignored, as Kruise does).
/// `Ok(None)` for an empty stream.
pub fn parse_first_document(source: &str) -> Result<Option<YamlNode>, YamlError> {
    Ok(parse_case_document(source)?.root)
}

/// Parses the first document of `source` as Kruise reads a test case (later documents are
/// ignored), with notes about duplicate keys and about documents that follow the first.
pub fn parse_case_document(source: &str) -> Result<FirstDocument, YamlError> {
    let (mut docs, notes) = parse_stream(source, Some(1))?;
    Ok(FirstDocument {
        root: docs.pop(),
        notes,
    })
}

/// Parses every document of `source` (for manifests holding several resources).
pub fn parse_documents(source: &str) -> Result<Vec<YamlNode>, YamlError> {
    Ok(parse_stream(source, None)?.0)
}

impl YamlNode {
    /// A node without a source position (for synthesized values).
    pub fn synthetic(value: YamlValue) -> YamlNode {
        YamlNode {
            value,
            span: Span::default(),
        }
    }

    /// The node as JSON, keys converted to strings as sigs.k8s.io/yaml does (`on:` → `"true"`).
    /// Integers stay exact ([`JsonValue::Int`]). Keys sigs.k8s.io/yaml rejects (null) are
    /// written `"null"` here; [`YamlNode::try_to_json`] reports them instead.
    pub fn to_json(&self) -> JsonValue {
        match &self.value {
            YamlValue::Null => JsonValue::Null,
            YamlValue::Bool(b) => JsonValue::Bool(*b),
            YamlValue::Int(i) => JsonValue::Int(*i),
            YamlValue::Float(f) => JsonValue::Float(*f),
            YamlValue::String(s) => JsonValue::String(s.clone()),
            YamlValue::Seq(items) => {
                JsonValue::Array(items.iter().map(YamlNode::to_json).collect())
            }
            // Gathered, then sorted once: a later entry of an equal key wins, as inserting
            // them in turn (which grew the object once per entry) left it.
            YamlValue::Map(entries) => JsonValue::Object(
                entries
                    .iter()
                    .map(|(k, v)| {
                        let key = k.key_string().unwrap_or_else(|| "null".to_string());
                        (key, v.to_json())
                    })
                    .collect(),
            ),
        }
    }

    /// Like [`YamlNode::to_json`], but fails where sigs.k8s.io/yaml fails: a null key, or a
    /// NaN/infinite number (Go's JSON encoder rejects them).
    pub fn try_to_json(&self) -> Result<JsonValue, YamlError> {
        let fail = |node: &YamlNode, message: String| YamlError {
            message,
            pos: node.span.start,
        };
        Ok(match &self.value {
            YamlValue::Float(f) if !f.is_finite() => {
                return Err(fail(
                    self,
                    format!("json: unsupported value: {}", go_special_float(*f)),
                ));
            }
            YamlValue::Seq(items) => JsonValue::Array(
                items
                    .iter()
                    .map(YamlNode::try_to_json)
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            YamlValue::Map(entries) => {
                let mut out = crate::value::JsonMap::new();
                for (k, v) in entries {
                    let key = k
                        .key_string()
                        .ok_or_else(|| fail(k, "unsupported map key of type: <nil>".to_string()))?;
                    out.insert(key, v.try_to_json()?);
                }
                JsonValue::Object(out)
            }
            _ => self.to_json(),
        })
    }

    /// This node used as a map key, as sigs.k8s.io/yaml turns it into a JSON key: strings as
    /// they are, integers in decimal, floats with Go's `%g` at 32-bit precision, booleans as
    /// `"true"`/`"false"`. `None` for keys it rejects (null, collections).
    pub fn key_string(&self) -> Option<String> {
        self.key_text().map(Cow::into_owned)
    }

    /// [`YamlNode::key_string`], borrowed when the key is a string (most are): readers that
    /// only compare keys need no copy.
    pub fn key_text(&self) -> Option<Cow<'_, str>> {
        Some(Cow::Owned(match &self.value {
            YamlValue::String(s) => return Some(Cow::Borrowed(s)),
            YamlValue::Int(i) => i.to_string(),
            YamlValue::Float(f) => go_format_float_g32(*f),
            YamlValue::Bool(b) => b.to_string(),
            YamlValue::Null | YamlValue::Seq(_) | YamlValue::Map(_) => return None,
        }))
    }

    /// The value under `key` of a map node. `key` is compared exactly.
    pub fn get(&self, key: &str) -> Option<&YamlNode> {
        self.entry(key).map(|(_, v)| v)
    }

    /// The key node of `key` in a map node (for pointing at a key rather than its value).
    pub fn get_key(&self, key: &str) -> Option<&YamlNode> {
        self.entry(key).map(|(k, _)| k)
    }

    /// The last entry of a map node whose key, as a JSON key, is `key`.
    fn entry(&self, key: &str) -> Option<&(YamlNode, YamlNode)> {
        match &self.value {
            YamlValue::Map(entries) => entries
                .iter()
                .rev()
                .find(|(k, _)| k.key_text().as_deref() == Some(key)),
            _ => None,
        }
    }

    /// The node at a JSON path below this one (object keys compared exactly), if present.
    pub fn at_path(&self, path: &[PathSeg]) -> Option<&YamlNode> {
        let mut node = self;
        for seg in path {
            node = match (seg, &node.value) {
                (PathSeg::Key(k), YamlValue::Map(_)) => node.get(k)?,
                (PathSeg::Index(i), YamlValue::Seq(items)) => items.get(*i)?,
                _ => return None,
            };
        }
        Some(node)
    }
}

// ---------------------------------------------------------------------------------------------
// Go number formatting that sigs.k8s.io/yaml applies.

/// Go's `strconv.FormatFloat(f, 'g', -1, 32)` with sigs.k8s.io/yaml's spellings of the
/// special values (`.inf`, `-.inf`, `.nan`): how it turns a float into a string where the Go
/// field is a string, and how float map keys are written.
pub(crate) fn go_format_float_g32(f: f64) -> String {
    if f.is_nan() {
        return ".nan".to_string();
    }
    let single = f as f32;
    if single.is_infinite() {
        return if single > 0.0 { ".inf" } else { "-.inf" }.to_string();
    }
    crate::go::fmt::go_shortest_g32(single)
}

// ---------------------------------------------------------------------------------------------
// Building the tree from parser events.

/// How much a node stands for once its aliases are expanded: nodes (as go-yaml v2 counts
/// decode operations), scalar bytes, and the collections nested in it (0 for a scalar).
#[derive(Debug, Clone, Copy, Default)]
struct Size {
    nodes: u64,
    bytes: u64,
    depth: usize,
}

impl Size {
    /// The size of a collection before its children.
    const COLLECTION: Size = Size {
        nodes: 1,
        bytes: 0,
        depth: 1,
    };

    /// Adds a child's size to its parent collection's.
    fn add_child(&mut self, child: Size) {
        self.nodes = self.nodes.saturating_add(child.nodes);
        self.bytes = self.bytes.saturating_add(child.bytes);
        self.depth = self.depth.max(child.depth.saturating_add(1));
    }
}

enum Frame {
    Seq {
        items: Vec<YamlNode>,
        start: Pos,
        flow: bool,
        anchor: usize,
        size: Size,
    },
    Map {
        entries: MapEntries,
        /// The key waiting for its value, and whether it is a `<<` merge key.
        pending: Option<(YamlNode, bool)>,
        start: Pos,
        flow: bool,
        anchor: usize,
        size: Size,
    },
}

fn error_at(pos: Pos, message: impl Into<String>) -> YamlError {
    YamlError {
        message: message.into(),
        pos,
    }
}

fn scan_error(positions: &Positions, e: &ScanError) -> YamlError {
    let pos = positions.pos(e.marker());
    // saphyr-parser 0.3 counts flow levels in a `u8` (scanner.rs, `increase_flow_level`) and
    // may reach its 256th level before the builder sees the collection that crosses
    // MAX_NESTING_DEPTH: one message for both.
    if e.info() == "recursion limit exceeded" {
        return depth_error(pos);
    }
    error_at(pos, e.info().to_string())
}

/// The error of a collection (or alias) at `pos` that nests past [`MAX_NESTING_DEPTH`].
fn depth_error(pos: Pos) -> YamlError {
    error_at(
        pos,
        format!(
            "exceeded max depth of {MAX_NESTING_DEPTH}: mappings and sequences are nested more than {MAX_NESTING_DEPTH} levels deep here"
        ),
    )
}

/// go-yaml v2's `allowedAliasRatio` (gopkg.in/yaml.v2 v2.4.0, decode.go): the share of decode
/// operations that may come from alias expansion, 99% up to 400,000 operations, falling
/// linearly to 10% at 4,000,000.
fn allowed_alias_ratio(decoded: u64) -> f64 {
    const LOW: u64 = 400_000;
    const HIGH: u64 = 4_000_000;
    if decoded <= LOW {
        0.99
    } else if decoded >= HIGH {
        0.10
    } else {
        0.99 - 0.89 * ((decoded - LOW) as f64 / (HIGH - LOW) as f64)
    }
}

/// What one document has decoded so far, for go-yaml v2's aliasing bound.
#[derive(Debug, Default)]
struct AliasBudget {
    /// Every node decoded, aliased ones included (go-yaml's `decodeCount`).
    decoded: u64,
    /// Nodes decoded through an alias (go-yaml's `aliasCount`).
    aliased: u64,
    /// Scalar bytes copied through aliases (our own bound, see [`MAX_ALIAS_EXPANDED_BYTES`]).
    aliased_bytes: u64,
    /// What copies of the anchored nodes would cost (text bytes plus a node's size per node):
    /// the bound set when each anchor kept a copy of its node, kept (see the module's notes).
    anchored_bytes: u64,
}

/// What one node costs in the tree besides its text, for the anchor bound.
const NODE_BYTES: u64 = std::mem::size_of::<YamlNode>() as u64;

impl AliasBudget {
    /// Counts an anchored node of `size` at `pos` as the copy an anchor once kept; fails once
    /// the copies would exceed [`MAX_ALIAS_EXPANDED_BYTES`] beyond what the text itself holds.
    fn count_anchor(&mut self, size: Size, pos: Pos, source_len: usize) -> Result<(), YamlError> {
        let cost = size
            .bytes
            .saturating_add(size.nodes.saturating_mul(NODE_BYTES));
        self.anchored_bytes = self.anchored_bytes.saturating_add(cost);
        let allowed = MAX_ALIAS_EXPANDED_BYTES.saturating_add(2 * source_len as u64);
        if self.anchored_bytes > allowed {
            return Err(error_at(
                pos,
                format!(
                    "document contains excessive anchoring: the anchored nodes up to here stand for {} bytes of copies (anchors nested around a large value?)",
                    self.anchored_bytes
                ),
            ));
        }
        Ok(())
    }

    fn count_node(&mut self) {
        self.decoded = self.decoded.saturating_add(1);
    }

    /// Counts the alias node at `pos` and the expansion of its target, failing when the
    /// document goes past the bounds (before anything is copied).
    fn count_alias(&mut self, target: Size, pos: Pos) -> Result<(), YamlError> {
        self.decoded = self.decoded.saturating_add(1).saturating_add(target.nodes);
        self.aliased = self.aliased.saturating_add(target.nodes);
        self.aliased_bytes = self.aliased_bytes.saturating_add(target.bytes);
        // go-yaml v2's check in `decoder.unmarshal`.
        if self.aliased > 100
            && self.decoded > 1000
            && self.aliased as f64 / self.decoded as f64 > allowed_alias_ratio(self.decoded)
        {
            return Err(error_at(
                pos,
                format!(
                    "document contains excessive aliasing: this alias brings the document to {} decoded nodes, {} of them through aliases (Kruise's YAML reader refuses it too)",
                    self.decoded, self.aliased
                ),
            ));
        }
        if self.aliased_bytes > MAX_ALIAS_EXPANDED_BYTES {
            return Err(error_at(
                pos,
                format!(
                    "document contains excessive aliasing: this alias brings the text copied through aliases to {} bytes (the limit is {} MiB)",
                    self.aliased_bytes,
                    MAX_ALIAS_EXPANDED_BYTES >> 20
                ),
            ));
        }
        Ok(())
    }
}

struct Builder<'a> {
    positions: Positions<'a>,
    source: &'a str,
    stack: Vec<Frame>,
    /// Each anchored node (where it lies) with its expanded size.
    anchors: Anchors,
    budget: AliasBudget,
    notes: Vec<YamlNote>,
    /// The finished root of the current document.
    root: Option<YamlNode>,
    /// Byte ranges of the outermost flow collections read so far (see [`flow`]), the last
    /// one ending at `usize::MAX` while it is open.
    flows: &'a mut Vec<(usize, usize)>,
    /// Colons to put back into plain scalars when re-reading (see [`flow::Restore`]).
    restore: Option<&'a Restore>,
}

impl Builder<'_> {
    /// Hands a finished node of expanded size `size` to its parent (or makes it the document
    /// root).
    fn finish(
        &mut self,
        node: YamlNode,
        size: Size,
        anchor: usize,
        is_merge_key: bool,
    ) -> Result<(), YamlError> {
        if anchor != 0 {
            self.budget
                .count_anchor(size, node.span.start, self.source.len())?;
        }
        // The anchors below `node` were in the frame it closed, one deeper than its parent.
        let inner = self.stack.len();
        let depth = inner.saturating_sub(1);
        match self.stack.last_mut() {
            None => {
                self.anchors.at_root(inner, anchor, size);
                self.root = Some(node)
            }
            Some(Frame::Seq {
                items, size: total, ..
            }) => {
                total.add_child(size);
                self.anchors.placed(inner, items.len(), anchor, size);
                items.push(node)
            }
            Some(Frame::Map {
                entries,
                pending,
                size: total,
                ..
            }) => {
                total.add_child(size);
                match pending.take() {
                    None => {
                        if matches!(node.value, YamlValue::Seq(_) | YamlValue::Map(_)) {
                            return Err(error_at(node.span.start, "invalid map key: a collection"));
                        }
                        self.anchors.taken(inner, &node, anchor, size);
                        *pending = Some((node, is_merge_key));
                    }
                    Some((_, true)) => {
                        self.anchors.taken(inner, &node, anchor, size);
                        apply_merge(entries, node, &mut self.anchors, depth)?
                    }
                    Some((key, false)) => {
                        let pos = key.span.start;
                        let key_text = key.span.start.offset..key.span.end.offset;
                        let (at, first) =
                            entries.insert_tracked(key, node, &mut self.anchors, depth);
                        self.anchors.placed(inner, at, anchor, size);
                        if let Some(first) = first {
                            // Written only for a duplicate (it cost a string per entry).
                            let text = self.source[key_text].chars().take(80).collect::<String>();
                            self.notes.push(YamlNote {
                                message: format!(
                                    "the key `{text}` is written twice in this mapping (first on line {}); Kruise keeps the later value",
                                    first.line
                                ),
                                pos,
                            });
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Fails when a node holding `depth` levels of collections, placed at `pos` inside the
    /// collections open now, would nest deeper than [`MAX_NESTING_DEPTH`].
    fn check_depth(&self, depth: usize, pos: Pos) -> Result<(), YamlError> {
        if self.stack.len().saturating_add(depth) > MAX_NESTING_DEPTH {
            return Err(depth_error(pos));
        }
        Ok(())
    }

    /// A flow collection's start event spans its `{`/`[` (after any anchor or tag); a block
    /// collection's is empty.
    /// A collection starts (its start event ends at `end`): the outermost flow one is noted.
    fn note_flow_start(&mut self, flow: bool, end: Pos) {
        if flow && self.flows.last().is_none_or(|&(_, to)| to != usize::MAX) {
            self.flows.push((end.offset - 1, usize::MAX));
        }
    }

    /// A collection ended (at `end`); its frame is popped already.
    fn note_flow_end(&mut self, flow: bool, end: Pos) {
        let inside_flow = self.stack.iter().any(|frame| match frame {
            Frame::Seq { flow, .. } | Frame::Map { flow, .. } => *flow,
        });
        if flow
            && !inside_flow
            && let Some(last) = self.flows.last_mut()
        {
            last.1 = end.offset;
        }
    }

    fn is_flow(&self, start: Pos, end: Pos) -> bool {
        end.offset > start.offset
            && matches!(
                self.source.as_bytes().get(end.offset - 1),
                Some(b'{' | b'[')
            )
    }
}

/// Whether the document that starts after the first one has any content (a trailing `---`
/// alone does not count). A scan error counts as content: something is there.
fn later_document_has_content(parser: &mut Parser<'_, saphyr_parser::StrInput<'_>>) -> bool {
    match parser.next_event() {
        Some(Ok((Event::DocumentStart(_), _))) => !matches!(
            parser.next_event(),
            Some(Ok((Event::Scalar(text, ScalarStyle::Plain, 0, None), _))) if text.is_empty()
        ),
        Some(Ok((Event::StreamEnd, _))) | None => false,
        _ => true,
    }
}

/// Documents with their notes.
type Stream = (Vec<YamlNode>, Vec<YamlNote>);

/// Parses up to `max_docs` documents (all when `None`), with notes about duplicate keys and
/// about content past the last document read. Flow collections are then checked against
/// go-yaml v2's rules for `:` and `?` (see [`flow`]): the text fails as go-yaml fails, or is
/// read again with the colons saphyr would split at kept in their scalars.
fn parse_stream(source: &str, max_docs: Option<usize>) -> Result<Stream, YamlError> {
    let mut flows = Vec::new();
    let read = parse_events(source, max_docs, None, &mut flows);
    if flows.is_empty() {
        return read;
    }
    // Also when saphyr failed (in a flow collection still open then): its error may be one
    // that go-yaml's reading does not have, or a later consequence of one it has.
    match flow::scan(source, &flows) {
        FlowFix::Same => read,
        FlowFix::Fail(offset, message) => Err(error_at(
            Positions::new(source).pos_at_offset(offset),
            message,
        )),
        FlowFix::Reread(text, restore) => {
            parse_events(&text, max_docs, Some(&restore), &mut Vec::new())
        }
    }
}

/// Reads the events of `source` into documents; `flows` receives the outermost flow
/// collections' byte ranges (one still open at an error ends at `usize::MAX`).
fn parse_events<'a>(
    source: &'a str,
    max_docs: Option<usize>,
    restore: Option<&'a Restore>,
    flows: &'a mut Vec<(usize, usize)>,
) -> Result<Stream, YamlError> {
    let mut parser = Parser::new_from_str(source);
    let mut b = Builder {
        positions: Positions::new(source),
        source,
        stack: Vec::new(),
        anchors: Anchors::default(),
        budget: AliasBudget::default(),
        notes: Vec::new(),
        root: None,
        flows,
        restore,
    };
    let mut docs = Vec::new();
    while let Some(item) = parser.next_event() {
        let (event, span) = item.map_err(|e| scan_error(&b.positions, &e))?;
        let start = b.positions.pos(&span.start);
        let end = b.positions.pos(&span.end);
        match event {
            Event::StreamStart | Event::Nothing => {}
            Event::StreamEnd => break,
            Event::DocumentStart(_) => {
                b.anchors.clear();
                b.budget = AliasBudget::default();
                b.budget.count_node();
                b.root = None;
            }
            Event::DocumentEnd => {
                if let Some(root) = b.root.take() {
                    docs.push(root);
                }
                if max_docs.is_some_and(|max| docs.len() >= max) {
                    if later_document_has_content(&mut parser) {
                        b.notes.push(YamlNote {
                            message: "this file holds more than one YAML document; Kruise reads only the first".to_string(),
                            pos: end,
                        });
                    }
                    break;
                }
            }
            Event::Alias(id) => {
                let Some(size) = b.anchors.size(id) else {
                    return Err(error_at(start, "unknown anchor referenced"));
                };
                b.check_depth(size.depth, start)?;
                b.budget.count_alias(size, start)?;
                let Some(target) = b.anchors.resolve(id, &b.stack, b.root.as_ref()) else {
                    return Err(error_at(start, "unknown anchor referenced"));
                };
                let node = YamlNode {
                    value: target.clone(),
                    span: Span { start, end },
                };
                let alias_size = Size {
                    nodes: size.nodes.saturating_add(1),
                    ..size
                };
                b.finish(node, alias_size, 0, false)?;
            }
            Event::Scalar(text, style, anchor, tag) => {
                let text = match b.restore {
                    Some(restore) if style == ScalarStyle::Plain => restore
                        .restore(source, text.into_owned(), start.offset, end.offset)
                        .into(),
                    _ => text,
                };
                let tag_text = tag.as_ref().map(|t| format!("{}{}", t.handle, t.suffix));
                let is_merge_key = text == "<<"
                    && ((style == ScalarStyle::Plain && tag_text.is_none())
                        || tag_text.as_deref() == Some("tag:yaml.org,2002:merge"));
                let bytes = text.len() as u64;
                let value = resolve_scalar(text, style, tag_text.as_deref())
                    .map_err(|m| error_at(start, m))?;
                // go-yaml v2 does not decode a merge key itself, only its value.
                let size = if is_merge_key {
                    Size::default()
                } else {
                    b.budget.count_node();
                    Size {
                        nodes: 1,
                        bytes,
                        depth: 0,
                    }
                };
                b.finish(
                    YamlNode {
                        value,
                        span: Span { start, end },
                    },
                    size,
                    anchor,
                    is_merge_key,
                )?;
            }
            Event::SequenceStart(anchor, _) => {
                b.check_depth(1, start)?;
                let flow = b.is_flow(start, end);
                b.note_flow_start(flow, end);
                b.budget.count_node();
                b.stack.push(Frame::Seq {
                    items: Vec::new(),
                    start,
                    flow,
                    anchor,
                    size: Size::COLLECTION,
                });
            }
            Event::MappingStart(anchor, _) => {
                b.check_depth(1, start)?;
                let flow = b.is_flow(start, end);
                b.note_flow_start(flow, end);
                b.budget.count_node();
                b.stack.push(Frame::Map {
                    entries: MapEntries::default(),
                    pending: None,
                    start,
                    flow,
                    anchor,
                    size: Size::COLLECTION,
                });
            }
            Event::SequenceEnd => {
                let Some(Frame::Seq {
                    mut items,
                    start: s,
                    flow,
                    anchor,
                    size,
                }) = b.stack.pop()
                else {
                    return Err(error_at(start, "unbalanced sequence end"));
                };
                items.shrink_to_fit();
                b.note_flow_end(flow, end);
                let e = if flow {
                    end
                } else {
                    items.last().map_or(end, |n| n.span.end)
                };
                b.finish(
                    YamlNode {
                        value: YamlValue::Seq(items),
                        span: Span { start: s, end: e },
                    },
                    size,
                    anchor,
                    false,
                )?;
            }
            Event::MappingEnd => {
                let Some(Frame::Map {
                    entries,
                    pending,
                    start: s,
                    flow,
                    anchor,
                    size,
                }) = b.stack.pop()
                else {
                    return Err(error_at(start, "unbalanced mapping end"));
                };
                if let Some((key, _)) = pending {
                    return Err(error_at(key.span.start, "mapping key without a value"));
                }
                let mut entries = entries.entries;
                // Collections are built by pushing; the tree keeps them for a while.
                entries.shrink_to_fit();
                b.note_flow_end(flow, end);
                let e = if flow {
                    end
                } else {
                    entries
                        .iter()
                        .map(|(k, v)| k.span.end.max_by_offset(v.span.end))
                        .max_by_key(|p| p.offset)
                        .unwrap_or(end)
                };
                b.finish(
                    YamlNode {
                        value: YamlValue::Map(entries),
                        span: Span { start: s, end: e },
                    },
                    size,
                    anchor,
                    false,
                )?;
            }
        }
    }
    Ok((docs, b.notes))
}

impl Pos {
    fn max_by_offset(self, other: Pos) -> Pos {
        if other.offset > self.offset {
            other
        } else {
            self
        }
    }
}

#[cfg(test)]
mod tests;
