//! The intent check on small hand-made VirtualServices (the Istio model routes them).

use std::sync::Arc;

use super::*;
use crate::luadata::{Data, HttpPathMatch, NameValueMatch};
use crate::routing::istio::IstioVirtualService;
use crate::routing::{Backend, Distribution};
use crate::runner::{RunOptions, Script};
use crate::script::ScriptFlavor;
use crate::script::ScriptKind;
use crate::testcase::parse_case;
use crate::value::JsonValue;

fn vs(http: &str) -> GatewayConfig {
    let text = format!(
        r#"{{"apiVersion":"networking.istio.io/v1","kind":"VirtualService","metadata":{{"name":"web"}},"spec":{{"hosts":["web"],"http":{http}}}}}"#
    );
    GatewayConfig::Resource(JsonValue::parse_go_interface(text.as_bytes()).unwrap())
}

fn step(traffic: Option<&str>, matches: Option<Vec<HttpRouteMatch>>) -> LuaData {
    let canary_weight = LuaData::canary_weight_from_traffic(traffic);
    LuaData {
        data: Arc::new(Data::default()),
        canary_weight,
        stable_weight: 100 - canary_weight,
        matches,
        canary_service: "web-canary".into(),
        stable_service: "web".into(),
        request_header_modifier: None,
    }
}

fn intent(traffic: Option<&str>, matches: Option<Vec<HttpRouteMatch>>) -> Intent {
    Intent::of(&step(traffic, matches), traffic.is_some()).unwrap()
}

fn path_match(kind: &str, value: &str) -> HttpRouteMatch {
    HttpRouteMatch {
        path: Some(HttpPathMatch {
            match_type: Some(kind.into()),
            value: Some(value.into()),
        }),
        ..HttpRouteMatch::default()
    }
}

fn header_match(name: &str, value: &str) -> HttpRouteMatch {
    HttpRouteMatch {
        headers: Some(vec![NameValueMatch {
            match_type: None,
            name: name.into(),
            value: value.into(),
        }]),
        ..HttpRouteMatch::default()
    }
}

fn messages(original: &GatewayConfig, after: &GatewayConfig, intent: &Intent) -> Vec<String> {
    check_step(&IstioVirtualService, original, after, intent)
        .violations
        .into_iter()
        .map(|v| v.message)
        .collect()
}

const TWO_ROUTES: &str = r#"[
    {"match":[{"uri":{"prefix":"/api"}}],"route":[{"destination":{"host":"web"}}]},
    {"match":[{"uri":{"prefix":"/"}}],"route":[{"destination":{"host":"frontend"}}]}]"#;

#[test]
fn steps_without_traffic_or_matches_demand_nothing() {
    assert!(Intent::of(&step(None, None), false).is_none());
    assert!(Intent::of(&step(None, Some(vec![])), false).is_none());
}

#[test]
fn a_weight_split_on_the_stable_route_passes() {
    let after = vs(r#"[
        {"match":[{"uri":{"prefix":"/api"}}],"route":[
            {"destination":{"host":"web"},"weight":80},{"destination":{"host":"web-canary"},"weight":20}]},
        {"match":[{"uri":{"prefix":"/"}}],"route":[{"destination":{"host":"frontend"}}]}]"#);
    assert_eq!(
        messages(&vs(TWO_ROUTES), &after, &intent(Some("20%"), None)),
        Vec::<String>::new()
    );
}

#[test]
fn a_canary_weight_rounded_to_zero_is_caught() {
    let original = vs(r#"[{"route":[
        {"destination":{"host":"web"},"weight":1},{"destination":{"host":"legacy"},"weight":1}]}]"#);
    // floor(1 * 50 / 100) = 0 for the canary: the script's defect.
    let after = vs(r#"[{"route":[
        {"destination":{"host":"web"},"weight":1},{"destination":{"host":"web-canary"},"weight":0},
        {"destination":{"host":"legacy"},"weight":1}]}]"#);
    let found = messages(&original, &after, &intent(Some("50%"), None));
    assert_eq!(
        found,
        [
            "GET / → legacy 50 %, web 50 % (by spec.http[0]), expected legacy 50 %, web 25 %, web-canary 25 %"
        ]
    );
    // Rescaled, the same split passes.
    let rescaled = vs(r#"[{"route":[
        {"destination":{"host":"web"},"weight":50},{"destination":{"host":"web-canary"},"weight":50},
        {"destination":{"host":"legacy"},"weight":100}]}]"#);
    assert!(messages(&original, &rescaled, &intent(Some("50%"), None)).is_empty());
}

