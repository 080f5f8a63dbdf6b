//! Field-level differences between two results (expected vs actual, the test's vs the
//! controller's): every differing JSON path with both values, list items matched by identity
//! before position; where a path sits in an `expected[i]` node; the unified YAML diff; and how
//! paths are written.

use std::collections::BTreeSet;

use similar::{Algorithm, DiffOp, capture_diff_slices};

use crate::render::to_yaml;
use crate::value::JsonValue;
use crate::yaml::{PathSeg, Span, YamlNode};

/// One differing path: its segments, the left value and the right value (`None`: absent).
pub type PathDiff = (Vec<PathSeg>, Option<JsonValue>, Option<JsonValue>);

/// Every path where the two values differ, with each side's value (`None` when absent).
/// Numbers compare by their canonical text, so `50` (int) equals `50.0` (float).
///
/// Lists of different lengths have their items paired by identity before position: an item's
/// `name` when it is an object with a string `name` (routes, subsets, ports), else its whole
/// content. So inserting one route reports that route only, not every later one as changed;
/// items left unpaired between two paired runs are compared by position among themselves (a
/// route whose weight changed, without a name, still gives a field-level difference). Paths of
/// paired items use the left (expected) index; an item only the right side has uses its right
/// index. Lists of equal length compare item by item (nothing was inserted or removed, and a
/// reordered list then reads position by position).
pub fn diff_values(expected: &JsonValue, actual: &JsonValue) -> Vec<PathDiff> {
    let mut diffs = Vec::new();
    let mut path = Vec::new();
    diff_into(Some(expected), Some(actual), &mut path, &mut diffs);
    diffs
}

/// [`diff_values`] of two canonical JSON texts (as `StepOutcome::actual` holds them); `None`
/// when one does not parse.
pub fn diff_canonical(left: &str, right: &str) -> Option<Vec<PathDiff>> {
    let left = crate::go::json_parse::parse(left.as_bytes()).ok()?;
    let right = crate::go::json_parse::parse(right.as_bytes()).ok()?;
    Some(diff_values(&left, &right))
}

fn diff_into(
    expected: Option<&JsonValue>,
    actual: Option<&JsonValue>,
    path: &mut Vec<PathSeg>,
    diffs: &mut Vec<PathDiff>,
) {
    match (expected, actual) {
        (Some(JsonValue::Object(e)), Some(JsonValue::Object(a))) => {
            let keys: BTreeSet<&String> = e.keys().chain(a.keys()).collect();
            for key in keys {
                path.push(PathSeg::Key(key.clone()));
                diff_into(e.get(key), a.get(key), path, diffs);
                path.pop();
            }
        }
        (Some(JsonValue::Array(e)), Some(JsonValue::Array(a))) if e.len() != a.len() => {
            diff_lists(e, a, path, diffs)
        }
        (Some(JsonValue::Array(e)), Some(JsonValue::Array(a))) => {
            for (index, (e, a)) in e.iter().zip(a).enumerate() {
                path.push(PathSeg::Index(index));
                diff_into(Some(e), Some(a), path, diffs);
                path.pop();
            }
        }
        (e, a) => {
            let same = match (e, a) {
                (Some(e), Some(a)) => e.to_canonical_json() == a.to_canonical_json(),
                (None, None) => true,
                _ => false,
            };
            if !same {
                diffs.push((path.clone(), e.cloned(), a.cloned()));
            }
        }
    }
}

/// What pairs two list items: the `name` of an object that has a string one, else the whole
/// canonical content.
#[derive(PartialEq, Eq, Hash)]
enum Identity {
    Name(String),
    Content(String),
}

fn identity(item: &JsonValue) -> Identity {
    if let JsonValue::Object(map) = item
        && let Some(JsonValue::String(name)) = map.get("name")
    {
        return Identity::Name(name.clone());
    }
    Identity::Content(item.to_canonical_json())
}

