//! The editing requests on the Lua side, in LSP terms: rename, semantic tokens (full and delta,
//! with the last result of each document kept for deltas), signature help and workspace
//! symbols — for Lua files and scripts embedded in ConfigMap manifests alike.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use tower_lsp_server::ls_types::{self as lsp, SemanticToken, SemanticTokenModifier};

use super::lua::LuaView;
use super::project::{ScriptId, workspace_scripts};
use super::session::Session;
use super::text::LineIndex;
use crate::analysis::{self, highlight};

/// Where a rename would happen, or why not (the client shows the message).
pub fn prepare_rename(
    view: &LuaView,
    host: &str,
    offset: usize,
) -> Result<lsp::PrepareRenameResponse, String> {
    let target = analysis::rename::prepare_rename(view.parsed(), offset)?;
    Ok(lsp::PrepareRenameResponse::RangeWithPlaceholder {
        range: view.host_range(host, &LineIndex::new(host), target.range),
        placeholder: target.name,
    })
}

/// The edits of a rename in one document.
pub fn rename(
    view: &LuaView,
    host: &str,
    offset: usize,
    new_name: &str,
) -> Result<Vec<lsp::TextEdit>, String> {
    let index = LineIndex::new(host);
    Ok(analysis::rename::rename(view.parsed(), offset, new_name)?
        .into_iter()
        .map(|r| lsp::TextEdit::new(view.host_range(host, &index, r), new_name.to_string()))
        .collect())
}

/// The token types and modifiers, in the order [`highlight`] numbers them.
pub fn legend() -> lsp::SemanticTokensLegend {
    lsp::SemanticTokensLegend {
        token_types: highlight::TokenKind::ALL
            .iter()
            .map(|kind| match kind {
                highlight::TokenKind::Namespace => lsp::SemanticTokenType::NAMESPACE,
                highlight::TokenKind::Variable => lsp::SemanticTokenType::VARIABLE,
                highlight::TokenKind::Parameter => lsp::SemanticTokenType::PARAMETER,
                highlight::TokenKind::Function => lsp::SemanticTokenType::FUNCTION,
                highlight::TokenKind::Property => lsp::SemanticTokenType::PROPERTY,
            })
            .collect(),
        token_modifiers: highlight::modifier::NAMES
            .iter()
            .map(|name| SemanticTokenModifier::new(name))
            .collect(),
    }
}

/// The semantic tokens of every script of a document, encoded relative to each other.
pub fn semantic_tokens(views: &[LuaView], host: &str) -> Vec<SemanticToken> {
    let index = LineIndex::new(host);
    let mut absolute: Vec<(lsp::Position, u32, u32, u32)> = Vec::new();
    for view in views {
        for token in highlight::tokens(view.parsed()) {
            let range = view.host_range(host, &index, token.range);
            if range.start.line != range.end.line {
                continue; // names are on one line; a mapping across lines is not a name
            }
            let kind = highlight::TokenKind::ALL
                .iter()
                .position(|k| *k == token.kind)
                .unwrap_or(0) as u32;
            absolute.push((
                range.start,
                range.end.character - range.start.character,
                kind,
                token.modifiers,
            ));
        }
    }
    absolute.sort_by_key(|(p, ..)| (p.line, p.character));
    let mut out = Vec::with_capacity(absolute.len());
    let mut last = lsp::Position::new(0, 0);
    for (start, length, kind, modifiers) in absolute {
        let delta_line = start.line - last.line;
        let delta_start = if delta_line == 0 {
            start.character - last.character
        } else {
            start.character
        };
        out.push(SemanticToken {
            delta_line,
            delta_start,
            length,
            token_type: kind,
            token_modifiers_bitset: modifiers,
        });
        last = start;
    }
    out
}

/// The last tokens sent for each document, for `semanticTokens/full/delta`.
#[derive(Default)]
pub struct TokenCache {
    last: Mutex<HashMap<PathBuf, (String, Vec<SemanticToken>)>>,
    next_id: std::sync::atomic::AtomicU64,
}

