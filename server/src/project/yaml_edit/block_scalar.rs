//! A block scalar (`|`, `>`) rewritten in place to hold a new value in its own style: header
//! line (properties, indicators, comment) and content indentation kept, only the content lines
//! and, with keep chomping, the trailing empty lines written anew. The rules are YAML 1.2's
//! (§8.1.1): an indentation indicator gives the content's indentation relative to the parent
//! node's; strip chomping (`-`) reads no final line break, clip one, keep (`+`) every one.

use std::ops::Range;

use kruise_lua_engine::value::JsonValue;
use kruise_lua_engine::yaml::parse_first_document;

/// Where a block scalar is written in the text.
pub(super) struct Site<'a> {
    pub text: &'a str,
    /// The file's line ending.
    pub eol: &'a str,
    /// The `|` or `>` on the header line.
    pub indicator: usize,
    /// The end of the last non-blank character of the content.
    pub end: usize,
    /// The parent node's indentation (the column of its mapping's keys or of its `-`), which an
    /// indentation indicator counts from; None when not known.
    pub parent: Option<usize>,
}

/// The chomping indicator: what happens to the final line breaks.
#[derive(Clone, Copy, PartialEq)]
enum Chomping {
    /// `-`: none is read.
    Strip,
    /// No indicator: one is read.
    Clip,
    /// `+`: every one is read.
    Keep,
}

/// The indicators of a header (`|`, `>-`, `|2+`, `>+1`); None for anything else.
fn indicators(token: &str) -> Option<(bool, Chomping, Option<usize>)> {
    let mut chars = token.chars();
    let folded = match chars.next()? {
        '|' => false,
        '>' => true,
        _ => return None,
    };
    let (mut chomping, mut indent) = (None, None);
    for c in chars {
        match c {
            '-' | '+' if chomping.is_none() => {
                chomping = Some(if c == '-' {
                    Chomping::Strip
                } else {
                    Chomping::Keep
                })
            }
            '1'..='9' if indent.is_none() => indent = Some(c as usize - '0' as usize),
            _ => return None,
        }
    }
    Some((folded, chomping.unwrap_or(Chomping::Clip), indent))
}

