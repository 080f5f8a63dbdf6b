//! The walker's own rules: junctors, numbers, patterns, and what `allOf` branches and `set`
//! lists leave to rules.

use super::*;
use crate::yaml::parse_first_document;

fn schema(yaml: &str) -> Schema {
    Schema::compile(&parse_first_document(yaml).unwrap().unwrap()).unwrap()
}

fn rules(schema: &Schema, value: JsonValue) -> Vec<(&'static str, super::super::Severity)> {
    let mut out = Vec::new();
    validate_value(schema, &value, &[], &mut out);
    out.iter().map(|f| (f.rule, f.severity)).collect()
}

use super::super::Severity::{Error, Warning};

#[test]
fn junctors_validate_values() {
    let s = schema("anyOf: [{minimum: 10}, {maximum: 0}]");
    assert_eq!(rules(&s, JsonValue::Int(5)), [("anyOf", Error)]);
    assert!(rules(&s, JsonValue::Int(11)).is_empty());
    let s = schema("allOf: [{minimum: 1}, {maximum: 3}]");
    assert_eq!(rules(&s, JsonValue::Int(4)), [("maximum", Error)]);
    assert!(rules(&s, JsonValue::Int(2)).is_empty());
    let s = schema("not: {enum: [x]}");
    assert_eq!(rules(&s, JsonValue::String("x".into())), [("not", Error)]);
    assert!(rules(&s, JsonValue::String("y".into())).is_empty());
}

/// Inside `allOf` branches the walker runs no rule (the API server refuses a CRD with rules
/// there: `structural.rs`), and reports what it could not check, as it does elsewhere: a
/// pattern the regex crate refuses is a warning, not dropped with the branch's other findings.
#[test]
fn all_of_branches_run_no_rule_and_say_what_they_could_not_check() {
    let s = schema(
        "type: object
properties:
  num: {type: integer}
  name: {type: string}
allOf:
- properties:
    num:
      x-kubernetes-validations:
      - rule: self > 0
    name: {pattern: '^\\p{Letter}$'}
",
    );
    let value = parse_first_document("{num: -1, name: x}")
        .unwrap()
        .unwrap()
        .to_json();
    let mut out = Vec::new();
    validate_root(&s, &value, Old::Unknown, false, &mut out);
    assert_eq!(
        out.iter()
            .map(|f| (f.path_text(), f.rule, f.severity))
            .collect::<Vec<_>>(),
        [("name".to_owned(), "pattern", Warning)],
        "{out:#?}"
    );
}

/// A `set` list's items are not matched with the old ones for transition rules, as the API
/// server matches only a `map` list's (by key): an item rule reading `oldSelf` does not run.
/// (It ran against the equal old item, and `self != oldSelf` failed.)
#[test]
fn transition_rules_of_set_items_do_not_run() {
    let s = schema(
        "type: array
x-kubernetes-list-type: set
items:
  type: string
  x-kubernetes-validations:
  - rule: self != oldSelf
",
    );
    let list = parse_first_document("[a, b]").unwrap().unwrap().to_json();
    let mut out = Vec::new();
    validate_root(&s, &list, Old::Value(&list), false, &mut out);
    assert!(out.is_empty(), "{out:#?}");
}

/// A branch of `anyOf`, `oneOf` or `not` that could not check something and found no error may
/// or may not match: the junctor says it was not checked instead of deciding (`anyOf` passed
/// and `not` failed in silence). A warning repeated by two `allOf` branches is given once.
#[test]
fn junctors_say_when_a_branch_could_not_be_checked() {
    // Go 1.25 reads `\p{Letter}`, Go 1.24 refuses it: not checked either way.
    let unsure = r"{pattern: '^\p{Letter}$'}";
    let x = || JsonValue::String("x".into());
    let s = schema(&format!("anyOf: [{unsure}, {{maxLength: 0}}]"));
    assert_eq!(rules(&s, x()), [("anyOf", Warning)]);
    let s = schema(&format!("anyOf: [{unsure}, {{minLength: 1}}]"));
    assert!(rules(&s, x()).is_empty());
    let s = schema(&format!("not: {unsure}"));
    assert_eq!(rules(&s, x()), [("not", Warning)]);
    let s = schema(&format!("oneOf: [{unsure}, {{minLength: 1}}]"));
    assert_eq!(rules(&s, x()), [("oneOf", Warning)]);
    let s = schema(&format!(
        "oneOf: [{unsure}, {{minLength: 1}}, {{maxLength: 5}}]"
    ));
    assert_eq!(rules(&s, x()), [("oneOf", Error)]);
    let s = schema(&format!("allOf: [{unsure}, {unsure}]"));
    assert_eq!(rules(&s, x()), [("pattern", Warning)]);
}

