//! Reading CustomResourceDefinition manifests (`apiextensions.k8s.io/v1`) into a [`SchemaSet`]:
//! one or many YAML documents per file, and the `List` that `kubectl get crd … -o yaml` prints.

use std::collections::HashMap;
use std::hash::Hasher;
use std::path::Path;
use std::sync::Arc;

use super::cel::RuleEnv;
use super::compile::Schema;
use crate::yaml::{self, YamlNode, YamlValue};

/// A file larger than this is refused before it is read (the largest published gateway CRDs
/// are a few MB).
pub const MAX_FILE_BYTES: u64 = 32 * 1024 * 1024;

/// A CRD's version: its name, whether it is served and stored, and its compiled schema.
#[derive(Debug, Clone)]
pub struct CrdVersion {
    pub name: String,
    pub served: bool,
    pub storage: bool,
    /// `schema.openAPIV3Schema`; `None` when the version has none. Shared by the versions
    /// that have the same schema (most multi-version CRDs).
    pub schema: Option<Arc<Schema>>,
    /// Why the API server would refuse this version for its rules (a finding's rule and
    /// message: rules inside junctors, `structural.rs`; their total estimated cost,
    /// `cel_total_cost.rs`), worked out the first time the version validates something.
    pub(crate) refusals: std::sync::OnceLock<Vec<(&'static str, String)>>,
}

impl CrdVersion {
    pub fn new(
        name: String,
        served: bool,
        storage: bool,
        schema: Option<Arc<Schema>>,
    ) -> CrdVersion {
        CrdVersion {
            name,
            served,
            storage,
            schema,
            refusals: std::sync::OnceLock::new(),
        }
    }
}

/// One CustomResourceDefinition.
#[derive(Debug, Clone)]
pub struct Crd {
    /// `metadata.name`, e.g. `httproutes.gateway.networking.k8s.io`.
    pub name: String,
    pub group: String,
    pub kind: String,
    pub versions: Vec<CrdVersion>,
    /// Where it was read from (file name as given, and the line of its document).
    pub file: String,
    pub line: u32,
}

impl Crd {
    pub fn version(&self, name: &str) -> Option<&CrdVersion> {
        self.versions.iter().find(|v| v.name == name)
    }

    /// The version marked `storage: true` (a CRD read from YAML has exactly one; one built by
    /// hand may have none).
    pub fn storage_version(&self) -> Option<&CrdVersion> {
        self.versions.iter().find(|v| v.storage)
    }
}

/// Why a CRD file could not be used: file, 1-based line (0 when unknown) and cause.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    pub file: String,
    pub line: u32,
    pub message: String,
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line > 0 {
            write!(f, "{}:{}: {}", self.file, self.line, self.message)
        } else {
            write!(f, "{}: {}", self.file, self.message)
        }
    }
}

impl std::error::Error for LoadError {}

/// What reading many CRD texts shares ([`SchemaSet::add_text_sharing`]): the CEL environment
/// their rules are compiled in, made at the first rule met. Making one cost as much as reading a
/// small CRD, and was done for every CRD with rules.
#[derive(Default)]
pub struct SharedRuleEnv {
    env: std::sync::OnceLock<Arc<RuleEnv>>,
}

/// The CRDs validation can use, one per group and kind. Built once and shared by every step.
#[derive(Debug, Clone, Default)]
pub struct SchemaSet {
    crds: Vec<Crd>,
}

impl SchemaSet {
    pub fn new() -> SchemaSet {
        SchemaSet::default()
    }

    pub fn crds(&self) -> &[Crd] {
        &self.crds
    }

    /// The CRDs, in load order (to merge sets read apart, e.g. files read in parallel).
    pub fn into_crds(self) -> Vec<Crd> {
        self.crds
    }

    pub fn is_empty(&self) -> bool {
        self.crds.is_empty()
    }

    /// The CRD for a group (`""` for the core group) and kind.
    pub fn find(&self, group: &str, kind: &str) -> Option<&Crd> {
        self.crds
            .iter()
            .find(|c| c.group == group && c.kind == kind)
    }

    /// Adds a CRD; one already loaded for the same group and kind is replaced (so a user's CRD
    /// loaded after a bundled one wins).
    pub fn insert(&mut self, crd: Crd) {
        match self
            .crds
            .iter_mut()
            .find(|c| c.group == crd.group && c.kind == crd.kind)
        {
            Some(slot) => *slot = crd,
            None => self.crds.push(crd),
        }
    }

    /// Reads every CRD in `text` (named `file` in errors). Documents that are not CRDs are
    /// skipped. Returns how many CRDs were added.
    pub fn add_text(&mut self, file: &str, text: &str) -> Result<usize, LoadError> {
        self.add_text_sharing(file, text, &SharedRuleEnv::default())
    }

