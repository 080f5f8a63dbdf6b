//! `check --watch` and `lint --watch`: run once, then again after every change on disk under
//! the PATHs (the `notify` watcher the language server uses; bursts of events from one save are
//! taken together). Each run clears the terminal and prints a one-line summary and the report.
//! `check` reruns only the scripts the changed files belong to; `lint` reruns everything (it is
//! cheap). Runs until interrupted; an error in one run (a file deleted meanwhile) is printed
//! and the watch goes on.

use std::io::{IsTerminal, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use kruise_lua_engine::discovery::{CUSTOM_SCRIPT_NAME, INGRESS_FOLDER};
use notify::{EventKind, RecursiveMode, Watcher};

use crate::project::UsageError;
use crate::project::paths;

/// What one run printed and its one-line summary.
pub struct Outcome {
    pub summary: String,
    pub report: Vec<u8>,
}

/// How long the watcher waits for more events of the same save before running.
const SETTLE: Duration = Duration::from_millis(150);

/// Runs `run` now and after every change under `roots`, forever (until the process is
/// interrupted). `run` gets the changed files (empty for the first run).
pub fn watch(
    roots: &[PathBuf],
    run: &mut dyn FnMut(&[PathBuf]) -> Result<Outcome, UsageError>,
) -> Result<u8, UsageError> {
    let (tx, rx) = mpsc::channel::<PathBuf>();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        let Ok(event) = event else { return };
        if matches!(
            event.kind,
            EventKind::Create(_) | EventKind::Remove(_) | EventKind::Modify(_)
        ) {
            for path in event.paths {
                let _ = tx.send(path);
            }
        }
    })
    .map_err(|err| UsageError(format!("cannot watch files: {err}")))?;
    let mut watched: Vec<PathBuf> = Vec::new();
    for root in roots {
        let absolute = std::path::absolute(root).unwrap_or_else(|_| root.clone());
        // A script's cases live beside it; a file is watched through its folder, since editors
        // save by renaming a new file over the old one.
        let (dir, mode) = if root.is_dir() {
            (absolute.clone(), RecursiveMode::Recursive)
        } else if root.extension().is_some_and(|e| e == "lua") {
            (parent(&absolute), RecursiveMode::Recursive)
        } else {
            (parent(&absolute), RecursiveMode::NonRecursive)
        };
        watcher
            .watch(&dir, mode)
            .map_err(|err| UsageError(format!("{}: cannot watch: {err}", paths::display(root))))?;
        watched.push(absolute);
    }
    show(run(&[]));
    loop {
        let Ok(first) = rx.recv() else {
            return Ok(super::options::EXIT_USAGE);
        };
        let mut changed = vec![first];
        while let Ok(path) = rx.recv_timeout(SETTLE) {
            changed.push(path);
        }
        changed.retain(|path| relevant(path, &watched));
        changed.sort();
        changed.dedup();
        if !changed.is_empty() {
            show(run(&changed));
        }
    }
}

fn parent(path: &Path) -> PathBuf {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// Whether a changed path can matter: under a watched folder or one of the watched files, and
/// not a temporary file (ours from `--fix`, or an editor's).
fn relevant(path: &Path, watched: &[PathBuf]) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    let temporary = name.ends_with(".tmp") || name.ends_with('~') || name.ends_with(".swp");
    let inside = watched.iter().any(|root| {
        if root.is_dir() {
            path.starts_with(root)
        } else if root.extension().is_some_and(|e| e == "lua") {
            path.starts_with(parent(root))
        } else {
            path == root
        }
    });
    inside
        && !temporary
        && !path
            .components()
            .any(|c| c == Component::Normal(".git".as_ref()))
}

/// Clears the terminal (when stdout is one) and prints a run's summary and report.
fn show(outcome: Result<Outcome, UsageError>) {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if stdout_is_terminal() {
        let _ = write!(out, "\x1b[2J\x1b[H");
    } else {
        let _ = writeln!(out, "----");
    }
    let _ = match outcome {
        Ok(outcome) => {
            writeln!(out, "{}", outcome.summary).and_then(|_| out.write_all(&outcome.report))
        }
        Err(UsageError(message)) => writeln!(out, "kruise-lua: error: {message}"),
    };
    let _ = out.flush();
}

