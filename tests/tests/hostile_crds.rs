//! Hostile CRDs (issue 21): rules that nest too deep for the `cel` crate, rules whose cost
//! would run for minutes or fill memory, and CRDs of many versions, each run through `check`
//! under the reliability suite's bounds (`prlimit` address space and CPU time, `timeout`), each
//! ending in a clear finding. Nothing here measures speed: the bounds turn a hang, a crash or
//! a blow-up into a failure.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{binary, scratch};

const ADDRESS_SPACE: &str = "--as=2147483648";
const CPU_SECONDS: &str = "--cpu=60";
const WALL_SECONDS: &str = "120";

/// `kruise-lua check --format json lua` in `dir`, bounded; a crash, an abort, a kill or a hang
/// fails here. Returns stdout.
fn check_bounded(dir: &Path) -> String {
    let output = Command::new("timeout")
        .current_dir(dir)
        .args([
            "-k",
            "5",
            WALL_SECONDS,
            "prlimit",
            ADDRESS_SPACE,
            CPU_SECONDS,
            "--",
        ])
        .arg(binary())
        .args(["check", "--format", "json", "lua"])
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("run timeout/prlimit");
    let code = output.status.code().unwrap_or(-1);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let cut = |s: &str| s.chars().take(3000).collect::<String>();
    assert_ne!(code, 124, "hung: {}\n{}", cut(&stdout), cut(&stderr));
    assert!(
        matches!(code, 0..=2) && !stderr.contains("panicked"),
        "crashed, aborted or was killed (exit {code}):\n{}\n{}",
        cut(&stdout),
        cut(&stderr)
    );
    stdout
}

const SCRIPT: &str = "return obj.data\n";

/// A case whose object (`example.io/v1` Demo) has `spec.items`, a list of 100 integers.
fn case() -> String {
    let items: Vec<String> = (0..100).map(|i| i.to_string()).collect();
    let object = format!(
        "  apiVersion: example.io/v1\n  kind: Demo\n  metadata:\n    name: demo\n  spec:\n    items: [{}]\n",
        items.join(", ")
    );
    format!(
        "rollout:\n  apiVersion: rollouts.kruise.io/v1beta1\n  kind: Rollout\n  metadata:\n    name: demo\n  spec:\n    workloadRef:\n      apiVersion: apps/v1\n      kind: Deployment\n      name: demo\n    strategy:\n      canary:\n        steps:\n        - traffic: 20%\n        trafficRoutings:\n        - service: demo\n          customNetworkRefs:\n          - apiVersion: example.io/v1\n            kind: Demo\n            name: demo\noriginal:\n{object}expected:\n-{}",
        &object[1..]
    )
}

/// A CRD for example.io Demo with `versions` versions (the last one stored), whose
/// `spec.items` (at most 100 integers) carries `rule`.
fn crd(rule: &str, versions: usize) -> String {
    let quoted = rule.replace('\'', "''");
    let mut text = String::from(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: demos.example.io\nspec:\n  group: example.io\n  scope: Namespaced\n  names:\n    kind: Demo\n    plural: demos\n  versions:\n",
    );
    for i in 1..=versions {
        let name = if i == versions {
            "v1".to_owned()
        } else {
            format!("v0alpha{i}")
        };
        text.push_str(&format!(
            "  - name: {name}\n    served: true\n    storage: {}\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec:\n            type: object\n            properties:\n              items:\n                type: array\n                maxItems: 100\n                items: {{type: integer}}\n                x-kubernetes-validations:\n                - rule: '{quoted}'\n",
            i == versions
        ));
    }
    text
}

/// A tree `<dir>/lua/example.io/Demo` with the case, and `crd` in `lua/crds/`.
fn tree(name: &str, crd: &str) -> PathBuf {
    let dir = scratch(name);
    let folder = dir.join("lua/example.io/Demo");
    std::fs::create_dir_all(folder.join("testdata")).unwrap();
    std::fs::create_dir_all(dir.join("lua/crds")).unwrap();
    std::fs::write(folder.join("trafficRouting.lua"), SCRIPT).unwrap();
    std::fs::write(folder.join("testdata/case.yaml"), case()).unwrap();
    std::fs::write(dir.join("lua/crds/demo.yaml"), crd).unwrap();
    dir
}

#[test]
fn rules_nested_past_what_the_cel_crate_survives_are_not_checked() {
    // The reproducers (refused for their length), and shorter ones refused for their
    // depth.
    let parentheses = |n: usize| format!("{}true{}", "(".repeat(n), ")".repeat(n));
    let sum = |n: usize| format!("{}1 > 0", "1+".repeat(n - 1));
    for (name, rule, reason) in [
        ("parentheses", parentheses(100_000), "characters, more than"),
        ("sum", sum(100_000), "characters, more than"),
        ("short_parentheses", parentheses(5_000), "nests about"),
        ("short_sum", sum(5_000), "nests about"),
    ] {
        let dir = tree(&format!("hostile_{name}"), &crd(&rule, 1));
        let stdout = check_bounded(&dir);
        assert!(
            stdout.contains("not checked") && stdout.contains(reason),
            "{name}: {}",
            stdout.chars().take(3000).collect::<String>()
        );
    }
}

#[test]
fn rules_over_the_api_servers_cost_limit_are_a_crd_problem() {
    let all = "self.all(a, self.all(b, self.all(c, self.all(d, a + b + c + d >= 0))))";
    let map = "self.map(a, self.map(b, self.map(c, self.map(d, a + b + c + d)))).size() > 0";
    for (name, rule) in [("all", all), ("map", map)] {
        let dir = tree(&format!("hostile_cost_{name}"), &crd(rule, 1));
        let stdout = check_bounded(&dir);
        assert!(
            stdout.contains("the API server refuses this CRD")
                && stdout.contains("StaticEstimatedCostLimit"),
            "{name}: {stdout}"
        );
    }
}

#[test]
fn a_crd_of_many_versions_loads() {
    let dir = tree("hostile_versions", &crd("size(self) <= 100", 40_000));
    let stdout = check_bounded(&dir);
    assert!(stdout.contains("\"status\":\"pass\""), "{stdout}");
}
