//! The session's side of the ConfigMap index (`lsp/configmap_index.rs`): documents are
//! classified through it, runs ask it how Kruise reads a script, and it is kept up to date
//! from the workspace walk, manifest edits and scripts appearing or going on disk.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, MutexGuard};
use std::time::Duration;

use super::Session;
use crate::lsp::configmap_index::ConfigMapIndex;
use crate::lsp::project::{self, DocKind, ScriptId, ScriptTarget};

impl Session {
    fn configmap_index(&self) -> MutexGuard<'_, ConfigMapIndex> {
        self.configmaps.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What a document is, as Kruise reads the workspace: a bundled script a ConfigMap script
    /// replaces is skipped, and its cases are the ConfigMap script's (the one taken).
    pub(super) fn classify(&self, path: &Path, text: &str) -> DocKind {
        match project::classify(path, text, &self.docs) {
            DocKind::Script(target) => DocKind::Script(self.configmap_index().as_read(target)),
            DocKind::Case(owner) => DocKind::Case(self.configmap_index().case_reader(owner)),
            other => other,
        }
    }

    /// `target` as Kruise reads it now (see [`ConfigMapIndex::as_read`]): every run asks.
    pub(super) fn as_read(&self, target: ScriptTarget) -> ScriptTarget {
        self.configmap_index().as_read(target)
    }

    /// A document changed: when it is (or was) a ConfigMap manifest, its scripts (`targets`,
    /// as [`Session::classify`] found it) go into the index, and the scripts whose reader
    /// changed (bundled ones, other manifests' scripts for the same provider) run again (to be
    /// skipped, or to run their cases again).
    pub(super) fn index_document(
        self: &Arc<Self>,
        path: &Path,
        kind: &DocKind,
        targets: &[ScriptTarget],
        delay: Duration,
    ) {
        let rerun: Vec<ScriptTarget> = {
            let mut index = self.configmap_index();
            let changed = match kind {
                DocKind::ConfigMap => index.set(path, targets.to_vec()),
                _ => {
                    if index.scripts_of(path).is_none() {
                        return;
                    }
                    index.set(path, Vec::new())
                }
            };
            changed.iter().filter_map(|id| index.target(id)).collect()
        };
        for target in rerun {
            self.schedule_run(target, delay);
        }
    }

    /// A script file appeared, changed or went on disk: the manifests with a script for the
    /// same provider pair with the trees again (whether it bundles one decides which of the
    /// two Kruise reads); what changed runs again.
    pub(super) fn reindex_for_script(self: &Arc<Self>, script: &Path, delay: Duration) {
        let Some(kind) = kruise_lua_engine::discovery::script_kind_at(script) else {
            return;
        };
        let manifests = self.configmap_index().manifests_with(&kind);
        let roots = self.roots();
        for manifest in manifests {
            let text = self.docs.text(&manifest).unwrap_or_default();
            let targets: Vec<ScriptTarget> = project::embedded_targets(&manifest, &text, &roots)
                .into_iter()
                .map(|(target, _)| target)
                .collect();
            let same = self.configmap_index().scripts_of(&manifest) == Some(targets.as_slice());
            if same {
                continue;
            }
            let kind = if targets.is_empty() {
                DocKind::Other
            } else {
                DocKind::ConfigMap
            };
            self.index_document(&manifest, &kind, &targets, delay);
            for target in targets {
                self.schedule_run(target, delay);
            }
        }
    }

    /// The workspace was walked (`targets`: every script found, the open documents' too):
    /// the index is made anew from its ConfigMap scripts. Returns the scripts whose reader
    /// changed: they run again even when a run of theirs was asked meanwhile.
    pub(super) fn rebuild_index(&self, targets: &[ScriptTarget]) -> Vec<ScriptId> {
        let mut manifests: BTreeMap<PathBuf, Vec<ScriptTarget>> = BTreeMap::new();
        for target in targets {
            if let ScriptId::Embedded { manifest, .. } = &target.id {
                manifests
                    .entry(manifest.clone())
                    .or_default()
                    .push(target.clone());
            }
        }
        self.configmap_index().replace_all(manifests)
    }
}