    /// [`SchemaSet::add_text`], compiling rules in `shared`'s CEL environment (for a caller
    /// that reads many texts).
    pub fn add_text_sharing(
        &mut self,
        file: &str,
        text: &str,
        shared: &SharedRuleEnv,
    ) -> Result<usize, LoadError> {
        let documents = yaml::parse_documents(text).map_err(|e| LoadError {
            file: file.to_owned(),
            line: e.pos.line,
            message: format!("invalid YAML: {}", e.message),
        })?;
        let mut found = Vec::new();
        for document in &documents {
            collect_crds(file, document, &shared.env, &mut found)?;
        }
        let added = found.len();
        for crd in found {
            self.insert(crd);
        }
        Ok(added)
    }

    /// Reads a CRD file, or every `.yaml`/`.yml` file below a folder (in name order).
    /// Returns how many CRDs were added.
    pub fn add_path(&mut self, path: &Path) -> Result<usize, LoadError> {
        let io_error = |message: String| LoadError {
            file: path.display().to_string(),
            line: 0,
            message,
        };
        let meta = std::fs::metadata(path).map_err(|e| io_error(e.to_string()))?;
        if meta.is_dir() {
            let mut entries = std::fs::read_dir(path)
                .map_err(|e| io_error(e.to_string()))?
                .map(|entry| entry.map(|e| e.path()))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| io_error(e.to_string()))?;
            entries.sort();
            let mut added = 0;
            for entry in entries {
                let is_yaml = entry
                    .extension()
                    .is_some_and(|ext| ext == "yaml" || ext == "yml");
                if entry.is_dir() || is_yaml {
                    added += self.add_path(&entry)?;
                }
            }
            return Ok(added);
        }
        if meta.len() > MAX_FILE_BYTES {
            return Err(io_error(format!(
                "file is {} bytes, more than the {MAX_FILE_BYTES} bytes a CRD file may have",
                meta.len()
            )));
        }
        let text = std::fs::read_to_string(path).map_err(|e| io_error(e.to_string()))?;
        self.add_text(&path.display().to_string(), &text)
    }
}

fn error(file: &str, node: &YamlNode, message: impl Into<String>) -> LoadError {
    LoadError {
        file: file.to_owned(),
        line: node.span.start.line,
        message: message.into(),
    }
}

fn str_at<'a>(node: &'a YamlNode, key: &str) -> Option<&'a str> {
    match &node.get(key)?.value {
        YamlValue::String(s) => Some(s),
        _ => None,
    }
}

