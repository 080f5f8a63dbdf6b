//! `textDocument/documentLink` between a script and its test cases:
//! * in a case, `expected:` links to the script the case tests, each step's `- ` line to its
//!   `expected[i]` entry and back (`#L<line>` targets, which editors open at that line);
//! * in a ConfigMap manifest, each script key links to the bundled script of the same provider
//!   when the workspace has one (the file the key's text came from or goes to).

use std::path::{Path, PathBuf};

use kruise_lua_engine::discovery::CUSTOM_SCRIPT_NAME;
use kruise_lua_engine::script::ScriptKind;
use tower_lsp_server::ls_types::{DocumentLink, Position, Range, Uri};

use super::documents::path_uri;
use super::lua::views;
use super::project::ScriptId;
use super::session::Session;
use super::text::LineIndex;

/// `uri#L<line>` (1-based line).
fn at_line(path: &Path, line: u32) -> Option<Uri> {
    let uri = path_uri(path)?;
    format!("{}#L{}", uri.as_str(), line + 1).parse().ok()
}

/// The range of the first line of a span starting at `offset`, from its first non-blank
/// character to the line's end.
fn line_of(text: &str, index: &LineIndex, offset: usize) -> Range {
    let start = index.position(text, offset);
    let line_end = text[offset.min(text.len())..]
        .find('\n')
        .map_or(text.len(), |i| offset + i);
    Range::new(start, index.position(text, line_end))
}

pub fn links(session: &Session, path: &Path, text: &str) -> Vec<DocumentLink> {
    let mut out = Vec::new();
    let index = LineIndex::new(text);
    if let Some((results, i)) = session.case_result(path) {
        let case = &results.cases[i];
        if let ScriptId::File(script) = &results.target.id
            && let Some(line) = text.lines().position(|l| l.trim_end() == "expected:")
            && let Some(target) = path_uri(script)
        {
            let line = line as u32;
            out.push(DocumentLink {
                range: Range::new(Position::new(line, 0), Position::new(line, 8)),
                target: Some(target),
                tooltip: Some(format!(
                    "the script these cases test: {}",
                    results.target.id.display()
                )),
                data: None,
            });
        }
        if case.text == text {
            for step in &case.steps {
                let (Some(step_span), Some(expected_span)) = (step.step_span, step.expected_span)
                else {
                    continue;
                };
                let step_range = line_of(text, &index, step_span.start.offset);
                let expected_range = line_of(text, &index, expected_span.start.offset);
                let n = step.index + 1;
                out.push(DocumentLink {
                    range: step_range,
                    target: at_line(path, expected_range.start.line),
                    tooltip: Some(format!("expected[{}]: what step {n} must give", step.index)),
                    data: None,
                });
                out.push(DocumentLink {
                    range: expected_range,
                    target: at_line(path, step_range.start.line),
                    tooltip: Some(format!("step {n} of the rollout, which this entry checks")),
                    data: None,
                });
            }
        }
        return out;
    }
    if path.extension().is_some_and(|e| e == "lua") {
        return out;
    }
    for view in views(path, text, &session.roots()) {
        let (ScriptId::Embedded { key, .. }, Some(kind), Some(testdata)) =
            (&view.target.id, &view.target.kind, &view.target.testdata)
        else {
            continue;
        };
        let Some(script) = bundled_script(kind, testdata) else {
            continue;
        };
        let Some(at) = text.find(&format!("{key}:")) else {
            continue;
        };
        out.push(DocumentLink {
            range: index.range(text, at..at + key.len()),
            target: path_uri(&script),
            tooltip: Some("the bundled script for this provider".into()),
            data: None,
        });
    }
    out
}

/// The bundled script next to a provider's cases folder, if it exists.
fn bundled_script(kind: &ScriptKind, testdata: &Path) -> Option<PathBuf> {
    let script = match kind {
        ScriptKind::Custom { .. } => testdata.parent()?.join(CUSTOM_SCRIPT_NAME),
        ScriptKind::Ingress { class } => testdata.parent()?.parent()?.join(format!("{class}.lua")),
    };
    script.is_file().then_some(script)
}
