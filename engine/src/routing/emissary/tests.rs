//! One test per routing rule of the Emissary model.

use super::*;

fn mapping(spec: &str) -> JsonValue {
    let text = format!(
        r#"{{"apiVersion":"getambassador.io/v3alpha1","kind":"Mapping","metadata":{{"name":"m"}},"spec":{spec}}}"#
    );
    JsonValue::parse_go_interface(text.as_bytes()).unwrap()
}

fn list(specs: &[&str]) -> GatewayConfig {
    GatewayConfig::Resource(JsonValue::Object(crate::value::JsonMap::from([
        ("kind".to_owned(), JsonValue::String("List".to_owned())),
        (
            "items".to_owned(),
            JsonValue::Array(specs.iter().map(|s| mapping(s)).collect()),
        ),
    ])))
}

fn route(config: &GatewayConfig, request: &Request) -> String {
    EmissaryMapping.route(config, request).describe()
}

#[test]
fn a_lone_mapping_takes_everything_whatever_its_weight() {
    let config = list(&[r#"{"prefix":"/","service":"web-canary:80","weight":20}"#]);
    assert_eq!(route(&config, &Request::get("/a")), "web-canary:80 100 %");
}

#[test]
fn weighted_mappings_take_their_weight_and_the_rest_share_what_is_left() {
    let config = list(&[
        r#"{"prefix":"/","service":"web:80"}"#,
        r#"{"prefix":"/","service":"web-canary:80","weight":20}"#,
    ]);
    assert_eq!(
        route(&config, &Request::get("/")),
        "web:80 80 %, web-canary:80 20 %"
    );
    let three = list(&[
        r#"{"prefix":"/","service":"a"}"#,
        r#"{"prefix":"/","service":"b"}"#,
        r#"{"prefix":"/","service":"c","weight":25}"#,
    ]);
    // 75 left: round(37.5) = 38 (half to even), the last takes the rest.
    assert_eq!(route(&three, &Request::get("/")), "a 38 %, b 37 %, c 25 %");
}

#[test]
fn a_weight_gap_falls_through_to_later_groups() {
    let config = list(&[
        r#"{"prefix":"/api","service":"api-canary","weight":10}"#,
        r#"{"prefix":"/api","service":"api-beta","weight":20}"#,
        r#"{"prefix":"/","service":"frontend"}"#,
    ]);
    assert_eq!(
        route(&config, &Request::get("/api")),
        "api-beta 20 %, api-canary 10 %, frontend 70 %"
    );
}

#[test]
fn longer_prefixes_and_higher_precedence_go_first() {
    let config = list(&[
        r#"{"prefix":"/","service":"frontend"}"#,
        r#"{"prefix":"/api","service":"api"}"#,
    ]);
    assert_eq!(route(&config, &Request::get("/api/x")), "api 100 %");
    let precedence = list(&[
        r#"{"prefix":"/","service":"frontend","precedence":10}"#,
        r#"{"prefix":"/api","service":"api"}"#,
    ]);
    assert_eq!(
        route(&precedence, &Request::get("/api/x")),
        "frontend 100 %"
    );
}

#[test]
fn header_conditions_outrank_and_form_their_own_group() {
    let config = list(&[
        r#"{"prefix":"/","service":"web"}"#,
        r#"{"prefix":"/","service":"web-canary","headers":{"x-canary":"1"},"weight":50}"#,
    ]);
    assert_eq!(route(&config, &Request::get("/")), "web 100 %");
    let mut request = Request::get("/");
    request.headers.insert("x-canary", "1");
    // Its own group: a lone Mapping gets 100 whatever its weight.
    assert_eq!(route(&config, &request), "web-canary 100 %");
}

#[test]
fn regex_headers_presence_and_query() {
    let config = list(&[
        r#"{"prefix":"/","service":"canary","regex_headers":{"user-agent":".*Android.*"},"query_parameters":{"beta":true}}"#,
        r#"{"prefix":"/","service":"web"}"#,
    ]);
    let mut request = Request::get("/");
    request.headers.insert("user-agent", "x Android y");
    assert_eq!(route(&config, &request), "web 100 %");
    request.query.insert("beta", "anything");
    assert_eq!(route(&config, &request), "canary 100 %");
}

#[test]
fn prefix_exact_and_regex() {
    let config = list(&[
        r#"{"prefix":"/pay","prefix_exact":true,"service":"pay"}"#,
        r#"{"prefix":"/v[0-9]+","prefix_regex":true,"service":"versioned"}"#,
    ]);
    assert_eq!(route(&config, &Request::get("/pay/x")), "no route");
    assert_eq!(route(&config, &Request::get("/pay")), "pay 100 %");
    assert_eq!(route(&config, &Request::get("/v2")), "versioned 100 %");
    assert_eq!(route(&config, &Request::get("/v2/x")), "no route");
}

#[test]
fn request_header_operations() {
    let config = list(&[
        r#"{"prefix":"/","service":"web"}"#,
        r#"{"prefix":"/","service":"web-canary","weight":10,"add_request_headers":{"x-release":{"value":"canary","append":false},"x-a":"b"},"remove_request_headers":["x-debug"]}"#,
    ]);
    let Routed::To(d) = EmissaryMapping.route(&config, &Request::get("/")) else {
        panic!()
    };
    let changes = &d.header_changes[&Backend::service("web-canary")];
    assert_eq!(changes["x-release"], Some("canary".into()));
    assert_eq!(changes["x-a"], Some("b".into()));
    assert_eq!(changes["x-debug"], None);
    assert!(!d.header_changes.contains_key(&Backend::service("web")));
}

#[test]
fn problems_weights_over_100_and_invalid_regexes() {
    let config = list(&[
        r#"{"prefix":"/","service":"a","weight":60}"#,
        r#"{"prefix":"/","service":"b","weight":60}"#,
        r#"{"prefix":"/x","service":"c","regex_headers":{"h":"("}}"#,
    ]);
    let messages: Vec<String> = EmissaryMapping
        .config_problems(&config)
        .into_iter()
        .map(|p| format!("{}: {}", p.path, p.message))
        .collect();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert!(messages[0].contains("exceeds 100"));
    assert!(messages[1].starts_with("spec.regex_headers.h: invalid RE2"));
}

#[test]
fn the_stable_mapping_is_implied_beside_the_canary_one() {
    let original = GatewayConfig::Resource(mapping(
        r#"{"prefix":"/","service":"http://web-canary.prod:8080","weight":0}"#,
    ));
    let after = GatewayConfig::Resource(mapping(
        r#"{"prefix":"/","service":"http://web-canary.prod:8080","weight":30}"#,
    ));
    let seen = EmissaryMapping
        .surroundings(&after, &original, "web", "web-canary")
        .unwrap()
        .expect("the stable Mapping is added");
    assert_eq!(
        route(&seen, &Request::get("/")),
        "web-canary.prod:8080 30 %, web.prod:8080 70 %"
    );
    let stable = GatewayConfig::Resource(mapping(r#"{"prefix":"/","service":"web:80"}"#));
    assert!(
        EmissaryMapping
            .surroundings(&stable, &stable, "web", "web-canary")
            .is_err()
    );
    // A Mapping to neither service is what the gateway sees, unchanged.
    let other = GatewayConfig::Resource(mapping(r#"{"prefix":"/","service":"api:80"}"#));
    assert_eq!(
        EmissaryMapping.surroundings(&other, &other, "web", "web-canary"),
        Ok(None)
    );
}

/// A `host` or `method` read as a regex is not evaluated: the Mapping is taken as not met
/// (it was compared as an exact host, or ignored without a request host) and reported.
#[test]
fn regex_hosts_and_methods_are_not_met_and_reported() {
    let config = list(&[
        r#"{"prefix":"/","service":"tenant:80","host":".*\\.example\\.com","host_regex":true,"precedence":10}"#,
        r#"{"prefix":"/","service":"web:80"}"#,
    ]);
    assert_eq!(route(&config, &Request::get("/a")), "web:80 100 %");
    let problems = EmissaryMapping.config_problems(&config);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].kind, ProblemKind::NotEvaluated);
    assert_eq!(problems[0].path, "spec.host");
}

#[test]
fn case_insensitive_prefixes_ignore_ascii_case_and_regexes_do_not() {
    let config = list(&[
        r#"{"prefix":"/api","service":"api","case_sensitive":false}"#,
        r#"{"prefix":"/Exact","prefix_exact":true,"service":"exact","case_sensitive":false}"#,
        r#"{"prefix":"/re/.*","prefix_regex":true,"service":"re","case_sensitive":false}"#,
        r#"{"prefix":"/","service":"web"}"#,
    ]);
    assert_eq!(route(&config, &Request::get("/API/v1")), "api 100 %");
    assert_eq!(route(&config, &Request::get("/exact")), "exact 100 %");
    assert_eq!(route(&config, &Request::get("/exact/x")), "web 100 %");
    // Envoy ignores case_sensitive for a regex path.
    assert_eq!(route(&config, &Request::get("/RE/x")), "web 100 %");
    assert!(
        EmissaryMapping
            .probes(&config)
            .iter()
            .any(|probe| probe.path == "/API")
    );
    let sensitive = list(&[
        r#"{"prefix":"/api","service":"api"}"#,
        r#"{"prefix":"/","service":"web"}"#,
    ]);
    assert_eq!(route(&sensitive, &Request::get("/API/v1")), "web 100 %");
}