#[test]
fn a_step_path_that_replaces_the_route_path_is_caught() {
    // The canary route takes the step's path instead of ANDing it with /api, so /beta
    // requests that frontend served now reach the canary.
    let after = vs(r#"[
        {"match":[{"uri":{"prefix":"/beta"}}],"route":[{"destination":{"host":"web-canary"}}]},
        {"match":[{"uri":{"prefix":"/api"}}],"route":[{"destination":{"host":"web"}}]},
        {"match":[{"uri":{"prefix":"/"}}],"route":[{"destination":{"host":"frontend"}}]}]"#);
    let found = messages(
        &vs(TWO_ROUTES),
        &after,
        &intent(None, Some(vec![path_match("PathPrefix", "/beta")])),
    );
    assert!(
        found.contains(
            &"GET /beta → web-canary 100 % (by spec.http[0]), expected frontend 100 %".to_owned()
        ),
        "{found:?}"
    );
    // Keeping the route's own condition passes (a regex for "/api and below /beta" is not
    // needed: /beta is outside /api, so no request is both).
    let kept = vs(TWO_ROUTES);
    assert!(
        messages(
            &vs(TWO_ROUTES),
            &kept,
            &intent(None, Some(vec![path_match("PathPrefix", "/beta")]))
        )
        .is_empty()
    );
}

#[test]
fn selected_requests_must_reach_the_canary() {
    let original = vs(r#"[{"route":[{"destination":{"host":"web"}}]}]"#);
    let nothing_changed = original.clone();
    let found = messages(
        &original,
        &nothing_changed,
        &intent(None, Some(vec![header_match("X-Canary", "1")])),
    );
    assert_eq!(
        found,
        ["GET / with x-canary: 1 → web 100 % (by spec.http[0]), expected web-canary 100 %"]
    );
    let routed = vs(r#"[
        {"match":[{"headers":{"x-canary":{"exact":"1"}}}],"route":[{"destination":{"host":"web-canary"}}]},
        {"route":[{"destination":{"host":"web"}}]}]"#);
    assert!(
        messages(
            &original,
            &routed,
            &intent(None, Some(vec![header_match("X-Canary", "1")]))
        )
        .is_empty()
    );
}

#[test]
fn canary_bound_requests_carry_the_header_modifier() {
    let original = vs(r#"[{"route":[{"destination":{"host":"web"}}]}]"#);
    let after = vs(r#"[{"route":[
        {"destination":{"host":"web"},"weight":70},{"destination":{"host":"web-canary"},"weight":30}]}]"#);
    let mut obj = step(Some("30%"), None);
    obj.request_header_modifier = Some(HeaderModifier {
        set: Some(vec![("x-release".into(), "canary".into())]),
        add: None,
        remove: Some(vec!["x-debug".into()]),
    });
    let wanted = Intent::of(&obj, true).unwrap();
    let found = messages(&original, &after, &wanted);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("web-canary lacks the header changes remove x-debug, x-release: canary"),
        "{found:?}"
    );
    let with_headers = vs(r#"[{"route":[
        {"destination":{"host":"web"},"weight":70},
        {"destination":{"host":"web-canary"},"weight":30,"headers":{"request":{"set":{"x-release":"canary"},"remove":["x-debug"]}}}]}]"#);
    assert!(messages(&original, &with_headers, &wanted).is_empty());
    // On the stable destination too: stable-bound requests must not change.
    let everywhere = vs(
        r#"[{"headers":{"request":{"set":{"x-release":"canary"},"remove":["x-debug"]}},"route":[
        {"destination":{"host":"web"},"weight":70},{"destination":{"host":"web-canary"},"weight":30}]}]"#,
    );
    let found = messages(&original, &everywhere, &wanted);
    assert!(
        found[0].contains("stable-bound web has header changes"),
        "{found:?}"
    );
}

#[test]
fn routes_that_never_served_the_stable_service_stay_untouched() {
    let after = vs(r#"[
        {"match":[{"uri":{"prefix":"/api"}}],"route":[
            {"destination":{"host":"web"},"weight":80},{"destination":{"host":"web-canary"},"weight":20}]},
        {"match":[{"uri":{"prefix":"/"}}],"route":[
            {"destination":{"host":"frontend"},"weight":80},{"destination":{"host":"web-canary"},"weight":20}]}]"#);
    let found = messages(&vs(TWO_ROUTES), &after, &intent(Some("20%"), None));
    assert_eq!(
        found,
        ["GET / → frontend 80 %, web-canary 20 % (by spec.http[1]), expected frontend 100 %"]
    );
}

