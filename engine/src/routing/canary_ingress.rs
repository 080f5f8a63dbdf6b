//! The canary Ingress Kruise builds for ingress-class providers, so ingress models see the
//! same pair of Ingresses the ingress controller sees.
//!
//! Source: openkruise/rollouts 9dd6279, `pkg/trafficrouting/network/ingress/ingress.go`,
//! `buildCanaryIngress`: the canary Ingress copies the stable one's annotations, labels,
//! `ingressClassName` and `tls`, and keeps only the rules with a path whose backend is the
//! stable service, each with only those paths, their backend renamed to the canary service.
//! The script's result then replaces its annotations (`EnsureRoutes`).

use std::collections::BTreeMap;

use crate::luadata::string_map_json;
use crate::value::{JsonMap, JsonValue};

/// The canary Ingress for `stable` (a whole Ingress object) with the script's `annotations`.
pub fn canary_ingress(
    stable: &JsonValue,
    stable_service: &str,
    canary_service: &str,
    annotations: Option<&BTreeMap<String, String>>,
) -> JsonValue {
    let mut metadata = JsonMap::new();
    if let Some(name) = stable.at(&["metadata", "name"]).and_then(JsonValue::as_str) {
        // defaultCanaryIngressName: "<name>-canary".
        metadata.insert(
            "name".to_owned(),
            JsonValue::String(format!("{name}-canary")),
        );
    }
    for key in ["namespace", "labels"] {
        if let Some(value) = stable.at(&["metadata", key]) {
            metadata.insert(key.to_owned(), value.clone());
        }
    }
    if let Some(annotations) = annotations.filter(|a| !a.is_empty()) {
        metadata.insert("annotations".to_owned(), string_map_json(annotations));
    }
    let mut spec = JsonMap::new();
    for key in ["ingressClassName", "tls"] {
        if let Some(value) = stable.at(&["spec", key]) {
            spec.insert(key.to_owned(), value.clone());
        }
    }
    let mut rules = Vec::new();
    for rule in stable
        .at(&["spec", "rules"])
        .and_then(JsonValue::as_array)
        .unwrap_or_default()
    {
        let paths: Vec<JsonValue> = rule
            .at(&["http", "paths"])
            .and_then(JsonValue::as_array)
            .unwrap_or_default()
            .iter()
            .filter(|path| {
                path.at(&["backend", "service", "name"])
                    .and_then(JsonValue::as_str)
                    == Some(stable_service)
            })
            .map(|path| {
                let mut path = path.clone();
                if let JsonValue::Object(members) = &mut path
                    && let Some(JsonValue::Object(backend)) = members.get_mut("backend")
                    && let Some(JsonValue::Object(service)) = backend.get_mut("service")
                {
                    service.insert(
                        "name".to_owned(),
                        JsonValue::String(canary_service.to_owned()),
                    );
                }
                path
            })
            .collect();
        if paths.is_empty() {
            continue;
        }
        let mut canary_rule = JsonMap::new();
        if let Some(host) = rule.get("host") {
            canary_rule.insert("host".to_owned(), host.clone());
        }
        canary_rule.insert(
            "http".to_owned(),
            JsonValue::Object(JsonMap::from([(
                "paths".to_owned(),
                JsonValue::Array(paths),
            )])),
        );
        rules.push(JsonValue::Object(canary_rule));
    }
    spec.insert("rules".to_owned(), JsonValue::Array(rules));
    let mut object = JsonMap::new();
    for key in ["apiVersion", "kind"] {
        if let Some(value) = stable.get(key) {
            object.insert(key.to_owned(), value.clone());
        }
    }
    object.insert("metadata".to_owned(), JsonValue::Object(metadata));
    object.insert("spec".to_owned(), JsonValue::Object(spec));
    JsonValue::Object(object)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(text: &str) -> JsonValue {
        JsonValue::parse_go_interface(text.as_bytes()).unwrap()
    }

    #[test]
    fn keeps_only_stable_paths_renamed_to_the_canary() {
        let stable = json(
            r#"{"apiVersion":"networking.k8s.io/v1","kind":"Ingress","metadata":{"name":"web","annotations":{"a":"b"}},
            "spec":{"ingressClassName":"nginx","rules":[
              {"host":"x.com","http":{"paths":[
                {"path":"/","pathType":"Prefix","backend":{"service":{"name":"web","port":{"number":80}}}},
                {"path":"/s","pathType":"Prefix","backend":{"service":{"name":"static","port":{"number":80}}}}]}},
              {"host":"y.com","http":{"paths":[
                {"path":"/","pathType":"Prefix","backend":{"service":{"name":"other","port":{"number":80}}}}]}}]}}"#,
        );
        let annotations = BTreeMap::from([("c".to_owned(), "d".to_owned())]);
        let canary = canary_ingress(&stable, "web", "web-canary", Some(&annotations));
        let expected = json(
            r#"{"apiVersion":"networking.k8s.io/v1","kind":"Ingress","metadata":{"name":"web-canary","annotations":{"c":"d"}},
            "spec":{"ingressClassName":"nginx","rules":[
              {"host":"x.com","http":{"paths":[
                {"path":"/","pathType":"Prefix","backend":{"service":{"name":"web-canary","port":{"number":80}}}}]}}]}}"#,
        );
        assert_eq!(canary.to_canonical_json(), expected.to_canonical_json());
    }
}
