//! Writing files without ever losing what is in them: whole-file replacement that checks the
//! file still holds what the new text was computed from (compare-and-swap), and creation that
//! never overwrites. Both go through a temporary file in the target's own folder, fsync'd,
//! then moved into place, and fsync the folder so the move survives a crash. Symlinks are
//! followed: the link stays a link and its target gets the new text, with its permissions.
//! Only a regular file is replaced: what is there is read as every input is read
//! ([`kruise_lua_engine::input`]: non-blocking, regular files only), so a FIFO never blocks
//! the writer and a device node is never swapped for a regular file.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use kruise_lua_engine::input::{self, ReadError};

/// Why a replacement did not happen.
#[derive(Debug)]
pub enum ReplaceError {
    /// The file no longer holds the text the new contents were computed from (an edit in the
    /// editor or elsewhere): nothing was written.
    Changed {
        path: PathBuf,
    },
    /// Something other than a regular file is there (`what`: "a FIFO", "a device"…): it is
    /// neither read (that could block) nor replaced.
    NotRegular {
        path: PathBuf,
        what: &'static str,
    },
    Io {
        path: PathBuf,
        error: io::Error,
    },
}

impl std::fmt::Display for ReplaceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReplaceError::Changed { path } => write!(
                f,
                "{}: not written, the file changed on disk since it was read",
                path.display()
            ),
            ReplaceError::NotRegular { path, what } => write!(
                f,
                "{}: is {what}, not a regular file; nothing was written",
                path.display()
            ),
            ReplaceError::Io { path, error } => write!(f, "{}: {error}", path.display()),
        }
    }
}

impl std::error::Error for ReplaceError {}

/// Replaces the contents of `path` (or of the file its symlinks lead to) with `contents`, if
/// and only if it still holds exactly `expected`.
pub fn replace_file(path: &Path, expected: &[u8], contents: &[u8]) -> Result<(), ReplaceError> {
    replace_file_with(path, expected, contents, &mut || {})
}

/// [`replace_file`] with a hook run just before the new file is moved into place (tests use
/// it to make a racing writer hit the narrowest window deterministically).
fn replace_file_with(
    path: &Path,
    expected: &[u8],
    contents: &[u8],
    before_commit: &mut dyn FnMut(),
) -> Result<(), ReplaceError> {
    let io_error = |path: &Path| {
        let path = path.to_path_buf();
        move |error| ReplaceError::Io { path, error }
    };
    // The real file: writing a temporary file next to a symlink and renaming it over the
    // link would replace the link with a regular file and leave its target unchanged.
    let target = fs::canonicalize(path).map_err(io_error(path))?;
    let changed = || ReplaceError::Changed {
        path: path.to_path_buf(),
    };
    match holds(&target, expected) {
        Ok(true) => {}
        Ok(false) => return Err(changed()),
        Err(Unreadable::NotRegular(what)) => {
            return Err(ReplaceError::NotRegular {
                path: path.to_path_buf(),
                what,
            });
        }
        Err(Unreadable::Io(error)) => {
            return Err(ReplaceError::Io {
                path: target,
                error,
            });
        }
    }
    let permissions = fs::metadata(&target)
        .map_err(io_error(&target))?
        .permissions();
    if permissions.readonly() {
        // What an editor does too: a read-only file is not replaced behind the user's back.
        return Err(ReplaceError::Io {
            path: target,
            error: io::Error::new(io::ErrorKind::PermissionDenied, "the file is read-only"),
        });
    }
    let temp = write_temp(&target, contents, Some(permissions)).map_err(io_error(&target))?;
    before_commit();
    match commit_if_unchanged(&temp, &target, expected) {
        Ok(committed) => {
            // What is left at the temporary name is ours, or the old text checked equal.
            let _ = fs::remove_file(&temp);
            if !committed {
                return Err(changed());
            }
            sync_folder(&target).map_err(io_error(&target))?;
            Ok(())
        }
        Err(Stuck::Before(error)) => {
            let _ = fs::remove_file(&temp);
            Err(ReplaceError::Io {
                path: target,
                error,
            })
        }
        // Swapped, and the text swapped out could not be checked or put back: it stays at
        // the temporary name, never deleted unseen.
        Err(Stuck::Swapped(error)) => Err(ReplaceError::Io {
            path: target,
            error: io::Error::new(
                error.kind(),
                format!(
                    "{error}; the file's previous text is kept in {}",
                    temp.display()
                ),
            ),
        }),
    }
}

/// Why the text at a path could not be compared.
enum Unreadable {
    NotRegular(&'static str),
    Io(io::Error),
}

impl From<Unreadable> for io::Error {
    fn from(why: Unreadable) -> io::Error {
        match why {
            Unreadable::Io(error) => error,
            Unreadable::NotRegular(what) => io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("is {what}, not a regular file"),
            ),
        }
    }
}