impl TokenCache {
    /// Remembers `tokens` as the document's latest result; returns its id.
    pub fn store(&self, path: &Path, tokens: Vec<SemanticToken>) -> String {
        let id = self
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            .to_string();
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        last.insert(path.to_path_buf(), (id.clone(), tokens));
        id
    }

    /// The edit from the result `previous` to `tokens` (None when `previous` is not the last
    /// result sent: the client then gets the full list), and the new result's id.
    pub fn delta(
        &self,
        path: &Path,
        previous: &str,
        tokens: Vec<SemanticToken>,
    ) -> lsp::SemanticTokensFullDeltaResult {
        let edit = {
            let last = self.last.lock().unwrap_or_else(|e| e.into_inner());
            last.get(path)
                .filter(|(id, _)| id == previous)
                .map(|(_, old)| token_edit(old, &tokens))
        };
        let data = tokens.clone();
        let result_id = Some(self.store(path, tokens));
        match edit {
            Some(edits) => {
                lsp::SemanticTokensFullDeltaResult::TokensDelta(lsp::SemanticTokensDelta {
                    result_id,
                    edits,
                })
            }
            None => {
                lsp::SemanticTokensFullDeltaResult::Tokens(lsp::SemanticTokens { result_id, data })
            }
        }
    }

    pub fn forget(&self, path: &Path) {
        self.last
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(path);
    }
}

