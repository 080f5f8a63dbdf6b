//! `check`'s CRD schema validation (issue 11): where schemas come from (`crds/` folder,
//! kruise-lua.toml `crds`, `--crd` file or folder, a user's CRD winning), the `invalid`
//! verdict and its exit code, an expectation the API server would reject, the pruned-field
//! warning, `--no-schema`, a broken CRD file, and the verdict in every report format.
//!
//! Fixtures: `tests/fixtures/schema/` — a Weighted script that forgets a step without traffic
//! has canaryWeight -1, with the strict CRD in its `crds/` folder, a looser user CRD and a
//! broken one.

mod common;

use std::path::{Path, PathBuf};

use common::{copy_tree, fixtures, json_lines, run, run_in, scratch};
use serde_json::Value;

const TREE: &str = "schema/lua_configuration";

/// A scratch copy of the fixture tree whose `crds/` folder is moved to `<dir>/strict`.
fn tree_without_crds_folder(name: &str) -> PathBuf {
    let dir = scratch(name);
    copy_tree(&fixtures().join(TREE), &dir.join("lua_configuration"));
    std::fs::rename(dir.join("lua_configuration/crds"), dir.join("strict")).unwrap();
    dir
}

/// The JSON line of case `<case>.yaml`'s step, from `check --format json` run in `dir` on its
/// `lua_configuration` with `--crd crd`.
fn json_step_with_crd(dir: &Path, crd: &str, case: &str) -> Value {
    let result = run_in(
        dir,
        &[
            "check",
            "--format",
            "json",
            "--crd",
            crd,
            "--filter",
            case,
            "lua_configuration",
        ],
    );
    let lines = json_lines(&result.stdout);
    line_of(&lines, &format!("{case}.yaml")).clone()
}

/// The JSON line of the step of the case whose path ends with `case`.
fn line_of<'a>(lines: &'a [Value], case: &str) -> &'a Value {
    lines
        .iter()
        .find(|line| line["case"].as_str().is_some_and(|c| c.ends_with(case)))
        .unwrap_or_else(|| panic!("no line for {case}: {lines:#?}"))
}

#[test]
fn snapshot_human_report_with_schema_findings() {
    let result = run(&["check", TREE]);
    assert_eq!(result.code, 1, "{result:?}");
    insta::assert_snapshot!("check_schema_human", result.stdout);
}

#[test]
fn snapshot_json_report_with_schema_findings() {
    let result = run(&["check", "--format", "json", TREE]);
    assert_eq!(result.code, 1, "{result:?}");
    insta::assert_snapshot!("check_schema_json", result.stdout);
}

#[test]
fn an_output_the_api_server_rejects_is_invalid_with_path_rule_and_message() {
    let result = run(&["check", "--filter", "no_traffic", TREE]);
    assert_eq!(result.code, 1, "{result:?}");
    assert!(
        result
            .lines()
            .contains(&"      ✗ step 1: invalid (the API server would reject it)"),
        "{result:?}"
    );
    let case = "schema/lua_configuration/example.io/Weighted/testdata/no_traffic.yaml";
    assert!(
        result.lines().contains(&format!(
            "          {case}:45: schema error: output and expected[0] spec.routes[0].destinations[1].weight: -1 must be greater than or equal to 0 (minimum) [CRD schema/lua_configuration/crds/weighted.yaml:3, version v1]"
        ).as_str()),
        "{result:?}"
    );
    assert_eq!(
        result.lines().last(),
        Some(&"0 passed, 0 failed, 0 errors, 1 invalid")
    );

    let json = run(&["check", "--format", "json", "--filter", "no_traffic", TREE]);
    assert_eq!(json.code, 1, "{json:?}");
    let lines = json_lines(&json.stdout);
    let step = line_of(&lines, "no_traffic.yaml");
    assert_eq!(step["status"], "invalid");
    assert_eq!(step["line"], 43, "the first schema error's line");
    assert_eq!(
        step["schema_errors"],
        serde_json::json!([
            {
                "target": "output and expected",
                "path": "spec.routes[0].destinations[0].weight",
                "rule": "maximum",
                "message": "101 must be less than or equal to 100",
                "line": 43,
                "crd": "schema/lua_configuration/crds/weighted.yaml:3, version v1"
            },
            {
                "target": "output and expected",
                "path": "spec.routes[0].destinations[1].weight",
                "rule": "minimum",
                "message": "-1 must be greater than or equal to 0",
                "line": 45,
                "crd": "schema/lua_configuration/crds/weighted.yaml:3, version v1"
            }
        ])
    );
    assert_eq!(step["schema_warnings"], serde_json::json!([]));
}

