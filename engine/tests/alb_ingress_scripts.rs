//! The library's ALB ingress scripts (`trafficrouting_ingress/aws-alb.lua`, `aliyun-alb.lua`)
//! against their routing models: what a step writes routes the requests the step selects to the
//! canary and leaves the others on the stable service, and what one ALB rule cannot express
//! raises an error instead of being dropped; the intent check sees aws-alb's documented limit.

use std::collections::BTreeMap;

use kruise_lua_engine::intent::{StepIntentOutcome, check_case};
use kruise_lua_engine::routing::aliyun_alb::AliyunAlb;
use kruise_lua_engine::routing::aws_alb::AwsAlb;
use kruise_lua_engine::routing::{GatewayConfig, Request, Routed, RoutingModel, canary_ingress};
use kruise_lua_engine::runner::{RunOptions, Script, run_ingress_json};
use kruise_lua_engine::script::ScriptKind;
use kruise_lua_engine::testcase::parse_case;
use kruise_lua_engine::value::JsonValue;

fn script(class: &str) -> Script {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../lua_configuration/trafficrouting_ingress")
        .join(format!("{class}.lua"));
    Script::new(std::fs::read_to_string(path).unwrap())
}

fn json(text: &str) -> JsonValue {
    JsonValue::parse_go_interface(text.as_bytes()).unwrap()
}

/// Runs `class`'s script on `annotations` (a JSON object) with the step's `weight`, `matches`
/// and header modifier (JSON, `null` when absent).
fn run(
    class: &str,
    annotations: &str,
    weight: &str,
    matches: &str,
    modifier: &str,
) -> Result<BTreeMap<String, String>, String> {
    let obj = json(&format!(
        r#"{{"annotations":{annotations},"canaryService":"web-canary","matches":{matches},"requestHeaderModifier":{modifier},"weight":"{weight}"}}"#
    ));
    let run = run_ingress_json(&script(class), &obj, &RunOptions::default());
    match run.result {
        Ok(result) => Ok(result.unwrap_or_default()),
        Err(error) => Err(error.message),
    }
}

/// The stable Ingress `web` on shop.com `/` with `annotations`, its backend port `port`.
fn stable(annotations: &str, port: &str) -> JsonValue {
    json(&format!(
        r#"{{"apiVersion":"networking.k8s.io/v1","kind":"Ingress","metadata":{{"name":"web","namespace":"ns","annotations":{annotations}}},
        "spec":{{"rules":[{{"host":"shop.com","http":{{"paths":[
          {{"path":"/","pathType":"Prefix","backend":{{"service":{{"name":"web","port":{port}}}}}}},
          {{"path":"/static","pathType":"Prefix","backend":{{"service":{{"name":"static","port":{{"number":80}}}}}}}}]}}}}]}}}}"#
    ))
}

/// The canary share of `request` once the script ran for a step on the stable annotations.
fn canary_share(
    model: &dyn RoutingModel,
    stable: &JsonValue,
    result: &BTreeMap<String, String>,
    request: &Request,
) -> f64 {
    let config = GatewayConfig::Ingress {
        stable: stable.clone().into(),
        canary: Some(canary_ingress(stable, "web", "web-canary", Some(result))),
    };
    assert_eq!(model.config_problems(&config), vec![]);
    match model.route(&config, request) {
        Routed::To(d) => d.share_of_service("web-canary"),
        Routed::NoRoute => panic!("no route for {}", request.describe()),
    }
}

fn request(path: &str, headers: &[(&str, &str)], query: &[(&str, &str)]) -> Request {
    let mut r = Request::get(path);
    r.host = Some("shop.com".into());
    for (k, v) in headers {
        r.headers.insert(*k, *v);
    }
    for (k, v) in query {
        r.query.insert(*k, *v);
    }
    r
}

const AWS_STABLE: &str = r#"{"alb.ingress.kubernetes.io/group.name":"shop","alb.ingress.kubernetes.io/actions.web":"{\"type\":\"forward\",\"forwardConfig\":{\"targetGroups\":[{\"serviceName\":\"web\",\"servicePort\":80}]}}"}"#;

