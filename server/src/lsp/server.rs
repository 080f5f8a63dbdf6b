//! The protocol edge: `LanguageServer` methods turn LSP requests into calls on the session and
//! the feature modules. Every request runs on a blocking thread under panic protection, so a bad
//! input costs one failed request, never the server, and never stalls the message loop.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;
use tower_lsp_server::{Client, LanguageServer};

use super::commands;
use super::documents::{MAX_ANALYSED_BYTES, uri_path};
use super::editing::{self, TokenCache};
use super::lua;
use super::session::{ClientCaps, Session, Settings, write};
use super::text::{LineIndex, apply_changes};
use super::{
    call_hierarchy, case_view, folding, format, highlights, links, lint_actions, param_hints,
    script_lens, selection, snippets, step_values, type_definition, watcher,
};

/// The stack of a request's thread: full_moon's parser, the walks over its AST and the AST's
/// drop recurse once per level of nesting, which the analysis bounds
/// (`analysis::shape_limits`, 200 levels of blocks); reserved, not committed, memory.
const REQUEST_STACK: usize = 64 << 20;
/// How long a request may work before it is answered without a result (the analyses are linear
/// in the file; this is the safety net for what is not).
const REQUEST_BUDGET: std::time::Duration = std::time::Duration::from_secs(20);

pub struct Backend {
    session: Arc<Session>,
    watcher: Mutex<Option<notify::RecommendedWatcher>>,
    /// The last semantic tokens of each document, for deltas.
    tokens: Arc<TokenCache>,
}

impl Backend {
    pub fn new(client: Client) -> Backend {
        Backend {
            session: Arc::new(Session::new(client)),
            watcher: Mutex::new(None),
            tokens: Arc::default(),
        }
    }

    /// Runs `f` on a thread of its own with [`REQUEST_STACK`]; a panic is logged and answered
    /// with `default`, and so is a request still working after [`REQUEST_BUDGET`] (its thread
    /// finishes unobserved; the server answers the next requests meanwhile).
    async fn guarded<T: Send + 'static>(
        &self,
        what: &str,
        default: T,
        f: impl FnOnce(Arc<Session>) -> T + Send + 'static,
    ) -> T {
        let session = self.session.clone();
        let (answer, answered) = tokio::sync::oneshot::channel();
        let spawned = std::thread::Builder::new()
            .name(format!("kruise-lua {what}"))
            .stack_size(REQUEST_STACK)
            .spawn(move || {
                let started = std::time::Instant::now();
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(session)));
                let _ = answer.send(result.map_err(|panic| {
                    panic
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| panic.downcast_ref::<String>().cloned())
                        .unwrap_or_default()
                }));
                // Long work is work on a large file, whose parse leaves its memory in this
                // thread's arena; answered first, so the client does not wait for the trim.
                if started.elapsed() >= crate::freed_memory::HEAVY_WORK {
                    crate::freed_memory::release();
                }
            });
        let problem = match spawned {
            Err(e) => format!("{what} failed: no thread for it: {e}"),
            Ok(_) => match tokio::time::timeout(REQUEST_BUDGET, answered).await {
                Ok(Ok(Ok(value))) => return value,
                Ok(Ok(Err(panic))) => format!("{what} failed: {panic}"),
                Ok(Err(_)) => format!("{what} failed"),
                Err(_) => format!(
                    "{what} took longer than {} s: answered without a result",
                    REQUEST_BUDGET.as_secs()
                ),
            },
        };
        self.session
            .client
            .log_message(MessageType::ERROR, problem)
            .await;
        default
    }

    /// Runs a notification's work; a panic is logged instead of taking the server down.
    fn shielded(&self, what: &str, f: impl FnOnce()) {
        if let Err(panic) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
            let detail = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            let client = self.session.client.clone();
            let message = format!("{what} failed: {detail}");
            tokio::spawn(async move { client.log_message(MessageType::ERROR, message).await });
        }
    }

    /// Applies new client settings; returns whether they changed anything.
    fn apply_settings(&self, value: &Value) -> bool {
        let (settings, problems) = Settings::from_json(value);
        let changed = {
            let mut current = write(&self.session.settings);
            let changed = *current != settings;
            *current = settings;
            changed
        };
        if !problems.is_empty() {
            let client = self.session.client.clone();
            let message = format!("kruise-lua settings: {}", problems.join("; "));
            tokio::spawn(async move { client.show_message(MessageType::WARNING, message).await });
        }
        changed
    }
}

