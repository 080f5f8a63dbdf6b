//! Which file is what: scripts (custom and ingress-class), their test cases, and ConfigMap
//! manifests with embedded scripts, whose Lua positions are mapped back into the block scalar.

use std::path::{Path, PathBuf};

use kruise_lua_engine::discovery::{self, CUSTOM_SCRIPT_NAME, EmbeddedScript, INGRESS_FOLDER};
use kruise_lua_engine::luadata::LuaData;
use kruise_lua_engine::script::ScriptFlavor;
use kruise_lua_engine::script::ScriptKind;
use kruise_lua_engine::steps::ingress_obj;
use kruise_lua_engine::value::JsonValue;

use super::documents::Documents;
pub use crate::project::embedded::EmbeddedMap;
use crate::project::plan::scripts::bundled_path;
use crate::project::targets::unread_script;
use kruise_lua_engine::discovery::Precedence;

/// A script the server runs: a Lua file, or one key of a ConfigMap manifest.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScriptId {
    File(PathBuf),
    Embedded { manifest: PathBuf, key: String },
}

impl ScriptId {
    /// The file that holds the script's text.
    pub fn host(&self) -> &Path {
        match self {
            ScriptId::File(path) => path,
            ScriptId::Embedded { manifest, .. } => manifest,
        }
    }

    /// The name `check`'s reasons give the script (`targets::unread_script`): its path, or
    /// `manifest#key`.
    pub fn full_name(&self) -> String {
        match self {
            ScriptId::File(path) => path.display().to_string(),
            ScriptId::Embedded { manifest, key } => format!("{}#{key}", manifest.display()),
        }
    }

    /// A short name for messages: the file name, or `manifest.yaml#key`.
    pub fn display(&self) -> String {
        let file = |p: &Path| {
            p.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        match self {
            ScriptId::File(path) => file(path),
            ScriptId::Embedded { manifest, key } => format!("{}#{key}", file(manifest)),
        }
    }
}

/// A script with what decides how it runs: its kind and where its cases live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptTarget {
    pub id: ScriptId,
    pub kind: Option<ScriptKind>,
    /// The folder whose `*.yaml`/`*.yml` files are its cases (may not exist).
    pub testdata: Option<PathBuf>,
    /// Upstream's test fails for a custom script without a `testdata` folder.
    pub testdata_required: bool,
    /// Why Kruise never reads this script (a ConfigMap script for a provider whose tree bundles
    /// one, a bundled ingress-class script a ConfigMap script replaces, or a ConfigMap script
    /// for a provider another manifest's script is taken for, as `check` says it): it is not
    /// run, and none of its cases are counted.
    pub skipped: Option<String>,
    /// For a ConfigMap script Kruise reads instead of the tree's bundled script
    /// ([`Self::bundled`]; an ingress class): why that one is never read (`check`'s words, from
    /// `targets::unread_script`). The workspace's ConfigMap index (`configmap_index.rs`) marks
    /// the bundled script skipped from it.
    pub replaces: Option<String>,
    /// For a ConfigMap script: the tree's bundled script for the same provider, when the
    /// workspace has one (whichever of the two Kruise reads; the key's document link).
    pub bundled: Option<PathBuf>,
}

impl ScriptTarget {
    /// The bundled script this ConfigMap script replaces, and why Kruise never reads it.
    pub fn replaced(&self) -> Option<(&Path, &str)> {
        Some((self.bundled.as_deref()?, self.replaces.as_deref()?))
    }

    /// This script as Kruise never reading it, for `reason`: it runs no case (another script
    /// owns them) and shows `skipped: reason`.
    pub fn unread(mut self, reason: String) -> ScriptTarget {
        self.skipped = Some(reason);
        self.testdata = None;
        self.testdata_required = false;
        self
    }

    pub fn flavor(&self) -> ScriptFlavor {
        match self.kind {
            Some(ScriptKind::Ingress { .. }) => ScriptFlavor::Ingress,
            _ => ScriptFlavor::Custom,
        }
    }

