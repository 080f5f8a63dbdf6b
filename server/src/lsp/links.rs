//! `textDocument/documentLink` between a script and its test cases:
//! * in a case, `expected:` links to the script the case tests, each step's `- ` line to its
//!   `expected[i]` entry and back (`#L<line>` targets, which editors open at that line);
//! * in a ConfigMap manifest, each script key links to the bundled script of the same provider
//!   when the workspace has one (the file the key's text came from or goes to);
//! * in a script (a file or a ConfigMap's), a comment naming one of its cases (`weights.yaml`,
//!   `testdata/weights.yaml`) links to that case. (The other way from a script to its cases is
//!   "go to type definition" on what it reads of `obj`: see `type_definition.rs`.)

use std::path::Path;

use tower_lsp_server::ls_types::{DocumentLink, Position, Range, Uri};

use super::documents::path_uri;
use super::lua::{LuaView, views};
use super::project::ScriptId;
use super::runs::ScriptResults;
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
                    // No brackets: VS Code puts the tooltip in a Markdown link's label, where
                    // `expected[1]` broke the link ("[expected" and a link "1]: …").
                    tooltip: Some(format!("what step {n} must give (its expected entry)")),
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
    let views = views(path, text, &session.roots());
    for view in &views {
        if let Some(results) = session.results_for(&view.target.id) {
            out.extend(case_mentions(view, text, &index, &results));
        }
    }
    if path.extension().is_some_and(|e| e == "lua") {
        return out;
    }
    for view in &views {
        let (ScriptId::Embedded { key, .. }, Some(script)) =
            (&view.target.id, &view.target.bundled)
        else {
            continue;
        };
        let Some(at) = text.find(&format!("{key}:")) else {
            continue;
        };
        out.push(DocumentLink {
            range: index.range(text, at..at + key.len()),
            target: path_uri(script),
            tooltip: Some("the bundled script for this provider".into()),
            data: None,
        });
    }
    out
}

/// Links on the names of the script's cases in its comments.
fn case_mentions(
    view: &LuaView,
    host: &str,
    index: &LineIndex,
    results: &ScriptResults,
) -> Vec<DocumentLink> {
    let names: Vec<(String, &Path)> = results
        .cases
        .iter()
        .filter_map(|case| {
            let name = case.path.file_name()?.to_str()?.to_owned();
            Some((name, case.path.as_path()))
        })
        .collect();
    if names.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for comment in crate::analysis::lex::comments(&view.source) {
        let start = comment.start;
        let comment = &view.source[comment];
        for (name, case) in &names {
            for (at, _) in comment.match_indices(name.as_str()) {
                let end = at + name.len();
                // A whole file name: not the tail of a longer one (`old_weights.yaml`).
                let before = comment[..at].chars().next_back();
                let after = comment[end..].chars().next();
                if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '-' || c == '.')
                    || after.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '-')
                {
                    continue;
                }
                // `testdata/` in front belongs to the link too.
                let from = comment[..at]
                    .strip_suffix("testdata/")
                    .map_or(at, |kept| kept.len());
                out.push(DocumentLink {
                    range: view.host_range(host, index, start + from..start + end),
                    target: path_uri(case),
                    tooltip: Some(format!("the test case {name}")),
                    data: None,
                });
            }
        }
    }
    out
}
