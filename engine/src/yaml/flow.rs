//! go-yaml v2's reading of `:` and `?` inside flow collections (`[…]`, `{…}`), where it
//! differs from the YAML 1.2 rules saphyr-parser follows.
//!
//! Facts from gopkg.in/yaml.v2 v2.4.0 scannerc.go (`yaml_parser_fetch_next_token`,
//! `yaml_parser_scan_plain_scalar`), checked against that release:
//!
//! * Inside a plain scalar, `:` ends it only when a blank or a line end follows. In a flow
//!   collection YAML 1.2 also ends it before `,` `[` `]` `{` `}`, so `[1.2.3.4, 001:db8::]`
//!   is the string `001:db8::` in go-yaml and the mapping `{001:db8:: null}` in saphyr.
//! * Inside a plain scalar in a flow collection, `?` ends it (and then starts a key), which
//!   always fails: `[http://x/?a=b]` is "did not find expected ',' or ']'".
//! * At the start of a token in a flow collection, `:` is always the value indicator, so a node
//!   cannot start with it: `[::1]`, `[:x]`, `{a: ::}` fail with "did not find expected node
//!   content", where YAML 1.2 reads plain scalars.
//!
//! [`scan`] walks the flow collections saphyr found and tells what to do: nothing, fail as
//! go-yaml does, or read the text again with each such `:` replaced by [`PLACEHOLDER`] (one
//! byte for one, so every position stays) and put back by [`Restore`] into the scalars saphyr
//! then reads whole.

use std::collections::BTreeSet;

/// What stands for a `:` saphyr would take as an indicator. It never starts these scalars (the
/// `:` is inside one), and inside a plain scalar it is an ordinary character.
pub(super) const PLACEHOLDER: u8 = b'`';

/// The outcome of [`scan`].
#[derive(Debug, PartialEq, Eq)]
pub(super) enum FlowFix {
    /// saphyr read the flow collections as go-yaml does.
    Same,
    /// go-yaml fails at this byte offset with this message.
    Fail(usize, &'static str),
    /// Read this text instead (same length); [`Restore`] puts the colons back.
    Reread(String, Restore),
}

/// The offsets of the colons replaced by [`PLACEHOLDER`], to put back into plain scalars.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Restore {
    colons: BTreeSet<usize>,
}

impl Restore {
    /// The value of the plain scalar at `start..end` of the re-read text (whose value saphyr
    /// gave as `text`) with its colons back. Folding a multi-line scalar changes only
    /// whitespace, so the scalar's n-th placeholder in `text` is its n-th in the source.
    pub(super) fn restore(&self, reread: &str, text: String, start: usize, end: usize) -> String {
        if self.colons.range(start..end).next().is_none() {
            return text;
        }
        let Some(slice) = reread.get(start..end) else {
            return text;
        };
        let replaced: Vec<bool> = slice
            .bytes()
            .enumerate()
            .filter(|&(_, b)| b == PLACEHOLDER)
            .map(|(i, _)| self.colons.contains(&(start + i)))
            .collect();
        let mut out = String::with_capacity(text.len());
        let mut nth = 0;
        for c in text.chars() {
            if c == PLACEHOLDER as char {
                out.push(if replaced.get(nth) == Some(&true) {
                    ':'
                } else {
                    c
                });
                nth += 1;
            } else {
                out.push(c);
            }
        }
        out
    }
}

fn is_blank_or_end(b: Option<u8>) -> bool {
    matches!(b, None | Some(b' ' | b'\t' | b'\r' | b'\n'))
}

fn is_flow_indicator(b: u8) -> bool {
    matches!(b, b',' | b'[' | b']' | b'{' | b'}')
}

/// Walks the flow collections at `flows` (byte ranges of the outermost ones, `[` or `{` up to
/// past the matching bracket, in order) with go-yaml v2's rules.
pub(super) fn scan(source: &str, flows: &[(usize, usize)]) -> FlowFix {
    let bytes = source.as_bytes();
    let mut colons = BTreeSet::new();
    for &(start, end) in flows {
        if let Err((at, message)) = scan_one(bytes, start, end.min(bytes.len()), &mut colons) {
            return FlowFix::Fail(at, message);
        }
    }
    if colons.is_empty() {
        return FlowFix::Same;
    }
    let mut text = bytes.to_vec();
    for &at in &colons {
        text[at] = PLACEHOLDER;
    }
    // Only ASCII ':' bytes were replaced by an ASCII byte.
    let text = String::from_utf8(text).expect("ASCII for ASCII keeps UTF-8 valid");
    FlowFix::Reread(text, Restore { colons })
}

