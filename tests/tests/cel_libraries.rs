//! Rules using Kubernetes' CEL libraries, end to end through `check` (issue 21): Istio's
//! `jwksUri` and WasmPlugin `url` rules (istio/api `security/v1beta1/request_authentication.proto`
//! `JWTRule.jwks_uri` and `extensions/v1alpha1/wasm.proto` `WasmPlugin.url`, their
//! `+kubebuilder:validation:XValidation` markers, rewritten here in a CRD of our own), a
//! `quantity(self).compareTo(...)` rule, a format-library rule, and a rule using what this
//! checker lacks (reported as not checked, naming the function).

mod common;

use std::path::PathBuf;

use common::{json_lines, run_in, scratch};
use serde_json::Value;

/// Writes the case's values itself (they wait under `spec.staged` in `original`): values the
/// update left as they were would be ratcheted (CRD validation ratcheting), not checked.
const SCRIPT: &str = "local spec = {}\nfor name, value in pairs(obj.data.spec.staged) do\n  spec[name] = value\nend\nreturn { spec = spec }\n";

/// A case whose object (`example.io/v1` Demo) has the given `spec` lines.
fn case(spec: &str) -> String {
    let object = |spec: &str| {
        format!(
            "  apiVersion: example.io/v1\n  kind: Demo\n  metadata:\n    name: demo\n  spec:\n{spec}"
        )
    };
    let staged: String = spec.lines().map(|line| format!("  {line}\n")).collect();
    let original = object(&format!("    staged:\n{staged}"));
    let object = object(spec);
    format!(
        "rollout:\n  apiVersion: rollouts.kruise.io/v1beta1\n  kind: Rollout\n  metadata:\n    name: demo\n  spec:\n    workloadRef:\n      apiVersion: apps/v1\n      kind: Deployment\n      name: demo\n    strategy:\n      canary:\n        steps:\n        - traffic: 20%\n        trafficRoutings:\n        - service: demo\n          customNetworkRefs:\n          - apiVersion: example.io/v1\n            kind: Demo\n            name: demo\noriginal:\n{original}expected:\n-{}",
        &object[1..]
    )
}

/// Demo's CRD: `spec.jwksUri`, `spec.url` and `spec.memory` with the rules above, `spec.name`
/// with a rule of Kubernetes' format library, and `spec.ports` with a two-variable
/// comprehension.
const CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: demos.example.io
spec:
  group: example.io
  scope: Namespaced
  names:
    kind: Demo
    plural: demos
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
              jwksUri:
                type: string
                maxLength: 2048
                x-kubernetes-validations:
                - rule: url(self).getScheme() in ['http', 'https']
                  message: url must have scheme http:// or https://
              url:
                type: string
                minLength: 1
                x-kubernetes-validations:
                - rule: "isURL(self) ? (url(self).getScheme() in ['', 'http', 'https', 'oci', 'file']) : (isURL('http://' + self) && url('http://' + self).getHost() != '')"
                  message: 'url must have schema one of [http, https, file, oci]'
              memory:
                type: string
                maxLength: 64
                x-kubernetes-validations:
                - rule: quantity(self).compareTo(quantity('1Gi')) <= 0
                  message: memory must be at most 1Gi
              name:
                type: string
                maxLength: 63
                x-kubernetes-validations:
                - rule: "!format.dns1123Label().validate(self).hasValue()"
                  messageExpression: "'name: ' + format.dns1123Label().validate(self).value().join(', ')"
              ports:
                type: object
                maxProperties: 10
                additionalProperties: {type: integer}
                x-kubernetes-validations:
                - rule: self.all(name, port, port > 0)
"#;

/// A tree `<dir>/lua/example.io/Demo` with one case per `(name, spec)`, and the CRD.
fn tree(name: &str, cases: &[(&str, &str)]) -> PathBuf {
    let dir = scratch(name);
    let folder = dir.join("lua/example.io/Demo");
    std::fs::create_dir_all(folder.join("testdata")).unwrap();
    std::fs::create_dir_all(dir.join("lua/crds")).unwrap();
    std::fs::write(folder.join("trafficRouting.lua"), SCRIPT).unwrap();
    for (case_name, spec) in cases {
        std::fs::write(
            folder.join(format!("testdata/{case_name}.yaml")),
            case(spec),
        )
        .unwrap();
    }
    std::fs::write(dir.join("lua/crds/demo.yaml"), CRD).unwrap();
    dir
}