    /// The `obj` a case step hands this script, as JSON (an ingress class gets its own shape).
    pub fn step_obj(&self, obj: &LuaData) -> JsonValue {
        match self.flavor() {
            ScriptFlavor::Custom => obj.to_json(),
            ScriptFlavor::Ingress => ingress_obj(obj).to_json(),
        }
    }
}

/// What a document is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DocKind {
    Script(ScriptTarget),
    /// A test case of the script(s) given.
    Case(ScriptTarget),
    /// A ConfigMap manifest holding scripts.
    ConfigMap,
    Other,
}

fn name_of(path: &Path) -> Option<&str> {
    path.file_name().and_then(|n| n.to_str())
}

fn is_yaml(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e == "yaml" || e == "yml")
}

/// The script a Lua file is; a Lua file outside the known layout is a custom script without
/// cases (still analysed).
pub fn lua_target(path: &Path) -> ScriptTarget {
    let dir = path.parent().unwrap_or(Path::new(""));
    let kind = discovery::script_kind_at(path);
    ScriptTarget {
        id: ScriptId::File(path.to_path_buf()),
        testdata: kind.as_ref().map(|kind| discovery::testdata_dir(dir, kind)),
        // Only a custom provider must have its testdata folder (upstream's rule).
        testdata_required: matches!(kind, Some(ScriptKind::Custom { .. })),
        kind,
        skipped: None,
        replaces: None,
        bundled: None,
    }
}

/// The script whose case `path` is: `<dir>/testdata/**` next to `<dir>/trafficRouting.lua`, or
/// `trafficrouting_ingress/testdata/<class>/**` for `trafficrouting_ingress/<class>.lua`.
pub fn case_owner(path: &Path, docs: &Documents) -> Option<ScriptTarget> {
    if !is_yaml(path) {
        return None;
    }
    for testdata in path.ancestors().skip(1) {
        if name_of(testdata) != Some("testdata") {
            continue;
        }
        let dir = testdata.parent()?;
        let custom = dir.join(CUSTOM_SCRIPT_NAME);
        if docs.exists(&custom) {
            return Some(lua_target(&custom));
        }
        if name_of(dir) == Some(INGRESS_FOLDER) {
            let class = path.strip_prefix(testdata).ok()?.components().next()?;
            let script = dir.join(format!("{}.lua", class.as_os_str().to_string_lossy()));
            if docs.exists(&script) {
                return Some(lua_target(&script));
            }
        }
    }
    None
}

/// Whether YAML text looks like a manifest with embedded scripts (cheap check before parsing).
pub fn looks_like_configmap(text: &str) -> bool {
    text.contains("ConfigMap") && text.contains("lua.traffic.routing.")
}

/// Classifies a document from its path (and, for YAML outside testdata, its text).
pub fn classify(path: &Path, text: &str, docs: &Documents) -> DocKind {
    if path.extension().and_then(|e| e.to_str()) == Some("lua") {
        return DocKind::Script(lua_target(path));
    }
    if !is_yaml(path) {
        return DocKind::Other;
    }
    if let Some(owner) = case_owner(path, docs) {
        return DocKind::Case(owner);
    }
    if looks_like_configmap(text) {
        return DocKind::ConfigMap;
    }
    DocKind::Other
}

