//! Which files on disk the session looks at when the watcher reports a change.

use std::path::{Path, PathBuf};

/// Scripts, cases and manifests by their extension.
pub(super) fn is_relevant_file(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| matches!(e, "lua" | "yaml" | "yml"))
}

/// The scripts, cases and manifests in a folder that appeared (bounded depth; hidden folders and
/// `target` skipped).
pub(super) fn relevant_files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![(dir.to_path_buf(), 0)];
    while let Some((dir, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let name = entry.file_name();
            let hidden = name.to_string_lossy().starts_with('.') || name == "target";
            if kind.is_dir() && !hidden && depth < 8 {
                stack.push((path, depth + 1));
            } else if kind.is_file() && is_relevant_file(&path) {
                files.push(path);
            }
        }
    }
    files
}
