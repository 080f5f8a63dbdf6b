//! Text that came from a script or an input file, made safe to write to a terminal: control
//! characters (an escape sequence could recolour, retitle or rewrite the user's terminal) are
//! shown as Rust-style escapes instead of being sent raw.

use std::borrow::Cow;

/// `text` with every control character except newline and tab written as an escape: `\x1b`
/// for C0 controls and DEL, `\u{9b}` for C1 controls, `\r` for a carriage return.
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    let needs_escape = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\r' => out.push_str("\\r"),
            c if needs_escape(c) && (c as u32) < 0x80 => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if needs_escape(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(escape_controls("plain\ttext\nline"), "plain\ttext\nline");
        assert!(matches!(escape_controls("plain"), Cow::Borrowed(_)));
        assert_eq!(
            escape_controls("\x1b]0;pwned\x07\x1b[2J\r\u{9b}31m\x7f"),
            "\\x1b]0;pwned\\x07\\x1b[2J\\r\\u{9b}31m\\x7f"
        );
    }
}
