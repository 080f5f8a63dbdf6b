//! End-to-end tests of `kruise-lua new`: the scaffold passes `check` as created (custom and
//! ingress), its three cases have the recommended step shapes, the script never errors on the
//! library's cases, existing files are never overwritten, and bad names are usage errors.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::{copy_tree, json_lines, read_case, run_in, scratch, workspace};
use kruise_lua_engine::luadata::LuaData;
use kruise_lua_engine::testcase::{CaseKind, TestCase};
use kruise_lua_engine::yaml::{PathSeg, YamlNode, YamlValue};
use serde_json::Value;

const CUSTOM_FILES: [&str; 4] = [
    "lua_configuration/example.io/Widget/trafficRouting.lua",
    "lua_configuration/example.io/Widget/testdata/header_matches_and.yaml",
    "lua_configuration/example.io/Widget/testdata/header_matches_or.yaml",
    "lua_configuration/example.io/Widget/testdata/weights.yaml",
];

const INGRESS_FILES: [&str; 4] = [
    "lua_configuration/trafficrouting_ingress/acme.lua",
    "lua_configuration/trafficrouting_ingress/testdata/acme/header_matches_and.yaml",
    "lua_configuration/trafficrouting_ingress/testdata/acme/header_matches_or.yaml",
    "lua_configuration/trafficrouting_ingress/testdata/acme/weights.yaml",
];

/// Every file below `dir`, as sorted paths relative to it with forward slashes.
fn files_below(dir: &Path) -> Vec<String> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(base, &path, out);
            } else {
                let relative = path.strip_prefix(base).unwrap();
                let parts: Vec<String> = relative
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                out.push(parts.join("/"));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

fn sorted(paths: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = paths.iter().map(|p| p.to_string()).collect();
    out.sort();
    out
}

fn node<'a>(root: &'a YamlNode, keys: &[&str]) -> &'a YamlNode {
    keys.iter().fold(root, |node, key| {
        node.get(key)
            .unwrap_or_else(|| panic!("no `{key}` on the way to {keys:?}"))
    })
}

fn first_item(node: &YamlNode) -> &YamlNode {
    node.at_path(&[PathSeg::Index(0)])
        .expect("a sequence with an item")
}

/// A string scalar's text (anything else fails the test: YAML must not retype the names).
fn text(node: &YamlNode) -> String {
    match &node.value {
        YamlValue::String(text) => text.clone(),
        other => panic!("not a string: {other:?}"),
    }
}

/// The header conditions of each match of a step, as (type, name, value).
fn header_groups(step: &LuaData) -> Vec<Vec<(Option<String>, String, String)>> {
    step.matches
        .as_ref()
        .expect("the step has matches")
        .iter()
        .map(|m| {
            m.headers
                .as_ref()
                .expect("the match has headers")
                .iter()
                .map(|h| (h.match_type.clone(), h.name.clone(), h.value.clone()))
                .collect()
        })
        .collect()
}

/// Asserts the three cases' step shapes, the stable service, and that every expectation equals
/// the original (what the fresh script returns; for an ingress class, only the annotations
/// are compared).
fn assert_three_strategies(testdata: &Path, service: &str, ingress: bool) {
    let and = read_case(&testdata.join("header_matches_and.yaml"));
    let or = read_case(&testdata.join("header_matches_or.yaml"));
    let weights = read_case(&testdata.join("weights.yaml"));

    assert_eq!(and.steps.len(), 1);
    let groups = header_groups(&and.steps[0].obj);
    assert_eq!(groups.len(), 1, "AND: one match");
    assert_eq!(groups[0].len(), 2, "AND: two headers in one list");
    assert_ne!(groups[0][0].1, groups[0][1].1, "AND: two different headers");
    assert_eq!(and.steps[0].obj.canary_weight, -1, "AND: no traffic set");

    assert_eq!(or.steps.len(), 1);
    let groups = header_groups(&or.steps[0].obj);
    assert_eq!(groups.len(), 2, "OR: two matches");
    assert!(
        groups.iter().all(|headers| headers.len() == 1),
        "{groups:?}"
    );
    assert_eq!(or.steps[0].obj.canary_weight, -1, "OR: no traffic set");

    let shares: Vec<i32> = weights.steps.iter().map(|s| s.obj.canary_weight).collect();
    assert_eq!(shares, [20, 50, 100]);
    assert!(weights.steps.iter().all(|s| s.obj.matches.is_none()));
    assert!(
        weights
            .steps
            .iter()
            .all(|s| s.obj.stable_weight + s.obj.canary_weight == 100)
    );

    for case in [&and, &or, &weights] {
        assert_eq!(case.kind, CaseKind::Rollout);
        assert!(case.warnings.is_empty(), "{:?}", case.warnings);
        assert_eq!(case.expected.len(), case.steps.len());
        for (step, expected) in case.steps.iter().zip(&case.expected) {
            assert_eq!(step.obj.stable_service, service);
            assert_eq!(step.obj.canary_service, format!("{service}-canary"));
            if ingress {
                assert!(step.obj.data.annotations.is_some());
                assert_eq!(expected.data.annotations, step.obj.data.annotations);
            } else {
                assert_eq!(
                    expected.data, *step.obj.data,
                    "expected equals the original"
                );
            }
        }
    }
}

