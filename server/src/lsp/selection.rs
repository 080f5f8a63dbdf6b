//! `textDocument/selectionRange`: expand selection through the script's syntax (word, chain,
//! expression, statement, body, script).

use tower_lsp_server::ls_types::{Position, SelectionRange};

use super::lua::{LuaView, view_at};
use super::text::LineIndex;
use crate::analysis::selection::selection_ranges;

/// One answer per position, as the protocol asks; a position outside any script gets an empty
/// range where it is.
pub fn ranges(views: &[LuaView], host: &str, positions: &[Position]) -> Vec<SelectionRange> {
    let index = LineIndex::new(host);
    positions
        .iter()
        .map(|&position| {
            let offset = index.offset(host, position);
            let Some((view, offset)) = view_at(views, offset) else {
                return SelectionRange {
                    range: tower_lsp_server::ls_types::Range::new(position, position),
                    parent: None,
                };
            };
            let chain = selection_ranges(view.parsed(), &[offset]).remove(0);
            // Outermost first, each the parent of the next.
            let mut built: Option<SelectionRange> = None;
            for range in chain.into_iter().rev() {
                built = Some(SelectionRange {
                    range: view.host_range(host, &index, range),
                    parent: built.map(Box::new),
                });
            }
            built.expect("at least one range")
        })
        .collect()
}
