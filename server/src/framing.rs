//! `Content-Length` framing, as LSP's base protocol and the Debug Adapter Protocol both frame
//! their JSON messages: a bounded decoder that resynchronises after garbage, and the writer.
//! Shared by the language server (`lsp::transport`) and the debug adapter (`dap`).

/// A declared body larger than this is skipped (not buffered) and answered with an error; the
/// decoders of client input use the lower, configurable `MessageLimits::max_bytes` (8 MiB by
/// default) and this bounds what the server itself frames.
pub const MAX_MESSAGE_BYTES: u64 = 64 * 1024 * 1024;
/// Skipped bytes kept to find a header that straddles two reads (`Content-Length:`, 20 digits
/// and CRLF fit).
const SKIP_TAIL_BYTES: usize = 64;
/// A buffer grown past this by one large message is shrunk once the message is out.
const KEPT_BUFFER_BYTES: usize = 1 << 20;
/// A header block (without its body) longer than this is garbage.
const MAX_HEADER_BYTES: usize = 8 * 1024;
const CONTENT_LENGTH: &[u8] = b"content-length";

/// Why a frame could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FramingError {
    MissingLength,
    BadLength(String),
    /// The declared length and the limit it is over.
    TooLarge(u64, u64),
    HeaderTooLong,
    /// The input ended inside a message.
    Truncated {
        expected: u64,
        got: u64,
    },
}

impl std::fmt::Display for FramingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FramingError::MissingLength => write!(f, "header without Content-Length"),
            FramingError::BadLength(value) => write!(f, "bad Content-Length `{value}`"),
            FramingError::TooLarge(n, limit) => write!(
                f,
                "message of {n} bytes is over the {limit}-byte limit (skipped; raise it with --max-message-size)"
            ),
            FramingError::HeaderTooLong => {
                write!(f, "header over {MAX_HEADER_BYTES} bytes without an end")
            }
            FramingError::Truncated { expected, got } => write!(
                f,
                "input ended inside a message ({got} of {expected} bytes)"
            ),
        }
    }
}

/// One step of the decoder.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    Body(Vec<u8>),
    Bad(FramingError),
}

/// Incremental decoder of `Content-Length`-framed messages. Memory is bounded by its limit
/// ([`MAX_MESSAGE_BYTES`] by default) plus one header block, whatever the input.
#[derive(Debug)]
pub struct FrameDecoder {
    buf: Vec<u8>,
    /// Body length of the message whose header was read.
    body: Option<usize>,
    /// Bytes of an oversized body still to drop.
    skip: u64,
    /// The last skipped bytes, to find a header that began in an earlier read.
    skip_tail: Vec<u8>,
    /// After a header without a usable length: drop input up to the next `Content-Length`.
    resync: bool,
    /// Declared bodies over this are skipped.
    limit: u64,
}

impl Default for FrameDecoder {
    fn default() -> FrameDecoder {
        FrameDecoder::with_limit(MAX_MESSAGE_BYTES)
    }
}

/// Where a header line `Content-Length: <digits>\r\n` starts in `bytes`. Such a line cannot
/// occur inside a JSON body (a raw CR is not allowed in a JSON string, and the words are not JSON
/// outside one), so finding it in a skipped body means the declared length was wrong.
fn find_header_line(bytes: &[u8]) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = find_ignore_case(&bytes[from..], CONTENT_LENGTH).map(|at| at + from) {
        let rest = &bytes[at + CONTENT_LENGTH.len()..];
        let rest = rest.trim_ascii_start();
        if let Some(rest) = rest.strip_prefix(b":") {
            let rest = rest.trim_ascii_start();
            let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
            if digits > 0 && rest[digits..].starts_with(b"\r\n") {
                return Some(at);
            }
        }
        from = at + 1;
    }
    None
}

fn find_ignore_case(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle))
}

impl FrameDecoder {
    /// A decoder that skips declared bodies over `limit` bytes.
    pub fn with_limit(limit: u64) -> FrameDecoder {
        FrameDecoder {
            buf: Vec::new(),
            body: None,
            skip: 0,
            skip_tail: Vec::new(),
            resync: false,
            limit,
        }
    }

