//! Regression fixtures: the intent check, through the ingress routing models, catches the
//! defects issue 12 found in the ingress scripts as they were (copies under
//! `fixtures/ingress_2026/`, so fixing the library does not erase the fixture).

use kruise_lua_engine::discovery::ScriptKind;
use kruise_lua_engine::intent::{StepIntentOutcome, check_case};
use kruise_lua_engine::runner::{RunOptions, Script};
use kruise_lua_engine::testcase::parse_case;

fn fixture(name: &str) -> Script {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/ingress_2026")
        .join(name);
    Script::new(std::fs::read_to_string(path).unwrap())
}

/// A case for `class` with `steps` (YAML, indented for the `steps:` list) and a stable Ingress
/// serving `/` with `web` and `/static` with `static` on shop.example.com.
fn case(class: &str, steps: &str) -> String {
    format!(
        r#"
rollout:
  spec:
    strategy:
      canary:
        trafficRoutings:
        - service: web
          ingress:
            classType: {class}
            name: web
        steps:
{steps}
original:
  apiVersion: networking.k8s.io/v1
  kind: Ingress
  metadata:
    name: web
  spec:
    rules:
    - host: shop.example.com
      http:
        paths:
        - path: /
          pathType: Prefix
          backend:
            service:
              name: web
              port:
                number: 80
        - path: /static
          pathType: Prefix
          backend:
            service:
              name: static
              port:
                number: 80
"#
    )
}

/// Every violation message of every checked step.
fn findings(class: &str, script: &str, steps: &str) -> Vec<Vec<String>> {
    let case = parse_case(&case(class, steps)).unwrap();
    let kind = ScriptKind::Ingress {
        class: class.to_owned(),
    };
    check_case(&kind, &fixture(script), &case, &RunOptions::default())
        .unwrap()
        .into_iter()
        .map(|check| match check.outcome {
            StepIntentOutcome::Checked(report) => {
                report.violations.into_iter().map(|v| v.message).collect()
            }
            StepIntentOutcome::NotChecked(why) => panic!("step not checked: {why}"),
        })
        .collect()
}

/// nginx: a header ANDed with a query parameter becomes canary-by-header alone, so requests
/// without the query reach the canary.
#[test]
fn nginx_dropping_an_anded_query_is_caught() {
    let steps = r#"        - matches:
          - headers:
            - name: x-canary
              value: "true"
            queryParams:
            - name: beta
              value: "1""#;
    let found = findings("nginx", "nginx.lua", steps);
    assert!(
        found[0]
            .iter()
            .any(|m| m.contains("with x-canary: true") && m.contains("→ web-canary:80 100 %")),
        "{found:?}"
    );
}

/// higress: canary-weight next to canary-by-header-value is ignored, so the step's weight never
/// reaches the requests without the header.
#[test]
fn higress_weight_beside_a_header_is_caught() {
    let steps = r#"        - traffic: "10%"
          matches:
          - headers:
            - name: x-canary
              value: "true""#;
    let found = findings("higress", "higress.lua", steps);
    assert!(
        found[0]
            .iter()
            .any(|m| m.contains("canary-weight is ignored")),
        "{found:?}"
    );
}

/// aws-alb's documented limit: the canary Ingress's `/` rule comes before the stable Ingress's
/// `/static` rule to another service, so a weight step also sends `/static` requests to the
/// canary. The intent check shows it, so a stable Ingress shaped like this cannot pass unseen.
#[test]
fn aws_canary_rules_ahead_of_another_services_path_are_caught() {
    let source = case("aws-alb", r#"        - traffic: "20%""#)
        .replace(
            "    name: web\n  spec:",
            "    name: web\n    annotations:\n      alb.ingress.kubernetes.io/group.name: shop\n      \
             alb.ingress.kubernetes.io/actions.web: '{\"type\":\"forward\",\"forwardConfig\":{\"targetGroups\":[{\"serviceName\":\"web\",\"servicePort\":80}]}}'\n  spec:",
        )
        .replacen("number: 80", "name: use-annotation", 1);
    let case = parse_case(&source).unwrap();
    let script = Script::new(
        std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../lua_configuration/trafficrouting_ingress/aws-alb.lua"),
        )
        .unwrap(),
    );
    let kind = ScriptKind::Ingress {
        class: "aws-alb".to_owned(),
    };
    let checks = check_case(&kind, &script, &case, &RunOptions::default()).unwrap();
    let StepIntentOutcome::Checked(report) = &checks[0].outcome else {
        panic!("{:?}", checks[0].outcome)
    };
    assert!(
        report
            .violations
            .iter()
            .any(|v| v.message.starts_with("GET shop.example.com/static")
                && v.message.contains("expected static:80 100 %")),
        "{:?}",
        report.violations
    );
}
