//! `kruise-lua check --format json` on the conformance suite's `cases/` tree must give what
//! the reference oracle recorded in `cases.expected.jsonl` (harness rules) and
//! `cases.production.jsonl` (controller rules): same steps in the same walk order, same
//! status, actual and expected JSON, and error kind.

mod common;

use std::path::PathBuf;

use serde_json::Value;

fn conformance() -> PathBuf {
    let dir = common::workspace().join("../shared/conformance");
    assert!(
        dir.join("cases").is_dir(),
        "conformance suite missing at {}",
        dir.display()
    );
    dir
}

/// The fields both sides must agree on, one tuple per line. The oracle's `step` is the 0-based
/// YAML index, which our report gives as `index` (its `step` numbers steps from 1).
fn comparable(line: &Value, index_key: &str) -> (String, String, i64, String, Value, Value, Value) {
    let step = match &line[index_key] {
        Value::Null => -1,
        step => step.as_i64().unwrap(),
    };
    (
        line["script"].as_str().unwrap().to_string(),
        line["case"].as_str().unwrap().to_string(),
        step,
        line["status"].as_str().unwrap().to_string(),
        line["error_kind"].clone(),
        line["actual"].clone(),
        line["expected"].clone(),
    )
}

fn check_against(mode: &str, oracle: &str) {
    let dir = conformance();
    // The oracle holds Kruise's own verdicts; schema validation (the `invalid` verdict: a
    // label value such as "-1" that the API server rejects) goes beyond them.
    let result = common::run_in(
        &dir.join("cases"),
        &[
            "check",
            "--format",
            "json",
            "--no-schema",
            "--mode",
            mode,
            ".",
        ],
    );
    assert_eq!(result.code, 1, "the suite has failing cases: {result:?}");
    let ours: Vec<_> = result
        .stdout
        .lines()
        .map(|l| comparable(&serde_json::from_str(l).unwrap(), "index"))
        .collect();
    let theirs: Vec<_> = std::fs::read_to_string(dir.join(oracle))
        .unwrap()
        .lines()
        .map(|l| comparable(&serde_json::from_str(l).unwrap(), "step"))
        .collect();
    assert_eq!(ours.len(), theirs.len(), "{result:?}");
    for (ours, theirs) in ours.iter().zip(&theirs) {
        assert_eq!(ours, theirs);
    }
}

#[test]
fn harness_mode_matches_the_oracle() {
    check_against("harness", "cases.expected.jsonl");
}

#[test]
fn production_mode_matches_the_oracle() {
    check_against("production", "cases.production.jsonl");
}
