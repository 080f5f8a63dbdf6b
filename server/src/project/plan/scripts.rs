//! Which script a plan runs for a resource, found as Kruise finds it: for a custom provider
//! the bundled script (`<tree>/<group>/<Kind>/trafficRouting.lua`) wins over the
//! `kruise-rollout-configuration` ConfigMap's `lua.traffic.routing.<Kind>.<group>`; for an
//! ingress class the ConfigMap's `lua.traffic.routing.ingress.<class>` wins over the bundled
//! `trafficrouting_ingress/<class>.lua` (the engine's [`discovery::resolve`] order). A script
//! the user names (`--script`) comes before both.

use std::path::{Path, PathBuf};

use kruise_lua_engine::discovery::{self, EmbeddedScript, INGRESS_FOLDER};
use kruise_lua_engine::script::ScriptKind;

/// A script the user named with `--script`: its source and the kind its place in a
/// `lua_configuration` layout gives it (`None`: outside such a layout, it serves any resource).
#[derive(Debug, Clone)]
pub struct GivenScript {
    pub path: String,
    pub kind: Option<ScriptKind>,
    pub source: String,
}

/// A ConfigMap manifest's scripts and the manifest's name.
#[derive(Debug, Clone)]
pub struct ConfigScripts {
    pub path: String,
    pub scripts: Vec<EmbeddedScript>,
}

/// Where scripts come from.
#[derive(Debug, Clone, Default)]
pub struct ScriptSources {
    pub given: Vec<GivenScript>,
    pub configmaps: Vec<ConfigScripts>,
    /// A `lua_configuration` tree (bundled scripts), when there is one.
    pub tree: Option<PathBuf>,
    /// Largest script read from the tree, in bytes.
    pub max_bytes: u64,
}

/// The script found for a resource.
#[derive(Debug, Clone, PartialEq)]
pub struct FoundScript {
    pub source: String,
    /// Where it is, as reports show it: a file, or `manifest.yaml (key)`.
    pub origin: String,
}

/// A script's kind as messages name it: `VirtualService (networking.istio.io)`, `the ingress
/// class nginx`.
pub fn describe_kind(kind: &ScriptKind) -> String {
    match kind {
        ScriptKind::Custom { group, kind } => format!("{kind} ({group})"),
        ScriptKind::Ingress { class } => format!("the ingress class {class}"),
    }
}

impl ScriptSources {
    /// The script Kruise would run for `kind`, or why there is none.
    pub fn find(&self, kind: &ScriptKind) -> Result<FoundScript, String> {
        if let Some(given) = self
            .given
            .iter()
            .find(|g| g.kind.as_ref() == Some(kind))
            .or_else(|| self.given.iter().find(|g| g.kind.is_none()))
        {
            return Ok(FoundScript {
                source: given.source.clone(),
                origin: given.path.clone(),
            });
        }
        let from_configmap = || {
            self.configmaps.iter().find_map(|configmap| {
                configmap
                    .scripts
                    .iter()
                    .find(|script| &script.kind == kind)
                    .map(|script| FoundScript {
                        source: script.source.clone(),
                        origin: format!("{} ({})", configmap.path, script.key),
                    })
            })
        };
        let from_tree = || -> Result<Option<FoundScript>, String> {
            let Some(tree) = &self.tree else {
                return Ok(None);
            };
            let path = bundled_path(tree, kind);
            if !path.is_file() {
                return Ok(None);
            }
            let shown = crate::project::paths::display(&path);
            let source = kruise_lua_engine::input::read_text(&path, self.max_bytes)
                .map_err(|e| format!("{shown}: {e}"))?;
            Ok(Some(FoundScript {
                source,
                origin: shown,
            }))
        };
        let found = match kind {
            ScriptKind::Custom { .. } => match from_tree()? {
                Some(found) => Some(found),
                None => from_configmap(),
            },
            ScriptKind::Ingress { .. } => match from_configmap() {
                Some(found) => Some(found),
                None => from_tree()?,
            },
        };
        found.ok_or_else(|| self.not_found(kind))
    }

