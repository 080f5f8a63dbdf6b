//! End-to-end tests of the `kruise-lua` binary on the fixture trees in `tests/fixtures`:
//! exit codes, every report format, failing/erroring/looping scripts, ConfigMap input,
//! warnings, filters, `--shuffle`, and the `obj` and `run` commands.

mod common;

use std::collections::BTreeMap;

use common::{copy_tree, fixtures, json_lines, json_objects_of, read_case, run, run_in, scratch};
use kruise_lua_engine::luadata::LuaData;
use kruise_lua_engine::runner::{RunOptions, Script, run_custom};
use kruise_lua_engine::yaml::parse_first_document;
use serde_json::Value;

const TREE: &str = "tree/lua_configuration";
const ERRORS: &str = "errors/lua_configuration";
const WEIGHTED_CASE: &str =
    "tree/lua_configuration/example.io/Weighted/testdata/rollout_steps.yaml";
const WEIGHTED_SCRIPT: &str = "tree/lua_configuration/example.io/Weighted/trafficRouting.lua";
const CONFIGMAP: &str = "configmap/kruise-rollout-configuration.yaml";

/// The JSON line of `script_part`'s `case_part` at 0-based YAML `index` (`None`: the case's
/// own line).
fn find<'a>(
    lines: &'a [Value],
    script_part: &str,
    case_part: &str,
    index: Option<u64>,
) -> &'a Value {
    lines
        .iter()
        .find(|line| {
            line["script"].as_str().unwrap().contains(script_part)
                && line["case"].as_str().unwrap().contains(case_part)
                && line["index"].as_u64() == index
        })
        .unwrap_or_else(|| panic!("no line for {script_part} {case_part} {index:?} in {lines:#?}"))
}

// ---- exit codes and usage ----

#[test]
fn passing_tree_exits_0_with_a_summary() {
    let result = run(&["check", TREE]);
    assert_eq!(result.code, 0, "{result:?}");
    let last = *result.lines().last().unwrap();
    assert!(
        last.starts_with("7 passed, 0 failed, 0 errors"),
        "{result:?}"
    );
    assert!(
        result
            .stdout
            .contains("✓ tree/lua_configuration/example.io/Weighted/trafficRouting.lua"),
        "{result:?}"
    );
    assert!(
        result.stdout.contains("  ✓ testdata/rollout_steps.yaml"),
        "{result:?}"
    );
    assert!(result.stdout.contains("      ✓ step 2"), "{result:?}");
}

#[test]
fn production_mode_also_passes_the_tree() {
    let result = run(&["check", "--mode", "production", TREE]);
    assert_eq!(result.code, 0, "{result:?}");
}

#[test]
fn default_path_is_lua_configuration() {
    let result = run_in(&fixtures().join("tree"), &["check"]);
    assert_eq!(result.code, 0, "{result:?}");
    assert!(
        result
            .stdout
            .contains("lua_configuration/example.io/HeaderRoute/trafficRouting.lua"),
        "{result:?}"
    );

    let empty = scratch("default-path");
    let result = run_in(&empty, &["check"]);
    assert_eq!(result.code, 2, "{result:?}");
    assert!(
        result
            .stderr
            .contains("lua_configuration: no such file or directory"),
        "{result:?}"
    );
}

#[test]
fn nonexistent_path_exits_2_naming_it() {
    let result = run(&["check", TREE, "no/such/tree"]);
    assert_eq!(result.code, 2, "{result:?}");
    assert!(result.stderr.contains("no/such/tree"), "{result:?}");
    assert!(
        result.stdout.is_empty(),
        "no report on usage errors: {result:?}"
    );
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &["check", "--format", "xml", TREE][..],
        &["check", "--timeout", "0", TREE],
        &["frobnicate"],
        &["obj"],
        &["run", WEIGHTED_SCRIPT],
        &["obj", WEIGHTED_CASE, "--step", "4"],
        &["obj", WEIGHTED_CASE, "--step", "0"],
        &["check", TREE, "--filter", "no-such-thing"],
    ] {
        let result = run(args);
        assert_eq!(result.code, 2, "{args:?}: {result:?}");
        assert!(!result.stderr.is_empty(), "{args:?}: {result:?}");
    }
}

#[test]
fn help_lists_the_commands() {
    let result = run(&["--help"]);
    assert_eq!(result.code, 0, "{result:?}");
    for command in ["check", "obj", "run"] {
        assert!(result.stdout.contains(command), "{result:?}");
    }
    for command in ["check", "obj", "run"] {
        let result = run(&[command, "--help"]);
        assert_eq!(result.code, 0, "{command}: {result:?}");
        assert!(result.stdout.contains("Usage: kruise-lua"), "{result:?}");
    }
}

// ---- failures, errors, warnings ----