#[test]
fn an_expectation_the_api_server_rejects_is_reported_as_the_tests_bug() {
    let json = run(&[
        "check",
        "--format",
        "json",
        "--filter",
        "bad_expectation",
        TREE,
    ]);
    assert_eq!(json.code, 1, "{json:?}");
    let lines = json_lines(&json.stdout);
    let step = line_of(&lines, "bad_expectation.yaml");
    // The result differs too: the failure stays the verdict, and the schema error says why.
    assert_eq!(step["status"], "fail");
    assert_eq!(
        step["schema_errors"],
        serde_json::json!([{
            "target": "expected",
            "path": "spec.routes[0].destinations[1].weight",
            "rule": "type",
            "message": "must be of type integer, not string \"20\"",
            "line": 45,
            "crd": "schema/lua_configuration/crds/weighted.yaml:3, version v1"
        }])
    );
}

#[test]
fn a_field_the_api_server_would_drop_is_a_warning() {
    let result = run(&["check", "--filter", "legacy_field", TREE]);
    assert_eq!(
        result.code, 0,
        "a warning does not fail the run: {result:?}"
    );
    assert!(
        result.stdout.contains(
            "legacy_field.yaml:40: warning: output and expected[0] spec.legacy: the API server would drop `spec.legacy`: the schema does not declare it (pruned) [CRD schema/lua_configuration/crds/weighted.yaml:3, version v1]"
        ),
        "{result:?}"
    );
    assert_eq!(
        result.lines().last(),
        Some(&"1 passed, 0 failed, 0 errors, 1 warning")
    );
    let denied = run(&["check", "--deny-warnings", "--filter", "legacy_field", TREE]);
    assert_eq!(denied.code, 1, "{denied:?}");
    let json = run(&[
        "check",
        "--format",
        "json",
        "--filter",
        "legacy_field",
        TREE,
    ]);
    let lines = json_lines(&json.stdout);
    let step = line_of(&lines, "legacy_field.yaml");
    assert_eq!(step["status"], "pass");
    assert_eq!(step["schema_warnings"][0]["rule"], "pruned");
    assert_eq!(step["schema_warnings"][0]["path"], "spec.legacy");
}

#[test]
fn no_schema_turns_validation_off() {
    let result = run(&[
        "check",
        "--no-schema",
        "--filter",
        "no_traffic,legacy_field",
        TREE,
    ]);
    assert_eq!(result.code, 0, "{result:?}");
    assert_eq!(result.lines().last(), Some(&"2 passed, 0 failed, 0 errors"));
    let json = run(&["check", "--no-schema", "--format", "json", TREE]);
    for line in json_lines(&json.stdout) {
        assert_eq!(line["schema_errors"], serde_json::json!([]), "{line}");
        assert_ne!(line["status"], "invalid", "{line}");
    }
}

/// `check` in `dir` on its `lua_configuration`, filtered to the no-traffic case, with `extra`
/// options: the exit code and the summary line.
fn no_traffic_verdict(dir: &Path, extra: &[&str]) -> (i32, String) {
    let mut args = vec!["check", "--filter", "no_traffic"];
    args.extend_from_slice(extra);
    args.push("lua_configuration");
    let result = run_in(dir, &args);
    let last = result.stdout.lines().last().unwrap_or_default().to_string();
    (result.code, last)
}

