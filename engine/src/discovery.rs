//! Finding scripts and their test cases: a `lua_configuration` tree walked as Kruise's test
//! walks it, and `kruise-rollout-configuration` ConfigMaps holding scripts.
//!
//! # Layout of a tree
//!
//! ```text
//! <root>/<group>/<Kind>/trafficRouting.lua        custom provider script (as upstream)
//! <root>/<group>/<Kind>/testdata/**/*.yaml|*.yml  its cases (as upstream)
//! <root>/trafficrouting_ingress/<class>.lua       ingress-class script (as upstream)
//! <root>/trafficrouting_ingress/testdata/<class>/**/*.yaml|*.yml   its cases (ours)
//! ```
//!
//! Custom scripts are found exactly as upstream's `TestLuaScript` finds them (conformance 2.7):
//! the root is walked in lexical order without following symlinks below it, every path *containing*
//! `trafficRouting.lua` is a script whose group and Kind are the names of the two folders
//! above it, and its cases are found by walking `<dir>/testdata` the same way, keeping
//! non-directories ending in `.yaml` and any path ending in `.yml`. A missing `testdata`
//! folder is an error, as it fails upstream's test.
//!
//! Upstream has no case files for ingress-class scripts, so their layout is ours: one folder
//! per class under `trafficrouting_ingress/testdata/`, walked with the same rules. A class
//! without such a folder simply has no cases.
//!
//! # ConfigMaps
//!
//! Kruise also reads scripts from the `kruise-rollout-configuration` ConfigMap: key
//! `lua.traffic.routing.<Kind>.<group>` for a custom provider, and
//! `lua.traffic.routing.ingress.<class>` for an ingress class ([`parse_configmap`]). When a
//! script for the same provider exists in both places, Kruise prefers the bundled one for custom
//! providers and the ConfigMap one for ingress classes ([`resolve`]). Kruise reads one such
//! ConfigMap: of several ConfigMap scripts for one provider, the first given is taken
//! ([`taken_configmap_scripts`]).

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use crate::input::{self, DEFAULT_MAX_INPUT_BYTES, ReadError};
use crate::script::ScriptKind;
use crate::testcase::{CaseError, CaseWarning};
use crate::yaml::scalar_map::ScalarMap;
use crate::yaml::{self, YamlValue};

/// Where a script's source comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScriptOrigin {
    File(PathBuf),
    /// The value of `key` in a ConfigMap manifest; `lines` holds the 1-based manifest line
    /// where each script line starts (a double-quoted script has many on one line).
    ConfigMap {
        path: PathBuf,
        key: String,
        lines: Vec<u32>,
    },
}

/// A script and its test cases.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptEntry {
    pub kind: ScriptKind,
    pub origin: ScriptOrigin,
    pub source: String,
    /// The case files in walk order, or why there are none (no `testdata` folder: an error,
    /// as in Kruise's test).
    pub cases: Result<Vec<PathBuf>, CaseError>,
    /// Files of the testdata folder that look like cases but are not regular files (a FIFO
    /// named `x.yaml`): never opened, as reading them could block forever.
    pub skipped_cases: Vec<SkippedFile>,
    /// Why the script file could not be read (then `source` is empty and `cases` holds the
    /// same message as Kruise's test reports it). An I/O failure or non-UTF-8 text.
    pub read_error: Option<String>,
}

/// A file left out of a walk, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedFile {
    pub path: PathBuf,
    pub reason: String,
}

/// The file name of custom provider scripts; a path containing it is a script.
pub const CUSTOM_SCRIPT_NAME: &str = "trafficRouting.lua";
/// The folder holding ingress-class scripts.
pub const INGRESS_FOLDER: &str = "trafficrouting_ingress";
/// The name Kruise gives its configuration ConfigMap.
pub const CONFIGMAP_NAME: &str = "kruise-rollout-configuration";

const CUSTOM_KEY_PREFIX: &str = "lua.traffic.routing.";
const INGRESS_KEY_PREFIX: &str = "lua.traffic.routing.ingress.";

