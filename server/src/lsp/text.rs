//! Text positions: byte offsets ↔ LSP positions (UTF-16 code units, or UTF-8 bytes when the
//! client offers them at `initialize`), and incremental edits. Every position the server sends
//! or reads goes through [`LineIndex`].

use std::sync::atomic::{AtomicBool, Ordering};

use tower_lsp_server::ls_types::{
    Position, PositionEncodingKind, Range, TextDocumentContentChangeEvent,
};

/// Whether positions count UTF-8 bytes (else UTF-16 code units, the protocol's default). A
/// server process serves one client, which negotiates this once, at `initialize`; a process
/// value spares every conversion site from carrying it.
static UTF8_POSITIONS: AtomicBool = AtomicBool::new(false);

/// Picks the position encoding from what the client offers (`general.positionEncodings`):
/// UTF-8 when offered, else UTF-16. Returns the choice, for the `initialize` answer.
pub fn negotiate_encoding(offered: Option<&[PositionEncodingKind]>) -> PositionEncodingKind {
    let utf8 = offered.is_some_and(|kinds| kinds.contains(&PositionEncodingKind::UTF8));
    UTF8_POSITIONS.store(utf8, Ordering::SeqCst);
    if utf8 {
        PositionEncodingKind::UTF8
    } else {
        PositionEncodingKind::UTF16
    }
}

/// The length of a character in position units.
fn char_units(ch: char, utf8: bool) -> usize {
    if utf8 { ch.len_utf8() } else { ch.len_utf16() }
}

/// Line starts of a text, for converting between byte offsets and LSP positions.
#[derive(Debug, Clone)]
pub struct LineIndex {
    /// Byte offset of the start of every line (the first is 0).
    starts: Vec<usize>,
    /// Positions count UTF-8 bytes, not UTF-16 code units.
    utf8: bool,
}

impl LineIndex {
    /// The index of `text` in the negotiated encoding.
    pub fn new(text: &str) -> LineIndex {
        LineIndex::with_encoding(text, UTF8_POSITIONS.load(Ordering::Relaxed))
    }

    fn with_encoding(text: &str, utf8: bool) -> LineIndex {
        let mut starts = vec![0];
        starts.extend(
            text.bytes()
                .enumerate()
                .filter(|(_, b)| *b == b'\n')
                .map(|(i, _)| i + 1),
        );
        LineIndex { starts, utf8 }
    }

    /// Byte offset where 0-based `line` starts (the end of the text past the last line).
    pub fn line_start(&self, line: usize, text: &str) -> usize {
        self.starts.get(line).copied().unwrap_or(text.len())
    }

    /// The LSP position of a byte offset (clamped to the text, snapped to a char boundary).
    pub fn position(&self, text: &str, offset: usize) -> Position {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.starts.partition_point(|&start| start <= offset) - 1;
        let start = self.starts[line];
        let character: usize = text[start..offset]
            .chars()
            .map(|ch| char_units(ch, self.utf8))
            .sum();
        Position::new(line as u32, character as u32)
    }

    /// The byte offset of an LSP position (clamped to the line's end and the text).
    pub fn offset(&self, text: &str, position: Position) -> usize {
        let line = position.line as usize;
        let Some(&start) = self.starts.get(line) else {
            return text.len();
        };
        let end = self
            .starts
            .get(line + 1)
            .map_or(text.len(), |next| next - 1);
        let mut units = 0usize;
        for (i, ch) in text[start..end].char_indices() {
            if units >= position.character as usize {
                return start + i;
            }
            units += char_units(ch, self.utf8);
        }
        end
    }

    pub fn range(&self, text: &str, bytes: std::ops::Range<usize>) -> Range {
        Range::new(
            self.position(text, bytes.start),
            self.position(text, bytes.end),
        )
    }
}

/// The length of `text` in the negotiated position units, e.g. for offsets
/// into a signature label.
pub fn units(text: &str) -> u32 {
    let utf8 = UTF8_POSITIONS.load(Ordering::Relaxed);
    text.chars().map(|ch| char_units(ch, utf8)).sum::<usize>() as u32
}

/// Applies LSP content changes (ranged or full) to `text` in order.
pub fn apply_changes(text: &mut String, changes: Vec<TextDocumentContentChangeEvent>) {
    for change in changes {
        match change.range {
            None => *text = change.text,
            Some(range) => {
                let index = LineIndex::new(text);
                let start = index.offset(text, range.start);
                let end = index.offset(text, range.end).max(start);
                text.replace_range(start..end, &change.text);
            }
        }
    }
}

/// A whole-line range for a 1-based line number (LSP lines are 0-based).
pub fn line_range(text: &str, index: &LineIndex, line_1based: u32) -> Range {
    let line = (line_1based.max(1) - 1) as usize;
    let start = index.line_start(line, text);
    let end = index
        .line_start(line + 1, text)
        .saturating_sub(1)
        .max(start)
        .min(text.len());
    // Skip the indentation, so the squiggle sits under the code.
    let indent = text[start..end]
        .bytes()
        .take_while(|b| *b == b' ' || *b == b'\t')
        .count();
    index.range(text, start + indent..end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_utf16_units() {
        let text = "a\nhé😀x\n";
        let index = LineIndex::new(text);
        let x = text.find('x').unwrap();
        assert_eq!(index.position(text, x), Position::new(1, 4));
        assert_eq!(index.offset(text, Position::new(1, 4)), x);
        // Past the end of a line clamps to the line's end.
        assert_eq!(index.offset(text, Position::new(0, 99)), 1);
        assert_eq!(index.offset(text, Position::new(9, 0)), text.len());
    }

    #[test]
    fn positions_count_utf8_bytes_when_negotiated() {
        let text = "a\nhé😀x\n";
        let index = LineIndex::with_encoding(text, true);
        let x = text.find('x').unwrap();
        assert_eq!(index.position(text, x), Position::new(1, 7));
        assert_eq!(index.offset(text, Position::new(1, 7)), x);
        // Inside a character: the offset moves on to the next one.
        assert_eq!(
            index.offset(text, Position::new(1, 2)),
            text.find('😀').unwrap()
        );
    }

    #[test]
    fn incremental_changes_apply_in_order() {
        let mut text = String::from("local a = 1\nreturn a\n");
        apply_changes(
            &mut text,
            vec![
                TextDocumentContentChangeEvent {
                    range: Some(Range::new(Position::new(0, 10), Position::new(0, 11))),
                    range_length: None,
                    text: "42".into(),
                },
                TextDocumentContentChangeEvent {
                    range: Some(Range::new(Position::new(1, 0), Position::new(1, 0))),
                    range_length: None,
                    text: "print(a)\n".into(),
                },
            ],
        );
        assert_eq!(text, "local a = 42\nprint(a)\nreturn a\n");
    }

    #[test]
    fn line_range_skips_indentation() {
        let text = "a\n    return x\n";
        let index = LineIndex::new(text);
        let range = line_range(text, &index, 2);
        assert_eq!(range, Range::new(Position::new(1, 4), Position::new(1, 12)));
    }
}
