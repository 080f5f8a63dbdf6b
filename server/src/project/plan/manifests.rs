//! The manifests a plan reads: every document of a YAML stream, with the items of a
//! `kind: List` (as `kubectl get -o yaml` prints several objects) taken one by one, each kept
//! with the place it was read from. Bounded: at most [`MAX_OBJECTS`] objects per input.

use kruise_lua_engine::value::JsonValue;
use kruise_lua_engine::yaml::{self, YamlNode, YamlValue};

/// At most this many objects are read from one input (documents and list items together).
pub const MAX_OBJECTS: usize = 1000;

/// One object of an input.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    pub object: JsonValue,
    /// `file:line` where the object starts.
    pub place: String,
}

impl Manifest {
    /// A top-level string field (`kind`, `apiVersion`).
    pub fn field(&self, name: &str) -> &str {
        self.object
            .get(name)
            .and_then(JsonValue::as_str)
            .unwrap_or("")
    }

    /// `metadata.name`.
    pub fn name(&self) -> &str {
        self.object
            .at(&["metadata", "name"])
            .and_then(JsonValue::as_str)
            .unwrap_or("")
    }

    /// The API group of `apiVersion` (empty for the core group).
    pub fn group(&self) -> &str {
        group_of(self.field("apiVersion"))
    }

    /// `Kind name`, as messages name the object.
    pub fn describe(&self) -> String {
        format!("{} {}", self.field("kind"), self.name())
    }
}

/// The group of an `apiVersion` (`networking.istio.io/v1beta1` → `networking.istio.io`).
pub fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(group, _)| group)
}

/// Every object of `text`, read from `file` (as messages show it). Errors name the file and
/// line: YAML that does not parse, a document that is not an object, too many objects.
pub fn read(file: &str, text: &str) -> Result<Vec<Manifest>, String> {
    let docs = yaml::parse_documents(text).map_err(|e| {
        format!(
            "{file}:{}: cannot parse the YAML: {}",
            e.span().start.line,
            e.message
        )
    })?;
    let mut out = Vec::new();
    for doc in &docs {
        if matches!(doc.value, YamlValue::Null) {
            continue;
        }
        let is_list =
            matches!(doc.get("kind").map(|k| &k.value), Some(YamlValue::String(k)) if k == "List");
        if is_list {
            let items = match doc.get("items").map(|i| &i.value) {
                Some(YamlValue::Seq(items)) => items.as_slice(),
                Some(YamlValue::Null) | None => &[],
                Some(_) => {
                    return Err(format!(
                        "{file}:{}: the List's items is not a list",
                        doc.span.start.line
                    ));
                }
            };
            for item in items {
                push(file, item, &mut out)?;
            }
        } else {
            push(file, doc, &mut out)?;
        }
    }
    Ok(out)
}

fn push(file: &str, node: &YamlNode, out: &mut Vec<Manifest>) -> Result<(), String> {
    let line = node.span.start.line;
    if out.len() >= MAX_OBJECTS {
        return Err(format!(
            "{file}:{line}: more than {MAX_OBJECTS} objects; plan reads at most {MAX_OBJECTS} per input"
        ));
    }
    if !matches!(node.value, YamlValue::Map(_)) {
        return Err(format!(
            "{file}:{line}: not a Kubernetes object (a map with apiVersion, kind and metadata)"
        ));
    }
    let object = node
        .try_to_json()
        .map_err(|e| format!("{file}:{}: {}", e.span().start.line, e.message))?;
    let manifest = Manifest {
        object,
        place: format!("{file}:{line}"),
    };
    if manifest.field("kind").is_empty() {
        return Err(format!("{file}:{line}: the object has no kind"));
    }
    out.push(manifest);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_and_list_items_are_read_with_their_lines() {
        let text = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: a.io/v1\n  kind: A\n  metadata: {name: one}\n- apiVersion: a.io/v1\n  kind: B\n  metadata: {name: two}\n---\n---\napiVersion: c.io/v1\nkind: C\nmetadata: {name: three}\n";
        let read = read("in.yaml", text).unwrap();
        let described: Vec<(String, &str)> = read
            .iter()
            .map(|m| (m.describe(), m.place.as_str()))
            .collect();
        assert_eq!(
            described,
            [
                ("A one".to_owned(), "in.yaml:4"),
                ("B two".to_owned(), "in.yaml:7"),
                ("C three".to_owned(), "in.yaml:12"),
            ]
        );
        assert_eq!(read[0].group(), "a.io");
    }

    #[test]
    fn what_is_not_an_object_is_named_with_its_line() {
        assert_eq!(
            read("x.yaml", "kind: A\n---\n- 1\n").unwrap_err(),
            "x.yaml:3: not a Kubernetes object (a map with apiVersion, kind and metadata)"
        );
        assert!(read("x.yaml", "a: [\n").unwrap_err().starts_with("x.yaml:"));
    }
}