#[test]
fn a_changed_expectation_fails_with_its_path_and_diff() {
    let dir = scratch("failing");
    copy_tree(&fixtures().join(TREE), &dir.join("lua_configuration"));
    let case = dir.join("lua_configuration/example.io/Weighted/testdata/rollout_steps.yaml");
    let text = std::fs::read_to_string(&case).unwrap();
    let original = "      - host: demo-canary\n        weight: 50\n";
    assert_eq!(text.matches(original).count(), 1);
    let changed = text.replace(original, "      - host: demo-canary\n        weight: 55\n");
    std::fs::write(&case, &changed).unwrap();
    let changed_line = changed
        .lines()
        .position(|line| line == "        weight: 55")
        .unwrap()
        + 1;

    let result = run_in(&dir, &["check"]);
    assert_eq!(result.code, 1, "{result:?}");
    assert!(
        result.stdout.contains("  ✗ testdata/rollout_steps.yaml"),
        "{result:?}"
    );
    assert!(result.stdout.contains("      ✗ step 2"), "{result:?}");
    assert!(result.stdout.contains("      ✓ step 1"), "{result:?}");
    let field = format!(
        "spec.routes[0].destinations[1].weight: expected 55, actual 50  (lua_configuration/example.io/Weighted/testdata/rollout_steps.yaml:{changed_line})"
    );
    assert!(
        result.stdout.lines().any(|line| line.trim() == field),
        "missing {field}\n{result:?}"
    );
    let diff_removed = result
        .stdout
        .lines()
        .any(|line| line.trim_start().starts_with('-') && line.contains("55"));
    let diff_added = result
        .stdout
        .lines()
        .any(|line| line.trim_start().starts_with('+') && line.contains("50"));
    assert!(diff_removed && diff_added, "unified diff shown: {result:?}");
    assert!(
        result
            .lines()
            .last()
            .unwrap()
            .starts_with("6 passed, 1 failed, 0 errors"),
        "{result:?}"
    );

    let github = run_in(&dir, &["check", "--format", "github"]);
    assert_eq!(github.code, 1);
    let annotation = format!(
        "::error file=lua_configuration/example.io/Weighted/testdata/rollout_steps.yaml,line={changed_line},title=testdata/rollout_steps.yaml step 2%3A spec.routes[0].destinations[1].weight differs::expected 55, actual 50"
    );
    assert!(
        github
            .stdout
            .lines()
            .any(|line| line.starts_with(&annotation)),
        "missing {annotation}\n{github:?}"
    );
}

#[test]
fn runtime_errors_timeouts_and_case_errors() {
    let result = run(&["check", "--timeout", "100", ERRORS]);
    assert_eq!(result.code, 1, "{result:?}");
    let text = &result.stdout;
    assert!(
        text.lines().any(|line| line.trim().starts_with(
            "errors/lua_configuration/example.io/Broken/trafficRouting.lua:4: runtime error"
        )),
        "runtime error at the Lua line: {result:?}"
    );
    // The looping step times out; the steps around it still run and pass.
    let looping = text.split_once("Looping/trafficRouting.lua\n").unwrap().1;
    assert!(looping.contains("      ✓ step 1\n"), "{result:?}");
    assert!(looping.contains("      ! step 2\n"), "{result:?}");
    assert!(looping.contains("      ✓ step 3\n"), "{result:?}");
    assert!(looping.contains("timeout error"), "{result:?}");
    assert!(
        text.contains("no_input.yaml") && text.contains("case error"),
        "{result:?}"
    );
    assert!(
        result
            .lines()
            .last()
            .unwrap()
            .starts_with("3 passed, 0 failed, 3 errors"),
        "{result:?}"
    );
}

#[test]
fn unknown_fields_warn_at_their_line() {
    let result = run(&["check", TREE]);
    let warning = result
        .lines()
        .into_iter()
        .find(|line| line.contains("unknown_field.yaml:11: warning:"))
        .unwrap_or_else(|| panic!("no warning at line 11: {result:?}"));
    assert!(warning.contains("weight"), "{warning}");
    assert_eq!(result.code, 0, "warnings do not fail the run: {result:?}");

    let json = run(&["check", "--format", "json", TREE]);
    let lines = json_lines(&json.stdout);
    let line = find(&lines, "Weighted", "unknown_field.yaml", Some(0));
    let warnings = line["warnings"].as_array().unwrap();
    assert!(
        warnings
            .iter()
            .any(|w| w.as_str().unwrap().contains("unknown_field.yaml:11:")),
        "{line}"
    );
}

// ---- formats ----

