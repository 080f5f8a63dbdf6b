//! Where CRD schemas come from: the `crds/` folder at a `lua_configuration` root, the files
//! `kruise-lua.toml` lists (`crds = ["…"]`), and `--crd PATH`, loaded once into one shared
//! [`SchemaSet`], with every file that could not be used kept as a [`SourceProblem`].
//!
//! Precedence (a later CRD for the same group and kind replaces an earlier one, as
//! [`SchemaSet::insert`] does): `crds/` folders first (the bundled library's schemas live in
//! `lua_configuration/crds/`), then the toml's `crds`, then `--crd`: a user's CRD wins.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use kruise_lua_engine::input::{self, ReadError};
use kruise_lua_engine::schema::{Crd, MAX_CRD_FILE_BYTES, SchemaSet, SharedRuleEnv};
use kruise_lua_engine::yaml::{self, YamlNode, YamlValue};
use rayon::prelude::*;
use serde::Deserialize;

use super::{UsageError, paths};
use crate::analysis::LintConfig;

/// The folder at a `lua_configuration` root that holds CRD manifests.
pub const CRDS_FOLDER: &str = "crds";

/// How deep a CRD folder is walked (symlinked folders are not followed, so this only bounds
/// absurdly deep trees).
const MAX_FOLDER_DEPTH: usize = 16;
/// How many entries (files and folders) one load walks: a folder such as `/` named by mistake
/// would otherwise read every YAML file on the disk.
const MAX_WALKED_ENTRIES: usize = 10_000;

/// The schemas of a run and the files that could not be used.
#[derive(Debug, Clone, Default)]
pub struct CrdSources {
    /// Compiled once, shared by every step (and thread).
    pub schemas: Arc<SchemaSet>,
    /// Unreadable or invalid CRD files, in the order met.
    pub problems: Vec<SourceProblem>,
}

/// A CRD source that could not be used: file, 1-based line (0 when unknown) and cause.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceProblem {
    /// The file as reports show paths ([`paths::display`]).
    pub file: String,
    pub line: u32,
    pub message: String,
    /// The (group, kind) of every CRD the file declares, none of which was loaded from it (a
    /// file is loaded whole or not at all); `None` when that is not known (unreadable, not
    /// YAML, a path that names nothing), so the file may have held any kind's CRD.
    pub kinds: Option<Vec<(String, String)>>,
}

impl SourceProblem {
    /// Whether this file may have held the CRD of `group`/`kind`: it declares it, or what it
    /// declares is not known.
    pub fn may_declare(&self, group: &str, kind: &str) -> bool {
        self.kinds.as_ref().is_none_or(|kinds| {
            kinds
                .iter()
                .any(|(declared_group, declared)| declared_group == group && declared == kind)
        })
    }

    /// Whether this file declares the CRD of `group`/`kind` (known, not guessed).
    pub fn declares(&self, group: &str, kind: &str) -> bool {
        self.kinds.is_some() && self.may_declare(group, kind)
    }
}

impl std::fmt::Display for SourceProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line > 0 {
            write!(f, "{}:{}: {}", self.file, self.line, self.message)
        } else {
            write!(f, "{}: {}", self.file, self.message)
        }
    }
}

/// Loads the CRDs for one `lua_configuration` root (its `crds/` folder, when it has one), then
/// `config_crds` (already resolved, e.g. by [`config_crds`]), then `explicit` (`--crd`): files,
/// or folders read for `*.yaml`/`*.yml` below them in name order. Missing `explicit` and
/// `config_crds` paths are problems; a root without `crds/` is not.
// The language server's entry (it loads each root on its own); `check` and `lint` use
// `for_paths`.
pub fn load(root: Option<&Path>, explicit: &[PathBuf], config_crds: &[PathBuf]) -> CrdSources {
    let mut loader = Loader::default();
    if let Some(root) = root {
        loader.add_crds_folder(root);
    }
    for path in config_crds.iter().chain(explicit) {
        loader.add_path(path);
    }
    loader.finish()
}

/// [`load`] for several roots at once (`check` with many PATHs): every root's `crds/`
/// folder, then every root's `kruise-lua.toml` `crds`, then `explicit`.
pub fn load_roots(roots: &[PathBuf], explicit: &[PathBuf]) -> CrdSources {
    let mut loader = Loader::default();
    for root in roots {
        loader.add_crds_folder(root);
    }
    for root in roots {
        match config_crds(root) {
            Ok(listed) => listed.iter().for_each(|path| loader.add_path(path)),
            Err(problem) => loader.sources.push(Source::Problem(problem)),
        }
    }
    for path in explicit {
        loader.add_path(path);
    }
    loader.finish()
}

