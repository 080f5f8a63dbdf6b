//! The server's state and the work behind notifications: what changed → which analysis and
//! which runs to redo, and publishing the merged diagnostics.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::Duration;

use kruise_lua_engine::debug::LineValue;
use kruise_lua_engine::runner::{Mode, RunOptions};
use kruise_lua_engine::vm::Limits;
use tokio::task::JoinHandle;
use tower_lsp_server::Client;
use tower_lsp_server::ls_types::{Diagnostic, MessageType};

use super::configmap_index::ConfigMapIndex;
use super::diagnostic_store::DiagnosticStore;
use super::diagnostics::run_diagnostics;
use super::documents::{Documents, path_uri};
use super::lua;
use super::project::{self, DocKind, ScriptId, ScriptTarget};
use super::run_lanes::{Lanes, RunSlots, Scheduler, Slot, Ticket};
use super::runs::{QUICK_PASS, ScriptResults, execute_with, gather};
use super::schemas::SchemaCache;
use crate::analysis::{LintConfig, SpecSchema, SpecShape, infer_spec_shape};
use kruise_lua_engine::script::ScriptKind;

mod configmaps;
mod disk_files;

use disk_files::{is_relevant_file, relevant_files_under};

/// Client settings (`initializationOptions` or `workspace/didChangeConfiguration`, either bare
/// or under a `kruiseLua` key).
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub lints: LintConfig,
    pub mode: Mode,
    pub debounce: Duration,
    pub timeout: Duration,
    /// Parameter-name inlay hints at calls of the script's functions
    /// (`inlayHints.parameterNames`, off by default).
    pub parameter_hints: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            lints: LintConfig::default(),
            mode: Mode::Harness,
            debounce: Duration::from_millis(80),
            timeout: Limits::default().timeout,
            parameter_hints: false,
        }
    }
}

impl Settings {
    /// Reads the settings JSON; problems are returned as messages and the rest still applies.
    pub fn from_json(value: &serde_json::Value) -> (Settings, Vec<String>) {
        let value = value.get("kruiseLua").unwrap_or(value);
        let mut settings = Settings::default();
        let mut problems = Vec::new();
        // Clients written in Lua send an empty table, i.e. `[]`, for "no lint settings".
        if let Some(lints) = value
            .get("lints")
            .filter(|lints| lints.as_array().is_none_or(|items| !items.is_empty()))
        {
            match LintConfig::from_json(&serde_json::json!({ "lints": lints })) {
                Ok(config) => settings.lints = config,
                Err(e) => problems.push(e.to_string()),
            }
        }
        match value.get("mode").and_then(|m| m.as_str()) {
            Some("production") => settings.mode = Mode::Production,
            Some("harness") | None => {}
            Some(other) => problems.push(format!("unknown mode `{other}` (harness or production)")),
        }
        if let Some(ms) = value.get("debounceMs").and_then(|v| v.as_u64()) {
            settings.debounce = Duration::from_millis(ms.min(5_000));
        }
        if let Some(ms) = value.get("timeoutMs").and_then(|v| v.as_u64()) {
            settings.timeout = Duration::from_millis(ms.clamp(10, 60_000));
        }
        if let Some(on) = value
            .get("inlayHints")
            .and_then(|h| h.get("parameterNames"))
            .and_then(|v| v.as_bool())
        {
            settings.parameter_hints = on;
        }
        (settings, problems)
    }
}

/// What the client can do.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClientCaps {
    pub apply_edit: bool,
    /// `workspace.workspaceEdit.documentChanges`: edits can carry the document's version.
    pub document_changes: bool,
    pub code_lens_refresh: bool,
    /// Pull diagnostics were asked for (`pullDiagnostics` in `initializationOptions`) and are
    /// advertised: after a publish the client is asked to pull again, when it can be.
    pub pull_diagnostics: bool,
    /// `workspace.diagnostics.refreshSupport`.
    pub diagnostic_refresh: bool,
    /// `workspace.inlayHint.refreshSupport`.
    pub inlay_hint_refresh: bool,
    /// `textDocument.completion.completionItem.snippetSupport`.
    pub snippets: bool,
}

/// A run still pending this long after its request gets its old results republished as
/// outdated (a quicker run replaces them before the client would see the difference).
const STALE_NOTICE_AFTER: Duration = Duration::from_millis(300);

