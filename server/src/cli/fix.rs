//! `lint --fix`: applies the lints' fixes to the files that hold the scripts. Only the bytes of
//! each fix change; overlapping fixes keep the first; a file is replaced as a whole, atomically
//! ([`replace_file`]: the same compare-and-swap writer accept-expected uses), and only if
//! nobody changed it since it was read.

use std::ops::Range;

use super::lint_finding::{Finding, FixCount};
use crate::atomic_write::replace_file;
use crate::project::UsageError;
use crate::project::paths;
use crate::project::targets::Target;

/// Applies every finding's fix to its file.
pub fn apply(targets: &[Target], findings: &[Finding]) -> Result<FixCount, UsageError> {
    let mut count = FixCount::default();
    for target in targets {
        let edits: Vec<(Range<usize>, &str)> = findings
            .iter()
            .filter(|f| f.file == target.display)
            .filter_map(|f| f.fix.as_ref())
            .map(|fix| (fix.range.clone(), fix.replacement.as_str()))
            .collect();
        let (text, applied) = apply_edits(&target.text, edits);
        if applied == 0 {
            continue;
        }
        replace_file(&target.path, target.text.as_bytes(), text.as_bytes())
            .map_err(|err| UsageError(format!("{}: --fix: {err}", paths::display(&target.path))))?;
        count.edits += applied;
        count.files += 1;
    }
    Ok(count)
}

/// `text` with the non-overlapping `edits` applied (an edit overlapping an earlier one is
/// dropped), and how many were applied.
fn apply_edits(text: &str, mut edits: Vec<(Range<usize>, &str)>) -> (String, usize) {
    edits.sort_by_key(|(range, _)| (range.start, range.end));
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    let mut applied = 0;
    for (range, replacement) in edits {
        if range.start < at || range.end > text.len() || range.start > range.end {
            continue;
        }
        if &text[range.clone()] == replacement {
            continue;
        }
        out.push_str(&text[at..range.start]);
        out.push_str(replacement);
        at = range.end;
        applied += 1;
    }
    out.push_str(&text[at..]);
    (out, applied)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_change_only_their_bytes_and_skip_overlaps() {
        let text = "local a = obj.canaryweight\nreturn x\n";
        let edits = vec![
            (14..26, "canaryWeight"),
            (16..20, "zzzz"),
            (27..33, "return"),
            (34..35, "obj.data"),
        ];
        let (out, applied) = apply_edits(text, edits);
        assert_eq!(out, "local a = obj.canaryWeight\nreturn obj.data\n");
        assert_eq!(applied, 2);
    }
}
