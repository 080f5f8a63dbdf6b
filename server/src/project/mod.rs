//! The project layer, under every front end (`cli`, `lsp`, `dap`): what the user's files are
//! (paths to scripts, cases and ConfigMap scripts; CRD sources), running a case through the
//! engine with every check (steps, schema validation, intent check, key-order reruns), and the
//! one verdict every front end shows ([`verdict`]). It knows no protocol and prints nothing.

pub mod accept;
pub mod check;
pub mod crd_sources;
pub mod embedded;
pub mod intent;
pub mod paths;
pub mod plan;
pub mod schema_check;
pub mod step_resources;
pub mod targets;
pub mod verdict;
pub mod workers;
pub mod yaml_edit;

/// The stack of every thread that runs scripts, compares or reports their results: a result
/// may be nested up to the encoder's 10,000 levels (Go's bound), and comparing, diffing and
/// dropping such a value recurses once per level (a 9,000-level result overflowed the 2 MiB
/// worker stacks and the 8 MiB main thread). Reserved, not committed, memory.
pub const WORKER_STACK: usize = 32 << 20;

/// Files larger than this are stored but neither analysed nor run (a 10 MB file must not stall
/// the server): the analysis of a Lua script is linear, but runs and hovers are not free.
pub const MAX_ANALYSED_BYTES: usize = 2 * 1024 * 1024;

/// A failure that ends the command with exit code 2 (bad usage, unreadable input).
#[derive(Debug)]
pub struct UsageError(pub String);

impl UsageError {
    /// An I/O failure on `path`. An error that carries its own message (the engine's walk
    /// names the folder deep in a tree that failed) is shown as it is.
    pub fn io(path: &std::path::Path, err: &std::io::Error) -> UsageError {
        if err.get_ref().is_some() {
            return UsageError(err.to_string());
        }
        UsageError(format!("{}: {}", paths::display(path), io_message(err)))
    }
}

/// An I/O error's message without Rust's " (os error N)" suffix.
pub fn io_message(err: &std::io::Error) -> String {
    kruise_lua_engine::input::io_text(err)
}

/// Reads a user's text file (a PATH or a case): fails when it is not a regular UTF-8 file or is
/// over `limit_bytes`; errors name the path (and the line of the first invalid byte for
/// non-UTF-8 text).
pub fn read_text(path: &std::path::Path, limit_bytes: u64) -> Result<String, UsageError> {
    use kruise_lua_engine::input::{self, ReadError};
    input::read_text(path, limit_bytes).map_err(|err| match err {
        ReadError::NotUtf8 { line, column } => UsageError(format!(
            "{}:{line}: byte {column} is not valid UTF-8 (kruise-lua reads UTF-8 text only)",
            paths::display(path)
        )),
        other => UsageError(format!("{}: {other}", paths::display(path))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_name_the_failing_path() {
        let plain = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        assert_eq!(
            UsageError::io(std::path::Path::new("./tree"), &plain).0,
            "tree: permission denied"
        );
        let deep = std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            "tree/g/K/testdata: permission denied",
        );
        assert_eq!(
            UsageError::io(std::path::Path::new("tree"), &deep).0,
            "tree/g/K/testdata: permission denied"
        );
    }
}