/// A VirtualService of namespace `shop` whose `/pay` route goes to the `web` Service of
/// namespace `payments`: that route never served the Rollout's `web` (of `shop`), so the step
/// must leave it as it was (QA's istio-other-ns).
#[test]
fn a_same_named_service_of_another_namespace_is_not_the_stable_one() {
    let in_shop = |http: &str| {
        let GatewayConfig::Resource(JsonValue::Object(mut object)) = vs(http) else {
            unreachable!()
        };
        object.insert(
            "metadata".to_owned(),
            JsonValue::parse_go_interface(br#"{"name":"web","namespace":"shop"}"#).unwrap(),
        );
        GatewayConfig::Resource(JsonValue::Object(object))
    };
    let original = in_shop(
        r#"[
        {"match":[{"uri":{"prefix":"/pay"}}],"route":[{"destination":{"host":"web.payments.svc.cluster.local"}}]},
        {"route":[{"destination":{"host":"web.shop.svc.cluster.local"}}]}]"#,
    );
    let after = in_shop(
        r#"[
        {"match":[{"uri":{"prefix":"/pay"}}],"route":[
            {"destination":{"host":"web.payments.svc.cluster.local"},"weight":80},
            {"destination":{"host":"web-canary.payments.svc.cluster.local"},"weight":20}]},
        {"route":[
            {"destination":{"host":"web.shop.svc.cluster.local"},"weight":80},
            {"destination":{"host":"web-canary.shop.svc.cluster.local"},"weight":20}]}]"#,
    );
    let asked = Intent {
        namespace: Some("shop".into()),
        ..intent(Some("20%"), None)
    };
    assert_eq!(
        messages(&original, &after, &asked),
        [
            "GET /pay → web-canary.payments.svc.cluster.local 20 %, web.payments.svc.cluster.local 80 % (by spec.http[0]), expected web.payments.svc.cluster.local 100 %"
        ]
    );
    // The intent takes the namespace from the resource, as the case check does.
    let GatewayConfig::Resource(resource) = &original else {
        unreachable!()
    };
    assert_eq!(
        intent(Some("20%"), None)
            .in_namespace_of(resource)
            .namespace,
        Some("shop".to_owned())
    );
    // A resource that gives no namespace cannot tell them apart: either one may be the
    // Rollout's (see `routing::names_service`).
    assert_eq!(
        messages(&original, &after, &intent(Some("20%"), None)),
        Vec::<String>::new()
    );
}