fn diff_lists(
    expected: &[JsonValue],
    actual: &[JsonValue],
    path: &mut Vec<PathSeg>,
    diffs: &mut Vec<PathDiff>,
) {
    let left: Vec<Identity> = expected.iter().map(identity).collect();
    let right: Vec<Identity> = actual.iter().map(identity).collect();
    // Items neither side pairs, collected until the next paired run.
    let mut unpaired_left: Vec<usize> = Vec::new();
    let mut unpaired_right: Vec<usize> = Vec::new();
    let flush = |left: &mut Vec<usize>,
                 right: &mut Vec<usize>,
                 path: &mut Vec<PathSeg>,
                 diffs: &mut Vec<PathDiff>| {
        for position in 0..left.len().max(right.len()) {
            let (index, e, a) = match (left.get(position), right.get(position)) {
                (Some(&l), r) => (l, Some(&expected[l]), r.map(|&r| &actual[r])),
                (None, Some(&r)) => (r, None, Some(&actual[r])),
                (None, None) => unreachable!("position is below one of the lengths"),
            };
            path.push(PathSeg::Index(index));
            diff_into(e, a, path, diffs);
            path.pop();
        }
        left.clear();
        right.clear();
    };
    for op in capture_diff_slices(Algorithm::Myers, &left, &right) {
        match op {
            DiffOp::Equal {
                old_index,
                new_index,
                len,
            } => {
                flush(&mut unpaired_left, &mut unpaired_right, path, diffs);
                for offset in 0..len {
                    path.push(PathSeg::Index(old_index + offset));
                    diff_into(
                        Some(&expected[old_index + offset]),
                        Some(&actual[new_index + offset]),
                        path,
                        diffs,
                    );
                    path.pop();
                }
            }
            DiffOp::Delete {
                old_index, old_len, ..
            } => unpaired_left.extend(old_index..old_index + old_len),
            DiffOp::Insert {
                new_index, new_len, ..
            } => unpaired_right.extend(new_index..new_index + new_len),
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => {
                unpaired_left.extend(old_index..old_index + old_len);
                unpaired_right.extend(new_index..new_index + new_len);
            }
        }
    }
    flush(&mut unpaired_left, &mut unpaired_right, path, diffs);
}

/// Where a result path sits in an `expected[i]` resource: `spec.*` under `spec`, `labels.*` and
/// `annotations.*` under `metadata`. Falls back to the nearest ancestor that exists there.
pub fn span_in_expected(entry: &YamlNode, path: &[PathSeg]) -> Option<Span> {
    let mut resource_path = Vec::with_capacity(path.len() + 1);
    if let Some(PathSeg::Key(top)) = path.first()
        && (top == "labels" || top == "annotations")
    {
        resource_path.push(PathSeg::Key("metadata".to_owned()));
    }
    resource_path.extend(path.iter().cloned());
    (1..=resource_path.len())
        .rev()
        .find_map(|len| entry.at_path(&resource_path[..len]))
        .map(|node| node.span)
}

/// A unified diff of the two results rendered as YAML (`--- expected` / `+++ actual`). Results
/// too deep or too large to show as YAML (the rendering grows with depth × size; a 9,000-level
/// result would be hundreds of megabytes) get a one-line notice instead: the differing paths
/// are listed separately anyway.
pub fn unified_yaml_diff(expected: &JsonValue, actual: &JsonValue) -> String {
    if !renderable(expected) || !renderable(actual) {
        return format!(
            "(no YAML diff: a result is nested deeper than {DIFF_MAX_DEPTH} levels or has more \
             than {DIFF_MAX_NODES} values)\n"
        );
    }
    let expected_yaml = to_yaml(expected);
    let actual_yaml = to_yaml(actual);
    similar::TextDiff::from_lines(&expected_yaml, &actual_yaml)
        .unified_diff()
        .context_radius(3)
        .header("expected", "actual")
        .to_string()
}

/// The deepest result [`unified_yaml_diff`] renders.
const DIFF_MAX_DEPTH: usize = 64;
/// The most values a result [`unified_yaml_diff`] renders may hold.
const DIFF_MAX_NODES: usize = 100_000;

/// Whether `value` is within the diff's bounds, found without recursion.
fn renderable(value: &JsonValue) -> bool {
    let mut stack = vec![(value, 1usize)];
    let mut nodes = 0usize;
    while let Some((value, depth)) = stack.pop() {
        nodes += 1;
        if depth > DIFF_MAX_DEPTH || nodes > DIFF_MAX_NODES {
            return false;
        }
        match value {
            JsonValue::Array(items) => stack.extend(items.iter().map(|item| (item, depth + 1))),
            JsonValue::Object(members) => {
                stack.extend(members.values().map(|member| (member, depth + 1)));
            }
            _ => {}
        }
    }
    true
}

