//! Helpers shared by the engine's conformance tests: where the vectors are, and paths
//! relative to them as the oracle's files spell them.

use std::path::{Path, PathBuf};

/// `../shared/conformance` beside the repository (read only).
pub fn conformance_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance");
    assert!(
        dir.join("README.md").is_file(),
        "conformance vectors not found at {} — the shared/ folder must sit beside the repository",
        dir.display()
    );
    dir
}

/// `path` below `root`, with `/` separators.
pub fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or_else(|_| panic!("{} not under {}", path.display(), root.display()))
        .to_string_lossy()
        .replace('\\', "/")
}
