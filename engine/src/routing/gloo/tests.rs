//! One test per routing rule of the Gloo model.

use super::*;

fn vs(routes: &str) -> GatewayConfig {
    let text = format!(
        r#"{{"apiVersion":"gateway.solo.io/v1","kind":"VirtualService","metadata":{{"name":"web"}},"spec":{{"virtualHost":{{"domains":["*"],"routes":{routes}}}}}}}"#
    );
    GatewayConfig::Resource(JsonValue::parse_go_interface(text.as_bytes()).unwrap())
}

fn route(config: &GatewayConfig, request: &Request) -> String {
    GlooVirtualService.route(config, request).describe()
}

fn kube(name: &str) -> String {
    format!(r#"{{"kube":{{"ref":{{"name":"{name}","namespace":"default"}},"port":80}}}}"#)
}

#[test]
fn first_matching_route_wins() {
    let config = vs(&format!(
        r#"[{{"matchers":[{{"prefix":"/"}}],"routeAction":{{"single":{}}}}},
            {{"matchers":[{{"prefix":"/api"}}],"routeAction":{{"single":{}}}}}]"#,
        kube("frontend"),
        kube("web")
    ));
    assert_eq!(route(&config, &Request::get("/api")), "frontend:80 100 %");
}

#[test]
fn a_route_without_matchers_matches_everything() {
    let config = vs(&format!(
        r#"[{{"routeAction":{{"single":{}}}}}]"#,
        kube("web")
    ));
    assert_eq!(route(&config, &Request::get("/any")), "web:80 100 %");
}

#[test]
fn prefix_exact_and_regex_paths() {
    let config = vs(&format!(
        r#"[{{"matchers":[{{"exact":"/pay"}}],"routeAction":{{"single":{}}}}},
            {{"matchers":[{{"regex":"/v[0-9]+"}}],"routeAction":{{"single":{}}}}},
            {{"matchers":[{{"prefix":"/api"}}],"routeAction":{{"single":{}}}}}]"#,
        kube("pay"),
        kube("versioned"),
        kube("api")
    ));
    assert_eq!(route(&config, &Request::get("/pay")), "pay:80 100 %");
    assert_eq!(route(&config, &Request::get("/pay/x")), "no route");
    assert_eq!(route(&config, &Request::get("/v1")), "versioned:80 100 %");
    assert_eq!(route(&config, &Request::get("/v1/x")), "no route");
    assert_eq!(route(&config, &Request::get("/apis")), "api:80 100 %");
}

#[test]
fn header_and_query_matchers() {
    let config = vs(&format!(
        r#"[{{"matchers":[{{"prefix":"/","headers":[{{"name":"X-Canary","value":"qa-[0-9]+","regex":true}}],
              "queryParameters":[{{"name":"beta"}}]}}],"routeAction":{{"single":{}}}}},
            {{"routeAction":{{"single":{}}}}}]"#,
        kube("web-canary"),
        kube("web")
    ));
    let mut request = Request::get("/");
    request.headers.insert("x-canary", "qa-7");
    assert_eq!(route(&config, &request), "web:80 100 %");
    // An empty query value checks presence.
    request.query.insert("beta", "anything");
    assert_eq!(route(&config, &request), "web-canary:80 100 %");
    request.headers.insert("x-canary", "qa-x");
    assert_eq!(route(&config, &request), "web:80 100 %");
}

#[test]
fn inverted_value_matchers_need_the_header() {
    let config = vs(&format!(
        r#"[{{"matchers":[{{"headers":[{{"name":"x-beta","value":"1","invertMatch":true}}]}}],"routeAction":{{"single":{}}}}},
            {{"routeAction":{{"single":{}}}}}]"#,
        kube("stable"),
        kube("other")
    ));
    let mut request = Request::get("/");
    assert_eq!(route(&config, &request), "other:80 100 %");
    request.headers.insert("x-beta", "2");
    assert_eq!(route(&config, &request), "stable:80 100 %");
}

#[test]
fn multi_weights_are_proportional_and_missing_weights_are_zero() {
    let config = vs(&format!(
        r#"[{{"routeAction":{{"multi":{{"destinations":[
            {{"weight":3,"destination":{}}},{{"weight":1,"destination":{}}},{{"destination":{}}}]}}}}}}]"#,
        kube("web"),
        kube("web-canary"),
        kube("legacy")
    ));
    assert_eq!(
        route(&config, &Request::get("/")),
        "web:80 75 %, web-canary:80 25 %"
    );
}