/// Walks `root` as Kruise's test does (conformance 2.7) and returns every script with its cases.
/// A `root` that is a ConfigMap manifest is read as one (see [`parse_configmap`]); its scripts
/// come without cases (see [`pair_with_testdata`] to give them some).
pub fn discover(root: &Path) -> io::Result<Vec<ScriptEntry>> {
    let meta = fs::metadata(root)?;
    if !meta.is_dir() {
        let text = input::read_text(root, DEFAULT_MAX_INPUT_BYTES).map_err(|e| match e {
            ReadError::Io(e) => e,
            other => io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: {other}", go_display(root)),
            ),
        })?;
        let scripts = parse_configmap(&text).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: {e}", root.display()),
            )
        })?;
        return Ok(pair_with_testdata(scripts, root, None));
    }
    let mut entries = Vec::new();
    // The root itself may be a symlink (the user named it); nothing below it is followed.
    walk_node(root, true, &mut |path, is_dir| {
        let relative = path.strip_prefix(root).unwrap_or(path);
        if relative.to_string_lossy().contains(CUSTOM_SCRIPT_NAME) {
            entries.push(file_entry(path, custom_kind(path)));
        } else if !is_dir && is_ingress_script(relative) {
            entries.push(file_entry(path, ingress_kind(path)));
        }
        Ok(())
    })?;
    Ok(entries)
}

/// The kind of script a file is by its place in a `lua_configuration` layout: a
/// `trafficRouting.lua` (group and Kind from the folders above it) or an ingress class's
/// `trafficrouting_ingress/<class>.lua`; `None` for any other file.
pub fn script_kind_at(path: &Path) -> Option<ScriptKind> {
    if path
        .file_name()
        .is_some_and(|name| name == CUSTOM_SCRIPT_NAME)
    {
        Some(custom_kind(path))
    } else if is_ingress_script(path) {
        Some(ingress_kind(path))
    } else {
        None
    }
}

/// `<…>/trafficrouting_ingress/<class>.lua`.
pub fn is_ingress_script(relative: &Path) -> bool {
    relative.extension().is_some_and(|e| e == "lua")
        && relative
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|p| p == INGRESS_FOLDER)
}

/// Reads a script file. Non-UTF-8 text is refused (everywhere: `check`, `run`, the language
/// server): gopher-lua would run its bytes as they are, but scripts travel as UTF-8 text
/// here, and running a repaired copy could differ from Kruise without a word.
fn read_script(path: &Path) -> Result<String, String> {
    input::read_text(path, DEFAULT_MAX_INPUT_BYTES).map_err(|e| script_read_error(path, &e))
}

/// Why the script at `path` was not read, as every front end says it.
pub fn script_read_error(path: &Path, error: &input::ReadError) -> String {
    format!("fail to read script {}: {error}", go_display(path))
}

/// Upstream takes the group and Kind from the two folder names above the script.
fn custom_kind(path: &Path) -> ScriptKind {
    let names: Vec<String> = path
        .components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let from_end = |n: usize| {
        names
            .len()
            .checked_sub(n)
            .map(|i| names[i].clone())
            .unwrap_or_default()
    };
    ScriptKind::Custom {
        group: from_end(3),
        kind: from_end(2),
    }
}

fn ingress_kind(path: &Path) -> ScriptKind {
    let class = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    ScriptKind::Ingress { class }
}

/// The entry of a script file, with its cases from the `testdata` folder next to it (which
/// only a custom script must have: upstream's rule; the ingress layout is ours).
fn file_entry(path: &Path, kind: ScriptKind) -> ScriptEntry {
    let testdata = testdata_dir(path.parent().unwrap_or(Path::new("")), &kind);
    let required = matches!(kind, ScriptKind::Custom { .. });
    let (source, cases, skipped_cases, read_error) = match read_script(path) {
        Ok(source) => {
            let (cases, skipped) = match find_cases_and_skipped(&testdata, required) {
                Ok((cases, skipped)) => (Ok(cases), skipped),
                Err(e) => (Err(e), Vec::new()),
            };
            (source, cases, skipped, None)
        }
        Err(message) => {
            let error = CaseError {
                message: message.clone(),
                span: None,
            };
            (String::new(), Err(error), Vec::new(), Some(message))
        }
    };
    ScriptEntry {
        kind,
        origin: ScriptOrigin::File(path.to_path_buf()),
        source,
        cases,
        skipped_cases,
        read_error,
    }
}

/// The folder a bundled script of `kind` sits in within a `lua_configuration` tree:
/// `<tree>/<group>/<Kind>` or `<tree>/trafficrouting_ingress`.
pub fn script_folder(tree: &Path, kind: &ScriptKind) -> PathBuf {
    match kind {
        ScriptKind::Custom { group, kind } => tree.join(group).join(kind),
        ScriptKind::Ingress { .. } => tree.join(INGRESS_FOLDER),
    }
}

/// The cases folder of a script of `kind` that sits in `folder`: `<folder>/testdata` for a
/// custom provider, `<folder>/testdata/<class>` for an ingress class.
pub fn testdata_dir(folder: &Path, kind: &ScriptKind) -> PathBuf {
    let testdata = folder.join("testdata");
    match kind {
        ScriptKind::Custom { .. } => testdata,
        ScriptKind::Ingress { class } => testdata.join(class),
    }
}

