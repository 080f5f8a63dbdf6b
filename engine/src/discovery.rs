//! Finding scripts and their test cases: a `lua_configuration` tree walked as Kruise's test
//! walks it, and `kruise-rollout-configuration` ConfigMaps holding scripts.

use std::path::{Path, PathBuf};

use crate::testcase::CaseError;

/// What kind of script, which decides the `obj` it gets and the result it must return.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum ScriptKind {
    /// A custom network provider script for `<group>/<Kind>`.
    Custom { group: String, kind: String },
    /// An ingress-class script (`trafficrouting_ingress/<class>.lua`).
    Ingress { class: String },
}

/// Where a script's source comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScriptOrigin {
    File(PathBuf),
    /// The value of `key` in a ConfigMap manifest; `line` is the 1-based line where the
    /// script's first line sits in the manifest.
    ConfigMap {
        path: PathBuf,
        key: String,
        line: u32,
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
}

/// Walks `root` as Kruise's test does (conformance 2.7) and returns every script with its cases.
/// A `root` that is a ConfigMap manifest is read as one (see [`parse_configmap`]).
pub fn discover(root: &Path) -> std::io::Result<Vec<ScriptEntry>> {
    let _ = root;
    todo!("testcase helper")
}

/// A script embedded in a ConfigMap under `lua.traffic.routing.<Kind>.<group>` (custom) or
/// `lua.traffic.routing.ingress.<class>` (ingress).
#[derive(Debug, Clone, PartialEq)]
pub struct EmbeddedScript {
    pub kind: ScriptKind,
    pub key: String,
    pub source: String,
    /// 1-based line of the script's first line in the manifest.
    pub line: u32,
}

/// Reads a `kruise-rollout-configuration` ConfigMap manifest and returns its scripts.
pub fn parse_configmap(source: &str) -> Result<Vec<EmbeddedScript>, CaseError> {
    let _ = source;
    todo!("testcase helper")
}
