//! The workspace's ConfigMap manifests, as far as they decide which script Kruise reads.
//!
//! A ConfigMap script for an ingress class replaces the tree's bundled
//! `trafficrouting_ingress/<class>.lua` (the engine's `discovery::read_when_both`, asked once
//! per manifest by [`project::embedded_targets`]): the bundled script is then never read — it
//! runs no case and shows `skipped` — and its cases are the ConfigMap script's, as `check` runs
//! them. Whether a Lua file is such a script depends on the manifests, not on the file, so the
//! session keeps them here: filled by the workspace walk (`run_all`), updated when a manifest
//! changes (an edit, the watcher) and when a script appears or goes on disk; a run or an edit
//! of the Lua file only looks it up (`session/configmaps.rs`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::project::{self, ScriptId, ScriptTarget};

/// The scripts of every ConfigMap manifest of the workspace (and the open ones).
#[derive(Debug, Default)]
pub struct ConfigMapIndex {
    /// Per manifest, in path order (when two replace the same bundled script, the first one
    /// is taken, so the choice does not depend on the order of events), its scripts.
    manifests: BTreeMap<PathBuf, Vec<ScriptTarget>>,
}

impl ConfigMapIndex {
    /// Per bundled script a ConfigMap script replaces: that ConfigMap script.
    fn replacements(&self) -> BTreeMap<&Path, &ScriptTarget> {
        let mut out = BTreeMap::new();
        for target in self.manifests.values().flatten() {
            if let Some((bundled, _)) = target.replaced() {
                out.entry(bundled).or_insert(target);
            }
        }
        out
    }

    /// The ConfigMap script Kruise reads instead of the bundled script at `bundled`.
    pub fn replacing(&self, bundled: &Path) -> Option<&ScriptTarget> {
        self.replacements().get(bundled).copied()
    }

    /// What a manifest holds now (no scripts: it is no ConfigMap manifest any more); returns
    /// the bundled scripts whose reader changed (replaced, no longer replaced, or by another).
    pub fn set(&mut self, manifest: &Path, targets: Vec<ScriptTarget>) -> Vec<PathBuf> {
        let before = self.readers();
        if targets.is_empty() {
            self.manifests.remove(manifest);
        } else {
            self.manifests.insert(manifest.to_path_buf(), targets);
        }
        changed(&before, &self.readers())
    }

    /// Replaces the whole index (the workspace walked again); returns what [`Self::set`] does.
    pub fn replace_all(&mut self, manifests: BTreeMap<PathBuf, Vec<ScriptTarget>>) -> Vec<PathBuf> {
        let before = self.readers();
        self.manifests = manifests;
        changed(&before, &self.readers())
    }

    /// The scripts of `manifest` as last indexed (`None`: not indexed).
    pub fn scripts_of(&self, manifest: &Path) -> Option<&[ScriptTarget]> {
        self.manifests.get(manifest).map(Vec::as_slice)
    }

    /// The manifests holding a script of `kind`.
    pub fn manifests_with(&self, kind: &kruise_lua_engine::script::ScriptKind) -> Vec<PathBuf> {
        self.manifests
            .iter()
            .filter(|(_, targets)| targets.iter().any(|t| t.kind.as_ref() == Some(kind)))
            .map(|(manifest, _)| manifest.clone())
            .collect()
    }

    /// `target` as Kruise reads it: a bundled script a ConfigMap script replaces is skipped,
    /// with `check`'s reason (a Lua file's target is made anew from its path, so one taken
    /// from an older run does not keep an older state).
    pub fn as_read(&self, target: ScriptTarget) -> ScriptTarget {
        let ScriptId::File(path) = &target.id else {
            return target;
        };
        let target = project::lua_target(path);
        match self.replacing(path).and_then(ScriptTarget::replaced) {
            Some((_, reason)) => target.unread(reason.to_owned()),
            None => target,
        }
    }

