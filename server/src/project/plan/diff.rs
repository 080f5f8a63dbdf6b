//! The change to a resource between two stages of a plan: a line diff of the two YAML
//! renderings (the engine's renderer sorts keys, so one changed field is one changed line),
//! in hunks with three lines of context, bounded to [`MAX_DIFF_LINES`] lines.

use similar::{ChangeTag, TextDiff};

/// At most this many diff lines are kept per stage; the rest are counted.
pub const MAX_DIFF_LINES: usize = 400;

/// What a diff line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
    /// `@@ -a,b +c,d @@`: where a hunk starts.
    Hunk,
    Context,
    Removed,
    Added,
}

impl LineKind {
    /// The unified-diff prefix of the line.
    pub fn prefix(self) -> &'static str {
        match self {
            LineKind::Hunk => "",
            LineKind::Context => " ",
            LineKind::Removed => "-",
            LineKind::Added => "+",
        }
    }
}

/// One line of a diff, without its newline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffLine {
    pub kind: LineKind,
    pub text: String,
}

/// The diff from `old` to `new` (empty when they are equal), and how many lines were left out.
pub fn diff(old: &str, new: &str) -> (Vec<DiffLine>, usize) {
    if old == new {
        return (Vec::new(), 0);
    }
    let text_diff = TextDiff::from_lines(old, new);
    let mut lines = Vec::new();
    let mut more = 0;
    let mut push = |line: DiffLine| {
        if lines.len() < MAX_DIFF_LINES {
            lines.push(line);
        } else {
            more += 1;
        }
    };
    for hunk in text_diff.unified_diff().context_radius(3).iter_hunks() {
        push(DiffLine {
            kind: LineKind::Hunk,
            text: hunk.header().to_string(),
        });
        for change in hunk.iter_changes() {
            let kind = match change.tag() {
                ChangeTag::Equal => LineKind::Context,
                ChangeTag::Delete => LineKind::Removed,
                ChangeTag::Insert => LineKind::Added,
            };
            push(DiffLine {
                kind,
                text: change.value().trim_end_matches(['\n', '\r']).to_owned(),
            });
        }
    }
    (lines, more)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_field_is_one_removed_and_one_added_line_in_a_hunk() {
        let (lines, more) = diff("a: 1\nb: 2\nc: 3\n", "a: 1\nb: 5\nc: 3\n");
        let shown: Vec<String> = lines
            .iter()
            .map(|l| format!("{}{}", l.kind.prefix(), l.text))
            .collect();
        assert_eq!(
            shown,
            ["@@ -1,3 +1,3 @@", " a: 1", "-b: 2", "+b: 5", " c: 3"]
        );
        assert_eq!(more, 0);
        assert_eq!(diff("x\n", "x\n"), (Vec::new(), 0));
    }

    #[test]
    fn long_diffs_are_cut_and_counted() {
        let new: String = (0..1000).map(|i| format!("k{i}: v\n")).collect();
        let (lines, more) = diff("", &new);
        assert_eq!(lines.len(), MAX_DIFF_LINES);
        assert_eq!(lines.len() + more, 1001);
    }
}