#[test]
fn crd_option_takes_a_file_or_a_folder() {
    let dir = tree_without_crds_folder("crd-option");
    let invalid = (1, "0 passed, 0 failed, 0 errors, 1 invalid".to_string());
    let passes = (0, "1 passed, 0 failed, 0 errors".to_string());
    assert_eq!(
        no_traffic_verdict(&dir, &[]),
        passes,
        "no CRD: nothing to reject"
    );
    assert_eq!(
        no_traffic_verdict(&dir, &["--crd", "strict/weighted.yaml"]),
        invalid
    );
    assert_eq!(no_traffic_verdict(&dir, &["--crd", "strict"]), invalid);
    let missing = run_in(
        &dir,
        &["check", "--crd", "nowhere.yaml", "lua_configuration"],
    );
    assert_eq!(missing.code, 2, "{missing:?}");
    assert!(
        missing
            .stderr
            .contains("nowhere.yaml: no such file or directory"),
        "{missing:?}"
    );
}

#[test]
fn kruise_lua_toml_lists_crds_relative_to_itself() {
    let dir = tree_without_crds_folder("toml-crds");
    std::fs::write(
        dir.join("lua_configuration/kruise-lua.toml"),
        "crds = [\"../strict/weighted.yaml\"]\n",
    )
    .unwrap();
    assert_eq!(
        no_traffic_verdict(&dir, &[]),
        (1, "0 passed, 0 failed, 0 errors, 1 invalid".to_string())
    );
    std::fs::write(
        dir.join("lua_configuration/kruise-lua.toml"),
        "crds = [\n  \"../strict\",\n  \"../gone\",\n]\n",
    )
    .unwrap();
    // The human report carries the error itself (its first line); the machine formats repeat
    // it on stderr.
    let result = run_in(&dir, &["check", "lua_configuration"]);
    assert_eq!(result.code, 1, "{result:?}");
    assert!(
        result.lines()[0].starts_with(
            "lua_configuration/kruise-lua.toml:3: error: CRD not loaded: crds entry \"../gone\""
        ),
        "{result:?}"
    );
    let json = run_in(&dir, &["check", "--format", "json", "lua_configuration"]);
    assert!(
        json.stderr.contains(
            "lua_configuration/kruise-lua.toml:3: error: CRD not loaded: crds entry \"../gone\""
        ),
        "{json:?}"
    );
}

#[test]
fn a_users_crd_wins_over_the_crds_folder() {
    // The crds/ folder's CRD rejects the weights; the user's (looser, declaring `legacy`) does not.
    let with_user = run(&[
        "check",
        "--crd",
        "schema/user-crds",
        "--filter",
        "no_traffic,legacy_field",
        TREE,
    ]);
    assert_eq!(with_user.code, 0, "{with_user:?}");
    assert_eq!(
        with_user.lines().last(),
        Some(&"2 passed, 0 failed, 0 errors")
    );
    // The same through kruise-lua.toml.
    let dir = scratch("toml-wins");
    copy_tree(&fixtures().join(TREE), &dir.join("lua_configuration"));
    copy_tree(&fixtures().join("schema/user-crds"), &dir.join("user-crds"));
    std::fs::write(
        dir.join("lua_configuration/kruise-lua.toml"),
        "crds = [\"../user-crds\"]\n",
    )
    .unwrap();
    assert_eq!(
        no_traffic_verdict(&dir, &[]),
        (0, "1 passed, 0 failed, 0 errors".to_string())
    );
}

#[test]
fn a_broken_crd_file_is_named_with_its_line_and_the_rest_still_validates() {
    let result = run(&[
        "check",
        "--crd",
        "schema/broken-crds/weighted.yaml",
        "--filter",
        "no_traffic",
        TREE,
    ]);
    assert_eq!(result.code, 1, "{result:?}");
    assert_eq!(
        result.lines()[0],
        "schema/broken-crds/weighted.yaml:24: error: CRD not loaded: version v1: unknown type \"integr\""
    );
    // The crds/ folder's CRD, not replaced, still judges the step.
    assert_eq!(
        result.lines().last(),
        Some(&"0 passed, 0 failed, 0 errors, 1 invalid, 1 CRD not loaded")
    );
    let good = run(&[
        "check",
        "--crd",
        "schema/broken-crds",
        "--filter",
        "good",
        TREE,
    ]);
    assert_eq!(
        good.code, 1,
        "a CRD that cannot be used is never a silent pass: {good:?}"
    );
}