/// The CRDs for a run over `paths` (`check`, `lint`): every PATH's root's `crds/` folder and
/// kruise-lua.toml `crds` ([`root_of`]), then `explicit` (`--crd`; one that does not exist
/// is a usage error).
pub fn for_paths(paths: &[PathBuf], explicit: &[PathBuf]) -> Result<CrdSources, UsageError> {
    for path in explicit {
        std::fs::metadata(path).map_err(|err| UsageError::io(path, &err))?;
    }
    let mut roots: Vec<PathBuf> = Vec::new();
    for path in paths {
        if let Some(root) = root_of(path)
            && !roots.contains(&root)
        {
            roots.push(root);
        }
    }
    Ok(load_roots(&roots, explicit))
}

/// The `lua_configuration` root a PATH belongs to, for its `crds/` folder and kruise-lua.toml:
/// the nearest folder holding `crds/` or kruise-lua.toml at or above a folder PATH, or above a
/// file PATH (a script, a case, a ConfigMap manifest); the search stops at a repository root,
/// a folder holding `.git`, as the lint configuration's does. One rule whatever the PATH
/// names, so `check`, `lint`, `plan --tree`, the language server and the debugger find the same
/// CRDs for a tree, one of its script folders or one of its files. The search goes above the
/// working folder too (`check .` in a script folder); a root below the working folder is
/// given relative to it, as the PATH was, so reports name its CRD files as the user wrote the
/// PATH. `None` when no folder up to there has either.
pub fn root_of(path: &Path) -> Option<PathBuf> {
    let absolute = std::path::absolute(path).ok()?;
    let cwd = if path.is_absolute() {
        None
    } else {
        std::env::current_dir().ok()
    };
    // A folder may be the root itself; a file never is.
    let skip = usize::from(!path.is_dir());
    for dir in absolute.ancestors().skip(skip) {
        if dir.join(CRDS_FOLDER).is_dir() || dir.join(LintConfig::FILE_NAME).is_file() {
            let relative = cwd.as_deref().and_then(|cwd| dir.strip_prefix(cwd).ok());
            return Some(match relative {
                Some(relative) if relative.as_os_str().is_empty() => PathBuf::from("."),
                Some(relative) => relative.to_path_buf(),
                None => dir.to_path_buf(),
            });
        }
        if dir.join(".git").exists() {
            break;
        }
    }
    None
}

/// The `crds` a `lua_configuration` root's `kruise-lua.toml` lists, resolved relative to the
/// toml's folder; none when there is no such file. A path the toml names that does not
/// exist is an error at its line.
pub fn config_crds(root: &Path) -> Result<Vec<PathBuf>, SourceProblem> {
    let toml_path = root.join(LintConfig::FILE_NAME);
    let file = paths::display(&toml_path);
    let problem = |line: u32, message: String| SourceProblem {
        file: file.clone(),
        line,
        message,
        kinds: None,
    };
    let text = match input::read_text(&toml_path, input::DEFAULT_MAX_INPUT_BYTES) {
        Ok(text) => text,
        Err(ReadError::Io(err)) if err.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Vec::new());
        }
        Err(ReadError::NotUtf8 { line, column }) => {
            return Err(problem(
                line,
                format!("byte {column} is not valid UTF-8 (kruise-lua reads UTF-8 text only)"),
            ));
        }
        Err(err) => return Err(problem(0, err.to_string())),
    };
    /// The part of the file this module reads; the rest is for other readers.
    #[derive(Deserialize)]
    struct CrdsConfig {
        #[serde(default)]
        crds: Vec<toml::Spanned<String>>,
    }
    let config: CrdsConfig = toml::from_str(&text).map_err(|err| {
        let line = err.span().map_or(0, |span| line_at(&text, span.start));
        problem(line, format!("invalid kruise-lua.toml: {}", err.message()))
    })?;
    let mut resolved = Vec::with_capacity(config.crds.len());
    for entry in config.crds {
        let path = root.join(entry.get_ref());
        // Entries stay inside the project (an absolute path or `..` replaced the root, and `/`
        // walked the whole disk); CRDs elsewhere are named explicitly with --crd.
        let project = project_root(root);
        let inside = match (path.canonicalize(), &project) {
            (Ok(path), Some(project)) => path.starts_with(project),
            _ => true, // missing: reported below
        };
        if !inside {
            return Err(problem(
                line_at(&text, entry.span().start),
                format!(
                    "crds entry {:?}: {} is outside the project root {}; name CRDs outside it with --crd",
                    entry.get_ref(),
                    paths::display(&path),
                    project.as_deref().map(paths::display).unwrap_or_default()
                ),
            ));
        }
        if !path.exists() {
            return Err(problem(
                line_at(&text, entry.span().start),
                format!(
                    "crds entry {:?}: {} does not exist",
                    entry.get_ref(),
                    paths::display(&path)
                ),
            ));
        }
        resolved.push(path);
    }
    Ok(resolved)
}

