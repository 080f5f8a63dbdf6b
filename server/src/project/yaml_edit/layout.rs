//! The source layout of a case file's first document, read from the parser's events: where
//! each node starts, where its value starts and where it ends, its anchor, and where each
//! anchor is used. The engine's tree has values and spans but not anchors, exact ends of flow
//! collections or where a block scalar's indicator is, which an edit needs.

use std::collections::HashMap;
use std::ops::Range;

use saphyr_parser::{Event, Parser, ScalarStyle};

/// Where a node is in the source.
#[derive(Debug)]
pub(super) struct Layout {
    /// Where the node starts, properties (`&anchor`, `!tag`) included.
    pub(super) start: usize,
    /// Where its value starts: after the properties; a block scalar's indicator; a block
    /// sequence's first `-`.
    pub(super) content: usize,
    /// Where it ends (exclusive): trailing comments and blank lines are not part of it.
    pub(super) end: usize,
    /// The parser's anchor id (0: none).
    pub(super) anchor: usize,
    pub(super) kind: Kind,
}

#[derive(Debug)]
pub(super) enum Kind {
    Scalar {
        plain_text: Option<String>,
        /// A `|` or `>` block scalar (its indicator at the layout's `content`).
        block: bool,
    },
    Alias,
    Seq {
        flow: bool,
        items: Vec<Layout>,
    },
    Map {
        flow: bool,
        entries: Vec<(Layout, Layout)>,
    },
}

/// The source layout of the first document, and where each anchor is used.
pub(super) struct Scan {
    pub(super) root: Layout,
    /// Alias uses: anchor id → byte ranges of the `*name` texts.
    pub(super) aliases: HashMap<usize, Vec<Range<usize>>>,
    /// Anchor definitions: anchor id → where its node (with its `&name`) starts.
    pub(super) anchors: HashMap<usize, usize>,
}

/// Reads the first document's layout from the parser's events.
pub(super) fn scan(text: &str) -> Result<Scan, String> {
    enum Open {
        Seq {
            start: usize,
            content: usize,
            flow: bool,
            anchor: usize,
            items: Vec<Layout>,
        },
        Map {
            start: usize,
            content: usize,
            flow: bool,
            anchor: usize,
            entries: Vec<(Layout, Layout)>,
            key: Option<Layout>,
        },
    }
    fn add(
        stack: &mut [Open],
        root: &mut Option<Layout>,
        anchors: &mut HashMap<usize, usize>,
        node: Layout,
    ) {
        if node.anchor != 0 {
            anchors.insert(node.anchor, node.start);
        }
        match stack.last_mut() {
            None => *root = Some(node),
            Some(Open::Seq { items, .. }) => items.push(node),
            Some(Open::Map { entries, key, .. }) => match key.take() {
                None => *key = Some(node),
                Some(k) => entries.push((k, node)),
            },
        }
    }
    let mut byte_of_char: Vec<usize> = text.char_indices().map(|(b, _)| b).collect();
    byte_of_char.push(text.len());
    let byte = |m: &saphyr_parser::Marker| byte_of_char[m.index().min(byte_of_char.len() - 1)];
    let mut parser = Parser::new_from_str(text);
    let mut stack: Vec<Open> = Vec::new();
    let mut root = None;
    let mut aliases: HashMap<usize, Vec<Range<usize>>> = HashMap::new();
    let mut anchors: HashMap<usize, usize> = HashMap::new();
    while let Some(item) = parser.next_event() {
        let (event, span) = item.map_err(|e| e.to_string())?;
        let (start, end) = (byte(&span.start), byte(&span.end));
        match event {
            Event::DocumentEnd => break,
            Event::Alias(id) => {
                aliases.entry(id).or_default().push(start..end);
                let node = Layout {
                    start,
                    content: start,
                    end,
                    anchor: 0,
                    kind: Kind::Alias,
                };
                add(&mut stack, &mut root, &mut anchors, node);
            }
            Event::Scalar(value, style, anchor, _) => {
                let (start, content, end) = match style {
                    ScalarStyle::Literal | ScalarStyle::Folded => {
                        block_scalar_bounds(text, start, end)
                    }
                    _ => (start, properties_end(text, start, end), end),
                };
                let plain_text = (style == ScalarStyle::Plain).then(|| value.to_string());
                let block = matches!(style, ScalarStyle::Literal | ScalarStyle::Folded);
                add(
                    &mut stack,
                    &mut root,
                    &mut anchors,
                    Layout {
                        start,
                        content,
                        end,
                        anchor,
                        kind: Kind::Scalar { plain_text, block },
                    },
                );
            }
            Event::SequenceStart(anchor, _) => {
                let flow = end > start && text[..end].ends_with('[');
                let content = if flow { end - 1 } else { end };
                stack.push(Open::Seq {
                    start,
                    content,
                    flow,
                    anchor,
                    items: Vec::new(),
                });
            }
            Event::MappingStart(anchor, _) => {
                let flow = end > start && text[..end].ends_with('{');
                let content = if flow { end - 1 } else { end };
                stack.push(Open::Map {
                    start,
                    content,
                    flow,
                    anchor,
                    entries: Vec::new(),
                    key: None,
                });
            }
            Event::SequenceEnd => {
                let Some(Open::Seq {
                    start: s,
                    content,
                    flow,
                    anchor,
                    items,
                }) = stack.pop()
                else {
                    return Err("unbalanced sequence".into());
                };
                let e = if flow {
                    start + 1
                } else {
                    items.last().map_or(content, |i| i.end)
                };
                // A block sequence's events start at its first item: it starts at the `-`.
                let (s, content) = match items.first() {
                    Some(first) if !flow => {
                        let before = text[..first.start].trim_end_matches([' ', '\t']);
                        let dash = before.strip_suffix('-').map_or(first.start, str::len);
                        let has_properties = text[s..].starts_with(['&', '!']) && s < dash;
                        (if has_properties { s } else { dash }, dash)
                    }
                    _ => (s, content),
                };
                let node = Layout {
                    start: s,
                    content,
                    end: e,
                    anchor,
                    kind: Kind::Seq { flow, items },
                };
                add(&mut stack, &mut root, &mut anchors, node);
            }
            Event::MappingEnd => {
                let Some(Open::Map {
                    start: s,
                    content,
                    flow,
                    anchor,
                    entries,
                    ..
                }) = stack.pop()
                else {
                    return Err("unbalanced mapping".into());
                };
                let e = if flow {
                    start + 1
                } else {
                    entries.last().map_or(content, |(_, v)| v.end)
                };
                let node = Layout {
                    start: s,
                    content,
                    end: e,
                    anchor,
                    kind: Kind::Map { flow, entries },
                };
                add(&mut stack, &mut root, &mut anchors, node);
            }
            _ => {}
        }
    }
    let root = root.ok_or("the case file is empty")?;
    Ok(Scan {
        root,
        aliases,
        anchors,
    })
}

