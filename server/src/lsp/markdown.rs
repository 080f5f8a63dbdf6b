//! Text from scripts, cases and Lua errors put into Markdown hovers: escaped, so that
//! `<string>`, `'<name>' expected`, `*`, `_` or backticks in it show as written instead of being
//! taken for HTML or emphasis (VS Code drops unknown HTML tags with their content).

/// `text` with Markdown's special characters backslash-escaped and `<`, `>` as entities.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '#' | '|' | '~' => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn angle_brackets_and_emphasis_survive() {
        assert_eq!(
            escape("x.lua:109: '<name>' expected near 'local'"),
            "x.lua:109: '&lt;name&gt;' expected near 'local'"
        );
        assert_eq!(escape("a_b *c* `d`"), "a\\_b \\*c\\* \\`d\\`");
    }
}
