//! `textDocument/foldingRange`: the analysis layer's folds as lines, the closing line (`end`,
//! `}`, the next branch) left visible; scripts embedded in a manifest fold inside it.

use tower_lsp_server::ls_types::{FoldingRange, FoldingRangeKind};

use super::lua::LuaView;
use super::text::LineIndex;
use crate::analysis::folding::folding_ranges;

/// The folds of every script of a document (`views`, see [`super::lua::views`]).
pub fn folds(views: &[LuaView], text: &str) -> Vec<FoldingRange> {
    let index = LineIndex::new(text);
    let mut out = Vec::new();
    for view in views {
        for fold in folding_ranges(view.parsed()) {
            let range = view.host_range(text, &index, fold.range.clone());
            // A comment folds to its last line; a block keeps its closing line in view.
            let end_line = if fold.comment {
                range.end.line
            } else {
                range.end.line.saturating_sub(1)
            };
            if end_line <= range.start.line {
                continue;
            }
            out.push(FoldingRange {
                start_line: range.start.line,
                end_line,
                kind: fold.comment.then_some(FoldingRangeKind::Comment),
                ..FoldingRange::default()
            });
        }
    }
    out
}
