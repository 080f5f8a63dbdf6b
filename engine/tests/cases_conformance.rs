//! Checks discovery and test-case parsing against `cases.expected.jsonl` (conformance 2.7):
//! the walk order of (script, case) pairs, the `obj` of every step, the expected results and
//! the case errors found before anything runs.

use std::collections::BTreeMap;
use std::path::Path;

use kruise_lua_engine::JsonValue;
use kruise_lua_engine::discovery;
use kruise_lua_engine::script::ScriptKind;
use kruise_lua_engine::testcase::{TestCase, parse_case};
use serde_json::Value;

mod common;
use common::{conformance_dir, relative};

/// One line of a `.jsonl` file.
struct Line {
    script: String,
    case: String,
    step: i64,
    error_kind: Option<String>,
    error: Option<String>,
    expected: Option<String>,
    obj: Option<String>,
}

fn read_lines(file: &Path) -> Vec<Line> {
    let text = std::fs::read_to_string(file)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
    let lines: Vec<Line> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("a JSON line");
            let s = |k: &str| v[k].as_str().map(str::to_string);
            Line {
                script: s("script").expect("script"),
                case: s("case").expect("case"),
                step: v["step"].as_i64().expect("step"),
                error_kind: s("error_kind"),
                error: s("error"),
                expected: s("expected"),
                obj: s("obj"),
            }
        })
        .collect();
    assert!(!lines.is_empty(), "{} is empty", file.display());
    lines
}

/// Our JSON value as serde_json's, keeping integers exact (no `arbitrary_precision` needed:
/// i64 fits serde_json's integer numbers).
fn to_serde(value: &JsonValue) -> Value {
    match value {
        JsonValue::Null => Value::Null,
        JsonValue::Bool(b) => Value::Bool(*b),
        JsonValue::Int(i) => Value::from(*i),
        JsonValue::Float(f) => {
            Value::Number(serde_json::Number::from_f64(*f).expect("finite float"))
        }
        JsonValue::String(s) => Value::String(s.clone()),
        JsonValue::Array(items) => Value::Array(items.iter().map(to_serde).collect()),
        JsonValue::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), to_serde(v))).collect())
        }
    }
}

/// (script, case) in walk order, as our discovery finds them; a script without testdata gives
/// its testdata folder as the case, as the jsonl does.
fn discovered_pairs(cases_dir: &Path) -> Vec<(String, String, Option<String>)> {
    let entries = discovery::discover(cases_dir).expect("discover the cases folder");
    let mut pairs = Vec::new();
    for entry in &entries {
        assert!(
            matches!(entry.kind, ScriptKind::Custom { .. }),
            "only custom scripts in cases/: {:?}",
            entry.kind
        );
        let discovery::ScriptOrigin::File(script_path) = &entry.origin else {
            panic!("file origin expected")
        };
        let script = relative(cases_dir, script_path);
        match &entry.cases {
            Ok(cases) => {
                for case in cases {
                    pairs.push((script.clone(), relative(cases_dir, case), None));
                }
            }
            Err(e) => {
                let testdata = relative(cases_dir, &script_path.parent().unwrap().join("testdata"));
                pairs.push((script.clone(), testdata, Some(e.message.clone())));
            }
        }
    }
    pairs
}