#[test]
fn with_both_matches_and_traffic_either_reading_passes() {
    let original = vs(r#"[{"route":[{"destination":{"host":"web"}}]}]"#);
    let both = intent(Some("10%"), Some(vec![header_match("x-canary", "1")]));
    let weighted = vs(r#"[
        {"match":[{"headers":{"x-canary":{"exact":"1"}}}],"route":[{"destination":{"host":"web-canary"}}]},
        {"route":[{"destination":{"host":"web"},"weight":90},{"destination":{"host":"web-canary"},"weight":10}]}]"#);
    let matches_only = vs(r#"[
        {"match":[{"headers":{"x-canary":{"exact":"1"}}}],"route":[{"destination":{"host":"web-canary"}}]},
        {"route":[{"destination":{"host":"web"}}]}]"#);
    assert!(messages(&original, &weighted, &both).is_empty());
    assert!(messages(&original, &matches_only, &both).is_empty());
    let wrong = vs(
        r#"[{"route":[{"destination":{"host":"web"},"weight":50},{"destination":{"host":"web-canary"},"weight":50}]}]"#,
    );
    let found = messages(&original, &wrong, &both);
    assert!(
        found.iter().any(|m| m.ends_with(
            "→ web 50 %, web-canary 50 % (by spec.http[0]), expected web 100 % or web 90 %, web-canary 10 %"
        )),
        "{found:?}"
    );
}

#[test]
fn problems_the_step_introduces_are_violations() {
    let original = vs(r#"[{"route":[{"destination":{"host":"web"}}]}]"#);
    let after = vs(
        r#"[{"route":[{"destination":{"host":"web"},"weight":0},{"destination":{"host":"web-canary"},"weight":0}]}]"#,
    );
    let found = messages(&original, &after, &intent(Some("0%"), None));
    assert_eq!(
        found[0],
        "the gateway rejects spec.http[0].route: total destination weight = 0"
    );
}

#[test]
fn subset_canaries_are_the_new_subsets_of_the_stable_service() {
    let original = vs(r#"[{"route":[{"destination":{"host":"web","subset":"v1"}}]}]"#);
    let after = vs(r#"[{"route":[
        {"destination":{"host":"web","subset":"v1"},"weight":80},{"destination":{"host":"web","subset":"canary"},"weight":20}]}]"#);
    let mut obj = step(Some("20%"), None);
    obj.canary_service = "web".into();
    let wanted = Intent::of(&obj, true).unwrap();
    assert!(messages(&original, &after, &wanted).is_empty());
    let found = messages(&original, &original, &wanted);
    assert_eq!(
        found,
        ["GET / → web/v1 100 % (by spec.http[0]), expected web/canary 20 %, web/v1 80 %"]
    );
}

#[test]
fn path_prefix_matches_whole_segments() {
    let wanted = intent(None, Some(vec![path_match("PathPrefix", "/beta")]));
    assert!(wanted.selects(&Request::get("/beta")));
    assert!(wanted.selects(&Request::get("/beta/x")));
    assert!(!wanted.selects(&Request::get("/betax")));
    let exact = intent(None, Some(vec![path_match("Exact", "/pay")]));
    assert!(!exact.selects(&Request::get("/pay/x")));
}

#[test]
fn a_string_prefix_reading_of_path_prefix_passes_too() {
    let original = vs(r#"[{"route":[{"destination":{"host":"web"}}]}]"#);
    let string_prefix = vs(r#"[
        {"match":[{"uri":{"prefix":"/beta"}}],"route":[{"destination":{"host":"web-canary"}}]},
        {"route":[{"destination":{"host":"web"}}]}]"#);
    let wanted = intent(None, Some(vec![path_match("PathPrefix", "/beta")]));
    assert!(messages(&original, &string_prefix, &wanted).is_empty());
    // An exact path has one reading.
    let exact = intent(None, Some(vec![path_match("Exact", "/beta")]));
    let found = messages(&original, &string_prefix, &exact);
    assert!(
        found.contains(
            &"GET /beta/x → web-canary 100 % (by spec.http[0]), expected web 100 %".to_owned()
        ),
        "{found:?}"
    );
}

/// A script with today's Istio defect (the step's path replaces the route's), run over a case
/// through [`check_case`].
#[test]
fn check_case_runs_the_script_and_flags_its_steps() {
    let script = Script::new(
        r#"
        local spec = obj.data.spec
        if obj.matches then
          local canaryRoute = {match = {{uri = {prefix = obj.matches[1].path.value}}},
                               route = {{destination = {host = obj.canaryService}}}}
          table.insert(spec.http, 1, canaryRoute)
        end
        return obj.data
        "#
        .to_owned(),
    );
    let case = parse_case(
        r#"
rollout:
  spec:
    strategy:
      canary:
        trafficRoutings:
        - service: web
          customNetworkRefs:
          - apiVersion: networking.istio.io/v1
            kind: VirtualService
            name: web
        steps:
        - matches:
          - path:
              value: /beta
        - pause: {}
original:
  apiVersion: networking.istio.io/v1
  kind: VirtualService
  metadata:
    name: web
  spec:
    hosts: [web]
    http:
    - match:
      - uri:
          prefix: /api
      route:
      - destination:
          host: web
    - route:
      - destination:
          host: frontend
"#,
    )
    .unwrap();
    let kind = ScriptKind::Custom {
        group: "networking.istio.io".into(),
        kind: "VirtualService".into(),
    };
    let checks = check_case(&kind, &script, &case, &RunOptions::default());
    assert_eq!(checks.len(), 2);
    let StepIntentOutcome::Checked(report) = &checks[0].outcome else {
        panic!("{:?}", checks[0].outcome)
    };
    let found: Vec<&str> = report
        .violations
        .iter()
        .map(|v| v.message.as_str())
        .collect();
    assert!(
        found.contains(&"GET /beta → web-canary 100 % (by spec.http[0]), expected frontend 100 %"),
        "{found:?}"
    );
    assert_eq!(checks[1].outcome, StepIntentOutcome::NothingAsked);
    assert_eq!(checks[1].outcome.unverified(), None);
}

#[test]
fn a_resource_without_a_routing_model_is_not_checked_and_says_why() {
    let script = Script::new("return obj.data".to_owned());
    let case = parse_case(
        r#"
rollout:
  spec:
    strategy:
      canary:
        trafficRoutings:
        - service: web
          customNetworkRefs:
          - apiVersion: example.com/v1
            kind: Route
            name: web
        steps:
        - traffic: "20%"
        - pause: {}
original:
  apiVersion: example.com/v1
  kind: Route
  metadata:
    name: web
"#,
    )
    .unwrap();
    let kind = ScriptKind::Custom {
        group: "example.com".into(),
        kind: "Route".into(),
    };
    let checks = check_case(&kind, &script, &case, &RunOptions::default());
    assert_eq!(checks.len(), 2);
    assert_eq!(
        checks[0].outcome.unverified().as_deref(),
        Some("the engine has no routing model for Route (example.com)")
    );
    assert_eq!(checks[1].outcome, StepIntentOutcome::NothingAsked);
}

#[test]
fn probes_are_bounded_for_huge_resources() {
    let routes: Vec<String> = (0..3000)
        .map(|i| {
            format!(
                r#"{{"match":[{{"uri":{{"prefix":"/r{i}"}},"headers":{{"h{i}":{{"exact":"v"}}}}}}],"route":[{{"destination":{{"host":"web"}}}}]}}"#
            )
        })
        .collect();
    let config = vs(&format!("[{}]", routes.join(",")));
    let matches = (0..16)
        .map(|i| header_match(&format!("x-{i}"), "1"))
        .collect();
    let found = probes(
        &IstioVirtualService,
        &config,
        &config,
        &intent(None, Some(matches)),
    );
    assert_eq!(found.requests.len(), MAX_PROBES);
    assert!(found.truncated);
    // Fewer routes than above, still more probes than MAX_BASE_PROBES.
    let routes: Vec<String> = (0..300)
        .map(|i| {
            format!(
                r#"{{"match":[{{"uri":{{"prefix":"/r{i}"}}}}],"route":[{{"destination":{{"host":"web"}}}}]}}"#
            )
        })
        .collect();
    let config = vs(&format!("[{}]", routes.join(",")));
    let report = check_step(
        &IstioVirtualService,
        &config,
        &config,
        &intent(None, Some(vec![header_match("x-0", "1")])),
    );
    let outcome = StepIntentOutcome::Checked(report);
    assert!(
        outcome
            .unverified()
            .is_some_and(|why| why.starts_with("partly checked")),
        "{outcome:?}"
    );
}

/// A minimal ingress-class model for the chaining test: the canary Ingress's
/// `test/canary-weight` annotation sends that share to its backend, `test/canary-header`
/// names a header whose value `always` sends everything there.
struct WeightAnnotationModel;

impl RoutingModel for WeightAnnotationModel {
    fn name(&self) -> &'static str {
        "test ingress"
    }
    fn applies_to(&self, _kind: &ScriptKind) -> bool {
        false
    }
    fn config_problems(&self, _config: &GatewayConfig) -> Vec<ConfigProblem> {
        Vec::new()
    }
    fn route(&self, config: &GatewayConfig, request: &Request) -> Routed {
        let GatewayConfig::Ingress { stable, canary } = config else {
            return Routed::NoRoute;
        };
        let backend = |ingress: &JsonValue| {
            let paths = ingress.at(&["spec", "rules"])?.as_array()?[0]
                .at(&["http", "paths"])?
                .as_array()?;
            Some(Backend::service(
                paths[0].at(&["backend", "service", "name"])?.as_str()?,
            ))
        };
        let Some(stable_backend) = backend(stable) else {
            return Routed::NoRoute;
        };
        let Some(canary) = canary else {
            return Routed::to(Distribution::single(stable_backend));
        };
        let annotation = |key: &str| {
            canary
                .at(&["metadata", "annotations", key])
                .and_then(JsonValue::as_str)
        };
        let canary_backend = backend(canary).unwrap();
        if let Some(name) = annotation("test/canary-header")
            && request.headers.get(name) == Some("always")
        {
            return Routed::to(Distribution::single(canary_backend));
        }
        let weight: f64 = annotation("test/canary-weight")
            .and_then(|w| w.parse().ok())
            .unwrap_or(0.0);
        Routed::to(
            Distribution::from_weights(&[
                (stable_backend, 100.0 - weight),
                (canary_backend, weight),
            ])
            .unwrap(),
        )
    }
    fn probes(&self, _config: &GatewayConfig) -> Vec<Request> {
        vec![Request::get("/")]
    }
}

/// Ingress scripts run on the canary Ingress the previous step left: a script that sets the
/// weight only when the step has one keeps step 1's 20 % through a matches-only step 2, so
/// requests without the header still reach the canary.
#[test]
fn ingress_steps_are_checked_chained() {
    let script = Script::new(
        r#"
        local annotations = obj.annotations or {}
        if obj.weight ~= "-1" then annotations["test/canary-weight"] = obj.weight end
        if obj.matches then annotations["test/canary-header"] = obj.matches[1].headers[1].name end
        return annotations
        "#
        .to_owned(),
    );
    let case = parse_case(
        r#"
rollout:
  spec:
    strategy:
      canary:
        trafficRoutings:
        - service: web
          ingress:
            classType: test
            name: web
        steps:
        - traffic: "20%"
        - matches:
          - headers:
            - name: x-canary
              value: always
original:
  apiVersion: networking.k8s.io/v1
  kind: Ingress
  metadata:
    name: web
  spec:
    rules:
    - http:
        paths:
        - path: /
          pathType: Prefix
          backend:
            service:
              name: web
              port:
                number: 80
"#,
    )
    .unwrap();
    let checks = check_case_with(
        &WeightAnnotationModel,
        ScriptFlavor::Ingress,
        &script,
        &case,
        &RunOptions::default(),
    );
    let messages: Vec<Vec<String>> = checks
        .iter()
        .map(|check| match &check.outcome {
            StepIntentOutcome::Checked(report) => report
                .violations
                .iter()
                .map(|v| v.message.clone())
                .collect(),
            other => vec![format!("not checked: {other:?}")],
        })
        .collect();
    assert_eq!(
        messages,
        [
            vec![],
            vec!["GET / → web 80 %, web-canary 20 %, expected web 100 %".to_owned()]
        ]
    );
}

/// `/api` split between `web` and `web-legacy`: a header step sends matched requests to the
/// canary alone (Kruise's gateway.go canary rule has the canary as its only backend).
#[test]
fn matched_requests_go_to_the_canary_alone() {
    let original = vs(r#"[
        {"match":[{"uri":{"prefix":"/api"}}],"route":[
            {"destination":{"host":"web"},"weight":90},{"destination":{"host":"web-legacy"},"weight":10}]}]"#);
    let canary_alone = vs(r#"[
        {"match":[{"uri":{"prefix":"/api"},"headers":{"x-canary":{"exact":"1"}}}],"route":[
            {"destination":{"host":"web-canary"}}]},
        {"match":[{"uri":{"prefix":"/api"}}],"route":[
            {"destination":{"host":"web"},"weight":90},{"destination":{"host":"web-legacy"},"weight":10}]}]"#);
    let want = intent(None, Some(vec![header_match("x-canary", "1")]));
    assert_eq!(
        messages(&original, &canary_alone, &want),
        Vec::<String>::new()
    );
    let keeps_legacy = vs(r#"[
        {"match":[{"uri":{"prefix":"/api"},"headers":{"x-canary":{"exact":"1"}}}],"route":[
            {"destination":{"host":"web-canary"},"weight":90},{"destination":{"host":"web-legacy"},"weight":10}]},
        {"match":[{"uri":{"prefix":"/api"}}],"route":[
            {"destination":{"host":"web"},"weight":90},{"destination":{"host":"web-legacy"},"weight":10}]}]"#);
    let found = messages(&original, &keeps_legacy, &want);
    assert!(
        found.iter().any(|m| m
            .contains("x-canary: 1 → web-canary 90 %, web-legacy 10 % (by spec.http[0]), expected web-canary 100 %")),
        "{found:?}"
    );
}

/// A stable weight never reduced (100 beside a canary 5 is 4.76 %): integer weights can say
/// 95 : 5, so the 1-point slack no longer hides it.
#[test]
fn an_unreduced_stable_weight_is_caught() {
    let original = vs(r#"[{"route":[{"destination":{"host":"web"}}]}]"#);
    let unreduced = vs(r#"[{"route":[
        {"destination":{"host":"web"},"weight":100},{"destination":{"host":"web-canary"},"weight":5}]}]"#);
    let found = messages(&original, &unreduced, &intent(Some("5%"), None));
    assert!(
        found.iter().any(|m| m.contains(
            "web 95.24 %, web-canary 4.76 % (by spec.http[0]), expected web 95 %, web-canary 5 %"
        )),
        "{found:?}"
    );
    let exact = vs(r#"[{"route":[
        {"destination":{"host":"web"},"weight":95},{"destination":{"host":"web-canary"},"weight":5}]}]"#);
    assert!(messages(&original, &exact, &intent(Some("5%"), None)).is_empty());
    // web 90 / legacy 10 at 5 %: web 85.5 % is not a whole percent, weights totalling 100
    // come within a point.
    let shared = vs(r#"[{"route":[
        {"destination":{"host":"web"},"weight":90},{"destination":{"host":"web-legacy"},"weight":10}]}]"#);
    let rounded = vs(r#"[{"route":[
        {"destination":{"host":"web"},"weight":86},{"destination":{"host":"web-legacy"},"weight":10},
        {"destination":{"host":"web-canary"},"weight":4}]}]"#);
    assert!(messages(&shared, &rounded, &intent(Some("5%"), None)).is_empty());
}

