//! The Lua side through the analysis layer: syntax and lint diagnostics, completion, hover
//! (with each case's value of an `obj` field), definition, references and the outline — for Lua
//! files and for scripts embedded in ConfigMap manifests (ranges mapped into the block scalar).

use kruise_lua_engine::script::ScriptFlavor;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use kruise_lua_engine::discovery;
use kruise_lua_engine::value::JsonValue;
use kruise_lua_engine::yaml::Span;
use tower_lsp_server::ls_types::{self as lsp, CompletionItemKind, Diagnostic, DiagnosticSeverity};

use super::diagnostics::{SOURCE, diagnostic, span_range, value_text};
use super::documents::MAX_ANALYSED_BYTES;
use super::parses::ParseCache;
use super::project::{EmbeddedMap, ScriptTarget, embedded_targets, lua_target};
use super::runs::ScriptResults;
use super::text::LineIndex;
use crate::analysis::{
    self, CompletionContext, CompletionKind, LintConfig, ObjPath, ParsedScript, PathSeg, Severity,
    SpecShape,
};
use crate::project::embedded;

/// A script as it sits in a document: the whole `.lua` file, or one embedded script.
#[derive(Debug, Clone)]
pub struct LuaView {
    pub target: ScriptTarget,
    pub source: String,
    pub map: Option<EmbeddedMap>,
    /// Its parse, made (or taken from the document's kept one) when a request first needs it.
    parse: OnceLock<Arc<ParsedScript>>,
    /// Where kept parses of an open document live, and the document's path.
    parses: Option<(Arc<ParseCache>, PathBuf)>,
}

impl LuaView {
    /// The script parsed and resolved: one parse per document version when the views came from
    /// [`views_sharing_parses`], else one per view.
    pub fn parsed(&self) -> &ParsedScript {
        self.parse.get_or_init(|| match &self.parses {
            Some((cache, path)) => cache.parsed(path, &self.source),
            None => Arc::new(ParsedScript::new(self.source.as_str())),
        })
    }

    pub fn flavor(&self) -> ScriptFlavor {
        self.target.flavor()
    }

    /// The document offset of a script offset.
    pub fn to_host(&self, offset: usize) -> usize {
        match &self.map {
            Some(map) => map.to_host(offset),
            None => offset,
        }
    }

    /// The script offset of a document offset, when it falls inside the script.
    pub fn to_script(&self, offset: usize) -> Option<usize> {
        match &self.map {
            Some(map) => map.to_script(offset),
            None => Some(offset),
        }
    }

    pub fn host_range(&self, host: &str, index: &LineIndex, range: Range<usize>) -> lsp::Range {
        index.range(host, self.to_host(range.start)..self.to_host(range.end))
    }

    /// The document edit that replaces script range `range` with `text`: for a ConfigMap
    /// script, `text` as its YAML string spells it (escaped in a double-quoted one, `'`
    /// doubled in a single-quoted one); `None` when that string cannot hold it (a line break
    /// in a plain or quoted one).
    pub fn host_edit(
        &self,
        host: &str,
        index: &LineIndex,
        range: Range<usize>,
        text: &str,
    ) -> Option<lsp::TextEdit> {
        let (range, text) = match &self.map {
            Some(map) => map.source_edit(range, text).ok()?,
            None => (range, text.to_owned()),
        };
        Some(lsp::TextEdit::new(index.range(host, range), text))
    }

    /// Whether text typed into the script lands in the document as typed, line breaks and
    /// indentation included (a `.lua` file or a literal `|` block; editors indent a multi-line
    /// insertion like the line it starts on, which is what such a block needs).
    pub fn takes_lines_as_typed(&self) -> bool {
        self.map.as_ref().is_none_or(EmbeddedMap::is_literal_block)
    }
}

