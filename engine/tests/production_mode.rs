//! Production mode's step semantics (the controller's, openkruise/rollouts manager.go and
//! ingress.go): a step with neither traffic nor matches never reaches the script, and an
//! ingress-class script runs on the canary Ingress as the earlier steps left it, until its
//! result settles. Harness mode keeps running every step on its own.

use std::collections::BTreeMap;

use kruise_lua_engine::IngressData;
use kruise_lua_engine::controller::{self, IngressEnsure};
use kruise_lua_engine::runner::{Mode, RunOptions, Script};
use kruise_lua_engine::script::ScriptFlavor;
use kruise_lua_engine::steps::{
    self, NOT_CALLED_NO_TRAFFIC, NOT_CALLED_NOT_CREATED, StepOutcome, StepStatus, StepToRun,
};
use kruise_lua_engine::testcase::{TestCase, parse_case};

/// A rollout case over `steps` (YAML list items, already indented by 8), with `original`
/// annotations `owner: team-a` and one `expected` entry per step from `expected` (annotation
/// maps as flow YAML).
fn rollout_case(steps: &str, expected: &[&str]) -> TestCase {
    let mut yaml = String::from(
        "rollout:
  apiVersion: rollouts.kruise.io/v1beta1
  kind: Rollout
  spec:
    strategy:
      canary:
        trafficRoutings:
        - service: shop
        steps:
",
    );
    yaml.push_str(steps);
    yaml.push_str(
        "original:
  apiVersion: networking.k8s.io/v1
  kind: Ingress
  metadata:
    annotations: {owner: team-a}
  spec: {rules: []}
expected:
",
    );
    for annotations in expected {
        yaml.push_str(&format!(
            "- apiVersion: networking.k8s.io/v1\n  kind: Ingress\n  metadata:\n    annotations: {annotations}\n"
        ));
    }
    parse_case(&yaml).expect("the case parses")
}

fn run_all(script: &str, flavor: ScriptFlavor, case: &TestCase, mode: Mode) -> Vec<StepOutcome> {
    let script = Script::new(script);
    (0..case.steps.len())
        .map(|index| {
            steps::run_case_step(StepToRun {
                script: &script,
                flavor,
                case,
                index,
                mode,
                options: &RunOptions::default(),
            })
        })
        .collect()
}

/// Adds a header line to `demo.io/headers` for every match: run on its own output it adds the
/// lines again, the bug the controller's chaining exposes.
const APPENDING: &str = r#"
local a = obj.annotations or {}
local lines = a["demo.io/headers"] or ""
for _, m in ipairs(obj.matches or {}) do
  for _, h in ipairs(m.headers or {}) do
    lines = lines .. h.name .. "=" .. h.value .. ";"
  end
end
if lines ~= "" then a["demo.io/headers"] = lines end
a["demo.io/weight"] = obj.weight
return a
"#;

/// Sets the weight and the header annotation from this step only, but never removes a header
/// annotation an earlier step set (idempotent, yet stale across steps).
const STALE: &str = r#"
local a = obj.annotations or {}
a["demo.io/weight"] = obj.weight
for _, m in ipairs(obj.matches or {}) do
  for _, h in ipairs(m.headers or {}) do
    a["demo.io/header"] = h.name .. "=" .. h.value
  end
end
return a
"#;

const HEADER_STEP: &str = "        - matches:
          - headers:
            - {name: user, value: tester}
";

#[test]
fn harness_mode_runs_each_ingress_step_on_the_original_annotations() {
    let case = rollout_case(
        &format!("{HEADER_STEP}        - traffic: 50%\n"),
        &[
            r#"{owner: team-a, demo.io/header: user=tester, demo.io/weight: "-1"}"#,
            r#"{owner: team-a, demo.io/weight: "50"}"#,
        ],
    );
    let steps = run_all(STALE, ScriptFlavor::Ingress, &case, Mode::Harness);
    assert!(
        steps.iter().all(|s| s.status == StepStatus::Pass),
        "{steps:#?}"
    );
    assert!(
        steps
            .iter()
            .all(|s| s.warnings.is_empty() && s.not_called.is_none())
    );
}