/// What a case's steps share (the configuration before the rollout, its probes, the last
/// step's probe set and their routing through it) changes nothing: every step of every case
/// of the library and the intent fixtures, checked alone, gives the report `check_case` gives.
#[test]
fn steps_sharing_the_case_report_as_each_step_alone() {
    use crate::routing::model_for;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let options = RunOptions::default();
    let mut compared = 0;
    for tree in [
        "lua_configuration",
        "tests/fixtures/intent",
        "tests/fixtures/intent-rules",
    ] {
        let Ok(entries) = crate::discovery::discover(&root.join(tree)) else {
            continue;
        };
        for entry in entries {
            let script = Script::new(entry.source.as_str());
            let flavor = ScriptFlavor::from(&entry.kind);
            for path in entry.cases.into_iter().flatten() {
                let Ok(case) = parse_case(&std::fs::read_to_string(&path).unwrap()) else {
                    continue;
                };
                let Some(original) = case_original(&case).map(|node| node.to_json()) else {
                    continue;
                };
                let resource_kind = original.get("apiVersion").and_then(|v| {
                    Some(ScriptKind::Custom {
                        group: v.as_str()?.split_once('/')?.0.to_owned(),
                        kind: original.get("kind")?.as_str()?.to_owned(),
                    })
                });
                let model = match (flavor, &resource_kind) {
                    (ScriptFlavor::Custom, Some(kind)) => {
                        model_for(kind).or_else(|| model_for(&entry.kind))
                    }
                    _ => model_for(&entry.kind),
                };
                let Some(model) = model else { continue };
                let chained = crate::steps::controller_ingress_results(&script, &case, &options);
                let checks = check_case(&entry.kind, &script, &case, &options);
                for (index, step) in case.steps.iter().enumerate() {
                    let StepIntentOutcome::Checked(shared) = &checks[index].outcome else {
                        continue;
                    };
                    let ran;
                    let result = match flavor {
                        ScriptFlavor::Ingress => chained[index].result.as_ref().unwrap(),
                        ScriptFlavor::Custom => {
                            ran = crate::runner::run_custom(&script, &step.obj, &options);
                            ran.result(crate::runner::Mode::Production)
                                .as_ref()
                                .unwrap()
                        }
                    };
                    let asked = Intent::of(&step.obj, step.traffic_set).unwrap();
                    let configs =
                        step_configs(model.as_ref(), flavor, &original, &step.obj, asked, result)
                            .unwrap();
                    let alone = check_step(
                        model.as_ref(),
                        &configs.before,
                        &configs.after,
                        &configs.intent,
                    );
                    let what = format!("{} step {index}", path.display());
                    assert_eq!(alone.probes, shared.probes, "{what}");
                    assert_eq!(alone.truncated, shared.truncated, "{what}");
                    assert_eq!(alone.more, shared.more, "{what}");
                    let messages = |r: &StepReport| -> Vec<String> {
                        r.violations.iter().map(|v| v.message.clone()).collect()
                    };
                    assert_eq!(messages(&alone), messages(shared), "{what}");
                    compared += 1;
                }
            }
        }
    }
    assert!(compared > 150, "{compared}");
}

