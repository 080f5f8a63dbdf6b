//! End-to-end tests of `kruise-lua plan` on the example manifests in `tests/fixtures/plan`
//! (written for these tests) with the project's own `lua_configuration` scripts: Istio
//! VirtualService + DestinationRule (two customNetworkRefs, from a `kind: List`), an ingress
//! class (chained steps), a ConfigMap script, a broken script (a misrouting and a
//! schema-invalid step, exit 1), stdin, a resource without a routing model, `--save-case`
//! round trips through `check` in both modes, and hostile inputs.

mod common;

use std::path::Path;

use common::{fixtures, run, run_in, scratch};

const TREE: &str = "../../lua_configuration";

fn plan(args: &[&str]) -> common::Run {
    let mut all = vec!["plan", "--tree", TREE];
    all.extend_from_slice(args);
    run(&all)
}

#[test]
fn istio_virtualservice_and_destinationrule_from_a_list() {
    let result = plan(&[
        "--rollout",
        "plan/rollout-istio.yaml",
        "--resource",
        "plan/istio.yaml",
    ]);
    assert_eq!(result.code, 0, "{result:?}");
    insta::assert_snapshot!("plan_istio_human", result.stdout);
    let json = plan(&[
        "--rollout",
        "plan/rollout-istio.yaml",
        "--resource",
        "plan/istio.yaml",
        "--format",
        "json",
    ]);
    assert_eq!(json.code, 0, "{json:?}");
    let value: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(value["version"], 1);
    assert_eq!(value["resources"].as_array().unwrap().len(), 2);
    insta::assert_snapshot!("plan_istio_json", json.stdout);
}

#[test]
fn ingress_class_steps_are_chained_on_the_canary_ingress() {
    let result = plan(&[
        "--rollout",
        "plan/rollout-ingress.yaml",
        "--resource",
        "plan/ingress.yaml",
    ]);
    assert_eq!(result.code, 0, "{result:?}");
    // Step 3 starts from what step 2 left: the header annotations step 2 added are removed.
    assert!(
        result
            .stdout
            .contains("-    nginx.ingress.kubernetes.io/canary-by-header: x-shop-beta"),
        "{result:?}"
    );
    insta::assert_snapshot!("plan_ingress_human", result.stdout);
}

#[test]
fn a_configmap_script_wins_for_an_ingress_class_and_its_misrouting_exits_1() {
    let result = plan(&[
        "--rollout",
        "plan/rollout-ingress.yaml",
        "--resource",
        "plan/ingress.yaml",
        "--config",
        "plan/configmap.yaml",
    ]);
    assert_eq!(result.code, 1, "{result:?}");
    assert!(
        result
            .stdout
            .contains("script: plan/configmap.yaml (lua.traffic.routing.ingress.nginx)"),
        "{result:?}"
    );
    insta::assert_snapshot!("plan_configmap_human", result.stdout);
}

#[test]
fn misrouting_and_schema_invalid_steps_exit_1() {
    let result = plan(&[
        "--rollout",
        "plan/rollout-vs-only.yaml",
        "--resource",
        "plan/istio.yaml",
        "--script",
        "plan/broken-vs.lua",
    ]);
    assert_eq!(result.code, 1, "{result:?}");
    assert!(
        result.stdout.contains("✗ step 1: traffic 10%"),
        "{result:?}"
    );
    assert!(
        result
            .stdout
            .contains("schema error: spec.http[1].route[1].weight: must be of type integer"),
        "{result:?}"
    );
    insta::assert_snapshot!("plan_broken_human", result.stdout);
    let json = plan(&[
        "--rollout",
        "plan/rollout-vs-only.yaml",
        "--resource",
        "plan/istio.yaml",
        "--script",
        "plan/broken-vs.lua",
        "--format",
        "json",
    ]);
    let value: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let stages = &value["resources"][0]["stages"];
    assert_eq!(value["failed"], true);
    assert_eq!(stages[1]["failed"], true);
    assert_eq!(stages[1]["traffic"]["classes"][0]["as_asked"], false);
    assert_eq!(stages[2]["schema"][0]["severity"], "error");
    // The HTML chart outlines the bar of each misrouted request class (one per step).
    let html = plan(&[
        "--rollout",
        "plan/rollout-vs-only.yaml",
        "--resource",
        "plan/istio.yaml",
        "--script",
        "plan/broken-vs.lua",
        "--format",
        "html",
    ]);
    assert_eq!(html.code, 1, "{html:?}");
    assert_eq!(html.stdout.matches("<rect class=\"misrouted\"").count(), 2);
}