fn stdout_is_terminal() -> bool {
    std::io::stdout().is_terminal()
}

/// `--filter` texts naming the scripts the changed files belong to (as reports show their
/// paths), or None when some change does not belong to one script.
pub fn script_filters(roots: &[PathBuf], changed: &[PathBuf]) -> Option<Vec<String>> {
    let mut filters = Vec::new();
    for path in changed {
        let shown = shown_path(roots, path)?;
        filters.push(script_of(&shown)?);
    }
    filters.sort();
    filters.dedup();
    Some(filters)
}

/// A changed absolute path as reports show it (relative to the PATH it is under, as given).
fn shown_path(roots: &[PathBuf], path: &Path) -> Option<String> {
    roots.iter().find_map(|root| {
        let absolute = std::path::absolute(root).ok()?;
        let base = if root.is_dir() {
            root.clone()
        } else {
            parent(root)
        };
        let absolute_base = if root.is_dir() {
            absolute
        } else {
            parent(&absolute)
        };
        let rest = path.strip_prefix(&absolute_base).ok()?;
        Some(paths::display(&base.join(rest)))
    })
}

/// The filter that selects the script a display path belongs to: the script itself, or the
/// folder holding `testdata` (custom) or the ingress class's script (`…/<class>` matches
/// `…/<class>.lua`).
fn script_of(shown: &str) -> Option<String> {
    let parts: Vec<&str> = shown.split('/').collect();
    let name = parts.last()?;
    if *name == CUSTOM_SCRIPT_NAME {
        return Some(shown.to_string());
    }
    if name.ends_with(".lua") && parts.len() >= 2 && parts[parts.len() - 2] == INGRESS_FOLDER {
        return Some(shown.to_string());
    }
    let testdata = parts.iter().rposition(|p| *p == "testdata")?;
    if testdata >= 1 && parts[testdata - 1] == INGRESS_FOLDER {
        // trafficrouting_ingress/testdata/<class>/case.yaml
        let class = parts
            .get(testdata + 1)
            .filter(|_| parts.len() > testdata + 2)?;
        let mut script = parts[..testdata].join("/");
        script.push('/');
        script.push_str(class);
        script.push_str(".lua");
        return Some(script);
    }
    let folder = parts[..testdata].join("/");
    (!folder.is_empty()).then(|| format!("{folder}/{CUSTOM_SCRIPT_NAME}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_files_select_their_script() {
        assert_eq!(
            script_of("lc/example.io/K/testdata/a.yaml").as_deref(),
            Some("lc/example.io/K/trafficRouting.lua")
        );
        assert_eq!(
            script_of("lc/example.io/K/trafficRouting.lua").as_deref(),
            Some("lc/example.io/K/trafficRouting.lua")
        );
        assert_eq!(
            script_of("lc/trafficrouting_ingress/testdata/nginx/x.yaml").as_deref(),
            Some("lc/trafficrouting_ingress/nginx.lua")
        );
        assert_eq!(
            script_of("lc/trafficrouting_ingress/nginx.lua").as_deref(),
            Some("lc/trafficrouting_ingress/nginx.lua")
        );
        assert_eq!(script_of("lc/kruise-lua.toml"), None);
        assert_eq!(script_of("configmap.yaml"), None);
    }

    #[test]
    fn temporary_and_git_files_are_ignored() {
        let root = std::env::temp_dir();
        let watched = vec![root.clone()];
        assert!(relevant(&root.join("a/trafficRouting.lua"), &watched));
        assert!(!relevant(&root.join("a/.x.lua.kruise-lua.tmp"), &watched));
        assert!(!relevant(&root.join(".git/index"), &watched));
        assert!(!relevant(Path::new("/elsewhere/x.lua"), &watched));
    }
}