/// The scripts of a document: one for a `.lua` file, one per script key of a manifest.
pub fn views(path: &Path, text: &str, roots: &[PathBuf]) -> Vec<LuaView> {
    if text.len() > MAX_ANALYSED_BYTES {
        return Vec::new();
    }
    if path.extension().is_some_and(|e| e == "lua") {
        return vec![LuaView {
            target: lua_target(path),
            source: text.to_string(),
            map: None,
            parse: OnceLock::new(),
            parses: None,
        }];
    }
    embedded_targets(path, text, roots)
        .into_iter()
        .map(|(target, script)| LuaView {
            map: Some(EmbeddedMap::new(&script)),
            source: script.source,
            target,
            parse: OnceLock::new(),
            parses: None,
        })
        .collect()
}

/// [`views`] whose parses are shared through `cache` with every request on the same version
/// of the document at `path` (kept only while it is open: see [`ParseCache`]).
pub fn views_sharing_parses(
    path: &Path,
    text: &str,
    roots: &[PathBuf],
    cache: &Arc<ParseCache>,
) -> Vec<LuaView> {
    let mut found = views(path, text, roots);
    for view in &mut found {
        view.parses = Some((cache.clone(), path.to_path_buf()));
    }
    found
}

/// The view holding a host offset, with the offset in its script.
pub fn view_at(views: &[LuaView], offset: usize) -> Option<(&LuaView, usize)> {
    views
        .iter()
        .find_map(|view| Some((view, view.to_script(offset)?)))
}

fn severity(severity: Severity) -> DiagnosticSeverity {
    match severity {
        Severity::Error => DiagnosticSeverity::ERROR,
        Severity::Warning => DiagnosticSeverity::WARNING,
        Severity::Information => DiagnosticSeverity::INFORMATION,
        Severity::Hint => DiagnosticSeverity::HINT,
    }
}

/// Syntax errors and lint findings of every script in a document (lint fixes ride along in
/// `data` for the code action). A manifest also gets its ConfigMap remarks.
pub fn diagnostics(
    path: &Path,
    host: &str,
    roots: &[PathBuf],
    parses: &Arc<ParseCache>,
    config: &LintConfig,
    spec_shape: &dyn Fn(&ScriptTarget) -> Option<SpecShape>,
) -> Vec<Diagnostic> {
    let index = LineIndex::new(host);
    let mut out = Vec::new();
    if host.len() > MAX_ANALYSED_BYTES {
        out.push(file_remark(
            lsp::Range::default(),
            DiagnosticSeverity::INFORMATION,
            format!(
                "this file ({} bytes) is larger than {} bytes: not analysed",
                host.len(),
                MAX_ANALYSED_BYTES
            ),
        ));
        return out;
    }
    let is_lua = path.extension().is_some_and(|e| e == "lua");
    if !is_lua && !super::project::looks_like_configmap(host) {
        return out; // a test case or other YAML: no Lua here
    }
    // A manifest's scripts as read, which a fix written into it must leave as they are.
    let mut embedded = Vec::new();
    if !is_lua {
        let range = |span: Option<Span>| {
            span.map_or(lsp::Range::default(), |s| span_range(host, &index, s))
        };
        match discovery::read_configmap(host) {
            Err(error) => out.push(file_remark(
                range(error.span),
                DiagnosticSeverity::ERROR,
                error.message,
            )),
            Ok(manifest) => {
                for note in manifest.notes {
                    out.push(file_remark(
                        range(note.span),
                        DiagnosticSeverity::WARNING,
                        note.message,
                    ));
                }
                embedded = manifest.scripts;
            }
        }
    }
    for view in views_sharing_parses(path, host, roots, parses) {
        let shape = spec_shape(&view.target);
        let configmap_kind = view.map.as_ref().and(view.target.kind.as_ref());
        let analysis = analysis::analyze_parsed(
            view.parsed(),
            view.flavor(),
            config,
            shape.as_ref(),
            configmap_kind,
        );
        for error in analysis.syntax_errors {
            out.push(diagnostic(
                view.host_range(host, &index, error.range),
                DiagnosticSeverity::ERROR,
                "syntax",
                error.message,
            ));
        }
        for finding in analysis.diagnostics {
            // The fix as the manifest must spell it (the same check as `lint --fix`): none
            // when it cannot be written into the script's YAML string exactly.
            let data = finding.fix.as_ref().and_then(|fix| {
                let in_manifest = view.map.as_ref().map(|map| (map, &embedded[..]));
                let (range, replacement) =
                    embedded::fix_edit(host, in_manifest, &view.source, fix).ok()?;
                Some(serde_json::json!({
                    "title": fix.title,
                    "range": index.range(host, range),
                    "replacement": replacement,
                }))
            });
            out.push(Diagnostic {
                data,
                ..diagnostic(
                    view.host_range(host, &index, finding.range),
                    severity(finding.severity),
                    finding.code,
                    finding.message,
                )
            });
        }
    }
    out
}

