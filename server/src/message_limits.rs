//! Bounds on one client message of the language server or the debug adapter beside its byte
//! length: how many JSON values it holds and how deeply they nest, checked by a scan of the raw
//! bytes before anything is decoded, so a message's memory stays proportional to its size.
//!
//! Why: serde_json's `Value` costs about a hundred bytes per element, so an 8 MB message of a
//! million `{"a":0}` took 1.4 GB to decode (and a 64 MB one aborted the process). The element
//! bound follows the byte bound (one value per [`BYTES_PER_ELEMENT`] bytes), so raising the frame
//! limit (`--max-message-size`) raises both.

use serde::Deserialize;

/// The default frame limit, in MiB: room for a 2 MiB document (the analysis cap) escaped as JSON
/// several times over, and a bound on what a hostile or broken client costs.
pub const DEFAULT_MAX_MESSAGE_MIB: u64 = 8;
/// One JSON value allowed per this many bytes of the frame limit (8 MiB: 262,144 values).
pub const BYTES_PER_ELEMENT: u64 = 32;
/// Arrays and objects nested deeper than this are refused (serde_json stops at 128 anyway; this
/// says so clearly, and keeps every walk over a message shallow).
pub const MAX_DEPTH: usize = 64;
/// After a message at least this large, memory the allocator holds freed is handed back.
const RELEASE_AFTER_BYTES: usize = 1 << 20;

/// The bounds on one client message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageLimits {
    /// Declared bodies over this many bytes are skipped without being buffered.
    pub max_bytes: u64,
}

impl Default for MessageLimits {
    fn default() -> MessageLimits {
        MessageLimits::from_mib(DEFAULT_MAX_MESSAGE_MIB)
    }
}

impl MessageLimits {
    pub fn from_mib(mib: u64) -> MessageLimits {
        MessageLimits {
            max_bytes: mib.max(1).saturating_mul(1 << 20),
        }
    }

    /// How many JSON values one message may hold.
    pub fn max_elements(&self) -> u64 {
        self.max_bytes / BYTES_PER_ELEMENT
    }

    /// Checks `body`'s shape without decoding it: why it is refused, if it is.
    pub fn check(&self, body: &[u8]) -> Result<(), String> {
        let max_elements = self.max_elements();
        let mut elements: u64 = 0;
        let mut depth = 0usize;
        let mut in_string = false;
        let mut escaped = false;
        for &byte in body {
            if in_string {
                match byte {
                    _ if escaped => escaped = false,
                    b'\\' => escaped = true,
                    b'"' => in_string = false,
                    _ => {}
                }
                continue;
            }
            match byte {
                b'"' => in_string = true,
                b'{' | b'[' => {
                    depth += 1;
                    elements += 1;
                    if depth > MAX_DEPTH {
                        return Err(format!(
                            "the message nests deeper than {MAX_DEPTH} levels (refused unread)"
                        ));
                    }
                }
                b'}' | b']' => depth = depth.saturating_sub(1),
                // Every value after the first in an array or object follows a comma.
                b',' => elements += 1,
                _ => {}
            }
            if elements > max_elements {
                return Err(format!(
                    "the message holds more than {max_elements} JSON values, the limit for a {} MiB frame limit (refused unread; raise it with --max-message-size)",
                    self.max_bytes >> 20
                ));
            }
        }
        Ok(())
    }
}

/// The fields a refusal is answered with, read without building the rest of the message
/// (serde skips every other field as `IgnoredAny`, allocating nothing for it).
#[derive(Debug, Default, Deserialize)]
pub struct Head {
    /// JSON-RPC's id (LSP).
    #[serde(default)]
    pub id: Option<serde_json::Value>,
    /// DAP's request number and command.
    #[serde(default)]
    pub seq: Option<i64>,
    #[serde(default)]
    pub command: Option<String>,
}

impl Head {
    /// The head of `body`, or an empty one when it cannot be read (then the answer has no id).
    pub fn read(body: &[u8]) -> Head {
        let head: Head = serde_json::from_slice(body).unwrap_or_default();
        // Only a scalar id is echoed: an object or array there is itself invalid.
        Head {
            id: head
                .id
                .filter(|id| id.is_string() || id.is_i64() || id.is_u64()),
            ..head
        }
    }
}

/// Hands memory freed after a large message back to the system (see [`crate::freed_memory`]).
pub fn release_after(message_bytes: usize) {
    if message_bytes >= RELEASE_AFTER_BYTES {
        crate::freed_memory::release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn counts_values_and_depth_outside_strings() {
        let limits = MessageLimits { max_bytes: 32 * 4 };
        assert_eq!(limits.max_elements(), 4);
        assert!(limits.check(br#"{"a":[1,2],"b":"{[,,,,,,]}"}"#).is_ok());
        let error = limits.check(br#"[1,2,3,4,5]"#).unwrap_err();
        assert!(error.contains("more than 4 JSON values"), "{error}");
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        let error = MessageLimits::default().check(deep.as_bytes()).unwrap_err();
        assert!(error.contains("deeper than 64"), "{error}");
        // An escaped quote does not end the string.
        assert!(limits.check(br#"["\",,,,,,,"]"#).is_ok());
    }

    #[test]
    fn the_head_is_read_without_the_rest() {
        let head =
            Head::read(br#"{"seq":7,"type":"request","command":"x","arguments":{"a":[{"b":1}]}}"#);
        assert_eq!((head.seq, head.command.as_deref()), (Some(7), Some("x")));
        let head = Head::read(br#"{"jsonrpc":"2.0","id":"r1","method":"m","params":[1,2]}"#);
        assert_eq!(head.id, Some(serde_json::Value::from("r1")));
        assert!(Head::read(br#"{"id":{"a":1}}"#).id.is_none());
        assert!(Head::read(b"{broken").id.is_none());
    }

    proptest! {
        /// The scan agrees with serde_json: a message within the bounds never holds more
        /// values than allowed, whatever its shape.
        #[test]
        fn within_the_bounds_means_few_values(text in "[\\[\\]{}\",:a\\\\1 ]{0,200}") {
            let limits = MessageLimits { max_bytes: 32 * 8 };
            if limits.check(text.as_bytes()).is_ok()
                && let Ok(value) = serde_json::from_str::<serde_json::Value>(&text)
            {
                fn count(v: &serde_json::Value) -> u64 {
                    1 + match v {
                        serde_json::Value::Array(a) => a.iter().map(count).sum(),
                        serde_json::Value::Object(o) => o.values().map(count).sum(),
                        _ => 0,
                    }
                }
                // Scalars of a container are counted by their commas: at most one per
                // container beyond the scan's count.
                prop_assert!(count(&value) <= 2 * limits.max_elements() + 1);
            }
        }
    }
}