fn original_kind_and_version(case: &TestCase) -> (String, String) {
    let original = node(&case.root, &["original"]);
    (
        text(node(original, &["kind"])),
        text(node(original, &["apiVersion"])),
    )
}

// ---- a fresh scaffold passes check ----

#[test]
fn custom_scaffold_passes_check() {
    let dir = scratch("new-custom");
    let created = run_in(&dir, &["new", "example.io/Widget"]);
    assert_eq!(created.code, 0, "{created:?}");
    for file in CUSTOM_FILES {
        assert!(
            created.stdout.contains(&format!("created {file}\n")),
            "{created:?}"
        );
    }
    assert!(
        created
            .stdout
            .contains("kruise-lua check lua_configuration/example.io/Widget\n"),
        "{created:?}"
    );
    // Exactly the four files: no temporary files left behind.
    assert_eq!(files_below(&dir), sorted(&CUSTOM_FILES));

    for mode in ["harness", "production"] {
        let check = run_in(
            &dir,
            &[
                "check",
                "--mode",
                mode,
                "lua_configuration/example.io/Widget",
            ],
        );
        assert_eq!(check.code, 0, "{check:?}");
        assert!(
            check
                .lines()
                .last()
                .unwrap()
                .starts_with("5 passed, 0 failed, 0 errors"),
            "{check:?}"
        );
    }
    let shuffled = run_in(&dir, &["check", "--shuffle", "3", "lua_configuration"]);
    assert_eq!(shuffled.code, 0, "{shuffled:?}");
}

#[test]
fn ingress_scaffold_passes_check() {
    let dir = scratch("new-ingress");
    let created = run_in(&dir, &["new", "ingress/acme"]);
    assert_eq!(created.code, 0, "{created:?}");
    assert_eq!(files_below(&dir), sorted(&INGRESS_FILES));
    assert!(
        created
            .stdout
            .contains("kruise-lua check lua_configuration/trafficrouting_ingress/acme.lua\n"),
        "{created:?}"
    );
    for target in [
        "lua_configuration",
        "lua_configuration/trafficrouting_ingress/acme.lua",
    ] {
        let check = run_in(&dir, &["check", target]);
        assert_eq!(check.code, 0, "{check:?}");
        assert!(
            check
                .lines()
                .last()
                .unwrap()
                .starts_with("5 passed, 0 failed, 0 errors"),
            "{check:?}"
        );
    }
}