    /// The script that runs the cases the layout gives `owner` (a bundled script): the
    /// ConfigMap script that replaces it, or `owner` itself.
    pub fn case_reader(&self, owner: ScriptTarget) -> ScriptTarget {
        match &owner.id {
            ScriptId::File(path) => match self.replacing(path) {
                Some(configmap) => configmap.clone(),
                None => self.as_read(owner),
            },
            ScriptId::Embedded { .. } => owner,
        }
    }

    /// What changes are compared by: per bundled script, the ConfigMap script that replaces
    /// it and the reason.
    fn readers(&self) -> BTreeMap<PathBuf, (ScriptId, String)> {
        self.replacements()
            .into_iter()
            .filter_map(|(bundled, cm)| {
                let (_, reason) = cm.replaced()?;
                Some((bundled.to_path_buf(), (cm.id.clone(), reason.to_owned())))
            })
            .collect()
    }
}

fn changed(
    before: &BTreeMap<PathBuf, (ScriptId, String)>,
    after: &BTreeMap<PathBuf, (ScriptId, String)>,
) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = before
        .iter()
        .filter(|(bundled, reader)| after.get(*bundled) != Some(reader))
        .map(|(bundled, _)| bundled.clone())
        .collect();
    out.extend(
        after
            .keys()
            .filter(|bundled| !before.contains_key(*bundled))
            .cloned(),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lsp::project::{embedded_targets, lua_target};

    const MANIFEST: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kruise-rollout-configuration\ndata:\n  lua.traffic.routing.ingress.nginx: |\n    return obj.annotations\n";

    /// A bundled ingress-class script that a workspace ConfigMap script replaces is never read
    /// by Kruise (`check` lists it skipped: "the ConfigMap script for ingress class `nginx`
    /// (…) replaces it"): its target runs no case and says so, and its cases are the
    /// ConfigMap script's (defect: the bundled script ran them too, and a case showed either
    /// verdict). Without the manifest, the bundled script is read again.
    #[test]
    fn a_bundled_ingress_script_a_configmap_replaces_is_skipped_and_its_cases_are_the_configmaps() {
        let dir = crate::test_scratch::folder("kruise-lua-lsp-index", "ingress");
        let ingress = dir.join("lua_configuration/trafficrouting_ingress");
        std::fs::create_dir_all(ingress.join("testdata/nginx")).unwrap();
        let bundled = ingress.join("nginx.lua");
        std::fs::write(&bundled, "return {}\n").unwrap();
        let manifest = dir.join("cm.yaml");
        let targets: Vec<ScriptTarget> =
            embedded_targets(&manifest, MANIFEST, std::slice::from_ref(&dir))
                .into_iter()
                .map(|(target, _)| target)
                .collect();
        let configmap = targets[0].clone();
        assert_eq!(configmap.skipped, None);
        assert_eq!(
            configmap.testdata,
            Some(ingress.join("testdata/nginx")),
            "the ConfigMap script runs the cases"
        );

        let mut index = ConfigMapIndex::default();
        assert_eq!(index.set(&manifest, targets), vec![bundled.clone()]);
        let read = index.as_read(lua_target(&bundled));
        let reason = read.skipped.as_deref().expect("skipped");
        assert_eq!(
            reason,
            format!(
                "the ConfigMap script for ingress class `nginx` ({}#lua.traffic.routing.ingress.nginx) replaces it",
                manifest.display()
            )
        );
        assert_eq!(read.testdata, None, "it runs no case");
        assert_eq!(index.case_reader(lua_target(&bundled)), configmap);

        // The manifest no longer holds a ConfigMap script: the bundled script is read again.
        assert_eq!(index.set(&manifest, Vec::new()), vec![bundled.clone()]);
        assert_eq!(index.as_read(lua_target(&bundled)), lua_target(&bundled));
        assert_eq!(
            index.case_reader(lua_target(&bundled)),
            lua_target(&bundled)
        );
    }
}