/// A remark about the file as a whole (no code: nothing to configure or fix).
fn file_remark(range: lsp::Range, severity: DiagnosticSeverity, message: String) -> Diagnostic {
    Diagnostic {
        range,
        severity: Some(severity),
        source: Some(SOURCE.into()),
        message,
        ..Diagnostic::default()
    }
}

/// The fast path after an edit: compiles the script with the same (patched) Lua 5.1 the engine
/// runs — about a millisecond where the full analysis takes tens on a 2,000-line script — and
/// returns its syntax error on its line, if any. The full analysis follows with exact ranges.
pub fn quick_syntax_check(source: &str) -> Option<(u32, String)> {
    // The engine's own compiler (the one `check` uses), so the verdict cannot disagree.
    let error = kruise_lua_engine::vm::compile(source.as_bytes()).err()?;
    Some((error.line.unwrap_or(1), error.message))
}

/// The quick check's diagnostic, on the whole line.
pub fn quick_syntax_diagnostic(source: &str) -> Option<Diagnostic> {
    let (line, message) = quick_syntax_check(source)?;
    let index = LineIndex::new(source);
    Some(diagnostic(
        super::text::line_range(source, &index, line),
        DiagnosticSeverity::ERROR,
        "syntax",
        message,
    ))
}

fn completion_kind(kind: CompletionKind) -> CompletionItemKind {
    match kind {
        CompletionKind::Field => CompletionItemKind::FIELD,
        CompletionKind::Method => CompletionItemKind::METHOD,
        CompletionKind::Function => CompletionItemKind::FUNCTION,
        CompletionKind::Variable => CompletionItemKind::VARIABLE,
        CompletionKind::Module => CompletionItemKind::MODULE,
        CompletionKind::Keyword => CompletionItemKind::KEYWORD,
        CompletionKind::Constant => CompletionItemKind::CONSTANT,
    }
}

pub fn completion(
    view: &LuaView,
    host: &str,
    offset: usize,
    spec_shape: Option<&SpecShape>,
) -> Vec<lsp::CompletionItem> {
    let index = LineIndex::new(host);
    let ctx = CompletionContext {
        flavor: view.flavor(),
        spec_shape,
    };
    analysis::complete(view.parsed(), offset, &ctx)
        .into_iter()
        .filter_map(|item| {
            let new_text = item.insert_text.as_deref().unwrap_or(&item.label);
            // An item whose text the script's YAML string cannot hold is not offered.
            let edit = view.host_edit(host, &index, item.replace_range.clone(), new_text)?;
            Some(lsp::CompletionItem {
                kind: Some(completion_kind(item.kind)),
                detail: item.detail,
                documentation: item.documentation.map(|value| {
                    lsp::Documentation::MarkupContent(lsp::MarkupContent {
                        kind: lsp::MarkupKind::Markdown,
                        value,
                    })
                }),
                text_edit: Some(lsp::CompletionTextEdit::Edit(edit)),
                label: item.label,
                ..lsp::CompletionItem::default()
            })
        })
        .collect()
}

