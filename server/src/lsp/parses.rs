//! One parse per version of an open document, shared by the requests on it (issue 23): the
//! analysis layer's [`ParsedScript`] (full_moon's tree, the syntax errors, the resolved names)
//! behind an `Arc`, so hover, highlights, folding, call hierarchy... walk a tree they did not
//! build. A parse is served only to a view whose script text is exactly the one parsed, so a
//! stale version never answers; an edit, a reopen and a close drop the document's parses.
//!
//! Memory is bounded: full_moon keeps every token with its trivia (a tree is 100–200× its
//! source), so only scripts up to [`MAX_CACHED_SCRIPT_BYTES`] are kept, of open documents only,
//! and at most [`MAX_CACHED_BYTES`] of source over all documents (least recently used first out).
//! A larger script is parsed per request, as before, and its tree freed when the request ends.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::analysis::ParsedScript;

/// Scripts up to this size are kept parsed (a 2,000-line script is about 60 KiB).
pub const MAX_CACHED_SCRIPT_BYTES: usize = 256 * 1024;
/// The source bytes of all kept parses together.
pub const MAX_CACHED_BYTES: usize = 1024 * 1024;

/// The kept parses, and the version of each open document (a parse started on one version is
/// not kept once the document has moved on).
#[derive(Debug, Default)]
pub struct ParseCache {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The open documents and their versions.
    versions: HashMap<PathBuf, i32>,
    /// Kept parses with the document they belong to, least recently used first.
    kept: Vec<(PathBuf, Arc<ParsedScript>)>,
}

impl State {
    fn drop_document(&mut self, path: &Path) -> Vec<Arc<ParsedScript>> {
        let (gone, kept) = std::mem::take(&mut self.kept)
            .into_iter()
            .partition(|(p, _)| p == path);
        self.kept = kept;
        gone.into_iter().map(|(_, parsed)| parsed).collect()
    }
}

impl ParseCache {
    /// A document was opened or changed to `version`: its earlier parses go.
    pub fn changed(&self, path: &Path, version: i32) {
        let gone = {
            let mut state = self.lock();
            state.versions.insert(path.to_path_buf(), version);
            state.drop_document(path)
        };
        drop(gone); // outside the lock
    }

    /// A document was closed: its parses go.
    pub fn closed(&self, path: &Path) {
        let gone = {
            let mut state = self.lock();
            state.versions.remove(path);
            state.drop_document(path)
        };
        drop(gone);
    }

    /// The parse of `source`, a script of the document at `path`: the kept one when it is of
    /// exactly this text, else parsed now on the calling thread (a request's thread, never the
    /// async runtime's) and kept when the document is open, unchanged meanwhile, and the script
    /// small enough.
    pub fn parsed(&self, path: &Path, source: &str) -> Arc<ParsedScript> {
        let version = {
            let mut state = self.lock();
            let Some(&version) = state.versions.get(path) else {
                drop(state);
                return Arc::new(ParsedScript::new(source));
            };
            if let Some(at) = state
                .kept
                .iter()
                .position(|(p, parsed)| p == path && parsed.source() == source)
            {
                let hit = state.kept.remove(at);
                let parsed = hit.1.clone();
                state.kept.push(hit);
                return parsed;
            }
            version
        };
        let parsed = Arc::new(ParsedScript::new(source));
        if source.len() > MAX_CACHED_SCRIPT_BYTES {
            return parsed;
        }
        let mut evicted = Vec::new();
        {
            let mut state = self.lock();
            if state.versions.get(path) != Some(&version) {
                return parsed;
            }
            // Requests that missed together each parsed the text: keep (and answer with) the
            // first parse only, so copies do not crowd other documents out of the budget.
            if let Some((_, first)) = state
                .kept
                .iter()
                .find(|(p, kept)| p == path && kept.source() == source)
            {
                return first.clone();
            }
            state.kept.push((path.to_path_buf(), parsed.clone()));
            let mut bytes: usize = state.kept.iter().map(|(_, p)| p.source().len()).sum();
            while bytes > MAX_CACHED_BYTES && state.kept.len() > 1 {
                let (_, old) = state.kept.remove(0);
                bytes -= old.source().len();
                evicted.push(old);
            }
        }
        drop(evicted);
        parsed
    }

    /// How many parses are kept (for tests).
    #[cfg(test)]
    fn kept(&self) -> usize {
        self.lock().kept.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_parse_per_version_and_never_a_stale_one() {
        let cache = ParseCache::default();
        let path = Path::new("/w/a.lua");
        // Not open: parsed each time, nothing kept.
        let first = cache.parsed(path, "local a = 1");
        assert_eq!(cache.kept(), 0);
        cache.changed(path, 1);
        let kept = cache.parsed(path, "local a = 1");
        assert!(!Arc::ptr_eq(&first, &kept));
        assert!(Arc::ptr_eq(&kept, &cache.parsed(path, "local a = 1")));
        assert_eq!(cache.kept(), 1);
        // An edit drops it; the old text is never served for the new one.
        cache.changed(path, 2);
        assert_eq!(cache.kept(), 0);
        let edited = cache.parsed(path, "local a = 2");
        assert_eq!(edited.source(), "local a = 2");
        assert!(!Arc::ptr_eq(&edited, &cache.parsed(path, "local a = 1")));
        cache.closed(path);
        assert_eq!(cache.kept(), 0);
    }

    #[test]
    fn kept_parses_are_bounded() {
        let cache = ParseCache::default();
        let big = "x = 1\n".repeat(MAX_CACHED_SCRIPT_BYTES / 6 + 1);
        let path = Path::new("/w/big.lua");
        cache.changed(path, 1);
        cache.parsed(path, &big);
        assert_eq!(cache.kept(), 0, "a script over the size limit is not kept");
        let script = "y = 1\n".repeat(MAX_CACHED_SCRIPT_BYTES / 6);
        for i in 0..10 {
            let path = PathBuf::from(format!("/w/{i}.lua"));
            cache.changed(&path, 1);
            cache.parsed(&path, &script);
        }
        assert_eq!(cache.kept(), MAX_CACHED_BYTES / script.len());
    }
}
