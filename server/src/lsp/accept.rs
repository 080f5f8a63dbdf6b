//! "Accept actual output as expected": rewrites one `expected[i]` node of a case file with the
//! step's actual result, keeping every other byte of the file (comments included).

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;

use kruise_lua_engine::render::to_yaml;
use kruise_lua_engine::runner::{ScriptFlavor, StepOutcome, StepStatus};
use kruise_lua_engine::testcase::TestCase;
use kruise_lua_engine::value::JsonValue;

/// The replacement of `expected[step.index]`: the byte range to replace and its new text.
/// `None` when the step did not fail or has no actual result or expected node.
pub fn accept_edit(
    text: &str,
    case: &TestCase,
    step: &StepOutcome,
    flavor: ScriptFlavor,
) -> Option<(Range<usize>, String)> {
    if step.status != StepStatus::Fail {
        return None;
    }
    let entry = case.expected.get(step.index)?;
    let actual = JsonValue::parse_go_interface(step.actual.as_ref()?.as_bytes()).ok()?;
    let existing = entry.node.to_json();
    let value = merged_resource(&existing, &actual, flavor);
    let start = entry.node.span.start.offset.min(text.len());
    let end = content_end(text, start, entry.node.span.end.offset.min(text.len()));
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let before = &text[line_start..start];
    let block_entry = before.trim_end().ends_with('-')
        && before.trim_end().trim_start_matches([' ', '-']).is_empty();
    let flow = text[start..].starts_with(['{', '[']) || !block_entry;
    let rendered = if flow || !matches!(&value, JsonValue::Object(m) if !m.is_empty()) {
        value.to_canonical_json()
    } else {
        let indent = " ".repeat(start - line_start);
        let yaml = to_yaml(&value);
        yaml.trim_end_matches('\n')
            .split('\n')
            .collect::<Vec<_>>()
            .join(&format!("\n{indent}"))
    };
    Some((start..end, rendered))
}

/// The existing resource with the result's parts replaced: `spec`, `metadata.labels` and
/// `metadata.annotations` for custom scripts, only the annotations for ingress classes.
fn merged_resource(existing: &JsonValue, actual: &JsonValue, flavor: ScriptFlavor) -> JsonValue {
    let mut resource = match existing {
        JsonValue::Object(map) => map.clone(),
        _ => BTreeMap::new(),
    };
    let actual = match actual {
        JsonValue::Object(map) => map.clone(),
        _ => BTreeMap::new(),
    };
    let mut metadata = match resource.remove("metadata") {
        Some(JsonValue::Object(map)) => map,
        _ => BTreeMap::new(),
    };
    let keys: &[&str] = match flavor {
        ScriptFlavor::Custom => {
            resource.remove("spec");
            if let Some(spec) = actual.get("spec") {
                resource.insert("spec".into(), spec.clone());
            }
            &["labels", "annotations"]
        }
        ScriptFlavor::Ingress => &["annotations"],
    };
    for key in keys {
        metadata.remove(*key);
        if let Some(value) = actual.get(*key) {
            metadata.insert((*key).into(), value.clone());
        }
    }
    if !metadata.is_empty() {
        resource.insert("metadata".into(), JsonValue::Object(metadata));
    }
    JsonValue::Object(resource)
}

/// Where a node's own text ends: before trailing blank lines and comment lines that the parser's
/// span may include (they belong to what follows and are kept).
fn content_end(text: &str, start: usize, end: usize) -> usize {
    let mut end = end.max(start);
    loop {
        let slice = &text[start..end];
        let trimmed = slice.trim_end();
        end = start + trimmed.len();
        let line_start = text[..end].rfind('\n').map_or(0, |i| i + 1).max(start);
        let last_line = text[line_start..end].trim_start();
        if line_start > start && last_line.starts_with('#') {
            end = line_start;
            continue;
        }
        return end;
    }
}

/// Applies several non-overlapping edits to a text (from the last to the first).
pub fn apply_edits(text: &str, mut edits: Vec<(Range<usize>, String)>) -> String {
    edits.sort_by_key(|(r, _)| std::cmp::Reverse(r.start));
    let mut out = text.to_string();
    for (range, replacement) in edits {
        out.replace_range(range, &replacement);
    }
    out
}