/// Where a scalar's value starts after its properties (`&a !!str value`).
fn properties_end(text: &str, start: usize, end: usize) -> usize {
    let mut at = start;
    while at < end && text[at..].starts_with(['&', '!']) {
        let token = text[at..end]
            .find(char::is_whitespace)
            .map_or(end, |i| at + i);
        at = token + (text[token..end].len() - text[token..end].trim_start().len());
    }
    at.min(end)
}

/// A block scalar's bounds: the parser's span is its content (trailing blank lines included),
/// or starts at its properties when it has some; the node starts at its properties and
/// `|`/`>` indicator on its header line, and ends at its last non-blank character.
fn block_scalar_bounds(text: &str, start: usize, end: usize) -> (usize, usize, usize) {
    let content_end = start + text[start..end].trim_end().len();
    // The header line: the one the span starts on when it starts at the properties, else the
    // last line before the content.
    let (header_start, header_end) = if text[start..].starts_with(['&', '!']) {
        let line_end = text[start..].find('\n').map_or(text.len(), |i| start + i);
        (start, line_end)
    } else {
        let header_end = text[..start].trim_end().len();
        (
            text[..header_end].rfind('\n').map_or(0, |i| i + 1),
            header_end,
        )
    };
    let header = &text[header_start..header_end];
    // Drop a trailing comment, then take the tokens from the first property or indicator.
    let code = header.find(" #").map_or(header, |i| &header[..i]);
    let tokens: Vec<(usize, &str)> = code
        .split_whitespace()
        .map(|t| (t.as_ptr() as usize - text.as_ptr() as usize, t))
        .collect();
    let Some(indicator) = tokens.iter().rposition(|(_, t)| t.starts_with(['|', '>'])) else {
        return (start, start, content_end);
    };
    let mut first = indicator;
    while first > 0 && tokens[first - 1].1.starts_with(['&', '!']) {
        first -= 1;
    }
    (tokens[first].0, tokens[indicator].0, content_end)
}
