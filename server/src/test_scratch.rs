//! Scratch folders for the unit tests that need files on disk, named by the checkout rather
//! than the process, so that each run empties the last run's folder instead of leaving its own.

use std::hash::{Hash, Hasher};
use std::path::PathBuf;

/// `<temp>/<prefix>-<checkout>-<name>`, emptied and created. The checkout's hash keeps two
/// checkouts' test runs apart; tests in one binary must pick distinct `prefix`/`name` pairs.
pub fn folder(prefix: &str, name: &str) -> PathBuf {
    let mut checkout = std::collections::hash_map::DefaultHasher::new();
    env!("CARGO_MANIFEST_DIR").hash(&mut checkout);
    let dir =
        std::env::temp_dir().join(format!("{prefix}-{:08x}-{name}", checkout.finish() as u32));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
