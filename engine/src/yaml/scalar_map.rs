//! Where each byte of a YAML scalar's value comes from in the source text, for every scalar
//! style (plain, single- and double-quoted, literal and folded block): value offsets to source
//! offsets and back, and a replacement written in the scalar's own style.
//!
//! A ConfigMap's embedded script needs it: a double-quoted script puts many script lines on one
//! manifest line (`\n` escapes), a folded or plain one several manifest lines on one script
//! line, and an escape (`\"`, `\u00e9`) is longer in the manifest than in the script. The
//! scanner repeats saphyr-parser's rules (libyaml's) for each style, and [`ScalarMap::read`]
//! checks what it decoded against the parser's value: when they differ the map is
//! [opaque](ScalarMap::is_exact), placing everything at the scalar's start and writing nothing,
//! so a map never points at bytes the value does not come from.

use std::ops::Range;

/// How a scalar is written: the parser's own style.
pub use saphyr_parser::ScalarStyle;

/// A run of the value and the source bytes it comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Piece {
    /// Where the run starts in the value (it ends where the next one starts).
    value: usize,
    /// The source bytes that make it.
    source: Range<usize>,
    /// The source bytes are the value's bytes. Otherwise (an escape, a folded line break, a
    /// break written `\r\n`) the whole run stands for the whole source range.
    verbatim: bool,
}

/// The source of one scalar's value, run by run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScalarMap {
    style: ScalarStyle,
    /// In value order, covering the value without gaps; their source ranges ascend, with gaps
    /// where source bytes make nothing (indentation, an escaped line break).
    pieces: Vec<Piece>,
    /// The value's length in bytes.
    len: usize,
    /// The source bytes of the content: inside the quotes; a block scalar's lines after its
    /// header; a plain scalar's text.
    content: Range<usize>,
    /// A block scalar's content indentation in spaces (what a written line break needs).
    indent: usize,
    /// The pieces were checked against the parser's value (else one opaque piece).
    exact: bool,
}

impl ScalarMap {
    /// Reads the scalar that is the value of a block mapping entry. `after_key` is the source
    /// offset just past the key, `parent_indent` the mapping's indentation (0-based column),
    /// `span` the parser's span of the value (a plain scalar ends where it says), `value` the
    /// parser's value. When the text does not decode to `value` (a `!!binary` tag, a shape
    /// this scanner does not know), the map is opaque at the span's start.
    pub fn read(
        source: &str,
        after_key: usize,
        parent_indent: usize,
        span: Range<usize>,
        value: &str,
    ) -> ScalarMap {
        scan(source, after_key, parent_indent, span.end)
            .filter(|(out, ..)| out.text == value)
            .map(|(out, style, content, indent)| ScalarMap {
                style,
                pieces: out.pieces,
                len: value.len(),
                content,
                indent,
                exact: true,
            })
            .unwrap_or_else(|| ScalarMap::opaque(value.len(), span.start.min(source.len())))
    }

    /// A map that puts the whole value of `len` bytes at `at` and maps no source offset
    /// back (a value the scanner cannot read, or one made up without a source).
    pub fn opaque(len: usize, at: usize) -> ScalarMap {
        ScalarMap {
            style: ScalarStyle::Plain,
            pieces: vec![Piece {
                value: 0,
                source: at..at,
                verbatim: false,
            }],
            len,
            content: at..at,
            indent: 0,
            exact: false,
        }
    }

    pub fn style(&self) -> ScalarStyle {
        self.style
    }

    /// Whether every value byte is placed where it comes from (else edits are refused).
    pub fn is_exact(&self) -> bool {
        self.exact
    }

    /// The source bytes of the content (inside the quotes, a block scalar's lines).
    pub fn content(&self) -> Range<usize> {
        self.content.clone()
    }

    /// The index of the piece holding value offset `offset` (< `len`).
    fn piece_at(&self, offset: usize) -> usize {
        self.pieces.partition_point(|p| p.value <= offset) - 1
    }

    /// Where a piece ends in the value.
    fn value_end(&self, index: usize) -> usize {
        self.pieces.get(index + 1).map_or(self.len, |p| p.value)
    }

    /// The source offset of value offset `offset`: a verbatim byte's own place, else the start
    /// of what makes it (an escape's backslash, the end of a line folded into a space). The
    /// value's end maps to the end of its last run.
    pub fn to_source(&self, offset: usize) -> usize {
        if offset >= self.len {
            return self
                .pieces
                .last()
                .map_or(self.content.start, |p| p.source.end);
        }
        let piece = &self.pieces[self.piece_at(offset)];
        if piece.verbatim {
            piece.source.start + (offset - piece.value)
        } else {
            piece.source.start
        }
    }

