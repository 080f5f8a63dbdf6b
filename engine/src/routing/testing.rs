//! Test inputs for the routing models: YAML snippets and the library's own cases.

use std::path::PathBuf;

use crate::value::JsonValue;

/// A YAML document as the JSON value a resource would be.
pub fn json(yaml: &str) -> JsonValue {
    crate::yaml::parse_first_document(yaml)
        .expect("valid YAML")
        .expect("one document")
        .to_json()
}

/// The `original` resource and the `expected` results of one library case.
pub struct LibraryCase {
    pub original: JsonValue,
    pub expected: Vec<JsonValue>,
}

/// `lua_configuration/<dir>/testdata/<file>.yaml`.
pub fn library_case(dir: &str, file: &str) -> LibraryCase {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../lua_configuration")
        .join(dir)
        .join("testdata")
        .join(format!("{file}.yaml"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let case = json(&text);
    let original = case
        .get("original")
        .cloned()
        .unwrap_or_else(|| panic!("{}: no original", path.display()));
    let expected = crate::routing::fields::items(&case, "expected").to_vec();
    LibraryCase { original, expected }
}