/// The API server prunes before it validates, so a junctor's branches see neither undeclared
/// fields nor nulls in fields that do not allow them: neither satisfies a branch's
/// `required` (both did).
#[test]
fn junctor_branches_validate_the_pruned_value() {
    let s = schema(
        "type: object
properties:
  x: {type: string}
allOf:
- required: [x]
anyOf:
- required: [ghost]
- required: [x]
",
    );
    let value = parse_first_document("{x: null, ghost: 1}")
        .unwrap()
        .unwrap()
        .to_json();
    let mut out = Vec::new();
    validate_value(&s, &value, &[], &mut out);
    let mut found: Vec<_> = out
        .iter()
        .map(|f| (f.path_text(), f.rule, f.severity))
        .collect();
    found.sort();
    assert_eq!(
        found,
        [
            ("(root)".to_owned(), "anyOf", Error),
            ("ghost".to_owned(), "pruned", Warning),
            ("x".to_owned(), "nullable", Warning),
            ("x".to_owned(), "required", Error),
        ],
        "{out:#?}"
    );
}

/// kube-openapi's common validator matches no enum entry against a null, a null entry
/// included (`basicCommonValidator.Validate`, reached from `SchemaValidator.Validate` on nil).
#[test]
fn a_null_is_in_no_enum() {
    let s = schema("{type: string, nullable: true, enum: [a, null]}");
    assert_eq!(rules(&s, JsonValue::Null), [("enum", Error)]);
    assert!(rules(&s, JsonValue::String("a".into())).is_empty());
    let without_enum = schema("{type: string, nullable: true}");
    assert!(rules(&without_enum, JsonValue::Null).is_empty());
}

#[test]
fn multiple_of() {
    let s = schema("type: number\nmultipleOf: 0.5");
    assert_eq!(rules(&s, JsonValue::Float(0.75)), [("multipleOf", Error)]);
    assert!(rules(&s, JsonValue::Float(1.5)).is_empty());
}

#[test]
fn patterns_the_regex_crate_refuses_are_not_checked() {
    // Go 1.25 reads `\p{Letter}`, Go 1.24 refuses it: not checked either way.
    let s = schema(r"{type: string, pattern: '^\p{Letter}$'}");
    assert_eq!(
        rules(&s, JsonValue::String(".".into())),
        [("pattern", Warning)]
    );
}

#[test]
fn integers_beyond_what_json_keeps_exact() {
    let s = schema("type: integer\nformat: int64");
    // 1e16 goes out as digits and is decoded as int64; 1e19 goes out as digits too but does
    // not fit int64, and 1e21 goes out as `1e+21`: both are float64 beyond swag's 2^53-1.
    assert!(rules(&s, JsonValue::Float(1e16)).is_empty());
    assert_eq!(rules(&s, JsonValue::Float(1e19)), [("type", Error)]);
    assert_eq!(rules(&s, JsonValue::Float(1e21)), [("type", Error)]);
    assert!(rules(&s, JsonValue::Float(9007199254740991.0)).is_empty());
    assert!(rules(&s, JsonValue::Int(i64::MAX)).is_empty());
}

#[test]
fn additional_properties_true_keeps_everything() {
    let s = schema("type: object\nadditionalProperties: true");
    let value = JsonValue::Object(JsonMap::from([("a".into(), JsonValue::Int(1))]));
    assert!(rules(&s, value).is_empty());
    let s = schema("type: object\nadditionalProperties: false");
    let value = JsonValue::Object(JsonMap::from([("a".into(), JsonValue::Int(1))]));
    assert_eq!(rules(&s, value), [("pruned", Warning)]);
}

#[test]
fn defaults_apply_before_list_keys_and_rules() {
    // The issue's examples: a list-map key defaulted to TCP makes two items one key, and a
    // rule reading a defaulted field finds it.
    let ports = schema(
        "type: array\nx-kubernetes-list-type: map\nx-kubernetes-list-map-keys: [name, protocol]\nitems:\n  type: object\n  required: [name]\n  properties:\n    name: {type: string}\n    protocol: {type: string, default: TCP}\n",
    );
    let items = |yaml: &str| parse_first_document(yaml).unwrap().unwrap().to_json();
    assert_eq!(
        rules(&ports, items("[{name: a}, {name: a, protocol: TCP}]")),
        [("x-kubernetes-list-map-keys", Error)]
    );
    let backend = schema(
        "type: object\nproperties:\n  group: {type: string, default: ''}\n  kind: {type: string, default: Service}\n  port: {type: integer}\nx-kubernetes-validations:\n- rule: \"(size(self.group) == 0 && self.kind == 'Service') ? has(self.port) : true\"\n",
    );
    assert!(rules(&backend, items("{port: 80}")).is_empty());
    assert_eq!(rules(&backend, items("{}")), [("cel", Error)]);
}