/// Lua files up to this size get the quick syntax check on the async thread itself.
const QUICK_INLINE_BYTES: usize = 128 * 1024;

/// The values on show.
#[derive(Debug, Clone)]
pub struct ShownValues {
    pub script: PathBuf,
    /// The script text they were recorded from: hints show only while the buffer still holds
    /// exactly it (otherwise the lines may have moved).
    pub source: String,
    pub case: PathBuf,
    /// 0-based.
    pub step: usize,
    pub values: Vec<LineValue>,
}

/// The session's slot for what is on show.
pub type ShownSlot = Mutex<Option<Arc<ShownValues>>>;

pub struct Session {
    pub client: Client,
    pub docs: Documents,
    pub roots: RwLock<Vec<PathBuf>>,
    pub settings: RwLock<Settings>,
    pub caps: RwLock<ClientCaps>,
    pub results: RwLock<HashMap<ScriptId, Arc<ScriptResults>>>,
    /// The CRD schemas of each `lua_configuration` root, loaded by the runs.
    pub schemas: SchemaCache,
    store: Mutex<DiagnosticStore>,
    scheduler: Scheduler,
    slots: RunSlots,
    /// Held while a list is computed and sent, so publishes reach the client in the order their
    /// lists were computed (a list from an older state never lands after a newer one).
    publishing: tokio::sync::Mutex<()>,
    /// Per file, a hash of the last list sent: an identical list is not sent again.
    published: Mutex<HashMap<PathBuf, u64>>,
    /// A `workspace/codeLens/refresh` is already on its way.
    lens_refresh_pending: AtomicBool,
    /// Per file, the latest analysis request (older results are dropped), and one analysis
    /// running at a time: analyses requested faster than they end (edits in a large file, a
    /// run ending during the open's analysis) do not each hold a tree of their own text at once.
    analyses: Lanes<PathBuf>,
    pub shutting_down: AtomicBool,
    /// The step values shown as inlay hints (`kruise-lua.showStepValues`), if any.
    pub step_values: ShownSlot,
    /// The workspace's ConfigMap scripts: which bundled scripts Kruise never reads.
    pub(super) configmaps: Mutex<ConfigMapIndex>,
}

// A panic elsewhere must not make the state unreachable: poisoned locks are used as they are.
fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|e| e.into_inner())
}

pub fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|e| e.into_inner())
}

impl Session {
    pub fn new(client: Client) -> Session {
        Session {
            client,
            docs: Documents::default(),
            roots: RwLock::default(),
            settings: RwLock::default(),
            caps: RwLock::default(),
            results: RwLock::default(),
            schemas: SchemaCache::default(),
            store: Mutex::default(),
            scheduler: Scheduler::default(),
            slots: RunSlots::default(),
            publishing: tokio::sync::Mutex::new(()),
            published: Mutex::default(),
            lens_refresh_pending: AtomicBool::new(false),
            analyses: Lanes::default(),
            shutting_down: AtomicBool::new(false),
            step_values: Default::default(),
            configmaps: Mutex::default(),
        }
    }

    /// The scripts of a document; an open one's share one parse per version between requests.
    pub fn views(&self, path: &Path, text: &str) -> Vec<lua::LuaView> {
        lua::views_sharing_parses(path, text, &self.roots(), &self.docs.parses)
    }

    pub fn roots(&self) -> Vec<PathBuf> {
        read(&self.roots).clone()
    }

    pub fn settings(&self) -> Settings {
        read(&self.settings).clone()
    }

    pub fn caps(&self) -> ClientCaps {
        *read(&self.caps)
    }

    pub(super) fn store(&self) -> MutexGuard<'_, DiagnosticStore> {
        self.store.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn results_for(&self, id: &ScriptId) -> Option<Arc<ScriptResults>> {
        read(&self.results).get(id).cloned()
    }

    pub fn all_results(&self) -> Vec<Arc<ScriptResults>> {
        read(&self.results).values().cloned().collect()
    }

    /// The result of the case file at `path`, with its script's results.
    pub fn case_result(&self, path: &Path) -> Option<(Arc<ScriptResults>, usize)> {
        read(&self.results).values().find_map(|r| {
            let i = r.cases.iter().position(|c| c.path == path)?;
            Some((r.clone(), i))
        })
    }

