//! CRD structural-schema validation (engine `schema` module) against our own fixture CRDs in
//! tests/fixtures/crds: for every rule a resource that breaks it and one that passes.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

use kruise_lua_engine::schema::{
    Finding, SchemaSet, Severity, Validation, patched_resource, validate_object,
    validate_object_as, validate_patched, validate_patched_as,
};
use kruise_lua_engine::value::JsonMap;
use kruise_lua_engine::yaml::parse_first_document;
use kruise_lua_engine::{Data, JsonValue};

fn fixtures() -> &'static Path {
    static DIR: OnceLock<std::path::PathBuf> = OnceLock::new();
    DIR.get_or_init(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/crds"))
}

fn schemas() -> &'static SchemaSet {
    static SET: OnceLock<SchemaSet> = OnceLock::new();
    SET.get_or_init(|| {
        let mut set = SchemaSet::new();
        set.add_path(fixtures()).expect("fixture CRDs load");
        set
    })
}

fn json(yaml: &str) -> JsonValue {
    parse_first_document(yaml)
        .expect("valid YAML")
        .expect("a document")
        .to_json()
}

/// A Widget (storage version v1) with `spec` given as flow YAML.
fn widget(spec: &str) -> Validation {
    validate_object(
        schemas(),
        &json(&format!(
            "apiVersion: test.kruise-lua.dev/v1\nkind: Widget\nmetadata:\n  name: w\nspec: {spec}\n"
        )),
    )
}

/// The findings as `severity path rule`, for compact assertions.
fn summary(validation: &Validation) -> Vec<String> {
    validation
        .findings
        .iter()
        .map(|f| format!("{} {} {}", f.severity.as_str(), f.path_text(), f.rule))
        .collect()
}

fn assert_clean(spec: &str) {
    let v = widget(spec);
    assert!(v.findings.is_empty(), "{spec}: {:#?}", v.findings);
    assert_eq!(v.schema.as_ref().unwrap().version, "v1");
}

fn assert_only(spec: &str, expected: &[&str]) -> Vec<Finding> {
    let v = widget(spec);
    assert_eq!(summary(&v), expected, "{spec}: {:#?}", v.findings);
    v.findings
}

#[test]
fn loads_files_lists_and_multi_document_files() {
    let set = schemas();
    let mut kinds: Vec<&str> = set.crds().iter().map(|c| c.kind.as_str()).collect();
    kinds.sort();
    assert_eq!(kinds, ["Doohickey", "Gadget", "Gizmo", "Widget"]);
    let widget = set.find("test.kruise-lua.dev", "Widget").unwrap();
    assert_eq!(widget.storage_version().unwrap().name, "v1");
    assert_eq!(widget.versions.len(), 2);
    assert!(widget.file.ends_with("widgets.yaml"));
    let spec = &widget
        .storage_version()
        .unwrap()
        .schema
        .as_ref()
        .unwrap()
        .properties["spec"];
    assert_eq!(spec.description.as_deref(), Some("What a widget routes."));
}

#[test]
fn a_valid_resource_has_no_findings() {
    assert_clean(
        "{host: web.example, weight: 20, count: 7, ratio: 0.5, mode: Safe, enabled: true, \
         port: http, address: 10.0.0.1, note: null, timeout: 10s, retries: 3, tags: [a, b], \
         backends: [{name: a, port: 80}, {name: b}], headers: {x: v}, extra: {any: {deep: [1]}}, \
         template: {apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {free: form}}, \
         match: {exact: /a}}",
    );
    // Numbers as Lua returns them (floats with integral values) pass `integer`.
    let mut spec = JsonMap::new();
    spec.insert("host".to_owned(), JsonValue::String("web".into()));
    spec.insert("weight".to_owned(), JsonValue::Float(20.0));
    let object = JsonValue::Object(JsonMap::from([
        (
            "apiVersion".to_owned(),
            JsonValue::String("test.kruise-lua.dev/v1".into()),
        ),
        ("kind".to_owned(), JsonValue::String("Widget".into())),
        ("spec".to_owned(), JsonValue::Object(spec)),
    ]));
    assert!(validate_object(schemas(), &object).findings.is_empty());
}