/// The project a `lua_configuration` root belongs to, which `kruise-lua.toml`'s `crds` entries
/// must stay inside: the nearest folder above it holding `.git` (the repository), else the
/// folder that holds the root (CRDs beside `lua_configuration/` are common).
fn project_root(root: &Path) -> Option<PathBuf> {
    let root = root.canonicalize().ok()?;
    let repository = root.ancestors().find(|dir| dir.join(".git").exists());
    Some(
        repository
            .or_else(|| root.parent())
            .unwrap_or(&root)
            .to_path_buf(),
    )
}

/// The 1-based line of byte `offset` in `text`.
fn line_at(text: &str, offset: usize) -> u32 {
    let before = &text.as_bytes()[..offset.min(text.len())];
    u32::try_from(before.iter().filter(|b| **b == b'\n').count() + 1).unwrap_or(u32::MAX)
}

/// Lists CRD files in precedence order, then reads them into one set, keeping going past
/// files that cannot be used.
#[derive(Default)]
struct Loader {
    sources: Vec<Source>,
    /// Entries walked so far (bounded by [`MAX_WALKED_ENTRIES`]).
    walked: usize,
}

/// A file to read, or why a path gave none, in walk order.
enum Source {
    File(PathBuf),
    Problem(SourceProblem),
}

impl Loader {
    /// Reads and compiles the files in parallel (parsing a gateway's CRD costs about as much as
    /// running a few dozen steps), then adds their CRDs in walk order, so later ones still win.
    /// Files of the same content (the same `crds/` folder in many copied roots) are parsed
    /// once: what a file gives depends only on its text, except the file name it carries.
    fn finish(self) -> CrdSources {
        let read: Vec<Result<(String, String), SourceProblem>> = self
            .sources
            .into_par_iter()
            .map(|source| match source {
                Source::File(path) => read_text(&path).map(|text| (paths::display(&path), text)),
                Source::Problem(problem) => Err(problem),
            })
            .collect();
        // Each distinct text, and which one each file has.
        let mut distinct: Vec<&str> = Vec::new();
        let mut index_of: HashMap<&str, usize, rustc_hash::FxBuildHasher> = HashMap::default();
        let content: Vec<Option<usize>> = read
            .iter()
            .map(|file| {
                let (_, text) = file.as_ref().ok()?;
                Some(*index_of.entry(text.as_str()).or_insert_with(|| {
                    distinct.push(text);
                    distinct.len() - 1
                }))
            })
            .collect();
        // A text the loader refuses is read for the kinds it declares there, once per text
        // like the load itself (the problem gets each file's name below).
        // One CEL environment for every file's rules.
        let rule_env = SharedRuleEnv::default();
        let parsed: Vec<Result<Vec<Crd>, SourceProblem>> = distinct
            .into_par_iter()
            .map(|text| {
                let mut set = SchemaSet::new();
                match set.add_text_sharing("", text, &rule_env) {
                    Ok(_) => Ok(set.into_crds()),
                    Err(err) => Err(SourceProblem {
                        file: String::new(),
                        line: err.line,
                        message: err.message,
                        kinds: declared_kinds(text),
                    }),
                }
            })
            .collect();
        // In walk order, so a later CRD for the same group and kind replaces an earlier one in
        // its place (`SchemaSet::insert`). A copy is cheap: the compiled schemas are shared.
        let mut set = SchemaSet::new();
        let mut problems = Vec::new();
        for (file, content) in read.iter().zip(&content) {
            let (name, _) = match file {
                Ok(read) => read,
                Err(problem) => {
                    problems.push(problem.clone());
                    continue;
                }
            };
            // Every file read has its text's index.
            let Some(content) = content else { continue };
            match &parsed[*content] {
                Err(problem) => problems.push(SourceProblem {
                    file: name.clone(),
                    ..problem.clone()
                }),
                Ok(crds) => {
                    for crd in crds {
                        set.insert(Crd {
                            file: name.clone(),
                            ..crd.clone()
                        });
                    }
                }
            }
        }
        CrdSources {
            schemas: Arc::new(set),
            problems,
        }
    }

