//! What `check` says when schema validation could not check a step against a CRD: a CRD file
//! that could not be loaded is an error in every format (at its file and line), and each step
//! of a kind with no CRD loaded (none given, or its file refused) says "schema not checked" and
//! why, in every format; `--no-schema` (the user's choice) says nothing, as `--no-intent`;
//! an ingress class (Kubernetes' own Ingress, annotations checked by Kubernetes' rules) has no
//! such note.

mod common;

use std::path::{Path, PathBuf};

use common::{copy_tree, fixtures, json_lines, run, run_in, scratch};
use serde_json::Value;

/// A CRD for routes.example.io whose `spec.weight` has a type the loader refuses (line 20).
const BANANA_CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: routes.example.io
spec:
  group: example.io
  names: {kind: Route, plural: routes}
  scope: Namespaced
  versions:
    - name: v1alpha1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                weight: {type: banana}
";

/// `kruise-lua new example.io/Route` in a scratch `lua_configuration`, with `crd` (when given)
/// as `crds/route.yaml`; the folder `check` runs in.
fn route_tree(name: &str, crd: Option<&str>) -> PathBuf {
    let dir = scratch(name);
    let made = run_in(
        &dir,
        &["new", "example.io/Route", "--root", "lua_configuration"],
    );
    assert_eq!(made.code, 0, "{made:?}");
    if let Some(crd) = crd {
        std::fs::create_dir_all(dir.join("lua_configuration/crds")).unwrap();
        std::fs::write(dir.join("lua_configuration/crds/route.yaml"), crd).unwrap();
    }
    dir
}

fn check(dir: &Path, format: &str, extra: &[&str]) -> common::Run {
    let mut args = vec!["check", "--format", format];
    args.extend_from_slice(extra);
    args.push("lua_configuration");
    run_in(dir, &args)
}

const CRD_FILE: &str = "lua_configuration/crds/route.yaml";
const REFUSED: &str = "the CRD for Route (example.io) was not loaded (lua_configuration/crds/route.yaml:20: version v1alpha1: unknown type \"banana\"): only labels and annotations were checked";
const MISSING: &str = "no CRD for Route (example.io) was loaded (add it to the crds/ folder or to kruise-lua.toml crds, or pass --crd): only labels and annotations were checked";

/// The scaffold's steps: three cases, five steps.
const STEPS: usize = 5;

/// How many SARIF results have `rule`, and the first one.
fn sarif_results<'a>(log: &'a Value, rule: &str) -> Vec<&'a Value> {
    log["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["ruleId"] == rule)
        .collect()
}