#[test]
fn a_resource_without_a_routing_model_still_shows_its_diffs() {
    let result = plan(&[
        "--rollout",
        "plan/rollout-splitter.yaml",
        "--resource",
        "plan/splitter.yaml",
        "--script",
        "plan/splitter.lua",
    ]);
    assert_eq!(result.code, 0, "{result:?}");
    assert!(
        result.stdout.contains(
            "traffic: not available: the engine has no routing model for Splitter (mesh.example.org)"
        ),
        "{result:?}"
    );
    assert!(
        result.stdout.contains("+  - service: shop-canary"),
        "{result:?}"
    );
    insta::assert_snapshot!("plan_no_model_human", result.stdout);
}

#[test]
fn the_rollout_can_come_from_stdin() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let rollout = std::fs::read(fixtures().join("plan/rollout-istio.yaml")).unwrap();
    let mut child = Command::new(common::binary())
        .current_dir(fixtures())
        .args([
            "plan",
            "--tree",
            TREE,
            "--rollout",
            "-",
            "--resource",
            "plan/istio.yaml",
        ])
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&rollout).unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let from_stdin = String::from_utf8(output.stdout).unwrap();
    let from_file = plan(&[
        "--rollout",
        "plan/rollout-istio.yaml",
        "--resource",
        "plan/istio.yaml",
    ]);
    assert_eq!(
        from_stdin,
        from_file
            .stdout
            .replace("plan/rollout-istio.yaml:3", "<stdin>:3")
    );
    let twice = plan(&["--rollout", "-", "--resource", "-"]);
    assert_eq!(twice.code, 2, "{twice:?}");
    assert!(
        twice.stderr.contains("stdin (`-`) can be read only once"),
        "{twice:?}"
    );
}

/// A tree with the project's Istio and ingress scripts (and CRDs) to save cases into.
fn scratch_tree(name: &str) -> std::path::PathBuf {
    let dir = scratch(name);
    let library = common::workspace().join("lua_configuration");
    for part in ["networking.istio.io", "crds", "trafficrouting_ingress"] {
        common::copy_tree(&library.join(part), &dir.join(part));
    }
    dir
}

fn check_both_modes(dir: &Path, case: &str) {
    for mode in ["harness", "production"] {
        let result = run_in(dir, &["check", "--mode", mode, ".", "--filter", case]);
        assert_eq!(result.code, 0, "{mode}: {result:?}");
        assert!(result.stdout.contains(case), "{mode}: {result:?}");
        assert!(!result.stdout.contains("0 passed"), "{mode}: {result:?}");
    }
}

#[test]
fn saved_cases_pass_check_in_both_modes() {
    let dir = scratch_tree("plan-save");
    let vs_dir = dir.join("networking.istio.io/VirtualService/testdata");
    let target = vs_dir.join("planned.yaml");
    let result = plan(&[
        "--rollout",
        "plan/rollout-istio.yaml",
        "--resource",
        "plan/istio.yaml",
        "--save-case",
        target.to_str().unwrap(),
    ]);
    assert_eq!(result.code, 0, "{result:?}");
    // Two resources: one case per resource, named after its kind, each in the testdata of its
    // own provider's script (where `check` runs it with that script and validates it against
    // that kind's CRD).
    let vs_case = vs_dir.join("planned-virtualservice.yaml");
    assert!(
        result
            .stderr
            .contains("planned-virtualservice.yaml (VirtualService shop)"),
        "{result:?}"
    );
    assert!(!vs_dir.join("planned-destinationrule.yaml").exists());
    let dr_case =
        dir.join("networking.istio.io/DestinationRule/testdata/planned-destinationrule.yaml");
    assert!(dr_case.is_file(), "{result:?}");
    let text = std::fs::read_to_string(&vs_case).unwrap();
    // Laid out as hand-written cases, without what the API server added.
    assert!(
        text.starts_with("# Rollout shop planned on VirtualService shop"),
        "{text}"
    );
    assert!(
        text.contains("\nexpected:\n- apiVersion: networking.istio.io/v1beta1\n"),
        "{text}"
    );
    for server_field in [
        "resourceVersion",
        "uid:",
        "managedFields",
        "last-applied-configuration",
        "creationTimestamp",
    ] {
        assert!(!text.contains(server_field), "{server_field} in {text}");
    }
    insta::assert_snapshot!("plan_saved_virtualservice_case", text);
    check_both_modes(&dir, "planned-virtualservice.yaml");
    check_both_modes(&dir, "planned-destinationrule.yaml");

    // An ingress class, saved where the tree keeps its cases.
    let ingress_dir = dir.join("trafficrouting_ingress/testdata/nginx");
    std::fs::create_dir_all(&ingress_dir).unwrap();
    let ingress_case = ingress_dir.join("planned.yaml");
    let result = plan(&[
        "--rollout",
        "plan/rollout-ingress.yaml",
        "--resource",
        "plan/ingress.yaml",
        "--save-case",
        ingress_case.to_str().unwrap(),
    ]);
    assert_eq!(result.code, 0, "{result:?}");
    check_both_modes(&dir, "nginx/planned.yaml");
}