/// The scripts of a manifest, each with where its cases are looked for: for `<Kind>.<group>`,
/// `<tree>/<group>/<Kind>/testdata`; for an ingress class,
/// `<tree>/trafficrouting_ingress/testdata/<class>`, where `<tree>` is the manifest's folder,
/// its parent, a workspace root or a root's `lua_configuration` (the first that has one).
pub fn embedded_targets(
    manifest: &Path,
    text: &str,
    roots: &[PathBuf],
) -> Vec<(ScriptTarget, EmbeddedScript)> {
    let Ok(scripts) = discovery::read_configmap(text) else {
        return Vec::new();
    };
    let mut trees: Vec<PathBuf> = Vec::new();
    if let Some(dir) = manifest.parent() {
        trees.push(dir.to_path_buf());
        if let Some(up) = dir.parent() {
            trees.push(up.to_path_buf());
        }
    }
    for root in roots {
        trees.push(root.clone());
        trees.push(root.join("lua_configuration"));
    }
    scripts
        .scripts
        .into_iter()
        .map(|script| {
            let folders: Vec<PathBuf> = trees
                .iter()
                .map(|tree| discovery::script_folder(tree, &script.kind))
                .collect();
            let testdata = folders
                .iter()
                .map(|folder| discovery::testdata_dir(folder, &script.kind))
                .find(|dir| dir.is_dir());
            // A tree beside it that bundles a script for the same provider: Kruise reads one
            // of the two, by the rule `check` follows (`targets::unread_script`).
            let bundled = trees
                .iter()
                .map(|tree| bundled_path(tree, &script.kind))
                .find(|path| path.is_file());
            let id = ScriptId::Embedded {
                manifest: manifest.to_path_buf(),
                key: script.key.clone(),
            };
            let (mut skipped, mut replaces) = (None, None);
            if let Some(bundled) = &bundled {
                let (read, reason) = unread_script(
                    &script.kind,
                    &bundled.display().to_string(),
                    &id.full_name(),
                );
                match read {
                    Precedence::Bundled => skipped = Some(reason),
                    Precedence::ConfigMap => replaces = Some(reason),
                }
            }
            // The script Kruise reads runs the cases; one that replaces a bundled script
            // without cases of its own takes the bundled script's (the engine's `resolve`).
            let testdata = match (&skipped, &replaces, &bundled) {
                (Some(_), ..) => None,
                (None, Some(_), Some(bundled)) => testdata.or_else(|| {
                    let folder = bundled.parent().unwrap_or(Path::new(""));
                    Some(discovery::testdata_dir(folder, &script.kind))
                }),
                _ => testdata,
            };
            let target = ScriptTarget {
                id,
                kind: Some(script.kind.clone()),
                // A script Kruise never reads runs no case: the tree's script owns them.
                testdata,
                testdata_required: false,
                skipped,
                replaces,
                bundled,
            };
            (target, script)
        })
        .collect()
}

/// Every script under the roots (bundled trees and ConfigMap manifests), for the first run.
pub fn workspace_scripts(roots: &[PathBuf], docs: &Documents) -> Vec<ScriptTarget> {
    let mut targets = Vec::new();
    for root in roots {
        if let Ok(entries) = discovery::discover(root) {
            for entry in entries {
                if let discovery::ScriptOrigin::File(path) = entry.origin {
                    targets.push(lua_target(&path));
                }
            }
        }
        // ConfigMap manifests: YAML files outside testdata folders, a few levels down.
        let mut manifests = Vec::new();
        collect_manifests(root, 4, &mut manifests);
        for manifest in manifests {
            if let Some(text) = docs.text(&manifest)
                && looks_like_configmap(&text)
            {
                targets.extend(
                    embedded_targets(&manifest, &text, roots)
                        .into_iter()
                        .map(|(target, _)| target),
                );
            }
        }
    }
    targets.dedup_by(|a, b| a.id == b.id);
    targets
}