/// Position → (path, text, byte offset) of an open or on-disk document.
fn locate(session: &Session, uri: &Uri, position: Position) -> Option<(PathBuf, String, usize)> {
    let path = uri_path(uri);
    let text = session.docs.text(&path)?;
    if text.len() > MAX_ANALYSED_BYTES {
        return None; // see MAX_ANALYSED_BYTES
    }
    let offset = LineIndex::new(&text).offset(&text, position);
    Some((path, text, offset))
}

/// Whether the client asked for pull diagnostics (`"pullDiagnostics": true` in its
/// `initializationOptions`, bare or under `kruiseLua`). Not by default: Neovim and VS Code keep
/// pulled and published diagnostics apart, so advertising both shows every problem twice.
fn wants_pull_diagnostics(options: Option<&Value>) -> bool {
    let Some(options) = options else {
        return false;
    };
    let options = options.get("kruiseLua").unwrap_or(options);
    options.get("pullDiagnostics").and_then(Value::as_bool) == Some(true)
}

/// A request refused for a reason the user should read (shown by the client).
fn request_failed(message: impl Into<String>) -> tower_lsp_server::jsonrpc::Error {
    tower_lsp_server::jsonrpc::Error {
        code: tower_lsp_server::jsonrpc::ErrorCode::InvalidParams,
        message: message.into().into(),
        data: None,
    }
}

/// StyLua's edits for a Lua file (a manifest's embedded scripts are left alone: the YAML
/// around them is not Lua). A file with syntax errors or a broken configuration is an error.
fn format_document(
    session: &Session,
    uri: &Uri,
    range: Option<Range>,
) -> Result<Option<Vec<TextEdit>>> {
    let path = uri_path(uri);
    if path.extension().is_none_or(|e| e != "lua") {
        return Ok(None);
    }
    let Some(text) = session.docs.text(&path) else {
        return Ok(None);
    };
    if text.len() > MAX_ANALYSED_BYTES {
        return Err(request_failed(format!(
            "not formatted: larger than {MAX_ANALYSED_BYTES} bytes"
        )));
    }
    let index = LineIndex::new(&text);
    let range = range.map(|r| index.offset(&text, r.start)..index.offset(&text, r.end));
    let config = format::config_for(&path).map_err(request_failed)?;
    let parsed = session.docs.parses.parsed(&path, &text);
    let edits = format::format(&parsed, config, range).map_err(request_failed)?;
    Ok(Some(
        edits
            .into_iter()
            .map(|(r, new_text)| TextEdit::new(index.range(&text, r), new_text))
            .collect(),
    ))
}

/// The semantic tokens of an open or on-disk document holding Lua.
fn document_tokens(session: &Session, path: &std::path::Path) -> Option<Vec<SemanticToken>> {
    let text = session.docs.text(path)?;
    let views = session.views(path, &text);
    if views.is_empty() {
        return None;
    }
    Some(editing::semantic_tokens(&views, &text))
}