    /// What is known of the script's `obj.data.spec`: its cases' `original.spec`s, and the
    /// schema of the CRD for its group and kind (version from the cases' `apiVersion`) that
    /// its last run validated against.
    pub fn spec_shape(&self, target: &ScriptTarget) -> Option<SpecShape> {
        let results = self.results_for(&target.id)?;
        let specs = results.specs();
        let schema = match (&results.schemas, &target.kind) {
            (Some(set), Some(ScriptKind::Custom { group, kind })) => {
                SpecSchema::choose(set.clone(), group, kind, &results.api_versions())
            }
            _ => None,
        };
        if specs.is_empty() && schema.is_none() {
            return None;
        }
        Some(infer_spec_shape(&specs).with_schema(schema))
    }

    /// Lint configuration for a file: the nearest `kruise-lua.toml` (up to a workspace root),
    /// then the client's settings on top.
    pub fn lint_config(&self, path: &Path) -> LintConfig {
        let roots = self.roots();
        let mut config = LintConfig::default();
        for dir in path.ancestors().skip(1) {
            if dir.join(LintConfig::FILE_NAME).is_file() {
                match LintConfig::load(dir) {
                    Ok(file) => config = file,
                    Err(e) => {
                        let client = self.client.clone();
                        let message = e.to_string();
                        tokio::spawn(async move {
                            client.log_message(MessageType::WARNING, message).await;
                        });
                    }
                }
                break;
            }
            if roots.iter().any(|r| r == dir) {
                break;
            }
        }
        config.merge(&self.settings().lints);
        config
    }

    /// Computes lists from the store and sends those that differ from what the client has.
    pub async fn publish_with(
        &self,
        compute: impl FnOnce(&mut DiagnosticStore) -> Vec<(PathBuf, Vec<Diagnostic>)>,
    ) {
        let _order = self.publishing.lock().await;
        let lists = compute(&mut self.store());
        let caps = self.caps();
        let mut changed = false;
        for (path, diagnostics) in lists {
            let hash = {
                use std::hash::{Hash, Hasher};
                let mut hasher = std::collections::hash_map::DefaultHasher::new();
                serde_json::to_string(&diagnostics)
                    .unwrap_or_default()
                    .hash(&mut hasher);
                hasher.finish()
            };
            let unchanged = self
                .published
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(path.clone(), hash)
                == Some(hash);
            if unchanged {
                continue;
            }
            let uri = self
                .docs
                .get(&path)
                .map(|d| d.uri)
                .or_else(|| path_uri(&path));
            changed = true;
            // A client that pulls gets the store's lists when it asks (after the refresh
            // below); pushing them as well would show every problem twice.
            if caps.pull_diagnostics {
                continue;
            }
            if let Some(uri) = uri {
                self.client
                    .publish_diagnostics(uri, diagnostics, None)
                    .await;
            }
        }
        if changed && caps.pull_diagnostics && caps.diagnostic_refresh {
            // What a pull answered is now older than the store: have the client pull again.
            let client = self.client.clone();
            tokio::spawn(async move { client.workspace_diagnostic_refresh().await });
        }
    }

    /// The next list for `path` is sent even when unchanged (a client may drop a file's
    /// diagnostics when it opens or closes it).
    pub fn forget_published(&self, path: &Path) {
        self.published
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(path);
    }