/// Whether `path` is a regular file holding exactly `expected`. Read as inputs are read
/// ([`input::read_bytes`]): a FIFO or device put there is refused by its type, never opened
/// blocking nor read; a file longer than `expected` is not read past that length.
fn holds(path: &Path, expected: &[u8]) -> Result<bool, Unreadable> {
    match input::read_bytes(path, expected.len() as u64) {
        Ok(bytes) => Ok(bytes == expected),
        Err(ReadError::TooLarge { .. }) => Ok(false),
        Err(ReadError::NotRegular { what }) => Err(Unreadable::NotRegular(what)),
        Err(ReadError::Io(error)) => Err(Unreadable::Io(error)),
        // read_bytes does not decode; any other refusal means the bytes are not `expected`.
        Err(ReadError::NotUtf8 { .. }) => Ok(false),
    }
}

/// How a commit failed: before anything moved, or after the swap (the temporary name then
/// holds the file's previous text).
enum Stuck {
    Before(io::Error),
    Swapped(io::Error),
}

/// Moves `temp` over `target` if `target` still holds `expected`; `Ok(false)` when it did not
/// (and `target` is left as it was).
///
/// On Linux the move is `renameat2(RENAME_EXCHANGE)`: the two names swap atomically, the text
/// that was swapped out is checked, and swapped back if it is not `expected`. So an edit
/// saved between the check and the move is never unlinked unseen, as it would be by a plain
/// rename (a check-then-rename leaves a window in which it is lost).
fn commit_if_unchanged(temp: &Path, target: &Path, expected: &[u8]) -> Result<bool, Stuck> {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{CWD, RenameFlags, renameat_with};
        let exchange = || renameat_with(CWD, temp, CWD, target, RenameFlags::EXCHANGE);
        match exchange() {
            Ok(()) => {
                let swapped_out = holds(temp, expected);
                if matches!(swapped_out, Ok(true)) {
                    return Ok(true);
                }
                // Someone wrote in between (or put a FIFO there, or it cannot be read): put
                // what they left back.
                exchange().map_err(|e| Stuck::Swapped(e.into()))?;
                return swapped_out.map_err(|why| Stuck::Before(why.into()));
            }
            // File systems without RENAME_EXCHANGE: the check-then-rename below.
            Err(e)
                if e == rustix::io::Errno::INVAL
                    || e == rustix::io::Errno::NOSYS
                    || e == rustix::io::Errno::OPNOTSUPP => {}
            Err(e) => return Err(Stuck::Before(e.into())),
        }
    }
    if !holds(target, expected).map_err(|why| Stuck::Before(why.into()))? {
        return Ok(false);
    }
    fs::rename(temp, target).map_err(Stuck::Before)?;
    Ok(true)
}

/// Creates `path` with `contents`; fails with [`io::ErrorKind::AlreadyExists`] when something
/// is already there (even if it appeared a moment ago). The folder must exist.
pub fn create_new_file(path: &Path, contents: &[u8]) -> io::Result<()> {
    let temp = write_temp(path, contents, None)?;
    // A hard link, unlike a rename, refuses to replace a file that appeared since any check.
    let placed = match fs::hard_link(&temp, path) {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => Err(err),
        // No hard links here (some network or FAT file systems): rename after checking again.
        Err(_) if fs::symlink_metadata(path).is_ok() => {
            Err(io::Error::from(io::ErrorKind::AlreadyExists))
        }
        Err(_) => fs::rename(&temp, path),
    };
    let _ = fs::remove_file(&temp);
    placed?;
    sync_folder(path)
}

