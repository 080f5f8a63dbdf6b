//! Snippet completion items (`insertTextFormat: snippet`) for common script shapes, for clients
//! that take snippets.

use tower_lsp_server::ls_types::{
    CompletionItem, CompletionItemKind, CompletionTextEdit, InsertTextFormat, TextEdit,
};

use super::lua::LuaView;
use super::text::LineIndex;
use crate::analysis::snippets::snippets_at;

pub fn items(view: &LuaView, host: &str, offset: usize) -> Vec<CompletionItem> {
    // Every snippet spans lines: a quoted or folded ConfigMap string cannot take them as typed.
    if !view.takes_lines_as_typed() {
        return Vec::new();
    }
    let Some((replace, snippets)) = snippets_at(&view.source, offset, view.flavor()) else {
        return Vec::new();
    };
    let index = LineIndex::new(host);
    let range = view.host_range(host, &index, replace);
    snippets
        .iter()
        .map(|snippet| CompletionItem {
            label: snippet.label.to_string(),
            kind: Some(CompletionItemKind::SNIPPET),
            detail: Some(snippet.detail.to_string()),
            insert_text_format: Some(InsertTextFormat::SNIPPET),
            text_edit: Some(CompletionTextEdit::Edit(TextEdit::new(
                range,
                snippet.body.to_string(),
            ))),
            // After names in scope and keywords.
            sort_text: Some(format!("~{}", snippet.label)),
            ..CompletionItem::default()
        })
        .collect()
}