#[test]
fn a_case_is_not_saved_for_a_script_that_fails() {
    let dir = scratch("plan-save-fails");
    let target = dir.join("case.yaml");
    let script = dir.join("fails.lua");
    std::fs::write(&script, "error('no route for ' .. obj.canaryService)\n").unwrap();
    let result = plan(&[
        "--rollout",
        "plan/rollout-splitter.yaml",
        "--resource",
        "plan/splitter.yaml",
        "--script",
        script.to_str().unwrap(),
        "--save-case",
        target.to_str().unwrap(),
    ]);
    assert_eq!(result.code, 2, "{result:?}");
    assert!(
        result
            .stderr
            .contains("cannot save a case: the script fails on step 1"),
        "{result:?}"
    );
    assert!(!target.exists());
}

/// `plan` with the Splitter fixtures (one resource, its own script), run bounded.
fn plan_splitter(save_case: &Path) -> common::Run {
    common::run_in_within(
        &fixtures(),
        20,
        &[
            "plan",
            "--rollout",
            "plan/rollout-splitter.yaml",
            "--resource",
            "plan/splitter.yaml",
            "--script",
            "plan/splitter.lua",
            "--save-case",
            save_case.to_str().unwrap(),
        ],
    )
}

/// `--save-case` writes regular files only: a FIFO used to block `plan` for ever (opened to be
/// read), a device node was read as empty and replaced by a regular file, and a symlink to
/// nothing gave "file exists". Each is now refused, named with what it is, and left as it was.
#[cfg(unix)]
#[test]
fn save_case_refuses_fifos_devices_and_dangling_links() {
    use std::os::unix::fs::FileTypeExt;
    let dir = scratch("plan-save-special");
    let fifo = dir.join("fifo.yaml");
    common::mkfifo(&fifo);
    let result = plan_splitter(&fifo);
    assert_eq!(result.code, 2, "{result:?}");
    assert!(
        result
            .stderr
            .contains("fifo.yaml: is a FIFO, not a regular file; nothing was written"),
        "{result:?}"
    );
    assert!(
        std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo()
    );

    // A stand-in for /dev/null in the scratch folder (creating one needs root).
    let device = dir.join("dev.yaml");
    let made = std::process::Command::new("mknod")
        .args([device.to_str().unwrap(), "c", "1", "3"])
        .status()
        .is_ok_and(|s| s.success());
    if made {
        let result = plan_splitter(&device);
        assert_eq!(result.code, 2, "{result:?}");
        assert!(
            result
                .stderr
                .contains("dev.yaml: is a device, not a regular file; nothing was written"),
            "{result:?}"
        );
        let kind = std::fs::symlink_metadata(&device).unwrap().file_type();
        assert!(kind.is_char_device(), "{kind:?}");
    }

    let link = dir.join("dl.yaml");
    std::os::unix::fs::symlink("missing/target.yaml", &link).unwrap();
    let result = plan_splitter(&link);
    assert_eq!(result.code, 2, "{result:?}");
    assert!(
        result.stderr.contains(
            "dl.yaml: is a symbolic link to missing/target.yaml, which does not exist; nothing was written"
        ),
        "{result:?}"
    );
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );

    // A regular file is still replaced, and a second save over it too.
    let case = dir.join("case.yaml");
    std::fs::write(&case, "old\n").unwrap();
    let result = plan_splitter(&case);
    assert_eq!(result.code, 0, "{result:?}");
    assert!(
        std::fs::read_to_string(&case)
            .unwrap()
            .contains("expected:")
    );
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
}

