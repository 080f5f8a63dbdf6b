//! One test per routing rule of the Istio model.

use super::*;

fn vs(http: &str) -> GatewayConfig {
    vs_version("networking.istio.io/v1", http)
}

fn vs_version(api_version: &str, http: &str) -> GatewayConfig {
    let text = format!(
        r#"{{"apiVersion":"{api_version}","kind":"VirtualService","metadata":{{"name":"web"}},"spec":{{"hosts":["web","*.example.com"],"http":{http}}}}}"#
    );
    GatewayConfig::Resource(JsonValue::parse_go_interface(text.as_bytes()).unwrap())
}

fn route(config: &GatewayConfig, request: &Request) -> String {
    IstioVirtualService.route(config, request).describe()
}

fn with_header(path: &str, name: &str, value: &str) -> Request {
    let mut request = Request::get(path);
    request.headers.insert(name, value);
    request
}

#[test]
fn first_matching_route_wins() {
    let config = vs(r#"[
        {"match":[{"uri":{"prefix":"/"}}],"route":[{"destination":{"host":"frontend"}}]},
        {"match":[{"uri":{"prefix":"/api"}}],"route":[{"destination":{"host":"web"}}]}]"#);
    assert_eq!(route(&config, &Request::get("/api/x")), "frontend 100 %");
}

#[test]
fn uri_prefix_exact_and_regex() {
    let config = vs(r#"[
        {"match":[{"uri":{"exact":"/pay"}}],"route":[{"destination":{"host":"pay"}}]},
        {"match":[{"uri":{"regex":"/v[0-9]+"}}],"route":[{"destination":{"host":"versioned"}}]},
        {"match":[{"uri":{"prefix":"/api"}}],"route":[{"destination":{"host":"api"}}]}]"#);
    assert_eq!(route(&config, &Request::get("/pay")), "pay 100 %");
    assert_eq!(route(&config, &Request::get("/pay/now")), "no route");
    // A regex matches the whole path.
    assert_eq!(route(&config, &Request::get("/v2")), "versioned 100 %");
    assert_eq!(route(&config, &Request::get("/v2/x")), "no route");
    // A prefix is a string prefix, not a path segment one.
    assert_eq!(route(&config, &Request::get("/apis")), "api 100 %");
}

#[test]
fn ignore_uri_case() {
    let config = vs(
        r#"[{"match":[{"uri":{"exact":"/Pay"},"ignoreUriCase":true}],"route":[{"destination":{"host":"pay"}}]}]"#,
    );
    assert_eq!(route(&config, &Request::get("/pay")), "pay 100 %");
}

#[test]
fn matches_are_ored_and_fields_anded() {
    let config = vs(r#"[
        {"match":[{"uri":{"prefix":"/a"},"headers":{"x-canary":{"exact":"1"}}},{"uri":{"prefix":"/b"}}],
         "route":[{"destination":{"host":"canary"}}]},
        {"route":[{"destination":{"host":"web"}}]}]"#);
    assert_eq!(route(&config, &Request::get("/a")), "web 100 %");
    assert_eq!(
        route(&config, &with_header("/a", "x-canary", "1")),
        "canary 100 %"
    );
    assert_eq!(route(&config, &Request::get("/b")), "canary 100 %");
}

#[test]
fn empty_header_match_checks_presence() {
    let config = vs(r#"[
        {"match":[{"headers":{"x-canary":{}}}],"route":[{"destination":{"host":"canary"}}]},
        {"route":[{"destination":{"host":"web"}}]}]"#);
    assert_eq!(
        route(&config, &with_header("/", "x-canary", "anything")),
        "canary 100 %"
    );
    assert_eq!(route(&config, &Request::get("/")), "web 100 %");
}

