//! A CEL rule whose single call would build a value far larger than the evaluation budget
//! (`self.s.replace('', self.s)` on a long string: its length squared; `lists.range(9000000)`:
//! nine million items, past the `cel` crate's own cap of a million, which made it an error
//! the API server does not report) is stopped before the call runs, so the check takes memory for the
//! object, not for the value the call would build: before, the value was built and only then
//! charged (400 MB for a 20,000 character string, 10^12 bytes for a 1 MB one). Its own test
//! binary, so that the allocator counting the Rust heap's peak sees this run alone.

mod counting;

use kruise_lua_engine::JsonValue;
use kruise_lua_engine::schema::{SchemaSet, Severity, validate_object};

#[global_allocator]
static ALLOCATOR: counting::Counting = counting::Counting;

const CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: texts.example.com}
spec:
  group: example.com
  names: {kind: Text, plural: texts}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              s: {type: string}
            x-kubernetes-validations:
            - rule: self.s.replace('', self.s).size() > 0
            - rule: lists.range(9000000).size() > 0
";

#[test]
fn calls_that_would_build_past_the_budget_stop_before_building() {
    let mut set = SchemaSet::new();
    set.add_text("texts.yaml", CRD).unwrap();
    // 20,000 characters first: without the check before the call, 400 MB built (a failure
    // here rather than an allocation that aborts the process), then 1 MB.
    for length in [20_000, 1 << 20] {
        let text = "a".repeat(length);
        let object = JsonValue::parse_go_interface(
            format!(
                r#"{{"apiVersion": "example.com/v1", "kind": "Text", "metadata": {{"name": "t"}}, "spec": {{"s": "{text}"}}}}"#
            )
            .as_bytes(),
        )
        .unwrap();
        drop(text);
        let (v, grown) = counting::peak_growth(|| validate_object(&set, &object));
        assert!(
            grown < 64 << 20,
            "{length}: the check held {} MiB of Rust heap at its peak",
            grown >> 20
        );

        let not_checked: Vec<_> = v
            .findings
            .iter()
            .filter(|f| f.rule == "cel" && f.severity == Severity::Warning)
            .map(|f| f.message.as_str())
            .collect();
        assert_eq!(not_checked.len(), 2, "{length}: {:#?}", v.findings);
        for message in &not_checked {
            assert!(message.contains("PerCallLimit"), "{length}: {message}");
        }
        assert_eq!(v.findings.len(), 2, "{length}: {:#?}", v.findings);
    }
}
