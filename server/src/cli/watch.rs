//! `check --watch` and `lint --watch`: run once, then again after every change on disk under
//! the PATHs (the `notify` watcher the language server uses; bursts of events from one save are
//! taken together). Each run clears the terminal and prints a one-line summary and the report.
//! `check` reruns only the scripts the changed files belong to; `lint` reruns everything (it is
//! cheap). Runs until interrupted; an error in one run (a file deleted meanwhile) is printed
//! and the watch goes on. A watched folder that is deleted (a branch switch, a generator) is
//! waited for through its nearest existing parent, and watched again when it comes back.

use std::io::{IsTerminal, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use kruise_lua_engine::discovery::{CUSTOM_SCRIPT_NAME, INGRESS_FOLDER};
use notify::event::ModifyKind;
use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};

use crate::project::UsageError;
use crate::project::paths;

/// What one run printed and its one-line summary.
pub struct Outcome {
    pub summary: String,
    pub report: Vec<u8>,
}

/// How long the watcher waits for more events of the same save before running.
const SETTLE: Duration = Duration::from_millis(150);

/// How many times in a row the watches are set up again when the folders change while that is
/// done (a folder that comes back between the look and the watch): past it, the next event
/// tries again.
const REARM_ROUNDS: usize = 8;

/// How often the watches are tried again while one could not be set up.
const RETRY: Duration = Duration::from_secs(1);

/// What the watcher tells the loop.
enum Signal {
    /// These paths were created, removed or changed; `gone`: removed or renamed away.
    Changed { paths: Vec<PathBuf>, gone: bool },
    /// Events were lost (the kernel's queue overflowed): everything may have changed.
    Rescan,
}

/// One watch as set up: the folder, how, and which file it was (a folder deleted and made
/// again under the same name is another one, and its watch is gone with the old one).
#[derive(Debug, Clone, PartialEq)]
struct Armed {
    path: PathBuf,
    recursive: bool,
    identity: Option<(u64, u64)>,
    /// The watcher said the folder itself was removed or renamed: its watch is gone even if
    /// a folder of that name, maybe with the same inode number reused, is there now.
    lost: bool,
    /// Which changed paths belong to the PATH, worked out with its watch (a PATH that becomes
    /// a folder, or stops being one, changes its watch too).
    covers: Covers,
}

/// The changed paths that belong to a PATH.
#[derive(Debug, Clone, PartialEq)]
enum Covers {
    /// Everything under a folder: the PATH's own, or a script's (its cases live beside it).
    Under(PathBuf),
    /// The file itself.
    Exactly(PathBuf),
}

impl Covers {
    fn contains(&self, path: &Path) -> bool {
        match self {
            Covers::Under(folder) => path.starts_with(folder),
            Covers::Exactly(file) => path == file,
        }
    }
}

/// The watch a PATH (absolute) needs now: a folder, recursively; a file through its folder
/// (editors save by renaming a new file over the old one), recursively for a script, whose
/// cases live beside it. While that folder is gone, its nearest existing parent, not
/// recursively (one folder's events, whatever the tree), to see it come back.
fn wanted(root: &Path) -> Armed {
    let script = root.extension().is_some_and(|e| e == "lua");
    let (path, recursive, covers) = if root.is_dir() {
        (root.to_path_buf(), true, Covers::Under(root.to_path_buf()))
    } else {
        let dir = parent(root);
        let covers = if script {
            Covers::Under(dir.clone())
        } else {
            Covers::Exactly(root.to_path_buf())
        };
        if dir.is_dir() {
            (dir, script, covers)
        } else {
            (nearest_existing(&dir), false, covers)
        }
    };
    let identity = identity(&path);
    Armed {
        path,
        recursive,
        identity,
        lost: false,
        covers,
    }
}

/// The nearest folder that exists among `path`'s parents.
fn nearest_existing(path: &Path) -> PathBuf {
    path.ancestors()
        .skip(1)
        .find(|p| p.is_dir())
        .map_or_else(|| PathBuf::from("/"), Path::to_path_buf)
}

/// Which file a path is (device and inode), where the platform says.
fn identity(path: &Path) -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// A watcher over the PATHs' watches, sending to `tx` (a folder two PATHs need is watched
/// once). A fresh watcher each time they change: the old one's watches on a deleted folder
/// are gone or stale, and dropping it removes them all.
fn watcher_over(
    armed: &[Armed],
    tx: &mpsc::Sender<Signal>,
) -> Result<RecommendedWatcher, (Option<PathBuf>, notify::Error)> {
    let tx = tx.clone();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        let Ok(event) = event else { return };
        if event.need_rescan() {
            let _ = tx.send(Signal::Rescan);
        } else if matches!(
            event.kind,
            EventKind::Create(_) | EventKind::Remove(_) | EventKind::Modify(_)
        ) {
            let gone = matches!(
                event.kind,
                EventKind::Remove(_) | EventKind::Modify(ModifyKind::Name(_))
            );
            let _ = tx.send(Signal::Changed {
                paths: event.paths,
                gone,
            });
        }
    })
    .map_err(|err| (None, err))?;
    let mut folders: Vec<(&Path, bool)> = Vec::new();
    for a in armed {
        match folders.iter_mut().find(|(path, _)| *path == a.path) {
            Some((_, recursive)) => *recursive |= a.recursive,
            None => folders.push((&a.path, a.recursive)),
        }
    }
    for (path, recursive) in folders {
        let mode = if recursive {
            RecursiveMode::Recursive
        } else {
            RecursiveMode::NonRecursive
        };
        watcher
            .watch(path, mode)
            .map_err(|err| (Some(path.to_path_buf()), err))?;
    }
    Ok(watcher)
}

