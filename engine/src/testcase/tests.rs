//! Tests of reading cases: decoding as Kruise does, steps, warnings and positions.

use super::*;
use crate::yaml::PathSeg;

const ROLLOUT_HEAD: &str = "rollout:
  apiVersion: rollouts.kruise.io/v1beta1
  kind: Rollout
  spec:
    strategy:
      canary:
        trafficRoutings:
        - service: web
        steps:
";

const ORIGINAL: &str = "original:
  apiVersion: example.io/v1
  kind: Route
  metadata:
    labels: {app: web}
  spec: {port: 8080}
";

fn rollout_case(steps: &str, tail: &str) -> String {
    format!("{ROLLOUT_HEAD}{steps}{ORIGINAL}{tail}")
}

#[test]
fn rollout_steps_become_objs() {
    let src = rollout_case(
        "        - traffic: 20%\n          matches:\n          - headers:\n            - {name: x, value: \"1\"}\n        - pause: {}\n",
        "expected:\n- kind: Route\n- kind: Route\n  spec: {x: 1}\n",
    );
    let case = parse_case(&src).unwrap();
    assert_eq!(case.kind, CaseKind::Rollout);
    assert_eq!(case.steps.len(), 2);
    let first = &case.steps[0].obj;
    assert_eq!((first.canary_weight, first.stable_weight), (20, 80));
    assert_eq!(
        (first.stable_service.as_str(), first.canary_service.as_str()),
        ("web", "web-canary")
    );
    let headers = first.matches.as_ref().unwrap()[0].headers.as_ref().unwrap();
    assert_eq!(
        (headers[0].name.as_str(), headers[0].value.as_str()),
        ("x", "1")
    );
    assert_eq!(case.steps[1].obj.canary_weight, -1);
    assert_eq!(case.steps[1].obj.matches, None);
    assert_eq!(
        first.data.spec,
        Some(JsonValue::Object(
            [("port".to_string(), JsonValue::Int(8080))].into()
        ))
    );
    assert_eq!(first.data.labels.as_ref().unwrap()["app"], "web");
    assert_eq!(case.expected.len(), 2);
    // The step's span points at its mapping.
    let step_span = case.steps[1].span.unwrap();
    assert_eq!(
        &src[step_span.start.offset..step_span.end.offset],
        "pause: {}"
    );
}

#[test]
fn spans_of_expected_fields() {
    let src = rollout_case(
        "        - traffic: 20%\n",
        "expected:\n- kind: Route\n- kind: Route\n  spec:\n    x: 1\n",
    );
    let case = parse_case(&src).unwrap();
    let x = case.root.at_path(&[
        PathSeg::Key("expected".into()),
        PathSeg::Index(1),
        PathSeg::Key("spec".into()),
        PathSeg::Key("x".into()),
    ]);
    let x = x.unwrap();
    let line_of_x = src.lines().position(|l| l == "    x: 1").unwrap() as u32 + 1;
    assert_eq!((x.span.start.line, x.span.start.column), (line_of_x, 8));
    // The same node is reachable from the entry.
    let from_entry = case.expected[1]
        .node
        .at_path(&[PathSeg::Key("spec".into()), PathSeg::Key("x".into())])
        .unwrap();
    assert_eq!(from_entry.span, x.span);
    let seq = case.expected_span.unwrap();
    assert_eq!(seq.start.line, line_of_x - 3);
    // More expected entries than steps: a warning on the first extra entry.
    let extra = case
        .warnings
        .iter()
        .find(|w| w.message.contains("expected has 2 entries"))
        .unwrap();
    assert_eq!(extra.span.unwrap().start.line, line_of_x - 2);
}