/// The case files under `testdata`, in walk order. A missing folder is an error when
/// `required` (upstream's rule for custom scripts), else no cases. Files that are not regular
/// files (FIFOs, sockets, devices, symlinks to them) are left out: see
/// [`find_cases_and_skipped`] for them.
pub fn find_cases(testdata: &Path, required: bool) -> Result<Vec<PathBuf>, CaseError> {
    find_cases_and_skipped(testdata, required).map(|(cases, _)| cases)
}

/// [`find_cases`], and the files left out because they are not regular files. Kruise's test
/// would open them and block forever on a FIFO; here they are never opened.
pub fn find_cases_and_skipped(
    testdata: &Path,
    required: bool,
) -> Result<(Vec<PathBuf>, Vec<SkippedFile>), CaseError> {
    if !required && fs::symlink_metadata(testdata).is_err() {
        return Ok((Vec::new(), Vec::new()));
    }
    let mut cases = Vec::new();
    let mut skipped = Vec::new();
    let result = walk(testdata, &mut |path, is_dir| {
        let name = path.to_string_lossy();
        if (!is_dir && name.ends_with(".yaml")) || name.ends_with(".yml") {
            // A `.yml` directory is kept, as upstream keeps it (reading it fails clearly).
            match input::non_regular(path).filter(|what| *what != "a directory") {
                Some(what) => skipped.push(SkippedFile {
                    path: path.to_path_buf(),
                    reason: format!(
                        "is {what}, not a regular file: skipped (reading it could block forever)"
                    ),
                }),
                None => cases.push(path.to_path_buf()),
            }
        }
        Ok(())
    });
    match result {
        Ok(()) => Ok((cases, skipped)),
        Err(WalkError { path, error }) => Err(CaseError {
            message: format!(
                "fail to walk testdata dir: lstat {}: {}",
                go_display(&path),
                input::io_text(&error)
            ),
            span: None,
        }),
    }
}

/// A failed `lstat`/`readdir` during a walk, with the path it failed on.
struct WalkError {
    path: PathBuf,
    error: io::Error,
}

/// The error keeps its kind, and its message names the path that failed (a folder deep in
/// the tree, not the tree's root).
impl From<WalkError> for io::Error {
    fn from(e: WalkError) -> io::Error {
        let message = format!("{}: {}", go_display(&e.path), input::io_text(&e.error));
        io::Error::new(e.error.kind(), message)
    }
}

/// Go's `filepath.Walk`: `visit` sees `root`, then, for a directory, each entry sorted by name
/// (bytewise), depth first. Symlinks are not followed. Unlike Go, `visit` cannot skip; the
/// first `lstat`/`readdir` failure ends the walk.
fn walk(
    root: &Path,
    visit: &mut dyn FnMut(&Path, bool) -> Result<(), WalkError>,
) -> Result<(), WalkError> {
    let meta = fs::symlink_metadata(root).map_err(|error| WalkError {
        path: root.to_path_buf(),
        error,
    })?;
    walk_node(root, meta.is_dir(), visit)
}