#[test]
fn custom_cases_cover_the_three_strategies() {
    let dir = scratch("new-shapes");
    let created = run_in(
        &dir,
        &[
            "new",
            "gw.example.com/RouteTable",
            "--root",
            "lib",
            "--service",
            "checkout",
            "--api-version",
            "v2beta1",
        ],
    );
    assert_eq!(created.code, 0, "{created:?}");
    let folder = dir.join("lib/gw.example.com/RouteTable");
    assert_three_strategies(&folder.join("testdata"), "checkout", false);
    for name in [
        "header_matches_and.yaml",
        "header_matches_or.yaml",
        "weights.yaml",
    ] {
        let case = read_case(&folder.join("testdata").join(name));
        let reference = first_item(node(
            first_item(node(
                &case.root,
                &["rollout", "spec", "strategy", "canary", "trafficRoutings"],
            )),
            &["customNetworkRefs"],
        ));
        assert_eq!(
            text(node(reference, &["apiVersion"])),
            "gw.example.com/v2beta1"
        );
        assert_eq!(text(node(reference, &["kind"])), "RouteTable");
        assert_eq!(
            original_kind_and_version(&case),
            (
                "RouteTable".to_string(),
                "gw.example.com/v2beta1".to_string()
            )
        );
        // Every expectation carries a comment telling the author what to put there.
        let source = fs::read_to_string(folder.join("testdata").join(name)).unwrap();
        let todos = source.matches("# TODO step ").count();
        assert_eq!(todos, case.steps.len(), "{name}");
    }
    let check = run_in(&dir, &["check", "lib"]);
    assert_eq!(check.code, 0, "{check:?}");
}

#[test]
fn ingress_cases_cover_the_three_strategies() {
    let dir = scratch("new-ingress-shapes");
    let created = run_in(&dir, &["new", "ingress/acme", "--service", "shop"]);
    assert_eq!(created.code, 0, "{created:?}");
    let testdata = dir.join("lua_configuration/trafficrouting_ingress/testdata/acme");
    assert_three_strategies(&testdata, "shop", true);
    let case = read_case(&testdata.join("weights.yaml"));
    assert_eq!(
        original_kind_and_version(&case),
        ("Ingress".to_string(), "networking.k8s.io/v1".to_string())
    );
    let annotations = case.steps[0].obj.data.annotations.as_ref();
    assert!(
        annotations.is_some_and(|map| !map.is_empty()),
        "the canary Ingress has annotations"
    );
    let reference = node(
        first_item(node(
            &case.root,
            &["rollout", "spec", "strategy", "canary", "trafficRoutings"],
        )),
        &["ingress"],
    );
    assert_eq!(text(node(reference, &["classType"])), "acme");
}

/// The scaffolded script reads every shape of `obj` the library's cases produce (paths only,
/// query params, header modifiers, TrafficRouting CRs, no spec, …) without a script error.
#[test]
fn scaffold_scripts_never_error_on_the_library_cases() {
    let dir = scratch("new-library");
    assert_eq!(run_in(&dir, &["new", "example.io/Widget"]).code, 0);
    assert_eq!(run_in(&dir, &["new", "ingress/acme"]).code, 0);
    let custom = fs::read_to_string(dir.join(CUSTOM_FILES[0])).unwrap();
    let ingress = fs::read_to_string(dir.join(INGRESS_FILES[0])).unwrap();

    // A copy of the library with every script replaced by the matching scaffold.
    let library = workspace().join("lua_configuration");
    let tree = dir.join("library");
    copy_tree(&library, &tree);
    let mut replaced = 0;
    for file in files_below(&tree) {
        let path = tree.join(&file);
        if file.ends_with("/trafficRouting.lua") {
            fs::write(&path, &custom).unwrap();
            replaced += 1;
        } else if file.starts_with("trafficrouting_ingress/")
            && file.ends_with(".lua")
            && !file.contains("/testdata/")
        {
            fs::write(&path, &ingress).unwrap();
            replaced += 1;
        }
    }
    assert!(replaced >= 10, "only {replaced} scripts in the library");

    let check = run_in(&dir, &["check", "--format", "json", "library"]);
    let lines = json_lines(&check.stdout);
    assert!(lines.len() > 50, "{check:?}");
    let errors: Vec<&Value> = lines.iter().filter(|l| l["status"] == "error").collect();
    assert!(errors.is_empty(), "{errors:#?}");
    // Sanity: unchanged resources do fail the library's real expectations.
    assert!(lines.iter().any(|l| l["status"] == "fail"), "{check:?}");
}

// ---- refusals ----