/// Two resources of one kind: each gets its own file (the second used to replace the first's
/// case, both named `<stem>-<kind>`).
#[test]
fn two_resources_of_one_kind_are_saved_apart() {
    let dir = scratch("plan-save-two");
    let rollout = std::fs::read_to_string(fixtures().join("plan/rollout-splitter.yaml"))
        .unwrap()
        .replace(
            "          name: shop\n",
            "          name: shop\n        - apiVersion: mesh.example.org/v1\n          kind: Splitter\n          name: cart\n",
        );
    let resources = std::fs::read_to_string(fixtures().join("plan/splitter.yaml")).unwrap();
    let resources = format!(
        "{resources}---\n{}",
        resources.replace("name: shop", "name: cart")
    );
    std::fs::write(dir.join("rollout.yaml"), rollout).unwrap();
    std::fs::write(dir.join("splitters.yaml"), resources).unwrap();
    let script = fixtures().join("plan/splitter.lua");
    let result = common::run_in_within(
        &dir,
        20,
        &[
            "plan",
            "--rollout",
            "rollout.yaml",
            "--resource",
            "splitters.yaml",
            "--script",
            script.to_str().unwrap(),
            "--save-case",
            "saved.yaml",
        ],
    );
    assert_eq!(result.code, 0, "{result:?}");
    let shop = std::fs::read_to_string(dir.join("saved-splitter-shop.yaml")).unwrap();
    let cart = std::fs::read_to_string(dir.join("saved-splitter-cart.yaml")).unwrap();
    assert!(shop.contains("name: shop"), "{shop}");
    assert!(cart.contains("name: cart"), "{cart}");
    assert!(!dir.join("saved-splitter.yaml").exists());
}

/// A `--tree` that does not exist, and the default `lua_configuration` when nothing else can
/// give a script, are usage errors naming the folder (they were a plan of failures, exit 1,
/// saying "no script for …: none, in a --config ConfigMap, or given with --script").
#[test]
fn a_missing_tree_is_a_usage_error_naming_it() {
    let args = [
        "--rollout",
        "plan/rollout-splitter.yaml",
        "--resource",
        "plan/splitter.yaml",
    ];
    let mut named = vec!["plan", "--tree", "no-such-tree"];
    named.extend(args);
    let result = run(&named);
    assert_eq!(result.code, 2, "{result:?}");
    assert!(
        result
            .stderr
            .contains("no-such-tree: no such file or directory (--tree)"),
        "{result:?}"
    );
    // tests/fixtures holds no lua_configuration.
    let mut default = vec!["plan"];
    default.extend(args);
    let result = run(&default);
    assert_eq!(result.code, 2, "{result:?}");
    assert!(
        result
            .stderr
            .contains("lua_configuration: no such directory (the default --tree)"),
        "{result:?}"
    );
    // A --script gives the scripts: the absent default is no error.
    default.extend(["--script", "plan/splitter.lua"]);
    let result = run(&default);
    assert_eq!(result.code, 0, "{result:?}");
    // A resource no source serves says what each source lacks.
    let result = run(&[
        "plan",
        "--rollout",
        "plan/rollout-splitter.yaml",
        "--resource",
        "plan/splitter.yaml",
        "--config",
        "plan/configmap.yaml",
    ]);
    assert_eq!(result.code, 1, "{result:?}");
    assert!(
        result.stdout.contains(
            "no script for Splitter (mesh.example.org): no --script, no lua_configuration tree (--tree), and none in plan/configmap.yaml"
        ),
        "{result:?}"
    );
}

// ---- hostile inputs ----