#[test]
fn unknown_fields_are_warnings_with_spans() {
    let src = rollout_case(
        "        - traffic: 20%\n          weight: 20\n          unknownField: x\n          matches:\n          - headerz: []\n",
        "expected:\n- kind: Route\nexpect: []\n",
    );
    let case = parse_case(&src).unwrap();
    let find = |needle: &str| {
        case.warnings
            .iter()
            .find(|w| w.message.contains(needle))
            .unwrap_or_else(|| panic!("no warning about {needle}: {:?}", case.warnings))
    };
    let weight = find("`weight`");
    assert!(weight.message.contains("traffic"), "{}", weight.message);
    let span = weight.span.unwrap();
    assert_eq!(&src[span.start.offset..span.end.offset], "weight");
    assert_eq!(span.start.column, 11);
    find("`unknownField`");
    let headerz = find("`headerz`");
    assert!(
        headerz.message.contains("steps[0].matches[0].headerz"),
        "{}",
        headerz.message
    );
    find("`expect`");
    // Nothing is reported inside the resources themselves.
    assert!(!case.warnings.iter().any(|w| w.message.contains("`port`")));
    // A case-insensitive match works, with a warning.
    let src = rollout_case("        - Traffic: 30%\n", "expected:\n- kind: Route\n");
    let case = parse_case(&src).unwrap();
    assert_eq!(case.steps[0].obj.canary_weight, 30);
    assert!(
        case.warnings
            .iter()
            .any(|w| w.message.contains("case-insensitively"))
    );
}

#[test]
fn step_fields_are_not_converted_to_strings() {
    for step in [
        "        - traffic: 50\n",
        "        - traffic: true\n",
        "        - matches:\n          - headers:\n            - {name: a, value: 2}\n",
        "        - requestHeaderModifier: {set: [{name: a, value: 1}]}\n",
    ] {
        let err = parse_case(&rollout_case(step, "expected:\n- kind: Route\n")).unwrap_err();
        assert!(
            err.message.contains("cannot unmarshal"),
            "{step}: {}",
            err.message
        );
        assert!(err.span.is_some());
    }
    let err = parse_case(&rollout_case(
        "        - traffic: 50\n",
        "expected:\n- kind: Route\n",
    ))
    .unwrap_err();
    assert!(
        err.message.ends_with(
            "Go struct field CanaryStep.rollout.spec.strategy.canary.steps.traffic of type string"
        ),
        "{}",
        err.message
    );
    // Strings that look like numbers are fine, and so is `null`.
    let case = parse_case(&rollout_case(
        "        - traffic: \"50\"\n        - traffic: ~\n",
        "expected:\n- kind: Route\n",
    ))
    .unwrap();
    assert_eq!(case.steps[0].obj.canary_weight, 0);
    assert_eq!(case.steps[1].obj.canary_weight, -1);
    // Other step fields keep their Go types: pause.duration is an int32.
    assert!(
        parse_case(&rollout_case(
            "        - pause: {duration: \"5\"}\n",
            "expected:\n- kind: Route\n"
        ))
        .is_err()
    );
    assert!(
        parse_case(&rollout_case(
            "        - replicas: 1.5\n",
            "expected:\n- kind: Route\n"
        ))
        .is_err()
    );
    assert!(
        parse_case(&rollout_case(
            "        - replicas: 50%\n",
            "expected:\n- kind: Route\n"
        ))
        .is_ok()
    );
}

const TRAFFIC_ROUTING_HEAD: &str = "trafficRouting:
  apiVersion: rollouts.kruise.io/v1alpha1
  kind: TrafficRouting
  spec:
    objectRef:
    - service: web
    strategy:
";