    fn problem(&mut self, path: &Path, line: u32, message: String) {
        self.sources.push(Source::Problem(SourceProblem {
            file: paths::display(path),
            line,
            message,
            kinds: None,
        }));
    }

    fn add_file(&mut self, path: &Path) {
        self.sources.push(Source::File(path.to_path_buf()));
    }

    /// `<root>/crds` when it exists (a root need not have one).
    fn add_crds_folder(&mut self, root: &Path) {
        let folder = root.join(CRDS_FOLDER);
        if folder.is_dir() {
            self.add_folder(&folder, 0);
        }
    }

    /// A file (whatever its name) or a folder.
    fn add_path(&mut self, path: &Path) {
        match std::fs::metadata(path) {
            Ok(meta) if meta.is_dir() => self.add_folder(path, 0),
            Ok(_) => self.add_file(path),
            Err(err) => self.problem(path, 0, input::io_text(&err)),
        }
    }

    /// Every `*.yaml`/`*.yml` file below `folder`, in name order; hidden entries and
    /// symlinked folders (which could loop) are skipped.
    fn add_folder(&mut self, folder: &Path, depth: usize) {
        if depth > MAX_FOLDER_DEPTH {
            self.problem(
                folder,
                0,
                format!("more than {MAX_FOLDER_DEPTH} folders deep: not read"),
            );
            return;
        }
        let entries = match std::fs::read_dir(folder) {
            Ok(entries) => entries,
            Err(err) => return self.problem(folder, 0, input::io_text(&err)),
        };
        let mut listed = Vec::new();
        for entry in entries {
            match entry {
                Ok(entry) => listed.push(entry),
                Err(err) => return self.problem(folder, 0, input::io_text(&err)),
            }
        }
        listed.sort_by_key(|entry| entry.file_name());
        for entry in listed {
            let path = entry.path();
            self.walked += 1;
            if self.walked > MAX_WALKED_ENTRIES {
                // Said once: each folder level up returns at its next entry.
                if self.walked == MAX_WALKED_ENTRIES + 1 {
                    self.problem(
                    folder,
                    0,
                    format!(
                            "more than {MAX_WALKED_ENTRIES} files and folders to walk for CRDs: the rest is not read (name the CRD files or a smaller folder)"
                        ),
                    );
                }
                return;
            }
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let is_dir = entry.file_type().is_ok_and(|kind| kind.is_dir());
            if is_dir {
                self.add_folder(&path, depth + 1);
            } else if path
                .extension()
                .is_some_and(|ext| ext == "yaml" || ext == "yml")
            {
                self.add_file(&path);
            }
        }
    }
}

/// A CRD file's text (bounded read), or why it cannot be used.
fn read_text(path: &Path) -> Result<String, SourceProblem> {
    let problem = |line: u32, message: String| SourceProblem {
        file: paths::display(path),
        line,
        message,
        kinds: None,
    };
    match input::read_text(path, MAX_CRD_FILE_BYTES) {
        Ok(text) => Ok(text),
        Err(ReadError::NotUtf8 { line, column }) => Err(problem(
            line,
            format!("byte {column} is not valid UTF-8 (kruise-lua reads UTF-8 text only)"),
        )),
        Err(err) => Err(problem(0, err.to_string())),
    }
}

