//! The workspace's ConfigMap manifests, as far as they decide which script Kruise reads.
//!
//! Kruise reads one `kruise-rollout-configuration` ConfigMap: of several ConfigMap scripts for
//! the same provider (a dev and a prod variant of the manifest), the first by manifest path
//! (the walk order) is taken and every other is skipped, naming it (the engine's
//! `discovery::taken_configmap_scripts`, asked here over every manifest, as `check` asks it
//! over its PATHs). A ConfigMap script for an ingress class replaces the tree's bundled
//! `trafficrouting_ingress/<class>.lua` (the engine's `discovery::read_when_both`, asked once
//! per manifest by [`project::embedded_targets`]): the bundled script is then never read — it
//! runs no case and shows `skipped`, naming the ConfigMap script taken — and its cases are that
//! script's, as `check` runs them. Whether a script is read depends on the manifests, not on
//! the file, so the session keeps them here: filled by the workspace walk (`run_all`), updated
//! when a manifest changes (an edit, the watcher) and when a script appears or goes on disk; a
//! run or an edit of a script only looks it up (`session/configmaps.rs`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kruise_lua_engine::discovery::taken_configmap_scripts;
use kruise_lua_engine::script::ScriptKind;

use super::project::{self, ScriptId, ScriptTarget};
use crate::project::targets::{another_configmap_taken, unread_script};

/// The scripts of every ConfigMap manifest of the workspace (and the open ones).
#[derive(Debug, Default)]
pub struct ConfigMapIndex {
    /// Per manifest, in path order (which decides the ConfigMap script taken for a provider,
    /// so the choice does not depend on the order of events), its scripts as
    /// [`project::embedded_targets`] makes them.
    manifests: BTreeMap<PathBuf, Vec<ScriptTarget>>,
}

/// A script the workspace's manifests leave unread: the script taken in its place, and why.
struct Unread<'a> {
    reader: &'a ScriptTarget,
    reason: String,
}

