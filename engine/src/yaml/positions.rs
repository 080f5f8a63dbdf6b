//! Source positions of the YAML reader: the parser's markers (which count chars) turned into
//! lines, columns and byte offsets.

use saphyr_parser::Marker;

use super::Pos;

/// Turns the parser's markers (which count chars) into byte offsets. Only every
/// [`CHARS_PER_CHECKPOINT`]th char's offset is stored (an index per char cost 8 bytes per
/// byte of input: 160 MB for a 20 MB case); a lookup walks at most that many chars from the
/// checkpoint before it. ASCII text needs no table at all.
pub(super) struct Positions<'a> {
    source: &'a str,
    chars: usize,
    /// The text's last line (YAML breaks lines at `\n`, `\r\n` and a lone `\r`): the parser
    /// can put an error at the end of the text on the line after it.
    last_line: u32,
    /// `None` when every char is one byte.
    checkpoints: Option<Vec<usize>>,
    /// The last char index looked up and its byte offset: the parser's markers come mostly in
    /// order, a few chars apart, so the walk goes on from there rather than from a checkpoint.
    last: std::cell::Cell<(usize, usize)>,
}

const CHARS_PER_CHECKPOINT: usize = 64;

/// How many line breaks `bytes` holds (`\n`, `\r\n` and a lone `\r`, as the parser counts
/// them). Most texts have no `\r`: counting `\n` alone is a plain byte count.
pub(super) fn line_breaks(bytes: &[u8]) -> usize {
    // Counted a block at a time into a byte (at most 64 per block), which the compiler turns
    // into vector compares: a filter over the bytes cost several instructions a byte, and
    // looking for `\r` another pass.
    const BLOCK: usize = 64;
    let mut blocks = bytes.chunks_exact(BLOCK);
    let (mut newlines, mut returns) = (0usize, false);
    for block in &mut blocks {
        newlines += usize::from(block.iter().map(|b| u8::from(*b == b'\n')).sum::<u8>());
        returns |= block.iter().fold(false, |seen, b| seen | (*b == b'\r'));
    }
    let rest = blocks.remainder();
    newlines += rest.iter().filter(|b| **b == b'\n').count();
    if !returns && !rest.contains(&b'\r') {
        return newlines;
    }
    let lone_returns = bytes
        .iter()
        .enumerate()
        .filter(|(i, b)| **b == b'\r' && bytes.get(i + 1) != Some(&b'\n'))
        .count();
    newlines + lone_returns
}

impl<'a> Positions<'a> {
    pub(super) fn new(source: &'a str) -> Self {
        let last_line = u32::try_from(line_breaks(source.as_bytes()) + 1).unwrap_or(u32::MAX);
        if source.is_ascii() {
            return Positions {
                source,
                chars: source.len(),
                last_line,
                checkpoints: None,
                last: Default::default(),
            };
        }
        // A stretch of ASCII between two checkpoints (most of a text with a few non-ASCII
        // chars) is skipped at once; only stretches holding others are walked char by char.
        let bytes = source.as_bytes();
        let mut checkpoints = Vec::with_capacity(source.len() / CHARS_PER_CHECKPOINT + 1);
        let (mut byte, mut chars) = (0, 0);
        while byte < bytes.len() {
            checkpoints.push(byte);
            let ascii_end = (byte + CHARS_PER_CHECKPOINT).min(bytes.len());
            if bytes[byte..ascii_end].is_ascii() {
                chars += ascii_end - byte;
                byte = ascii_end;
                continue;
            }
            let mut stretch = source[byte..].char_indices().skip(1);
            let taken = (&mut stretch).take(CHARS_PER_CHECKPOINT - 1).count();
            chars += taken + 1;
            byte = stretch.next().map_or(bytes.len(), |(next, _)| byte + next);
        }
        Positions {
            source,
            chars,
            last_line,
            checkpoints: Some(checkpoints),
            last: Default::default(),
        }
    }

    /// The byte offset of char `index` (the end of the text past the last char).
    pub(super) fn byte_offset(&self, index: usize) -> usize {
        let index = index.min(self.chars);
        let Some(checkpoints) = &self.checkpoints else {
            return index;
        };
        if index == self.chars {
            return self.source.len();
        }
        let checkpoint = index / CHARS_PER_CHECKPOINT;
        let (mut from_char, mut from_byte) =
            (checkpoint * CHARS_PER_CHECKPOINT, checkpoints[checkpoint]);
        let (last_char, last_byte) = self.last.get();
        if (from_char..=index).contains(&last_char) {
            (from_char, from_byte) = (last_char, last_byte);
        }
        let offset = self.source[from_byte..]
            .char_indices()
            .nth(index - from_char)
            .map_or(self.source.len(), |(b, _)| from_byte + b);
        self.last.set((index, offset));
        offset
    }

    pub(super) fn pos(&self, m: &Marker) -> Pos {
        Pos {
            line: (m.line() as u32).min(self.last_line),
            column: m.col() as u32 + 1,
            offset: self.byte_offset(m.index()),
        }
    }

    /// The position of a byte offset (at a char boundary), counting lines as the parser does.
    pub(super) fn pos_at_offset(&self, offset: usize) -> Pos {
        let before = self.source.get(..offset).unwrap_or(self.source);
        let breaks = line_breaks(before.as_bytes());
        let line_start = before.rfind(['\n', '\r']).map_or(0, |i| i + 1);
        Pos {
            line: u32::try_from(breaks + 1).unwrap_or(u32::MAX),
            column: u32::try_from(before[line_start..].chars().count() + 1).unwrap_or(u32::MAX),
            offset: before.len(),
        }
    }
}
