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
    with_canary_annotations(
        bare_canary_ingress(stable, stable_service, canary_service),
        annotations,
    )
}

/// `canary` (a [`bare_canary_ingress`]) carrying the script's `annotations`: what
/// [`canary_ingress`] makes, for a case whose steps build their canary Ingresses beside one
/// stable Ingress (only the annotations differ from step to step).
pub fn with_canary_annotations(
    mut canary: JsonValue,
    annotations: Option<&BTreeMap<String, String>>,
) -> JsonValue {
    if let Some(annotations) = annotations.filter(|a| !a.is_empty())
        && let JsonValue::Object(object) = &mut canary
        && let Some(JsonValue::Object(metadata)) = object.get_mut("metadata")
    {
        metadata.insert("annotations".to_owned(), string_map_json(annotations));
    }
    canary
}

/// The canary Ingress for `stable` without annotations.
pub fn bare_canary_ingress(
    stable: &JsonValue,
    stable_service: &str,
    canary_service: &str,
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

/// The stable Ingress a case's `original` stands for. Kruise's own ingress tests
/// (openkruise/rollouts `pkg/trafficrouting/network/ingress/ingress_test.go`, the objects handed
/// to `EnsureRoutes`) and the library's ingress cases give the canary Ingress as `original`:
/// paths whose backend is the canary service. Its stable counterpart is derived from it (same
/// hosts and paths, the backend renamed to the stable service, the `-canary` suffix dropped
/// from the name, no annotations: the canary's annotations are the script's). `None` when
/// `original` is already the stable Ingress (no path to the canary service), or when the canary
/// and stable services are one.
pub fn stable_of_canary_ingress(
    original: &JsonValue,
    stable_service: &str,
    canary_service: &str,
) -> Option<JsonValue> {
    if stable_service == canary_service {
        return None;
    }
    let backend_name = |path: &JsonValue| {
        path.at(&["backend", "service", "name"])
            .and_then(JsonValue::as_str)
            .map(str::to_owned)
    };
    let rules = original.at(&["spec", "rules"])?.as_array()?;
    let paths = || {
        rules.iter().flat_map(|rule| {
            rule.at(&["http", "paths"])
                .and_then(JsonValue::as_array)
                .unwrap_or_default()
        })
    };
    if !paths().any(|p| backend_name(p).as_deref() == Some(canary_service)) {
        return None;
    }
    let mut stable = original.clone();
    if let JsonValue::Object(object) = &mut stable {
        if let Some(JsonValue::Object(metadata)) = object.get_mut("metadata") {
            metadata.remove("annotations");
            if let Some(JsonValue::String(name)) = metadata.get_mut("name")
                && let Some(base) = name.strip_suffix("-canary")
            {
                *name = base.to_owned();
            }
        }
        if let Some(JsonValue::Object(spec)) = object.get_mut("spec")
            && let Some(JsonValue::Array(rules)) = spec.get_mut("rules")
        {
            for rule in rules {
                let Some(JsonValue::Object(http)) = (match rule {
                    JsonValue::Object(r) => r.get_mut("http"),
                    _ => None,
                }) else {
                    continue;
                };
                let Some(JsonValue::Array(paths)) = http.get_mut("paths") else {
                    continue;
                };
                for path in paths {
                    if let JsonValue::Object(members) = path
                        && let Some(JsonValue::Object(backend)) = members.get_mut("backend")
                        && let Some(JsonValue::Object(service)) = backend.get_mut("service")
                        && service.get("name").and_then(JsonValue::as_str) == Some(canary_service)
                    {
                        service.insert(
                            "name".to_owned(),
                            JsonValue::String(stable_service.to_owned()),
                        );
                    }
                }
            }
        }
    }
    Some(stable)
}

/// The annotation marking an Ingress built by [`representative_stable_ingress`] (no gateway
/// reads it: the models read the canary Ingress's annotations, and only known keys).
pub const REPRESENTATIVE_RULE: &str = "kruise-lua.invalid/representative-rule";

/// `stable` with one rule standing for every path it serves to the stable service: any host,
/// every path (`Prefix` `/`), backend `stable_service` (no port: none is known). For a class
/// whose canary decision reads only the canary Ingress's annotations
/// ([`super::RoutingModel::canary_decision_is_path_independent`]), routing through this rule
/// decides what routing through any of the Ingress's real stable-service paths would: Kruise
/// copies each of them, unchanged but for the backend, into the canary Ingress
/// (`buildCanaryIngress`), and the annotations apply to each alike. Used when a case's
/// `original` gives no rules (the library's ingress cases often do not: the script only
/// reads annotations).
pub fn representative_stable_ingress(stable: &JsonValue, stable_service: &str) -> JsonValue {
    let backend = JsonValue::Object(JsonMap::from([(
        "service".to_owned(),
        JsonValue::Object(JsonMap::from([(
            "name".to_owned(),
            JsonValue::String(stable_service.to_owned()),
        )])),
    )]));
    let path = JsonValue::Object(JsonMap::from([
        ("path".to_owned(), JsonValue::String("/".to_owned())),
        (
            "pathType".to_owned(),
            JsonValue::String("Prefix".to_owned()),
        ),
        ("backend".to_owned(), backend),
    ]));
    let rule = JsonValue::Object(JsonMap::from([(
        "http".to_owned(),
        JsonValue::Object(JsonMap::from([(
            "paths".to_owned(),
            JsonValue::Array(vec![path]),
        )])),
    )]));
    let mut object = match stable {
        JsonValue::Object(object) => object.clone(),
        _ => JsonMap::new(),
    };
    // Marked, so that messages say "any path" rather than name a rule the user never wrote; and
    // named as the stable Ingress (an `original` without rules is, by the library's convention,
    // the canary Ingress `<stable>-canary`).
    let mut metadata = match object.get("metadata") {
        Some(JsonValue::Object(metadata)) => metadata.clone(),
        _ => JsonMap::new(),
    };
    if let Some(JsonValue::String(name)) = metadata.get("name")
        && let Some(base) = name.strip_suffix("-canary")
    {
        let base = base.to_owned();
        metadata.insert("name".to_owned(), JsonValue::String(base));
    }
    let mut notes = match metadata.get("annotations") {
        Some(JsonValue::Object(notes)) => notes.clone(),
        _ => JsonMap::new(),
    };
    notes.insert(
        REPRESENTATIVE_RULE.to_owned(),
        JsonValue::String("true".to_owned()),
    );
    metadata.insert("annotations".to_owned(), JsonValue::Object(notes));
    object.insert("metadata".to_owned(), JsonValue::Object(metadata));
    let mut spec = match object.get("spec") {
        Some(JsonValue::Object(spec)) => spec.clone(),
        _ => JsonMap::new(),
    };
    spec.insert("rules".to_owned(), JsonValue::Array(vec![rule]));
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

    #[test]
    fn a_canary_original_stands_for_its_stable_ingress() {
        let canary = json(
            r#"{"apiVersion":"networking.k8s.io/v1","kind":"Ingress","metadata":{"name":"web-canary","annotations":{"x/canary":"true"}},
            "spec":{"rules":[{"host":"x.com","http":{"paths":[
                {"path":"/","pathType":"Prefix","backend":{"service":{"name":"web-canary","port":{"number":80}}}}]}}]}}"#,
        );
        let stable = stable_of_canary_ingress(&canary, "web", "web-canary").unwrap();
        let expected = json(
            r#"{"apiVersion":"networking.k8s.io/v1","kind":"Ingress","metadata":{"name":"web"},
            "spec":{"rules":[{"host":"x.com","http":{"paths":[
                {"path":"/","pathType":"Prefix","backend":{"service":{"name":"web","port":{"number":80}}}}]}}]}}"#,
        );
        assert_eq!(stable.to_canonical_json(), expected.to_canonical_json());
        assert_eq!(stable_of_canary_ingress(&stable, "web", "web-canary"), None);
    }
}