#[test]
fn without_headers_reads_a_missing_header_as_empty() {
    let config = vs(r#"[
        {"match":[{"withoutHeaders":{"x-beta":{"exact":"1"}}}],"route":[{"destination":{"host":"stable"}}]},
        {"route":[{"destination":{"host":"beta"}}]}]"#);
    assert_eq!(route(&config, &Request::get("/")), "stable 100 %");
    assert_eq!(
        route(&config, &with_header("/", "x-beta", "1")),
        "beta 100 %"
    );
    let presence = vs(r#"[
        {"match":[{"withoutHeaders":{"x-beta":{}}}],"route":[{"destination":{"host":"stable"}}]},
        {"route":[{"destination":{"host":"beta"}}]}]"#);
    assert_eq!(
        route(&presence, &with_header("/", "x-beta", "")),
        "beta 100 %"
    );
}

#[test]
fn query_params() {
    let config = vs(r#"[
        {"match":[{"queryParams":{"v":{"regex":"b[0-9]+"}}}],"route":[{"destination":{"host":"canary"}}]},
        {"route":[{"destination":{"host":"web"}}]}]"#);
    let mut request = Request::get("/");
    request.query.insert("v", "b12");
    assert_eq!(route(&config, &request), "canary 100 %");
    request.query.insert("v", "xb12");
    assert_eq!(route(&config, &request), "web 100 %");
}

#[test]
fn one_destination_takes_everything_whatever_its_weight() {
    let config = vs(r#"[{"route":[{"destination":{"host":"web"},"weight":10}]}]"#);
    assert_eq!(route(&config, &Request::get("/")), "web 100 %");
}

#[test]
fn weights_are_relative_and_zero_or_missing_drops_a_destination() {
    let config = vs(r#"[{"route":[
        {"destination":{"host":"web"},"weight":1},
        {"destination":{"host":"legacy"},"weight":1},
        {"destination":{"host":"web-canary"}}]}]"#);
    assert_eq!(route(&config, &Request::get("/")), "legacy 50 %, web 50 %");
}

#[test]
fn subsets_and_ports_name_backends() {
    let config = vs(r#"[{"route":[
        {"destination":{"host":"web","subset":"stable","port":{"number":80}},"weight":90},
        {"destination":{"host":"web","subset":"canary","port":{"number":80}},"weight":10}]}]"#);
    assert_eq!(
        route(&config, &Request::get("/")),
        "web/canary:80 10 %, web/stable:80 90 %"
    );
}

#[test]
fn request_header_operations_per_destination() {
    let config = vs(
        r#"[{"headers":{"request":{"set":{"x-from":"mesh"}}},"route":[
        {"destination":{"host":"web"},"weight":50},
        {"destination":{"host":"web-canary"},"weight":50,
         "headers":{"request":{"set":{"X-Release":"canary"},"add":{"x-trace":"on"},"remove":["x-debug"]}}}]}]"#,
    );
    let Routed::To(d) = IstioVirtualService.route(&config, &Request::get("/")) else {
        panic!("no route")
    };
    let canary = &d.header_changes[&Backend::service("web-canary")];
    assert_eq!(canary["x-release"], Some("canary".to_owned()));
    assert_eq!(canary["x-trace"], Some("on".to_owned()));
    assert_eq!(canary["x-debug"], None);
    assert_eq!(canary["x-from"], Some("mesh".to_owned()));
    assert_eq!(
        d.header_changes[&Backend::service("web")]
            .keys()
            .collect::<Vec<_>>(),
        ["x-from"]
    );
}

