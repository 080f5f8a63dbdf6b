//! Workspace folders changing (`workspace/didChangeWorkspaceFolders`): the new set of roots,
//! and the scripts of a removed folder forgotten, so that `runAll`, lenses and summaries count
//! only what the workspace holds.

use std::path::PathBuf;
use std::sync::Arc;

use super::project::ScriptId;
use super::session::{Session, write};

impl Session {
    /// Applies a change of workspace folders and returns the new roots. A script whose file
    /// lies in a removed folder, in no remaining one, and that no open document runs (its
    /// file or one of its cases open) is forgotten: its last results no longer count, and what
    /// its runs published is withdrawn.
    pub async fn change_folders(
        self: &Arc<Self>,
        added: Vec<PathBuf>,
        removed: Vec<PathBuf>,
    ) -> Vec<PathBuf> {
        let roots = {
            let mut roots = write(&self.roots);
            roots.retain(|r| !removed.contains(r));
            for root in added {
                if !roots.contains(&root) {
                    roots.push(root);
                }
            }
            roots.clone()
        };
        let gone: Vec<ScriptId> = self
            .all_results()
            .iter()
            .filter(|r| {
                let host = r.target.id.host();
                removed.iter().any(|dir| host.starts_with(dir))
                    && !roots.iter().any(|root| host.starts_with(root))
                    && !self.is_foreground(&r.target)
            })
            .map(|r| r.target.id.clone())
            .collect();
        for id in &gone {
            self.forget(id).await;
        }
        roots
    }
}