    /// Asks the client to refresh its code lenses; requests made while one is on its way are
    /// folded into it (a startup run of thousands of scripts sends a handful, not thousands).
    fn refresh_lenses(self: &Arc<Self>) {
        if !self.caps().code_lens_refresh || self.lens_refresh_pending.swap(true, Ordering::SeqCst)
        {
            return;
        }
        let session = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            session.lens_refresh_pending.store(false, Ordering::SeqCst);
            let _ = session.client.code_lens_refresh().await;
        });
    }

    /// A document changed (opened, edited, saved, or changed on disk): redo its analysis when it
    /// holds Lua, and rerun every script it belongs to.
    /// `quick` is `Some(lines_unchanged)` for an edit (see [`Session::analyse`]).
    pub fn on_change(self: &Arc<Self>, path: &Path, debounce: bool, quick: Option<bool>) {
        let text = self.docs.text(path).unwrap_or_default();
        let delay = if debounce {
            self.settings().debounce
        } else {
            Duration::ZERO
        };
        let kind = self.classify(path, &text);
        // Runs are requested first: that marks the scripts' last results outdated before the
        // analysis's first publish of this text could show them as current.
        let targets = self.targets_of(path, &text, &kind);
        self.index_document(path, &kind, &targets, delay);
        for target in targets {
            self.schedule_run(target, delay);
        }
        let owner = match &kind {
            DocKind::Case(owner) | DocKind::Script(owner) => Some(&owner.id),
            DocKind::ConfigMap | DocKind::Other => None,
        };
        for target in self.readers_of(path) {
            if owner != Some(&target.id) {
                self.schedule_run(target, delay);
            }
        }
        match &kind {
            DocKind::Script(_) => self.analyse(path, quick),
            DocKind::ConfigMap => self.analyse(path, None),
            DocKind::Case(_) | DocKind::Other => {}
        }
    }

    /// The scripts a document is or holds: itself, a manifest's embedded scripts, or the
    /// script whose case it is.
    fn targets_of(&self, path: &Path, text: &str, kind: &DocKind) -> Vec<ScriptTarget> {
        match kind {
            DocKind::Script(target) | DocKind::Case(target) => vec![target.clone()],
            DocKind::ConfigMap => project::embedded_targets(path, text, &self.roots())
                .into_iter()
                .map(|(target, _)| target)
                .collect(),
            DocKind::Other => Vec::new(),
        }
    }

    /// Scripts whose last run read `path` as a case (e.g. a ConfigMap script's testdata), or
    /// that are hosted in it.
    fn readers_of(&self, path: &Path) -> Vec<ScriptTarget> {
        read(&self.results)
            .values()
            .filter(|r| {
                r.target.id.host() == path
                    || r.target
                        .testdata
                        .as_ref()
                        .is_some_and(|t| path.starts_with(t))
            })
            .map(|r| r.target.clone())
            .collect()
    }

    /// Syntax and lint diagnostics for a document, computed on a blocking thread.
    /// `quick` (after an edit; `Some(keep_lints)`) first publishes the fast compile-only
    /// syntax verdict for a Lua file.
    pub fn analyse(self: &Arc<Self>, path: &Path, quick: Option<bool>) {
        let ticket = self.analyses.request(&path.to_path_buf());
        let session = self.clone();
        let path = path.to_path_buf();
        // The quick verdict is computed on the async thread (about a millisecond for 2,000 lines; a
        // thread hop costs more than that on a busy machine), bigger files on a blocking thread.
        let is_lua = path.extension().is_some_and(|e| e == "lua");
        let quick_now = match (quick, is_lua) {
            (Some(keep_lints), true) => self.docs.text(&path).map(|text| (keep_lints, text)),
            _ => None,
        };
        tokio::spawn(async move {
            if let Some((keep_lints, text)) = quick_now {
                let verdict = if text.len() <= QUICK_INLINE_BYTES {
                    Some(lua::quick_syntax_diagnostic(&text))
                } else if text.len() <= super::documents::MAX_ANALYSED_BYTES {
                    tokio::task::spawn_blocking(move || lua::quick_syntax_diagnostic(&text))
                        .await
                        .ok()
                } else {
                    None
                };
                if let Some(syntax) = verdict
                    && !ticket.superseded()
                {
                    session
                        .publish_with(|store| {
                            let all = store.quick(&path, syntax, keep_lints);
                            vec![(path.clone(), all)]
                        })
                        .await;
                }
            }
            let lane = ticket.lock();
            let running = lane.lock().await;
            let worker = session.clone();
            let file = path.clone();
            let superseded = ticket.canceller();
            let computed = tokio::task::spawn_blocking(move || {
                if superseded() {
                    return None;
                }
                let started = std::time::Instant::now();
                let text = worker.docs.text(&file)?;
                let config = worker.lint_config(&file);
                let roots = worker.roots();
                let diags =
                    lua::diagnostics(&file, &text, &roots, &worker.docs.parses, &config, &|t| {
                        worker.spec_shape(t)
                    });
                Some((diags, started.elapsed() >= crate::freed_memory::HEAVY_WORK))
            })
            .await;
            drop(running);
            let Ok(Some((diags, heavy))) = computed else {
                return;
            };
            if !ticket.superseded() {
                session
                    .publish_with(|store| {
                        let all = store.set_analysis(&path, diags);
                        vec![(path.clone(), all)]
                    })
                    .await;
            }
            // A large file's parse left its memory in the arena of the blocking thread: handed
            // back after the publish (nothing else trimmed it before some later long request:
            // closing a large script that is on disk analyses it again, and kept 230 MiB).
            if heavy {
                tokio::task::spawn_blocking(crate::freed_memory::release);
            }
        });
    }

    /// Requests a run of a script's cases, debounced by `delay` (leading edge: a request after
    /// a quiet period runs at once); a later request for the same script supersedes this one,
    /// and at most one run per script is in flight.
    pub fn schedule_run(self: &Arc<Self>, target: ScriptTarget, delay: Duration) -> JoinHandle<()> {
        // As Kruise reads it now: a bundled script a ConfigMap script replaces is skipped, and
        // so is a ConfigMap script another manifest's is taken before.
        let target = self.as_read(target);
        let delay = self.scheduler.delay_for(&target.id, delay);
        let ticket = self.scheduler.request(&target.id);
        // What the last run said belongs to an older text from now on; if the new run takes a
        // while (a runaway script, a long queue), the client is told so.
        self.store().mark_stale(&target.id);
        // Only a script whose last run said something has lists to mark (a cold start's
        // thousands of first runs have none, and each notice takes the publishing lock).
        if self.results_for(&target.id).is_some() {
            let watched = self.clone();
            let watched_id = target.id.clone();
            tokio::spawn(async move {
                tokio::time::sleep(STALE_NOTICE_AFTER).await;
                watched
                    .publish_with(|store| store.stale_lists(&watched_id))
                    .await;
            });
        }
        let foreground = self.is_foreground(&target);
        let session = self.clone();
        tokio::spawn(async move {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            if ticket.superseded() {
                return;
            }
            let lock = ticket.lock();
            let _in_flight = lock.lock().await;
            if ticket.superseded() {
                return;
            }
            // A bounded number of runs at once; scripts the user has open never wait behind
            // the background ones (e.g. a startup run of the whole workspace, or scripts that
            // run into their timeout).
            let mut slot = session.slots.acquire(foreground).await;
            if ticket.superseded() {
                return;
            }
            let settings = session.settings();
            let previous = session.results_for(&target.id);
            // No results yet reads as no specs and no schemas: the lints saw no shape either.
            let previous_specs = previous.as_ref().map(|p| p.specs()).unwrap_or_default();
            let previous_schemas = previous.as_ref().and_then(|p| p.schemas.clone());
            let full_timeout = settings.timeout;
            // A background run first gives each step a short budget, so scripts that loop
            // cost the queue a moment each instead of their whole timeout; see `QUICK_PASS`.
            let quick = !foreground && full_timeout > QUICK_PASS;
            let mut outcome = session
                .run_blocking(
                    &target,
                    previous.clone(),
                    if quick { QUICK_PASS } else { full_timeout },
                    &slot,
                    &ticket,
                )
                .await;
            let unfinished = match &outcome {
                Ok(Ok(Some((first, _)))) if quick && first.timed_out() => {
                    Some(first.without_timed_out_cases())
                }
                _ => None,
            };
            if let Some(done) = unfinished {
                // Into the slow lane: the background lane stays free for the runs queued
                // meanwhile (healthy scripts among them). The cases that finished are kept.
                drop(slot);
                slot = session.slots.acquire_slow().await;
                if ticket.superseded() {
                    return;
                }
                outcome = session
                    .run_blocking(&target, Some(Arc::new(done)), full_timeout, &slot, &ticket)
                    .await;
            }
            drop(slot);
            let id = target.id.clone();
            match outcome {
                Ok(Ok(Some((results, diags)))) => {
                    if ticket.superseded() {
                        return;
                    }
                    session.log_prints(&results).await;
                    let lua_host = results.target.id.host().to_path_buf();
                    let same_schemas = match (&previous_schemas, &results.schemas) {
                        (Some(before), Some(now)) => Arc::ptr_eq(before, now),
                        (None, None) => true,
                        _ => false,
                    };
                    let newly_shaped = previous_specs != results.specs() || !same_schemas;
                    let large = results.is_large();
                    session
                        .set_results(&id, Some(results), diags, &ticket)
                        .await;
                    if large {
                        tokio::task::spawn_blocking(crate::freed_memory::release);
                    }
                    // The spec's shape and schema feed lints: reanalyse an open script when they
                    // changed.
                    if newly_shaped && session.docs.is_open(&lua_host) {
                        session.analyse(&lua_host, None);
                    }
                    // Lenses show only in open documents: a run of a script nobody has open
                    // asks for none (VS Code puts off its lens request while refreshes keep
                    // coming, so a startup run of the workspace held back the open file's).
                    if session.is_foreground(&target) {
                        session.refresh_lenses();
                    }
                }
                Ok(Ok(None)) => {} // superseded while running
                Ok(Err(())) => {
                    // The script is gone: forget it and clear what its runs said.
                    session.set_results(&id, None, Vec::new(), &ticket).await;
                }
                Err(e) => {
                    session
                        .client
                        .log_message(
                            MessageType::ERROR,
                            format!("run of {} failed: {e}", id.display()),
                        )
                        .await;
                }
            }
        })
    }

    /// One run of a script's cases on a blocking thread, its steps on the slot's pool, with
    /// `timeout` per step; `None` inside when superseded, `Err(())` when the script is gone.
    async fn run_blocking(
        self: &Arc<Self>,
        target: &ScriptTarget,
        previous: Option<Arc<ScriptResults>>,
        timeout: Duration,
        slot: &Slot,
        ticket: &Ticket,
    ) -> Result<
        Result<Option<(ScriptResults, Vec<(PathBuf, Vec<Diagnostic>)>)>, ()>,
        tokio::task::JoinError,
    > {
        let settings = self.settings();
        let pool = slot.pool();
        let cancelled = ticket.canceller();
        let worker = self.clone();
        let target = target.clone();
        tokio::task::spawn_blocking(move || {
            let Some(input) = gather(&target, &worker.docs, previous.as_deref()) else {
                return Err(());
            };
            let options = RunOptions {
                limits: Limits {
                    timeout,
                    ..Limits::default()
                },
                ..RunOptions::default()
            };
            // A lane of one thread runs the cases on this (blocking) thread: handing them to
            // its pool would only add two thread wake-ups per run (at a cold start, most of
            // the server's CPU time went to such hand-overs, one per script).
            let run = |parallel| {
                execute_with(
                    input,
                    previous.as_deref(),
                    settings.mode,
                    &options,
                    &cancelled,
                    parallel,
                )
            };
            let results = if pool.current_num_threads() > 1 {
                pool.install(|| run(true))
            } else {
                run(false)
            };
            Ok(results.map(|mut r| {
                // The CRDs of the script's root, read once (here, off the async threads). A
                // ConfigMap's script belongs to the tree that holds its cases.
                let anchor = match (&target.id, &target.testdata) {
                    (ScriptId::Embedded { .. }, Some(testdata)) => testdata.join("case.yaml"),
                    _ => target.id.host().to_path_buf(),
                };
                let loaded = worker.schemas.for_path(&anchor);
                if let Some((loaded, true)) = &loaded
                    && !loaded.sources.problems.is_empty()
                {
                    let client = worker.client.clone();
                    let message = loaded
                        .sources
                        .problems
                        .iter()
                        .map(|problem| format!("CRD not used: {problem}"))
                        .collect::<Vec<_>>()
                        .join("\n");
                    tokio::spawn(async move {
                        client.log_message(MessageType::WARNING, message).await;
                    });
                }
                // Outside a root `check` still validates labels and annotations and says no
                // CRD was loaded: so does the editor, with one empty set shared by every run
                // (a run's schemas being the previous run's is what tells they did not change).
                match loaded {
                    Some((loaded, _)) => r.validate_schemas(
                        Some(loaded.sources.schemas.clone()),
                        &loaded.sources.problems,
                    ),
                    None => r.validate_schemas(Some(super::schemas::no_crds()), &[]),
                }
                let diags = run_diagnostics(&r);
                (r, diags)
            }))
        })
        .await
    }

    /// Whether a script's runs go first: the user has it or one of its cases open.
    pub(super) fn is_foreground(&self, target: &ScriptTarget) -> bool {
        self.docs.is_open(target.id.host())
            || target.testdata.as_ref().is_some_and(|testdata| {
                self.docs
                    .open_paths()
                    .iter()
                    .any(|p| p.starts_with(testdata))
            })
    }

    /// Keeps a script's latest results (`None`: forgets the script), replaces what its runs
    /// said in every file, and publishes the files that changed; unless `ticket`'s run was
    /// superseded, which is decided under the store's lock: a request marks the results
    /// outdated under that lock, so an older run's can never be published as current after it.
    async fn set_results(
        &self,
        id: &ScriptId,
        results: Option<ScriptResults>,
        diagnostics: Vec<(PathBuf, Vec<Diagnostic>)>,
        ticket: &Ticket,
    ) {
        self.publish_with(|store| {
            if ticket.superseded() {
                return Vec::new();
            }
            match results {
                Some(results) => write(&self.results).insert(id.clone(), Arc::new(results)),
                None => write(&self.results).remove(id),
            };
            store.set_runs(id, diagnostics)
        })
        .await;
    }

    /// Forgets a script that left the workspace: a run of it under way is superseded, and
    /// what its runs said is withdrawn from every file.
    pub async fn forget(&self, id: &ScriptId) {
        let ticket = self.scheduler.request(id);
        self.set_results(id, None, Vec::new(), &ticket).await;
    }

    /// What scripts printed during the run, in the server log (never on stdout).
    async fn log_prints(&self, results: &ScriptResults) {
        let mut lines = Vec::new();
        for case in &results.cases {
            for step in &case.steps {
                for print in &step.prints {
                    lines.push(format!(
                        "[{} {} step {}] {print}",
                        results.target.id.display(),
                        case.name(),
                        step.index + 1
                    ));
                }
            }
        }
        if !lines.is_empty() {
            lines.truncate(200);
            self.client
                .log_message(MessageType::LOG, lines.join("\n"))
                .await;
        }
    }

    /// Runs every script of the workspace and the open documents now; waits for the runs.
    ///
    /// A script whose run was requested while the workspace was being walked is not asked
    /// again: on a cold start the editor opens its file right after `initialized`, and asking
    /// again would cancel that file's run, already under way, and start it over (the first
    /// lens then came after the whole workspace's runs).
    pub async fn run_all(self: &Arc<Self>) {
        let before = self.scheduler.requests_now();
        let roots = self.roots();
        let worker = self.clone();
        let mut targets =
            tokio::task::spawn_blocking(move || project::workspace_scripts(&roots, &worker.docs))
                .await
                .unwrap_or_default();
        for path in self.docs.open_paths() {
            let text = self.docs.text(&path).unwrap_or_default();
            let kind = self.classify(&path, &text);
            targets.extend(self.targets_of(&path, &text, &kind));
        }
        targets.sort_by(|a, b| a.id.cmp(&b.id));
        targets.dedup_by(|a, b| a.id == b.id);
        // A script whose reader the walk changed runs again even when asked meanwhile
        // (a file opened at startup ran before the index knew the ConfigMap replacing it).
        let reread = self.rebuild_index(&targets);
        let ids: Vec<ScriptId> = targets.iter().map(|t| t.id.clone()).collect();
        let handles: Vec<JoinHandle<()>> = targets
            .into_iter()
            .filter(|t| !self.scheduler.requested_since(&t.id, &before) || reread.contains(&t.id))
            .map(|t| self.schedule_run(t, Duration::ZERO))
            .collect();
        for handle in handles {
            let _ = handle.await;
        }
        // A run superseded by a later request (the startup run, a change on disk) ended
        // without results: the answer waits for the run that replaced it.
        for id in &ids {
            self.scheduler.settled(id).await;
        }
    }

    /// A file or folder changed on disk (watcher or client notification).
    pub fn on_disk_change(self: &Arc<Self>, path: &Path, removed: bool) {
        if path
            .components()
            .any(|c| c.as_os_str() == ".git" || c.as_os_str() == "target")
        {
            return;
        }
        if self.schemas.invalidate(path) {
            // A CRD or the toml naming them changed: every script is validated again (the
            // runs reuse their step outcomes; only the validation is redone).
            let debounce = self.settings().debounce;
            let targets: Vec<ScriptTarget> = read(&self.results)
                .values()
                .map(|r| r.target.clone())
                .collect();
            for target in targets {
                self.schedule_run(target, debounce);
            }
        }
        if !removed && path.is_dir() {
            // A folder created, or renamed or moved here: what it holds is new, when it is in
            // the workspace (a client's event for a folder outside it, `/` say, must not have
            // the server walk the disk).
            // (Compared as given and with links resolved: a watcher may report real paths,
            // `/private/var/…` on macOS for a workspace opened as `/var/…`.)
            let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
            let real = canonical(path);
            let inside = self
                .roots()
                .iter()
                .any(|root| path.starts_with(root) || real.starts_with(canonical(root)));
            if !inside {
                return;
            }
            for file in relevant_files_under(path) {
                self.on_change_disk_only(&file);
            }
            return;
        }
        if !is_relevant_file(path) {
            if removed || !path.exists() {
                // Possibly a folder deleted, or renamed or moved away.
                self.on_folder_gone(path);
            }
            return;
        }
        if self.docs.is_open(path) && !removed {
            return; // the buffer is the truth
        }
        if path.file_name().is_some_and(|n| n == LintConfig::FILE_NAME) {
            return;
        }
        if removed {
            // Nothing said about a deleted file holds any more.
            let session = self.clone();
            let file = path.to_path_buf();
            tokio::spawn(async move {
                session
                    .publish_with(|store| {
                        store.forget(&file);
                        vec![(file.clone(), Vec::new())]
                    })
                    .await
            });
        }
        // Scripts: only those it belongs to; a removed script reruns to nothing and is cleared.
        if removed && path.extension().is_some_and(|e| e == "lua") {
            self.schedule_run(project::lua_target(path), self.settings().debounce);
        }
        self.on_change_disk_only(path);
    }

    /// Everything that was under `dir` is gone: scripts that lived or read cases there run
    /// again (a script that is gone runs to nothing and is cleared), and what was published
    /// for its files is withdrawn.
    fn on_folder_gone(self: &Arc<Self>, dir: &Path) {
        let affected: Vec<ScriptTarget> = read(&self.results)
            .values()
            .filter(|r| {
                r.target.id.host().starts_with(dir)
                    || r.target
                        .testdata
                        .as_ref()
                        .is_some_and(|t| t.starts_with(dir) || dir.starts_with(t))
                    || r.cases.iter().any(|c| c.path.starts_with(dir))
            })
            .map(|r| r.target.clone())
            .collect();
        let debounce = self.settings().debounce;
        for target in affected {
            self.schedule_run(target, debounce);
        }
        let session = self.clone();
        let dir = dir.to_path_buf();
        tokio::spawn(async move {
            session
                .publish_with(|store| {
                    store
                        .forget_under(&dir)
                        .into_iter()
                        .map(|p| (p, Vec::new()))
                        .collect()
                })
                .await
        });
    }

    fn on_change_disk_only(self: &Arc<Self>, path: &Path) {
        let text = self.docs.text(path).unwrap_or_default();
        let debounce = self.settings().debounce;
        let kind = self.classify(path, &text);
        // (The script itself may come twice, from the file and from its last run; the second
        // request supersedes the first.)
        let targets = self.targets_of(path, &text, &kind);
        self.index_document(path, &kind, &targets, debounce);
        // A script appeared or went: ConfigMap scripts for its provider pair anew.
        self.reindex_for_script(path, debounce);
        for target in targets.into_iter().chain(self.readers_of(path)) {
            self.schedule_run(target, debounce);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_lua_table_means_no_lint_settings() {
        // vim.json encodes Lua's `{}` as `[]`.
        let (settings, problems) =
            Settings::from_json(&serde_json::json!({"kruiseLua": {"lints": []}}));
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(settings, Settings::default());
        let (_, problems) = Settings::from_json(&serde_json::json!({"lints": ["KL001"]}));
        assert_eq!(problems.len(), 1, "a non-empty list is still an error");
    }

    #[test]
    fn settings_compare_by_value() {
        let (first, _) = Settings::from_json(&serde_json::json!({"lints": {"KL007": "off"}}));
        let (again, _) =
            Settings::from_json(&serde_json::json!({"kruiseLua": {"lints": {"KL007": "off"}}}));
        let (other, _) = Settings::from_json(&serde_json::json!({"mode": "production"}));
        assert_eq!(first, again);
        assert_ne!(first, other);
    }
}
