//! The CRD schemas of each `lua_configuration` root the server runs scripts in (the root's
//! `crds/` folder and its kruise-lua.toml `crds`, read by [`crd_sources`]), loaded once on a
//! blocking thread, shared by every run and analysis, and dropped when one of their files
//! changes on disk.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use kruise_lua_engine::schema::SchemaSet;

use crate::analysis::LintConfig;
use crate::project::crd_sources::{self, CRDS_FOLDER, CrdSources};

/// One root's schemas and the paths whose change makes them stale.
#[derive(Debug)]
pub struct RootSchemas {
    pub sources: CrdSources,
    /// `<root>/crds`, `<root>/kruise-lua.toml` and every path its `crds` names.
    watched: Vec<PathBuf>,
}

/// The loaded roots, by root folder.
#[derive(Default)]
pub struct SchemaCache {
    roots: Mutex<HashMap<PathBuf, Arc<RootSchemas>>>,
}

impl SchemaCache {
    fn roots(&self) -> MutexGuard<'_, HashMap<PathBuf, Arc<RootSchemas>>> {
        self.roots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The schemas for the script (or case) at `path`: those of its root
    /// ([`crd_sources::root_of`]); `None` outside a root. The first call for a root reads its
    /// CRDs (blocking: call off the async threads); `true` beside the schemas says this call
    /// did, so its problems are new.
    pub fn for_path(&self, path: &Path) -> Option<(Arc<RootSchemas>, bool)> {
        let root = crd_sources::root_of(path)?;
        if let Some(loaded) = self.roots().get(&root) {
            return Some((loaded.clone(), false));
        }
        // Read without holding the lock: other roots' runs need not wait. Two runs of one
        // root may both read; the first one stored wins.
        let loaded = Arc::new(load(&root));
        let mut roots = self.roots();
        let stored = roots.entry(root).or_insert(loaded.clone()).clone();
        let fresh = Arc::ptr_eq(&stored, &loaded);
        Some((stored, fresh))
    }

    /// Forgets every root when `changed` (a file or folder created, changed or deleted) could
    /// change what a root loads: a file below a watched path, any kruise-lua.toml (a new one
    /// may make a new root), anything in a `crds` folder. Returns whether it did.
    pub fn invalidate(&self, changed: &Path) -> bool {
        let mut roots = self.roots();
        let relevant = changed
            .file_name()
            .is_some_and(|name| name == LintConfig::FILE_NAME)
            || changed
                .components()
                .any(|part| part.as_os_str() == CRDS_FOLDER)
            || roots
                .values()
                .any(|root| root.watched.iter().any(|w| changed.starts_with(w)));
        if relevant {
            roots.clear();
        }
        relevant
    }
}

/// The schemas of a script outside every root: none, one set shared by all runs.
pub fn no_crds() -> Arc<SchemaSet> {
    static NO_CRDS: std::sync::LazyLock<Arc<SchemaSet>> =
        std::sync::LazyLock::new(|| Arc::new(SchemaSet::new()));
    NO_CRDS.clone()
}

/// Reads a root's CRDs: its `crds/` folder, then its kruise-lua.toml `crds`.
fn load(root: &Path) -> RootSchemas {
    let mut watched = vec![root.join(CRDS_FOLDER), root.join(LintConfig::FILE_NAME)];
    let (listed, problem) = match crd_sources::config_crds(root) {
        Ok(listed) => (listed, None),
        Err(problem) => (Vec::new(), Some(problem)),
    };
    watched.extend(listed.iter().cloned());
    let mut sources = crd_sources::load(Some(root), &[], &listed);
    sources.problems.extend(problem);
    RootSchemas { sources, watched }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gizmos.test.kruise-lua.dev}
spec:
  group: test.kruise-lua.dev
  names: {kind: Gizmo, plural: gizmos}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema: {type: object}
";

    fn scratch(name: &str) -> PathBuf {
        let dir = crate::test_scratch::folder("kruise-lua-lsp-schemas", name);
        std::fs::create_dir_all(dir.join("g.io/Kind/testdata")).unwrap();
        dir
    }

    #[test]
    fn loaded_once_per_root_and_dropped_when_a_crd_file_changes() {
        let root = scratch("cache");
        std::fs::create_dir_all(root.join("crds")).unwrap();
        std::fs::create_dir_all(root.join("mine")).unwrap();
        std::fs::write(root.join("crds/gizmo.yaml"), CRD).unwrap();
        std::fs::write(root.join("kruise-lua.toml"), "crds = [\"mine\"]\n").unwrap();
        let script = root.join("g.io/Kind/trafficRouting.lua");
        let cache = SchemaCache::default();
        let (first, fresh) = cache.for_path(&script).unwrap();
        assert!(fresh);
        assert!(
            first.sources.problems.is_empty(),
            "{:?}",
            first.sources.problems
        );
        assert!(
            first
                .sources
                .schemas
                .find("test.kruise-lua.dev", "Gizmo")
                .is_some()
        );
        let (again, fresh) = cache
            .for_path(&root.join("g.io/Kind/testdata/case.yaml"))
            .unwrap();
        assert!(!fresh && Arc::ptr_eq(&first, &again));
        // A script folder inside the root is in the same root (one rule with `check`'s).
        let (folder, fresh) = cache.for_path(&root.join("g.io/Kind")).unwrap();
        assert!(!fresh && Arc::ptr_eq(&first, &folder));

        // Unrelated files keep the cache; a CRD file, the toml or a listed folder drop it.
        assert!(!cache.invalidate(&root.join("g.io/Kind/testdata/case.yaml")));
        assert!(!cache.invalidate(&script));
        assert!(cache.invalidate(&root.join("crds/gizmo.yaml")));
        let (reloaded, fresh) = cache.for_path(&script).unwrap();
        assert!(fresh && !Arc::ptr_eq(&first, &reloaded));
        assert!(cache.invalidate(&root.join("mine/new.yaml")));
        cache.for_path(&script).unwrap();
        assert!(cache.invalidate(&root.join("kruise-lua.toml")));
    }

    #[test]
    fn a_broken_toml_is_a_problem_and_the_crds_folder_still_loads() {
        let root = scratch("broken");
        std::fs::create_dir_all(root.join("crds")).unwrap();
        std::fs::write(root.join("crds/gizmo.yaml"), CRD).unwrap();
        std::fs::write(root.join("kruise-lua.toml"), "crds = [\"gone\"]\n").unwrap();
        let cache = SchemaCache::default();
        let (loaded, _) = cache
            .for_path(&root.join("g.io/Kind/trafficRouting.lua"))
            .unwrap();
        assert_eq!(loaded.sources.problems.len(), 1);
        assert!(loaded.sources.problems[0].message.contains("\"gone\""));
        assert!(
            loaded
                .sources
                .schemas
                .find("test.kruise-lua.dev", "Gizmo")
                .is_some()
        );
    }
}