/// Writes `contents` to a new temporary file beside `path`, fsync'd; removed again on error.
fn write_temp(
    path: &Path,
    contents: &[u8],
    permissions: Option<fs::Permissions>,
) -> io::Result<PathBuf> {
    // Several writes from one process may be under way (one per request thread).
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let folder = parent_folder(path);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = folder.join(format!(
        ".{name}.kruise-lua-{}-{}.tmp",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let written = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temp)
        .and_then(|mut out| {
            out.write_all(contents)?;
            if let Some(permissions) = permissions {
                out.set_permissions(permissions)?;
            }
            out.sync_all()
        });
    match written {
        Ok(()) => Ok(temp),
        Err(err) => {
            let _ = fs::remove_file(&temp);
            Err(err)
        }
    }
}

fn parent_folder(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Makes a rename or link in `path`'s folder durable.
fn sync_folder(path: &Path) -> io::Result<()> {
    #[cfg(unix)]
    File::open(parent_folder(path))?.sync_all()?;
    #[cfg(not(unix))]
    let _ = (path, File::open); // folders cannot be opened for syncing there
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        crate::test_scratch::folder("kl-atomic", name)
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn replaces_only_what_was_read() {
        let dir = scratch("cas");
        let file = dir.join("c.yaml");
        fs::write(&file, "old").unwrap();
        replace_file(&file, b"old", b"new").unwrap();
        assert_eq!(fs::read_to_string(&file).unwrap(), "new");
        let err = replace_file(&file, b"old", b"newer").unwrap_err();
        assert!(matches!(err, ReplaceError::Changed { .. }), "{err}");
        assert_eq!(fs::read_to_string(&file).unwrap(), "new");
        assert_eq!(entries(&dir), ["c.yaml"], "no temporary file left");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_write_racing_the_move_is_kept() {
        let dir = scratch("race");
        let file = dir.join("c.yaml");
        fs::write(&file, "old").unwrap();
        // In place (an editor truncating and writing) and by rename (an atomic save), both at
        // the last moment before the move.
        let err = replace_file_with(&file, b"old", b"accepted", &mut || {
            fs::write(&file, "typed meanwhile").unwrap();
        })
        .unwrap_err();
        assert!(matches!(err, ReplaceError::Changed { .. }), "{err}");
        assert_eq!(fs::read_to_string(&file).unwrap(), "typed meanwhile");
        fs::write(&file, "old").unwrap();
        let saved = dir.join("saved.tmp");
        let err = replace_file_with(&file, b"old", b"accepted", &mut || {
            fs::write(&saved, "saved meanwhile").unwrap();
            fs::rename(&saved, &file).unwrap();
        })
        .unwrap_err();
        assert!(matches!(err, ReplaceError::Changed { .. }), "{err}");
        assert_eq!(fs::read_to_string(&file).unwrap(), "saved meanwhile");
        assert_eq!(entries(&dir), ["c.yaml"]);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn writes_through_symlinks_and_keeps_permissions() {
        use std::os::unix::fs::{PermissionsExt, symlink};
        let dir = scratch("link");
        fs::create_dir_all(dir.join("real")).unwrap();
        let target = dir.join("real/c.yaml");
        fs::write(&target, "old").unwrap();
        fs::set_permissions(&target, fs::Permissions::from_mode(0o640)).unwrap();
        let link = dir.join("c.yaml");
        symlink("real/c.yaml", &link).unwrap();
        replace_file(&link, b"old", b"new").unwrap();
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(fs::read_to_string(&target).unwrap(), "new");
        let mode = fs::metadata(&target).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
        assert_eq!(entries(&dir.join("real")), ["c.yaml"]);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn read_only_files_are_left_alone() {
        use std::os::unix::fs::PermissionsExt;
        let dir = scratch("readonly");
        let file = dir.join("c.yaml");
        fs::write(&file, "old").unwrap();
        fs::set_permissions(&file, fs::Permissions::from_mode(0o444)).unwrap();
        let err = replace_file(&file, b"old", b"new").unwrap_err();
        assert!(err.to_string().contains("read-only"), "{err}");
        assert_eq!(fs::read_to_string(&file).unwrap(), "old");
        assert_eq!(entries(&dir), ["c.yaml"]);
        fs::remove_dir_all(&dir).unwrap();
    }

    /// A FIFO is refused without blocking (it used to be opened blocking, waiting for a
    /// writer for ever), and a device node is left a device (it used to be read as empty and
    /// swapped for a regular file).
    #[cfg(all(target_os = "linux", target_env = "gnu"))] // libc is a dependency there
    #[test]
    fn only_regular_files_are_replaced() {
        let dir = scratch("special");
        let make = |name: &str, mode: libc::mode_t, device: libc::dev_t| {
            let path = dir.join(name);
            let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
            // SAFETY: a valid NUL-terminated path; mknod only creates a node in our folder.
            (unsafe { libc::mknod(c_path.as_ptr(), mode, device) } == 0).then_some(path)
        };
        let fifo = make("fifo.yaml", libc::S_IFIFO | 0o644, 0).expect("mkfifo");
        let err = replace_file(&fifo, b"", b"new").unwrap_err();
        assert!(
            matches!(err, ReplaceError::NotRegular { what: "a FIFO", .. }),
            "{err}"
        );
        assert!(
            err.to_string()
                .ends_with("fifo.yaml: is a FIFO, not a regular file; nothing was written"),
            "{err}"
        );
        // A character device (what /dev/null is) needs root to create: checked where it can be.
        if let Some(device) = make("dev.yaml", libc::S_IFCHR | 0o666, libc::makedev(1, 3)) {
            let err = replace_file(&device, b"", b"new").unwrap_err();
            assert!(
                matches!(
                    err,
                    ReplaceError::NotRegular {
                        what: "a device",
                        ..
                    }
                ),
                "{err}"
            );
            use std::os::unix::fs::FileTypeExt;
            let kind = fs::symlink_metadata(&device).unwrap().file_type();
            assert!(kind.is_char_device(), "{kind:?}");
        }
        let names = entries(&dir);
        assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn creating_never_overwrites() {
        let dir = scratch("create");
        let file = dir.join("n.yaml");
        create_new_file(&file, b"first").unwrap();
        let err = create_new_file(&file, b"second").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read_to_string(&file).unwrap(), "first");
        assert_eq!(entries(&dir), ["n.yaml"]);
        fs::remove_dir_all(&dir).unwrap();
    }
}