    /// The value offset of source offset `offset`, when it lies in the content (its end
    /// included): a byte of an escape or a fold maps to where its run starts, indentation and
    /// other bytes that make nothing to the next run.
    pub fn to_value(&self, offset: usize) -> Option<usize> {
        if !self.exact || offset < self.content.start || offset > self.content.end {
            return None;
        }
        let after = self.pieces.partition_point(|p| p.source.start <= offset);
        if let Some(piece) = after.checked_sub(1).map(|i| &self.pieces[i])
            && offset < piece.source.end
        {
            return Some(if piece.verbatim {
                piece.value + (offset - piece.source.start)
            } else {
                piece.value
            });
        }
        Some(self.pieces.get(after).map_or(self.len, |p| p.value))
    }

    /// The source offset where value range starting at `offset` starts, when `offset` is not
    /// inside an escape or fold.
    fn start_boundary(&self, offset: usize) -> Option<usize> {
        if offset >= self.len {
            return Some(self.to_source(self.len));
        }
        let piece = &self.pieces[self.piece_at(offset)];
        (piece.verbatim || offset == piece.value).then(|| self.to_source(offset))
    }

    /// The source offset where a value range ending at `offset` ends (the end of the run
    /// before it, not past the indentation that follows), when not inside an escape or fold.
    fn end_boundary(&self, offset: usize) -> Option<usize> {
        if offset == 0 {
            return Some(
                self.pieces
                    .first()
                    .map_or(self.content.start, |p| p.source.start),
            );
        }
        let index = self.piece_at(offset - 1);
        let piece = &self.pieces[index];
        if piece.verbatim {
            Some(piece.source.start + (offset - piece.value))
        } else {
            (offset == self.value_end(index)).then_some(piece.source.end)
        }
    }

    /// The source range that spells value range `range`, and `replacement` written in this
    /// scalar's style (escaped in a double-quoted one, `'` doubled in a single-quoted one, a
    /// line break indented in a literal block), or why it cannot be written there. The
    /// caller still has to check that the edited text reads back as intended (folding rules
    /// at a line's ends depend on the neighbours).
    pub fn source_edit(
        &self,
        range: Range<usize>,
        replacement: &str,
    ) -> Result<(Range<usize>, String), String> {
        if !self.exact {
            return Err("kruise-lua could not place this YAML string's text in the file".into());
        }
        if range.start > range.end || range.end > self.len {
            return Err("the edit lies outside the script".into());
        }
        let inside = "the edit starts or ends inside an escape sequence or a folded line break";
        let start = self.start_boundary(range.start).ok_or(inside)?;
        let end = if range.is_empty() {
            start
        } else {
            self.end_boundary(range.end).ok_or(inside)?
        };
        if start > end {
            return Err(inside.into());
        }
        Ok((start..end, self.encode(replacement)?))
    }

    /// `text` as this scalar's style writes it on the spot.
    fn encode(&self, text: &str) -> Result<String, String> {
        let breaks = text.contains(['\n', '\r']);
        let refuse = |style: &str| {
            Err(format!(
                "a line break cannot be written into a {style} YAML string without changing its folding"
            ))
        };
        match self.style {
            ScalarStyle::DoubleQuoted => Ok(double_quoted(text)),
            ScalarStyle::SingleQuoted if breaks => refuse("single-quoted"),
            ScalarStyle::SingleQuoted => Ok(text.replace('\'', "''")),
            ScalarStyle::Plain if breaks => refuse("plain"),
            ScalarStyle::Folded if breaks => refuse("folded (`>`)"),
            ScalarStyle::Plain | ScalarStyle::Folded => Ok(text.to_string()),
            ScalarStyle::Literal if text.contains('\r') => {
                Err("a carriage return cannot be written into a literal (`|`) YAML block".into())
            }
            ScalarStyle::Literal => {
                let indent = " ".repeat(self.indent);
                let mut out = String::with_capacity(text.len());
                let mut chars = text.chars().peekable();
                while let Some(c) = chars.next() {
                    out.push(c);
                    // An empty line needs no indentation (it would be trailing blanks).
                    if c == '\n' && chars.peek() != Some(&'\n') {
                        out.push_str(&indent);
                    }
                }
                Ok(out)
            }
        }
    }
}