impl ConfigMapIndex {
    /// Per script Kruise never reads because of the manifests (a bundled ingress-class script
    /// a ConfigMap script replaces, a ConfigMap script for a provider another one is taken
    /// for): the script taken in its place, and why, in `check`'s words.
    fn unread(&self) -> BTreeMap<ScriptId, Unread<'_>> {
        let scripts: Vec<(&ScriptTarget, &ScriptKind)> = self
            .manifests
            .values()
            .flatten()
            .filter_map(|target| Some((target, target.kind.as_ref()?)))
            .collect();
        let taken = taken_configmap_scripts(scripts.iter().map(|(_, kind)| *kind));
        let mut out = BTreeMap::new();
        for (at, &(script, kind)) in scripts.iter().enumerate() {
            let (reader, _) = scripts[taken[at]];
            if let Some((bundled, _)) = script.replaced() {
                // Replaced by the ConfigMap script taken for the class, whichever manifest's.
                let (_, reason) =
                    unread_script(kind, &bundled.display().to_string(), &reader.id.full_name());
                out.entry(ScriptId::File(bundled.to_path_buf()))
                    .or_insert(Unread { reader, reason });
            }
            // One whose tree's bundled script wins says so already (and so does `check`).
            if reader.id != script.id && script.skipped.is_none() {
                let reason = match &reader.skipped {
                    // The script taken is never read either: the bundled one is.
                    Some(reason) => reason.clone(),
                    None => another_configmap_taken(kind, &reader.id.full_name()),
                };
                out.insert(script.id.clone(), Unread { reader, reason });
            }
        }
        out
    }

    /// What a manifest holds now (no scripts: it is no ConfigMap manifest any more); returns
    /// the scripts whose reader changed (left unread, read again, or for another reason).
    pub fn set(&mut self, manifest: &Path, targets: Vec<ScriptTarget>) -> Vec<ScriptId> {
        let before = self.readers();
        if targets.is_empty() {
            self.manifests.remove(manifest);
        } else {
            self.manifests.insert(manifest.to_path_buf(), targets);
        }
        changed(&before, &self.readers())
    }

    /// Replaces the whole index (the workspace walked again); returns what [`Self::set`] does.
    pub fn replace_all(
        &mut self,
        manifests: BTreeMap<PathBuf, Vec<ScriptTarget>>,
    ) -> Vec<ScriptId> {
        let before = self.readers();
        self.manifests = manifests;
        changed(&before, &self.readers())
    }

    /// The scripts of `manifest` as last indexed (`None`: not indexed).
    pub fn scripts_of(&self, manifest: &Path) -> Option<&[ScriptTarget]> {
        self.manifests.get(manifest).map(Vec::as_slice)
    }

    /// The script `id` names, to run again when its reader changed: a Lua file's target made
    /// from its path, a ConfigMap script's as indexed (`None`: no longer indexed).
    pub fn target(&self, id: &ScriptId) -> Option<ScriptTarget> {
        match id {
            ScriptId::File(path) => Some(project::lua_target(path)),
            ScriptId::Embedded { manifest, .. } => self
                .manifests
                .get(manifest)?
                .iter()
                .find(|target| &target.id == id)
                .cloned(),
        }
    }

    /// The manifests holding a script of `kind`.
    pub fn manifests_with(&self, kind: &ScriptKind) -> Vec<PathBuf> {
        self.manifests
            .iter()
            .filter(|(_, targets)| targets.iter().any(|t| t.kind.as_ref() == Some(kind)))
            .map(|(manifest, _)| manifest.clone())
            .collect()
    }

    /// `target` as Kruise reads it: a bundled script a ConfigMap script replaces, and a
    /// ConfigMap script another one is taken before, is skipped with `check`'s reason (a Lua
    /// file's target is made anew from its path, so one taken from an older run does not keep
    /// an older state).
    pub fn as_read(&self, target: ScriptTarget) -> ScriptTarget {
        let target = match &target.id {
            ScriptId::File(path) => project::lua_target(path),
            ScriptId::Embedded { .. } => target,
        };
        match self.unread().remove(&target.id) {
            Some(unread) => target.unread(unread.reason),
            None => target,
        }
    }

    /// The script that runs the cases the layout gives `owner` (a bundled script): the
    /// ConfigMap script taken in its place, or `owner` itself.
    pub fn case_reader(&self, owner: ScriptTarget) -> ScriptTarget {
        match &owner.id {
            // Read by Kruise unless a ConfigMap script is taken in its place (no other reason
            // leaves a Lua file unread: `as_read` would find none).
            ScriptId::File(path) => match self.unread().remove(&owner.id) {
                Some(unread) => unread.reader.clone(),
                None => project::lua_target(path),
            },
            ScriptId::Embedded { .. } => owner,
        }
    }

    /// What changes are compared by: per script left unread, the script taken and the reason.
    fn readers(&self) -> BTreeMap<ScriptId, (ScriptId, String)> {
        self.unread()
            .into_iter()
            .map(|(id, unread)| (id, (unread.reader.id.clone(), unread.reason)))
            .collect()
    }
}