impl LanguageServer for Backend {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        let mut roots: Vec<PathBuf> = params
            .workspace_folders
            .iter()
            .flatten()
            .filter_map(|f| f.uri.to_file_path().map(|p| p.into_owned()))
            .collect();
        #[allow(deprecated)] // rootUri: older clients send only this
        if roots.is_empty()
            && let Some(root) = params.root_uri.as_ref().and_then(|u| u.to_file_path())
        {
            roots.push(root.into_owned());
        }
        *write(&self.session.roots) = roots;
        let workspace = params.capabilities.workspace.as_ref();
        *write(&self.session.caps) = ClientCaps {
            apply_edit: workspace.and_then(|w| w.apply_edit).unwrap_or(false),
            document_changes: workspace
                .and_then(|w| w.workspace_edit.as_ref())
                .and_then(|e| e.document_changes)
                .unwrap_or(false),
            code_lens_refresh: workspace
                .and_then(|w| w.code_lens.as_ref())
                .and_then(|c| c.refresh_support)
                .unwrap_or(false),
            // Only a client that can pull (`textDocument.diagnostic`) gets pull diagnostics.
            pull_diagnostics: wants_pull_diagnostics(params.initialization_options.as_ref())
                && params
                    .capabilities
                    .text_document
                    .as_ref()
                    .is_some_and(|t| t.diagnostic.is_some()),
            diagnostic_refresh: workspace
                .and_then(|w| w.diagnostics.as_ref())
                .and_then(|d| d.refresh_support)
                .unwrap_or(false),
            inlay_hint_refresh: workspace
                .and_then(|w| w.inlay_hint.as_ref())
                .and_then(|c| c.refresh_support)
                .unwrap_or(false),
            snippets: params
                .capabilities
                .text_document
                .as_ref()
                .and_then(|t| t.completion.as_ref())
                .and_then(|c| c.completion_item.as_ref())
                .and_then(|i| i.snippet_support)
                .unwrap_or(false),
        };
        let pull_diagnostics = self.session.caps().pull_diagnostics;
        let encoding = super::text::negotiate_encoding(
            params
                .capabilities
                .general
                .as_ref()
                .and_then(|g| g.position_encodings.as_deref()),
        );
        if let Some(options) = &params.initialization_options {
            self.apply_settings(options);
        }
        Ok(InitializeResult {
            server_info: Some(ServerInfo {
                name: "kruise-lua".into(),
                version: Some(env!("CARGO_PKG_VERSION").into()),
            }),
            capabilities: ServerCapabilities {
                text_document_sync: Some(TextDocumentSyncCapability::Options(
                    TextDocumentSyncOptions {
                        open_close: Some(true),
                        change: Some(TextDocumentSyncKind::INCREMENTAL),
                        save: Some(TextDocumentSyncSaveOptions::Supported(true)),
                        ..TextDocumentSyncOptions::default()
                    },
                )),
                completion_provider: Some(CompletionOptions {
                    trigger_characters: Some(vec![".".into(), ":".into()]),
                    ..CompletionOptions::default()
                }),
                hover_provider: Some(HoverProviderCapability::Simple(true)),
                definition_provider: Some(OneOf::Left(true)),
                type_definition_provider: Some(TypeDefinitionProviderCapability::Simple(true)),
                references_provider: Some(OneOf::Left(true)),
                document_symbol_provider: Some(OneOf::Left(true)),
                code_action_provider: Some(CodeActionProviderCapability::Options(
                    CodeActionOptions {
                        code_action_kinds: Some(vec![CodeActionKind::QUICKFIX]),
                        ..CodeActionOptions::default()
                    },
                )),
                inlay_hint_provider: Some(OneOf::Left(true)),
                code_lens_provider: Some(CodeLensOptions {
                    resolve_provider: Some(false),
                }),
                execute_command_provider: Some(ExecuteCommandOptions {
                    commands: commands::ALL.iter().map(|c| c.to_string()).collect(),
                    ..ExecuteCommandOptions::default()
                }),
                rename_provider: Some(OneOf::Right(RenameOptions {
                    prepare_provider: Some(true),
                    work_done_progress_options: WorkDoneProgressOptions::default(),
                })),
                document_formatting_provider: Some(OneOf::Left(true)),
                document_range_formatting_provider: Some(OneOf::Left(true)),
                semantic_tokens_provider: Some(
                    SemanticTokensServerCapabilities::SemanticTokensOptions(
                        SemanticTokensOptions {
                            legend: editing::legend(),
                            full: Some(SemanticTokensFullOptions::Delta { delta: Some(true) }),
                            range: Some(false),
                            ..SemanticTokensOptions::default()
                        },
                    ),
                ),
                signature_help_provider: Some(SignatureHelpOptions {
                    trigger_characters: Some(vec!["(".into(), ",".into()]),
                    ..SignatureHelpOptions::default()
                }),
                workspace_symbol_provider: Some(OneOf::Left(true)),
                folding_range_provider: Some(FoldingRangeProviderCapability::Simple(true)),
                document_highlight_provider: Some(OneOf::Left(true)),
                selection_range_provider: Some(SelectionRangeProviderCapability::Simple(true)),
                call_hierarchy_provider: Some(CallHierarchyServerCapability::Simple(true)),
                document_link_provider: Some(DocumentLinkOptions {
                    resolve_provider: Some(false),
                    work_done_progress_options: WorkDoneProgressOptions::default(),
                }),
                position_encoding: Some(encoding),
                diagnostic_provider: pull_diagnostics.then_some(
                    DiagnosticServerCapabilities::Options(DiagnosticOptions {
                        identifier: Some("kruise-lua".into()),
                        // A case's verdict changes when its script changes.
                        inter_file_dependencies: true,
                        workspace_diagnostics: true,
                        ..DiagnosticOptions::default()
                    }),
                ),
                workspace: Some(WorkspaceServerCapabilities {
                    workspace_folders: Some(WorkspaceFoldersServerCapabilities {
                        supported: Some(true),
                        change_notifications: Some(OneOf::Left(true)),
                    }),
                    file_operations: None,
                }),
                ..ServerCapabilities::default()
            },
            ..InitializeResult::default()
        })
    }

    async fn initialized(&self, _: InitializedParams) {
        let session = self.session.clone();
        let roots = session.roots();
        // The first run of everything, at once (no debounce).
        let first = session.clone();
        tokio::spawn(async move { first.run_all().await });
        let watched = tokio::task::spawn_blocking(move || watcher::start(session, roots))
            .await
            .ok()
            .flatten();
        *self.watcher.lock().unwrap_or_else(|e| e.into_inner()) = watched;
    }

    async fn shutdown(&self) -> Result<()> {
        self.session
            .shutting_down
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.watcher
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        Ok(())
    }

    async fn did_open(&self, params: DidOpenTextDocumentParams) {
        self.shielded("did_open", move || {
            let doc = params.text_document;
            let path = self.session.docs.open(doc.uri, doc.text, doc.version);
            self.session.forget_published(&path);
            self.session.on_change(&path, false, None);
        });
    }

    async fn did_change(&self, params: DidChangeTextDocumentParams) {
        self.shielded("did_change", move || {
            let path = uri_path(&params.text_document.uri);
            let changes = params.content_changes;
            let mut lines_unchanged = false;
            let applied = self
                .session
                .docs
                .update(&path, params.text_document.version, |text| {
                    let lines_before = text.bytes().filter(|b| *b == b'\n').count();
                    // A malformed range must not take the server down.
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        apply_changes(text, changes)
                    }));
                    lines_unchanged = lines_before == text.bytes().filter(|b| *b == b'\n').count();
                });
            if applied {
                self.session.on_change(&path, true, Some(lines_unchanged));
            }
        });
    }

    async fn did_save(&self, params: DidSaveTextDocumentParams) {
        self.shielded("did_save", move || {
            let path = uri_path(&params.text_document.uri);
            self.session.on_change(&path, true, None);
        });
    }

    async fn did_close(&self, params: DidCloseTextDocumentParams) {
        self.shielded("did_close", move || {
            let path = uri_path(&params.text_document.uri);
            self.session.docs.close(&path);
            self.session.forget_published(&path);
            self.tokens.forget(&path);
            if path.is_file() {
                self.session.analyse(&path, None);
            }
            // The disk is the truth again. (A folder given as a document, `file:///` say, was
            // never one: closing it changed nothing on disk, and taking it for a folder moved
            // here walked all it holds.)
            if !path.is_dir() {
                self.session.on_disk_change(&path, !path.exists());
            }
        });
        // What the closed file's text, tokens and requests held goes back to the system.
        tokio::task::spawn_blocking(crate::freed_memory::release);
    }

    async fn did_change_watched_files(&self, params: DidChangeWatchedFilesParams) {
        self.shielded("did_change_watched_files", move || {
            for change in params.changes {
                let path = uri_path(&change.uri);
                self.session
                    .on_disk_change(&path, change.typ == FileChangeType::DELETED);
            }
        });
    }

    async fn did_change_configuration(&self, params: DidChangeConfigurationParams) {
        self.shielded("did_change_configuration", move || {
            // Clients often repeat their settings; rerunning everything then only races
            // with what the editor is asking for.
            if !self.apply_settings(&params.settings) {
                return;
            }
            for path in self.session.docs.open_paths() {
                self.session.analyse(&path, None);
            }
            let session = self.session.clone();
            // The hints a setting changes (inlayHints.parameterNames) are asked for again only
            // when told: VS Code otherwise kept the old ones until the next edit.
            let refreshing = session.clone();
            tokio::spawn(async move { super::step_values::refresh(&refreshing).await });
            tokio::spawn(async move { session.run_all().await });
        });
    }

    async fn completion(&self, params: CompletionParams) -> Result<Option<CompletionResponse>> {
        let position = params.text_document_position;
        Ok(self
            .guarded("completion", None, move |session| {
                let (path, text, offset) =
                    locate(&session, &position.text_document.uri, position.position)?;
                let views = session.views(&path, &text);
                let (view, offset) = lua::view_at(&views, offset)?;
                let shape = session.spec_shape(&view.target);
                let mut items = lua::completion(view, &text, offset, shape.as_ref());
                if session.caps().snippets {
                    items.extend(snippets::items(view, &text, offset));
                }
                Some(CompletionResponse::Array(items))
            })
            .await)
    }

    async fn hover(&self, params: HoverParams) -> Result<Option<Hover>> {
        let position = params.text_document_position_params;
        Ok(self
            .guarded("hover", None, move |session| {
                let (path, text, offset) =
                    locate(&session, &position.text_document.uri, position.position)?;
                if let Some((results, i)) = session.case_result(&path) {
                    return case_view::hover(&results, &results.cases[i], &text, offset);
                }
                let views = session.views(&path, &text);
                let (view, offset) = lua::view_at(&views, offset)?;
                let shape = session.spec_shape(&view.target);
                let results = session.results_for(&view.target.id);
                lua::hover(view, &text, offset, shape.as_ref(), results.as_deref())
            })
            .await)
    }

    async fn goto_definition(
        &self,
        params: GotoDefinitionParams,
    ) -> Result<Option<GotoDefinitionResponse>> {
        let position = params.text_document_position_params;
        Ok(self
            .guarded("definition", None, move |session| {
                let uri = position.text_document.uri.clone();
                let (path, text, offset) = locate(&session, &uri, position.position)?;
                let views = session.views(&path, &text);
                let (view, offset) = lua::view_at(&views, offset)?;
                let range = lua::definition(view, &text, offset)?;
                Some(GotoDefinitionResponse::Scalar(Location::new(uri, range)))
            })
            .await)
    }

    async fn goto_type_definition(
        &self,
        params: request::GotoTypeDefinitionParams,
    ) -> Result<Option<GotoDefinitionResponse>> {
        let position = params.text_document_position_params;
        Ok(self
            .guarded("typeDefinition", None, move |session| {
                let (path, text, offset) =
                    locate(&session, &position.text_document.uri, position.position)?;
                let views = session.views(&path, &text);
                let (view, offset) = lua::view_at(&views, offset)?;
                let results = session.results_for(&view.target.id)?;
                let found = type_definition::type_definition(view, offset, &results);
                (!found.is_empty()).then_some(GotoDefinitionResponse::Array(found))
            })
            .await)
    }

    async fn references(&self, params: ReferenceParams) -> Result<Option<Vec<Location>>> {
        let position = params.text_document_position;
        let include = params.context.include_declaration;
        Ok(self
            .guarded("references", None, move |session| {
                let uri = position.text_document.uri.clone();
                let (path, text, offset) = locate(&session, &uri, position.position)?;
                let views = session.views(&path, &text);
                let (view, offset) = lua::view_at(&views, offset)?;
                let ranges = lua::references(view, &text, offset, include);
                Some(
                    ranges
                        .into_iter()
                        .map(|r| Location::new(uri.clone(), r))
                        .collect(),
                )
            })
            .await)
    }

    async fn document_symbol(
        &self,
        params: DocumentSymbolParams,
    ) -> Result<Option<DocumentSymbolResponse>> {
        let uri = params.text_document.uri;
        Ok(self
            .guarded("documentSymbol", None, move |session| {
                let path = uri_path(&uri);
                let text = session.docs.text(&path)?;
                let views = session.views(&path, &text);
                if views.is_empty() {
                    return None;
                }
                Some(DocumentSymbolResponse::Nested(lua::document_symbols(
                    &views, &text,
                )))
            })
            .await)
    }

    async fn code_action(&self, params: CodeActionParams) -> Result<Option<CodeActionResponse>> {
        Ok(self
            .guarded("codeAction", None, move |session| {
                let uri = params.text_document.uri;
                let path = uri_path(&uri);
                let text = session.docs.text(&path)?;
                let index = LineIndex::new(&text);
                let range =
                    index.offset(&text, params.range.start)..index.offset(&text, params.range.end);
                let mut actions = Vec::new();
                if let Some((results, i)) = session.case_result(&path) {
                    actions.extend(case_view::code_actions(
                        &results,
                        &results.cases[i],
                        &uri,
                        &text,
                        range,
                    ));
                }
                let views = session.views(&path, &text);
                let disable =
                    lint_actions::disable_actions(&views, &text, &uri, &params.context.diagnostics);
                // Lint fixes carried in the diagnostics' data.
                for diagnostic in params.context.diagnostics {
                    let Some(data) = &diagnostic.data else {
                        continue;
                    };
                    let (Some(title), Some(fix_range), Some(replacement)) = (
                        data.get("title").and_then(Value::as_str),
                        data.get("range")
                            .and_then(|r| serde_json::from_value::<Range>(r.clone()).ok()),
                        data.get("replacement").and_then(Value::as_str),
                    ) else {
                        continue;
                    };
                    let edit = WorkspaceEdit {
                        changes: Some(
                            [(
                                uri.clone(),
                                vec![TextEdit::new(fix_range, replacement.to_string())],
                            )]
                            .into_iter()
                            .collect(),
                        ),
                        ..WorkspaceEdit::default()
                    };
                    actions.push(CodeActionOrCommand::CodeAction(CodeAction {
                        title: title.to_string(),
                        kind: Some(CodeActionKind::QUICKFIX),
                        diagnostics: Some(vec![diagnostic.clone()]),
                        edit: Some(edit),
                        is_preferred: Some(true),
                        ..CodeAction::default()
                    }));
                }
                actions.extend(disable);
                Some(actions)
            })
            .await)
    }

    async fn code_lens(&self, params: CodeLensParams) -> Result<Option<Vec<CodeLens>>> {
        let uri = params.text_document.uri;
        Ok(self
            .guarded("codeLens", None, move |session| {
                let path = uri_path(&uri);
                let text = session.docs.text(&path)?;
                if let Some((results, i)) = session.case_result(&path) {
                    return Some(case_view::code_lenses(&results, i, &uri, &text));
                }
                Some(script_lens::script_lenses(&session, &path, &text))
            })
            .await)
    }

    async fn did_change_workspace_folders(&self, params: DidChangeWorkspaceFoldersParams) {
        let event = params.event;
        let paths = |folders: Vec<WorkspaceFolder>| -> Vec<PathBuf> {
            folders
                .into_iter()
                .filter_map(|f| f.uri.to_file_path().map(|p| p.into_owned()))
                .collect()
        };
        let (added, removed) = (paths(event.added), paths(event.removed));
        let roots = self.session.change_folders(added, removed).await;
        // Watch the new set of folders, then run what they hold.
        let session = self.session.clone();
        let watched = tokio::task::spawn_blocking(move || watcher::start(session, roots))
            .await
            .ok()
            .flatten();
        *self.watcher.lock().unwrap_or_else(|e| e.into_inner()) = watched;
        let session = self.session.clone();
        tokio::spawn(async move { session.run_all().await });
    }

    async fn prepare_rename(
        &self,
        params: TextDocumentPositionParams,
    ) -> Result<Option<PrepareRenameResponse>> {
        self.guarded("prepareRename", Ok(None), move |session| {
            let Some((path, text, offset)) =
                locate(&session, &params.text_document.uri, params.position)
            else {
                return Ok(None);
            };
            let views = session.views(&path, &text);
            let Some((view, offset)) = lua::view_at(&views, offset) else {
                return Err(request_failed("no Lua script here"));
            };
            editing::prepare_rename(view, &text, offset)
                .map(Some)
                .map_err(request_failed)
        })
        .await
    }

    async fn rename(&self, params: RenameParams) -> Result<Option<WorkspaceEdit>> {
        let position = params.text_document_position;
        self.guarded("rename", Ok(None), move |session| {
            let uri = position.text_document.uri;
            let Some((path, text, offset)) = locate(&session, &uri, position.position) else {
                return Ok(None);
            };
            let views = session.views(&path, &text);
            let Some((view, offset)) = lua::view_at(&views, offset) else {
                return Err(request_failed("no Lua script here"));
            };
            let edits =
                editing::rename(view, &text, offset, &params.new_name).map_err(request_failed)?;
            Ok(Some(WorkspaceEdit {
                changes: Some([(uri, edits)].into_iter().collect()),
                ..WorkspaceEdit::default()
            }))
        })
        .await
    }

    async fn formatting(&self, params: DocumentFormattingParams) -> Result<Option<Vec<TextEdit>>> {
        let uri = params.text_document.uri;
        self.guarded("formatting", Ok(None), move |session| {
            format_document(&session, &uri, None)
        })
        .await
    }

    async fn range_formatting(
        &self,
        params: DocumentRangeFormattingParams,
    ) -> Result<Option<Vec<TextEdit>>> {
        let uri = params.text_document.uri;
        self.guarded("rangeFormatting", Ok(None), move |session| {
            format_document(&session, &uri, Some(params.range))
        })
        .await
    }

    async fn semantic_tokens_full(
        &self,
        params: SemanticTokensParams,
    ) -> Result<Option<SemanticTokensResult>> {
        let cache = self.tokens.clone();
        Ok(self
            .guarded("semanticTokens", None, move |session| {
                let path = uri_path(&params.text_document.uri);
                let data = document_tokens(&session, &path)?;
                let result_id = Some(cache.store(&path, data.clone()));
                Some(SemanticTokensResult::Tokens(SemanticTokens {
                    result_id,
                    data,
                }))
            })
            .await)
    }

    async fn semantic_tokens_full_delta(
        &self,
        params: SemanticTokensDeltaParams,
    ) -> Result<Option<SemanticTokensFullDeltaResult>> {
        let cache = self.tokens.clone();
        Ok(self
            .guarded("semanticTokens/delta", None, move |session| {
                let path = uri_path(&params.text_document.uri);
                let data = document_tokens(&session, &path)?;
                Some(cache.delta(&path, &params.previous_result_id, data))
            })
            .await)
    }

    async fn signature_help(&self, params: SignatureHelpParams) -> Result<Option<SignatureHelp>> {
        let position = params.text_document_position_params;
        Ok(self
            .guarded("signatureHelp", None, move |session| {
                let (path, text, offset) =
                    locate(&session, &position.text_document.uri, position.position)?;
                let views = session.views(&path, &text);
                let (view, offset) = lua::view_at(&views, offset)?;
                editing::signature_help(view, offset)
            })
            .await)
    }

    async fn symbol(
        &self,
        params: WorkspaceSymbolParams,
    ) -> Result<Option<WorkspaceSymbolResponse>> {
        Ok(self
            .guarded("workspaceSymbol", None, move |session| {
                Some(WorkspaceSymbolResponse::Flat(editing::workspace_symbols(
                    &session,
                    &params.query,
                )))
            })
            .await)
    }

    async fn diagnostic(
        &self,
        params: DocumentDiagnosticParams,
    ) -> Result<DocumentDiagnosticReportResult> {
        // Not announced, not answered: the client gets every diagnostic by publication.
        if !self.session.caps().pull_diagnostics {
            return Err(tower_lsp_server::jsonrpc::Error::method_not_found());
        }
        let path = uri_path(&params.text_document.uri);
        let items = self.session.store().current(&path);
        Ok(DocumentDiagnosticReportResult::Report(
            DocumentDiagnosticReport::Full(RelatedFullDocumentDiagnosticReport {
                related_documents: None,
                full_document_diagnostic_report: FullDocumentDiagnosticReport {
                    result_id: None,
                    items,
                },
            }),
        ))
    }

    async fn workspace_diagnostic(
        &self,
        _: WorkspaceDiagnosticParams,
    ) -> Result<WorkspaceDiagnosticReportResult> {
        if !self.session.caps().pull_diagnostics {
            return Err(tower_lsp_server::jsonrpc::Error::method_not_found());
        }
        let files = self.session.store().every_file();
        let items = files
            .into_iter()
            .filter_map(|(path, items)| {
                Some(WorkspaceDocumentDiagnosticReport::Full(
                    WorkspaceFullDocumentDiagnosticReport {
                        uri: super::documents::path_uri(&path)?,
                        version: None,
                        full_document_diagnostic_report: FullDocumentDiagnosticReport {
                            result_id: None,
                            items,
                        },
                    },
                ))
            })
            .collect();
        Ok(WorkspaceDiagnosticReportResult::Report(
            WorkspaceDiagnosticReport { items },
        ))
    }

    async fn inlay_hint(&self, params: InlayHintParams) -> Result<Option<Vec<InlayHint>>> {
        Ok(self
            .guarded("inlayHint", None, move |session| {
                let path = uri_path(&params.text_document.uri);
                let text = session.docs.text(&path)?;
                let mut hints = step_values::inlay_hints(&session, &path, &text, params.range);
                if session.settings().parameter_hints {
                    let views = session.views(&path, &text);
                    hints.extend(param_hints::hints(&views, &text, params.range));
                }
                Some(hints)
            })
            .await)
    }

    async fn folding_range(&self, params: FoldingRangeParams) -> Result<Option<Vec<FoldingRange>>> {
        Ok(self
            .guarded("foldingRange", None, move |session| {
                let path = uri_path(&params.text_document.uri);
                let text = session.docs.text(&path)?;
                Some(folding::folds(&session.views(&path, &text), &text))
            })
            .await)
    }

    async fn document_highlight(
        &self,
        params: DocumentHighlightParams,
    ) -> Result<Option<Vec<DocumentHighlight>>> {
        let position = params.text_document_position_params;
        Ok(self
            .guarded("documentHighlight", None, move |session| {
                let (path, text, offset) =
                    locate(&session, &position.text_document.uri, position.position)?;
                let views = session.views(&path, &text);
                let (view, offset) = lua::view_at(&views, offset)?;
                Some(highlights::highlights(view, &text, offset))
            })
            .await)
    }

    async fn selection_range(
        &self,
        params: SelectionRangeParams,
    ) -> Result<Option<Vec<SelectionRange>>> {
        Ok(self
            .guarded("selectionRange", None, move |session| {
                let path = uri_path(&params.text_document.uri);
                let text = session.docs.text(&path)?;
                if text.len() > MAX_ANALYSED_BYTES {
                    return None;
                }
                let views = session.views(&path, &text);
                Some(selection::ranges(&views, &text, &params.positions))
            })
            .await)
    }

    async fn prepare_call_hierarchy(
        &self,
        params: CallHierarchyPrepareParams,
    ) -> Result<Option<Vec<CallHierarchyItem>>> {
        let position = params.text_document_position_params;
        Ok(self
            .guarded("prepareCallHierarchy", None, move |session| {
                let uri = position.text_document.uri.clone();
                let (path, text, offset) = locate(&session, &uri, position.position)?;
                let views = session.views(&path, &text);
                let (view, offset) = lua::view_at(&views, offset)?;
                call_hierarchy::prepare(view, &text, &uri, offset)
            })
            .await)
    }

    async fn incoming_calls(
        &self,
        params: CallHierarchyIncomingCallsParams,
    ) -> Result<Option<Vec<CallHierarchyIncomingCall>>> {
        Ok(self
            .guarded("incomingCalls", None, move |session| {
                let item = params.item;
                let (path, text, offset) = locate(&session, &item.uri, item.selection_range.start)?;
                let views = session.views(&path, &text);
                let (view, _) = lua::view_at(&views, offset)?;
                Some(call_hierarchy::incoming(view, &text, &item.uri, &item))
            })
            .await)
    }

    async fn outgoing_calls(
        &self,
        params: CallHierarchyOutgoingCallsParams,
    ) -> Result<Option<Vec<CallHierarchyOutgoingCall>>> {
        Ok(self
            .guarded("outgoingCalls", None, move |session| {
                let item = params.item;
                let (path, text, offset) = locate(&session, &item.uri, item.selection_range.start)?;
                let views = session.views(&path, &text);
                let (view, _) = lua::view_at(&views, offset)?;
                Some(call_hierarchy::outgoing(view, &text, &item.uri, &item))
            })
            .await)
    }

    async fn document_link(&self, params: DocumentLinkParams) -> Result<Option<Vec<DocumentLink>>> {
        Ok(self
            .guarded("documentLink", None, move |session| {
                let path = uri_path(&params.text_document.uri);
                let text = session.docs.text(&path)?;
                if text.len() > MAX_ANALYSED_BYTES {
                    return None;
                }
                Some(links::links(&session, &path, &text))
            })
            .await)
    }

    async fn execute_command(&self, params: ExecuteCommandParams) -> Result<Option<LSPAny>> {
        let session = self.session.clone();
        // Spawned, so a panic inside is a failed request rather than a dead server.
        match tokio::spawn(async move { commands::execute(&session, params).await }).await {
            Ok(result) => result,
            Err(e) => Err(tower_lsp_server::jsonrpc::Error {
                code: tower_lsp_server::jsonrpc::ErrorCode::InternalError,
                message: format!("command failed: {e}").into(),
                data: None,
            }),
        }
    }
}

#[cfg(test)]
mod tests;