#[test]
fn ten_thousand_steps_are_refused_with_a_clear_error() {
    let dir = scratch("plan-steps");
    let mut rollout = String::from(
        "apiVersion: rollouts.kruise.io/v1beta1\nkind: Rollout\nmetadata: {name: big}\nspec:\n  strategy:\n    canary:\n      trafficRoutings:\n      - service: shop\n        customNetworkRefs:\n        - {apiVersion: mesh.example.org/v1, kind: Splitter, name: shop}\n      steps:\n",
    );
    for i in 0..10_000 {
        rollout.push_str(&format!("      - traffic: \"{}%\"\n", i % 100));
    }
    let path = dir.join("rollout.yaml");
    std::fs::write(&path, rollout).unwrap();
    let result = plan(&[
        "--rollout",
        path.to_str().unwrap(),
        "--resource",
        "plan/splitter.yaml",
        "--script",
        "plan/splitter.lua",
    ]);
    assert_eq!(result.code, 2, "{result:?}");
    assert!(
        result
            .stderr
            .contains("rollout.yaml:1: Rollout big has 10000 steps; plan replays at most 200"),
        "{result:?}"
    );
}

#[test]
fn a_resource_over_16_mib_is_refused_naming_the_file() {
    let dir = scratch("plan-big");
    let path = dir.join("big.yaml");
    let mut text = String::from(
        "apiVersion: mesh.example.org/v1\nkind: Splitter\nmetadata: {name: shop}\nspec:\n  backends:\n  - {service: shop, weight: 100}\n  padding: \"",
    );
    text.push_str(&"x".repeat(16 << 20));
    text.push_str("\"\n");
    std::fs::write(&path, text).unwrap();
    let result = plan(&[
        "--rollout",
        "plan/rollout-splitter.yaml",
        "--resource",
        path.to_str().unwrap(),
        "--script",
        "plan/splitter.lua",
    ]);
    assert_eq!(result.code, 2, "{result:?}");
    assert!(result.stderr.contains("big.yaml"), "{result:?}");
    assert!(
        result
            .stderr
            .contains("over the 16 MiB limit for an input file"),
        "{result:?}"
    );
}

#[test]
fn hundreds_of_matches_are_probed_within_the_bounds() {
    let dir = scratch("plan-matches");
    let mut rollout = String::from(
        "apiVersion: rollouts.kruise.io/v1beta1\nkind: Rollout\nmetadata: {name: many}\nspec:\n  strategy:\n    canary:\n      trafficRoutings:\n      - service: shop\n        customNetworkRefs:\n        - {apiVersion: networking.istio.io/v1beta1, kind: VirtualService, name: shop}\n      steps:\n      - replicas: 1\n        matches:\n",
    );
    for i in 0..400 {
        rollout.push_str(&format!(
            "        - headers:\n          - {{name: x-user, value: \"user-{i}\"}}\n"
        ));
    }
    let path = dir.join("rollout.yaml");
    std::fs::write(&path, rollout).unwrap();
    let result = plan(&[
        "--rollout",
        path.to_str().unwrap(),
        "--resource",
        "plan/istio.yaml",
        "--format",
        "json",
    ]);
    assert!(result.code == 0 || result.code == 1, "{result:?}");
    let value: serde_json::Value = serde_json::from_str(&result.stdout).unwrap();
    let step = &value["resources"][0]["stages"][1];
    let traffic = &step["traffic"];
    // The intent check's bounds: at most 2,000 probes, at most 40 classes listed.
    assert!(traffic["probes"].as_u64().unwrap() <= 2000, "{traffic}");
    assert!(
        traffic["classes"].as_array().unwrap().len() <= 40,
        "{traffic}"
    );
    assert!(step["diff"].as_array().unwrap().len() <= 400, "{step}");
}