/// SMI: a step that moves `spec.service` (the root service clients call) to the canary leaves
/// the original root's clients unsplit, going to the root service itself (QA's smi-bs-root).
#[test]
fn an_smi_split_of_another_root_does_not_split_the_original_roots_traffic() {
    use crate::routing::smi::SmiTrafficSplit;
    let split = |root: &str, backends: &str| {
        let text = format!(
            r#"{{"apiVersion":"split.smi-spec.io/v1alpha4","kind":"TrafficSplit","metadata":{{"name":"web","namespace":"shop"}},"spec":{{"service":"{root}","backends":{backends}}}}}"#
        );
        GatewayConfig::Resource(JsonValue::parse_go_interface(text.as_bytes()).unwrap())
    };
    let original = split("web-apex", r#"[{"service":"web","weight":100}]"#);
    let moved = split(
        "web-canary",
        r#"[{"service":"web","weight":80},{"service":"web-canary","weight":20}]"#,
    );
    let asked = intent(Some("20%"), None);
    let found: Vec<String> = check_step(&SmiTrafficSplit, &original, &moved, &asked)
        .violations
        .into_iter()
        .map(|v| v.message)
        .collect();
    assert_eq!(
        found,
        [
            "GET web-apex/ → web-apex 100 % (by spec.service), expected web 80 %, web-canary 20 %",
            "GET web-canary/ → web 80 %, web-canary 20 % (by spec.backends), expected web-canary 100 %",
        ]
    );
    // The same split under the original root is what the step asks.
    let kept = split(
        "web-apex",
        r#"[{"service":"web","weight":80},{"service":"web-canary","weight":20}]"#,
    );
    assert!(
        check_step(&SmiTrafficSplit, &original, &kept, &asked)
            .violations
            .is_empty()
    );
}

/// QA repro `istio-bs-port`: a port-9090 route before the main route took every probe, so a
/// 50/50 split of the main route passed a 5 % step in silence. The port route is now taken as
/// not met (the main route is probed and the split caught) and the step says what was not
/// evaluated, once, though the step's route list differs from the original's.
#[test]
fn an_unevaluated_condition_is_passed_over_and_noted() {
    let original = vs(r#"[
        {"match":[{"port":9090}],"route":[{"destination":{"host":"web-metrics"}}]},
        {"route":[{"destination":{"host":"web"}}]}]"#);
    let split = |canary: u32| {
        vs(&format!(
            r#"[
        {{"match":[{{"port":9090}}],"route":[{{"destination":{{"host":"web-metrics"}}}}]}},
        {{"route":[{{"destination":{{"host":"web"}},"weight":{}}},
                   {{"destination":{{"host":"web-canary"}},"weight":{canary}}}]}}]"#,
            100 - canary
        ))
    };
    let step = intent(Some("5%"), None);
    let wrong = check_step(&IstioVirtualService, &original, &split(50), &step);
    assert!(
        wrong.violations[0].message.contains("web-canary 50 %"),
        "{wrong:?}"
    );
    let note = "spec.http[0].match[0].port is not evaluated (probes are taken as not meeting it)";
    assert_eq!(wrong.unchecked, [note]);
    let right = check_step(&IstioVirtualService, &original, &split(5), &step);
    assert!(right.violations.is_empty(), "{right:?}");
    assert_eq!(right.unchecked, [note]);
    // A step that moves the condition (a canary route inserted first) notes it once, where
    // the step's configuration has it.
    let moved = vs(r#"[
        {"match":[{"headers":{"x-canary":{"exact":"1"}}}],"route":[{"destination":{"host":"web-canary"}}]},
        {"match":[{"port":9090}],"route":[{"destination":{"host":"web-metrics"}}]},
        {"route":[{"destination":{"host":"web"}}]}]"#);
    let report = check_step(
        &IstioVirtualService,
        &original,
        &moved,
        &intent(None, Some(vec![header_match("x-canary", "1")])),
    );
    assert!(report.violations.is_empty(), "{report:?}");
    assert_eq!(
        report.unchecked,
        ["spec.http[1].match[0].port is not evaluated (probes are taken as not meeting it)"]
    );
    let outcome = case::StepIntentOutcome::Checked(report);
    assert!(
        outcome
            .unverified()
            .unwrap()
            .starts_with("partly checked: spec.http[1].match[0].port is not evaluated")
    );
}