#[test]
fn transition_rules_compare_with_the_old_object() {
    let s = schema(
        "type: object\nproperties:\n  routes:\n    type: array\n    x-kubernetes-list-type: map\n    x-kubernetes-list-map-keys: [name]\n    items:\n      type: object\n      properties:\n        name: {type: string}\n        weight:\n          type: integer\n          x-kubernetes-validations:\n          - rule: self >= oldSelf\n            message: weight may only grow\n",
    );
    let json = |yaml: &str| parse_first_document(yaml).unwrap().unwrap().to_json();
    let update = |new: &str, old: Old<'_>| {
        let mut out = Vec::new();
        validate_root(&s, &json(new), old, false, &mut out);
        out.iter()
            .map(|f| (f.path_text(), f.severity, f.message.clone()))
            .collect::<Vec<_>>()
    };
    let old = json("{routes: [{name: a, weight: 5}, {name: b, weight: 5}]}");
    // Items are matched by key, whatever their order; a new item has no old value.
    assert!(
        update(
            "{routes: [{name: c, weight: 1}, {name: b, weight: 6}, {name: a, weight: 5}]}",
            Old::Value(&old)
        )
        .is_empty()
    );
    assert_eq!(
        update("{routes: [{name: b, weight: 4}]}", Old::Value(&old)),
        [(
            "routes[0].weight".to_owned(),
            Error,
            "weight may only grow".to_owned()
        )]
    );
    // Without the old object the rule is not checked, and says so.
    assert!(matches!(
        update("{routes: [{name: b, weight: 4}]}", Old::Unknown).as_slice(),
        [(_, Warning, m)] if m.contains("oldSelf")
    ));
}

#[test]
fn nesting_beyond_the_limit_is_a_compile_error() {
    use crate::yaml::{YamlNode, YamlValue};
    let key = |k: &str| YamlNode::synthetic(YamlValue::String(k.into()));
    let mut node = YamlNode::synthetic(YamlValue::Map(vec![(key("type"), key("string"))]));
    for _ in 0..150 {
        node = YamlNode::synthetic(YamlValue::Map(vec![(key("items"), node)]));
    }
    let error = Schema::compile(&node).unwrap_err();
    assert!(error.message.contains("deeper than"), "{}", error.message);
}

/// A `map` list's duplicate keys are found the same in a short list (compared pairwise) and a
/// long one (by key texts): each key's second item is reported, once; absent key fields and
/// null items are keys too, and `1` equals `1.0` (the same text).
#[test]
fn list_map_duplicates_short_and_long_lists_alike() {
    let s = schema(
        "type: array\nx-kubernetes-list-type: map\nx-kubernetes-list-map-keys: [name, port]\nitems:\n  type: object\n  nullable: true\n  properties:\n    name: {type: string}\n    port: {type: number}\n",
    );
    let found = |yaml: &str| {
        let value = parse_first_document(yaml).unwrap().unwrap().to_json();
        let mut out = Vec::new();
        validate_value(&s, &value, &[], &mut out);
        out.iter()
            .map(|f| (f.path_text(), f.message.clone()))
            .collect::<Vec<_>>()
    };
    let items = "{name: a, port: 1}, {name: a, port: 1.0}, {name: b}, {name: a, port: 1}, {name: b}, {port: 2}, null, {name: b, port: 2}, {}";
    let short = found(&format!("[{items}]"));
    assert_eq!(
        short
            .iter()
            .map(|(path, _)| path.as_str())
            .collect::<Vec<_>>(),
        ["[1]", "[4]", "[8]"]
    );
    assert_eq!(
        short[0].1,
        "duplicate key {\"name\":\"a\",\"port\":1} in a list of type map (keys: name, port)"
    );
    // The same items after 20 of distinct keys.
    let distinct: Vec<String> = (0..20).map(|i| format!("{{name: d{i}}}")).collect();
    let long = found(&format!("[{}, {items}]", distinct.join(", ")));
    let shifted: Vec<(String, String)> = short
        .iter()
        .map(|(path, message)| {
            let index: usize = path[1..path.len() - 1].parse().unwrap();
            (format!("[{}]", index + 20), message.clone())
        })
        .collect();
    assert_eq!(long, shifted);
}