/// One outermost flow collection: the colons to replace, or go-yaml's error.
fn scan_one(
    bytes: &[u8],
    start: usize,
    end: usize,
    colons: &mut BTreeSet<usize>,
) -> Result<(), (usize, &'static str)> {
    // The open collections' brackets, innermost last.
    let mut open: Vec<u8> = Vec::new();
    // Whether a node may start here (after `[`, `{`, `,`, `?` or a value `:`).
    let mut node_start = true;
    let mut i = start;
    let at = |i: usize| bytes.get(i).copied().filter(|_| i < end);
    while let Some(b) = at(i) {
        match b {
            b' ' | b'\t' | b'\r' | b'\n' => i += 1,
            b'#' => {
                while at(i).is_some_and(|b| b != b'\n' && b != b'\r') {
                    i += 1;
                }
            }
            b'[' | b'{' => {
                open.push(b);
                node_start = true;
                i += 1;
            }
            b']' | b'}' => {
                open.pop();
                node_start = false;
                i += 1;
                if open.is_empty() {
                    return Ok(());
                }
            }
            b',' | b'?' => {
                node_start = true;
                i += 1;
            }
            b':' => {
                if node_start {
                    return Err((i, "did not find expected node content"));
                }
                node_start = true;
                i += 1;
            }
            b'"' => {
                i += 1;
                while let Some(b) = at(i) {
                    i += if b == b'\\' { 2 } else { 1 };
                    if b == b'"' {
                        break;
                    }
                }
                node_start = false;
            }
            b'\'' => {
                i += 1;
                while let Some(b) = at(i) {
                    i += 1;
                    if b == b'\'' {
                        if at(i) == Some(b'\'') {
                            i += 1;
                        } else {
                            break;
                        }
                    }
                }
                node_start = false;
            }
            b'&' | b'!' | b'*' => {
                // An anchor or a tag comes before its node; an alias is the node.
                while at(i).is_some_and(|b| !is_blank_or_end(Some(b)) && !is_flow_indicator(b)) {
                    i += 1;
                }
                node_start = b != b'*';
            }
            _ => {
                i = plain_scalar(bytes, i, end, &open, colons)?;
                node_start = false;
            }
        }
    }
    Ok(())
}

/// Scans the plain scalar at `i` as go-yaml does in a flow collection and returns where it
/// ends, noting each `:` it keeps that YAML 1.2 would end it at.
fn plain_scalar(
    bytes: &[u8],
    mut i: usize,
    end: usize,
    open: &[u8],
    colons: &mut BTreeSet<usize>,
) -> Result<usize, (usize, &'static str)> {
    let at = |i: usize| bytes.get(i).copied().filter(|_| i < end);
    let first = i;
    loop {
        // Non-blank characters.
        while let Some(b) = at(i) {
            if is_blank_or_end(Some(b)) {
                break;
            }
            if b == b':' {
                let next = at(i + 1);
                if is_blank_or_end(next) {
                    return Ok(i);
                }
                if next.is_some_and(is_flow_indicator) {
                    colons.insert(i);
                }
            } else if is_flow_indicator(b) {
                return Ok(i);
            } else if b == b'?' && i > first {
                return Err((i, key_error(open)));
            }
            i += 1;
        }
        // Blanks and line breaks: the scalar goes on unless a comment, an indicator that
        // ends it, or the collection's end comes next.
        let mut j = i;
        while at(j).is_some_and(|b| is_blank_or_end(Some(b))) {
            j += 1;
        }
        match at(j) {
            None | Some(b'#') => return Ok(i),
            // A key indicator after the scalar: go-yaml wants a `,` first.
            Some(b'?') => return Err((j, key_error(open))),
            Some(b) if is_flow_indicator(b) => return Ok(i),
            Some(b':') if is_blank_or_end(at(j + 1)) => return Ok(i),
            Some(_) => i = j,
        }
    }
}

/// go-yaml's error for a `?` (a key) where the collection wants `,` or its end.
fn key_error(open: &[u8]) -> &'static str {
    if open.last() == Some(&b'{') {
        "did not find expected ',' or '}'"
    } else {
        "did not find expected ',' or ']'"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whole(source: &str) -> FlowFix {
        let start = source.find(['[', '{']).unwrap();
        scan(source, &[(start, source.len())])
    }

    #[test]
    fn colons_before_flow_indicators_are_kept() {
        let FlowFix::Reread(text, restore) = whole("a: [1.2.3.4, 001:db8::]") else {
            panic!("no reread")
        };
        assert_eq!(text, "a: [1.2.3.4, 001:db8:`]");
        assert_eq!(
            restore.restore(&text, "001:db8:`".into(), 13, 22),
            "001:db8::"
        );
        // A backtick of the source stays.
        let FlowFix::Reread(text, restore) = whole("[a`b:, c]") else {
            panic!("no reread")
        };
        assert_eq!(restore.restore(&text, "a`b`".into(), 1, 5), "a`b:");
    }

    #[test]
    fn what_needs_nothing_or_fails() {
        assert_eq!(
            whole("[a:b, c, 'x:]', \"y:]\", http://h:80/p]"),
            FlowFix::Same
        );
        assert_eq!(whole("{a: b, c: d # e:]\n}"), FlowFix::Same);
        assert_eq!(
            whole("[::1]"),
            FlowFix::Fail(1, "did not find expected node content")
        );
        assert_eq!(
            whole("{a: :x}"),
            FlowFix::Fail(4, "did not find expected node content")
        );
        assert_eq!(
            whole("[http://x/?a=b]"),
            FlowFix::Fail(10, "did not find expected ',' or ']'")
        );
        assert_eq!(
            whole("{u: a?b}"),
            FlowFix::Fail(5, "did not find expected ',' or '}'")
        );
        // `{"a":x}`: after a quoted key `:` is the value indicator.
        assert_eq!(whole("{\"a\":x}"), FlowFix::Same);
    }
}