/// A value for a one-line message: compact canonical JSON, or `(absent)`.
pub fn short_value(value: Option<&JsonValue>) -> String {
    value.map_or_else(|| "(absent)".to_string(), JsonValue::to_canonical_json)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::path_text::format_path;

    fn json(text: &str) -> JsonValue {
        fn convert(value: serde_json::Value) -> JsonValue {
            match value {
                serde_json::Value::Null => JsonValue::Null,
                serde_json::Value::Bool(b) => JsonValue::Bool(b),
                serde_json::Value::Number(n) => match n.as_i64() {
                    Some(i) => JsonValue::Int(i),
                    None => JsonValue::Float(n.as_f64().expect("a JSON number")),
                },
                serde_json::Value::String(s) => JsonValue::String(s),
                serde_json::Value::Array(items) => {
                    JsonValue::Array(items.into_iter().map(convert).collect())
                }
                serde_json::Value::Object(map) => {
                    JsonValue::Object(map.into_iter().map(|(k, v)| (k, convert(v))).collect())
                }
            }
        }
        convert(serde_json::from_str(text).expect("test JSON parses"))
    }

    fn paths(expected: &str, actual: &str) -> Vec<String> {
        diff_values(&json(expected), &json(actual))
            .iter()
            .map(|(path, e, a)| {
                format!(
                    "{}: {} -> {}",
                    format_path(path),
                    short_value(e.as_ref()),
                    short_value(a.as_ref())
                )
            })
            .collect()
    }

    #[test]
    fn an_inserted_named_route_is_the_only_difference() {
        let expected = r#"{"routes":[{"name":"a","w":1},{"name":"b","w":2},{"name":"c","w":3}]}"#;
        let actual = r#"{"routes":[{"name":"new","w":9},{"name":"a","w":1},{"name":"b","w":2},{"name":"c","w":3}]}"#;
        assert_eq!(
            paths(expected, actual),
            [r#"routes[0]: (absent) -> {"name":"new","w":9}"#]
        );
    }

    #[test]
    fn named_items_pair_by_name_and_differ_by_field() {
        let expected = r#"{"routes":[{"name":"a","w":1},{"name":"b","w":2}]}"#;
        let actual = r#"{"routes":[{"name":"x","w":0},{"name":"a","w":1},{"name":"b","w":5}]}"#;
        assert_eq!(
            paths(expected, actual),
            [
                r#"routes[0]: (absent) -> {"name":"x","w":0}"#,
                "routes[1].w: 2 -> 5",
            ]
        );
    }

    #[test]
    fn unnamed_items_pair_by_content_then_by_position() {
        // One item inserted in front: matched by equal content, nothing else differs.
        assert_eq!(
            paths(
                r#"[{"h":"a"},{"h":"b"}]"#,
                r#"[{"h":"z"},{"h":"a"},{"h":"b"}]"#
            ),
            [r#"[0]: (absent) -> {"h":"z"}"#]
        );
        // A changed item without identity next to an inserted one: compared field by field
        // at its position.
        assert_eq!(
            paths(
                r#"[{"h":"a","w":1},{"h":"b"}]"#,
                r#"[{"h":"a","w":2},{"h":"b"},{"h":"c"}]"#
            ),
            ["[0].w: 1 -> 2", r#"[2]: (absent) -> {"h":"c"}"#]
        );
        // Equal lengths: item by item.
        assert_eq!(
            paths(r#"["a","b"]"#, r#"["b","a"]"#),
            [r#"[0]: "a" -> "b""#, r#"[1]: "b" -> "a""#]
        );
        // A removed item.
        assert_eq!(paths("[1,2,3]", "[1,3]"), ["[1]: 2 -> (absent)"]);
    }

    #[test]
    fn numbers_compare_by_canonical_text() {
        assert!(paths(r#"{"w":50}"#, r#"{"w":50.0}"#).is_empty());
    }

    #[test]
    fn canonical_texts_diff_like_values() {
        let diffs = diff_canonical(r#"{"names":["a","b"]}"#, r#"{"names":["b","a"]}"#).unwrap();
        let listed: Vec<String> = diffs.iter().map(|(path, ..)| format_path(path)).collect();
        assert_eq!(listed, ["names[0]", "names[1]"]);
        assert!(diff_canonical("{", "{}").is_none());
    }

    #[test]
    fn deep_paths_keep_their_ends_and_deep_results_get_no_yaml_diff() {
        // A deep value's derived drop recurses: the callers run steps on large stacks
        // (`DEEP_RESULT_STACK` in the CLI and the language server), and so does this test.
        std::thread::Builder::new()
            .stack_size(64 << 20)
            .spawn(deep_paths_and_results)
            .unwrap()
            .join()
            .unwrap();
    }

    fn deep_paths_and_results() {
        let path: Vec<PathSeg> = std::iter::once(PathSeg::Key("spec".into()))
            .chain((0..9000).map(|_| PathSeg::Key("x".into())))
            .chain(std::iter::once(PathSeg::Index(3)))
            .collect();
        let text = format_path(&path);
        assert!(text.len() < 200, "{} bytes", text.len());
        assert!(text.starts_with("spec.x.x."), "{text}");
        assert!(text.ends_with("x.x[3]"), "{text}");
        assert!(text.contains(" …(8970 levels)… "), "{text}");
        let short = [PathSeg::Key("spec".into()), PathSeg::Index(0)];
        assert_eq!(format_path(&short), "spec[0]");

        let mut deep = JsonValue::Object(Default::default());
        for _ in 0..9000 {
            deep = JsonValue::Object([("x".to_string(), deep)].into_iter().collect());
        }
        let diff = unified_yaml_diff(&deep, &JsonValue::Null);
        assert!(diff.starts_with("(no YAML diff"), "{diff}");
        let diff = unified_yaml_diff(&json("{\"a\": 1}"), &json("{\"a\": 2}"));
        assert!(diff.contains("-a: 1") && diff.contains("+a: 2"), "{diff}");
    }
}
