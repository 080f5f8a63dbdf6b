//! A plan as a test case (`--save-case`): `rollout` (or `trafficRouting`), `original` and one
//! `expected` entry per step, laid out as hand-written cases are (block YAML, two-space
//! indents, `- ` entries under `expected:`). What the API server adds to an object it stores
//! (`status`, `managedFields`, `resourceVersion`, `uid`, …, kubectl's last-applied annotation)
//! is left out: a case says what the script sees and writes.

use kruise_lua_engine::render::to_yaml;
use kruise_lua_engine::script::ScriptKind;
use kruise_lua_engine::value::{JsonMap, JsonValue};

/// What a case is made of.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseInputs {
    /// `rollout` or `trafficRouting`.
    pub key: &'static str,
    /// The Rollout with its one traffic routing (Kruise's test takes the first).
    pub rollout: JsonValue,
    pub original: JsonValue,
    pub kind: ScriptKind,
    /// Per step, what `expected[i]` says: the result Kruise's unit test sees (`Err`: the script
    /// fails on the step, and no case can expect that).
    pub expected: Vec<Result<JsonValue, String>>,
    /// Steps (numbered from 1) where the controller gets another result than Kruise's unit
    /// test: a saved case passes `check` in harness mode only.
    pub modes_differ: Vec<usize>,
}

/// Metadata fields the API server sets (never the script's business).
const SERVER_SET_METADATA: [&str; 7] = [
    "managedFields",
    "resourceVersion",
    "uid",
    "generation",
    "creationTimestamp",
    "selfLink",
    "deletionGracePeriodSeconds",
];

/// kubectl's copy of the last applied manifest: a second copy of the object.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// `object` without `status` and the server-set metadata.
pub fn without_server_fields(object: &JsonValue) -> JsonValue {
    let mut object = object.clone();
    if let JsonValue::Object(map) = &mut object {
        map.remove("status");
        if let Some(JsonValue::Object(metadata)) = map.get_mut("metadata") {
            for field in SERVER_SET_METADATA {
                metadata.remove(field);
            }
            let mut no_annotations = false;
            if let Some(JsonValue::Object(annotations)) = metadata.get_mut("annotations") {
                annotations.remove(LAST_APPLIED);
                no_annotations = annotations.is_empty();
            }
            if no_annotations {
                metadata.remove("annotations");
            }
        }
    }
    object
}

/// `value` rendered as YAML under a key, indented by `indent` spaces.
fn indented(value: &JsonValue, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    for line in to_yaml(value).lines() {
        if line.is_empty() {
            out.push('\n');
        } else {
            out.push_str(&pad);
            out.push_str(line);
            out.push('\n');
        }
    }
}

/// The case text: `header` (comment lines, may be empty), then the inputs and `expected`.
pub fn case_text(inputs: &CaseInputs, expected: &[JsonValue], header: &str) -> String {
    let mut out = String::from(header);
    out.push_str(inputs.key);
    out.push_str(":\n");
    indented(&inputs.rollout, 2, &mut out);
    out.push_str("original:\n");
    indented(&inputs.original, 2, &mut out);
    if !expected.is_empty() {
        out.push_str("expected:\n");
        for entry in expected {
            let mut body = String::new();
            indented(entry, 2, &mut body);
            // `- ` in place of the first line's indent, as hand-written cases list entries.
            out.push_str("- ");
            out.push_str(&body[2..]);
        }
    }
    out
}