/// The (group, kind) of every CRD document in a file the loader refused (a CRD document, or
/// one in a `List`), read from `spec.group` and `spec.names.kind`, so the steps of those kinds
/// can say their CRD was not loaded; `None` when that cannot be told (the text is not YAML, or
/// a CRD document does not name its group and kind): the file could have held any kind's.
fn declared_kinds(text: &str) -> Option<Vec<(String, String)>> {
    fn string_at<'a>(node: &'a YamlNode, path: &[&str]) -> Option<&'a str> {
        let mut node = node;
        for key in path {
            node = node.get(key)?;
        }
        match &node.value {
            YamlValue::String(text) => Some(text),
            _ => None,
        }
    }
    /// Adds the kinds `node` declares; `None` when one of its CRDs does not say.
    fn collect(node: &YamlNode, out: &mut Vec<(String, String)>) -> Option<()> {
        match string_at(node, &["kind"]) {
            Some("CustomResourceDefinition") => {
                let group = string_at(node, &["spec", "group"])?;
                let kind = string_at(node, &["spec", "names", "kind"])?;
                out.push((group.to_owned(), kind.to_owned()));
            }
            Some("List" | "CustomResourceDefinitionList") => {
                if let Some(items) = node.get("items") {
                    let YamlValue::Seq(items) = &items.value else {
                        return None;
                    };
                    for item in items {
                        collect(item, out)?;
                    }
                }
            }
            _ => {}
        }
        Some(())
    }
    let documents = yaml::parse_documents(text).ok()?;
    let mut kinds = Vec::new();
    for document in &documents {
        collect(document, &mut kinds)?;
    }
    Some(kinds)
}