/// The value at an `obj` path in a step's obj (`None` when absent or not static).
fn value_at<'a>(obj: &'a JsonValue, path: &ObjPath) -> Option<&'a JsonValue> {
    let mut value = obj;
    for seg in &path.0 {
        value = match (seg, value) {
            (PathSeg::Key(key), JsonValue::Object(map)) => map.get(key)?,
            (PathSeg::Index(i), JsonValue::Array(items)) => {
                items.get((*i as usize).checked_sub(1)?)?
            }
            _ => return None,
        };
    }
    Some(value)
}

/// `canaryWeight — case: -1, -1, 50` lines: the value of an obj path at every step of every case.
pub fn values_per_case(path: &ObjPath, results: &ScriptResults) -> Option<String> {
    if path.0.iter().any(|s| matches!(s, PathSeg::Any)) || path.0.is_empty() {
        return None;
    }
    let name = path.to_string();
    let mut lines = Vec::new();
    for case in &results.cases {
        let Ok(parsed) = &case.case else { continue };
        let values: Vec<String> = parsed
            .steps
            .iter()
            .map(|step| {
                let obj = results.target.step_obj(&step.obj);
                match value_at(&obj, path) {
                    Some(JsonValue::Null) | None => "nil".to_string(),
                    Some(value) => value_text(Some(value)),
                }
            })
            .collect();
        lines.push(format!(
            "- `{name}` — {}: {}",
            case.name(),
            values.join(", ")
        ));
    }
    (!lines.is_empty()).then(|| lines.join("\n"))
}

pub fn hover(
    view: &LuaView,
    host: &str,
    offset: usize,
    spec_shape: Option<&SpecShape>,
    results: Option<&ScriptResults>,
) -> Option<lsp::Hover> {
    let found = analysis::hover(view.parsed(), offset, view.flavor(), spec_shape)?;
    let mut contents = found.contents;
    if let (Some(path), Some(results)) = (&found.obj_path, results)
        && let Some(values) = values_per_case(path, results)
    {
        contents.push_str("\n\n**Per case and step:**\n");
        contents.push_str(&values);
    }
    let index = LineIndex::new(host);
    Some(lsp::Hover {
        contents: lsp::HoverContents::Markup(lsp::MarkupContent {
            kind: lsp::MarkupKind::Markdown,
            value: contents,
        }),
        range: Some(view.host_range(host, &index, found.range)),
    })
}

pub fn definition(view: &LuaView, host: &str, offset: usize) -> Option<lsp::Range> {
    let range = analysis::definition(view.parsed(), offset)?;
    Some(view.host_range(host, &LineIndex::new(host), range))
}

pub fn references(
    view: &LuaView,
    host: &str,
    offset: usize,
    include_declaration: bool,
) -> Vec<lsp::Range> {
    let index = LineIndex::new(host);
    analysis::references(view.parsed(), offset, include_declaration)
        .into_iter()
        .map(|r| view.host_range(host, &index, r))
        .collect()
}

#[allow(deprecated)] // DocumentSymbol::deprecated is a required field
pub fn document_symbols(views: &[LuaView], host: &str) -> Vec<lsp::DocumentSymbol> {
    let index = LineIndex::new(host);
    fn convert(
        view: &LuaView,
        host: &str,
        index: &LineIndex,
        symbol: analysis::DocumentSymbol,
    ) -> lsp::DocumentSymbol {
        lsp::DocumentSymbol {
            name: symbol.name,
            detail: symbol.detail,
            kind: match symbol.kind {
                analysis::SymbolKind::Function => lsp::SymbolKind::FUNCTION,
                analysis::SymbolKind::Variable => lsp::SymbolKind::VARIABLE,
            },
            tags: None,
            deprecated: None,
            range: view.host_range(host, index, symbol.range),
            selection_range: view.host_range(host, index, symbol.selection_range),
            children: Some(
                symbol
                    .children
                    .into_iter()
                    .map(|c| convert(view, host, index, c))
                    .collect(),
            ),
        }
    }
    let mut out = Vec::new();
    for view in views {
        let symbols: Vec<lsp::DocumentSymbol> = analysis::document_symbols(view.parsed())
            .into_iter()
            .map(|s| convert(view, host, &index, s))
            .collect();
        match &view.target.id {
            super::project::ScriptId::Embedded { key, .. } => {
                let whole = view.host_range(host, &index, 0..view.source.len());
                out.push(lsp::DocumentSymbol {
                    name: key.clone(),
                    detail: Some("embedded script".into()),
                    kind: lsp::SymbolKind::MODULE,
                    tags: None,
                    deprecated: None,
                    range: whole,
                    selection_range: lsp::Range::new(whole.start, whole.start),
                    children: Some(symbols),
                });
            }
            _ => out.extend(symbols),
        }
    }
    out
}

