//! End-to-end tests of production mode's controller step semantics (fixtures in
//! `tests/fixtures/controller`): ingress steps chained on the canary Ingress, steps the
//! controller never runs the script for, in every report format and in `obj`; and Lua's
//! `<string>:LINE:` positions mapped to real files and lines (a ConfigMap's YAML line).

mod common;

use common::{json_lines, run};
use serde_json::Value;

const TREE: &str = "controller/lua_configuration";
const STALE_CASE: &str =
    "controller/lua_configuration/trafficrouting_ingress/testdata/stale/steps.yaml";
const PAUSE_CASE: &str = "controller/lua_configuration/example.io/Pause/testdata/pause.yaml";
const CONFIGMAP: &str = "controller/errors/kruise-rollout-configuration.yaml";
const CONFIGMAP_CASES: &str = "controller/errors/lua_configuration";

/// The JSON line of `steps[index]` (0-based, as `expected[index]`) of the case.
fn step<'a>(lines: &'a [Value], case_part: &str, index: u64) -> &'a Value {
    lines
        .iter()
        .find(|line| {
            line["case"].as_str().unwrap().contains(case_part)
                && line["index"].as_u64() == Some(index)
        })
        .unwrap_or_else(|| panic!("no line for {case_part} steps[{index}] in {lines:#?}"))
}