fn step<'a>(lines: &'a [Value], case: &str) -> &'a Value {
    lines
        .iter()
        .find(|line| {
            line["case"]
                .as_str()
                .is_some_and(|c| c.ends_with(&format!("{case}.yaml")))
        })
        .unwrap_or_else(|| panic!("no line for {case}: {lines:#?}"))
}

fn messages(findings: &Value) -> Vec<String> {
    findings
        .as_array()
        .unwrap_or(&Vec::new())
        .iter()
        .map(|f| {
            format!(
                "{}: {}",
                f["path"].as_str().unwrap_or(""),
                f["message"].as_str().unwrap_or("")
            )
        })
        .collect()
}

#[test]
fn url_and_quantity_rules_are_checked_as_the_api_server_checks_them() {
    let dir = tree(
        "cel_libraries",
        &[
            (
                "good",
                "    jwksUri: https://example.com/.well-known/jwks.json\n    url: oci://registry.example.com/filter:v1\n    memory: 512Mi\n    name: my-name\n",
            ),
            ("bare_host", "    url: registry.example.com/filter.wasm\n"),
            (
                "bad",
                "    jwksUri: ftp://example.com/keys\n    url: 'ftp://example.com/filter.wasm'\n    memory: 2Gi\n",
            ),
            ("not_a_url", "    jwksUri: ../keys\n    memory: lots\n"),
            ("bad_name", "    name: Not_A_Label\n"),
        ],
    );
    let result = run_in(&dir, &["check", "--format", "json", "lua"]);
    assert_eq!(result.code, 1, "{result:?}");
    let lines = json_lines(&result.stdout);

    let bad_name = step(&lines, "bad_name");
    assert_eq!(bad_name["status"], "invalid", "{bad_name:#}");
    let errors = messages(&bad_name["schema_errors"]);
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with("spec.name: name: a lowercase RFC 1123 label")),
        "{errors:#?}"
    );

    for good in ["good", "bare_host"] {
        let line = step(&lines, good);
        assert_eq!(line["status"], "pass", "{good}: {line:#}");
    }

    let bad = step(&lines, "bad");
    assert_eq!(bad["status"], "invalid", "{bad:#}");
    let errors = messages(&bad["schema_errors"]);
    for want in [
        "spec.jwksUri: url must have scheme http:// or https://",
        "spec.url: url must have schema one of [http, https, file, oci]",
        "spec.memory: memory must be at most 1Gi",
    ] {
        assert!(
            errors.iter().any(|e| e.starts_with(want)),
            "{want} in {errors:#?}"
        );
    }

    // A value the library cannot read is an evaluation error: an invalid field, as the API
    // server reports it.
    let broken = step(&lines, "not_a_url");
    assert_eq!(broken["status"], "invalid", "{broken:#}");
    let errors = messages(&broken["schema_errors"]);
    for want in [
        "spec.jwksUri: Error executing function 'url'",
        "spec.memory: Error executing function 'quantity'",
    ] {
        assert!(
            errors
                .iter()
                .any(|e| e.starts_with(want) && e.contains("evaluating rule")),
            "{want} in {errors:#?}"
        );
    }
}

#[test]
fn a_rule_using_what_this_checker_lacks_is_not_checked_and_says_which_function() {
    let dir = tree(
        "cel_libraries_missing",
        &[("ports", "    ports: {http: 80}\n")],
    );
    let result = run_in(&dir, &["check", "--format", "json", "lua"]);
    let lines = json_lines(&result.stdout);
    let line = step(&lines, "ports");
    assert_eq!(line["status"], "pass", "{line:#}");
    let warnings = messages(&line["schema_warnings"]);
    assert!(
        warnings.iter().any(|w| w.starts_with("spec.ports:")
            && w.contains("not checked")
            && w.contains("`all`")
            && w.contains("two-variable")),
        "{warnings:#?}"
    );
}