fn walk_node(
    path: &Path,
    is_dir: bool,
    visit: &mut dyn FnMut(&Path, bool) -> Result<(), WalkError>,
) -> Result<(), WalkError> {
    visit(path, is_dir)?;
    if !is_dir {
        return Ok(());
    }
    let read = fs::read_dir(path).map_err(|error| WalkError {
        path: path.to_path_buf(),
        error,
    })?;
    let mut names = read
        .map(|e| e.map(|e| e.file_name()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| WalkError {
            path: path.to_path_buf(),
            error,
        })?;
    names.sort_by(|a, b| a.as_encoded_bytes().cmp(b.as_encoded_bytes()));
    for name in names {
        let child = path.join(&name);
        let meta = fs::symlink_metadata(&child).map_err(|error| WalkError {
            path: child.clone(),
            error,
        })?;
        walk_node(&child, meta.is_dir(), visit)?;
    }
    Ok(())
}

/// A path as Go's `filepath.Join` would print it (no `./` components).
pub fn go_display(path: &Path) -> String {
    let cleaned: PathBuf = path
        .components()
        .filter(|c| !matches!(c, Component::CurDir))
        .collect();
    if cleaned.as_os_str().is_empty() {
        ".".to_string()
    } else {
        cleaned.display().to_string()
    }
}

// ---------------------------------------------------------------------------------------------
// ConfigMaps.

/// A script embedded in a ConfigMap under `lua.traffic.routing.<Kind>.<group>` (custom) or
/// `lua.traffic.routing.ingress.<class>` (ingress).
#[derive(Debug, Clone, PartialEq)]
pub struct EmbeddedScript {
    pub kind: ScriptKind,
    pub key: String,
    pub source: String,
    /// 1-based line of the script's first line in the manifest.
    pub line: u32,
    /// The 1-based manifest line where each script line starts.
    pub lines: Vec<u32>,
    /// Where each byte of the script comes from in the manifest.
    pub map: ScalarMap,
}

/// The 1-based manifest line where each line of `script` starts. The map's source offsets
/// ascend with the script's, so the newlines are counted once, from one line start to the
/// next (counting from the manifest's start for each line was quadratic on a long script).
fn manifest_lines(manifest: &str, script: &str, map: &ScalarMap) -> Vec<u32> {
    let bytes = manifest.as_bytes();
    let (mut at, mut line) = (0usize, 1usize);
    std::iter::once(0)
        .chain(script.match_indices('\n').map(|(i, _)| i + 1))
        .map(|offset| {
            let to = map.to_source(offset).min(bytes.len());
            if to < at {
                // Not expected (see above); counted again from the start rather than wrong.
                (at, line) = (0, 1);
            }
            line += bytes[at..to].iter().filter(|b| **b == b'\n').count();
            at = to;
            u32::try_from(line).unwrap_or(u32::MAX)
        })
        .collect()
}

/// The scripts of a manifest, with remarks about what Kruise would not read as written
/// (another ConfigMap name, a key that names no provider, a value that is not a string).
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigMapScripts {
    pub scripts: Vec<EmbeddedScript>,
    pub notes: Vec<CaseWarning>,
}

/// Reads a `kruise-rollout-configuration` ConfigMap manifest and returns its scripts.
/// See [`read_configmap`] for the remarks.
pub fn parse_configmap(source: &str) -> Result<Vec<EmbeddedScript>, CaseError> {
    read_configmap(source).map(|c| c.scripts)
}

/// Reads every ConfigMap of a manifest (several documents are fine) and returns the scripts
/// of their `data`. A ConfigMap with another name than `kruise-rollout-configuration` is read
/// too, with a note: Kruise only reads the one of that name. A manifest without any ConfigMap
/// is an error.
pub fn read_configmap(source: &str) -> Result<ConfigMapScripts, CaseError> {
    let docs = yaml::parse_documents(source).map_err(|e| CaseError {
        message: format!("cannot parse the manifest: {e}"),
        span: Some(e.span()),
    })?;
    let mut scripts = Vec::new();
    let mut notes = Vec::new();
    let mut found = false;
    for doc in &docs {
        if !matches!(doc.get("kind").map(|k| &k.value), Some(YamlValue::String(k)) if k == "ConfigMap")
        {
            continue;
        }
        found = true;
        let name = doc.get("metadata").and_then(|m| m.get("name"));
        let name_text = match name.map(|n| &n.value) {
            Some(YamlValue::String(s)) => s.clone(),
            _ => String::new(),
        };
        if name_text != CONFIGMAP_NAME {
            notes.push(CaseWarning {
                message: format!(
                    "the ConfigMap is named `{name_text}`; Kruise reads scripts only from `{CONFIGMAP_NAME}`"
                ),
                span: Some(name.unwrap_or(doc).span),
            });
        }
        let Some(YamlValue::Map(entries)) = doc.get("data").map(|d| &d.value) else {
            continue;
        };
        for (key, value) in entries {
            let Some(key_text) = key.key_string() else {
                continue;
            };
            let Some(kind) = script_kind_of_key(&key_text) else {
                if key_text.starts_with(CUSTOM_KEY_PREFIX) {
                    notes.push(CaseWarning {
                        message: format!("`{key_text}` names no provider: expected `lua.traffic.routing.<Kind>.<group>` or `lua.traffic.routing.ingress.<class>`"),
                        span: Some(key.span),
                    });
                }
                continue;
            };
            let YamlValue::String(script) = &value.value else {
                notes.push(CaseWarning {
                    message: format!("the value of `{key_text}` is not a string; a ConfigMap's data holds strings"),
                    span: Some(value.span),
                });
                continue;
            };
            let map = ScalarMap::read(
                source,
                key.span.end.offset,
                key.span.start.column.saturating_sub(1) as usize,
                value.span.start.offset..value.span.end.offset,
                script,
            );
            let lines = manifest_lines(source, script, &map);
            scripts.push(EmbeddedScript {
                kind,
                key: key_text.clone(),
                source: script.clone(),
                line: lines[0],
                lines,
                map,
            });
        }
    }
    if !found {
        return Err(CaseError {
            message: "no ConfigMap in the manifest".into(),
            span: None,
        });
    }
    Ok(ConfigMapScripts { scripts, notes })
}

/// The provider a data key configures, if it is a script key.
pub fn script_kind_of_key(key: &str) -> Option<ScriptKind> {
    if let Some(class) = key.strip_prefix(INGRESS_KEY_PREFIX) {
        return (!class.is_empty()).then(|| ScriptKind::Ingress {
            class: class.to_string(),
        });
    }
    let rest = key.strip_prefix(CUSTOM_KEY_PREFIX)?;
    let (kind, group) = rest.split_once('.')?;
    (!kind.is_empty() && !group.is_empty()).then(|| ScriptKind::Custom {
        group: group.to_string(),
        kind: kind.to_string(),
    })
}

/// Script entries for ConfigMap scripts, with cases from a tree when one is given:
/// `<tree>/<group>/<Kind>/testdata` for a custom provider and
/// `<tree>/trafficrouting_ingress/testdata/<class>` for an ingress class (a missing folder
/// means no cases here: upstream has no rule for ConfigMap scripts).
pub fn pair_with_testdata(
    scripts: Vec<EmbeddedScript>,
    manifest: &Path,
    tree: Option<&Path>,
) -> Vec<ScriptEntry> {
    scripts
        .into_iter()
        .map(|script| {
            let (cases, skipped_cases) = match tree {
                None => (Ok(Vec::new()), Vec::new()),
                Some(tree) => match find_cases_and_skipped(
                    &testdata_dir(&script_folder(tree, &script.kind), &script.kind),
                    false,
                ) {
                    Ok((cases, skipped)) => (Ok(cases), skipped),
                    Err(e) => (Err(e), Vec::new()),
                },
            };
            ScriptEntry {
                kind: script.kind,
                origin: ScriptOrigin::ConfigMap {
                    path: manifest.to_path_buf(),
                    key: script.key,
                    lines: script.lines,
                },
                source: script.source,
                cases,
                skipped_cases,
                read_error: None,
            }
        })
        .collect()
}

/// Which of two scripts for one provider Kruise reads: its bundled script (a
/// `lua_configuration` tree) or the ConfigMap's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precedence {
    Bundled,
    ConfigMap,
}