/// `text` inside a double-quoted YAML string: `"` and `\` escaped, line breaks, tabs and
/// other control characters (and the Unicode line breaks YAML 1.1 knows) as escapes.
fn double_quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{85}' => out.push_str("\\N"),
            '\u{2028}' => out.push_str("\\L"),
            '\u{2029}' => out.push_str("\\P"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f || c == '\u{feff}' => {
                out.push_str(&format!("\\u{:04X}", c as u32))
            }
            c => out.push(c),
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// The scanner.

/// What a scan decoded so far.
#[derive(Default)]
struct Out {
    pieces: Vec<Piece>,
    text: String,
}

impl Out {
    /// Source bytes that are value bytes.
    fn verbatim(&mut self, source: &str, range: Range<usize>) {
        if range.is_empty() {
            return;
        }
        match self.pieces.last_mut() {
            Some(last) if last.verbatim && last.source.end == range.start => {
                last.source.end = range.end
            }
            _ => self.pieces.push(Piece {
                value: self.text.len(),
                source: range.clone(),
                verbatim: true,
            }),
        }
        self.text.push_str(&source[range]);
    }

    /// Source bytes that make `text` (verbatim when they spell it).
    fn decoded(&mut self, source: &str, text: &str, range: Range<usize>) {
        if text.is_empty() {
            return;
        }
        if source.get(range.clone()) == Some(text) {
            return self.verbatim(source, range);
        }
        self.pieces.push(Piece {
            value: self.text.len(),
            source: range,
            verbatim: false,
        });
        self.text.push_str(text);
    }
}

/// The length of the line break at `i` (`\r\n`, `\n` or `\r`), 0 if none.
fn line_break(b: &[u8], i: usize) -> usize {
    match (b.get(i), b.get(i + 1)) {
        (Some(b'\r'), Some(b'\n')) => 2,
        (Some(b'\n' | b'\r'), _) => 1,
        _ => 0,
    }
}

fn blank(b: &[u8], i: usize) -> bool {
    matches!(b.get(i), Some(b' ' | b'\t'))
}

/// The length of the UTF-8 character at `i`.
fn char_len(source: &str, i: usize) -> usize {
    source[i..].chars().next().map_or(1, char::len_utf8)
}

/// The decoded value, the style, the content's source range and a block's indentation.
type Scan = (Out, ScalarStyle, Range<usize>, usize);

fn scan(source: &str, after_key: usize, parent_indent: usize, end: usize) -> Option<Scan> {
    let b = source.as_bytes();
    let mut i = after_key;
    // Past a quoted key's closing quote (where a span may end) and blanks to the `:`.
    while matches!(b.get(i), Some(b'"' | b'\'' | b' ' | b'\t')) {
        i += 1;
    }
    if b.get(i) != Some(&b':') {
        return None;
    }
    i += 1;
    // Past blanks, comments, line breaks, tags and anchors to the scalar itself.
    loop {
        while blank(b, i) {
            i += 1;
        }
        if b.get(i) == Some(&b'#') {
            while i < b.len() && line_break(b, i) == 0 {
                i += 1;
            }
        }
        let n = line_break(b, i);
        if n > 0 {
            i += n;
            continue;
        }
        if matches!(b.get(i), Some(b'!' | b'&')) {
            while i < b.len() && !blank(b, i) && line_break(b, i) == 0 {
                i += 1;
            }
            continue;
        }
        break;
    }
    match b.get(i)? {
        b'"' => flow(source, i, true),
        b'\'' => flow(source, i, false),
        b'|' | b'>' => block(source, i, parent_indent),
        _ => plain(source, i, end.min(b.len())),
    }
}

/// Blanks and line breaks inside a flow scalar (quoted or plain), joined as YAML folds them:
/// blanks before a line break and the next line's indentation are dropped; one line break
/// becomes a space, each further (empty) line a line feed; after an escaped line break only
/// the empty lines count. `i` is at the first blank or break; returns where they end.
fn fold(out: &mut Out, source: &str, mut i: usize, limit: usize, escaped_break: bool) -> usize {
    let b = source.as_bytes();
    let start = i;
    let mut broke = escaped_break;
    // Where each line after a consumed break starts.
    let mut line_starts = Vec::new();
    while i < limit && (blank(b, i) || line_break(b, i) > 0) {
        if blank(b, i) {
            i += 1;
        } else {
            i += line_break(b, i);
            broke = true;
            line_starts.push(i);
        }
    }
    if !broke {
        out.verbatim(source, start..i);
        return i;
    }
    if escaped_break {
        // Empty line `m` starts at `start` (m = 0) or after the m-th break; its break is a
        // line feed.
        let k = line_starts.len();
        for j in 0..k {
            let from = if j == 0 { start } else { line_starts[j - 1] };
            let to = if j + 1 == k { i } else { line_starts[j] };
            out.decoded(source, "\n", from..to);
        }
        return i;
    }
    let k = line_starts.len() - 1;
    if k == 0 {
        out.decoded(source, " ", start..i);
    }
    // The first break is dropped; each empty line after it is a line feed, placed on it.
    for j in 0..k {
        let from = line_starts[j];
        let to = if j + 1 == k { i } else { line_starts[j + 1] };
        out.decoded(source, "\n", from..to);
    }
    i
}

/// A single- or double-quoted scalar whose opening quote is at `q`.
fn flow(source: &str, q: usize, double: bool) -> Option<Scan> {
    let b = source.as_bytes();
    let mut out = Out::default();
    let mut i = q + 1;
    loop {
        let mut escaped_break = false;
        while i < b.len() && !blank(b, i) && line_break(b, i) == 0 {
            match b[i] {
                b'\'' if !double && b.get(i + 1) == Some(&b'\'') => {
                    out.decoded(source, "'", i..i + 2);
                    i += 2;
                }
                b'\'' if !double => break,
                b'"' if double => break,
                b'\\' if double && line_break(b, i + 1) > 0 => {
                    i += 1 + line_break(b, i + 1);
                    escaped_break = true;
                    break;
                }
                b'\\' if double => {
                    let (c, n) = escape(source, i)?;
                    out.decoded(source, c.encode_utf8(&mut [0; 4]), i..i + n);
                    i += n;
                }
                _ => {
                    let n = char_len(source, i);
                    out.verbatim(source, i..i + n);
                    i += n;
                }
            }
        }
        match b.get(i)? {
            b'"' if double => break,
            b'\'' if !double => break,
            _ => {}
        }
        i = fold(&mut out, source, i, b.len(), escaped_break);
    }
    let style = if double {
        ScalarStyle::DoubleQuoted
    } else {
        ScalarStyle::SingleQuoted
    };
    Some((out, style, q + 1..i, 0))
}

/// The escape sequence at `i` (a `\`): its character and length.
fn escape(source: &str, i: usize) -> Option<(char, usize)> {
    let c = match *source.as_bytes().get(i + 1)? {
        b'0' => '\0',
        b'a' => '\x07',
        b'b' => '\x08',
        b't' | b'\t' => '\t',
        b'n' => '\n',
        b'v' => '\x0b',
        b'f' => '\x0c',
        b'r' => '\r',
        b'e' => '\x1b',
        b' ' => ' ',
        b'"' => '"',
        b'/' => '/',
        b'\\' => '\\',
        b'N' => '\u{85}',
        b'_' => '\u{a0}',
        b'L' => '\u{2028}',
        b'P' => '\u{2029}',
        x @ (b'x' | b'u' | b'U') => {
            let digits = match x {
                b'x' => 2,
                b'u' => 4,
                _ => 8,
            };
            let hex = source.get(i + 2..i + 2 + digits)?;
            if !hex.bytes().all(|d| d.is_ascii_hexdigit()) {
                return None;
            }
            let c = char::from_u32(u32::from_str_radix(hex, 16).ok()?)?;
            return Some((c, 2 + digits));
        }
        _ => return None,
    };
    Some((c, 2))
}

/// A plain scalar from `p` to the parser's end `end`.
fn plain(source: &str, p: usize, end: usize) -> Option<Scan> {
    let b = source.as_bytes();
    if end < p || !source.is_char_boundary(end) {
        return None;
    }
    let mut out = Out::default();
    let mut i = p;
    while i < end {
        let from = i;
        while i < end && !blank(b, i) && line_break(b, i) == 0 {
            i += char_len(source, i);
        }
        out.verbatim(source, from..i);
        if i < end {
            i = fold(&mut out, source, i, end, false);
        }
    }
    Some((out, ScalarStyle::Plain, p..end, 0))
}

/// How a block scalar ends.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Chomping {
    Strip,
    Clip,
    Keep,
}