#[test]
fn type_errors() {
    let findings = assert_only("{host: web, weight: 33.333}", &["error spec.weight type"]);
    assert!(
        findings[0].message.contains("must be of type integer"),
        "{}",
        findings[0].message
    );
    assert_only(
        "{host: web, enabled: yes please}",
        &["error spec.enabled type"],
    );
    assert_only("{host: web, tags: a}", &["error spec.tags type"]);
    assert_only("{host: web, ratio: '0.5'}", &["error spec.ratio type"]);
    assert_clean("{host: web, ratio: 0.25}");
}

#[test]
fn formats() {
    assert_only(
        "{host: web, address: 10.0.0.300}",
        &["error spec.address format"],
    );
    assert_clean("{host: web, address: 192.168.1.1}");
    // The API server does not range-check int32, but a Go int32 field cannot hold it.
    assert_only(
        "{host: web, count: 3000000000}",
        &["warning spec.count format"],
    );
    assert_clean("{host: web, count: 2147483647}");
}

#[test]
fn required() {
    let findings = assert_only("{weight: 1}", &["error spec.host required"]);
    assert_eq!(findings[0].severity, Severity::Error);
    assert_only(
        "{host: web, backends: [{port: 1}]}",
        &["error spec.backends[0].name required"],
    );
}