/// A CRD of our own for tests: `kind` in `group`, one version `v1` (served, storage) whose
/// `spec` has `properties` (a YAML flow mapping: `{weight: {type: integer, maximum: 10}}`).
#[cfg(test)]
pub(crate) fn test_crd(group: &str, kind: &str, properties: &str) -> String {
    let plural = kind.to_lowercase() + "s";
    format!(
        "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: {plural}.{group}}}
spec:
  group: {group}
  names: {{kind: {kind}, plural: {plural}}}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties: {properties}
"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch folder of this test's own, emptied first.
    fn scratch(name: &str) -> PathBuf {
        crate::test_scratch::folder("kruise-lua-crd-sources", name)
    }

    /// A CRD for `kind` in group `test.kruise-lua.dev` whose spec has the one field `field`.
    fn crd(kind: &str, field: &str) -> String {
        test_crd(
            "test.kruise-lua.dev",
            kind,
            &format!("{{{field}: {{type: string}}}}"),
        )
    }

    /// The spec fields the loaded CRD for `kind` declares.
    fn fields(sources: &CrdSources, kind: &str) -> Vec<String> {
        let crd = sources
            .schemas
            .find("test.kruise-lua.dev", kind)
            .unwrap_or_else(|| panic!("no CRD for {kind}"));
        let schema = crd.storage_version().unwrap().schema.as_ref().unwrap();
        let spec = schema.properties.get("spec").unwrap();
        spec.properties.keys().cloned().collect()
    }

    #[test]
    fn crds_folder_then_toml_then_explicit_with_later_winning() {
        let root = scratch("precedence");
        std::fs::create_dir_all(root.join("crds/nested")).unwrap();
        std::fs::write(root.join("crds/a.yaml"), crd("Alpha", "bundled")).unwrap();
        std::fs::write(root.join("crds/nested/b.yml"), crd("Beta", "bundled")).unwrap();
        std::fs::write(root.join("crds/notes.txt"), "not yaml").unwrap();
        std::fs::create_dir_all(root.join("mine")).unwrap();
        std::fs::write(root.join("mine/alpha.yaml"), crd("Alpha", "fromToml")).unwrap();
        std::fs::write(root.join("kruise-lua.toml"), "crds = [\"mine\"]\n").unwrap();
        let explicit = root.join("beta-user.yaml");
        std::fs::write(&explicit, crd("Beta", "fromFlag")).unwrap();

        let sources = load_roots(std::slice::from_ref(&root), &[explicit]);
        assert_eq!(sources.problems, vec![]);
        assert_eq!(fields(&sources, "Alpha"), vec!["fromToml"]);
        assert_eq!(fields(&sources, "Beta"), vec!["fromFlag"]);

        let folder_only = load(Some(&root), &[], &[]);
        assert_eq!(fields(&folder_only, "Alpha"), vec!["bundled"]);
        assert_eq!(fields(&folder_only, "Beta"), vec!["bundled"]);
    }

    #[test]
    fn many_documents_and_lists_in_one_file() {
        let root = scratch("documents");
        let list = format!(
            "apiVersion: v1\nkind: List\nitems:\n{}",
            crd("Gamma", "g")
                .lines()
                .enumerate()
                .map(|(i, line)| if i == 0 {
                    format!("- {line}\n")
                } else {
                    format!("  {line}\n")
                })
                .collect::<String>()
        );
        let file = root.join("all.yaml");
        std::fs::write(
            &file,
            format!("{}---\n{}---\n{list}", crd("Alpha", "a"), crd("Beta", "b")),
        )
        .unwrap();
        let sources = load(None, &[file], &[]);
        assert_eq!(sources.problems, vec![]);
        assert_eq!(fields(&sources, "Gamma"), vec!["g"]);
        assert_eq!(sources.schemas.crds().len(), 3);
    }

    #[test]
    fn broken_files_are_problems_with_file_and_line_and_the_rest_loads() {
        let root = scratch("broken");
        std::fs::create_dir_all(root.join("crds")).unwrap();
        std::fs::write(root.join("crds/a-good.yaml"), crd("Alpha", "a")).unwrap();
        std::fs::write(
            root.join("crds/b-bad.yaml"),
            "# comment\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n\
             spec:\n  names: {kind: X}\n",
        )
        .unwrap();
        std::fs::write(root.join("crds/c-yaml.yaml"), "a: [1,\nb: 2\n").unwrap();
        std::fs::write(root.join("crds/d-bytes.yaml"), b"ok: 1\nx: \xff\n").unwrap();
        let missing = root.join("missing.yaml");
        let sources = load(Some(&root), &[missing], &[]);
        assert!(
            sources
                .schemas
                .find("test.kruise-lua.dev", "Alpha")
                .is_some()
        );
        let shown: Vec<String> = sources.problems.iter().map(|p| p.to_string()).collect();
        let base = paths::display(&root);
        assert_eq!(shown.len(), 4, "{shown:#?}");
        // What each refused file declares, so the steps of those kinds can name it: the first
        // names no group (unknown, as for text that is not YAML or a file never read).
        let kinds: Vec<_> = sources.problems.iter().map(|p| p.kinds.clone()).collect();
        assert_eq!(kinds, [None, None, None, None]);
        assert_eq!(
            shown[0],
            format!("{base}/crds/b-bad.yaml:5: spec.group is missing or not a string")
        );
        assert!(
            shown[1].starts_with(&format!("{base}/crds/c-yaml.yaml:"))
                && shown[1].contains("invalid YAML"),
            "{}",
            shown[1]
        );
        assert_eq!(
            shown[2],
            format!(
                "{base}/crds/d-bytes.yaml:2: byte 4 is not valid UTF-8 (kruise-lua reads UTF-8 text only)"
            )
        );
        assert_eq!(
            shown[3],
            format!("{base}/missing.yaml: no such file or directory")
        );
    }

    /// Roots copied from one another have files of the same text: each is parsed once, yet
    /// every file's problems name that file, and the CRD that stays names the later file.
    #[test]
    fn files_of_the_same_text_keep_their_own_names() {
        let root = scratch("same-text");
        let bad = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n\
                   spec:\n  names: {kind: X}\n";
        for copy in ["one", "two"] {
            std::fs::create_dir_all(root.join(copy).join("crds")).unwrap();
            std::fs::write(root.join(copy).join("crds/a.yaml"), crd("Alpha", copy)).unwrap();
            std::fs::write(root.join(copy).join("crds/b.yaml"), crd("Beta", "same")).unwrap();
            std::fs::write(root.join(copy).join("crds/c-bad.yaml"), bad).unwrap();
        }
        let sources = load_roots(&[root.join("one"), root.join("two")], &[]);
        let base = paths::display(&root);
        let shown: Vec<String> = sources.problems.iter().map(|p| p.to_string()).collect();
        assert_eq!(
            shown,
            [
                format!("{base}/one/crds/c-bad.yaml:4: spec.group is missing or not a string"),
                format!("{base}/two/crds/c-bad.yaml:4: spec.group is missing or not a string"),
            ]
        );
        let file = |kind: &str| {
            let crd = sources.schemas.find("test.kruise-lua.dev", kind).unwrap();
            format!("{}:{}", crd.file, crd.line)
        };
        assert_eq!(file("Alpha"), format!("{base}/two/crds/a.yaml:1"));
        assert_eq!(file("Beta"), format!("{base}/two/crds/b.yaml:1"));
        assert_eq!(fields(&sources, "Alpha"), vec!["two"]);
        let kinds: Vec<&str> = sources
            .schemas
            .crds()
            .iter()
            .map(|crd| crd.kind.as_str())
            .collect();
        assert_eq!(kinds, ["Alpha", "Beta"]);
    }

    #[test]
    fn toml_problems_name_the_line() {
        let root = scratch("toml");
        std::fs::write(
            root.join("kruise-lua.toml"),
            "crds = 3\n\n[lints]\nKL005 = \"off\"\n",
        )
        .unwrap();
        let problem = config_crds(&root).unwrap_err();
        assert!(problem.file.ends_with("kruise-lua.toml"), "{problem}");
        assert!(
            problem.message.starts_with("invalid kruise-lua.toml"),
            "{problem}"
        );

        std::fs::write(
            root.join("kruise-lua.toml"),
            "crds = [\n  \"here\",\n  \"gone\",\n]\n",
        )
        .unwrap();
        std::fs::create_dir_all(root.join("here")).unwrap();
        let problem = config_crds(&root).unwrap_err();
        assert_eq!(problem.line, 3, "{problem}");
        assert!(problem.message.contains("\"gone\""), "{problem}");

        std::fs::write(root.join("kruise-lua.toml"), "crds = [\"here\"]\n").unwrap();
        assert_eq!(config_crds(&root).unwrap(), vec![root.join("here")]);
        let sources = load_roots(std::slice::from_ref(&root), &[]);
        assert_eq!(sources.problems, vec![]);
        assert!(sources.schemas.is_empty());
    }

    /// One rule for every PATH: a file, a script folder inside the tree and the tree itself
    /// all find the folder holding `crds/` (a script folder used to be taken for a root of
    /// its own, without the tree's CRDs).
    #[test]
    fn every_path_finds_the_root_holding_crds_or_the_toml() {
        let root = scratch("root-of");
        std::fs::create_dir_all(root.join("lua/crds")).unwrap();
        std::fs::create_dir_all(root.join("lua/g.io/Kind/testdata")).unwrap();
        let case = root.join("lua/g.io/Kind/testdata/case.yaml");
        std::fs::write(&case, "").unwrap();
        assert_eq!(root_of(&case), Some(root.join("lua")));
        assert_eq!(root_of(&root.join("lua/g.io/Kind")), Some(root.join("lua")));
        assert_eq!(root_of(&root.join("lua/g.io")), Some(root.join("lua")));
        assert_eq!(root_of(&root.join("lua")), Some(root.join("lua")));
        // A folder holding only the toml is a root too.
        std::fs::create_dir_all(root.join("toml/g.io/Kind")).unwrap();
        std::fs::write(root.join("toml/kruise-lua.toml"), "").unwrap();
        assert_eq!(
            root_of(&root.join("toml/g.io/Kind")),
            Some(root.join("toml"))
        );
        // The search stops at a repository.
        std::fs::create_dir_all(root.join("other/.git")).unwrap();
        std::fs::create_dir_all(root.join("other/g.io")).unwrap();
        std::fs::write(root.join("other/x.lua"), "").unwrap();
        assert_eq!(root_of(&root.join("other/x.lua")), None);
        assert_eq!(root_of(&root.join("other/g.io")), None);
    }

    #[test]
    fn no_toml_and_no_crds_folder_is_nothing_and_no_problem() {
        let root = scratch("empty");
        assert_eq!(config_crds(&root).unwrap(), Vec::<PathBuf>::new());
        let sources = load_roots(&[root], &[]);
        assert!(sources.schemas.is_empty());
        assert!(sources.problems.is_empty());
    }

    /// A refused file names the kinds it declares (every CRD of it, a `List`'s too), so a step
    /// of one of them says its CRD was not loaded.
    #[test]
    fn a_refused_file_names_the_kinds_it_declares() {
        let root = scratch("declared");
        let bad = test_crd("test.kruise-lua.dev", "Alpha", "{weight: {type: banana}}");
        let file = root.join("two.yaml");
        std::fs::write(&file, format!("{}---\n{bad}", crd("Beta", "b"))).unwrap();
        let sources = load(None, &[file], &[]);
        assert_eq!(sources.problems.len(), 1, "{:?}", sources.problems);
        let problem = &sources.problems[0];
        assert!(problem.declares("test.kruise-lua.dev", "Alpha"));
        assert!(
            problem.declares("test.kruise-lua.dev", "Beta"),
            "a file loads whole or not at all"
        );
        assert!(!problem.may_declare("test.kruise-lua.dev", "Gamma"));
        assert!(
            sources
                .schemas
                .find("test.kruise-lua.dev", "Beta")
                .is_none()
        );
    }
}