#[test]
fn a_crd_that_cannot_be_loaded_is_an_error_in_every_format_and_its_steps_say_so() {
    let dir = route_tree("banana", Some(BANANA_CRD));
    let error =
        format!("{CRD_FILE}:20: error: CRD not loaded: version v1alpha1: unknown type \"banana\"");

    let human = check(&dir, "human", &[]);
    assert_eq!(human.code, 1, "{human:?}");
    assert_eq!(human.lines()[0], error, "{human:?}");
    assert_eq!(
        human
            .stdout
            .matches(&format!("schema not checked: {REFUSED}"))
            .count(),
        STEPS,
        "{human:?}"
    );
    assert_eq!(
        human.lines().last(),
        Some(&"5 passed, 0 failed, 0 errors, 1 CRD not loaded")
    );

    let json = check(&dir, "json", &[]);
    assert_eq!(json.code, 1, "{json:?}");
    assert!(json.stderr.contains(&error), "{json:?}");
    let lines = json_lines(&json.stdout);
    assert_eq!(
        lines[0],
        serde_json::json!({"type": "crd", "file": CRD_FILE, "line": 20, "severity": "error",
            "message": "CRD not loaded: version v1alpha1: unknown type \"banana\""})
    );
    assert_eq!(lines.len(), 1 + STEPS);
    for line in &lines[1..] {
        assert_eq!(line["schema_not_checked"], REFUSED, "{line}");
    }

    let junit = check(&dir, "junit", &[]);
    assert_eq!(junit.code, 1, "{junit:?}");
    assert!(
        junit
            .stdout
            .contains(r#"tests="6" failures="0" errors="1""#)
            && junit.stdout.contains(r#"type="crd-not-loaded""#)
            && junit
                .stdout
                .matches("note: schema not checked: the CRD for Route")
                .count()
                == STEPS,
        "{junit:?}"
    );

    let github = check(&dir, "github", &[]);
    assert_eq!(github.code, 1, "{github:?}");
    assert!(
        github.lines().contains(
            &format!("::error file={CRD_FILE},line=20,title=CRD not loaded::CRD not loaded: version v1alpha1: unknown type \"banana\"").as_str()
        ),
        "{github:?}"
    );
    assert_eq!(
        github
            .lines()
            .iter()
            .filter(|line| line.starts_with("::notice")
                && line.contains("schema not checked: the CRD for Route"))
            .count(),
        STEPS,
        "{github:?}"
    );

    let sarif = check(&dir, "sarif", &[]);
    assert_eq!(sarif.code, 1, "{sarif:?}");
    let log: Value = serde_json::from_str(&sarif.stdout).unwrap();
    let errors = sarif_results(&log, "check/crd-not-loaded");
    assert_eq!(errors.len(), 1, "{log:#}");
    assert_eq!(errors[0]["level"], "error");
    let place = &errors[0]["locations"][0]["physicalLocation"];
    assert_eq!(place["artifactLocation"]["uri"], CRD_FILE);
    assert_eq!(place["region"]["startLine"], 20);
    assert_eq!(sarif_results(&log, "check/schema-not-checked").len(), STEPS);
}

#[test]
fn a_kind_without_a_crd_says_on_every_step_that_its_schema_was_not_checked() {
    let dir = route_tree("no-crd", None);
    let human = check(&dir, "human", &[]);
    assert_eq!(human.code, 0, "{human:?}");
    assert_eq!(
        human
            .stdout
            .matches(&format!("schema not checked: {MISSING}"))
            .count(),
        STEPS,
        "{human:?}"
    );
    for line in json_lines(&check(&dir, "json", &[]).stdout) {
        assert_eq!(line["schema_not_checked"], MISSING, "{line}");
    }
    let junit = check(&dir, "junit", &[]);
    assert_eq!(
        junit
            .stdout
            .matches(&format!("note: schema not checked: {MISSING}"))
            .count(),
        STEPS,
        "{junit:?}"
    );
    let github = check(&dir, "github", &[]);
    assert_eq!(
        github
            .stdout
            .matches(&format!(
                "schema not checked::schema not checked: {MISSING}"
            ))
            .count(),
        STEPS,
        "{github:?}"
    );
    let log: Value = serde_json::from_str(&check(&dir, "sarif", &[]).stdout).unwrap();
    assert_eq!(sarif_results(&log, "check/schema-not-checked").len(), STEPS);

    // The user turned validation off: nothing to say, as with --no-intent.
    let off = check(&dir, "human", &["--no-schema"]);
    assert_eq!(off.code, 0, "{off:?}");
    assert!(!off.stdout.contains("schema not checked"), "{off:?}");
    for line in json_lines(&check(&dir, "json", &["--no-schema"]).stdout) {
        assert_eq!(line["schema_not_checked"], Value::Null, "{line}");
    }

    // `plan` words the same note the same way, for each stage of the same kind's resource.
    std::fs::write(dir.join("rollout.yaml"), ROUTE_ROLLOUT).unwrap();
    std::fs::write(dir.join("route.yaml"), ROUTE).unwrap();
    let plan = run_in(
        &dir,
        &[
            "plan",
            "--tree",
            "lua_configuration",
            "--rollout",
            "rollout.yaml",
            "--resource",
            "route.yaml",
            "--format",
            "json",
        ],
    );
    assert_eq!(plan.code, 0, "{plan:?}");
    let plan: Value = serde_json::from_str(&plan.stdout).unwrap();
    let stages = plan["resources"][0]["stages"].as_array().unwrap();
    assert!(!stages.is_empty(), "{plan:#}");
    for stage in stages {
        assert_eq!(stage["schema_unchecked"], MISSING, "{stage:#}");
    }
}

/// A Rollout over the scaffold's Route, for `plan`.
const ROUTE_ROLLOUT: &str = "apiVersion: rollouts.kruise.io/v1beta1
kind: Rollout
metadata: {name: web}
spec:
  workloadRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  strategy:
    canary:
      trafficRoutings:
      - service: web
        customNetworkRefs:
        - {apiVersion: example.io/v1alpha1, kind: Route, name: web}
      steps:
      - traffic: 20%
        replicas: 1
";

/// The Route `ROUTE_ROLLOUT` names.
const ROUTE: &str = "apiVersion: example.io/v1alpha1
kind: Route
metadata: {name: web}
spec:
  routes:
  - backend: web
";

/// A CRD for routes.example.io that takes any spec.
const ROUTE_CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: routes.example.io
spec:
  group: example.io
  names: {kind: Route, plural: routes}
  scope: Namespaced
  versions:
    - name: v1alpha1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              x-kubernetes-preserve-unknown-fields: true
";

/// The `schema_not_checked` of every step `check --format json PATH` (run in `dir`) reports.
fn notes(dir: &Path, path: &str) -> Vec<Value> {
    let run = run_in(dir, &["check", "--format", "json", path]);
    let lines = json_lines(&run.stdout);
    assert!(!lines.is_empty(), "{run:?}");
    lines
        .iter()
        .map(|line| line["schema_not_checked"].clone())
        .collect()
}

/// A script folder inside a tree, a script in it, the folder named `.` from inside it and the
/// tree all find the tree's `crds/` (a folder PATH used to be taken for a root of its own, so
/// every step of `check <tree>/<group>/<Kind>` said no CRD was loaded).
#[test]
fn every_path_into_a_tree_finds_the_trees_crds() {
    let dir = route_tree("folder-root", Some(ROUTE_CRD));
    let script_folder = dir.join("lua_configuration/example.io/Route");
    for (cwd, path) in [
        (dir.as_path(), "lua_configuration"),
        (dir.as_path(), "lua_configuration/example.io/Route"),
        (dir.as_path(), "lua_configuration/example.io"),
        (
            dir.as_path(),
            "lua_configuration/example.io/Route/trafficRouting.lua",
        ),
        (script_folder.as_path(), "."),
    ] {
        let notes = notes(cwd, path);
        assert_eq!(notes.len(), STEPS, "{path}: {notes:?}");
        assert!(notes.iter().all(Value::is_null), "{path}: {notes:?}");
    }
    // The bundled tree's own script folder, as QA ran it.
    for note in notes(
        &fixtures(),
        "../../lua_configuration/networking.istio.io/DestinationRule",
    ) {
        assert_eq!(note, Value::Null);
    }
}

/// A script outside the `<group>/<Kind>/` layout (a regression fixture's folder) is checked as
/// its case's resource is typed, and the note names that type, not the fixture's folders.
#[test]
fn a_script_outside_the_layout_is_checked_as_its_cases_resource() {
    let fixture = "intent/istio-small-weights";
    for note in notes(&fixtures(), fixture) {
        let note = note.as_str().unwrap_or_default().to_owned();
        assert!(
            note.starts_with("no CRD for VirtualService (networking.istio.io) was loaded"),
            "{note}"
        );
    }
    // With the bundled CRDs, the VirtualService's is found: validation looked for it.
    let run = run(&[
        "check",
        "--format",
        "json",
        "--crd",
        "../../lua_configuration/crds",
        fixture,
    ]);
    let lines = json_lines(&run.stdout);
    assert!(!lines.is_empty(), "{run:?}");
    for line in &lines {
        assert_eq!(line["schema_not_checked"], Value::Null, "{line}");
    }
}

#[test]
fn an_unreadable_crd_file_is_named_by_the_steps_of_kinds_without_a_crd() {
    let dir = route_tree("not-yaml", Some("a: [1,\n"));
    let json = check(&dir, "json", &[]);
    assert_eq!(json.code, 1, "{json:?}");
    let lines = json_lines(&json.stdout);
    assert_eq!(lines[0]["type"], "crd");
    let note = lines[1]["schema_not_checked"].as_str().unwrap();
    assert!(
        note.starts_with("no CRD for Route (example.io) was loaded, and a CRD source that could not be used may hold it (lua_configuration/crds/route.yaml:2: invalid YAML"),
        "{note}"
    );
}

/// An ingress class's canary Ingress is Kubernetes' own type: what the script changes on it,
/// its annotations, is checked with Kubernetes' rules, so its steps carry no note.
#[test]
fn ingress_class_steps_have_no_schema_note() {
    let dir = scratch("ingress-no-note");
    copy_tree(
        &fixtures().join("ingress/lua_configuration"),
        &dir.join("lua_configuration"),
    );
    let lines = json_lines(&check(&dir, "json", &[]).stdout);
    assert!(!lines.is_empty());
    for line in &lines {
        assert_eq!(line["schema_not_checked"], Value::Null, "{line}");
    }
    let library = run(&[
        "check",
        "--format",
        "json",
        "--filter",
        "trafficrouting_ingress",
        "lua_configuration",
    ]);
    for line in json_lines(&library.stdout) {
        assert_eq!(line["schema_not_checked"], Value::Null, "{line}");
    }
}