#[test]
fn a_trafficrouting_is_planned_as_its_one_step() {
    let result = plan(&[
        "--rollout",
        "plan/trafficrouting.yaml",
        "--resource",
        "plan/istio.yaml",
        "--format",
        "json",
    ]);
    assert_eq!(result.code, 0, "{result:?}");
    let value: serde_json::Value = serde_json::from_str(&result.stdout).unwrap();
    assert_eq!(value["rollout"], "TrafficRouting shop");
    // The DestinationRule of the List is not referenced: a note, not a plan.
    assert_eq!(value["notes"].as_array().unwrap().len(), 1, "{value}");
    let stages = value["resources"][0]["stages"].as_array().unwrap();
    let labels: Vec<&str> = stages
        .iter()
        .map(|s| s["stage"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["start", "step", "restore"]);
    let class = &stages[1]["traffic"]["classes"][0];
    assert_eq!(class["stable_percent"], 70.0, "{class}");
    assert_eq!(class["canary_percent"], 30.0, "{class}");
}

#[test]
fn colour_only_when_asked() {
    let args = [
        "--rollout",
        "plan/rollout-vs-only.yaml",
        "--resource",
        "plan/istio.yaml",
        "--script",
        "plan/broken-vs.lua",
    ];
    let plain = plan(&args);
    assert!(!plain.stdout.contains('\x1b'), "{plain:?}");
    let mut coloured_args = args.to_vec();
    coloured_args.extend(["--color", "always"]);
    let coloured = plan(&coloured_args);
    assert!(
        coloured.stdout.contains("\x1b[32m+      weight: 50\x1b[0m"),
        "{coloured:?}"
    );
    assert!(
        coloured
            .stdout
            .contains("\x1b[31m✗ step 1: traffic 10%\x1b[0m"),
        "{coloured:?}"
    );
}

/// Steps Kruise's Rollout webhook refuses (openkruise/rollouts
/// `pkg/webhook/rollout/validating`: traffic "0%" < traffic <= "100%" as an integer percentage in
/// the canary strategy, replicas required) make the plan fail in every format, naming the field:
/// such a Rollout never runs. They were planned with ✓ and exit 0, "abc" and "10.5%" shown as 0 %.
#[test]
fn steps_the_rollout_webhook_rejects_fail_the_plan() {
    let dir = scratch("plan-webhook");
    let path = dir.join("rollout.yaml");
    std::fs::write(
        &path,
        "apiVersion: rollouts.kruise.io/v1beta1\nkind: Rollout\nmetadata: {name: shop, namespace: store}\nspec:\n  strategy:\n    canary:\n      trafficRoutings:\n      - service: shop\n        customNetworkRefs:\n        - {apiVersion: networking.istio.io/v1beta1, kind: VirtualService, name: shop}\n      steps:\n      - {traffic: 10%, replicas: 1}\n      - {traffic: \"10.5%\", replicas: 1}\n",
    )
    .unwrap();
    let args = |format: &'static str| {
        vec![
            "--rollout".to_owned(),
            path.to_str().unwrap().to_owned(),
            "--resource".to_owned(),
            "plan/istio.yaml".to_owned(),
            "--format".to_owned(),
            format.to_owned(),
        ]
    };
    let why = "spec.strategy.canary.steps[1].traffic \"10.5%\": traffic must be percentage with \"0%\" < traffic <= \"100%\" in canary strategy";
    for format in ["human", "json", "html"] {
        let args = args(format);
        let result = plan(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(result.code, 1, "{format}: {result:?}");
        let shown = if format == "html" {
            why.replace('"', "&quot;").replace('<', "&lt;")
        } else if format == "json" {
            why.replace('"', "\\\"")
        } else {
            why.to_owned()
        };
        assert!(
            result.stdout.contains(&shown),
            "{format}: {}",
            result.stdout
        );
    }
}

/// A route condition the Istio model does not evaluate (`port`) leaves the step partly
/// checked: `plan` says so in every format, as `check` does (the same note), rather than
/// showing the traffic table as if every route had been probed.
#[test]
fn a_step_the_intent_check_only_partly_verifies_says_so() {
    let dir = scratch("plan-partly");
    let resource = "apiVersion: networking.istio.io/v1beta1\nkind: VirtualService\nmetadata: {name: shop, namespace: store}\nspec:\n  hosts: [shop.example.org]\n  http:\n  - match:\n    - port: 8443\n    route:\n    - destination: {host: shop-tls}\n  - route:\n    - destination: {host: shop}\n";
    let path = dir.join("vs.yaml");
    std::fs::write(&path, resource).unwrap();
    let note = "partly checked: spec.http[0].match[0].port is not evaluated";
    let human = plan(&[
        "--rollout",
        "plan/rollout-vs-only.yaml",
        "--resource",
        path.to_str().unwrap(),
    ]);
    assert_eq!(human.code, 0, "{human:?}");
    assert!(human.stdout.contains(note), "{}", human.stdout);
    let json = plan(&[
        "--rollout",
        "plan/rollout-vs-only.yaml",
        "--resource",
        path.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let value: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let stage = &value["resources"][0]["stages"][1];
    assert!(stage["warnings"].to_string().contains(note), "{stage}");
}
