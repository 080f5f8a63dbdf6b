//! Code actions for our own lints besides their fixes: turn a lint off on one line or in the
//! whole script with a `kruise-lua:` comment (see `analysis::suppress`; `lint` and `check`
//! honour the same comments).

use std::collections::HashMap;

use tower_lsp_server::ls_types::{
    CodeAction, CodeActionKind, CodeActionOrCommand, Diagnostic, NumberOrString, Position, Range,
    TextEdit, Uri, WorkspaceEdit,
};

use super::lua::{LuaView, view_at};
use super::text::LineIndex;
use crate::analysis::suppress::{file_comment, next_line_comment};

/// The lint code of one of our diagnostics (`KL006`), if it is a lint finding.
fn lint_code(diagnostic: &Diagnostic) -> Option<&str> {
    match &diagnostic.code {
        Some(NumberOrString::String(code)) if code.starts_with("KL") => Some(code),
        _ => None,
    }
}

fn action(
    title: String,
    uri: &Uri,
    edit: TextEdit,
    diagnostic: &Diagnostic,
) -> CodeActionOrCommand {
    CodeActionOrCommand::CodeAction(CodeAction {
        title,
        kind: Some(CodeActionKind::QUICKFIX),
        diagnostics: Some(vec![diagnostic.clone()]),
        edit: Some(WorkspaceEdit {
            changes: Some(HashMap::from([(uri.clone(), vec![edit])])),
            ..WorkspaceEdit::default()
        }),
        ..CodeAction::default()
    })
}

/// "Disable KLxxx on this line" and "… in this file" for each lint diagnostic given.
pub fn disable_actions(
    views: &[LuaView],
    host: &str,
    uri: &Uri,
    diagnostics: &[Diagnostic],
) -> Vec<CodeActionOrCommand> {
    let index = LineIndex::new(host);
    let lines: Vec<&str> = host.split('\n').collect();
    let mut out = Vec::new();
    let mut file_codes_done: Vec<String> = Vec::new();
    for diagnostic in diagnostics {
        let Some(code) = lint_code(diagnostic) else {
            continue;
        };
        let line = diagnostic.range.start.line;
        let line_text = lines.get(line as usize).copied().unwrap_or("");
        let at_line = Position::new(line, 0);
        out.push(action(
            format!("Disable {code} on this line"),
            uri,
            TextEdit::new(
                Range::new(at_line, at_line),
                next_line_comment(line_text, code),
            ),
            diagnostic,
        ));
        if file_codes_done.iter().any(|c| c == code) {
            continue;
        }
        file_codes_done.push(code.to_string());
        // The script's first line: line 0 of a Lua file, the block scalar's first line in a
        // manifest (indented like it).
        let offset = index.offset(host, diagnostic.range.start);
        let Some((view, _)) = view_at(views, offset) else {
            continue;
        };
        let first = index.position(host, view.to_host(0));
        let first_text = lines.get(first.line as usize).copied().unwrap_or("");
        let indent: String = first_text
            .chars()
            .take_while(|c| c.is_whitespace())
            .collect();
        let at_first = Position::new(first.line, 0);
        out.push(action(
            format!("Disable {code} in this file"),
            uri,
            TextEdit::new(
                Range::new(at_first, at_first),
                format!("{indent}{}", file_comment(code)),
            ),
            diagnostic,
        ));
    }
    out
}