/// Runs `run` now and after every change under `roots`, forever (until the process is
/// interrupted). `run` gets the changed files (empty for the first run).
pub fn watch(
    roots: &[PathBuf],
    run: &mut dyn FnMut(&[PathBuf]) -> Result<Outcome, UsageError>,
) -> Result<u8, UsageError> {
    let (tx, rx) = mpsc::channel::<Signal>();
    let watched: Vec<PathBuf> = roots
        .iter()
        .map(|root| std::path::absolute(root).unwrap_or_else(|_| root.clone()))
        .collect();
    let mut armed: Vec<Armed> = watched.iter().map(|root| wanted(root)).collect();
    let mut watcher = watcher_over(&armed, &tx).map_err(|(path, err)| {
        // `None`: the watcher itself could not be made, before any folder was watched.
        let Some(path) = path else {
            return UsageError(format!("cannot watch files: {err}"));
        };
        let root = roots
            .iter()
            .zip(&armed)
            .find(|(_, a)| a.path == path)
            .map_or(path.as_path(), |(root, _)| root.as_path());
        UsageError(format!("{}: cannot watch: {err}", paths::display(root)))
    })?;
    // The watches in `armed` could not all be set up (a folder went away meanwhile).
    let mut unarmed = false;
    show(run(&[]));
    loop {
        // While a watch could not be set up, try again each second even without an event.
        let first = if unarmed {
            match rx.recv_timeout(RETRY) {
                Ok(signal) => Some(signal),
                Err(mpsc::RecvTimeoutError::Timeout) => None,
                Err(mpsc::RecvTimeoutError::Disconnected) => return Ok(super::options::EXIT_USAGE),
            }
        } else {
            let Ok(signal) = rx.recv() else {
                return Ok(super::options::EXIT_USAGE);
            };
            Some(signal)
        };
        let mut signals: Vec<Signal> = first.into_iter().collect();
        while let Ok(signal) = rx.recv_timeout(SETTLE) {
            signals.push(signal);
        }
        let mut changed = Vec::new();
        for signal in signals {
            match signal {
                Signal::Changed { paths, gone } => {
                    if gone {
                        for a in armed.iter_mut().filter(|a| paths.contains(&a.path)) {
                            a.lost = true;
                        }
                    }
                    changed.extend(paths);
                }
                Signal::Rescan => changed.extend(watched.iter().cloned()),
            }
        }
        // A watched folder deleted, or made again: watch what is there now, and rerun each
        // PATH whose watch moved (what was written into a folder before its watch was set up
        // sent no event). Looked at again after the new watches are set up, since the folder
        // may have come back in between.
        for _ in 0..REARM_ROUNDS {
            let now: Vec<Armed> = watched.iter().map(|root| wanted(root)).collect();
            if now == armed && !unarmed {
                break;
            }
            for ((root, before), after) in watched.iter().zip(&armed).zip(&now) {
                if before != after {
                    changed.push(root.clone());
                }
            }
            armed = now;
            match watcher_over(&armed, &tx) {
                Ok(fresh) => {
                    drop(std::mem::replace(&mut watcher, fresh));
                    unarmed = false;
                }
                // A folder went away meanwhile: look again (now, or at the next event).
                Err(_) => unarmed = true,
            }
        }
        changed.retain(|path| relevant(path, &armed));
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

/// Whether a changed path can matter: under a watched folder or one of the watched files (as
/// `armed`, the watches of the PATHs as they are now, says), and not a temporary file (ours
/// from `--fix`, or an editor's).
fn relevant(path: &Path, armed: &[Armed]) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    let temporary = name.ends_with(".tmp") || name.ends_with('~') || name.ends_with(".swp");
    let inside = armed.iter().any(|a| a.covers.contains(path));
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

    /// A PATH that is gone is waited for through its nearest existing folder, alone; one that
    /// is there is watched as before.
    #[test]
    fn a_missing_path_is_waited_for_through_its_nearest_existing_parent() {
        let root = std::path::absolute(std::env::temp_dir()).unwrap();
        let gone = root.join("kruise-lua-no-such-folder/lc");
        let armed = wanted(&gone);
        assert_eq!(
            (armed.path.as_path(), armed.recursive),
            (root.as_path(), false)
        );
        let script = root.join("kruise-lua-no-such-folder/trafficRouting.lua");
        assert_eq!(wanted(&script).path, root);
        assert_eq!(
            (wanted(&root).path, wanted(&root).recursive),
            (root.clone(), true)
        );
        let file = root.join("case.yaml");
        assert_eq!(
            (wanted(&file).path, wanted(&file).recursive),
            (root.clone(), false)
        );
    }

    #[test]
    fn temporary_and_git_files_are_ignored() {
        let root = std::env::temp_dir();
        let watched = vec![wanted(&root)];
        assert!(relevant(&root.join("a/trafficRouting.lua"), &watched));
        assert!(!relevant(&root.join("a/.x.lua.kruise-lua.tmp"), &watched));
        assert!(!relevant(&root.join(".git/index"), &watched));
        assert!(!relevant(Path::new("/elsewhere/x.lua"), &watched));
    }

    /// A script PATH covers its folder (its cases live there), another file only itself.
    #[test]
    fn a_file_path_covers_its_script_folder_or_itself() {
        let root = std::env::temp_dir().join("kruise-lua-watch-covers");
        let script = vec![wanted(&root.join("trafficRouting.lua"))];
        assert!(relevant(&root.join("testdata/case.yaml"), &script));
        let manifest = vec![wanted(&root.join("cm.yaml"))];
        assert!(relevant(&root.join("cm.yaml"), &manifest));
        assert!(!relevant(&root.join("other.yaml"), &manifest));
    }
}
