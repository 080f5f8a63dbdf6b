//! Open buffers. For an open file the buffer is the truth; every other file is read from disk.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use kruise_lua_engine::input::{self, ReadError};
use tower_lsp_server::ls_types::Uri;

use super::parses::ParseCache;

/// Files larger than this are stored but neither analysed nor run (a 10 MB file must not stall
/// the server): the analysis of a Lua script is linear, but runs and hovers are not free.
pub const MAX_ANALYSED_BYTES: usize = 2 * 1024 * 1024;

/// An open buffer.
#[derive(Debug, Clone)]
pub struct Document {
    pub uri: Uri,
    pub text: String,
    pub version: i32,
}

/// The open buffers, keyed by file path (`untitled:` and other non-file URIs by their text).
#[derive(Debug, Default)]
pub struct Documents {
    open: RwLock<HashMap<PathBuf, Document>>,
    /// The parse of each open buffer's current version, shared by the requests on it.
    pub parses: Arc<ParseCache>,
}

/// The path a URI stands for: its file path, or its text for URIs that are not files.
pub fn uri_path(uri: &Uri) -> PathBuf {
    uri.to_file_path()
        .map(|p| p.into_owned())
        .unwrap_or_else(|| PathBuf::from(uri.as_str()))
}

/// The URI of a path (file URIs; a path made from a non-file URI turns back into it).
pub fn path_uri(path: &Path) -> Option<Uri> {
    Uri::from_file_path(path).or_else(|| path.to_str()?.parse().ok())
}

/// What identifies a file's content on disk without reading it: size, modification time and
/// inode (a rename over it or an edit changes one of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    pub len: u64,
    modified: Option<std::time::SystemTime>,
    inode: u64,
}

/// The stamp of a regular file on disk (`None`: missing, unreadable, or not a regular file).
pub fn disk_stamp(path: &Path) -> Option<FileStamp> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() {
        return None;
    }
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(&meta);
    #[cfg(not(unix))]
    let inode = 0;
    Some(FileStamp {
        len: meta.len(),
        modified: meta.modified().ok(),
        inode,
    })
}

/// Reads a user's file from disk as the CLI does (the engine's `input::read_bytes`): regular
/// files only, opened without blocking (a FIFO named `*.yaml` must not block the server), and
/// at most [`MAX_ANALYSED_BYTES`] (a larger file is neither analysed nor run, so it is not read).
pub fn read_disk_file(path: &Path) -> Result<Vec<u8>, ReadError> {
    input::read_bytes(path, MAX_ANALYSED_BYTES as u64)
}

impl Documents {
    pub fn open(&self, uri: Uri, text: String, version: i32) -> PathBuf {
        let path = uri_path(&uri);
        let mut open = self.write();
        open.insert(path.clone(), Document { uri, text, version });
        self.parses.changed(&path, version);
        path
    }

    pub fn close(&self, path: &Path) {
        let mut open = self.write();
        open.remove(path);
        self.parses.closed(path);
    }

    /// Runs `edit` on an open buffer; returns false when the file is not open.
    pub fn update(&self, path: &Path, version: i32, edit: impl FnOnce(&mut String)) -> bool {
        match self.write().get_mut(path) {
            Some(doc) => {
                edit(&mut doc.text);
                doc.version = version;
                self.parses.changed(path, version);
                true
            }
            None => false,
        }
    }

    pub fn get(&self, path: &Path) -> Option<Document> {
        self.read_lock().get(path).cloned()
    }

    pub fn is_open(&self, path: &Path) -> bool {
        self.read_lock().contains_key(path)
    }

    pub fn open_paths(&self) -> Vec<PathBuf> {
        self.read_lock().keys().cloned().collect()
    }

    /// The text of a file: the open buffer, or the file on disk (`None` when unreadable, not a
    /// regular file, or larger than [`MAX_ANALYSED_BYTES`]; see [`read_disk_file`]).
    pub fn text(&self, path: &Path) -> Option<String> {
        self.read(path).map(|(text, _)| text)
    }

    /// A file's text as [`Documents::text`] has it, and why `check` would refuse it: a file on
    /// disk that is not UTF-8 (`check` reads UTF-8 only; a buffer is always UTF-8: it came as a
    /// JSON string). The text is then the lossy reading, for positions only: never run it.
    pub fn read(&self, path: &Path) -> Option<(String, Option<ReadError>)> {
        if let Some(doc) = self.read_lock().get(path) {
            return Some((doc.text.clone(), None));
        }
        Some(match String::from_utf8(read_disk_file(path).ok()?) {
            Ok(text) => (text, None),
            Err(not_utf8) => (
                String::from_utf8_lossy(not_utf8.as_bytes()).into_owned(),
                input::utf8_text(not_utf8.into_bytes()).err(),
            ),
        })
    }

    /// Whether a file exists as a buffer or on disk.
    pub fn exists(&self, path: &Path) -> bool {
        self.is_open(path) || path.is_file()
    }

    fn read_lock(&self) -> std::sync::RwLockReadGuard<'_, HashMap<PathBuf, Document>> {
        self.open.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<PathBuf, Document>> {
        self.open.write().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_buffer_wins_over_disk() {
        let dir = std::env::temp_dir().join(format!("kl-docs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("a.lua");
        std::fs::write(&file, "disk").unwrap();
        let docs = Documents::default();
        assert_eq!(docs.text(&file).as_deref(), Some("disk"));
        let path = docs.open(path_uri(&file).unwrap(), "buffer".into(), 1);
        assert_eq!(path, file);
        assert_eq!(docs.text(&file).as_deref(), Some("buffer"));
        assert!(docs.update(&file, 2, |t| t.push('!')));
        assert_eq!(docs.text(&file).as_deref(), Some("buffer!"));
        docs.close(&file);
        assert_eq!(docs.text(&file).as_deref(), Some("disk"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A FIFO a user opens by path is never read (reading one blocks until a writer comes),
    /// nor is a file past the analysis limit.
    #[cfg(unix)]
    #[test]
    fn fifos_and_oversized_files_on_disk_are_not_read() {
        let dir = std::env::temp_dir().join(format!("kl-docs-fifo-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("case.yaml");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("run mkfifo");
        assert!(status.success());
        let docs = Documents::default();
        // Before the fix this blocked forever: no writer ever opens the FIFO.
        let (done, wait) = std::sync::mpsc::channel();
        let reader = std::thread::spawn({
            let fifo = fifo.clone();
            move || {
                let text = Documents::default().text(&fifo);
                let read = read_disk_file(&fifo).map(drop);
                done.send(()).unwrap();
                (text, read)
            }
        });
        if wait
            .recv_timeout(std::time::Duration::from_secs(30))
            .is_err()
        {
            // Unblock the reader by opening the FIFO for writing, then fail.
            drop(std::fs::OpenOptions::new().write(true).open(&fifo));
            panic!("reading a FIFO blocked");
        }
        let (text, read) = reader.join().unwrap();
        assert_eq!(text, None);
        assert!(
            matches!(read, Err(ReadError::NotRegular { what: "a FIFO" })),
            "{read:?}"
        );
        let big = dir.join("big.lua");
        std::fs::write(&big, vec![b'-'; MAX_ANALYSED_BYTES + 1]).unwrap();
        assert_eq!(docs.text(&big), None);
        assert!(matches!(
            read_disk_file(&big),
            Err(ReadError::TooLarge { .. })
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