#[test]
fn junit_github_and_sarif_carry_the_invalid_verdict() {
    let case = "schema/lua_configuration/example.io/Weighted/testdata/no_traffic.yaml";
    let junit = run(&["check", "--format", "junit", "--filter", "no_traffic", TREE]);
    assert_eq!(junit.code, 1, "{junit:?}");
    assert!(
        junit.stdout.contains(r#"failures="1""#) && junit.stdout.contains(r#"type="invalid""#),
        "{junit:?}"
    );
    assert!(
        junit.stdout.contains(&format!(
            "{case}:45: output and expected[0] spec.routes[0].destinations[1].weight: -1 must be greater than or equal to 0 (minimum) [CRD schema/lua_configuration/crds/weighted.yaml:3, version v1]"
        )),
        "{junit:?}"
    );

    let github = run(&[
        "check",
        "--format",
        "github",
        "--filter",
        "no_traffic",
        TREE,
    ]);
    assert_eq!(github.code, 1, "{github:?}");
    assert!(
        github.lines().contains(&format!(
            "::error file={case},line=45,title=testdata/no_traffic.yaml step 1%3A invalid::output and expected[0] spec.routes[0].destinations[1].weight: -1 must be greater than or equal to 0 (minimum) [CRD schema/lua_configuration/crds/weighted.yaml:3, version v1]"
        ).as_str()),
        "{github:?}"
    );

    let sarif = run(&[
        "check",
        "--format",
        "sarif",
        "--filter",
        "no_traffic,legacy",
        TREE,
    ]);
    assert_eq!(sarif.code, 1, "{sarif:?}");
    let log: Value = serde_json::from_str(&sarif.stdout).unwrap();
    // The Weighted kind has no routing model: each step also carries an intent-not-checked note.
    let results: Vec<&Value> = log["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["ruleId"] != "check/intent-not-checked")
        .collect();
    let rules: Vec<&str> = results
        .iter()
        .map(|r| r["ruleId"].as_str().unwrap())
        .collect();
    assert_eq!(
        rules,
        ["check/schema-warning", "check/invalid", "check/invalid"],
        "{results:#?}"
    );
    assert_eq!(
        results[2]["locations"][0]["physicalLocation"]["region"]["startLine"],
        45
    );
}

#[test]
fn an_ingress_scripts_annotations_follow_kubernetes_key_rules() {
    let dir = scratch("ingress-keys");
    copy_tree(
        &fixtures().join("ingress/lua_configuration"),
        &dir.join("lua_configuration"),
    );
    let ingress = dir.join("lua_configuration/trafficrouting_ingress");
    // A key with a space: the API server rejects it (a qualified name has none), and the
    // expectation, written from the output, agrees with it.
    for file in ["demo.lua", "testdata/demo/weights.yaml"] {
        let path = ingress.join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(
            &path,
            text.replace("demo.io/service", "demo.io/canary service"),
        )
        .unwrap();
    }
    let result = run_in(&dir, &["check", "--format", "json", "lua_configuration"]);
    assert_eq!(result.code, 1, "{result:?}");
    let lines = json_lines(&result.stdout);
    assert_eq!(lines.len(), 2);
    for line in &lines {
        assert_eq!(line["status"], "invalid", "{line}");
        assert_eq!(line["schema_errors"][0]["rule"], "annotation-key", "{line}");
        assert_eq!(
            line["schema_errors"][0]["path"], r#"metadata.annotations["demo.io/canary service"]"#,
            "{line}"
        );
        assert_eq!(line["schema_errors"][0]["target"], "output and expected");
    }
    let off = run_in(&dir, &["check", "--no-schema", "lua_configuration"]);
    assert_eq!(off.code, 0, "{off:?}");
}

/// Kruise writes each step with Update: a transition rule compares the step's result with the
/// object before it (the case's `original` for the first step).
#[test]
fn transition_rules_compare_each_step_with_the_object_before_it() {
    let dir = tree_without_crds_folder("schema_transition");
    let strict = std::fs::read_to_string(dir.join("strict/weighted.yaml")).unwrap();
    let rule = "                    x-kubernetes-validations:\n                    - rule: size(self.destinations) <= size(oldSelf.destinations)\n                      message: destinations may not be added\n";
    let with_rule = strict.replacen(
        "                    required: [name, destinations]\n",
        &format!("                    required: [name, destinations]\n{rule}"),
        1,
    );
    assert_ne!(with_rule, strict, "the fixture CRD changed");
    std::fs::write(dir.join("transition.yaml"), with_rule).unwrap();
    let step = json_step_with_crd(&dir, "transition.yaml", "good");
    assert_eq!(step["status"], "invalid", "{step:#}");
    let errors = step["schema_errors"].as_array().unwrap();
    assert!(
        errors.iter().any(|e| e["rule"] == "cel"
            && e["path"] == "spec.routes[0]"
            && e["message"] == "destinations may not be added"
            && e["crd"]
                .as_str()
                .is_some_and(|crd| crd.starts_with("transition.yaml:"))),
        "{errors:#?}"
    );
}

/// CRD validation ratcheting (Kubernetes 1.33, KEP-4008): Kruise updates the gateway object,
/// so a field the step leaves as the object before it had it passes even when the CRD now
/// refuses its value (a warning says so), while the same value written anew is an error.
#[test]
fn an_invalid_value_the_step_leaves_unchanged_is_ratcheted() {
    let dir = tree_without_crds_folder("schema_ratcheting");
    let strict = std::fs::read_to_string(dir.join("strict/weighted.yaml")).unwrap();
    let with_owner = strict.replacen(
        "              properties:\n                routes:\n",
        "              properties:\n                owner:\n                  type: string\n                  pattern: '^[a-z]+$'\n                routes:\n",
        1,
    );
    assert_ne!(with_owner, strict, "the fixture CRD changed");
    std::fs::write(dir.join("owner.yaml"), with_owner).unwrap();
    let testdata = dir.join("lua_configuration/example.io/Weighted/testdata");
    let good = std::fs::read_to_string(testdata.join("good.yaml")).unwrap();
    let owned = good.replace(
        "  spec:\n    routes:\n",
        "  spec:\n    owner: Team-A\n    routes:\n",
    );
    assert_eq!(owned.matches("owner: Team-A").count(), 2, "{owned}");
    std::fs::write(testdata.join("owned.yaml"), owned).unwrap();
    let script = dir.join("lua_configuration/example.io/Weighted/trafficRouting.lua");
    let step = json_step_with_crd(&dir, "owner.yaml", "owned");
    assert_eq!(step["status"], "pass", "{step:#}");
    let warning = &step["schema_warnings"][0];
    assert_eq!(warning["rule"], "pattern", "{step:#}");
    assert_eq!(warning["path"], "spec.owner", "{step:#}");
    assert!(
        warning["message"]
            .as_str()
            .is_some_and(|m| m.contains("CRD validation ratcheting")),
        "{step:#}"
    );
    // A script that writes another invalid value there is refused.
    let renamed = std::fs::read_to_string(&script).unwrap().replace(
        "return { spec = spec }",
        "spec.owner = \"Team-B\"\nreturn { spec = spec }",
    );
    std::fs::write(&script, renamed).unwrap();
    let step = json_step_with_crd(&dir, "owner.yaml", "owned");
    assert_eq!(step["status"], "fail", "{step:#}");
    let errors = step["schema_errors"].as_array().unwrap();
    assert!(
        errors
            .iter()
            .any(|e| e["rule"] == "pattern" && e["path"] == "spec.owner"),
        "{step:#}"
    );
}