/// Writes a file atomically: a temporary file in the same folder, then a rename over it.
pub fn write_atomically(path: &Path, contents: &str) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = dir.join(format!(".{name}.kruise-lua-{}.tmp", std::process::id()));
    std::fs::write(&temp, contents)?;
    if let Ok(meta) = std::fs::metadata(path) {
        let _ = std::fs::set_permissions(&temp, meta.permissions());
    }
    std::fs::rename(&temp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&temp);
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lsp::project::lua_target;
    use crate::lsp::runs::{RunInput, execute};
    use kruise_lua_engine::runner::{Mode, RunOptions};
    use kruise_lua_engine::testcase::parse_case;
    use std::path::PathBuf;

    const SCRIPT: &str = "local spec = obj.data.spec\nspec.weight = obj.canaryWeight\nobj.data.labels = {step = tostring(obj.canaryWeight)}\nreturn obj.data\n";

    const CASE: &str = "# header comment\nrollout:\n  spec:\n    strategy:\n      canary:\n        trafficRoutings:\n        - service: web\n        steps:\n        - traffic: \"20%\"\n        - traffic: \"50%\"\noriginal:\n  apiVersion: x/v1\n  kind: Route\n  metadata:\n    name: r\n  spec:\n    weight: 0\nexpected:\n  # first step\n  - apiVersion: x/v1\n    kind: Route\n    metadata:\n      name: r\n      labels:\n        step: \"20\"\n    spec:\n      weight: 20\n  # second step, wrong on purpose\n  - apiVersion: x/v1\n    kind: Route\n    metadata:\n      name: r\n      namespace: prod # kept\n      labels:\n        step: \"60\"\n    spec:\n      weight: 60\n\n# trailing comment\n";

    fn results(case: &str) -> crate::lsp::runs::ScriptResults {
        let input = RunInput {
            target: lua_target(Path::new("/t/x/Route/trafficRouting.lua")),
            source: SCRIPT.into(),
            host_text: SCRIPT.into(),
            embedded: None,
            cases_error: None,
            cases: vec![(PathBuf::from("/t/c.yaml"), case.into())],
        };
        execute(input, None, Mode::Harness, &RunOptions::default(), &|| {
            false
        })
        .unwrap()
    }

    #[test]
    fn accepting_rewrites_only_that_node_and_then_passes() {
        let before = results(CASE);
        let case = &before.cases[0];
        let parsed = case.case.as_ref().unwrap();
        assert!(
            accept_edit(CASE, parsed, &case.steps[0], ScriptFlavor::Custom).is_none(),
            "step 1 passes"
        );
        let (range, replacement) =
            accept_edit(CASE, parsed, &case.steps[1], ScriptFlavor::Custom).unwrap();
        let new_text = apply_edits(CASE, vec![(range.clone(), replacement)]);
        // Everything before and after the node is byte-identical.
        assert_eq!(&new_text[..range.start], &CASE[..range.start]);
        assert!(new_text.ends_with("\n\n# trailing comment\n"));
        assert!(new_text.contains("  # second step, wrong on purpose\n  - apiVersion: x/v1\n    kind: Route\n    metadata:\n"));
        assert!(new_text.contains("      namespace: prod\n"), "{new_text}");
        assert!(new_text.contains("weight: 50"), "{new_text}");
        let after = results(&new_text);
        assert!(
            after.cases[0].passed(),
            "{:?}",
            after.cases[0].steps[1].diff
        );
        parse_case(&new_text).unwrap();
    }

    #[test]
    fn flow_entries_are_rewritten_as_flow() {
        let case_text = CASE.replace(
            "  # second step, wrong on purpose\n  - apiVersion: x/v1\n    kind: Route\n    metadata:\n      name: r\n      namespace: prod # kept\n      labels:\n        step: \"60\"\n    spec:\n      weight: 60\n",
            "  - {apiVersion: x/v1, kind: Route, metadata: {name: r}, spec: {weight: 1}}\n",
        );
        let run = results(&case_text);
        let case = &run.cases[0];
        let (range, replacement) = accept_edit(
            &case_text,
            case.case.as_ref().unwrap(),
            &case.steps[1],
            ScriptFlavor::Custom,
        )
        .unwrap();
        assert!(replacement.starts_with('{'), "{replacement}");
        let new_text = apply_edits(&case_text, vec![(range, replacement)]);
        assert!(results(&new_text).cases[0].passed(), "{new_text}");
    }

    #[test]
    fn atomic_write_replaces_contents() {
        let dir = std::env::temp_dir().join(format!("kl-accept-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("c.yaml");
        std::fs::write(&file, "old").unwrap();
        write_atomically(&file, "new").unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "new");
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            1,
            "no temporary file left"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