/// A step's check judges each pair of decisions once and reuses the verdict for the probes
/// that meet it again: each is the verdict the probe gets alone.
#[test]
fn reused_verdicts_are_each_probes_own() {
    let original = vs(TWO_ROUTES);
    let after = vs(r#"[
        {"match":[{"headers":{"x-canary":{"exact":"1"}}}],"route":[{"destination":{"host":"web-canary"}}]},
        {"match":[{"uri":{"prefix":"/api"}}],"route":[{"destination":{"host":"web"}}]},
        {"match":[{"uri":{"prefix":"/"}}],"route":[{"destination":{"host":"frontend"}}]}]"#);
    let intent = intent(Some("20%"), Some(vec![header_match("x-canary", "2")]));
    let model = IstioVirtualService;
    crate::routing::memo::with_derived_memo(|| {
        let set = probes(&model, &original, &after, &intent);
        let mut verdicts = misrouting::Verdicts::default();
        let mut misrouted = 0;
        for request in &set.requests {
            let before = model.route(&original, request);
            let now = model.route(&after, request);
            let alone = misrouting::misrouting(&model, &intent, request, &before, &now, false);
            misrouted += usize::from(alone.is_some());
            let reused = verdicts.of(&model, &intent, request, &before, &now, || false);
            assert_eq!(reused, alone, "{}", request.describe());
        }
        assert!(misrouted > 0 && misrouted < set.requests.len());
        assert!(verdicts.len() < set.requests.len(), "verdicts reused");
    });
}