fn changed(
    before: &BTreeMap<ScriptId, (ScriptId, String)>,
    after: &BTreeMap<ScriptId, (ScriptId, String)>,
) -> Vec<ScriptId> {
    let mut out: Vec<ScriptId> = before
        .iter()
        .filter(|(id, reader)| after.get(*id) != Some(reader))
        .map(|(id, _)| id.clone())
        .collect();
    out.extend(after.keys().filter(|id| !before.contains_key(*id)).cloned());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lsp::project::{embedded_targets, lua_target};

    const MANIFEST: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kruise-rollout-configuration\ndata:\n  lua.traffic.routing.ingress.nginx: |\n    return obj.annotations\n";

    /// A scratch folder holding the bundled `nginx` ingress script (and its testdata folder),
    /// and that script's path.
    fn bundled_nginx_tree(name: &str) -> (PathBuf, PathBuf) {
        let dir = crate::test_scratch::folder("kruise-lua-lsp-index", name);
        let ingress = dir.join("lua_configuration/trafficrouting_ingress");
        std::fs::create_dir_all(ingress.join("testdata/nginx")).unwrap();
        let bundled = ingress.join("nginx.lua");
        std::fs::write(&bundled, "return {}\n").unwrap();
        (dir, bundled)
    }

    /// The ConfigMap scripts of `manifest` (its text `text`) in the workspace `dir`.
    fn configmap_targets(dir: &Path, manifest: &Path, text: &str) -> Vec<ScriptTarget> {
        embedded_targets(manifest, text, std::slice::from_ref(&dir.to_path_buf()))
            .into_iter()
            .map(|(target, _)| target)
            .collect()
    }

    /// A bundled ingress-class script that a workspace ConfigMap script replaces is never read
    /// by Kruise (`check` lists it skipped: "the ConfigMap script for ingress class `nginx`
    /// (…) replaces it"): its target runs no case and says so, and its cases are the
    /// ConfigMap script's (defect: the bundled script ran them too, and a case showed either
    /// verdict). Without the manifest, the bundled script is read again.
    #[test]
    fn a_bundled_ingress_script_a_configmap_replaces_is_skipped_and_its_cases_are_the_configmaps() {
        let (dir, bundled) = bundled_nginx_tree("ingress");
        let ingress = bundled.parent().unwrap();
        let manifest = dir.join("cm.yaml");
        let targets = configmap_targets(&dir, &manifest, MANIFEST);
        let configmap = targets[0].clone();
        assert_eq!(configmap.skipped, None);
        assert_eq!(
            configmap.testdata,
            Some(ingress.join("testdata/nginx")),
            "the ConfigMap script runs the cases"
        );

        let mut index = ConfigMapIndex::default();
        let bundled_id = ScriptId::File(bundled.clone());
        assert_eq!(index.set(&manifest, targets), vec![bundled_id.clone()]);
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
        assert_eq!(index.set(&manifest, Vec::new()), vec![bundled_id]);
        assert_eq!(index.as_read(lua_target(&bundled)), lua_target(&bundled));
        assert_eq!(
            index.case_reader(lua_target(&bundled)),
            lua_target(&bundled)
        );
    }

    /// Two manifests with a script for the same ingress class (a dev and a prod variant):
    /// Kruise reads one ConfigMap, so the first by path is taken, as `check a.yaml b.yaml`
    /// takes the first it is given. The other is skipped naming it, and the bundled script is
    /// skipped naming it too (defect: both ConfigMap scripts ran the class's cases, and
    /// `check` ran the last one given). With the first one's script gone, the second is taken;
    /// the scripts whose reader changed are returned to run again.
    #[test]
    fn of_two_manifests_with_a_script_for_one_class_the_first_by_path_is_taken() {
        let (dir, bundled) = bundled_nginx_tree("two-manifests");
        let targets_of = |manifest: &Path, text: &str| configmap_targets(&dir, manifest, text);
        let (a, b) = (dir.join("a-config.yaml"), dir.join("b-config.yaml"));
        let (a_targets, b_targets) = (targets_of(&a, MANIFEST), targets_of(&b, MANIFEST));
        let (a_script, b_script) = (a_targets[0].clone(), b_targets[0].clone());
        let key = "lua.traffic.routing.ingress.nginx";

        let mut index = ConfigMapIndex::default();
        // Indexed in the other order: the path decides, not the order of events.
        index.set(&b, b_targets.clone());
        assert_eq!(
            index.set(&a, a_targets),
            vec![ScriptId::File(bundled.clone()), b_script.id.clone()],
            "the bundled script is replaced by a now, and b is no longer taken"
        );
        assert_eq!(index.as_read(a_script.clone()), a_script, "a is taken");
        let b_read = index.as_read(b_script.clone());
        assert_eq!(
            b_read.skipped,
            Some(format!(
                "another ConfigMap script for ingress class `nginx` ({}#{key}) is taken: Kruise reads one kruise-rollout-configuration ConfigMap",
                a.display()
            ))
        );
        assert_eq!(b_read.testdata, None, "b runs no case");
        let bundled_read = index.as_read(lua_target(&bundled));
        assert_eq!(
            bundled_read.skipped,
            Some(format!(
                "the ConfigMap script for ingress class `nginx` ({}#{key}) replaces it",
                a.display()
            ))
        );
        assert_eq!(index.case_reader(lua_target(&bundled)), a_script);

        // a's script gone: b is taken, and the bundled script's reason names it.
        let mut changed = index.set(&a, Vec::new());
        changed.sort();
        assert_eq!(
            changed,
            vec![ScriptId::File(bundled.clone()), b_script.id.clone()]
        );
        assert_eq!(index.target(&b_script.id), Some(b_script.clone()));
        assert_eq!(index.as_read(b_script.clone()), b_script);
        assert_eq!(index.case_reader(lua_target(&bundled)), b_script);
    }
}