    /// Why no script serves `kind`: each source and what it lacks, in the order Kruise looks.
    fn not_found(&self, kind: &ScriptKind) -> String {
        let shown = crate::project::paths::display;
        let tree = match &self.tree {
            Some(tree) => format!("no {}", shown(&bundled_path(tree, kind))),
            None => "no lua_configuration tree (--tree)".to_owned(),
        };
        let configmaps = if self.configmaps.is_empty() {
            "no --config ConfigMap".to_owned()
        } else {
            let names: Vec<&str> = self.configmaps.iter().map(|c| c.path.as_str()).collect();
            format!("none in {}", names.join(", "))
        };
        let given = if self.given.is_empty() {
            "no --script"
        } else {
            "the --script files serve other providers"
        };
        let (first, second) = match kind {
            ScriptKind::Custom { .. } => (tree, configmaps),
            ScriptKind::Ingress { .. } => (configmaps, tree),
        };
        format!(
            "no script for {}: {given}, {first}, and {second}",
            describe_kind(kind)
        )
    }
}

/// Where a tree holds the bundled script of `kind`.
pub fn bundled_path(tree: &Path, kind: &ScriptKind) -> PathBuf {
    match kind {
        ScriptKind::Custom { .. } => {
            discovery::script_folder(tree, kind).join(discovery::CUSTOM_SCRIPT_NAME)
        }
        ScriptKind::Ingress { class } => tree.join(INGRESS_FOLDER).join(format!("{class}.lua")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn embedded(kind: ScriptKind, source: &str) -> EmbeddedScript {
        EmbeddedScript {
            kind,
            key: "k".into(),
            source: source.into(),
            line: 1,
            lines: vec![1],
            map: kruise_lua_engine::yaml::scalar_map::ScalarMap::opaque(source.len(), 0),
        }
    }

    #[test]
    fn kruise_order_bundled_wins_for_custom_and_configmap_for_ingress() {
        let tree = crate::test_scratch::folder("kl-plan-scripts", "order");
        let custom = ScriptKind::Custom {
            group: "a.io".into(),
            kind: "A".into(),
        };
        let ingress = ScriptKind::Ingress {
            class: "nginx".into(),
        };
        for kind in [&custom, &ingress] {
            let path = bundled_path(&tree, kind);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, "-- bundled").unwrap();
        }
        let sources = ScriptSources {
            given: Vec::new(),
            configmaps: vec![ConfigScripts {
                path: "cm.yaml".into(),
                scripts: vec![
                    embedded(custom.clone(), "-- cm"),
                    embedded(ingress.clone(), "-- cm"),
                ],
            }],
            tree: Some(tree.clone()),
            max_bytes: 1 << 20,
        };
        assert_eq!(sources.find(&custom).unwrap().source, "-- bundled");
        assert_eq!(sources.find(&ingress).unwrap().source, "-- cm");
        assert_eq!(sources.find(&ingress).unwrap().origin, "cm.yaml (k)");
        let other = ScriptKind::Custom {
            group: "b.io".into(),
            kind: "B".into(),
        };
        // Each source is named with what it lacks (it read "none, in a --config ConfigMap, or
        // given with --script" when there was no tree).
        let missing = sources.find(&other).unwrap_err();
        let at = bundled_path(&tree, &other);
        assert_eq!(
            missing,
            format!(
                "no script for B (b.io): no --script, no {}, and none in cm.yaml",
                crate::project::paths::display(&at)
            )
        );
        let bare = ScriptSources {
            max_bytes: 1 << 20,
            ..ScriptSources::default()
        };
        assert_eq!(
            bare.find(&other).unwrap_err(),
            "no script for B (b.io): no --script, no lua_configuration tree (--tree), and no --config ConfigMap"
        );
        std::fs::remove_dir_all(&tree).unwrap();
    }
}