fn collect_manifests(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    let Ok(read) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in read.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            let skip = name_of(&path)
                .is_some_and(|n| n == "testdata" || n.starts_with('.') || n == "target");
            if depth > 0 && !skip {
                collect_manifests(&path, depth - 1, out);
            }
        } else if kind.is_file()
            && is_yaml(&path)
            && entry.metadata().is_ok_and(|m| m.len() < 1 << 20)
        {
            out.push(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFEST: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kruise-rollout-configuration\ndata:\n  lua.traffic.routing.Route.example.io: |\n    local w = obj.canaryWeight\n    return obj.data\n";

    /// A ConfigMap script for a custom provider whose tree beside it bundles a script is never
    /// read by Kruise (`check` lists it skipped): it runs none of the tree's cases, which stay
    /// the bundled script's (defect: it ran them too, and the case showed either verdict).
    /// An ingress class's ConfigMap script is the one read, so it keeps its cases and names the
    /// bundled script it replaces.
    #[test]
    fn a_configmap_script_kruise_never_reads_takes_no_cases() {
        let dir = crate::test_scratch::folder("kruise-lua-lsp-project", "never-read");
        let tree = dir.join("lua_configuration");
        let route = tree.join("example.io/Route");
        std::fs::create_dir_all(route.join("testdata")).unwrap();
        std::fs::create_dir_all(tree.join("trafficrouting_ingress/testdata/nginx")).unwrap();
        std::fs::write(route.join("trafficRouting.lua"), "return obj.data\n").unwrap();
        std::fs::write(tree.join("trafficrouting_ingress/nginx.lua"), "return {}\n").unwrap();
        let manifest = dir.join("cm.yaml");
        let text = format!(
            "{MANIFEST}  lua.traffic.routing.ingress.nginx: |\n    return obj.annotations\n"
        );
        let targets = embedded_targets(&manifest, &text, std::slice::from_ref(&dir));
        let (route_cm, nginx_cm) = (&targets[0].0, &targets[1].0);
        let reason = route_cm.skipped.as_deref().expect("skipped");
        assert!(
            reason.starts_with("Kruise runs the bundled script for example.io/Route (")
                && reason.ends_with("); this ConfigMap script is never read"),
            "{reason}"
        );
        assert_eq!(route_cm.testdata, None, "it runs no case");
        assert_eq!(route_cm.replaces, None);
        assert_eq!(nginx_cm.skipped, None);
        // The ingress class's ConfigMap script replaces the bundled one (`check` lists that
        // one skipped, with this reason).
        let (bundled, reason) = nginx_cm.replaced().expect("replaces the bundled script");
        assert_eq!(bundled, tree.join("trafficrouting_ingress/nginx.lua"));
        assert_eq!(
            reason,
            format!(
                "the ConfigMap script for ingress class `nginx` ({}#lua.traffic.routing.ingress.nginx) replaces it",
                manifest.display()
            )
        );
        assert_eq!(
            nginx_cm.testdata,
            Some(tree.join("trafficrouting_ingress/testdata/nginx"))
        );
    }

    #[test]
    fn layout_decides_kind_and_testdata() {
        let t = lua_target(Path::new("/r/example.io/Route/trafficRouting.lua"));
        assert_eq!(
            t.kind,
            Some(ScriptKind::Custom {
                group: "example.io".into(),
                kind: "Route".into()
            })
        );
        assert_eq!(
            t.testdata.as_deref(),
            Some(Path::new("/r/example.io/Route/testdata"))
        );
        let t = lua_target(Path::new("/r/trafficrouting_ingress/nginx.lua"));
        assert_eq!(t.flavor(), ScriptFlavor::Ingress);
        assert_eq!(
            t.testdata.as_deref(),
            Some(Path::new("/r/trafficrouting_ingress/testdata/nginx"))
        );
    }

    #[test]
    fn embedded_positions_round_trip() {
        let script = discovery::read_configmap(MANIFEST)
            .unwrap()
            .scripts
            .remove(0);
        let map = EmbeddedMap::new(&script);
        assert_eq!(map.host_line(1), 7);
        let in_script = script.source.find("canaryWeight").unwrap();
        let in_host = map.to_host(in_script);
        assert_eq!(&MANIFEST[in_host..in_host + 12], "canaryWeight");
        assert_eq!(map.to_script(in_host), Some(in_script));
        // The key line is outside the script.
        let key = MANIFEST.find("lua.traffic").unwrap();
        assert_eq!(map.to_script(key), None);
    }
}