#[test]
fn json_lines_have_one_object_per_step() {
    let result = run(&["check", "--format", "json", "--timeout", "100", ERRORS]);
    assert_eq!(result.code, 1, "{result:?}");
    let lines = json_lines(&result.stdout);
    assert_eq!(lines.len(), 6, "{result:?}");
    for line in &lines {
        let object = line.as_object().unwrap();
        for key in [
            "script",
            "case",
            "step",
            "index",
            "status",
            "error_kind",
            "error",
            "line",
            "actual",
            "expected",
            "warnings",
        ] {
            assert!(object.contains_key(key), "{key} missing in {line}");
        }
    }
    let runtime = find(&lines, "Broken/trafficRouting.lua", "steps.yaml", Some(1));
    assert_eq!(
        runtime["script"],
        "errors/lua_configuration/example.io/Broken/trafficRouting.lua"
    );
    assert_eq!(
        runtime["case"],
        "errors/lua_configuration/example.io/Broken/testdata/steps.yaml"
    );
    assert_eq!(
        (runtime["status"].as_str(), runtime["error_kind"].as_str()),
        (Some("error"), Some("runtime"))
    );
    assert_eq!(runtime["line"], 4);
    assert_eq!(runtime["actual"], Value::Null);
    let passing = find(&lines, "Broken/trafficRouting.lua", "steps.yaml", Some(0));
    assert_eq!(passing["status"], "pass");
    assert_eq!(passing["actual"], r#"{"spec":{"weight":20}}"#);
    assert_eq!(passing["actual"], passing["expected"]);
    let timeout = find(&lines, "Looping", "steps.yaml", Some(1));
    assert_eq!(timeout["error_kind"], "timeout");
    for step in [0, 2] {
        assert_eq!(
            find(&lines, "Looping", "steps.yaml", Some(step))["status"],
            "pass"
        );
    }
    let case_error = find(&lines, "Broken", "no_input.yaml", None);
    assert_eq!(
        (
            case_error["status"].as_str(),
            case_error["error_kind"].as_str()
        ),
        (Some("error"), Some("case"))
    );
}

#[test]
fn junit_is_valid_xml_with_a_suite_per_script() {
    use quick_xml::Reader;
    use quick_xml::events::Event;

    let result = run(&["check", "--format", "junit", "--timeout", "100", ERRORS]);
    assert_eq!(result.code, 1, "{result:?}");
    let mut reader = Reader::from_str(&result.stdout);
    let mut suites = Vec::new();
    let mut testcases = Vec::new();
    let mut errors = Vec::new();
    let mut depth = 0i32;
    loop {
        let event = reader
            .read_event()
            .unwrap_or_else(|e| panic!("invalid XML: {e}\n{}", result.stdout));
        let attrs = |start: &quick_xml::events::BytesStart| -> BTreeMap<String, String> {
            start
                .attributes()
                .map(|a| {
                    let a = a.unwrap();
                    (
                        a.key.as_ref().to_string(),
                        a.normalized_value(quick_xml::XmlVersion::Implicit1_0)
                            .unwrap()
                            .into_owned(),
                    )
                })
                .collect()
        };
        match &event {
            Event::Start(start) | Event::Empty(start) => {
                if matches!(event, Event::Start(_)) {
                    depth += 1;
                }
                match start.name().as_ref() {
                    "testsuite" => suites.push(attrs(start)),
                    "testcase" => testcases.push(attrs(start)),
                    "error" => errors.push(attrs(start)),
                    _ => {}
                }
            }
            Event::End(_) => depth -= 1,
            Event::Eof => break,
            _ => {}
        }
    }
    assert_eq!(depth, 0, "balanced elements");
    assert_eq!(suites.len(), 2);
    assert_eq!(
        suites[0]["name"],
        "errors/lua_configuration/example.io/Broken/trafficRouting.lua"
    );
    assert_eq!(
        (suites[0]["tests"].as_str(), suites[0]["errors"].as_str()),
        ("3", "2")
    );
    assert_eq!(
        (suites[1]["tests"].as_str(), suites[1]["errors"].as_str()),
        ("3", "1")
    );
    assert_eq!(testcases.len(), 6);
    assert!(
        testcases
            .iter()
            .any(|t| t["name"] == "testdata/steps.yaml step 2")
    );
    let kinds: Vec<&str> = errors.iter().map(|e| e["type"].as_str()).collect();
    assert_eq!(kinds, ["case", "runtime", "timeout"]);
}

#[test]
fn github_annotations_point_at_lua_and_yaml_lines() {
    let result = run(&["check", "--format", "github", "--timeout", "100", ERRORS]);
    assert_eq!(result.code, 1, "{result:?}");
    let lines = result.lines();
    assert!(
        lines.iter().any(|l| l.starts_with(
            "::error file=errors/lua_configuration/example.io/Broken/trafficRouting.lua,line=4,title=testdata/steps.yaml step 2%3A runtime error::"
        )),
        "{result:?}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with(
            "::error file=errors/lua_configuration/example.io/Looping/trafficRouting.lua,line=3,title=testdata/steps.yaml step 2%3A timeout error::"
        )),
        "the timeout points at the looping line: {result:?}"
    );
    for line in &lines[..lines.len() - 1] {
        assert!(
            // `::notice` says a step the intent check could not verify (issue 20).
            line.starts_with("::error ")
                || line.starts_with("::warning ")
                || line.starts_with("::notice "),
            "{line}"
        );
        assert!(!line.contains('\r'));
    }
}

#[test]
fn colour_only_when_asked_or_on_a_terminal() {
    let plain = run(&["check", TREE]);
    assert!(
        !plain.stdout.contains('\x1b'),
        "NO_COLOR and no TTY: {plain:?}"
    );
    let coloured = run(&["check", "--color", "always", TREE]);
    assert!(coloured.stdout.contains("\x1b[32m✓\x1b[0m"), "{coloured:?}");
}

