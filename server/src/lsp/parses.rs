//! One parse per version of an open document, shared by the requests on it (issue 23): the
//! analysis layer's [`ParsedScript`] (full_moon's tree, the syntax errors, the resolved names)
//! behind an `Arc`, so hover, highlights, folding, call hierarchy... walk a tree they did not
//! build. A parse is served only to a view whose script text is exactly the one parsed, so a
//! stale version never answers; an edit, a reopen and a close drop the document's parses.
//!
//! Memory is bounded: full_moon keeps every token with its trivia (a tree is 100–200× its
//! source), so only scripts up to [`MAX_CACHED_SCRIPT_BYTES`] are kept, of open documents only,
//! and at most [`MAX_CACHED_BYTES`] of source over all documents (least recently used first out).
//! A larger script is not kept, but a text being parsed or still in use is one parse: a request
//! for it waits for the parse under way or takes the one some other work holds (an editor asks
//! for symbols, tokens, folding, lenses... of a file at once, while the open's analysis and a
//! run's reanalysis parse it too: each parsed it alone, and the trees of a 430 KiB script were
//! alive together, 650 MiB). Its tree is freed when the last work holding it ends.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, Weak};

use crate::analysis::ParsedScript;

/// Scripts up to this size are kept parsed (a 2,000-line script is about 60 KiB).
pub const MAX_CACHED_SCRIPT_BYTES: usize = 256 * 1024;
/// The source bytes of all kept parses together.
pub const MAX_CACHED_BYTES: usize = 1024 * 1024;

/// The kept parses, the parses under way and in use, and the version of each open document (a
/// parse started on one version is not kept once the document has moved on).
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
    /// Parses not kept that some work may still hold.
    in_use: Vec<(PathBuf, Weak<ParsedScript>)>,
    /// Parses under way.
    in_flight: Vec<(PathBuf, Arc<Flight>)>,
}

impl State {
    fn drop_document(&mut self, path: &Path) -> Vec<Arc<ParsedScript>> {
        let (gone, kept) = std::mem::take(&mut self.kept)
            .into_iter()
            .partition(|(p, _)| p == path);
        self.kept = kept;
        gone.into_iter().map(|(_, parsed)| parsed).collect()
    }

    /// `flight`, of the text of `path`, is no longer under way.
    fn land(&mut self, path: &Path, flight: &Arc<Flight>) {
        self.in_flight
            .retain(|(p, under_way)| !(p.as_path() == path && Arc::ptr_eq(under_way, flight)));
    }

    /// A parse of exactly `source` for `path` that exists now: kept (then used most recently),
    /// or held by some work.
    fn existing(&mut self, path: &Path, source: &str) -> Option<Arc<ParsedScript>> {
        if let Some(at) = self
            .kept
            .iter()
            .position(|(p, parsed)| p == path && parsed.source() == source)
        {
            let hit = self.kept.remove(at);
            let parsed = hit.1.clone();
            self.kept.push(hit);
            return Some(parsed);
        }
        self.in_use.retain(|(_, parsed)| parsed.strong_count() > 0);
        self.in_use
            .iter()
            .filter(|(p, _)| p == path)
            .filter_map(|(_, parsed)| parsed.upgrade())
            .find(|parsed| parsed.source() == source)
    }
}

/// A parse under way, which other requests for the same text wait for.
#[derive(Debug)]
struct Flight {
    source: String,
    /// `Some` once the parse ended: its result, or `None` when it panicked.
    ended: Mutex<Option<Option<Arc<ParsedScript>>>>,
    signal: Condvar,
}

impl Flight {
    fn end(&self, parsed: Option<Arc<ParsedScript>>) {
        let mut ended = self.ended.lock().unwrap_or_else(|e| e.into_inner());
        if ended.is_none() {
            *ended = Some(parsed);
        }
        self.signal.notify_all();
    }

