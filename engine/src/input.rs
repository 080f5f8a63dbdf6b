//! Reading input files (scripts, test cases, manifests) without ever blocking and within a
//! size limit: only regular files are read, they are opened non-blocking, and a file over the
//! limit is refused before it is read.
//!
//! A FIFO named `*.yaml` would block `open` until a writer appears and `read` until it writes;
//! a device may never end. Both are refused by their metadata (symlinks followed) before they
//! are opened, and `O_NONBLOCK` covers a file swapped for a FIFO between the check and the
//! open, where the opened file's own metadata is checked again.

use std::fs::{self, File};
use std::io::{self, Read};
use std::path::Path;

/// The default largest case, script or manifest read (16 MiB): real test cases are a few KiB,
/// and reading one costs a few dozen times its size in memory.
pub const DEFAULT_MAX_INPUT_BYTES: u64 = 16 << 20;

/// Why a file was not read.
#[derive(Debug)]
pub enum ReadError {
    /// Not a regular file (after following symlinks): `what` names its type ("a FIFO").
    NotRegular {
        what: &'static str,
    },
    /// Larger than the limit.
    TooLarge {
        size: u64,
        limit: u64,
    },
    /// Not valid UTF-8: the 1-based line and byte column of the first invalid byte.
    NotUtf8 {
        line: u32,
        column: u32,
    },
    Io(io::Error),
}

impl ReadError {
    /// Whether this is a failure to read at all (the file's content was never seen).
    pub fn is_io(&self) -> bool {
        matches!(self, ReadError::Io(_))
    }
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::NotRegular { what } => {
                write!(
                    f,
                    "is {what}, not a regular file (not read: reading it could block)"
                )
            }
            ReadError::TooLarge { size, limit } => write!(
                f,
                "is {} bytes, over the {} limit for an input file (raise it with --max-input-size)",
                size,
                size_text(*limit)
            ),
            ReadError::NotUtf8 { line, column } => write!(
                f,
                "line {line}: byte {column} is not valid UTF-8 (kruise-lua reads UTF-8 text only)"
            ),
            ReadError::Io(err) => f.write_str(&io_text(err)),
        }
    }
}

impl std::error::Error for ReadError {}

/// `limit` as people write it: `16 MiB`, `512 KiB`, or bytes.
pub fn size_text(limit: u64) -> String {
    if limit >= 1 << 20 && limit.is_multiple_of(1 << 20) {
        format!("{} MiB", limit >> 20)
    } else if limit >= 1 << 10 && limit.is_multiple_of(1 << 10) {
        format!("{} KiB", limit >> 10)
    } else {
        format!("{limit} bytes")
    }
}

/// An I/O error's text without Rust's " (os error N)" suffix, lower-cased as Go prints errno
/// texts (`no such file or directory`).
pub fn io_text(err: &io::Error) -> String {
    match err.kind() {
        io::ErrorKind::NotFound => "no such file or directory".to_string(),
        io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        _ => {
            let text = err.to_string();
            let text = text.split(" (os error").next().unwrap_or(&text);
            let mut chars = text.chars();
            match chars.next() {
                Some(first) => first.to_lowercase().chain(chars).collect(),
                None => String::new(),
            }
        }
    }
}

/// What kind of non-regular file `meta` describes, for messages.
pub fn file_type_name(meta: &fs::Metadata) -> &'static str {
    let kind = meta.file_type();
    if kind.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a FIFO";
        }
        if kind.is_socket() {
            return "a socket";
        }
        if kind.is_block_device() || kind.is_char_device() {
            return "a device";
        }
    }
    "not a regular file"
}

/// Whether `path` (symlinks followed) is something other than a regular file, and what.
/// `None` for a regular file or when its metadata cannot be read (reading will say why).
pub fn non_regular(path: &Path) -> Option<&'static str> {
    fs::metadata(path)
        .ok()
        .filter(|meta| !meta.is_file())
        .map(|meta| file_type_name(&meta))
}

