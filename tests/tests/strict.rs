//! The CLI's strictness and clarity (issue 10 §3): a case that yields no step is an error,
//! `--deny-warnings`, warnings in JUnit, steps numbered from 1 in every output and option, a
//! case file as PATH, a memory error at its Lua line, a syntax error shown once per script, `--shuffle` naming the `pairs()`
//! line and the differing paths, the controller-difference warning as JSON paths, list diffs
//! matched by identity, and the exit codes in `--help`.

mod common;

use common::{copy_tree, fixtures, json_lines, run, run_in, scratch};

const TREE: &str = "tree/lua_configuration";
const WEIGHTED: &str = "lua_configuration/example.io/Weighted";

/// A scratch copy of the fixture tree (as `lua_configuration`), for tests that edit it.
fn tree_copy(name: &str) -> std::path::PathBuf {
    let dir = scratch(name);
    copy_tree(&fixtures().join(TREE), &dir.join("lua_configuration"));
    dir
}

fn write(dir: &std::path::Path, path: &str, text: &str) {
    let path = dir.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn read(dir: &std::path::Path, path: &str) -> String {
    std::fs::read_to_string(dir.join(path)).unwrap()
}

// ---- a case with no step; --deny-warnings; JUnit warnings ----

#[test]
fn a_case_that_yields_no_step_is_an_error() {
    let dir = tree_copy("no-steps");
    let case = read(&dir, &format!("{WEIGHTED}/testdata/rollout_steps.yaml"));
    assert!(case.contains("        steps:\n"));
    // The typo a new user made: `step:` for `steps:` (Kruise ignores the unknown field).
    write(
        &dir,
        &format!("{WEIGHTED}/testdata/typo.yaml"),
        &case.replace("        steps:\n", "        step:\n"),
    );
    let result = run_in(&dir, &["check", WEIGHTED]);
    assert_eq!(result.code, 1, "{result:?}");
    assert!(
        result.stdout.contains(
            "typo.yaml:13: case error: the case yields no step, so it checks nothing (rollout.spec.strategy.canary.steps is empty"
        ),
        "{result:?}"
    );
    assert!(
        result.stdout.contains("unknown field `step`"),
        "the typo's warning stays: {result:?}"
    );
    assert!(
        result.lines().last().unwrap().contains("1 error"),
        "{result:?}"
    );
}

#[test]
fn deny_warnings_turns_a_warning_into_exit_1() {
    let case = ["--filter", "unknown_field", TREE];
    let lenient = run(&[&["check"][..], &case].concat());
    assert_eq!(lenient.code, 0, "{lenient:?}");
    let strict = run(&[&["check", "--deny-warnings"][..], &case].concat());
    assert_eq!(strict.code, 1, "{strict:?}");
    assert!(
        strict.lines().last().unwrap().contains("1 warning"),
        "{strict:?}"
    );
    let clean = run(&[
        "check",
        "--deny-warnings",
        "--filter",
        "rollout_steps",
        TREE,
    ]);
    assert_eq!(clean.code, 0, "no warning, no failure: {clean:?}");
}

#[test]
fn junit_carries_warnings_in_system_err() {
    let result = run(&[
        "check",
        "--format",
        "junit",
        "--filter",
        "unknown_field",
        TREE,
    ]);
    assert_eq!(result.code, 0, "{result:?}");
    let (_, after) = result
        .stdout
        .split_once("<system-err>")
        .unwrap_or_else(|| panic!("no <system-err>: {result:?}"));
    let (warnings, _) = after.split_once("</system-err>").unwrap();
    assert!(
        warnings.contains("unknown_field.yaml:11: warning: unknown field `weight`"),
        "{warnings}"
    );
}

// ---- one numbering for steps ----

#[test]
fn steps_are_numbered_from_1_in_every_output_and_option() {
    let case = format!("{TREE}/example.io/Weighted/testdata/rollout_steps.yaml");
    let only = ["--filter", "rollout_steps", TREE];
    let human = run(&[&["check"][..], &only].concat());
    assert!(human.stdout.contains("      ✓ step 1\n"), "{human:?}");
    assert!(human.stdout.contains("      ✓ step 3\n"), "{human:?}");
    assert!(!human.stdout.contains("step 0"), "{human:?}");

    let json = run(&[&["check", "--format", "json"][..], &only].concat());
    let lines = json_lines(&json.stdout);
    let numbers: Vec<(u64, u64)> = lines
        .iter()
        .map(|line| {
            (
                line["step"].as_u64().unwrap(),
                line["index"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(numbers, [(1, 0), (2, 1), (3, 2)], "{json:?}");

    let junit = run(&[&["check", "--format", "junit"][..], &only].concat());
    assert!(
        junit
            .stdout
            .contains("testdata/rollout_steps.yaml step 1\""),
        "{junit:?}"
    );

    // `obj --step 1` is the step the reports call step 1 (`steps[0]`: 20% traffic).
    let obj = run(&["obj", &case, "--step", "1"]);
    assert_eq!(obj.code, 0, "{obj:?}");
    assert!(obj.stdout.contains("step 1 of 3"), "{obj:?}");
    assert!(obj.stdout.contains("  canaryWeight = 20,\n"), "{obj:?}");
    let zero = run(&["obj", &case, "--step", "0"]);
    assert_eq!(zero.code, 2, "{zero:?}");
    assert!(zero.stderr.contains("numbered from 1"), "{zero:?}");

    let script = format!("{TREE}/example.io/Weighted/trafficRouting.lua");
    let ran = run(&["run", &script, "--case", &case, "--step", "1"]);
    assert_eq!(ran.code, 0, "{ran:?}");
    assert!(ran.stdout.contains(": step 1\n"), "{ran:?}");
    assert!(ran.stdout.contains("weight: 20"), "{ran:?}");
}

// ---- a case file as PATH ----

#[test]
fn a_case_file_runs_that_case_with_its_script() {
    let case = format!("{TREE}/example.io/Weighted/testdata/traffic_routing.yaml");
    let result = run(&["check", &case]);
    assert_eq!(result.code, 0, "{result:?}");
    assert!(
        result
            .stdout
            .contains("✓ tree/lua_configuration/example.io/Weighted/trafficRouting.lua\n  ✓ testdata/traffic_routing.yaml\n      ✓ step 1\n"),
        "{result:?}"
    );
    assert!(
        !result.stdout.contains("rollout_steps.yaml"),
        "only that case runs: {result:?}"
    );
    assert!(
        result.lines().last().unwrap().starts_with("1 passed"),
        "{result:?}"
    );

    // Two cases of one script run under it once.
    let two = run(&[
        "check",
        &case,
        &format!("{TREE}/example.io/Weighted/testdata/rollout_steps.yaml"),
    ]);
    assert_eq!(two.code, 0, "{two:?}");
    assert_eq!(
        two.stdout.matches("Weighted/trafficRouting.lua").count(),
        1,
        "{two:?}"
    );
    assert!(
        two.lines().last().unwrap().starts_with("4 passed"),
        "{two:?}"
    );
}

#[test]
fn an_ingress_case_file_runs_with_its_class_script() {
    let case = "controller/lua_configuration/trafficrouting_ingress/testdata/stale/steps.yaml";
    let result = run(&["check", case]);
    assert!(
        result
            .stdout
            .contains("controller/lua_configuration/trafficrouting_ingress/stale.lua"),
        "{result:?}"
    );
    assert!(!result.stdout.contains("append.lua"), "{result:?}");
    assert_ne!(result.code, 2, "{result:?}");
}

#[test]
fn a_yaml_outside_testdata_names_both_readings() {
    let dir = scratch("loose-case");
    let case = std::fs::read_to_string(fixtures().join(format!(
        "{TREE}/example.io/Weighted/testdata/traffic_routing.yaml"
    )))
    .unwrap();
    write(&dir, "case.yaml", &case);
    let result = run_in(&dir, &["check", "case.yaml"]);
    assert_eq!(result.code, 2, "{result:?}");
    assert!(
        result.stderr.contains("no ConfigMap")
            && result.stderr.contains("<group>/<Kind>/testdata/"),
        "{result:?}"
    );
}

// ---- a syntax error once per script ----

#[test]
fn a_syntax_error_is_reported_once_per_script() {
    let dir = tree_copy("syntax");
    write(
        &dir,
        &format!("{WEIGHTED}/trafficRouting.lua"),
        "local spec = obj.data.spec\nif then\nreturn spec\n",
    );
    let human = run_in(&dir, &["check", WEIGHTED]);
    assert_eq!(human.code, 1, "{human:?}");
    assert_eq!(
        human.stdout.matches("syntax error:").count(),
        1,
        "{human:?}"
    );
    assert!(
        human.stdout.contains(&format!(
            "    {WEIGHTED}/trafficRouting.lua:2: syntax error: "
        )),
        "{human:?}"
    );
    assert!(
        human.stdout.contains("! step 1 (the syntax error above)"),
        "{human:?}"
    );

    let github = run_in(&dir, &["check", "--format", "github", WEIGHTED]);
    let annotations: Vec<&str> = github
        .lines()
        .into_iter()
        .filter(|line| line.starts_with("::error") && line.contains("syntax error"))
        .collect();
    assert_eq!(annotations.len(), 1, "{github:?}");
    assert!(
        annotations[0].starts_with(&format!(
            "::error file={WEIGHTED}/trafficRouting.lua,line=2,"
        )),
        "{github:?}"
    );
    assert!(
        !github.stdout.contains("step 1%3A syntax"),
        "no per-step annotation: {github:?}"
    );
}

// ---- a memory error at its Lua line ----

#[test]
fn a_memory_error_points_at_the_lua_line() {
    let dir = tree_copy("memory");
    write(
        &dir,
        &format!("{WEIGHTED}/trafficRouting.lua"),
        "local t = {}\nfor i = 1, 1e9 do\n  t[i] = string.rep(\"x\", 100) .. i\nend\nreturn t\n",
    );
    let case = ["--filter", "traffic_routing", WEIGHTED];
    let result = run_in(&dir, &[&["check", "--memory", "4"][..], &case].concat());
    assert_eq!(result.code, 1, "{result:?}");
    assert!(
        result.stdout.contains(&format!(
            "{WEIGHTED}/trafficRouting.lua:3: memory error: not enough memory"
        )),
        "{result:?}"
    );
    let json = run_in(
        &dir,
        &[&["check", "--memory", "4", "--format", "json"][..], &case].concat(),
    );
    let lines = json_lines(&json.stdout);
    assert_eq!(lines[0]["line"], 3, "{json:?}");
}

// ---- --shuffle ----

#[test]
fn shuffle_names_the_pairs_line_and_the_differing_paths() {
    let result = run(&["check", "--shuffle", "8", "order/lua_configuration"]);
    assert_eq!(result.code, 1, "{result:?}");
    assert!(
        result.stdout.contains(
            "(pairs() at order/lua_configuration/example.io/Ordered/trafficRouting.lua:3)"
        ),
        "{result:?}"
    );
    assert!(
        result.stdout.contains("another run gave spec.names["),
        "{result:?}"
    );
    assert!(result.stdout.contains("(sorted order: \""), "{result:?}");
    // Not counted as passed, and not a "pass" in JSON: the step's verdict is a failure.
    assert!(
        result
            .lines()
            .last()
            .unwrap()
            .starts_with("0 passed, 0 failed, 0 errors, 1 nondeterministic"),
        "{result:?}"
    );
    let json = run(&[
        "check",
        "--shuffle",
        "8",
        "--format",
        "json",
        "order/lua_configuration",
    ]);
    let statuses: Vec<serde_json::Value> = json_lines(&json.stdout)
        .iter()
        .map(|line| line["status"].clone())
        .collect();
    assert_eq!(statuses, ["nondeterministic"], "{json:?}");
}

// ---- the controller-difference warning ----

#[test]
fn the_controller_difference_warning_lists_json_paths() {
    let dir = tree_copy("mode-difference");
    write(
        &dir,
        &format!("{WEIGHTED}/trafficRouting.lua"),
        "local spec = obj.data.spec\nspec.extra = {}\nreturn { spec = spec }\n",
    );
    let case = read(&dir, &format!("{WEIGHTED}/testdata/traffic_routing.yaml"));
    let (head, _) = case.split_once("expected:\n").unwrap();
    write(
        &dir,
        &format!("{WEIGHTED}/testdata/traffic_routing.yaml"),
        &format!(
            "{head}expected:\n- apiVersion: example.io/v1\n  kind: Weighted\n  metadata:\n    name: demo-route\n  spec:\n    extra: []\n    routes:\n    - name: main\n      destinations:\n      - host: demo\n        weight: 100\n"
        ),
    );
    let result = run_in(&dir, &["check", "--filter", "traffic_routing", WEIGHTED]);
    assert_eq!(result.code, 0, "{result:?}");
    let warning = result
        .lines()
        .into_iter()
        .find(|line| line.contains("warning: the controller would get"))
        .unwrap_or_else(|| panic!("no warning: {result:?}"));
    assert!(
        warning.ends_with(
            "the controller would get something else than this test: spec.extra: [] here, null in the cluster (an empty Lua table encodes as [] in Kruise's test and as null in the controller)"
        ),
        "{warning}"
    );
    assert!(
        !warning.contains("routes"),
        "only differing paths: {warning}"
    );
}

// ---- list diffs by identity ----

#[test]
fn inserting_a_route_reports_that_route_only() {
    let dir = tree_copy("insert-route");
    // The script puts a new route in front of the existing ones.
    write(
        &dir,
        &format!("{WEIGHTED}/trafficRouting.lua"),
        "local spec = obj.data.spec\ntable.insert(spec.routes, 1, { name = \"canary\" })\nreturn { spec = spec }\n",
    );
    let case_path = format!("{WEIGHTED}/testdata/traffic_routing.yaml");
    let case = read(&dir, &case_path);
    let (head, _) = case.split_once("expected:\n").unwrap();
    // Expected: the original's routes, plus a second one that the script keeps as well.
    let original_routes = "    routes:\n    - name: main\n      destinations:\n      - host: demo\n        weight: 100\n    - name: second\n";
    let head = head.replace(
        "    routes:\n    - name: main\n      destinations:\n      - host: demo\n        weight: 100\n",
        original_routes,
    );
    write(
        &dir,
        &case_path,
        &format!(
            "{head}expected:\n- apiVersion: example.io/v1\n  kind: Weighted\n  metadata:\n    name: demo-route\n  spec:\n{original_routes}"
        ),
    );
    let result = run_in(&dir, &["check", "--filter", "traffic_routing", WEIGHTED]);
    assert_eq!(result.code, 1, "{result:?}");
    let differing: Vec<&str> = result
        .lines()
        .into_iter()
        .filter(|line| line.contains(": expected ") && line.contains(", actual "))
        .collect();
    assert_eq!(differing.len(), 1, "{result:?}");
    assert!(
        differing[0]
            .trim_start()
            .starts_with(r#"spec.routes[0]: expected (absent), actual {"name":"canary"}"#),
        "{result:?}"
    );
}

// ---- --help ----

#[test]
fn help_lists_the_exit_codes_and_check_says_each_step() {
    for args in [&["--help"][..], &["check", "--help"]] {
        let result = run(args);
        assert_eq!(result.code, 0, "{result:?}");
        assert!(result.stdout.contains("Exit codes:"), "{result:?}");
        assert!(
            result.stdout.contains("  2  usage or I/O error"),
            "{result:?}"
        );
        assert!(result.stdout.contains("--deny-warnings"), "{result:?}");
    }
    let check = run(&["check", "--help"]);
    assert!(
        check.stdout.contains("Run each step of every test case"),
        "{check:?}"
    );
    let cli_doc = std::fs::read_to_string(common::workspace().join("docs/CLI.md")).unwrap();
    assert!(
        cli_doc.contains("run each step of every test case"),
        "docs/CLI.md and `check --help` say the same"
    );
}
