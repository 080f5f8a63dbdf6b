//! `kruise-lua lsp`: a language server for traffic-routing scripts and their test cases.
//!
//! Layout (protocol conversion stays at the edge, in [`server`]):
//! * [`documents`], [`text`]: open buffers (the truth for open files; disk for the rest),
//!   incremental sync, positions (UTF-16, or UTF-8 when the client offers it);
//! * [`project`]: which file is a script, a case or a ConfigMap manifest, and how embedded
//!   scripts map into their manifest; [`configmap_index`]: the workspace's ConfigMap scripts,
//!   which decide whether Kruise reads a bundled ingress-class script;
//! * [`runs`], [`session`]: live test runs (debounced, superseded runs cancelled, one run per
//!   script in flight, on blocking threads), [`diagnostics`] from their outcomes;
//! * [`lua`]: the analysis layer's diagnostics, completion, hover, navigation;
//! * [`editing`]: rename, semantic tokens, signature help, workspace symbols; [`format`]: StyLua;
//! * [`case_view`], [`accept`], [`commands`]: hover, lenses and accept-expected in case files (edits by [`crate::project::yaml_edit`]);
//! * [`folding`], [`highlights`], [`selection`], [`call_hierarchy`], [`param_hints`],
//!   [`snippets`]: structure of the script; [`lint_actions`]: disabling a lint by comment;
//!   [`links`]: document links between a script, its cases and its ConfigMap key;
//! * [`watcher`]: files created, deleted or renamed on disk;
//! * [`transport`], [`messages`]: JSON-RPC over stdio ([`crate::framing`]), every message checked before the service
//!   sees it (malformed ones are answered, never fatal).

mod accept;
mod call_hierarchy;
mod case_view;
mod commands;
mod configmap_index;
mod diagnostic_store;
mod diagnostics;
pub(crate) mod documents;
mod editing;
mod folders;
mod folding;
mod format;
mod highlights;
mod links;
mod lint_actions;
mod lua;
mod markdown;
mod messages;
mod param_hints;
mod parses;
pub(crate) mod project;
mod run_lanes;
mod runs;
mod schemas;
mod script_lens;
mod selection;
mod server;
mod session;
mod snippets;
mod step_phrases;
mod step_values;
mod text;
mod transport;
mod type_definition;
mod watcher;

pub use transport::Ending;

/// Serves LSP over stdin/stdout until the client says `exit` or closes stdin.
pub fn run_stdio(limits: crate::message_limits::MessageLimits) -> anyhow::Result<Ending> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        // Blocking threads turn runs into diagnostics (diffs of the deepest results).
        .thread_stack_size(crate::project::WORKER_STACK)
        .enable_all()
        .build()?;
    let ending = runtime.block_on(transport::serve_with(
        tokio::io::stdin(),
        tokio::io::stdout(),
        limits,
    ));
    // Blocking threads still running a script must not hold the exit.
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    Ok(ending)
}