/// The `obj` a step gets, as Lua source (`local obj = {...}`), for running it by hand.
pub fn obj_as_lua(obj: &JsonValue) -> String {
    format!("local obj = {}\n", crate::lua_source::to_lua(obj, 0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower_lsp_server::ls_types::NumberOrString;

    const MANIFEST: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kruise-rollout-configuration\ndata:\n  lua.traffic.routing.Route.example.io: |\n    local w = obj.canaryweight\n    return obj.data\n";

    #[test]
    fn embedded_lint_lands_in_the_block_scalar() {
        let diags = diagnostics(
            Path::new("/m/cm.yaml"),
            MANIFEST,
            &[],
            &Default::default(),
            &LintConfig::default(),
            &|_| None,
        );
        let kl001 = diags
            .iter()
            .find(|d| d.code == Some(NumberOrString::String("KL001".into())))
            .expect("unknown obj field");
        assert_eq!(kl001.range.start, lsp::Position::new(6, 18));
        assert_eq!(kl001.range.end, lsp::Position::new(6, 30));
    }

    #[test]
    fn embedded_lint_and_its_fix_land_in_a_double_quoted_script() {
        // QA's manifest: the quoted Route script's typo is on line 7 (0-based 6); the Other
        // script below holds the same text in a string literal, which must not be touched.
        let manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kruise-rollout-configuration\ndata:\n  x: 1\n  lua.traffic.routing.Route.example.io: \"\\n\\n  local w = obj.canaryweight\\nreturn {spec = {w = w}}\\n\"\n  lua.traffic.routing.Other.example.io: |\n    local s =\"obj.canaryweight\"\n    return {spec = {s = s}}\n";
        let diags = diagnostics(
            Path::new("/m/cm.yaml"),
            manifest,
            &[],
            &Default::default(),
            &LintConfig::default(),
            &|_| None,
        );
        let kl001: Vec<&Diagnostic> = diags
            .iter()
            .filter(|d| d.code == Some(NumberOrString::String("KL001".into())))
            .collect();
        assert_eq!(kl001.len(), 1, "{diags:?}");
        let column = manifest
            .lines()
            .nth(6)
            .unwrap()
            .find("canaryweight")
            .unwrap() as u32;
        assert_eq!(kl001[0].range.start, lsp::Position::new(6, column));
        assert_eq!(kl001[0].range.end, lsp::Position::new(6, column + 12));
        let data = kl001[0].data.as_ref().expect("a fix");
        assert_eq!(data["replacement"], "canaryWeight");
        assert_eq!(data["range"]["start"]["line"], 6);
        assert_eq!(data["range"]["start"]["character"], column);
    }

    #[test]
    fn configmap_script_for_a_bundled_provider_is_flagged() {
        let manifest = MANIFEST.replace("Route.example.io", "VirtualService.networking.istio.io");
        let codes = |text: &str, path: &str| -> Vec<Option<NumberOrString>> {
            diagnostics(
                Path::new(path),
                text,
                &[],
                &Default::default(),
                &LintConfig::default(),
                &|_| None,
            )
            .into_iter()
            .map(|d| d.code)
            .collect()
        };
        let kl011 = Some(NumberOrString::String("KL011".into()));
        assert!(codes(&manifest, "/m/cm.yaml").contains(&kl011));
        assert!(!codes(MANIFEST, "/m/cm.yaml").contains(&kl011));
        // The bundled script itself, as a file, is what Kruise runs: nothing to say.
        let script = "return obj.data\n";
        assert!(
            !codes(
                script,
                "/l/networking.istio.io/VirtualService/trafficRouting.lua"
            )
            .contains(&kl011)
        );
    }

    #[test]
    fn syntax_errors_in_lua_files() {
        let diags = diagnostics(
            Path::new("/x/trafficRouting.lua"),
            "local x = \nreturn obj.data\n",
            &[],
            &Default::default(),
            &LintConfig::default(),
            &|_| None,
        );
        assert!(
            diags
                .iter()
                .any(|d| d.code == Some(NumberOrString::String("syntax".into()))),
            "{diags:?}"
        );
    }

    #[test]
    fn completion_in_embedded_script_maps_offsets() {
        let host = MANIFEST.replace("obj.canaryweight", "obj.can");
        let views = views(Path::new("/m/cm.yaml"), &host, &[]);
        let offset = host.find("obj.can").unwrap() + 7;
        let (view, script_offset) = view_at(&views, offset).unwrap();
        let items = completion(view, &host, script_offset, None);
        let item = items
            .iter()
            .find(|i| i.label == "canaryWeight")
            .expect("canaryWeight");
        let Some(lsp::CompletionTextEdit::Edit(edit)) = &item.text_edit else {
            panic!()
        };
        assert_eq!(edit.range.start, lsp::Position::new(6, 18));
    }

    /// Completion text goes into a double-quoted ConfigMap script escaped, as the YAML string
    /// needs (`["x-y"]` is written `[\"x-y\"]`), and no snippet is offered there.
    #[test]
    fn completion_in_a_double_quoted_script_is_escaped() {
        let host = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kruise-rollout-configuration\ndata:\n  lua.traffic.routing.Route.example.io: \"local t = {[\\\"x-y\\\"] = 1}\\nreturn t.\"\n";
        let views = views(Path::new("/m/cm.yaml"), host, &[]);
        assert_eq!(views[0].source, "local t = {[\"x-y\"] = 1}\nreturn t.");
        let offset = host.find("t.\"").unwrap() + 2;
        let (view, script_offset) = view_at(&views, offset).unwrap();
        let items = completion(view, host, script_offset, None);
        let item = items.iter().find(|i| i.label == "x-y").expect("x-y");
        let Some(lsp::CompletionTextEdit::Edit(edit)) = &item.text_edit else {
            panic!()
        };
        assert_eq!(edit.new_text, "[\\\"x-y\\\"]");
        assert!(super::super::snippets::items(view, host, script_offset).is_empty());
    }

    #[test]
    fn quick_check_finds_the_line() {
        assert_eq!(quick_syntax_check("local a = 1\nreturn a\n"), None);
        let (line, message) = quick_syntax_check("local a = 1\nlocal b = = 2\nreturn a\n").unwrap();
        assert_eq!(line, 2);
        assert!(message.contains("<string>:2:"), "{message}");
        let d = quick_syntax_diagnostic("x = 1\n  y = = 2\n").unwrap();
        assert_eq!(d.range.start, lsp::Position::new(1, 2));
    }

    #[test]
    fn obj_renders_as_lua() {
        let obj = JsonValue::parse_go_interface(
            br#"{"canaryWeight":20,"data":{"spec":{"a-b":[1,"x"]}},"matches":null}"#,
        )
        .unwrap();
        let lua = obj_as_lua(&obj);
        assert_eq!(
            lua,
            "local obj = {\n  canaryWeight = 20,\n  data = {\n    spec = {\n      [\"a-b\"] = {\n        1,\n        \"x\",\n      },\n    },\n  },\n}\n"
        );
    }
}