// ---- inputs: ConfigMaps, single scripts, filters ----

#[test]
fn runtime_errors_in_a_double_quoted_configmap_script_name_their_manifest_line() {
    let dir = common::scratch("cm-quoted-error");
    std::fs::create_dir_all(dir.join("tree/example.io/Route/testdata")).unwrap();
    std::fs::write(
        dir.join("tree/example.io/Route/testdata/c.yaml"),
        "rollout:\n  spec:\n    strategy:\n      canary:\n        trafficRoutings:\n        - service: web\n        steps:\n        - traffic: \"20%\"\noriginal:\n  apiVersion: example.io/v1alpha1\n  kind: Route\n  metadata:\n    name: web\n  spec: {}\nexpected:\n- apiVersion: example.io/v1alpha1\n  kind: Route\n  metadata:\n    name: web\n  spec: {}\n",
    )
    .unwrap();
    // Script line 3 is on manifest line 7 (the key's line), not 7 + 2.
    std::fs::write(
        dir.join("cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kruise-rollout-configuration\n  namespace: kruise-rollout\ndata:\n  lua.traffic.routing.Route.example.io: \"local a = 1\\nlocal b = 2\\nerror('boom on script line 3')\\nreturn obj.data\\n\"\n  lua.traffic.routing.Other.example.io: |\n    local unused = 1\n    return obj.data\n",
    )
    .unwrap();
    let result = common::run_in(&dir, &["check", "tree", "cm.yaml", "--no-intent"]);
    assert!(
        result
            .stdout
            .contains("cm.yaml:7: runtime error: boom on script line 3"),
        "{result:?}"
    );
    let json = common::run_in(
        &dir,
        &[
            "check",
            "--format",
            "json",
            "tree",
            "cm.yaml",
            "--no-intent",
        ],
    );
    let lines = json_lines(&json.stdout);
    let error = lines
        .iter()
        .find(|l| l["error_kind"] == "runtime")
        .unwrap_or_else(|| panic!("{json:?}"));
    assert_eq!(error["line"], 7, "{json:?}");
}

#[test]
fn configmap_scripts_run_with_testdata_from_a_tree() {
    let result = run(&[
        "check",
        "--format",
        "json",
        "configmap/lua_configuration",
        CONFIGMAP,
    ]);
    assert_eq!(result.code, 1, "the broken Mirror edit fails: {result:?}");
    let lines = json_objects_of(&result.stdout, None);
    assert_eq!(lines.len(), 3, "{result:?}");
    let split = format!("{CONFIGMAP}#lua.traffic.routing.Split.example.io");
    for (line, step) in lines[..2].iter().zip(1..) {
        assert_eq!(line["script"], split.as_str());
        assert_eq!(
            line["case"],
            "configmap/lua_configuration/example.io/Split/testdata/split.yaml"
        );
        assert_eq!(
            (line["step"].as_u64(), line["status"].as_str()),
            (Some(step), Some("pass")),
            "{line}"
        );
    }
    let mirror = &lines[2];
    assert_eq!(
        mirror["script"],
        format!("{CONFIGMAP}#lua.traffic.routing.Mirror.example.io").as_str()
    );
    assert_eq!(mirror["error_kind"], "runtime");
    assert_eq!(
        mirror["line"], 12,
        "Lua line 2 of a script starting at manifest line 11"
    );

    let human = run(&["check", "configmap/lua_configuration", CONFIGMAP]);
    assert!(
        human.stdout.contains(&format!(
            "{CONFIGMAP} [lua.traffic.routing.Split.example.io]"
        )),
        "{human:?}"
    );
    assert!(
        human.stdout.contains(&format!(
            "{CONFIGMAP}:12: runtime error: attempt to index a non-table object"
        )),
        "{human:?}"
    );
    assert!(
        human.stdout.contains("skipped: no test cases"),
        "Weighted has no testdata here: {human:?}"
    );
}

#[test]
fn bundled_custom_scripts_win_over_configmap_ones() {
    // Kruise reads a custom provider's bundled script first: the ConfigMap's Weighted is unused.
    let result = run(&["check", TREE, CONFIGMAP]);
    assert_eq!(result.code, 0, "{result:?}");
    assert!(
        result.stdout.contains(
            "skipped: Kruise runs the bundled script for example.io/Weighted (tree/lua_configuration/example.io/Weighted/trafficRouting.lua); this ConfigMap script is never read"
        ),
        "{result:?}"
    );
    let json = run(&["check", "--format", "json", TREE, CONFIGMAP]);
    let lines = json_objects_of(&json.stdout, None);
    assert_eq!(lines.len(), 7, "only the tree's steps run: {json:?}");
    assert!(
        lines
            .iter()
            .all(|l| l["script"].as_str().unwrap().starts_with("tree/"))
    );
    // The ConfigMap script never read says so in JSON too, as an object of its own.
    let skipped = json_objects_of(&json.stdout, Some("skipped"));
    assert!(
        skipped.iter().any(|l| l["script"]
            == format!("{CONFIGMAP}#lua.traffic.routing.Weighted.example.io").as_str()
            && l["message"]
                .as_str()
                .unwrap()
                .ends_with("this ConfigMap script is never read")),
        "{json:?}"
    );
}

#[test]
fn ingress_class_scripts_run_their_cases_and_configmap_ones_replace_them() {
    let tree = run(&["check", "--format", "json", "ingress/lua_configuration"]);
    assert_eq!(tree.code, 0, "{tree:?}");
    let lines = json_lines(&tree.stdout);
    assert_eq!(lines.len(), 2, "{tree:?}");
    assert!(
        lines
            .iter()
            .all(|l| l["script"] == "ingress/lua_configuration/trafficrouting_ingress/demo.lua")
    );

    let single = run(&[
        "check",
        "ingress/lua_configuration/trafficrouting_ingress/demo.lua",
    ]);
    assert_eq!(single.code, 0, "{single:?}");
    assert!(
        single
            .lines()
            .last()
            .unwrap()
            .starts_with("2 passed, 0 failed"),
        "{single:?}"
    );

    // Kruise reads an ingress class's ConfigMap script before the bundled one.
    let with_configmap = run(&[
        "check",
        "--format",
        "json",
        "ingress/lua_configuration",
        "ingress/configmap.yaml",
    ]);
    assert_eq!(with_configmap.code, 1, "{with_configmap:?}");
    let lines = json_objects_of(&with_configmap.stdout, None);
    assert_eq!(lines.len(), 2, "{with_configmap:?}");
    let skipped = json_objects_of(&with_configmap.stdout, Some("skipped"));
    assert_eq!(skipped.len(), 1, "{with_configmap:?}");
    assert_eq!(
        skipped[0]["script"],
        "ingress/lua_configuration/trafficrouting_ingress/demo.lua"
    );
    for line in &lines {
        assert_eq!(
            line["script"],
            "ingress/configmap.yaml#lua.traffic.routing.ingress.demo"
        );
        assert_eq!(line["status"], "fail");
    }
    let human = run(&[
        "check",
        "ingress/lua_configuration",
        "ingress/configmap.yaml",
    ]);
    assert!(
        human.stdout.contains(
            "skipped: the ConfigMap script for ingress class `demo` (ingress/configmap.yaml#lua.traffic.routing.ingress.demo) replaces it"
        ),
        "{human:?}"
    );
    assert!(
        human
            .stdout
            .contains(r#"annotations["demo.io/canary-weight"]: expected (absent), actual "-1""#),
        "{human:?}"
    );
}

/// Two manifests with a script for the same provider (a dev and a prod variant): Kruise reads
/// one `kruise-rollout-configuration` ConfigMap, so the first given is taken and runs the
/// cases, and the other is listed skipped naming it, in every report format; the bundled
/// ingress-class script is listed skipped once, naming the script taken. So for a custom
/// provider without a bundled script. (Defect: the last ingress-class script given replaced
/// the first without a word and the bundled script was listed twice, once as replaced by the
/// script that did not run; the second custom one was dropped without a word.)
#[test]
fn of_two_configmap_scripts_for_one_provider_the_first_given_is_taken() {
    let dir = scratch("two-configmaps");
    let tree = dir.join("lua_configuration");
    copy_tree(&fixtures().join("ingress/lua_configuration"), &tree);
    copy_tree(
        &fixtures().join("tree/lua_configuration/example.io/Weighted/testdata"),
        &tree.join("example.io/Split/testdata"),
    );
    let indented =
        |script: &str| -> String { script.lines().map(|line| format!("    {line}\n")).collect() };
    let demo = std::fs::read_to_string(tree.join("trafficrouting_ingress/demo.lua")).unwrap();
    let split = std::fs::read_to_string(
        fixtures().join("tree/lua_configuration/example.io/Weighted/trafficRouting.lua"),
    )
    .unwrap();
    let manifest = |tail: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kruise-rollout-configuration\ndata:\n  lua.traffic.routing.ingress.demo: |\n{}  lua.traffic.routing.Split.example.io: |\n{}",
            indented(&format!("{demo}{tail}")),
            indented(&format!("{split}{tail}")),
        )
    };
    std::fs::write(dir.join("a-config.yaml"), manifest("")).unwrap();
    std::fs::write(
        dir.join("b-config.yaml"),
        manifest("error(\"b is broken\")\n"),
    )
    .unwrap();
    fn args(format: &str) -> Vec<&str> {
        vec![
            "check",
            "--format",
            format,
            "lua_configuration",
            "a-config.yaml",
            "b-config.yaml",
        ]
    }
    let taken = |provider: &str, key: &str| {
        format!(
            "another ConfigMap script for {provider} (a-config.yaml#{key}) is taken: Kruise reads one kruise-rollout-configuration ConfigMap"
        )
    };
    let (demo_key, split_key) = (
        "lua.traffic.routing.ingress.demo",
        "lua.traffic.routing.Split.example.io",
    );
    let demo_taken = taken("ingress class `demo`", demo_key);
    let split_taken = taken("example.io/Split", split_key);
    let replaced = format!(
        "the ConfigMap script for ingress class `demo` (a-config.yaml#{demo_key}) replaces it"
    );

    let human = run_in(&dir, &args("human"));
    assert_eq!(human.code, 0, "a's scripts run, b's never: {human:?}");
    for expected in [
        format!("- b-config.yaml [{demo_key}]\n    skipped: {demo_taken}\n"),
        format!("- b-config.yaml [{split_key}]\n    skipped: {split_taken}\n"),
        format!("- lua_configuration/trafficrouting_ingress/demo.lua\n    skipped: {replaced}\n"),
    ] {
        assert_eq!(
            human.stdout.matches(&expected).count(),
            1,
            "{expected}\n{human:?}"
        );
    }
    let summary = *human.lines().last().unwrap();
    assert!(
        summary.starts_with("7 passed, 0 failed, 0 errors")
            && summary.ends_with("3 scripts skipped"),
        "{human:?}"
    );

    let json = run_in(&dir, &args("json"));
    assert_eq!(json.code, 0, "{json:?}");
    let skipped: std::collections::BTreeSet<(String, String)> =
        json_objects_of(&json.stdout, Some("skipped"))
            .iter()
            .map(|l| (l["script"].to_string(), l["message"].to_string()))
            .collect();
    let expected_skipped: std::collections::BTreeSet<(String, String)> = [
        (format!("b-config.yaml#{demo_key}"), &demo_taken),
        (format!("b-config.yaml#{split_key}"), &split_taken),
        (
            "lua_configuration/trafficrouting_ingress/demo.lua".to_string(),
            &replaced,
        ),
    ]
    .iter()
    .map(|(script, reason)| {
        (
            Value::from(script.as_str()).to_string(),
            Value::from(reason.as_str()).to_string(),
        )
    })
    .collect();
    assert_eq!(skipped, expected_skipped, "{json:?}");
    let lines = json_objects_of(&json.stdout, None);
    let scripts: std::collections::BTreeSet<&str> = lines
        .iter()
        .map(|l| l["script"].as_str().unwrap())
        .collect();
    assert_eq!(
        scripts,
        [
            format!("a-config.yaml#{demo_key}"),
            format!("a-config.yaml#{split_key}")
        ]
        .iter()
        .map(String::as_str)
        .collect(),
        "{json:?}"
    );

    let junit = run_in(&dir, &args("junit"));
    for reason in [&demo_taken, &split_taken, &replaced] {
        let skipped = format!("<skipped message=\"{reason}\"/>");
        assert_eq!(
            junit.stdout.matches(&skipped).count(),
            1,
            "{skipped}\n{junit:?}"
        );
    }
    let github = run_in(&dir, &args("github"));
    for (script, reason) in [
        (format!("b-config.yaml#{demo_key}"), &demo_taken),
        (format!("b-config.yaml#{split_key}"), &split_taken),
        (
            "lua_configuration/trafficrouting_ingress/demo.lua".to_string(),
            &replaced,
        ),
    ] {
        let notice = format!("{script} skipped::{reason}");
        assert_eq!(
            github.stdout.matches(&notice).count(),
            1,
            "{notice}\n{github:?}"
        );
    }
    let sarif: Value = serde_json::from_str(&run_in(&dir, &args("sarif")).stdout).unwrap();
    let skipped: Vec<&str> = sarif["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["ruleId"] == "check/skipped")
        .map(|r| r["message"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        skipped,
        vec![
            format!("lua_configuration/trafficrouting_ingress/demo.lua skipped: {replaced}"),
            format!("b-config.yaml#{demo_key} skipped: {demo_taken}"),
            format!("b-config.yaml#{split_key} skipped: {split_taken}"),
        ],
        "{sarif:#}"
    );

    // Given the other way round, b is taken: it runs the cases, and fails.
    let reversed = run_in(
        &dir,
        &[
            "check",
            "lua_configuration",
            "b-config.yaml",
            "a-config.yaml",
        ],
    );
    assert_eq!(reversed.code, 1, "{reversed:?}");
    assert!(
        reversed.stdout.contains(&format!(
            "- a-config.yaml [{demo_key}]\n    skipped: another ConfigMap script for ingress class `demo` (b-config.yaml#{demo_key}) is taken"
        )),
        "{reversed:?}"
    );
}

#[test]
fn a_single_script_runs_with_its_sibling_testdata() {
    let result = run(&["check", "--format", "json", WEIGHTED_SCRIPT]);
    assert_eq!(result.code, 0, "{result:?}");
    let lines = json_lines(&result.stdout);
    assert_eq!(lines.len(), 5);
    assert!(lines.iter().all(|l| l["script"] == WEIGHTED_SCRIPT));
}

#[test]
fn filters_select_scripts_or_cases() {
    let by_script = run(&["check", "--format", "json", TREE, "--filter", "HeaderRoute"]);
    assert_eq!(json_lines(&by_script.stdout).len(), 2, "{by_script:?}");
    let by_case = run(&[
        "check",
        "--format",
        "json",
        TREE,
        "--filter",
        "traffic_routing,unknown_field",
    ]);
    let lines = json_lines(&by_case.stdout);
    assert_eq!(lines.len(), 2, "{by_case:?}");
    let repeated = run(&[
        "check",
        "--format",
        "json",
        TREE,
        "--filter",
        "traffic_routing",
        "--filter",
        "header_steps",
    ]);
    assert_eq!(json_lines(&repeated.stdout).len(), 3, "{repeated:?}");
}

// ---- --shuffle ----

#[test]
fn shuffle_reports_scripts_that_depend_on_pairs_order() {
    let sorted = run(&["check", "order/lua_configuration"]);
    assert_eq!(
        sorted.code, 0,
        "sorted key order gives the expected list: {sorted:?}"
    );
    let shuffled = run(&["check", "--shuffle", "8", "order/lua_configuration"]);
    assert_eq!(shuffled.code, 1, "{shuffled:?}");
    assert!(shuffled.stdout.contains("nondeterministic"), "{shuffled:?}");
    assert!(
        shuffled
            .lines()
            .last()
            .unwrap()
            .contains("1 nondeterministic"),
        "{shuffled:?}"
    );

    let stable = run(&["check", "--shuffle", "4", TREE]);
    assert_eq!(
        stable.code, 0,
        "ipairs-only scripts are deterministic: {stable:?}"
    );
}

/// `--shuffle` is bounded (0 to 1000): 4294967295 aborted allocating 96 GiB for the reruns'
/// results up front, and 1000000 ran for hours. Out of range is a usage error naming the range.
#[test]
fn shuffle_out_of_range_is_a_usage_error() {
    for n in ["4294967295", "1001"] {
        let result = common::run_in_within(&fixtures(), 20, &["check", "--shuffle", n, TREE]);
        assert_eq!(result.code, 2, "{n}: {result:?}");
        assert!(
            result.stderr.contains("--shuffle <N>") && result.stderr.contains("0..=1000"),
            "{n}: {result:?}"
        );
    }
    let top = common::run_in_within(
        &fixtures(),
        60,
        &["check", "--shuffle", "1000", "order/lua_configuration"],
    );
    assert_eq!(top.code, 1, "{top:?}");
    assert!(
        top.stdout.contains("in 1001 runs with shuffled key order"),
        "{top:?}"
    );
}

// ---- obj ----

/// Runs `probe` once with the engine's `obj` for `obj_source`'s step and once after
/// `obj_source` has replaced the global `obj`; both must give the same result.
fn assert_obj_source_loads(obj_source: &str, expected: &LuaData) {
    let probe = "return { spec = { echo = obj } }";
    let options = RunOptions::default();
    let reference = run_custom(&Script::new(probe), expected, &options);
    let loaded = run_custom(
        &Script::new(format!("{obj_source}\n{probe}")),
        &LuaData::default(),
        &options,
    );
    let reference = reference.harness.expect("probe runs on the engine's obj");
    let loaded = loaded
        .harness
        .unwrap_or_else(|e| panic!("obj source does not load: {e}\n{obj_source}"));
    assert_eq!(
        loaded.to_canonical_json(),
        reference.to_canonical_json(),
        "{obj_source}"
    );
}

#[test]
fn obj_prints_loadable_lua_per_step() {
    let case = read_case(&fixtures().join(WEIGHTED_CASE));

    // Steps are numbered from 1: step 2 is `steps[1]`.
    let single = run(&["obj", WEIGHTED_CASE, "--step", "2"]);
    assert_eq!(single.code, 0, "{single:?}");
    assert!(single.stdout.starts_with("-- "), "{single:?}");
    assert!(
        single.stdout.contains(WEIGHTED_CASE) && single.stdout.contains("step 2 of 3"),
        "{single:?}"
    );
    assert_eq!(single.stdout.matches("obj = {").count(), 1);
    assert!(
        single.stdout.contains("  canaryWeight = 50,\n"),
        "{single:?}"
    );
    assert!(
        single.stdout.contains("  stableWeight = 50,\n"),
        "{single:?}"
    );
    assert!(
        !single.stdout.contains(".0,"),
        "integral numbers without .0: {single:?}"
    );
    assert_obj_source_loads(&single.stdout, &case.steps[1].obj);

    let all = run(&["obj", WEIGHTED_CASE]);
    assert_eq!(all.code, 0, "{all:?}");
    assert_eq!(all.stdout.matches("obj = {").count(), 3, "{all:?}");
    // The whole output is one chunk too; the last step's obj wins.
    assert_obj_source_loads(&all.stdout, &case.steps[2].obj);
    for (index, chunk) in all.stdout.split("\n\n").enumerate() {
        assert_obj_source_loads(chunk, &case.steps[index].obj);
    }
}

#[test]
fn obj_of_a_traffic_routing_case_and_header_matches() {
    let path = "tree/lua_configuration/example.io/HeaderRoute/testdata/header_steps.yaml";
    let case = read_case(&fixtures().join(path));
    let result = run(&["obj", path, "--step", "1"]);
    assert_eq!(result.code, 0, "{result:?}");
    assert!(result.stdout.contains("\".*Android.*\""), "{result:?}");
    assert_obj_source_loads(&result.stdout, &case.steps[0].obj);
}

// ---- run ----

#[test]
fn run_prints_the_resulting_resources() {
    let result = run(&["run", WEIGHTED_SCRIPT, "--case", WEIGHTED_CASE]);
    assert_eq!(result.code, 0, "{result:?}");
    let case = read_case(&fixtures().join(WEIGHTED_CASE));
    let documents: Vec<&str> = result.stdout.split("---\n").collect();
    assert_eq!(documents.len(), 3, "{result:?}");
    for (index, document) in documents.iter().enumerate() {
        let parsed = parse_first_document(document).unwrap().unwrap();
        assert_eq!(
            parsed.to_json(),
            case.expected[index].node.to_json(),
            "step {index}:\n{document}"
        );
    }
    assert!(
        result.stdout.contains("example.io/canary-weight: \"20\""),
        "{result:?}"
    );

    let one = run(&[
        "run",
        WEIGHTED_SCRIPT,
        "--case",
        WEIGHTED_CASE,
        "--step",
        "3",
    ]);
    assert_eq!(one.code, 0, "{one:?}");
    assert!(!one.stdout.contains("---"), "{one:?}");
    let parsed = parse_first_document(&one.stdout).unwrap().unwrap();
    assert_eq!(parsed.to_json(), case.expected[2].node.to_json(), "{one:?}");
}

#[test]
fn run_reports_script_errors_on_stderr() {
    let script = "errors/lua_configuration/example.io/Broken/trafficRouting.lua";
    let case = "errors/lua_configuration/example.io/Broken/testdata/steps.yaml";
    let result = run(&["run", script, "--case", case]);
    assert_eq!(result.code, 1, "{result:?}");
    assert!(
        result
            .stderr
            .contains(&format!("{script}:4: step 2: runtime error")),
        "{result:?}"
    );
    assert!(
        result.stdout.contains("weight: 20"),
        "step 1 still printed: {result:?}"
    );
}

// ---- snapshots of the reports ----

#[test]
fn snapshot_human_report_of_the_tree() {
    let result = run(&["check", TREE]);
    insta::assert_snapshot!("check_tree_human", result.stdout);
}

#[test]
fn snapshot_json_report_of_the_tree() {
    let result = run(&["check", "--format", "json", TREE]);
    insta::assert_snapshot!("check_tree_json", result.stdout);
}

#[test]
fn snapshot_human_report_of_errors() {
    let result = run(&["check", "--timeout", "100", ERRORS]);
    insta::assert_snapshot!("check_errors_human", result.stdout);
}

#[test]
fn snapshot_json_report_of_errors() {
    let result = run(&["check", "--format", "json", "--timeout", "100", ERRORS]);
    insta::assert_snapshot!("check_errors_json", result.stdout);
}

#[test]
fn run_an_ingress_script_prints_the_canary_ingress() {
    let result = run(&[
        "run",
        "ingress/lua_configuration/trafficrouting_ingress/demo.lua",
        "--case",
        "ingress/lua_configuration/trafficrouting_ingress/testdata/demo/weights.yaml",
    ]);
    assert_eq!(result.code, 0, "{result:?}");
    let documents: Vec<&str> = result.stdout.split("---\n").collect();
    assert_eq!(documents.len(), 2, "{result:?}");
    let first = parse_first_document(documents[0])
        .unwrap()
        .unwrap()
        .to_json();
    let annotations = |doc: &kruise_lua_engine::JsonValue| {
        let kruise_lua_engine::JsonValue::Object(top) = doc else {
            panic!("{doc:?}")
        };
        let kruise_lua_engine::JsonValue::Object(meta) = &top["metadata"] else {
            panic!()
        };
        meta.get("annotations").map(|a| a.to_canonical_json())
    };
    assert_eq!(
        annotations(&first).as_deref(),
        Some(
            r#"{"demo.io/canary":"true","demo.io/canary-weight":"30","demo.io/service":"shop-canary"}"#
        )
    );
    // The rest of the Ingress is the original's.
    assert!(
        documents[0].contains("host: shop.example.com"),
        "{result:?}"
    );
}

/// Reported defect: from inside a tree, an ingress-class script or case given by a relative
/// path (`trafficrouting_ingress/<class>.lua`) was "not a script Kruise would find", since the
/// walk from `.` names it `./trafficrouting_ingress/<class>.lua`.
#[test]
fn ingress_paths_relative_to_the_tree_root_are_found() {
    let root = fixtures().join("ingress/lua_configuration");
    for path in [
        "trafficrouting_ingress/demo.lua",
        "trafficrouting_ingress/testdata/demo/weights.yaml",
    ] {
        let result = run_in(&root, &["check", path]);
        assert_eq!(result.code, 0, "{path}: {result:?}");
        assert!(result.stdout.contains("demo.lua"), "{path}: {result:?}");
    }
}