/// A literal (`|`) or folded (`>`) block scalar whose indicator is at `h`.
fn block(source: &str, h: usize, parent_indent: usize) -> Option<Scan> {
    let b = source.as_bytes();
    let literal = b[h] == b'|';
    let mut i = h + 1;
    let mut chomping = Chomping::Clip;
    let mut increment = 0;
    for _ in 0..2 {
        match b.get(i) {
            Some(b'+') => chomping = Chomping::Keep,
            Some(b'-') => chomping = Chomping::Strip,
            Some(d @ b'1'..=b'9') => increment = usize::from(d - b'0'),
            _ => break,
        }
        i += 1;
    }
    while blank(b, i) {
        i += 1;
    }
    if b.get(i) == Some(&b'#') {
        while i < b.len() && line_break(b, i) == 0 {
            i += 1;
        }
    }
    i += line_break(b, i);
    let content_start = i.min(b.len());
    let mut out = Out::default();
    let mut line_start = i;
    // The breaks of empty lines not yet placed.
    let mut trailing: Vec<Range<usize>> = Vec::new();
    let indent = if increment > 0 {
        let indent = parent_indent + increment;
        skip_indent(b, &mut i, &mut line_start, indent, &mut trailing);
        indent
    } else {
        // The first content line's indentation (or the deepest empty line before it).
        let mut deepest = 0;
        loop {
            while b.get(i) == Some(&b' ') {
                i += 1;
            }
            deepest = deepest.max(i - line_start);
            let n = line_break(b, i);
            if n == 0 {
                break;
            }
            trailing.push(i..i + n);
            i += n;
            line_start = i;
        }
        deepest.max(parent_indent + 1)
    };
    let mut leading_break: Option<Range<usize>> = None;
    let mut leading_blank = false;
    let mut any_content = false;
    while i < b.len() && i - line_start == indent && line_break(b, i) == 0 {
        any_content = true;
        let trailing_blank = blank(b, i);
        match leading_break.take() {
            // Two text lines: the break between them folds into a space, or into nothing
            // when empty lines lie between (they become line feeds below).
            Some(line_end)
                if !literal && !leading_blank && !trailing_blank && trailing.is_empty() =>
            {
                out.decoded(source, " ", line_end)
            }
            Some(_) if !literal && !leading_blank && !trailing_blank => {}
            Some(line_end) => out.decoded(source, "\n", line_end),
            None => {}
        }
        for empty in trailing.drain(..) {
            out.decoded(source, "\n", empty);
        }
        leading_blank = trailing_blank;
        let from = i;
        while i < b.len() && line_break(b, i) == 0 {
            i += 1;
        }
        out.verbatim(source, from..i);
        let n = line_break(b, i);
        if n == 0 {
            break;
        }
        leading_break = Some(i..i + n);
        i += n;
        line_start = i;
        skip_indent(b, &mut i, &mut line_start, indent, &mut trailing);
    }
    let at_end = i >= b.len();
    let content_end = if at_end { b.len() } else { line_start };
    if at_end && !any_content {
        // Only empty lines before the end of the text: saphyr keeps their breaks (or one, for
        // a last line of blanks without a break) when asked to, else nothing.
        if chomping == Chomping::Keep {
            if trailing.is_empty() && i > content_start && i > line_start {
                out.decoded(source, "\n", b.len()..b.len());
            }
            for empty in trailing.drain(..) {
                out.decoded(source, "\n", empty);
            }
        }
    } else if chomping != Chomping::Strip {
        if let Some(line_end) = leading_break.take() {
            out.decoded(source, "\n", line_end);
        }
        // A last line without a line break still ends with one.
        if at_end && i - line_start >= indent.max(1) {
            out.decoded(source, "\n", b.len()..b.len());
        }
    }
    if chomping == Chomping::Keep && (any_content || !at_end) {
        for empty in trailing.drain(..) {
            out.decoded(source, "\n", empty);
        }
    }
    let style = if literal {
        ScalarStyle::Literal
    } else {
        ScalarStyle::Folded
    };
    Some((out, style, content_start..content_end, indent))
}

/// Past the indentation (up to `indent` spaces) of the line at `i` and of the empty lines
/// that follow, noting each empty line's break.
fn skip_indent(
    b: &[u8],
    i: &mut usize,
    line_start: &mut usize,
    indent: usize,
    breaks: &mut Vec<Range<usize>>,
) {
    loop {
        while *i - *line_start < indent && b.get(*i) == Some(&b' ') {
            *i += 1;
        }
        let n = line_break(b, *i);
        if n == 0 {
            return;
        }
        breaks.push(*i..*i + n);
        *i += n;
        *line_start = *i;
    }
}

#[cfg(test)]
mod tests;