#[test]
fn upstreams_subsets_and_discovered_names() {
    let config = vs(r#"[{"routeAction":{"multi":{"destinations":[
        {"weight":90,"destination":{"upstream":{"name":"default-web-80","namespace":"gloo-system"}}},
        {"weight":10,"destination":{"upstream":{"name":"default-web-80","namespace":"gloo-system"},"subset":{"values":{"track":"canary"}}}}]}}}]"#);
    assert_eq!(
        route(&config, &Request::get("/")),
        "default-web-80 90 %, default-web-80/track=canary 10 %"
    );
    let web = Backend::service("default-web-80");
    assert!(GlooVirtualService.is_service(&web, "web", None));
    assert!(!GlooVirtualService.is_service(&Backend::service("web-80"), "web", None));
    assert!(!GlooVirtualService.is_service(&web, "eb", None));
}

#[test]
fn header_manipulation_on_route_and_destination() {
    let config = vs(&format!(
        r#"[{{"options":{{"headerManipulation":{{"requestHeadersToRemove":["x-debug"]}}}},"routeAction":{{"multi":{{"destinations":[
            {{"weight":50,"destination":{}}},
            {{"weight":50,"destination":{},"options":{{"headerManipulation":{{"requestHeadersToAdd":[{{"header":{{"key":"x-release","value":"canary"}},"append":false}}]}}}}}}]}}}}}}]"#,
        kube("web"),
        kube("web-canary")
    ));
    let Routed::To(d) = GlooVirtualService.route(&config, &Request::get("/")) else {
        panic!()
    };
    let canary = Backend {
        service: "web-canary".into(),
        subset: None,
        port: Some("80".into()),
    };
    assert_eq!(
        d.header_changes[&canary]["x-release"],
        Some("canary".into())
    );
    assert_eq!(d.header_changes[&canary]["x-debug"], None);
}

#[test]
fn problems_zero_total_and_invalid_regex() {
    let config = vs(&format!(
        r#"[{{"matchers":[{{"regex":"(?<=a)b","headers":[{{"name":"h","value":"(","regex":true}}]}}],
             "routeAction":{{"multi":{{"destinations":[{{"weight":0,"destination":{}}}]}}}}}}]"#,
        kube("web")
    ));
    let paths: Vec<String> = GlooVirtualService
        .config_problems(&config)
        .into_iter()
        .map(|p| p.path)
        .collect();
    assert_eq!(
        paths,
        [
            "spec.virtualHost.routes[0].matchers[0].regex",
            "spec.virtualHost.routes[0].matchers[0].headers[0].value",
            "spec.virtualHost.routes[0].routeAction.multi"
        ]
    );
}

/// QA repro `gloo-bs-methods`: a route for POST only took every probe (its methods were
/// ignored), so the routes after it were never probed. Gloo matches the methods as one
/// `:method` regex; the probes carry a listed method and one that is not.
#[test]
fn methods_restrict_a_matcher_and_probes_exercise_them() {
    let config = vs(&format!(
        r#"[{{"matchers":[{{"prefix":"/","methods":["POST","PUT"]}}],"routeAction":{{"single":{}}}}},
            {{"matchers":[{{"prefix":"/"}}],"routeAction":{{"single":{}}}}}]"#,
        kube("writer"),
        kube("web")
    ));
    let mut post = Request::get("/");
    post.method = "POST".into();
    assert_eq!(route(&config, &post), "writer:80 100 %");
    assert_eq!(route(&config, &Request::get("/")), "web:80 100 %");
    let probes = GlooVirtualService.probes(&config);
    assert!(probes.iter().any(|p| p.method == "POST"), "{probes:?}");
    assert!(probes.iter().any(|p| p.method == "GET"), "{probes:?}");
    // A method list that is not a valid regex is refused with the route.
    let bad = vs(&format!(
        r#"[{{"matchers":[{{"prefix":"/","methods":["("]}}],"routeAction":{{"single":{}}}}}]"#,
        kube("web")
    ));
    let problems = GlooVirtualService.config_problems(&bad);
    assert_eq!(
        problems[0].path,
        "spec.virtualHost.routes[0].matchers[0].methods"
    );
}

/// A `connectMatcher` takes CONNECT requests only (it was read as the default prefix `/`).
#[test]
fn connect_matchers_take_connect_requests_only() {
    let config = vs(&format!(
        r#"[{{"matchers":[{{"connectMatcher":{{}}}}],"routeAction":{{"single":{}}}}},
            {{"routeAction":{{"single":{}}}}}]"#,
        kube("tunnel"),
        kube("web")
    ));
    assert_eq!(route(&config, &Request::get("/")), "web:80 100 %");
    let mut connect = Request::get("/");
    connect.method = "CONNECT".into();
    assert_eq!(route(&config, &connect), "tunnel:80 100 %");
}