#[test]
fn hosts_outside_the_virtual_service_are_not_routed() {
    let config = vs(r#"[{"route":[{"destination":{"host":"web"}}]}]"#);
    let mut request = Request::get("/");
    request.host = Some("other.org".into());
    assert_eq!(route(&config, &request), "no route");
    request.host = Some("shop.example.com".into());
    assert_eq!(route(&config, &request), "web 100 %");
}

#[test]
fn redirects_answer_themselves() {
    let config = vs(r#"[{"redirect":{"uri":"/new"}},{"route":[{"destination":{"host":"web"}}]}]"#);
    assert_eq!(route(&config, &Request::get("/")), "no route");
}

#[test]
fn problems_invalid_regex_and_zero_total() {
    let config = vs(
        r#"[{"match":[{"headers":{"ua":{"regex":"(?!x)"}}}],"route":[
        {"destination":{"host":"web"},"weight":0},{"destination":{"host":"web-canary"},"weight":0}]}]"#,
    );
    let problems = IstioVirtualService.config_problems(&config);
    let paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(
        paths,
        ["spec.http[0].match[0].headers.ua", "spec.http[0].route"]
    );
    // `*` is a presence check, not an invalid regex.
    let star = vs(
        r#"[{"match":[{"headers":{"ua":{"regex":"*"}}}],"route":[{"destination":{"host":"web"}}]}]"#,
    );
    assert!(IstioVirtualService.config_problems(&star).is_empty());
}

#[test]
fn totals_other_than_100_only_before_v1() {
    let http = r#"[{"route":[{"destination":{"host":"web"},"weight":1},{"destination":{"host":"legacy"},"weight":1}]}]"#;
    assert!(IstioVirtualService.config_problems(&vs(http)).is_empty());
    let old = vs_version("networking.istio.io/v1beta1", http);
    let problems = IstioVirtualService.config_problems(&old);
    assert_eq!(problems.len(), 1);
    assert!(
        problems[0].message.contains("do not sum to 100"),
        "{problems:?}"
    );
}

#[test]
fn probes_hit_and_miss_each_match() {
    let config = vs(
        r#"[{"match":[{"uri":{"prefix":"/api"},"headers":{"x-canary":{"regex":"qa-[0-9]+"}}}],
        "route":[{"destination":{"host":"web"}}]}]"#,
    );
    let probes = IstioVirtualService.probes(&config);
    let hits = probes
        .iter()
        .filter(|p| IstioVirtualService.route(&config, p) != Routed::NoRoute)
        .count();
    // The hit, and the two paths a string prefix also matches (below it, and longer).
    assert_eq!(hits, 3, "{probes:?}");
    assert_eq!(probes.len(), 7);
}

/// QA repro `istio-bs-port`: a route restricted to port 9090 (or source labels, gateways, …)
/// took every probe, so the routes after it were never probed. The model does not evaluate
/// those conditions: the match is taken as not met, and each one is reported.
#[test]
fn unevaluated_conditions_are_not_met_and_reported() {
    for condition in [
        r#"{"port":9090}"#,
        r#"{"sourceLabels":{"app":"tester"}}"#,
        r#"{"gateways":["mesh"]}"#,
        r#"{"sourceNamespace":"qa"}"#,
        r#"{"scheme":{"exact":"https"},"uri":{"prefix":"/"}}"#,
    ] {
        let config = vs(&format!(
            r#"[{{"match":[{condition}],"route":[{{"destination":{{"host":"web-metrics"}}}}]}},
            {{"route":[{{"destination":{{"host":"web"}}}}]}}]"#
        ));
        assert_eq!(
            route(&config, &Request::get("/")),
            "web 100 %",
            "{condition}"
        );
        let problems = IstioVirtualService.config_problems(&config);
        assert_eq!(problems.len(), 1, "{condition}: {problems:?}");
        assert_eq!(problems[0].kind, ProblemKind::NotEvaluated);
        let key = condition[2..].split('"').next().unwrap();
        assert_eq!(problems[0].path, format!("spec.http[0].match[0].{key}"));
    }
    // Empty values restrict nothing (Go's zero values).
    let empty = vs(
        r#"[{"match":[{"sourceLabels":{},"gateways":[]}],"route":[{"destination":{"host":"web-metrics"}}]}]"#,
    );
    assert_eq!(route(&empty, &Request::get("/")), "web-metrics 100 %");
    assert!(IstioVirtualService.config_problems(&empty).is_empty());
}