#[test]
fn aws_weights_and_conditions_route_as_the_step_asks() {
    let ingress = stable(AWS_STABLE, r#"{"name":"use-annotation"}"#);
    let weighted = run("aws-alb", AWS_STABLE, "20", "null", "null").unwrap();
    let plain = request("/a", &[], &[]);
    assert!((canary_share(&AwsAlb, &ingress, &weighted, &plain) - 0.2).abs() < 1e-9);

    let matched = run(
        "aws-alb",
        AWS_STABLE,
        "50",
        r#"[{"headers":[{"name":"x-canary","value":"true"}],"queryParams":[{"name":"beta","value":"1"}]}]"#,
        "null",
    )
    .unwrap();
    let both = request("/a", &[("x-canary", "true")], &[("beta", "1")]);
    let header_only = request("/a", &[("x-canary", "true")], &[]);
    assert_eq!(canary_share(&AwsAlb, &ingress, &matched, &both), 1.0);
    assert_eq!(canary_share(&AwsAlb, &ingress, &matched, &header_only), 0.0);
    assert_eq!(canary_share(&AwsAlb, &ingress, &matched, &plain), 0.0);
}

/// A known limit, documented in the script and the README: the canary Ingress's rules all come
/// before the stable Ingress's, so its `/` rule also takes the requests of a more specific path
/// of another service in the stable Ingress (the controller sorts paths within one Ingress only).
#[test]
fn aws_canary_rules_come_before_other_services_paths_of_the_stable_ingress() {
    let ingress = stable(AWS_STABLE, r#"{"name":"use-annotation"}"#);
    let weighted = run("aws-alb", AWS_STABLE, "20", "null", "null").unwrap();
    let config = GatewayConfig::Ingress {
        stable: ingress.clone().into(),
        canary: Some(canary_ingress(
            &ingress,
            "web",
            "web-canary",
            Some(&weighted),
        )),
    };
    let Routed::To(static_files) = AwsAlb.route(&config, &request("/static/x", &[], &[])) else {
        panic!("no route")
    };
    assert!((static_files.share_of_service("web-canary") - 0.2).abs() < 1e-9);
    assert!((static_files.share_of_service("web") - 0.8).abs() < 1e-9);
    // Without the canary Ingress, /static goes to its own service.
    let alone = GatewayConfig::Ingress {
        stable: ingress.into(),
        canary: None,
    };
    let Routed::To(before) = AwsAlb.route(&alone, &request("/static/x", &[], &[])) else {
        panic!("no route")
    };
    assert_eq!(before.share_of_service("static"), 1.0);
}

#[test]
fn aws_errors_name_what_one_rule_cannot_express() {
    let header = |name: &str, value: &str| {
        format!(r#"{{"headers":[{{"name":"{name}","value":"{value}"}}]}}"#)
    };
    for (annotations, matches, modifier, expected) in [
        (r#"{}"#.to_owned(), "null".to_owned(), "null", "group.name"),
        (
            r#"{"alb.ingress.kubernetes.io/group.name":"shop"}"#.to_owned(),
            "null".to_owned(),
            "null",
            "actions.web",
        ),
        (
            AWS_STABLE.to_owned(),
            format!("[{},{}]", header("a", "1"), header("b", "2")),
            "null",
            "same header",
        ),
        (
            AWS_STABLE.to_owned(),
            format!("[{}]", header("a", "x*")),
            "null",
            "wildcards",
        ),
        (
            AWS_STABLE.to_owned(),
            r#"[{"headers":[{"type":"RegularExpression","name":"a","value":"x"}]}]"#.to_owned(),
            "null",
            "RegularExpression",
        ),
        (
            AWS_STABLE.to_owned(),
            r#"[{"path":{"type":"PathPrefix","value":"/beta"}}]"#.to_owned(),
            "null",
            "path",
        ),
        (
            AWS_STABLE.to_owned(),
            "null".to_owned(),
            r#"{"set":[{"name":"x-release","value":"canary"}]}"#,
            "modify request headers",
        ),
    ] {
        let error = run("aws-alb", &annotations, "20", &matches, modifier).unwrap_err();
        assert!(error.contains(expected), "{error} (wanted {expected})");
    }
}

#[test]
fn aliyun_order_puts_the_canary_rule_first_and_matches_route_only_their_requests() {
    let notes = r#"{"alb.ingress.kubernetes.io/order":"5"}"#;
    let ingress = stable(notes, r#"{"number":80}"#);
    let weighted = run("aliyun-alb", notes, "20", "null", "null").unwrap();
    let plain = request("/a", &[], &[]);
    assert!((canary_share(&AliyunAlb, &ingress, &weighted, &plain) - 0.2).abs() < 1e-9);

    let matched = run(
        "aliyun-alb",
        notes,
        "30",
        r#"[{"headers":[{"name":"x-canary","value":"true"}]}]"#,
        "null",
    )
    .unwrap();
    let with = request("/a", &[("x-canary", "true")], &[]);
    assert_eq!(canary_share(&AliyunAlb, &ingress, &matched, &with), 1.0);
    // Kruise: matches take precedence over traffic, so the others stay on the stable service.
    assert_eq!(canary_share(&AliyunAlb, &ingress, &matched, &plain), 0.0);
}

#[test]
fn aliyun_errors_name_what_canary_annotations_cannot_express() {
    for (annotations, matches, modifier, expected) in [
        (
            "{}",
            r#"[{"headers":[{"name":"a","value":"1"}]},{"headers":[{"name":"a","value":"2"}]}]"#,
            "null",
            "ORed",
        ),
        (
            "{}",
            r#"[{"headers":[{"name":"a","value":"1"},{"name":"b","value":"2"}]}]"#,
            "null",
            "2 headers",
        ),
        (
            "{}",
            r#"[{"queryParams":[{"name":"beta","value":"1"}]}]"#,
            "null",
            "query",
        ),
        (
            "{}",
            r#"[{"headers":[{"type":"RegularExpression","name":"a","value":"x"}]}]"#,
            "null",
            "RegularExpression",
        ),
        ("{}", "null", r#"{"remove":["x-debug"]}"#, "request headers"),
        (
            r#"{"alb.ingress.kubernetes.io/order":"1"}"#,
            "null",
            "null",
            "order 1",
        ),
    ] {
        let error = run("aliyun-alb", annotations, "20", matches, modifier).unwrap_err();
        assert!(error.contains(expected), "{error} (wanted {expected})");
    }
}

/// A weight step on a stable Ingress in group "shop" whose `/` goes through `actions.web` and
/// whose `/static` goes to another service.
const AWS_STATIC_CASE: &str = r#"
rollout:
  spec:
    strategy:
      canary:
        trafficRoutings:
        - service: web
          ingress:
            classType: aws-alb
            name: web
        steps:
        - traffic: "20%"
original:
  apiVersion: networking.k8s.io/v1
  kind: Ingress
  metadata:
    name: web
    annotations:
      alb.ingress.kubernetes.io/group.name: shop
      alb.ingress.kubernetes.io/actions.web: '{"type":"forward","forwardConfig":{"targetGroups":[{"serviceName":"web","servicePort":80}]}}'
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
                name: use-annotation
        - path: /static
          pathType: Prefix
          backend:
            service:
              name: static
              port:
                number: 80
"#;

/// aws-alb's documented limit: the canary Ingress's `/` rule comes before the stable Ingress's
/// `/static` rule to another service, so a weight step also sends `/static` requests to the
/// canary. The intent check shows it, so a stable Ingress shaped like this cannot pass unseen.
#[test]
fn aws_canary_rules_ahead_of_another_services_path_are_caught() {
    let case = parse_case(AWS_STATIC_CASE).unwrap();
    let script = script("aws-alb");
    let kind = ScriptKind::Ingress {
        class: "aws-alb".to_owned(),
    };
    let checks = check_case(&kind, &script, &case, &RunOptions::default());
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