/// The `expected[i]` entry of a result: `original`'s apiVersion, kind and metadata with the
/// result's labels and annotations, and the result's spec (an ingress class: the canary
/// Ingress's name and the annotations, which is all its cases compare).
pub fn expected_entry(
    original: &JsonValue,
    kind: &ScriptKind,
    result: &kruise_lua_engine::Data,
) -> JsonValue {
    let mut entry = JsonMap::new();
    for key in ["apiVersion", "kind"] {
        if let Some(value) = original.get(key) {
            entry.insert(key.to_owned(), value.clone());
        }
    }
    let mut metadata = match original.get("metadata") {
        Some(JsonValue::Object(map)) => map.clone(),
        _ => JsonMap::new(),
    };
    metadata.remove("labels");
    metadata.remove("annotations");
    let string_map = kruise_lua_engine::luadata::string_map_json;
    match kind {
        ScriptKind::Custom { .. } => {
            if let Some(labels) = result.labels.as_ref().filter(|m| !m.is_empty()) {
                metadata.insert("labels".to_owned(), string_map(labels));
            }
            if let Some(annotations) = result.annotations.as_ref().filter(|m| !m.is_empty()) {
                metadata.insert("annotations".to_owned(), string_map(annotations));
            }
            entry.insert("metadata".to_owned(), JsonValue::Object(metadata));
            if let Some(spec) = &result.spec {
                entry.insert("spec".to_owned(), spec.clone());
            }
        }
        ScriptKind::Ingress { .. } => {
            let name = original
                .at(&["metadata", "name"])
                .and_then(JsonValue::as_str)
                .unwrap_or("");
            let canary_name = if name.ends_with("-canary") {
                name.to_owned()
            } else {
                format!("{name}-canary")
            };
            let mut canary = JsonMap::new();
            canary.insert("name".to_owned(), JsonValue::String(canary_name));
            if let Some(annotations) = result.annotations.as_ref().filter(|m| !m.is_empty()) {
                canary.insert("annotations".to_owned(), string_map(annotations));
            }
            entry.insert("metadata".to_owned(), JsonValue::Object(canary));
        }
    }
    JsonValue::Object(entry)
}

/// The saved case: inputs cleaned of server-set fields, and each step's expected result
/// computed on the cleaned original (so the case is what `check` will run). `Err` names the
/// steps no case can expect (the script fails on them).
pub fn saved_case(inputs: &CaseInputs, rollout_name: &str) -> Result<String, String> {
    let failing: Vec<String> = inputs
        .expected
        .iter()
        .enumerate()
        .filter_map(|(i, e)| e.as_ref().err().map(|why| format!("step {}: {why}", i + 1)))
        .collect();
    if !failing.is_empty() {
        return Err(format!(
            "cannot save a case: the script fails on {}",
            failing.join("; ")
        ));
    }
    let expected: Vec<JsonValue> = inputs.expected.iter().flatten().cloned().collect();
    let header = format!(
        "# {rollout_name} planned on {} {} (written by `kruise-lua plan --save-case`).\n",
        inputs
            .original
            .get("kind")
            .and_then(JsonValue::as_str)
            .unwrap_or(""),
        inputs
            .original
            .at(&["metadata", "name"])
            .and_then(JsonValue::as_str)
            .unwrap_or("")
    );
    Ok(case_text(inputs, &expected, &header))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kruise_lua_engine::yaml::parse_first_document;

    fn json(yaml: &str) -> JsonValue {
        parse_first_document(yaml).unwrap().unwrap().to_json()
    }

    #[test]
    fn server_fields_and_the_last_applied_copy_are_left_out() {
        let object = json(
            "apiVersion: a.io/v1\nkind: A\nmetadata:\n  name: x\n  uid: '1'\n  resourceVersion: '2'\n  managedFields: []\n  annotations:\n    kubectl.kubernetes.io/last-applied-configuration: '{}'\nspec: {a: 1}\nstatus: {b: 2}\n",
        );
        assert_eq!(
            to_yaml(&without_server_fields(&object)),
            "apiVersion: a.io/v1\nkind: A\nmetadata:\n  name: x\nspec:\n  a: 1\n"
        );
    }

    #[test]
    fn a_case_is_laid_out_as_hand_written_ones() {
        let inputs = CaseInputs {
            key: "rollout",
            rollout: json("kind: Rollout\nspec:\n  steps:\n  - traffic: 20%\n"),
            original: json("kind: A\nspec:\n  w: 1\n"),
            kind: ScriptKind::Custom {
                group: "a.io".into(),
                kind: "A".into(),
            },
            expected: Vec::new(),
            modes_differ: Vec::new(),
        };
        let text = case_text(
            &inputs,
            &[json("kind: A\nspec:\n  w: 2\n"), json("kind: A\n")],
            "# head\n",
        );
        assert_eq!(
            text,
            "# head\nrollout:\n  kind: Rollout\n  spec:\n    steps:\n    - traffic: \"20%\"\noriginal:\n  kind: A\n  spec:\n    w: 1\nexpected:\n- kind: A\n  spec:\n    w: 2\n- kind: A\n"
        );
    }
}