/// A pair's passing verdict for a reading that asks no more than a probe's (the same
/// selection, the readings agreeing, no gateway convention) settles the probe before it is
/// read in full: with a path prefix (whose two readings differ on `/apix`) and conventions
/// that hold for some probes, on a step that routes as asked and on two that do not, every
/// verdict is still the one the probe gets alone, and the convention is asked of fewer probes.
#[test]
fn verdicts_settled_by_a_lesser_reading_are_each_probes_own() {
    let original = vs(TWO_ROUTES);
    let intent = intent(Some("20%"), Some(vec![path_match("PathPrefix", "/api")]));
    let right = vs(r#"[
        {"match":[{"uri":{"prefix":"/api"}}],"route":[{"destination":{"host":"web-canary"}}]},
        {"match":[{"uri":{"prefix":"/"}}],"route":[{"destination":{"host":"frontend"}}]}]"#);
    let unweighted = vs(r#"[
        {"match":[{"uri":{"exact":"/api"}}],"route":[{"destination":{"host":"web-canary"}}]},
        {"match":[{"uri":{"prefix":"/api"}}],"route":[{"destination":{"host":"web"}}]},
        {"match":[{"uri":{"prefix":"/"}}],"route":[{"destination":{"host":"frontend"}}]}]"#);
    let everything = vs(r#"[
        {"route":[{"destination":{"host":"web-canary"}}]}]"#);
    let model = IstioVirtualService;
    let conventions: [fn(usize) -> bool; 3] = [|_| false, |i| i % 3 == 0, |_| true];
    let (mut misrouted, mut passed, mut asked, mut judged) = (0, 0, 0, 0);
    for after in [&right, &unweighted, &everything] {
        for convention in conventions {
            crate::routing::memo::with_derived_memo(|| {
                let set = probes(&model, &original, after, &intent);
                let mut verdicts = misrouting::Verdicts::default();
                for (i, request) in set.requests.iter().enumerate() {
                    let before = model.route(&original, request);
                    let now = model.route(after, request);
                    let alone = misrouting::misrouting(
                        &model,
                        &intent,
                        request,
                        &before,
                        &now,
                        convention(i),
                    );
                    let reused = verdicts.of(&model, &intent, request, &before, &now, || {
                        asked += 1;
                        convention(i)
                    });
                    assert_eq!(reused, alone, "{}", request.describe());
                    misrouted += usize::from(alone.is_some());
                    passed += usize::from(alone.is_none());
                    judged += 1;
                }
            });
        }
    }
    assert!(misrouted > 0 && passed > 0, "{misrouted} {passed}");
    assert!(asked < judged, "{asked} of {judged}");
}
