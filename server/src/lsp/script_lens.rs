//! The lens above a script (a Lua file, or each script of a ConfigMap manifest): its cases'
//! verdicts as the last run decided them, or why Kruise never runs it.

use std::path::Path;

use tower_lsp_server::ls_types::{CodeLens, Command, Range};

use super::commands;
use super::session::Session;
use super::text::LineIndex;

/// One lens per script `path` holds that has run: `✓ 4/4 cases pass` (`, 1 invalid`), or
/// `skipped: …` for a script Kruise never reads.
pub fn script_lenses(session: &Session, path: &Path, text: &str) -> Vec<CodeLens> {
    let mut lenses = Vec::new();
    let index = LineIndex::new(text);
    for view in session.views(path, text) {
        let Some(results) = session.results_for(&view.target.id) else {
            continue;
        };
        let total = results.cases.len();
        let title = if results.target.skipped.is_some() {
            "skipped: Kruise never reads this script".to_string()
        } else if total == 0 {
            continue;
        } else {
            let passed = results.passed_count();
            format!(
                "{} {passed}/{total} cases pass{}",
                if passed == total { "✓" } else { "✗" },
                match results.invalid_count() {
                    0 => String::new(),
                    n => format!(", {n} invalid"),
                }
            )
        };
        let position = index.position(text, view.to_host(0));
        lenses.push(CodeLens {
            range: Range::new(position, position),
            command: Some(Command::new(title, commands::RUN_ALL.into(), None)),
            data: None,
        });
    }
    lenses
}