/// Kruise's lookup order when both a bundled script and a ConfigMap script exist for `kind`:
/// a custom provider's bundled script wins (the ConfigMap entry is never read), an ingress
/// class's ConfigMap script wins. The one statement of that rule: [`resolve`], `check` and the
/// language server all ask it.
pub fn read_when_both(kind: &ScriptKind) -> Precedence {
    match kind {
        ScriptKind::Custom { .. } => Precedence::Bundled,
        ScriptKind::Ingress { .. } => Precedence::ConfigMap,
    }
}

/// Of several ConfigMap scripts for the same provider (two manifests, a dev and a prod
/// variant, say), the one Kruise reads: it reads one `kruise-rollout-configuration` ConfigMap,
/// so one script per provider is taken, the **first** in the order given (`check`: the order
/// of its PATHs; the language server: manifest path order, which is the walk order), and
/// every other is skipped, naming it. Which of the taken one and a bundled script is read is
/// [`read_when_both`]'s to say. The one statement of that rule: [`resolve`], `check` and the
/// language server all ask it.
///
/// For each of `kinds` (the providers of the ConfigMap scripts, in order), the index of the
/// script taken for its provider: its own index when it is the one taken.
pub fn taken_configmap_scripts<'a>(kinds: impl IntoIterator<Item = &'a ScriptKind>) -> Vec<usize> {
    let mut first: BTreeMap<&ScriptKind, usize> = BTreeMap::new();
    kinds
        .into_iter()
        .enumerate()
        .map(|(at, kind)| *first.entry(kind).or_insert(at))
        .collect()
}

