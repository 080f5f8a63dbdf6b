//! Comments that turn lints off where the author decided a finding does not apply, honoured by
//! `kruise-lua lint`, `check` and the language server alike (all go through
//! [`super::analyze_script`]):
//!
//! * `-- kruise-lua: disable KL006 KL007` — in the whole file;
//! * `-- kruise-lua: disable-next-line KL006` — on the line below the comment;
//! * `-- kruise-lua: disable-line KL006` — on the comment's own line (after code).
//!
//! Codes are separated by spaces or commas; a directive without codes disables every lint there.
//! Syntax errors are never disabled: the script cannot run.

use std::collections::HashMap;
use std::ops::Range;

use full_moon::tokenizer::TokenType;

use super::lex::tokens;

/// The marker every directive starts with (after `--`).
pub const MARKER: &str = "kruise-lua:";

/// Where a directive applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    File,
    /// A 0-based line.
    Line(usize),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Directive {
    pub scope: Scope,
    /// Empty: every lint.
    pub codes: Vec<String>,
}

/// The directives in `source`'s comments.
pub fn directives(source: &str) -> Vec<Directive> {
    // Cheap refusal for the common case: no directive anywhere.
    if !source.contains(MARKER) {
        return Vec::new();
    }
    // Lines counted from the last comment on (comments come in order): counting from the top
    // for each was quadratic in a file of many directives.
    let (mut counted_to, mut line) = (0, 0);
    let mut found = Vec::new();
    for token in tokens(source) {
        let TokenType::SingleLineComment { comment } = token.token_type() else {
            continue;
        };
        let Some(rest) = comment.trim().strip_prefix(MARKER) else {
            continue;
        };
        let mut words = rest
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|w| !w.is_empty());
        let at = token.start_position().bytes();
        line += source[counted_to..at].matches('\n').count();
        counted_to = at;
        let scope = match words.next() {
            Some("disable") => Scope::File,
            Some("disable-next-line") => Scope::Line(line + 1),
            Some("disable-line") => Scope::Line(line),
            _ => continue,
        };
        found.push(Directive {
            scope,
            codes: words.map(str::to_string).collect(),
        });
    }
    found
}

/// A script's directives, ready to be asked of each finding (a line's directives by its
/// number, a finding's line by the offsets of the line breaks).
#[derive(Debug, Default)]
pub struct Suppressions {
    /// The codes of each file-wide directive (none: every lint).
    file: Vec<Vec<String>>,
    /// The codes of each directive on a line, by the line.
    lines: HashMap<usize, Vec<Vec<String>>>,
    line_breaks: Vec<usize>,
}

impl Suppressions {
    pub fn of(source: &str) -> Suppressions {
        let mut suppressions = Suppressions::default();
        for Directive { scope, codes } in directives(source) {
            match scope {
                Scope::File => suppressions.file.push(codes),
                Scope::Line(line) => suppressions.lines.entry(line).or_default().push(codes),
            }
        }
        if !suppressions.lines.is_empty() {
            suppressions.line_breaks = source.match_indices('\n').map(|(at, _)| at).collect();
        }
        suppressions
    }

    /// Whether a finding of `code` starting at byte `range.start` is disabled.
    pub fn disables(&self, code: &str, range: &Range<usize>) -> bool {
        let applies = |codes: &Vec<String>| {
            codes.is_empty() || codes.iter().any(|c| c.eq_ignore_ascii_case(code))
        };
        if self.file.iter().any(applies) {
            return true;
        }
        if self.lines.is_empty() {
            return false;
        }
        let line = self.line_breaks.partition_point(|&at| at < range.start);
        self.lines
            .get(&line)
            .is_some_and(|here| here.iter().any(applies))
    }
}

/// The comment that disables `code` on the line below (indented like `line_text`).
pub fn next_line_comment(line_text: &str, code: &str) -> String {
    let indent: String = line_text
        .chars()
        .take_while(|c| c.is_whitespace())
        .collect();
    format!("{indent}-- {MARKER} disable-next-line {code}\n")
}

/// The comment that disables `code` in the whole file.
pub fn file_comment(code: &str) -> String {
    format!("-- {MARKER} disable {code}\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{LintConfig, analyze_script};
    use kruise_lua_engine::script::ScriptFlavor as Flavor;

    fn codes(source: &str) -> Vec<(&'static str, usize)> {
        analyze_script(source, Flavor::Custom, &LintConfig::default(), None, None)
            .diagnostics
            .into_iter()
            .map(|d| (d.code, source[..d.range.start].matches('\n').count()))
            .collect()
    }

    #[test]
    fn directives_turn_findings_off_where_they_say() {
        let plain = "counter = 1\nother = 2\nreturn {spec = {c = counter, o = other}}\n";
        assert_eq!(codes(plain), vec![("KL006", 0), ("KL006", 1)]);
        let next = format!("{}{plain}", next_line_comment("", "KL006"));
        assert_eq!(codes(&next), vec![("KL006", 2)]);
        let file = format!("{plain}{}", file_comment("KL006"));
        assert_eq!(codes(&file), vec![]);
        let same_line = plain.replace("other = 2", "other = 2 -- kruise-lua: disable-line kl006");
        assert_eq!(codes(&same_line), vec![("KL006", 0)]);
        // Another code, or a mistyped directive, leaves the finding.
        let other =
            format!("-- kruise-lua: disable-next-line KL007\n-- kruise-lua: nope KL006\n{plain}");
        assert_eq!(codes(&other), vec![("KL006", 2), ("KL006", 3)]);
        // No codes: every lint.
        let all = format!("-- kruise-lua: disable\n{plain}");
        assert_eq!(codes(&all), vec![]);
    }

    #[test]
    fn the_inserted_comment_keeps_the_indentation() {
        assert_eq!(
            next_line_comment("    x = 1", "KL006"),
            "    -- kruise-lua: disable-next-line KL006\n"
        );
    }
}