/// The CRDs of one document: a CRD, or a `List` of them.
fn collect_crds(
    file: &str,
    document: &YamlNode,
    env: &RuleEnvCell,
    out: &mut Vec<Crd>,
) -> Result<(), LoadError> {
    if !matches!(document.value, YamlValue::Map(_)) {
        // An empty document (`---` alone) or a stray scalar: nothing to read.
        return Ok(());
    }
    match str_at(document, "kind") {
        Some("CustomResourceDefinition") => out.push(read_crd(file, document, env)?),
        Some(kind) if kind == "List" || kind == "CustomResourceDefinitionList" => {
            if let Some(items) = document.get("items") {
                let YamlValue::Seq(items) = &items.value else {
                    return Err(error(file, items, "`items` of a List must be a list"));
                };
                for item in items {
                    collect_crds(file, item, env, out)?;
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// Where the CEL environment of the rules read is kept (see [`SharedRuleEnv`]).
type RuleEnvCell = std::sync::OnceLock<Arc<RuleEnv>>;

fn read_crd(file: &str, document: &YamlNode, env: &RuleEnvCell) -> Result<Crd, LoadError> {
    let api_version = str_at(document, "apiVersion").unwrap_or("");
    if api_version != "apiextensions.k8s.io/v1" {
        return Err(error(
            file,
            document,
            format!(
                "CustomResourceDefinition apiVersion {api_version:?} is not supported \
                 (only apiextensions.k8s.io/v1)"
            ),
        ));
    }
    let name = document
        .get("metadata")
        .and_then(|m| str_at(m, "name"))
        .unwrap_or("")
        .to_owned();
    let spec = document
        .get("spec")
        .ok_or_else(|| error(file, document, "CustomResourceDefinition has no spec"))?;
    let group = str_at(spec, "group")
        .ok_or_else(|| error(file, spec, "spec.group is missing or not a string"))?
        .to_owned();
    let kind = spec
        .get("names")
        .and_then(|names| str_at(names, "kind"))
        .ok_or_else(|| error(file, spec, "spec.names.kind is missing or not a string"))?
        .to_owned();
    let versions_node = spec
        .get("versions")
        .ok_or_else(|| error(file, spec, "spec.versions is missing"))?;
    let YamlValue::Seq(version_nodes) = &versions_node.value else {
        return Err(error(file, versions_node, "spec.versions must be a list"));
    };
    let mut versions: Vec<CrdVersion> = Vec::with_capacity(version_nodes.len());
    // Versions often share one schema (a YAML alias, or the same text): compiled once, found
    // by a hash of its content (a lookup, so a CRD of many versions loads in linear time),
    // then compared. Only a CRD of several versions needs this.
    let mut compiled: HashMap<u64, Vec<(&YamlNode, Arc<Schema>)>> = HashMap::new();
    let several = version_nodes.len() > 1;
    for node in version_nodes {
        let schema = schema_node(node).filter(|_| several);
        let hash = schema.map(content_hash);
        let same = schema.zip(hash).and_then(|(schema, hash)| {
            compiled
                .get(&hash)?
                .iter()
                .find(|(earlier, _)| same_content(earlier, schema))
                .map(|(_, compiled)| Arc::clone(compiled))
        });
        let reused = same.is_some();
        let version = read_version(file, node, same, env)?;
        // A version that reused an earlier schema adds nothing new to look up.
        if let (false, Some(schema), Some(hash), Some(made)) =
            (reused, schema, hash, &version.schema)
        {
            compiled
                .entry(hash)
                .or_default()
                .push((schema, Arc::clone(made)));
        }
        versions.push(version);
    }
    let storage = versions.iter().filter(|v| v.storage).count();
    if storage != 1 {
        return Err(error(
            file,
            versions_node,
            format!("{kind}: exactly one version must have storage: true, found {storage}"),
        ));
    }
    Ok(Crd {
        name,
        group,
        kind,
        versions,
        file: file.to_owned(),
        line: document.span.start.line,
    })
}

/// A hash of a node's content (its spans left out) for [`same_content`] to confirm, with
/// rustc-hash's Fx (std's SipHash, a byte at a time, cost more than the rest of the
/// comparison; no key is needed: a collision only costs a comparison).
fn content_hash(node: &YamlNode) -> u64 {
    fn feed(node: &YamlNode, hash: &mut rustc_hash::FxHasher) {
        match &node.value {
            YamlValue::Null => hash.write_u8(1),
            YamlValue::Bool(b) => hash.write_u8(2 + u8::from(*b)),
            YamlValue::Int(i) => {
                hash.write_u8(4);
                hash.write_i64(*i);
            }
            YamlValue::Float(f) => {
                hash.write_u8(5);
                hash.write_u64(f.to_bits());
            }
            YamlValue::String(s) => {
                hash.write_u8(6);
                hash.write_usize(s.len());
                hash.write(s.as_bytes());
            }
            YamlValue::Seq(items) => {
                hash.write_u8(7);
                hash.write_usize(items.len());
                items.iter().for_each(|item| feed(item, hash));
            }
            YamlValue::Map(entries) => {
                hash.write_u8(8);
                hash.write_usize(entries.len());
                for (key, value) in entries {
                    feed(key, hash);
                    feed(value, hash);
                }
            }
        }
    }
    let mut hash = rustc_hash::FxHasher::default();
    feed(node, &mut hash);
    hash.finish()
}

/// Whether two nodes have the same content (their spans left out): the same schema.
fn same_content(a: &YamlNode, b: &YamlNode) -> bool {
    match (&a.value, &b.value) {
        (YamlValue::Seq(a), YamlValue::Seq(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same_content(a, b))
        }
        (YamlValue::Map(a), YamlValue::Map(b)) => {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|((ak, av), (bk, bv))| same_content(ak, bk) && same_content(av, bv))
        }
        (YamlValue::Float(a), YamlValue::Float(b)) => a.to_bits() == b.to_bits(),
        (a, b) => a == b,
    }
}

/// A version's `schema.openAPIV3Schema` node.
fn schema_node(version: &YamlNode) -> Option<&YamlNode> {
    version.get("schema").and_then(|s| s.get("openAPIV3Schema"))
}

/// Reads one entry of `spec.versions`; `compiled` is its schema when an earlier version has the
/// same one.
fn read_version(
    file: &str,
    node: &YamlNode,
    compiled: Option<Arc<Schema>>,
    env: &RuleEnvCell,
) -> Result<CrdVersion, LoadError> {
    let name = str_at(node, "name")
        .ok_or_else(|| error(file, node, "a version needs a name"))?
        .to_owned();
    let flag = |key: &str| -> Result<bool, LoadError> {
        match node.get(key).map(|n| &n.value) {
            None => Ok(false),
            Some(YamlValue::Bool(b)) => Ok(*b),
            Some(_) => Err(error(
                file,
                node.get(key).unwrap_or(node),
                format!("version {name}: `{key}` must be true or false"),
            )),
        }
    };
    let served = flag("served")?;
    let storage = flag("storage")?;
    let schema = match schema_node(node) {
        None => None,
        Some(_) if compiled.is_some() => compiled,
        Some(schema_node) => Some(Arc::new(
            Schema::compile_sharing(schema_node, env).map_err(|e| LoadError {
                file: file.to_owned(),
                line: e.line,
                message: format!("version {name}: {}", e.message),
            })?,
        )),
    };
    Ok(CrdVersion::new(name, served, storage, schema))
}