/// The scripts Kruise would actually run, from bundled ones (a `lua_configuration` tree) and
/// ConfigMap ones, following its lookup order:
///
/// * of several ConfigMap scripts for one provider, the first is taken and the others are
///   dropped ([`taken_configmap_scripts`]);
/// * custom provider: the **bundled** script wins; a ConfigMap script for the same
///   group/Kind is dropped (Kruise never reads it);
/// * ingress class: the **ConfigMap** script wins; it takes the bundled script's place, and
///   its cases too when it has none of its own.
///
/// Bundled entries keep their order; ConfigMap scripts for other providers follow, in order.
pub fn resolve(bundled: Vec<ScriptEntry>, configmap: Vec<ScriptEntry>) -> Vec<ScriptEntry> {
    let taken = taken_configmap_scripts(configmap.iter().map(|entry| &entry.kind));
    let mut out = bundled;
    for (at, entry) in configmap.into_iter().enumerate() {
        if taken[at] != at {
            // Another ConfigMap script for the provider is taken.
            continue;
        }
        match out.iter().position(|b| b.kind == entry.kind) {
            None => out.push(entry),
            Some(i) => match read_when_both(&entry.kind) {
                Precedence::Bundled => {}
                Precedence::ConfigMap => {
                    let has_cases = matches!(&entry.cases, Ok(c) if !c.is_empty());
                    let old = std::mem::replace(&mut out[i], entry);
                    if !has_cases {
                        out[i].cases = old.cases;
                        out[i].skipped_cases = old.skipped_cases;
                    }
                }
            },
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch folder under the system temp dir, removed when dropped.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Scratch {
            let dir = std::env::temp_dir().join(format!(
                "kruise-lua-discovery-{}-{}",
                name,
                std::process::id()
            ));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            Scratch(dir)
        }

        fn file(&self, rel: &str, text: &str) {
            let path = self.0.join(rel);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }

        fn dir(&self, rel: &str) {
            fs::create_dir_all(self.0.join(rel)).unwrap();
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn rel(root: &Path, p: &Path) -> String {
        p.strip_prefix(root).unwrap().to_string_lossy().into_owned()
    }

    #[test]
    fn walks_like_filepath_walk() {
        let s = Scratch::new("walk");
        s.file("b.io/Z/trafficRouting.lua", "return obj.data");
        s.file("b.io/Z/testdata/b.yaml", "");
        s.file("b.io/Z/testdata/a/z.yaml", "");
        s.file("b.io/Z/testdata/a.yaml", "");
        s.file("b.io/Z/testdata/A.yaml", "");
        s.file("b.io/Z/testdata/c.txt", "");
        s.file("b.io/Z/testdata/d.yml", "");
        s.dir("b.io/Z/testdata/dir.yaml");
        s.dir("b.io/Z/testdata/dir.yml");
        s.file("a.io/Y/trafficRouting.lua", "return 1");
        s.file("a.io/Y/trafficRouting.lua.orig", "old");
        s.file("trafficrouting_ingress/nginx.lua", "return {}");
        s.file("trafficrouting_ingress/testdata/nginx/one.yaml", "");
        s.file("trafficrouting_ingress/mse.lua", "return {}");
        s.file("trafficrouting_ingress/readme.md", "");
        let entries = discover(&s.0).unwrap();
        let kinds: Vec<_> = entries.iter().map(|e| e.kind.clone()).collect();
        let custom = |g: &str, k: &str| ScriptKind::Custom {
            group: g.into(),
            kind: k.into(),
        };
        let ingress = |c: &str| ScriptKind::Ingress { class: c.into() };
        assert_eq!(
            kinds,
            vec![
                custom("a.io", "Y"),
                custom("a.io", "Y"),
                custom("b.io", "Z"),
                ingress("mse"),
                ingress("nginx")
            ]
        );
        // No testdata: an error with upstream's message shape.
        let err = entries[0].cases.clone().unwrap_err();
        let testdata = s.0.join("a.io/Y/testdata");
        assert_eq!(
            err.message,
            format!(
                "fail to walk testdata dir: lstat {}: no such file or directory",
                testdata.display()
            )
        );
        assert_eq!(entries[1].source, "old");
        let cases: Vec<_> = entries[2]
            .cases
            .as_ref()
            .unwrap()
            .iter()
            .map(|p| rel(&s.0, p))
            .collect();
        assert_eq!(
            cases,
            vec![
                "b.io/Z/testdata/A.yaml",
                "b.io/Z/testdata/a/z.yaml",
                "b.io/Z/testdata/a.yaml",
                "b.io/Z/testdata/b.yaml",
                "b.io/Z/testdata/d.yml",
                "b.io/Z/testdata/dir.yml",
            ]
        );
        assert_eq!(entries[3].cases, Ok(vec![]));
        let nginx: Vec<_> = entries[4]
            .cases
            .as_ref()
            .unwrap()
            .iter()
            .map(|p| rel(&s.0, p))
            .collect();
        assert_eq!(
            nginx,
            vec!["trafficrouting_ingress/testdata/nginx/one.yaml"]
        );
        assert_eq!(entries[4].source, "return {}");
    }

    const MANIFEST: &str = "apiVersion: v1
kind: Namespace
metadata: {name: kruise-rollout}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: kruise-rollout-configuration
  namespace: kruise-rollout
data:
  lua.traffic.routing.VirtualService.networking.istio.io: |
    local spec = obj.data.spec
    return obj.data
  lua.traffic.routing.ingress.aliyun-alb: \"return {}\"
  \"lua.traffic.routing.Route.example.io\": >-
    return
    obj.data
  lua.traffic.routing.Bad: x
  other.setting: \"1\"
";

    #[test]
    fn configmap_scripts_and_their_lines() {
        let read = read_configmap(MANIFEST).unwrap();
        let scripts = &read.scripts;
        assert_eq!(scripts.len(), 3);
        assert_eq!(
            scripts[0].kind,
            ScriptKind::Custom {
                group: "networking.istio.io".into(),
                kind: "VirtualService".into()
            }
        );
        assert_eq!(
            scripts[0].source,
            "local spec = obj.data.spec\nreturn obj.data\n"
        );
        let line_of =
            |needle: &str| MANIFEST.lines().position(|l| l.contains(needle)).unwrap() as u32 + 1;
        assert_eq!(scripts[0].line, line_of("local spec"));
        assert_eq!(
            scripts[1].kind,
            ScriptKind::Ingress {
                class: "aliyun-alb".into()
            }
        );
        assert_eq!(scripts[1].line, line_of("aliyun-alb"));
        assert_eq!(
            scripts[2].kind,
            ScriptKind::Custom {
                group: "example.io".into(),
                kind: "Route".into()
            }
        );
        assert_eq!(scripts[2].source, "return obj.data");
        let folded_first = MANIFEST.lines().position(|l| l == "    return").unwrap() as u32 + 1;
        assert_eq!(scripts[2].line, folded_first);
        assert!(
            read.notes
                .iter()
                .any(|n| n.message.contains("lua.traffic.routing.Bad"))
        );
        assert!(!read.notes.iter().any(|n| n.message.contains("named")));
        let renamed = MANIFEST.replace("name: kruise-rollout-configuration", "name: mine");
        let read = read_configmap(&renamed).unwrap();
        assert_eq!(read.scripts.len(), 3);
        assert!(read.notes.iter().any(|n| n.message.contains("`mine`")));
        assert!(parse_configmap("kind: Deployment\n").is_err());
    }

    #[test]
    fn configmap_file_as_root_and_resolution() {
        let s = Scratch::new("cm");
        s.file("cm.yaml", MANIFEST);
        s.file(
            "tree/networking.istio.io/VirtualService/trafficRouting.lua",
            "bundled",
        );
        s.file(
            "tree/networking.istio.io/VirtualService/testdata/a.yaml",
            "",
        );
        s.file(
            "tree/trafficrouting_ingress/aliyun-alb.lua",
            "bundled ingress",
        );
        s.file("tree/trafficrouting_ingress/testdata/aliyun-alb/x.yaml", "");
        s.file("tree/example.io/Route/testdata/r.yaml", "");
        let from_file = discover(&s.0.join("cm.yaml")).unwrap();
        assert_eq!(from_file.len(), 3);
        assert!(
            matches!(&from_file[0].origin, ScriptOrigin::ConfigMap { key, .. } if key.ends_with("istio.io"))
        );
        assert_eq!(from_file[0].cases, Ok(vec![]));

        let tree = s.0.join("tree");
        let bundled = discover(&tree).unwrap();
        let paired = pair_with_testdata(
            parse_configmap(MANIFEST).unwrap(),
            &s.0.join("cm.yaml"),
            Some(&tree),
        );
        assert_eq!(paired[2].cases.as_ref().unwrap().len(), 1);
        let resolved = resolve(bundled, paired);
        assert_eq!(resolved.len(), 3);
        // Custom: the bundled script wins.
        assert_eq!(resolved[0].source, "bundled");
        // Ingress: the ConfigMap wins, in the bundled entry's place.
        assert_eq!(
            resolved[1].kind,
            ScriptKind::Ingress {
                class: "aliyun-alb".into()
            }
        );
        assert_eq!(resolved[1].source, "return {}");
        assert_eq!(resolved[1].cases.as_ref().unwrap().len(), 1);
        // A provider only the ConfigMap has is added.
        assert_eq!(
            resolved[2].kind,
            ScriptKind::Custom {
                group: "example.io".into(),
                kind: "Route".into()
            }
        );
    }

    /// Two manifests with a script for the same provider (a dev and a prod variant): Kruise
    /// reads one ConfigMap, so the first given is taken and the other is dropped, for an
    /// ingress class (which replaces the bundled script) as for a custom provider without a
    /// bundled script (defect: the last ingress script replaced the first, and of two custom
    /// ones the second was dropped as if the first were bundled).
    #[test]
    fn of_two_configmap_scripts_for_one_provider_the_first_is_taken() {
        let ingress = |class: &str| ScriptKind::Ingress {
            class: class.into(),
        };
        let split = ScriptKind::Custom {
            group: "example.io".into(),
            kind: "Split".into(),
        };
        let kinds = [ingress("mse"), split.clone(), ingress("mse"), split.clone()];
        assert_eq!(taken_configmap_scripts(&kinds), vec![0, 1, 0, 1]);

        let entry = |kind: &ScriptKind, origin: &str, cases: Vec<PathBuf>| ScriptEntry {
            kind: kind.clone(),
            origin: ScriptOrigin::ConfigMap {
                path: PathBuf::from(origin),
                key: String::new(),
                lines: vec![1],
            },
            source: format!("-- {origin}"),
            cases: Ok(cases),
            skipped_cases: Vec::new(),
            read_error: None,
        };
        let bundled = ScriptEntry {
            origin: ScriptOrigin::File(PathBuf::from("trafficrouting_ingress/mse.lua")),
            source: "-- bundled".into(),
            ..entry(&ingress("mse"), "", vec![PathBuf::from("mse/case.yaml")])
        };
        let configmaps = vec![
            entry(&ingress("mse"), "a.yaml", Vec::new()),
            entry(&split, "a.yaml", Vec::new()),
            entry(&ingress("mse"), "b.yaml", Vec::new()),
            entry(&split, "b.yaml", Vec::new()),
        ];
        let resolved = resolve(vec![bundled], configmaps);
        let sources: Vec<&str> = resolved.iter().map(|e| e.source.as_str()).collect();
        assert_eq!(sources, vec!["-- a.yaml", "-- a.yaml"]);
        assert_eq!(resolved[0].kind, ingress("mse"));
        assert_eq!(
            resolved[0].cases,
            Ok(vec![PathBuf::from("mse/case.yaml")]),
            "the taken script runs the bundled script's cases"
        );
        assert_eq!(resolved[1].kind, split);
    }

    #[cfg(unix)]
    #[test]
    fn walk_errors_name_the_path_that_failed() {
        let error: io::Error = WalkError {
            path: PathBuf::from("./lua/g/K/testdata/sub"),
            error: io::Error::from(io::ErrorKind::PermissionDenied),
        }
        .into();
        assert_eq!(error.kind(), io::ErrorKind::PermissionDenied);
        assert_eq!(error.to_string(), "lua/g/K/testdata/sub: permission denied");
    }

    #[cfg(unix)]
    #[test]
    fn fifos_in_testdata_are_skipped_and_bad_scripts_are_read_errors() {
        let s = Scratch::new("fifo");
        s.file("g/K/trafficRouting.lua", "return obj.data");
        s.file("g/K/testdata/a.yaml", "x: 1\n");
        let fifo = s.0.join("g/K/testdata/b.yaml");
        let c_path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo only creates a file.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o644) }, 0);
        s.dir("g/L/testdata");
        fs::write(s.0.join("g/L/trafficRouting.lua"), b"return '\xff'").unwrap();
        let entries = discover(&s.0).unwrap();
        assert_eq!(entries.len(), 2);
        let cases = entries[0].cases.as_ref().unwrap();
        assert_eq!(cases.len(), 1, "{cases:?}");
        assert_eq!(entries[0].skipped_cases.len(), 1);
        assert_eq!(entries[0].skipped_cases[0].path, fifo);
        assert!(entries[0].skipped_cases[0].reason.contains("is a FIFO"));
        let bad = entries[1].read_error.as_deref().unwrap();
        assert!(bad.contains("line 1: byte 9 is not valid UTF-8"), "{bad}");
    }

    #[test]
    fn symlinks_are_followed_only_for_the_root() {
        let s = Scratch::new("links");
        s.file("real/g/K/trafficRouting.lua", "return obj.data");
        s.file("real/g/K/testdata/a.yaml", "");
        s.file("elsewhere/b.yaml", "");
        std::os::unix::fs::symlink(s.0.join("elsewhere"), s.0.join("real/g/K/testdata/linked"))
            .unwrap();
        std::os::unix::fs::symlink(s.0.join("real"), s.0.join("root")).unwrap();
        let entries = discover(&s.0.join("root")).unwrap();
        assert_eq!(entries.len(), 1);
        // As Go's filepath.Walk: a symlinked folder below the root is not entered.
        let cases: Vec<_> = entries[0]
            .cases
            .as_ref()
            .unwrap()
            .iter()
            .map(|p| rel(&s.0.join("root"), p))
            .collect();
        assert_eq!(cases, vec!["g/K/testdata/a.yaml"]);
    }

    #[test]
    fn go_display_drops_dot_components() {
        assert_eq!(go_display(Path::new("./a/./b")), "a/b");
        assert_eq!(go_display(Path::new(".")), ".");
    }
}