#[test]
fn refuses_to_overwrite_and_writes_nothing() {
    let dir = scratch("new-exists");
    let existing: PathBuf = dir.join(CUSTOM_FILES[3]);
    fs::create_dir_all(existing.parent().unwrap()).unwrap();
    fs::write(&existing, "mine\n").unwrap();

    let result = run_in(&dir, &["new", "example.io/Widget"]);
    assert_eq!(result.code, 2, "{result:?}");
    assert!(result.stderr.contains(CUSTOM_FILES[3]), "{result:?}");
    assert!(result.stderr.contains("already exists"), "{result:?}");
    assert!(result.stdout.is_empty(), "{result:?}");
    assert_eq!(fs::read_to_string(&existing).unwrap(), "mine\n");
    assert_eq!(files_below(&dir), vec![CUSTOM_FILES[3].to_string()]);

    // The same for an ingress class whose script exists.
    let script = dir.join(INGRESS_FILES[0]);
    fs::create_dir_all(script.parent().unwrap()).unwrap();
    fs::write(&script, "return obj.annotations\n").unwrap();
    let result = run_in(&dir, &["new", "ingress/acme"]);
    assert_eq!(result.code, 2, "{result:?}");
    assert!(result.stderr.contains(INGRESS_FILES[0]), "{result:?}");
    assert_eq!(
        fs::read_to_string(&script).unwrap(),
        "return obj.annotations\n"
    );
    assert!(!dir.join(INGRESS_FILES[1]).exists());
}

#[test]
fn a_second_run_refuses() {
    let dir = scratch("new-twice");
    assert_eq!(run_in(&dir, &["new", "example.io/Widget"]).code, 0);
    let before = fs::read_to_string(dir.join(CUSTOM_FILES[0])).unwrap();
    let again = run_in(&dir, &["new", "example.io/Widget", "--service", "api"]);
    assert_eq!(again.code, 2, "{again:?}");
    for file in CUSTOM_FILES {
        assert!(again.stderr.contains(file), "{again:?}");
    }
    assert_eq!(
        fs::read_to_string(dir.join(CUSTOM_FILES[0])).unwrap(),
        before
    );
}

#[test]
fn bad_names_are_usage_errors() {
    let dir = scratch("new-bad");
    for args in [
        vec!["new", "Widget"],
        vec!["new", "example/Widget"],
        vec!["new", "Example.io/Widget"],
        vec!["new", "example..io/Widget"],
        vec!["new", "example.io/widget"],
        vec!["new", "example.io/Wid-get"],
        vec!["new", "example.io/Widget/extra"],
        vec!["new", "ingress/Acme"],
        vec!["new", "ingress/"],
        vec!["new", "example.io/Widget", "--service", "Web"],
        vec!["new", "example.io/Widget", "--service", "9web"],
        vec!["new", "example.io/Widget", "--api-version", "other.io/v1"],
        vec!["new", "ingress/acme", "--api-version", "v1"],
    ] {
        let result = run_in(&dir, &args);
        assert_eq!(result.code, 2, "{args:?}: {result:?}");
        assert!(
            result.stderr.starts_with("kruise-lua: error: "),
            "{args:?}: {result:?}"
        );
    }
    assert!(files_below(&dir).is_empty(), "{:?}", files_below(&dir));
}

// ---- snapshots ----

#[test]
fn snapshot_of_the_custom_scaffold() {
    let dir = scratch("new-snapshot");
    assert_eq!(run_in(&dir, &["new", "example.io/Widget"]).code, 0);
    let script = fs::read_to_string(dir.join(CUSTOM_FILES[0])).unwrap();
    insta::assert_snapshot!("new_custom_script", script);
    let case = fs::read_to_string(dir.join(CUSTOM_FILES[1])).unwrap();
    insta::assert_snapshot!("new_custom_case_headers_and", case);
}

#[test]
fn snapshot_of_the_ingress_scaffold() {
    let dir = scratch("new-snapshot-ingress");
    assert_eq!(run_in(&dir, &["new", "ingress/acme"]).code, 0);
    let script = fs::read_to_string(dir.join(INGRESS_FILES[0])).unwrap();
    insta::assert_snapshot!("new_ingress_script", script);
    let case = fs::read_to_string(dir.join(INGRESS_FILES[3])).unwrap();
    insta::assert_snapshot!("new_ingress_case_weights", case);
}