#[test]
fn production_mode_chains_ingress_steps_and_names_the_stale_keys() {
    let case = rollout_case(
        &format!("{HEADER_STEP}        - traffic: 50%\n"),
        &[
            r#"{owner: team-a, demo.io/header: user=tester, demo.io/weight: "-1"}"#,
            r#"{owner: team-a, demo.io/weight: "50"}"#,
        ],
    );
    let steps = run_all(STALE, ScriptFlavor::Ingress, &case, Mode::Production);
    assert_eq!(steps[0].status, StepStatus::Pass, "{:#?}", steps[0]);
    // Step 1 runs on step 0's output: the header annotation is still there.
    assert_eq!(steps[1].status, StepStatus::Fail);
    assert_eq!(
        steps[1].actual.as_deref(),
        Some(
            r#"{"annotations":{"demo.io/header":"user=tester","demo.io/weight":"50","owner":"team-a"}}"#
        )
    );
    assert_eq!(steps[1].warnings.len(), 1, "{:?}", steps[1].warnings);
    assert!(
        steps[1].warnings[0].contains("annotations demo.io/header differ"),
        "{}",
        steps[1].warnings[0]
    );
}

#[test]
fn a_script_that_is_not_idempotent_never_settles() {
    let case = rollout_case(
        HEADER_STEP,
        &[r#"{owner: team-a, demo.io/headers: "user=tester;", demo.io/weight: "-1"}"#],
    );
    let harness = run_all(APPENDING, ScriptFlavor::Ingress, &case, Mode::Harness);
    assert_eq!(harness[0].status, StepStatus::Pass);
    let production = run_all(APPENDING, ScriptFlavor::Ingress, &case, Mode::Production);
    assert_eq!(production[0].status, StepStatus::Fail);
    let warnings = production[0].warnings.join("\n");
    assert!(warnings.contains("not idempotent"), "{warnings}");
    assert!(warnings.contains("changing: demo.io/headers"), "{warnings}");
    assert!(
        warnings.contains("annotations demo.io/headers differ"),
        "{warnings}"
    );
}

#[test]
fn the_canary_ingress_is_created_by_a_run_with_weight_zero_from_the_stable_annotations() {
    // Remembers the first weight it saw: the creation run's "0", not the step's "30".
    let script = r#"
local a = obj.annotations or {}
a["demo.io/first-weight"] = a["demo.io/first-weight"] or obj.weight
a["demo.io/matches"] = tostring(obj.matches)
return a
"#;
    let case = rollout_case(
        "        - traffic: 30%\n",
        &[r#"{owner: team-a, demo.io/first-weight: "0", demo.io/matches: nil}"#],
    );
    let production = run_all(script, ScriptFlavor::Ingress, &case, Mode::Production);
    assert_eq!(
        production[0].status,
        StepStatus::Pass,
        "{:#?}",
        production[0]
    );
    let harness = run_all(script, ScriptFlavor::Ingress, &case, Mode::Harness);
    assert_eq!(harness[0].status, StepStatus::Fail);
    assert!(
        harness[0]
            .actual
            .as_deref()
            .unwrap()
            .contains(r#""demo.io/first-weight":"30""#)
    );

    // The same, through the controller API: creation, the step's run, and the run that
    // finds nothing to change.
    let obj = IngressData {
        annotations: Some(BTreeMap::from([("owner".into(), "team-a".into())])),
        weight: "30".into(),
        ..IngressData::default()
    };
    let routes = controller::ensure_ingress_routes(
        &Script::new(script),
        None,
        true,
        &obj,
        &RunOptions::default(),
    );
    assert_eq!(routes.ensure, IngressEnsure::Settled { runs: 2 });
    assert_eq!(
        routes
            .canary
            .unwrap()
            .get("demo.io/first-weight")
            .map(String::as_str),
        Some("0")
    );
}

#[test]
fn an_ingress_step_without_traffic_or_matches_is_not_run_and_keeps_the_canary() {
    // Fails for weight -1: the controller never runs it for such a step.
    let script = r#"
assert(obj.weight ~= "-1", "no weight")
print("ran with " .. obj.weight)
local a = obj.annotations or {}
a["demo.io/weight"] = obj.weight
return a
"#;
    let case = rollout_case(
        "        - traffic: 20%\n        - replicas: 2\n          requestHeaderModifier:\n            set: [{name: x, value: \"z\"}]\n",
        &[
            r#"{owner: team-a, demo.io/weight: "20"}"#,
            r#"{owner: team-a, demo.io/weight: "20"}"#,
        ],
    );
    let harness = run_all(script, ScriptFlavor::Ingress, &case, Mode::Harness);
    assert_eq!(harness[1].status, StepStatus::Error);
    let production = run_all(script, ScriptFlavor::Ingress, &case, Mode::Production);
    assert_eq!(
        production[1].status,
        StepStatus::Pass,
        "{:#?}",
        production[1]
    );
    assert_eq!(production[1].not_called, Some(NOT_CALLED_NO_TRAFFIC));
    assert!(production[1].prints.is_empty(), "the script did not run");
    assert_eq!(production[1].actual, production[0].actual);
    assert_eq!(production[0].not_called, None);
}

#[test]
fn a_first_ingress_step_with_weight_zero_creates_nothing() {
    let case = rollout_case(
        "        - traffic: 0%\n        - traffic: 10%\n",
        &["{}", r#"{owner: team-a, demo.io/weight: "10"}"#],
    );
    let production = run_all(STALE, ScriptFlavor::Ingress, &case, Mode::Production);
    assert_eq!(production[0].not_called, Some(NOT_CALLED_NOT_CREATED));
    assert_eq!(
        production[0].status,
        StepStatus::Pass,
        "{:#?}",
        production[0]
    );
    assert!(production[0].prints.is_empty());
    assert_eq!(
        production[1].status,
        StepStatus::Pass,
        "{:#?}",
        production[1]
    );
}

#[test]
fn a_failing_earlier_step_is_named_in_later_steps() {
    let script = r#"
if obj.weight == "10" then error("boom") end
return {["demo.io/weight"] = obj.weight}
"#;
    let case = rollout_case(
        "        - traffic: 10%\n        - traffic: 20%\n",
        &["{}", r#"{demo.io/weight: "20"}"#],
    );
    let production = run_all(script, ScriptFlavor::Ingress, &case, Mode::Production);
    assert_eq!(production[0].status, StepStatus::Error);
    assert_eq!(
        production[1].status,
        StepStatus::Pass,
        "{:#?}",
        production[1]
    );
    assert!(
        production[1]
            .warnings
            .iter()
            .any(|w| w.contains("never gets past step 1 (it fails")),
        "{:?}",
        production[1].warnings
    );
}

const ECHO_WEIGHT: &str = r#"
local spec = obj.data.spec
spec.weight = obj.canaryWeight
return obj.data
"#;

fn custom_case(steps: &str, weights: &[i64]) -> TestCase {
    let mut yaml = String::from(
        "rollout:
  apiVersion: rollouts.kruise.io/v1beta1
  kind: Rollout
  spec:
    strategy:
      canary:
        trafficRoutings:
        - service: web
        steps:
",
    );
    yaml.push_str(steps);
    yaml.push_str(
        "original:
  apiVersion: example.io/v1
  kind: Route
  spec: {weight: 0}
expected:
",
    );
    for weight in weights {
        yaml.push_str(&format!(
            "- apiVersion: example.io/v1\n  kind: Route\n  spec: {{weight: {weight}}}\n"
        ));
    }
    parse_case(&yaml).expect("the case parses")
}

#[test]
fn a_custom_step_without_traffic_or_matches_is_marked_and_explained() {
    // Step 2 has only a header modifier, step 3 `matches: []`: neither reaches the script.
    // Step 4's `traffic: "-1%"` does (the weight is -1 too, but the traffic is set).
    let case = custom_case(
        "        - traffic: 20%\n        - replicas: 1\n          requestHeaderModifier: {set: [{name: a, value: b}]}\n        - matches: []\n        - traffic: \"-1%\"\n",
        &[20, -1, 20, -1],
    );
    let harness = run_all(ECHO_WEIGHT, ScriptFlavor::Custom, &case, Mode::Harness);
    assert!(harness.iter().all(|s| s.not_called.is_none()));
    let production = run_all(ECHO_WEIGHT, ScriptFlavor::Custom, &case, Mode::Production);
    let not_called: Vec<_> = production.iter().map(|s| s.not_called).collect();
    assert_eq!(
        not_called,
        [
            None,
            Some(NOT_CALLED_NO_TRAFFIC),
            Some(NOT_CALLED_NO_TRAFFIC),
            None
        ]
    );
    // The verdict stays the script's result for the step's obj (the conformance vectors'
    // production verdicts); the warning says what the cluster keeps.
    assert_eq!(production[1].status, StepStatus::Pass);
    assert!(
        production[1].warnings[0].contains(
            r#"keeps step 1's result: {"spec":{"weight":20}}, which expected[1] does not match"#
        ),
        "{}",
        production[1].warnings[0]
    );
    assert_eq!(production[2].status, StepStatus::Fail);
    assert!(
        production[2].warnings[0].contains("which expected[2] matches"),
        "{}",
        production[2].warnings[0]
    );
    assert_eq!(production[3].status, StepStatus::Pass);
    assert!(production[3].warnings.is_empty());
}

#[test]
fn a_custom_first_step_without_traffic_keeps_the_original() {
    let case = custom_case("        - replicas: 1\n", &[0]);
    let production = run_all(ECHO_WEIGHT, ScriptFlavor::Custom, &case, Mode::Production);
    assert_eq!(production[0].not_called, Some(NOT_CALLED_NO_TRAFFIC));
    assert!(
        production[0].warnings[0]
            .contains(r#"keeps the original: {"spec":{"weight":0}}, which expected[0] matches"#),
        "{}",
        production[0].warnings[0]
    );
}

#[test]
fn a_traffic_routing_without_weight_or_matches_is_not_called() {
    let yaml = "trafficRouting:
  apiVersion: rollouts.kruise.io/v1alpha1
  kind: TrafficRouting
  spec:
    objectRef:
    - service: web
    strategy:
      requestHeaderModifier: {set: [{name: a, value: b}]}
original:
  apiVersion: example.io/v1
  kind: Route
  spec: {weight: 0}
expected:
- apiVersion: example.io/v1
  kind: Route
  spec: {weight: -1}
";
    let case = parse_case(yaml).unwrap();
    assert!(!case.steps[0].traffic_set);
    let production = run_all(ECHO_WEIGHT, ScriptFlavor::Custom, &case, Mode::Production);
    assert_eq!(production[0].not_called, Some(NOT_CALLED_NO_TRAFFIC));
    let weighted = parse_case(&yaml.replace(
        "requestHeaderModifier",
        "weight: 5\n      requestHeaderModifier",
    ))
    .unwrap();
    assert!(weighted.steps[0].traffic_set);
    assert!(weighted.steps[0].reaches_provider());
}

#[test]
fn a_step_that_runs_out_of_time_ends_the_replay_of_later_steps() {
    let script = r#"
if obj.weight == "10" then while true do end end
return {["demo.io/weight"] = obj.weight}
"#;
    let case = rollout_case(
        "        - traffic: 10%\n        - traffic: 20%\n        - traffic: 30%\n",
        &["{}", "{}", "{}"],
    );
    let options = RunOptions {
        limits: kruise_lua_engine::vm::Limits {
            timeout: std::time::Duration::from_millis(50),
            ..Default::default()
        },
        ..RunOptions::default()
    };
    let script = Script::new(script);
    let steps: Vec<StepOutcome> = (0..3)
        .map(|index| {
            steps::run_case_step(StepToRun {
                script: &script,
                flavor: ScriptFlavor::Ingress,
                case: &case,
                index,
                mode: Mode::Production,
                options: &options,
            })
        })
        .collect();
    assert!(
        steps.iter().all(|s| s.status == StepStatus::Error),
        "{steps:#?}"
    );
    let later = steps[2].error.as_ref().unwrap();
    assert_eq!(later.kind, kruise_lua_engine::ErrorKind::Timeout);
    assert!(
        later
            .message
            .starts_with("the rollout never gets past step 1"),
        "{}",
        later.message
    );
    assert_eq!(
        steps::ingress_step_obj(&script, &case, 1, &options),
        Ok(None),
        "no obj past a step that never ends"
    );
}

#[test]
fn the_merge_patch_leaves_exactly_the_result_and_runs_until_it_settles() {
    // Drops every annotation but `keep`: the merge patch deletes the others.
    let script = r#"
local a = obj.annotations or {}
return {keep = a.keep or "new", weight = obj.weight}
"#;
    let live = BTreeMap::from([
        ("keep".to_string(), "old".to_string()),
        ("stale".to_string(), "x".to_string()),
    ]);
    let obj = IngressData {
        weight: "40".into(),
        ..IngressData::default()
    };
    let routes = controller::ensure_ingress_routes(
        &Script::new(script),
        Some(&live),
        true,
        &obj,
        &RunOptions::default(),
    );
    // One run changes the annotations, the next finds nothing to change.
    assert_eq!(routes.ensure, IngressEnsure::Settled { runs: 2 });
    assert_eq!(
        routes.canary,
        Some(BTreeMap::from([
            ("keep".to_string(), "old".to_string()),
            ("weight".to_string(), "40".to_string()),
        ]))
    );
    assert_eq!(
        routes.step_obj.unwrap().annotations,
        Some(live),
        "the step's first run sees the live annotations"
    );

    // A counter never settles; the model stops at the run limit.
    let counter = r#"
local a = obj.annotations or {}
a.n = tostring((tonumber(a.n) or 0) + 1)
return a
"#;
    let routes = controller::ensure_ingress_routes(
        &Script::new(counter),
        Some(&BTreeMap::new()),
        true,
        &obj,
        &RunOptions::default(),
    );
    assert_eq!(
        routes.ensure,
        IngressEnsure::Unsettled {
            runs: controller::INGRESS_RUN_LIMIT,
            changing: vec!["n".to_string()]
        }
    );
    assert_eq!(
        routes.canary.unwrap()["n"],
        controller::INGRESS_RUN_LIMIT.to_string()
    );
}

#[test]
fn a_step_with_only_a_header_modifier_does_not_reach_the_provider() {
    use kruise_lua_engine::controller::TrafficStep;
    use kruise_lua_engine::luadata::{HeaderModifier, HttpRouteMatch};
    let modifier_only = TrafficStep {
        request_header_modifier: Some(HeaderModifier::default()),
        ..TrafficStep::default()
    };
    assert!(!modifier_only.reaches_provider());
    let empty_matches = TrafficStep {
        matches: Some(vec![]),
        ..TrafficStep::default()
    };
    assert!(!empty_matches.reaches_provider());
    let one_match = TrafficStep {
        matches: Some(vec![HttpRouteMatch::default()]),
        ..TrafficStep::default()
    };
    assert!(one_match.reaches_provider());
    let zero = TrafficStep {
        traffic: Some("0%".into()),
        ..TrafficStep::default()
    };
    assert!(zero.reaches_provider());
}

/// The intent check's one-pass replay of an ingress case gives, for every step, what replaying
/// the steps before it gives (`controller_ingress_step`): on every case of the library's
/// ingress scripts, and on a case whose step 2 fails and whose step 3 asks nothing.
#[test]
fn one_pass_ingress_results_match_the_per_step_replay() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../lua_configuration");
    let mut cases: Vec<(Script, TestCase)> = Vec::new();
    for entry in kruise_lua_engine::discovery::discover(&root).unwrap() {
        if ScriptFlavor::from(&entry.kind) != ScriptFlavor::Ingress {
            continue;
        }
        let script = Script::new(entry.source.as_str());
        for path in entry.cases.into_iter().flatten() {
            let text = std::fs::read_to_string(&path).unwrap();
            cases.push((script.clone(), parse_case(&text).unwrap()));
        }
    }
    let failing = Script::new(
        "if obj.weight == \"50\" then error(\"no\") end\nlocal a = obj.annotations or {}\na[\"w\"] = obj.weight\nreturn a",
    );
    cases.push((
        failing,
        rollout_case(
            "        - traffic: \"20%\"\n        - traffic: \"50%\"\n        - pause: {}\n        - traffic: \"80%\"\n",
            &["{}", "{}", "{}", "{}"],
        ),
    ));
    assert!(cases.len() > 10, "{}", cases.len());
    let options = RunOptions::default();
    for (script, case) in &cases {
        let all = steps::controller_ingress_results(script, case, &options);
        assert_eq!(all.len(), case.steps.len());
        for (index, one) in all.iter().enumerate() {
            let replayed = steps::controller_ingress_step(script, case, index, &options);
            assert_eq!(one.result, replayed.result, "step {index}");
            assert_eq!(one.not_called, replayed.not_called, "step {index}");
        }
    }
}