    fn wait(&self) -> Option<Arc<ParsedScript>> {
        let mut ended = self.ended.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(parsed) = &*ended {
                return parsed.clone();
            }
            ended = self.signal.wait(ended).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// A parse under way on this thread: dropped, it ends its flight (with no parse when the parse
/// panicked), so that no request waits for it forever.
struct Parsing<'a> {
    cache: &'a ParseCache,
    path: &'a Path,
    flight: Arc<Flight>,
}

impl Drop for Parsing<'_> {
    fn drop(&mut self) {
        self.cache.lock().land(self.path, &self.flight);
        self.flight.end(None);
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

    /// The parse of `source`, a script of the document at `path`: one that exists of exactly
    /// this text (kept, or held by other work), or the one under way, else parsed now on the
    /// calling thread (a request's thread, never the async runtime's), and kept when the
    /// document is open, unchanged meanwhile, and the script small enough.
    pub fn parsed(&self, path: &Path, source: &str) -> Arc<ParsedScript> {
        let (version, parsing) = {
            let mut state = self.lock();
            if let Some(parsed) = state.existing(path, source) {
                return parsed;
            }
            let under_way = state
                .in_flight
                .iter()
                .find(|(p, flight)| p == path && flight.source == source)
                .map(|(_, flight)| flight.clone());
            match under_way {
                Some(flight) => (None, Err(flight)),
                None => {
                    let flight = Arc::new(Flight {
                        source: source.to_string(),
                        ended: Mutex::default(),
                        signal: Condvar::new(),
                    });
                    state.in_flight.push((path.to_path_buf(), flight.clone()));
                    let version = state.versions.get(path).copied();
                    (
                        version,
                        Ok(Parsing {
                            cache: self,
                            path,
                            flight,
                        }),
                    )
                }
            }
        };
        let parsing = match parsing {
            Ok(parsing) => parsing,
            // `None`: that parse panicked; this request parses the text itself (and fails as
            // that one did, on its own thread).
            Err(flight) => {
                return flight
                    .wait()
                    .unwrap_or_else(|| Arc::new(ParsedScript::new(source)));
            }
        };
        let parsed = Arc::new(ParsedScript::new(source));
        let mut evicted = Vec::new();
        {
            let mut state = self.lock();
            // Landed under the same lock as it is kept or listed in use: a request between
            // the two would find neither and parse the text again.
            state.land(path, &parsing.flight);
            let keep = version.is_some()
                && state.versions.get(path).copied() == version
                && source.len() <= MAX_CACHED_SCRIPT_BYTES;
            if keep {
                state.kept.push((path.to_path_buf(), parsed.clone()));
                let mut bytes: usize = state.kept.iter().map(|(_, p)| p.source().len()).sum();
                while bytes > MAX_CACHED_BYTES && state.kept.len() > 1 {
                    let (_, old) = state.kept.remove(0);
                    bytes -= old.source().len();
                    evicted.push(old);
                }
            } else {
                state
                    .in_use
                    .push((path.to_path_buf(), Arc::downgrade(&parsed)));
            }
        }
        parsing.flight.end(Some(parsed.clone()));
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
        drop(first);
        cache.changed(path, 1);
        let kept = cache.parsed(path, "local a = 1");
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
    fn a_large_text_asked_for_at_once_is_one_parse_freed_with_its_last_holder() {
        let cache = ParseCache::default();
        let path = Path::new("/w/big.lua");
        cache.changed(path, 1);
        let big = "local x = 1\n".repeat(MAX_CACHED_SCRIPT_BYTES / 12 + 1);
        let start = std::sync::Barrier::new(4);
        let parses: Vec<Arc<ParsedScript>> = std::thread::scope(|scope| {
            let asked: Vec<_> = (0..4)
                .map(|_| {
                    scope.spawn(|| {
                        start.wait();
                        cache.parsed(path, &big)
                    })
                })
                .collect();
            asked.into_iter().map(|t| t.join().unwrap()).collect()
        });
        assert!(parses.iter().all(|p| Arc::ptr_eq(p, &parses[0])));
        assert_eq!(cache.kept(), 0, "too large to keep");
        // Another text of the same document is never answered with it.
        let edited = format!("{big}local y = 2\n");
        assert_eq!(cache.parsed(path, &edited).source(), edited);
        // In use: the same parse; once no work holds it, it is gone.
        let held = cache.parsed(path, &big);
        assert!(Arc::ptr_eq(&held, &parses[0]));
        let tree = Arc::downgrade(&held);
        drop((parses, held));
        assert!(tree.upgrade().is_none());
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
