//! Parameter-name inlay hints at calls of the script's own functions (`pair(a: 1, b: 2)`), off
//! unless the `inlayHints.parameterNames` setting turns them on.

use tower_lsp_server::ls_types::{InlayHint, InlayHintKind, InlayHintLabel, Range};

use super::lua::LuaView;
use super::text::LineIndex;
use crate::analysis::calls::parameter_hints;

pub fn hints(views: &[LuaView], host: &str, range: Range) -> Vec<InlayHint> {
    let index = LineIndex::new(host);
    let mut out = Vec::new();
    for view in views {
        for (at, name) in parameter_hints(view.parsed()) {
            let position = index.position(host, view.to_host(at));
            if position < range.start || position > range.end {
                continue;
            }
            out.push(InlayHint {
                position,
                label: InlayHintLabel::String(format!("{name}:")),
                kind: Some(InlayHintKind::PARAMETER),
                text_edits: None,
                tooltip: None,
                padding_left: None,
                padding_right: Some(true),
                data: None,
            });
        }
    }
    out
}