    /// Feeds input bytes.
    pub fn push(&mut self, mut bytes: &[u8]) {
        if self.skip > 0 {
            let n = (self.skip.min(bytes.len() as u64)) as usize;
            // A header inside the skipped bytes: the oversized message was shorter than it
            // said (or was cut off), so the messages after it start there instead of being
            // swallowed by the skip.
            let mut window = std::mem::take(&mut self.skip_tail);
            window.extend_from_slice(&bytes[..n]);
            if let Some(at) = find_header_line(&window) {
                self.skip = 0;
                self.buf.extend_from_slice(&window[at..]);
                self.buf.extend_from_slice(&bytes[n..]);
                return;
            }
            self.skip -= n as u64;
            if self.skip > 0 {
                let keep = window.len().saturating_sub(SKIP_TAIL_BYTES);
                window.drain(..keep);
                self.skip_tail = window;
            }
            bytes = &bytes[n..];
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete frame or framing error, `None` when more input is needed.
    pub fn next_frame(&mut self) -> Option<Frame> {
        loop {
            if self.skip > 0 {
                return None;
            }
            if let Some(length) = self.body {
                if self.buf.len() < length {
                    return None;
                }
                self.body = None;
                let rest = self.buf.split_off(length);
                let mut body = std::mem::replace(&mut self.buf, rest);
                // The body keeps the allocation it grew in only as long as it is used.
                if body.capacity() > KEPT_BUFFER_BYTES {
                    body.shrink_to_fit();
                }
                return Some(Frame::Body(body));
            }
            if self.resync {
                match find_ignore_case(&self.buf, CONTENT_LENGTH) {
                    Some(at) => {
                        self.buf.drain(..at);
                        self.resync = false;
                    }
                    None => {
                        let keep = CONTENT_LENGTH.len() - 1;
                        let cut = self.buf.len().saturating_sub(keep);
                        self.buf.drain(..cut);
                        return None;
                    }
                }
            }
            // Blank lines between messages are tolerated.
            let blank = self
                .buf
                .iter()
                .take_while(|b| matches!(b, b'\r' | b'\n'))
                .count();
            self.buf.drain(..blank);
            let Some(end) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                if self.buf.len() > MAX_HEADER_BYTES {
                    self.buf.drain(..);
                    self.resync = true;
                    return Some(Frame::Bad(FramingError::HeaderTooLong));
                }
                return None;
            };
            let header: Vec<u8> = self.buf.drain(..end + 4).collect();
            match parse_header(&header[..end]) {
                Ok(length) if length > self.limit => {
                    // The buffered part goes through `push` again, so a header inside it is
                    // found as in later reads.
                    let buffered = std::mem::take(&mut self.buf);
                    self.skip = length;
                    self.push(&buffered);
                    return Some(Frame::Bad(FramingError::TooLarge(length, self.limit)));
                }
                Ok(length) => self.body = Some(length as usize),
                Err(e) => {
                    self.resync = true;
                    return Some(Frame::Bad(e));
                }
            }
        }
    }

    /// The input ended: what was left unread, if it was the start of a message.
    pub fn finish(&mut self) -> Option<FramingError> {
        let pending = std::mem::take(&mut self.buf);
        if let Some(length) = self.body.take() {
            return Some(FramingError::Truncated {
                expected: length as u64,
                got: pending.len() as u64,
            });
        }
        if self.skip > 0 || self.resync {
            return None; // already reported
        }
        let meaningful = pending.iter().any(|b| !b.is_ascii_whitespace());
        meaningful.then_some(FramingError::Truncated {
            expected: 0,
            got: pending.len() as u64,
        })
    }
}

/// The body length a header block declares (`Content-Type` and other headers are ignored: the
/// body is checked as UTF-8 JSON anyway).
fn parse_header(block: &[u8]) -> Result<u64, FramingError> {
    let mut length = None;
    for line in block.split(|b| *b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(colon) = line.iter().position(|b| *b == b':') else {
            continue;
        };
        if !line[..colon]
            .trim_ascii()
            .eq_ignore_ascii_case(CONTENT_LENGTH)
        {
            continue;
        }
        let value = String::from_utf8_lossy(line[colon + 1..].trim_ascii()).into_owned();
        let parsed: u64 = value
            .parse()
            .map_err(|_| FramingError::BadLength(value.chars().take(40).collect()))?;
        if length.is_some_and(|previous| previous != parsed) {
            return Err(FramingError::BadLength(value));
        }
        length = Some(parsed);
    }
    length.ok_or(FramingError::MissingLength)
}

/// `body` framed for the wire.
pub fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

/// The next message the server wrote, for the in-process test clients (the server's own
/// output is always well framed, so this reads it simply).
#[cfg(test)]
pub(crate) async fn read_message(
    from_server: &mut tokio::io::BufReader<tokio::io::DuplexStream>,
) -> serde_json::Value {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt};
    let mut length = 0;
    loop {
        let mut line = String::new();
        from_server.read_line(&mut line).await.unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(n) = line.strip_prefix("Content-Length: ") {
            length = n.parse().unwrap();
        }
    }
    let mut body = vec![0; length];
    from_server.read_exact(&mut body).await.unwrap();
    serde_json::from_slice(&body).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn decode_all(input: &[u8], chunk: usize) -> (Vec<Frame>, Option<FramingError>) {
        let mut decoder = FrameDecoder::default();
        let mut frames = Vec::new();
        for part in input.chunks(chunk.max(1)) {
            decoder.push(part);
            while let Some(frame) = decoder.next_frame() {
                frames.push(frame);
            }
        }
        (frames, decoder.finish())
    }