/// Opens `path` for reading without blocking, whatever it turns out to be.
fn open_non_blocking(path: &Path) -> io::Result<File> {
    let mut options = fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    options.open(path)
}

/// Reads the regular file at `path` if it holds at most `limit` bytes.
pub fn read_bytes(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let meta = fs::metadata(path).map_err(ReadError::Io)?;
    if !meta.is_file() {
        return Err(ReadError::NotRegular {
            what: file_type_name(&meta),
        });
    }
    if meta.len() > limit {
        return Err(ReadError::TooLarge {
            size: meta.len(),
            limit,
        });
    }
    let file = open_non_blocking(path).map_err(ReadError::Io)?;
    // The path may have been swapped since the check above: trust only the open file.
    let meta = file.metadata().map_err(ReadError::Io)?;
    if !meta.is_file() {
        return Err(ReadError::NotRegular {
            what: file_type_name(&meta),
        });
    }
    let mut bytes = Vec::with_capacity(meta.len().min(limit) as usize);
    // A file that grows while it is read stops one byte past the limit.
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(ReadError::Io)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge {
            size: bytes.len() as u64,
            limit,
        });
    }
    Ok(bytes)
}

/// Reads the regular file at `path` as UTF-8 text if it holds at most `limit` bytes.
pub fn read_text(path: &Path, limit: u64) -> Result<String, ReadError> {
    utf8_text(read_bytes(path, limit)?)
}

/// `bytes` as a String, or where the first invalid byte is.
pub fn utf8_text(bytes: Vec<u8>) -> Result<String, ReadError> {
    String::from_utf8(bytes).map_err(|err| {
        let valid = err.utf8_error().valid_up_to();
        let bytes = err.as_bytes();
        let line_start = bytes[..valid]
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |i| i + 1);
        let line = bytes[..valid].iter().filter(|b| **b == b'\n').count() + 1;
        ReadError::NotUtf8 {
            line: u32::try_from(line).unwrap_or(u32::MAX),
            column: u32::try_from(valid - line_start + 1).unwrap_or(u32::MAX),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("kruise-lua-input-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = scratch("fifo");
        let fifo = dir.join("case.yaml");
        let c_path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo only creates a file.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o644) }, 0);
        let err = read_text(&fifo, DEFAULT_MAX_INPUT_BYTES).unwrap_err();
        assert!(
            matches!(err, ReadError::NotRegular { what: "a FIFO" }),
            "{err:?}"
        );
        assert_eq!(non_regular(&fifo), Some("a FIFO"));
        // Through a symlink too.
        let link = dir.join("link.yaml");
        std::os::unix::fs::symlink(&fifo, &link).unwrap();
        assert!(matches!(
            read_text(&link, DEFAULT_MAX_INPUT_BYTES),
            Err(ReadError::NotRegular { .. })
        ));
        assert!(matches!(
            read_text(&dir, DEFAULT_MAX_INPUT_BYTES),
            Err(ReadError::NotRegular {
                what: "a directory"
            })
        ));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn size_limit_and_utf8() {
        let dir = scratch("limit");
        let file = dir.join("a.yaml");
        fs::write(&file, "a: 1\nb: 2\n").unwrap();
        assert_eq!(read_text(&file, 10).unwrap(), "a: 1\nb: 2\n");
        let err = read_text(&file, 9).unwrap_err();
        assert!(matches!(err, ReadError::TooLarge { size: 10, limit: 9 }));
        assert!(
            err.to_string()
                .contains("is 10 bytes, over the 9 bytes limit"),
            "{err}"
        );
        fs::write(&file, b"a: 1\nb: x\xffy\n").unwrap();
        let err = read_text(&file, 100).unwrap_err();
        assert!(
            matches!(err, ReadError::NotUtf8 { line: 2, column: 5 }),
            "{err:?}"
        );
        let missing = read_text(&dir.join("none"), 100).unwrap_err();
        assert!(missing.is_io());
        assert_eq!(missing.to_string(), "no such file or directory");
        assert_eq!(size_text(16 << 20), "16 MiB");
        fs::remove_dir_all(&dir).unwrap();
    }
}
