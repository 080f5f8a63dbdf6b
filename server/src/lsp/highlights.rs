//! `textDocument/documentHighlight`: the other occurrences of the local or global under the
//! cursor, writes (declaration, assignment) told from reads.

use tower_lsp_server::ls_types::{DocumentHighlight, DocumentHighlightKind};

use super::lua::LuaView;
use super::text::LineIndex;

pub fn highlights(view: &LuaView, host: &str, offset: usize) -> Vec<DocumentHighlight> {
    let index = LineIndex::new(host);
    crate::analysis::highlights(view.parsed(), offset)
        .into_iter()
        .map(|(range, write)| DocumentHighlight {
            range: view.host_range(host, &index, range),
            kind: Some(if write {
                DocumentHighlightKind::WRITE
            } else {
                DocumentHighlightKind::READ
            }),
        })
        .collect()
}