fn warnings(line: &Value) -> String {
    line["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn harness_mode_runs_every_step_on_its_own() {
    let result = run(&["check", "--format", "json", TREE]);
    assert_eq!(result.code, 0, "{result:?}");
    for line in json_lines(&result.stdout) {
        assert_eq!(line["status"], "pass", "{line}");
        assert_eq!(line["skipped"], Value::Null, "{line}");
        assert_eq!(line["warnings"], serde_json::json!([]), "{line}");
    }
}

#[test]
fn production_mode_chains_ingress_steps_and_skips_steps_without_traffic() {
    let result = run(&["check", "--mode", "production", "--format", "json", TREE]);
    assert_eq!(result.code, 1, "{result:?}");
    let lines = json_lines(&result.stdout);

    // The custom provider's step 1 has neither traffic nor matches.
    let pause = step(&lines, "Pause", 1);
    assert_eq!(pause["status"], "pass", "the vectors' verdict: {pause}");
    assert_eq!(
        pause["skipped"],
        "skipped: the controller does not call the script for a step with neither traffic nor matches"
    );
    assert!(
        warnings(pause).contains(
            r#"keeps step 1's result: {"spec":{"weight":20}}, which expected[1] does not match"#
        ),
        "{pause}"
    );

    // Step 1 of the stale script runs on step 0's canary Ingress.
    let stale = step(&lines, "stale", 1);
    assert_eq!(stale["status"], "fail", "{stale}");
    assert!(
        warnings(stale).contains("annotations demo.io/canary-by-header differ"),
        "{stale}"
    );
    // Step 2 (replicas only) is not run: the canary keeps step 1's annotations.
    let kept = step(&lines, "stale", 2);
    assert_eq!(kept["status"], "fail", "{kept}");
    assert_eq!(kept["actual"], stale["actual"]);
    assert!(
        warnings(kept).contains("neither traffic nor matches"),
        "{kept}"
    );

    // The appending script never settles.
    let append = step(&lines, "append", 0);
    assert_eq!(append["status"], "fail", "{append}");
    assert!(warnings(append).contains("not idempotent"), "{append}");
    assert!(
        warnings(append).contains("changing: demo.io/headers"),
        "{append}"
    );
}

#[test]
fn every_format_shows_skipped_steps_and_the_warnings() {
    let human = run(&["check", "--mode", "production", TREE]);
    assert!(
        human.stdout.contains(
            "      - step 2\n          skipped: the controller does not call the script for a step with neither traffic nor matches\n"
        ),
        "{human:?}"
    );
    assert!(
        human.stdout.contains("warning: not idempotent"),
        "{human:?}"
    );
    assert!(
        human.lines().last().unwrap().contains("1 step skipped"),
        "{human:?}"
    );

    let junit = run(&["check", "--mode", "production", "--format", "junit", TREE]);
    assert!(
        junit
            .stdout
            .contains(r#"<skipped message="skipped: the controller does not call the script"#),
        "{junit:?}"
    );
    assert!(
        junit.stdout.contains("warning: not idempotent"),
        "{junit:?}"
    );

    let github = run(&["check", "--mode", "production", "--format", "github", TREE]);
    assert!(
        github
            .stdout
            .contains("::notice file=controller/lua_configuration/example.io/Pause/testdata/pause.yaml,line=11,title=testdata/pause.yaml step 2 skipped::skipped"),
        "{github:?}"
    );
    assert!(
        github.lines().iter().any(|l| l.starts_with("::warning ")
            && l.contains("annotations demo.io/canary-by-header differ")),
        "{github:?}"
    );
}

#[test]
fn obj_prints_the_ingress_obj_and_the_controllers_in_production_mode() {
    // Steps are numbered from 1: step 2 is `steps[1]`.
    let harness = run(&["obj", STALE_CASE, "--step", "2"]);
    assert_eq!(harness.code, 0, "{harness:?}");
    assert!(
        harness.stdout.contains("  weight = \"50\",\n"),
        "{harness:?}"
    );
    assert!(
        harness
            .stdout
            .contains("  canaryService = \"shop-canary\",\n"),
        "{harness:?}"
    );
    assert!(
        harness.stdout.contains("    team = \"shop\",\n"),
        "{harness:?}"
    );
    assert!(!harness.stdout.contains("canaryWeight"), "{harness:?}");
    assert!(
        !harness.stdout.contains("demo.io/canary-by-header"),
        "{harness:?}"
    );

    // Step 2's annotations are the canary Ingress's after step 1.
    let production = run(&["obj", "--mode", "production", STALE_CASE, "--step", "2"]);
    assert_eq!(production.code, 0, "{production:?}");
    assert!(
        production
            .stdout
            .contains("    [\"demo.io/canary-by-header\"] = \"user=tester\",\n"),
        "{production:?}"
    );
    let skipped = run(&["obj", "--mode", "production", STALE_CASE, "--step", "3"]);
    assert!(
        skipped.stdout.ends_with(
            "-- skipped: the controller does not call the script for a step with neither traffic nor matches\n"
        ),
        "{skipped:?}"
    );
    let custom = run(&["obj", "--mode", "production", PAUSE_CASE]);
    assert_eq!(custom.stdout.matches("obj = {").count(), 1, "{custom:?}");
    assert!(custom.stdout.contains("canaryWeight = 20"), "{custom:?}");
}

#[test]
fn script_errors_name_the_configmap_and_its_yaml_line() {
    let json = run(&["check", "--format", "json", CONFIGMAP, CONFIGMAP_CASES]);
    let lines = json_lines(&json.stdout);
    let error = step(&lines, "boom", 0);
    assert_eq!(error["status"], "error");
    assert_eq!(error["line"], 10);
    // The raw text stays as the controller logs it; the mapped one names the manifest.
    assert!(
        error["error"].as_str().unwrap().starts_with("<string>:3: "),
        "{error}"
    );
    assert_eq!(
        error["located_error"].as_str().unwrap(),
        error["error"]
            .as_str()
            .unwrap()
            .replace("<string>:3:", &format!("{CONFIGMAP}:10:"))
    );

    for format in ["human", "junit", "github"] {
        let result = run(&["check", "--format", format, CONFIGMAP, CONFIGMAP_CASES]);
        assert!(!result.stdout.contains("<string>"), "{format}: {result:?}");
    }
    let human = run(&["check", CONFIGMAP, CONFIGMAP_CASES]);
    assert!(
        human
            .stdout
            .contains(&format!("{CONFIGMAP}:10: runtime error: ")),
        "{human:?}"
    );
    let github = run(&["check", "--format", "github", CONFIGMAP, CONFIGMAP_CASES]);
    assert!(
        github
            .stdout
            .contains(&format!("::error file={CONFIGMAP},line=10,")),
        "{github:?}"
    );
}

// ---- snapshots of the production reports ----

#[test]
fn snapshot_production_human_report() {
    let result = run(&["check", "--mode", "production", TREE]);
    insta::assert_snapshot!("controller_production_human", result.stdout);
}

#[test]
fn snapshot_production_json_report() {
    let result = run(&["check", "--mode", "production", "--format", "json", TREE]);
    insta::assert_snapshot!("controller_production_json", result.stdout);
}

#[test]
fn run_in_production_mode_chains_an_ingress_script() {
    let script = "controller/lua_configuration/trafficrouting_ingress/stale.lua";
    let harness = run(&["run", script, "--case", STALE_CASE, "--step", "2"]);
    assert_eq!(harness.code, 0, "{harness:?}");
    assert!(!harness.stdout.contains("canary-by-header"), "{harness:?}");
    let production = run(&["run", "--mode", "production", script, "--case", STALE_CASE]);
    assert_eq!(production.code, 0, "{production:?}");
    let documents: Vec<&str> = production.stdout.split("---\n").collect();
    assert!(
        documents[1].contains("demo.io/canary-by-header: \"user=tester\""),
        "{production:?}"
    );
    // Step 2 is not run: the canary Ingress keeps step 1's annotations.
    assert_eq!(
        documents[2].lines().skip(1).collect::<Vec<_>>(),
        documents[1].lines().skip(1).collect::<Vec<_>>()
    );
    assert!(
        production
            .stderr
            .contains(&format!("{script}: step 3: skipped: ")),
        "{production:?}"
    );
    assert!(
        production
            .stderr
            .contains("annotations demo.io/canary-by-header differ"),
        "{production:?}"
    );
}