#[test]
fn enums() {
    let findings = assert_only("{host: web, mode: Slow}", &["error spec.mode enum"]);
    assert!(
        findings[0].message.contains(r#""Fast", "Safe""#),
        "{}",
        findings[0].message
    );
    assert_clean("{host: web, mode: Fast}");
}

#[test]
fn patterns() {
    assert_only("{host: Web}", &["error spec.host pattern"]);
    assert_clean("{host: a.b}");
}

#[test]
fn minimum_and_maximum() {
    assert_only("{host: web, weight: -1}", &["error spec.weight minimum"]);
    assert_only("{host: web, weight: 101}", &["error spec.weight maximum"]);
    assert_clean("{host: web, weight: 0}");
    assert_clean("{host: web, weight: 100}");
    assert_only("{host: web, ratio: 0}", &["error spec.ratio minimum"]);
    assert_only("{host: web, ratio: 1}", &["error spec.ratio maximum"]);
}

#[test]
fn string_lengths() {
    // An empty host also fails the pattern, as the API server reports both.
    assert_only(
        "{host: ''}",
        &["error spec.host minLength", "error spec.host pattern"],
    );
    assert_only(
        "{host: abcdefghijklmnopqrstu}",
        &["error spec.host maxLength"],
    );
    // Lengths count characters, not bytes.
    assert_clean("{host: abcdefghijklmnopqrst}");
}

#[test]
fn item_counts() {
    assert_only("{host: web, tags: []}", &["error spec.tags minItems"]);
    assert_only(
        "{host: web, tags: [a, b, c, d]}",
        &["error spec.tags maxItems"],
    );
    assert_clean("{host: web, tags: [a, b, c]}");
}

#[test]
fn property_counts_and_additional_properties() {
    assert_only(
        "{host: web, headers: {}}",
        &["error spec.headers minProperties"],
    );
    assert_only(
        "{host: web, headers: {a: u, b: v, c: w}}",
        &["error spec.headers maxProperties"],
    );
    assert_only(
        "{host: web, headers: {x-id: 1}}",
        &["error spec.headers.x-id type"],
    );
    let findings = assert_only(
        "{host: web, headers: {a.b: 1}}",
        &["error spec.headers[\"a.b\"] type"],
    );
    assert!(findings[0].message.contains("string"));
    assert_clean("{host: web, headers: {a: u, b: v}}");
}

#[test]
fn nullable_and_null_pruning() {
    assert_clean("{host: web, note: null}");
    // A null where the schema does not allow one is dropped by the API server, or replaced by
    // the field's default: a warning, not an error.
    let findings = assert_only(
        "{host: web, retries: null}",
        &["warning spec.retries nullable"],
    );
    assert!(
        findings[0].message.contains("would drop `spec.retries`"),
        "{}",
        findings[0].message
    );
    assert_only(
        "{host: web, timeout: null}",
        &["warning spec.timeout nullable"],
    );
    // A required field that is null is dropped, so it is then missing.
    assert_only(
        "{host: null}",
        &["warning spec.host nullable", "error spec.host required"],
    );
    // In a list, null is not pruned: it is a type error.
    assert_only("{host: web, tags: [a, null]}", &["error spec.tags[1] type"]);
}

#[test]
fn int_or_string() {
    assert_clean("{host: web, port: 80}");
    assert_clean("{host: web, port: '80%'}");
    assert_only("{host: web, port: 1.5}", &["error spec.port type"]);
    assert_only("{host: web, port: true}", &["error spec.port type"]);
}

#[test]
fn preserve_unknown_fields() {
    assert_clean("{host: web, extra: {a: 1, b: {c: [true]}}}");
    // The same unknown field under `spec` itself is pruned.
    let findings = assert_only("{host: web, a: 1}", &["warning spec.a pruned"]);
    assert_eq!(
        findings[0].message,
        "the API server would drop `spec.a`: the schema does not declare it"
    );
}

#[test]
fn embedded_resources() {
    assert_clean("{host: web, template: {apiVersion: v1, kind: Pod}}");
    assert_only(
        "{host: web, template: {spec: {}}}",
        &[
            "error spec.template.apiVersion x-kubernetes-embedded-resource",
            "error spec.template.kind x-kubernetes-embedded-resource",
        ],
    );
    assert_only(
        "{host: web, template: {apiVersion: v1, kind: ''}}",
        &["error spec.template.kind x-kubernetes-embedded-resource"],
    );
}

#[test]
fn items() {
    assert_only(
        "{host: web, backends: [{name: a, port: x}]}",
        &["error spec.backends[0].port type"],
    );
    assert_only("{host: web, tags: [1]}", &["error spec.tags[0] type"]);
}

#[test]
fn list_types() {
    assert_only(
        "{host: web, backends: [{name: a}, {name: b, port: 1}, {name: a, port: 2}]}",
        &["error spec.backends[2] x-kubernetes-list-map-keys"],
    );
    assert_clean("{host: web, backends: [{name: a}, {name: b}]}");
    assert_only(
        "{host: web, tags: [a, b, a]}",
        &["error spec.tags[2] x-kubernetes-list-type"],
    );
    // Integral floats and integers are the same JSON number on the wire.
    let set = JsonValue::Array(vec![JsonValue::Int(1), JsonValue::Float(1.0)]);
    let mut findings = Vec::new();
    let schema = &schemas()
        .find("test.kruise-lua.dev", "Widget")
        .unwrap()
        .storage_version()
        .unwrap();
    let tags = &schema.schema.as_ref().unwrap().properties["spec"].properties["tags"];
    kruise_lua_engine::schema::validate_value(tags, &set, &[], &mut findings);
    let rules: Vec<&str> = findings.iter().map(|f| f.rule).collect();
    assert_eq!(rules, ["type", "type", "x-kubernetes-list-type"]);
}

#[test]
fn pruning() {
    assert_only(
        "{host: web, backends: [{name: a, weight: 3}], prefix: /x}",
        &[
            "warning spec.backends[0].weight pruned",
            "warning spec.prefix pruned",
        ],
    );
    // Fields of the resource root other than apiVersion/kind/metadata/spec are pruned too.
    let v = validate_object(
        schemas(),
        &json(
            "apiVersion: test.kruise-lua.dev/v1\nkind: Widget\nspec: {host: web}\nstatus: {a: 1}\n",
        ),
    );
    assert_eq!(summary(&v), ["warning status pruned"]);
}

#[test]
fn cel_rules() {
    let findings = assert_only(
        "{host: web, limits: {low: 3, high: 2}}",
        &["error spec.limits cel"],
    );
    assert_eq!(findings[0].message, "low must not exceed high");
    assert_clean("{host: web, limits: {low: 1, high: 2}}");
    // A field the rule reads is missing: the API server reports "no such key".
    let findings = assert_only("{host: web, limits: {low: 1}}", &["error spec.limits cel"]);
    assert!(
        findings[0].message.contains("no such key: high"),
        "{}",
        findings[0].message
    );
}

#[test]
fn cel_rules_are_skipped_while_the_object_has_blocking_errors() {
    // As the API server: a type (or enum, required, maxLength, maxItems, maxProperties) error
    // anywhere means no CEL rule is evaluated.
    let findings = assert_only(
        "{host: web, weight: 1.5, limits: {low: 3, high: 2}}",
        &["error spec.weight type", "warning (root) cel"],
    );
    assert!(
        findings[1].message.contains("skips them"),
        "{}",
        findings[1].message
    );
    // Other errors (minimum here) do not block them.
    assert_only(
        "{host: web, weight: -1, limits: {low: 3, high: 2}}",
        &["error spec.weight minimum", "error spec.limits cel"],
    );
}

#[test]
fn schema_sets_can_be_shared_across_threads() {
    fn shareable<T: Send + Sync>(_: &T) {}
    shareable(schemas());
}

#[test]
fn one_of() {
    assert_only(
        "{host: web, match: {exact: a, prefix: b}}",
        &["error spec.match oneOf"],
    );
    assert_only("{host: web, match: {}}", &["error spec.match oneOf"]);
    assert_clean("{host: web, match: {prefix: /b}}");
}

#[test]
fn version_choice() {
    // v1alpha1 keeps anything under spec.
    let alpha = validate_object(
        schemas(),
        &json("apiVersion: test.kruise-lua.dev/v1alpha1\nkind: Widget\nspec: {whatever: 1}\n"),
    );
    assert!(alpha.findings.is_empty(), "{:?}", alpha.findings);
    assert_eq!(alpha.schema.unwrap().version, "v1alpha1");
    // Without apiVersion, the storage version is used (and this is no known group: none).
    let unknown = validate_object(
        schemas(),
        &json("apiVersion: test.kruise-lua.dev/v9\nkind: Widget\n"),
    );
    assert_eq!(summary(&unknown), ["error apiVersion apiVersion"]);
    let gizmo_v0 = validate_object(
        schemas(),
        &json("apiVersion: test.kruise-lua.dev/v0\nkind: Gizmo\n"),
    );
    assert_eq!(summary(&gizmo_v0), ["error apiVersion apiVersion"]);
    assert!(gizmo_v0.findings[0].message.contains("not served"));
    let gizmo_v1 = validate_object(
        schemas(),
        &json("apiVersion: test.kruise-lua.dev/v1\nkind: Gizmo\n"),
    );
    assert_eq!(summary(&gizmo_v1), ["warning (root) schema"]);
    let none = validate_object(
        schemas(),
        &json("apiVersion: example.com/v1\nkind: Other\nspec: {x: 1}\n"),
    );
    assert!(none.schema.is_none() && none.findings.is_empty());
}

#[test]
fn labels_and_annotations() {
    let v = validate_object(
        schemas(),
        &json(
            "apiVersion: example.com/v1\nkind: Other\nmetadata:\n  labels:\n    good: v1\n    \
             bad/key/x: v\n    app: -bad\n  annotations:\n    ok.example.com/a: anything at all\n    \
             Bad_Prefix/a: x\n",
        ),
    );
    assert_eq!(
        summary(&v),
        [
            r#"error metadata.labels.app label-value"#,
            "error metadata.labels.bad/key/x label-key",
            "error metadata.annotations.Bad_Prefix/a annotation-key",
        ]
    );
    let fine = validate_object(
        schemas(),
        &json(
            "apiVersion: example.com/v1\nkind: Other\nmetadata:\n  labels: {app.kubernetes.io/name: web, empty: ''}\n",
        ),
    );
    assert!(fine.findings.is_empty(), "{:?}", fine.findings);
}

#[test]
fn a_step_result_patched_onto_the_original() {
    let original = json(
        "apiVersion: test.kruise-lua.dev/v1\nkind: Widget\nmetadata:\n  name: w\n  labels: {app: web}\n\
         spec: {host: web, weight: 0}\n",
    );
    let mut spec = JsonMap::new();
    spec.insert("host".to_owned(), JsonValue::String("web".into()));
    spec.insert("weight".to_owned(), JsonValue::Float(33.333));
    spec.insert("prefix".to_owned(), JsonValue::String("/canary".into()));
    let result = Data {
        spec: Some(JsonValue::Object(spec)),
        labels: Some(BTreeMap::from([("bad key".to_owned(), "v".to_owned())])),
        annotations: None,
    };
    let v = validate_patched(schemas(), &original, &result);
    assert_eq!(
        summary(&v),
        [
            r#"error metadata.labels["bad key"] label-key"#,
            "warning spec.prefix pruned",
            "error spec.weight type",
        ]
    );
    // The object Kruise writes carries the original in its annotation, and the step's labels.
    let patched = patched_resource(&original, &result);
    let JsonValue::Object(fields) = &patched else {
        panic!()
    };
    let JsonValue::Object(meta) = &fields["metadata"] else {
        panic!()
    };
    let JsonValue::Object(annotations) = &meta["annotations"] else {
        panic!()
    };
    assert_eq!(
        annotations["rollouts.kruise.io/original-spec-configuration"],
        // Kruise's Data field order (spec, labels), as controller::store_original writes it.
        JsonValue::String(r#"{"spec":{"host":"web","weight":0},"labels":{"app":"web"}}"#.into())
    );
    assert_eq!(meta["name"], JsonValue::String("w".into()));
    let good = Data {
        spec: Some(json("{host: web, weight: 33}")),
        labels: None,
        annotations: Some(BTreeMap::from([("note".to_owned(), "x".to_owned())])),
    };
    assert!(
        validate_patched(schemas(), &original, &good)
            .findings
            .is_empty()
    );
}

#[test]
fn later_crds_replace_earlier_ones_for_the_same_kind() {
    let mut set = SchemaSet::new();
    set.add_path(&fixtures().join("widgets.yaml")).unwrap();
    let replacement = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n\
        metadata: {name: widgets.test.kruise-lua.dev}\nspec:\n  group: test.kruise-lua.dev\n  \
        names: {kind: Widget}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    \
        schema:\n      openAPIV3Schema:\n        type: object\n        x-kubernetes-preserve-unknown-fields: true\n";
    assert_eq!(set.add_text("mine.yaml", replacement).unwrap(), 1);
    assert_eq!(set.crds().len(), 1);
    let v = validate_object(
        &set,
        &json("apiVersion: test.kruise-lua.dev/v1\nkind: Widget\nspec: {x: 1}\n"),
    );
    assert!(v.findings.is_empty());
    assert_eq!(v.schema.unwrap().source, "mine.yaml:1");
}

#[test]
fn load_errors_name_file_line_and_cause() {
    let cases = [
        ("a: [\n", 2, "invalid YAML"),
        (
            "kind: CustomResourceDefinition\napiVersion: apiextensions.k8s.io/v1beta1\n",
            1,
            "only apiextensions.k8s.io/v1",
        ),
        (
            "---\nkind: CustomResourceDefinition\napiVersion: apiextensions.k8s.io/v1\nspec:\n  names: {kind: A}\n",
            5,
            "spec.group",
        ),
        (
            "kind: CustomResourceDefinition\napiVersion: apiextensions.k8s.io/v1\nspec:\n  group: g\n  \
             names: {kind: A}\n  versions:\n  - {name: v1, storage: true}\n  - {name: v2, storage: true}\n",
            7,
            "exactly one version must have storage: true, found 2",
        ),
        (
            "kind: CustomResourceDefinition\napiVersion: apiextensions.k8s.io/v1\nspec:\n  group: g\n  \
             names: {kind: A}\n  versions:\n  - name: v1\n    storage: true\n    schema:\n      \
             openAPIV3Schema:\n        type: objekt\n",
            11,
            "unknown type \"objekt\"",
        ),
        (
            "kind: CustomResourceDefinition\napiVersion: apiextensions.k8s.io/v1\nspec:\n  group: g\n  \
             names: {kind: A}\n  versions:\n  - name: v1\n    storage: true\n    schema:\n      \
             openAPIV3Schema:\n        type: array\n        x-kubernetes-list-type: map\n",
            11,
            "needs x-kubernetes-list-map-keys",
        ),
    ];
    for (text, line, cause) in cases {
        let error = SchemaSet::new().add_text("bad.yaml", text).unwrap_err();
        assert_eq!(error.file, "bad.yaml", "{text}");
        assert_eq!(error.line, line, "{text}: {error}");
        assert!(error.message.contains(cause), "{text}: {error}");
        assert!(error.to_string().starts_with(&format!("bad.yaml:{line}: ")));
    }
    let missing = SchemaSet::new()
        .add_path(Path::new("/nonexistent/crds.yaml"))
        .unwrap_err();
    assert_eq!(missing.file, "/nonexistent/crds.yaml");
}

#[test]
fn a_hand_built_crd_without_storage_version_is_an_error_not_a_crash() {
    use kruise_lua_engine::schema::{Crd, CrdVersion};
    let mut set = SchemaSet::new();
    set.insert(Crd {
        name: "things.example.com".into(),
        group: "example.com".into(),
        kind: "Thing".into(),
        versions: vec![CrdVersion::new("v1".into(), true, false, None)],
        file: "built".into(),
        line: 0,
    });
    // Without an apiVersion of its group, a resource gets the storage version: there is none.
    let v = validate_object_as(&set, "example.com", "Thing", &json("kind: Thing\n"));
    assert_eq!(summary(&v), ["error apiVersion apiVersion"]);
    assert!(v.findings[0].message.contains("no storage version"));
    let v = validate_object(&set, &json("kind: Thing\napiVersion: example.com/v2\n"));
    assert_eq!(summary(&v), ["error apiVersion apiVersion"]);
}

#[test]
fn group_and_kind_given_by_the_caller() {
    // An original without apiVersion is checked against the storage version (v1, which prunes
    // `x`; v1alpha1 would keep it).
    let original = json("kind: Widget\nspec: {host: web}\n");
    let result = Data {
        spec: Some(json("{host: web, x: 1}")),
        ..Data::default()
    };
    let v = validate_patched_as(
        schemas(),
        "test.kruise-lua.dev",
        "Widget",
        &original,
        &result,
    );
    assert_eq!(v.schema.as_ref().unwrap().version, "v1");
    assert_eq!(summary(&v), ["warning spec.x pruned"]);
    // An apiVersion of the same group names the version.
    let alpha = json("apiVersion: test.kruise-lua.dev/v1alpha1\nkind: Widget\nspec: {host: web}\n");
    let v = validate_patched_as(schemas(), "test.kruise-lua.dev", "Widget", &alpha, &result);
    assert_eq!(v.schema.as_ref().unwrap().version, "v1alpha1");
    assert!(v.findings.is_empty());
}

#[test]
fn malformed_schemas_are_load_errors() {
    let head = "kind: CustomResourceDefinition\napiVersion: apiextensions.k8s.io/v1\nspec:\n  group: g\n  \
                names: {kind: A}\n  versions:\n  - name: v1\n    storage: true\n    schema:\n      \
                openAPIV3Schema:\n";
    for body in [
        "        properties: [a, b]\n",
        "        type: 3\n",
        "        required: {a: 1}\n",
        "        enum: x\n",
        "        minLength: -1\n",
        "        maximum: high\n",
        "        items: [x]\n",
        "        nullable: maybe\n",
        "        x-kubernetes-list-type: bag\n",
        "        x-kubernetes-validations: [{message: m}]\n",
        "        allOf: {a: 1}\n",
        "        additionalProperties: 3\n",
        "        []\n",
    ] {
        let error = SchemaSet::new()
            .add_text("bad.yaml", &format!("{head}{body}"))
            .unwrap_err();
        assert!(error.line >= 10, "{body}: {error}");
        assert_eq!(error.file, "bad.yaml");
    }
}

/// apiextensions `StaticEstimatedCRDCostLimit`: a cheap rule that can run once per item of an
/// unbounded list makes the CRD's total too costly; the finding names the CRD.
#[test]
fn a_crd_over_the_total_cost_limit_is_a_crd_problem() {
    let crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: routes.example.com\nspec:\n  group: example.com\n  names: {kind: Route, plural: routes}\n  scope: Namespaced\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec:\n            type: object\n            properties:\n              routes:\n                type: array\n                items:\n                  type: object\n                  properties:\n                    tags: {type: array, maxItems: 100, items: {type: string, maxLength: 10}}\n                  x-kubernetes-validations:\n                  - rule: self.tags.all(t, t.size() < 10)\n";
    let mut set = SchemaSet::new();
    set.add_text("routes.yaml", crd).unwrap();
    let object = json(
        "apiVersion: example.com/v1\nkind: Route\nmetadata: {name: r}\nspec: {routes: [{tags: [a]}]}\n",
    );
    let v = validate_object(&set, &object);
    assert_eq!(summary(&v), ["error (root) crd-cost"], "{:#?}", v.findings);
    assert!(
        v.findings[0]
            .message
            .contains("StaticEstimatedCRDCostLimit")
    );
    assert_eq!(
        v.findings[0].crd.as_deref(),
        Some("routes.yaml:1, version v1")
    );
}

/// apiextensions' structural-schema check refuses `x-kubernetes-validations` inside `allOf`,
/// `anyOf`, `oneOf` and `not` ("must be empty to be structural"): the CRD is reported, and
/// the rule, which never runs in a cluster, does not run here either.
#[test]
fn a_crd_with_rules_inside_a_junctor_is_refused() {
    let crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: routes.example.com\nspec:\n  group: example.com\n  names: {kind: Route, plural: routes}\n  scope: Namespaced\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec:\n            type: object\n            properties:\n              port: {type: integer}\n            allOf:\n            - x-kubernetes-validations:\n              - rule: self.port > 0\n";
    let mut set = SchemaSet::new();
    set.add_text("routes.yaml", crd).unwrap();
    let object =
        json("apiVersion: example.com/v1\nkind: Route\nmetadata: {name: r}\nspec: {port: -1}\n");
    let v = validate_object(&set, &object);
    assert_eq!(
        summary(&v),
        ["error (root) crd-structural"],
        "{:#?}",
        v.findings
    );
    assert!(
        v.findings[0].message.contains(
            "openAPIV3Schema.properties[spec].allOf[0].x-kubernetes-validations must be empty to be structural"
        ),
        "{}",
        v.findings[0].message
    );
}

/// Versions with the same schema (an alias, or the same text) share one compiled schema;
/// versions whose schemas differ in a string, even one of equal length and start, do not.
#[test]
fn versions_share_a_schema_only_when_it_is_the_same() {
    let version = |name: &str, storage: bool, description: &str| {
        format!(
            "  - name: {name}\n    served: true\n    storage: {storage}\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec: {{type: object, description: {description}}}\n"
        )
    };
    let crd = format!(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {{name: as.example.com}}\nspec:\n  group: example.com\n  names: {{kind: A, plural: as}}\n  versions:\n{}{}{}",
        version("v1", true, "route spec one"),
        version("v2", false, "route spec one"),
        version("v3", false, "route spec two"),
    );
    let mut set = SchemaSet::new();
    set.add_text("a.yaml", &crd).unwrap();
    let versions = &set.find("example.com", "A").unwrap().versions;
    let schema = |index: usize| versions[index].schema.as_ref().unwrap();
    assert!(std::sync::Arc::ptr_eq(schema(0), schema(1)));
    assert!(!std::sync::Arc::ptr_eq(schema(0), schema(2)));
    let description = |index: usize| schema(index).properties["spec"].description.clone();
    assert_eq!(description(2).as_deref(), Some("route spec two"));
}

/// A schema that declares defaults leaves a value that needs none as it is (no copy), and a
/// default still applies where its field is absent, including for transition rules' old value.
#[test]
fn defaults_apply_only_where_a_field_lacks_one() {
    let crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: ds.example.com}\nspec:\n  group: example.com\n  names: {kind: D, plural: ds}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec:\n            type: object\n            properties:\n              mode: {type: string, default: strict, enum: [strict, loose]}\n              port: {type: integer}\n            x-kubernetes-validations:\n            - rule: self.mode == 'strict' || self.port > 0\n";
    let mut set = SchemaSet::new();
    set.add_text("d.yaml", crd).unwrap();
    let check = |spec: &str| {
        let object = json(&format!(
            "apiVersion: example.com/v1\nkind: D\nmetadata: {{name: d}}\nspec: {spec}\n"
        ));
        summary(&validate_object(&set, &object))
    };
    assert!(check("{mode: loose, port: 1}").is_empty());
    assert_eq!(check("{mode: loose}"), ["error spec cel"]);
    // Defaulted to strict: the rule passes.
    assert!(check("{}").is_empty());
    assert_eq!(check("{mode: null}"), ["warning spec.mode nullable"]);
}