fn check_file(jsonl: &str) {
    let dir = conformance_dir();
    let cases_dir = dir.join("cases");
    let lines = read_lines(&dir.join(jsonl));

    // Discovery order: the jsonl's (script, case) sequence is the walk order.
    let mut wanted: Vec<(String, String)> = Vec::new();
    for line in &lines {
        let pair = (line.script.clone(), line.case.clone());
        if wanted.last() != Some(&pair) {
            wanted.push(pair);
        }
    }
    let found = discovered_pairs(&cases_dir);
    let found_pairs: Vec<(String, String)> = found
        .iter()
        .map(|(s, c, _)| (s.clone(), c.clone()))
        .collect();
    assert_eq!(found_pairs, wanted, "walk order differs from {jsonl}");

    let mut parsed: BTreeMap<String, Result<TestCase, String>> = BTreeMap::new();
    let mut checked_steps = 0;
    for line in &lines {
        let what = format!("{} step {}", line.case, line.step);
        let discovery_error = found
            .iter()
            .find(|(s, c, _)| *s == line.script && *c == line.case)
            .and_then(|(_, _, e)| e.clone());
        if let Some(message) = discovery_error {
            assert_eq!(line.step, -1, "{what}: discovery error on a step line");
            assert_eq!(line.error_kind.as_deref(), Some("case"), "{what}");
            // Same message, with the testdata path as our walk spells it.
            let upstream = line.error.clone().expect("error text");
            let ours = upstream.replacen(
                "lstat ",
                &format!("lstat {}/", discovery::go_display(&cases_dir)),
                1,
            );
            assert_eq!(message, ours, "{what}");
            continue;
        }
        let case = parsed
            .entry(line.case.clone())
            .or_insert_with(|| {
                let source =
                    std::fs::read_to_string(cases_dir.join(&line.case)).expect("read case");
                parse_case(&source).map_err(|e| e.message)
            })
            .clone();
        if line.step == -1 {
            assert_eq!(line.error_kind.as_deref(), Some("case"), "{what}");
            let err = case.err().unwrap_or_else(|| {
                panic!(
                    "{what}: parsed, but the oracle reports a case error: {:?}",
                    line.error
                )
            });
            // Where our message is built like Go's, it is the same text.
            if let Some(upstream) = &line.error
                && (upstream.starts_with("error unmarshaling JSON")
                    || upstream.starts_with("neither"))
            {
                // The oracle's own copy of the v1alpha1 strategy type carries a suffix;
                // Kruise's type is plain `TrafficRoutingStrategy`.
                let upstream =
                    upstream.replace("TrafficRoutingStrategyA1.", "TrafficRoutingStrategy.");
                assert_eq!(err, upstream, "{what}");
            }
            continue;
        }
        let case =
            case.unwrap_or_else(|e| panic!("{what}: case error {e}, but the oracle ran the step"));
        let step = usize::try_from(line.step).unwrap();
        assert!(
            step < case.steps.len(),
            "{what}: only {} steps parsed",
            case.steps.len()
        );
        let obj = to_serde(&case.steps[step].obj.to_json());
        let wanted_obj: Value =
            serde_json::from_str(line.obj.as_deref().expect("obj")).expect("obj JSON");
        assert_eq!(obj, wanted_obj, "{what}: obj differs");
        if line.error_kind.as_deref() == Some("case") {
            // `no expected[i]`: reported by the runner; the parser keeps the short list.
            assert!(
                line.error
                    .as_deref()
                    .unwrap_or_default()
                    .starts_with("no expected["),
                "{what}"
            );
            assert!(
                case.expected.len() <= step,
                "{what}: expected[{step}] exists"
            );
        } else {
            let entry = case
                .expected
                .get(step)
                .unwrap_or_else(|| panic!("{what}: no expected entry"));
            let wanted_expected: Value =
                serde_json::from_str(line.expected.as_deref().expect("expected"))
                    .expect("expected JSON");
            assert_eq!(
                to_serde(&entry.data.to_obj_json()),
                wanted_expected,
                "{what}: expected differs"
            );
        }
        checked_steps += 1;
    }
    // Every parsed case has exactly as many steps as the oracle ran.
    for (case, parsed) in &parsed {
        if let Ok(parsed) = parsed {
            let ran = lines
                .iter()
                .filter(|l| &l.case == case && l.step >= 0)
                .count();
            assert_eq!(parsed.steps.len(), ran, "{case}: step count");
        }
    }
    assert!(checked_steps >= 40, "only {checked_steps} steps checked");
}

#[test]
fn cases_expected_jsonl() {
    check_file("cases.expected.jsonl");
}

#[test]
fn cases_production_jsonl() {
    // Same inputs under the controller's rules: discovery and objs must agree too.
    check_file("cases.production.jsonl");
}

#[test]
fn echo_cases_warn_about_ignored_fields() {
    let dir = conformance_dir().join("cases/example.io/Echo/testdata");
    let source = std::fs::read_to_string(dir.join("step_matches.yaml")).unwrap();
    let case = parse_case(&source).unwrap();
    let unknown = case
        .warnings
        .iter()
        .find(|w| w.message.contains("`unknownField`"))
        .expect("a warning for unknownField");
    let span = unknown.span.expect("a position");
    assert_eq!(&source[span.start.offset..span.end.offset], "unknownField");
    let line = source
        .lines()
        .position(|l| l.contains("unknownField"))
        .unwrap() as u32
        + 1;
    assert_eq!(span.start.line, line);
    // `replicas` and `pause` are real step fields: no warning.
    assert!(
        !case
            .warnings
            .iter()
            .any(|w| w.message.contains("`replicas`") || w.message.contains("`pause`"))
    );

    let source =
        std::fs::read_to_string(dir.join("both_rollout_and_traffic_routing.yaml")).unwrap();
    let case = parse_case(&source).unwrap();
    assert!(
        case.warnings
            .iter()
            .any(|w| w.message.contains("ignores trafficRouting"))
    );
}