    #[test]
    fn frames_in_any_chunking() {
        let mut input = frame(b"{\"a\":1}");
        input.extend(b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\ncontent-length: 2\r\n\r\n{}");
        for chunk in [1, 3, 1000] {
            let (frames, end) = decode_all(&input, chunk);
            assert_eq!(
                frames,
                vec![
                    Frame::Body(b"{\"a\":1}".to_vec()),
                    Frame::Body(b"{}".to_vec())
                ]
            );
            assert_eq!(end, None);
        }
    }

    #[test]
    fn bad_headers_are_reported_and_skipped() {
        let mut input = b"X-Nothing: 1\r\n\r\n{garbage}".to_vec();
        input.extend(frame(b"1"));
        input.extend(b"Content-Length: -4\r\n\r\n");
        input.extend(frame(b"2"));
        let (frames, end) = decode_all(&input, 7);
        assert_eq!(
            frames,
            vec![
                Frame::Bad(FramingError::MissingLength),
                Frame::Body(b"1".to_vec()),
                Frame::Bad(FramingError::BadLength("-4".into())),
                Frame::Body(b"2".to_vec()),
            ]
        );
        assert_eq!(end, None);
    }

    #[test]
    fn huge_length_is_skipped_without_buffering() {
        let mut decoder = FrameDecoder::default();
        decoder.push(b"Content-Length: 100000000\r\n\r\n");
        assert_eq!(
            decoder.next_frame(),
            Some(Frame::Bad(FramingError::TooLarge(
                100_000_000,
                MAX_MESSAGE_BYTES
            )))
        );
        let block = vec![b'x'; 1 << 20];
        for _ in 0..95 {
            decoder.push(&block);
            assert_eq!(decoder.next_frame(), None);
            assert!(decoder.buf.capacity() < 2 << 20, "not buffered");
        }
        decoder.push(&vec![b'x'; 100_000_000 - 95 * (1 << 20)]);
        decoder.push(&frame(b"{}"));
        assert_eq!(decoder.next_frame(), Some(Frame::Body(b"{}".to_vec())));
    }

    #[test]
    fn endless_header_is_bounded() {
        let mut decoder = FrameDecoder::default();
        for _ in 0..100 {
            decoder.push(&[b'a'; 1000]);
            while decoder.next_frame().is_some() {}
            assert!(decoder.buf.len() <= MAX_HEADER_BYTES + 1000);
        }
    }

    #[test]
    fn truncated_body_at_eof() {
        let (frames, end) = decode_all(b"Content-Length: 10\r\n\r\n{\"a\"", 4);
        assert!(frames.is_empty());
        assert_eq!(
            end,
            Some(FramingError::Truncated {
                expected: 10,
                got: 4
            })
        );
        let (_, end) = decode_all(b"Content-Len", 4);
        assert!(matches!(end, Some(FramingError::Truncated { .. })));
    }

    // 256 cases each by default; `PROPTEST_CASES` sets more for a longer run (docs/LSP.md).
    proptest! {
        /// Arbitrary bytes never panic the decoder, never make it hold more than one message
        /// plus one header, and a valid message after them is still read.
        #[test]
        fn arbitrary_input_then_a_valid_message(
            garbage in prop::collection::vec(any::<u8>(), 0..600),
            chunk in 1usize..64,
        ) {
            let mut input = garbage.clone();
            // Whatever came before, a blank line and a fresh header let the decoder resync
            // (unless the garbage declared a body that swallows it, which is the protocol).
            input.extend(b"\r\n\r\n");
            let marker = br#"{"jsonrpc":"2.0","method":"marker"}"#;
            input.extend(frame(marker));
            let (frames, _) = decode_all(&input, chunk);
            let swallowed = String::from_utf8_lossy(&garbage).to_ascii_lowercase().contains("content-length");
            if !swallowed {
                prop_assert_eq!(frames.last(), Some(&Frame::Body(marker.to_vec())));
            }
        }

        /// Valid frames round-trip through any chunking.
        #[test]
        fn frames_round_trip(bodies in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..200), 0..8), chunk in 1usize..50) {
            let input: Vec<u8> = bodies.iter().flat_map(|b| frame(b)).collect();
            let (frames, end) = decode_all(&input, chunk);
            prop_assert_eq!(frames, bodies.into_iter().map(Frame::Body).collect::<Vec<_>>());
            prop_assert_eq!(end, None);
        }
    }
}