#[test]
fn duplicate_keys_and_later_documents_are_warned_about() {
    let src = format!(
        "{TRAFFIC_ROUTING_HEAD}      weight: 10\n{ORIGINAL}expected:\n- kind: Route\n  spec: {{a: 1, a: 2, on: 3, \"true\": 4}}\n---\nexpected: []\n"
    );
    let case = parse_case(&src).unwrap();
    let messages: Vec<&str> = case.warnings.iter().map(|w| w.message.as_str()).collect();
    assert!(
        messages
            .iter()
            .any(|m| m.contains("the key `a` is written twice")),
        "{messages:?}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m.contains("both become the JSON key `true`")),
        "{messages:?}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m.contains("more than one YAML document")),
        "{messages:?}"
    );
    // Kruise's reading is kept: the later value wins, the first document counts.
    let spec = case.expected[0]
        .data
        .spec
        .as_ref()
        .unwrap()
        .to_canonical_json();
    assert_eq!(spec, r#"{"a":2,"true":4}"#);
    assert_eq!(case.expected.len(), 1);
}

#[test]
fn steps_share_the_data_of_original() {
    let case = parse_case(&rollout_case(
        "        - traffic: 10%\n        - traffic: 20%\n        - traffic: 30%\n",
        "",
    ))
    .unwrap();
    assert_eq!(case.steps.len(), 3);
    assert!(Arc::ptr_eq(
        &case.steps[0].obj.data,
        &case.steps[2].obj.data
    ));
}

#[test]
fn a_nan_in_original_is_a_conversion_error_at_its_line() {
    let src = format!(
        "{TRAFFIC_ROUTING_HEAD}      weight: 10\noriginal:\n  kind: R\n  spec: {{x: .nan}}\nexpected: []\n"
    );
    let err = parse_case(&src).unwrap_err();
    assert!(
        err.message.contains("json: unsupported value: NaN"),
        "{err:?}"
    );
    assert_eq!(err.span.unwrap().start.line, 11);
}

#[test]
fn traffic_routing_converts_numbers_where_go_has_strings() {
    let src = format!(
        "{TRAFFIC_ROUTING_HEAD}      weight: 1e1\n      matches:\n      - path: {{value: /x}}\n        headers:\n        - {{name: 1, value: 8080, type: Exact}}\n        - {{name: on, value: 1.5}}\n      requestHeaderModifier:\n        remove: [1]\n{ORIGINAL}expected:\n- kind: Route\n"
    );
    let case = parse_case(&src).unwrap();
    assert_eq!(case.kind, CaseKind::TrafficRouting);
    let obj = &case.steps[0].obj;
    assert_eq!((obj.canary_weight, obj.stable_weight), (10, 90));
    assert_eq!(
        (obj.canary_service.as_str(), obj.stable_service.as_str()),
        ("web", "web")
    );
    let m = &obj.matches.as_ref().unwrap()[0];
    assert_eq!(m.path, None);
    let headers = m.headers.as_ref().unwrap();
    assert_eq!(
        (headers[0].name.as_str(), headers[0].value.as_str()),
        ("1", "8080")
    );
    assert_eq!(
        (headers[1].name.as_str(), headers[1].value.as_str()),
        ("true", "1.5")
    );
    assert_eq!(
        obj.request_header_modifier.as_ref().unwrap().remove,
        Some(vec!["1".to_string()])
    );
    // `path` is not a v1alpha1 match field.
    assert!(case.warnings.iter().any(|w| w.message.contains("`path`")));
    // Weight must be an int32.
    for weight in ["\"30\"", "1.5", "3000000000", "true"] {
        let src = format!(
            "{TRAFFIC_ROUTING_HEAD}      weight: {weight}\n{ORIGINAL}expected:\n- kind: Route\n"
        );
        assert!(parse_case(&src).is_err(), "weight {weight}");
    }
    // No weight: -1, and matches is an empty list.
    let src = format!("{TRAFFIC_ROUTING_HEAD}      {{}}\n{ORIGINAL}expected:\n- kind: Route\n");
    let obj = parse_case(&src).unwrap().steps[0].obj.clone();
    assert_eq!(
        (obj.canary_weight, obj.stable_weight, obj.matches.clone()),
        (-1, 101, Some(vec![]))
    );
}

#[test]
fn resources_must_have_a_kind() {
    let base = rollout_case("        - traffic: 20%\n", "");
    for expected in [
        "expected:\n- spec: {}\n",
        "expected:\n- kind: \"\"\n",
        "expected:\n- kind: 5\n",
        "expected:\n- [kind]\n",
        "expected:\n- kind: Route\n  apiVersion: a/b/c\n",
        "expected: {kind: Route}\n",
    ] {
        assert!(
            parse_case(&format!("{base}{expected}")).is_err(),
            "{expected}"
        );
    }
    assert!(
        parse_case(&format!(
            "{base}expected:\n- kind: Route\n  apiVersion: v1\n"
        ))
        .is_ok()
    );
    assert!(parse_case(&format!("{base}expected:\n- ~\n")).is_err());
    // No expected at all is not a parse error (the runner reports the missing entries).
    let case = parse_case(&base).unwrap();
    assert!(case.expected.is_empty());
    let no_original = format!("{ROLLOUT_HEAD}        - traffic: 20%\nexpected:\n- kind: Route\n");
    assert!(parse_case(&no_original).is_err());
}

#[test]
fn labels_need_every_value_to_be_a_string() {
    let src = format!(
        "{ROLLOUT_HEAD}        - traffic: 20%\noriginal:\n  kind: Route\n  metadata:\n    labels: {{a: x, b: yes}}\n    annotations: {{c: \"3\"}}\nexpected:\n- kind: Route\n  metadata:\n    labels: {{n: 3}}\n"
    );
    let case = parse_case(&src).unwrap();
    let data = &case.steps[0].obj.data;
    assert_eq!(data.labels, None);
    assert_eq!(data.annotations.as_ref().unwrap()["c"], "3");
    assert_eq!(data.spec, None);
    assert_eq!(case.expected[0].data.labels, None);
    let dropped: Vec<_> = case
        .warnings
        .iter()
        .filter(|w| w.message.contains("dropped"))
        .collect();
    assert_eq!(dropped.len(), 2, "{:?}", case.warnings);
}

#[test]
fn structural_errors() {
    let tail = format!("{ORIGINAL}expected:\n- kind: Route\n");
    // Neither input.
    let err = parse_case(&tail).unwrap_err();
    assert_eq!(
        err.message,
        "neither rollout nor trafficRouting defined in test case"
    );
    // Rollout without canary, or without trafficRoutings.
    assert!(parse_case(&format!("rollout: {{spec: {{}}}}\n{tail}")).is_err());
    assert!(
        parse_case(&format!(
            "rollout: {{spec: {{strategy: {{canary: {{steps: [{{}}]}}}}}}}}\n{tail}"
        ))
        .is_err()
    );
    // Blue-green steps are used when there is no canary.
    let bg = format!(
        "rollout: {{spec: {{strategy: {{blueGreen: {{trafficRoutings: [{{service: s}}], steps: [{{traffic: 5%}}]}}}}}}}}\n{tail}"
    );
    let case = parse_case(&bg).unwrap();
    assert_eq!(case.steps[0].obj.canary_weight, 5);
    // Bad YAML.
    let err = parse_case("rollout: [\n").unwrap_err();
    assert!(
        err.message.starts_with("error converting YAML to JSON"),
        "{}",
        err.message
    );
    assert!(err.span.is_some());
    // NaN cannot become JSON.
    assert!(
        parse_case(&format!(
            "{ROLLOUT_HEAD}        - traffic: 20%\noriginal: {{kind: R, spec: {{x: .nan}}}}\n"
        ))
        .is_err()
    );
    // Not a mapping at all.
    assert!(parse_case("- a\n").is_err());
    assert!(parse_case("").is_err());
}

#[test]
fn rollout_wins_over_traffic_routing() {
    let src = format!(
        "{ROLLOUT_HEAD}        - traffic: 60%\n{TRAFFIC_ROUTING_HEAD}      weight: 5\n{ORIGINAL}expected:\n- kind: Route\n"
    );
    let case = parse_case(&src).unwrap();
    assert_eq!(case.kind, CaseKind::Rollout);
    assert_eq!(case.steps[0].obj.canary_weight, 60);
    assert!(
        case.warnings
            .iter()
            .any(|w| w.message.contains("ignores trafficRouting"))
    );
    // ...but the ignored trafficRouting must still decode.
    let src = format!(
        "{ROLLOUT_HEAD}        - traffic: 60%\n{TRAFFIC_ROUTING_HEAD}      weight: \"5\"\n{ORIGINAL}expected:\n- kind: Route\n"
    );
    assert!(parse_case(&src).is_err());
}

#[test]
fn unstructured_numbers() {
    assert_eq!(unstructured_number(1000.0), JsonValue::Int(1000));
    assert_eq!(unstructured_number(-0.0), JsonValue::Int(0));
    assert_eq!(unstructured_number(0.5), JsonValue::Float(0.5));
    assert_eq!(unstructured_number(1e20), JsonValue::Float(1e20));
    assert_eq!(
        unstructured_number(2f64.powi(62)),
        JsonValue::Int(4611686018427388000)
    );
    assert!(is_rfc3339("2024-01-02T03:04:05Z"));
    assert!(is_rfc3339("2024-01-02T03:04:05.123+02:00"));
    assert!(!is_rfc3339("2024-01-02"));
    assert!(!is_rfc3339("2024-13-02T03:04:05Z"));
}