/// The edits writing `value` into the block scalar at `site` (whose value is `old`): its
/// content lines (and, when the count must change or they hold more than blanks, the empty
/// lines after them), and an indentation indicator added to the header when the value's first
/// line starts with a space and the header has none. None when the style cannot hold the
/// value (the caller then quotes it): a final line-break count the chomping would not read, an
/// empty value, characters a block scalar cannot hold, lines that do not read back as the
/// value on their own, or an indentation the parent's cannot be told from.
pub(super) fn rewrite(site: &Site, old: &str, value: &str) -> Option<Vec<(Range<usize>, String)>> {
    let text = site.text;
    let header_end = line_end(text, site.indicator);
    let token = text[site.indicator..header_end].split_whitespace().next()?;
    let (folded, chomping, explicit) = indicators(token)?;
    let first_line = text[header_end..].find('\n')? + header_end + 1;
    if site.end <= first_line {
        return None;
    }
    let last_end = line_end(text, site.end);
    let leading = |line: &str| line.len() - line.trim_start_matches(' ').len();
    let first_text = text[first_line..last_end]
        .split('\n')
        .find(|line| !line.trim().is_empty())?;
    let column = match explicit {
        Some(n) => {
            // The indentation counted from the parent's must be the one the old value was
            // read with: its first line with text starts as many columns further in as that
            // line has leading spaces.
            let column = site.parent? + n;
            let old_first = old.split('\n').find(|line| !line.trim().is_empty())?;
            if leading(first_text) != column + leading(old_first) {
                return None;
            }
            column
        }
        None => leading(first_text),
    };

    let breaks = value.len() - value.trim_end_matches('\n').len();
    let body = &value[..value.len() - breaks];
    if body.is_empty()
        || body
            .chars()
            .any(|c| (c.is_control() && c != '\n' && c != '\t') || c == '\u{feff}')
    {
        return None;
    }
    // A first line with text that starts with a space would be read as the indentation: it
    // needs an indentation indicator, added when the header has none.
    let mut header_edit = None;
    let indent = match explicit {
        Some(n) => Some(n),
        None if body
            .split('\n')
            .find(|line| !line.is_empty())
            .is_some_and(|line| line.starts_with(' ')) =>
        {
            let n = column.checked_sub(site.parent?)?;
            if !(1..=9).contains(&n) {
                return None;
            }
            let with = format!("{}{n}{}", &token[..1], &token[1..]);
            header_edit = Some((site.indicator..site.indicator + token.len(), with));
            Some(n)
        }
        None => None,
    };

    // The lines after the content's last one that hold nothing but spaces, up to the next
    // line with text (which ends the scalar) or the end of the file.
    let mut tail_end = last_end;
    let mut clean = true;
    for (i, line) in text[last_end..].split_inclusive('\n').enumerate() {
        let content = line.trim_end_matches('\n').trim_end_matches('\r');
        if i > 0 && !content.trim().is_empty() {
            break;
        }
        clean &= content.len() <= column && content.bytes().all(|b| b == b' ');
        clean &= i == 0 || line.ends_with('\n') || content.is_empty();
        tail_end += line.len();
    }
    let at_end = tail_end == text.len();
    let breaks_now = text[last_end..tail_end].matches('\n').count();
    // Clip and strip need the line break ending the last line, and say nothing of the empty
    // lines after it (they stay); keep reads them all: the value's final breaks.
    let wanted = match chomping {
        Chomping::Strip | Chomping::Clip if breaks_now == 0 => return None,
        Chomping::Strip if breaks != 0 => return None,
        Chomping::Clip if breaks != 1 => return None,
        Chomping::Strip | Chomping::Clip => breaks_now,
        Chomping::Keep if breaks == 0 && !at_end => return None,
        Chomping::Keep => breaks,
    };

    let lines = if folded {
        folded_lines(body)
    } else {
        body.split('\n').collect()
    };
    // Read back on its own, under `k:` at column 0 (so an indentation indicator counts from
    // 0), followed as in the file: the style holds the value only if these lines give it.
    let pad = " ".repeat(indent.unwrap_or(2));
    let header = header_edit
        .as_ref()
        .map_or(token, |(_, with)| with.as_str());
    let mut alone = format!("k: {header}\n");
    alone.push_str(&indented(&lines, &pad, "\n"));
    alone.push_str(&"\n".repeat(wanted));
    if !at_end {
        alone.push_str("z: 0\n");
    }
    let read = parse_first_document(&alone).ok()??.get("k")?.to_json();
    if !matches!(&read, JsonValue::String(s) if s == value) {
        return None;
    }

    let written = indented(&lines, &" ".repeat(column), site.eol);
    let body_edit = if clean && wanted == breaks_now {
        (first_line..last_end, written)
    } else {
        (
            first_line..tail_end,
            format!("{written}{}", site.eol.repeat(wanted)),
        )
    };
    Some(header_edit.into_iter().chain([body_edit]).collect())
}

/// `lines` joined by `eol`, each with `pad` before it unless empty.
fn indented(lines: &[&str], pad: &str, eol: &str) -> String {
    lines
        .iter()
        .map(|line| {
            if line.is_empty() {
                String::new()
            } else {
                format!("{pad}{line}")
            }
        })
        .collect::<Vec<_>>()
        .join(eol)
}

/// The end of `at`'s line, before its line break (a CRLF's `\r` included in the break).
pub(super) fn line_end(text: &str, at: usize) -> usize {
    let end = text[at..].find('\n').map_or(text.len(), |i| at + i);
    if end > at && text[..end].ends_with('\r') {
        end - 1
    } else {
        end
    }
}

/// The lines of a folded (`>`) block scalar that read back as `body` (no final line break):
/// a line break between two lines is written as an empty line, since a single one folds into
/// a space. (Lines starting with a space are not folded at all; the read-back check in
/// [`rewrite`] refuses what this does not write right.)
fn folded_lines(body: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut previous_text = false;
    for segment in body.split('\n') {
        if previous_text {
            lines.push("");
        }
        lines.push(segment);
        previous_text = !segment.is_empty();
    }
    lines
}
