//! A YAML reader for test cases that keeps the source position of every node and resolves
//! scalars with YAML 1.1 rules, as sigs.k8s.io/yaml v1.4.0 (go-yaml v2) reads them.

use crate::value::JsonValue;

/// A position in the source: 1-based line and column (in chars), and the byte offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pos {
    pub line: u32,
    pub column: u32,
    pub offset: usize,
}

/// The source range of a node, `end` exclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Span {
    pub start: Pos,
    pub end: Pos,
}

/// A YAML node with its span. Scalars are already resolved (YAML 1.1: `yes` is true,
/// `0x1F` is 31, `010` is 8, `1_000` is 1000, `~` is null, `2024-01-02` stays a string).
#[derive(Debug, Clone, PartialEq)]
pub struct YamlNode {
    pub value: YamlValue,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum YamlValue {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    String(String),
    Seq(Vec<YamlNode>),
    /// Entries in source order; keys are nodes so their spans are kept.
    Map(Vec<(YamlNode, YamlNode)>),
}

/// A YAML syntax error with the position the parser reported.
#[derive(Debug, Clone, PartialEq)]
pub struct YamlError {
    pub message: String,
    pub pos: Pos,
}

/// One step of a JSON path into a document.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PathSeg {
    Key(String),
    Index(usize),
}

/// Parses the first document of `source` (later documents are ignored, as Kruise does).
/// `Ok(None)` for an empty stream.
pub fn parse_first_document(source: &str) -> Result<Option<YamlNode>, YamlError> {
    let _ = source;
    todo!("testcase helper")
}

impl YamlNode {
    /// The node as JSON, keys converted to strings as sigs.k8s.io/yaml does (`on:` → `"true"`).
    /// Integers stay exact ([`JsonValue::Int`]).
    pub fn to_json(&self) -> JsonValue {
        todo!("testcase helper")
    }

    /// The value under `key` of a map node. `key` is compared exactly.
    pub fn get(&self, key: &str) -> Option<&YamlNode> {
        let _ = key;
        todo!("testcase helper")
    }

    /// The node at a JSON path below this one (object keys compared exactly), if present.
    pub fn at_path(&self, path: &[PathSeg]) -> Option<&YamlNode> {
        let _ = path;
        todo!("testcase helper")
    }
}
