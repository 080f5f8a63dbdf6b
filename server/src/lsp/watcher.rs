//! Watches the workspace folders on disk (notify): created, deleted, renamed and changed scripts
//! and cases (a `git checkout` too) rerun the scripts they belong to.

use std::path::PathBuf;
use std::sync::Arc;

use notify::{EventKind, RecursiveMode, Watcher};
use tokio::sync::mpsc;

use super::session::Session;

/// Starts watching `roots`; the watcher lives as long as the returned value.
pub fn start(session: Arc<Session>, roots: Vec<PathBuf>) -> Option<notify::RecommendedWatcher> {
    let (tx, mut rx) = mpsc::unbounded_channel::<(PathBuf, bool)>();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        let Ok(event) = event else { return };
        let removed = matches!(event.kind, EventKind::Remove(_));
        let relevant = matches!(
            event.kind,
            EventKind::Create(_) | EventKind::Remove(_) | EventKind::Modify(_)
        );
        if !relevant {
            return;
        }
        for path in event.paths {
            // A rename reports both names; the old one no longer exists.
            let gone = removed || !path.exists();
            let _ = tx.send((path, gone));
        }
    })
    .ok()?;
    for root in &roots {
        let _ = watcher.watch(root, RecursiveMode::Recursive);
    }
    tokio::spawn(async move {
        while let Some((path, removed)) = rx.recv().await {
            let session = session.clone();
            // Panics in one event must not stop the loop.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                session.on_disk_change(&path, removed);
            }));
        }
    });
    Some(watcher)
}