/// One edit replacing what differs between the common prefix and suffix (positions in the
/// flat integer array: five per token).
fn token_edit(old: &[SemanticToken], new: &[SemanticToken]) -> Vec<lsp::SemanticTokensEdit> {
    let prefix = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let suffix = old[prefix..]
        .iter()
        .rev()
        .zip(new[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let deleted = old.len() - prefix - suffix;
    let inserted = &new[prefix..new.len() - suffix];
    if deleted == 0 && inserted.is_empty() {
        return Vec::new();
    }
    vec![lsp::SemanticTokensEdit {
        start: (prefix * 5) as u32,
        delete_count: (deleted * 5) as u32,
        data: Some(inserted.to_vec()),
    }]
}

pub fn signature_help(view: &LuaView, offset: usize) -> Option<lsp::SignatureHelp> {
    let found = analysis::signature_help(view.parsed(), offset)?;
    // Parameter labels as offsets into the label, in the protocol's units.
    let utf16 = |byte: usize| super::text::units(&found.label[..byte]);
    let parameters = found
        .parameters
        .iter()
        .map(|r| lsp::ParameterInformation {
            label: lsp::ParameterLabel::LabelOffsets([utf16(r.start), utf16(r.end)]),
            documentation: None,
        })
        .collect();
    Some(lsp::SignatureHelp {
        signatures: vec![lsp::SignatureInformation {
            label: found.label,
            documentation: found.documentation.map(|value| {
                lsp::Documentation::MarkupContent(lsp::MarkupContent {
                    kind: lsp::MarkupKind::Markdown,
                    value,
                })
            }),
            parameters: Some(parameters),
            active_parameter: Some(found.active_parameter as u32),
        }],
        active_signature: Some(0),
        active_parameter: Some(found.active_parameter as u32),
    })
}

/// At most this many workspace symbols per answer (clients filter further as the user types).
const MAX_WORKSPACE_SYMBOLS: usize = 500;

/// Whether every character of `query` appears in `name` in order, ignoring case.
fn matches_query(name: &str, query: &str) -> bool {
    let mut chars = name.chars().flat_map(char::to_lowercase);
    query
        .chars()
        .flat_map(char::to_lowercase)
        .all(|q| chars.any(|c| c == q))
}

/// Functions and top-level locals of every script of the workspace (Lua files and the scripts
/// embedded in ConfigMap manifests, under the workspace folders or open) whose name matches
/// `query`.
#[allow(deprecated)] // SymbolInformation::deprecated is a required field
pub fn workspace_symbols(session: &Session, query: &str) -> Vec<lsp::SymbolInformation> {
    let roots = session.roots();
    let mut hosts: Vec<PathBuf> = workspace_scripts(&roots, &session.docs)
        .into_iter()
        .map(|t| t.id.host().to_path_buf())
        .collect();
    // Open documents outside the folders too (a manifest opened from elsewhere); `views` finds
    // no Lua in other files.
    hosts.extend(session.docs.open_paths());
    hosts.sort();
    hosts.dedup();
    let mut out = Vec::new();
    for host in hosts {
        let Some(text) = session.docs.text(&host) else {
            continue;
        };
        let Some(uri) = super::documents::path_uri(&host) else {
            continue;
        };
        let index = LineIndex::new(&text);
        for view in super::lua::views_sharing_parses(&host, &text, &roots, &session.docs.parses) {
            let container = match &view.target.id {
                ScriptId::Embedded { key, .. } => key.clone(),
                ScriptId::File(path) => kind_folder(path),
            };
            let mut pending = analysis::document_symbols(view.parsed());
            while let Some(symbol) = pending.pop() {
                if matches_query(&symbol.name, query) {
                    out.push(lsp::SymbolInformation {
                        name: symbol.name.clone(),
                        kind: match symbol.kind {
                            analysis::SymbolKind::Function => lsp::SymbolKind::FUNCTION,
                            analysis::SymbolKind::Variable => lsp::SymbolKind::VARIABLE,
                        },
                        tags: None,
                        deprecated: None,
                        location: lsp::Location::new(
                            uri.clone(),
                            view.host_range(&text, &index, symbol.selection_range.clone()),
                        ),
                        container_name: Some(container.clone()),
                    });
                }
                pending.extend(symbol.children);
            }
            if out.len() >= MAX_WORKSPACE_SYMBOLS {
                out.truncate(MAX_WORKSPACE_SYMBOLS);
                return out;
            }
        }
    }
    out
}

/// `networking.istio.io/VirtualService` for `.../networking.istio.io/VirtualService/x.lua`.
fn kind_folder(path: &Path) -> String {
    let parts: Vec<String> = path
        .parent()
        .into_iter()
        .flat_map(|p| p.iter().rev().take(2))
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    parts.into_iter().rev().collect::<Vec<_>>().join("/")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lsp::lua::views;

    fn token(line: u32, start: u32) -> SemanticToken {
        SemanticToken {
            delta_line: line,
            delta_start: start,
            length: 1,
            token_type: 0,
            token_modifiers_bitset: 0,
        }
    }

    #[test]
    fn deltas_replace_only_what_changed() {
        let cache = TokenCache::default();
        let path = Path::new("/s.lua");
        let old = vec![token(0, 1), token(1, 2), token(1, 3)];
        let id = cache.store(path, old);
        let new = vec![token(0, 1), token(2, 9), token(1, 3)];
        let lsp::SemanticTokensFullDeltaResult::TokensDelta(delta) =
            cache.delta(path, &id, new.clone())
        else {
            panic!("a delta from the last result")
        };
        assert_eq!(delta.edits.len(), 1);
        assert_eq!(delta.edits[0].start, 5);
        assert_eq!(delta.edits[0].delete_count, 5);
        assert_eq!(delta.edits[0].data.as_deref(), Some(&[token(2, 9)][..]));
        // An unknown previous id: the whole list.
        assert!(matches!(
            cache.delta(path, "nope", new),
            lsp::SemanticTokensFullDeltaResult::Tokens(_)
        ));
    }

    #[test]
    fn tokens_of_an_embedded_script_sit_in_the_manifest() {
        let manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kruise-rollout-configuration\ndata:\n  lua.traffic.routing.Route.example.io: |\n    local w = obj.canaryWeight\n    return obj.data\n";
        let views = views(Path::new("/m/cm.yaml"), manifest, &[]);
        let tokens = semantic_tokens(&views, manifest);
        // `w` on line 6 at column 10 (the block scalar's indentation counted).
        assert_eq!((tokens[0].delta_line, tokens[0].delta_start), (6, 10));
        assert_eq!(tokens[1].delta_start, 4, "`obj` after `w = `");
        assert_eq!(tokens.len(), 5, "w obj canaryWeight / obj data");
    }

    #[test]
    fn query_matching_is_a_case_insensitive_subsequence() {
        assert!(matches_query("route_weights", "RW"));
        assert!(matches_query("anything", ""));
        assert!(!matches_query("route", "rx"));
    }
}
