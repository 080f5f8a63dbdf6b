//! The intent check on ingress-class cases through the real canary-annotation models (nginx,
//! Higress, MSE): cases without rules, the gateways' own conventions, and what a class cannot
//! express (issue 20).

use super::*;
use crate::runner::{RunOptions, Script};
use crate::script::ScriptKind;
use crate::testcase::parse_case;

/// A canary-annotation script: the weight, and each match's first header as
/// `canary-by-header` with `-value` (or `-pattern` for a regex), under `prefix`.
fn annotation_script(prefix: &str, weight_of: &str) -> Script {
    Script::new(format!(
        r#"
        local prefix = "{prefix}"
        local annotations = {{}}
        annotations[prefix .. "canary"] = "true"
        if obj.weight ~= "-1" then annotations[prefix .. "canary-weight"] = {weight_of} end
        if obj.matches and obj.matches[1] then
          local header = obj.matches[1].headers[1]
          annotations[prefix .. "canary-by-header"] = header.name
          if header.type == "RegularExpression" then
            annotations[prefix .. "canary-by-header-pattern"] = header.value
          else
            annotations[prefix .. "canary-by-header-value"] = header.value
          end
        end
        return annotations
        "#
    ))
}

/// A case for `class` whose `original` is the canary Ingress without rules (the library's
/// convention), with `steps` (YAML list items).
fn rule_less_case(class: &str, steps: &str) -> crate::testcase::TestCase {
    parse_case(&format!(
        r#"
rollout:
  spec:
    strategy:
      canary:
        trafficRoutings:
        - service: web
          ingress:
            classType: {class}
            name: web
        steps:
{steps}
original:
  apiVersion: networking.k8s.io/v1
  kind: Ingress
  metadata:
    name: web-canary
"#
    ))
    .unwrap()
}

fn ingress(class: &str) -> ScriptKind {
    ScriptKind::Ingress {
        class: class.into(),
    }
}

/// Each step's violations, or what it says instead of being checked.
fn outcomes(checks: &[StepCheck]) -> Vec<Result<Vec<String>, String>> {
    checks
        .iter()
        .map(|check| match &check.outcome {
            StepIntentOutcome::Checked(report) => match check.outcome.unverified() {
                Some(why) => Err(why),
                None => Ok(report
                    .violations
                    .iter()
                    .map(|v| v.message.clone())
                    .collect()),
            },
            other => Err(format!("{other:?}")),
        })
        .collect()
}

/// An `original` without rules used to leave every step "not checked"; the canary decision of
/// these classes reads only annotations, so one representative path stands for all and a
/// wrong weight is caught.
#[test]
fn a_rule_less_original_is_checked_through_a_representative_path() {
    let case = rule_less_case("nginx", "        - traffic: \"20%\"");
    let good = annotation_script("nginx.ingress.kubernetes.io/", "obj.weight");
    let checks = check_case(&ingress("nginx"), &good, &case, &RunOptions::default());
    assert_eq!(outcomes(&checks), [Ok(vec![])]);
    // Twice the weight asked.
    let bad = annotation_script(
        "nginx.ingress.kubernetes.io/",
        "tostring(tonumber(obj.weight) * 2)",
    );
    let checks = check_case(&ingress("nginx"), &bad, &case, &RunOptions::default());
    assert_eq!(
        outcomes(&checks),
        [Ok(vec![
            "GET / → web 60 %, web-canary 40 % (by any path of Ingress web and the canary Ingress web-canary's annotations), expected web 80 %, web-canary 20 %".to_owned()
        ])]
    );
}

/// Higress matches `canary-by-header-value` as the regex `always|<value>` (alibaba/higress
/// `pkg/ingress/kube/annotations/canary.go`, `ApplyByHeader`): a request whose header is
/// `always` reaching the canary is the gateway's doing, not the script's.
#[test]
fn higress_always_header_is_the_gateways_convention() {
    let steps = "        - matches:\n          - headers:\n            - name: x-canary\n              value: \"true\"";
    for (class, prefix) in [
        ("higress", "higress.io/"),
        ("mse", "mse.ingress.kubernetes.io/"),
    ] {
        let case = rule_less_case(class, steps);
        let script = annotation_script(prefix, "obj.weight");
        let checks = check_case(&ingress(class), &script, &case, &RunOptions::default());
        assert_eq!(outcomes(&checks), [Ok(vec![])], "{class}");
    }
}

/// ingress-nginx's only regex canary (`canary-by-header-pattern`) is an unanchored search
/// (balancer.lua, `ngx.re.match`): a step's regex handed to it unchanged passes, and so does
/// an anchored one.
#[test]
fn nginx_reads_a_step_regex_as_a_search_or_whole() {
    let steps = "        - matches:\n          - headers:\n            - type: RegularExpression\n              name: x-user\n              value: qa-[0-9]+";
    let case = rule_less_case("nginx", steps);
    let script = annotation_script("nginx.ingress.kubernetes.io/", "obj.weight");
    let checks = check_case(&ingress("nginx"), &script, &case, &RunOptions::default());
    assert_eq!(outcomes(&checks), [Ok(vec![])]);
}

/// ingress-nginx has no canary header control: a step's `requestHeaderModifier` cannot be
/// applied, and the step says it is only partly checked (never silence, never a false alarm).
#[test]
fn a_header_modifier_nginx_cannot_apply_is_reported_unchecked() {
    let steps = "        - matches:\n          - headers:\n            - name: x-canary\n              value: \"true\"\n          requestHeaderModifier:\n            set:\n            - name: x-release\n              value: canary";
    let case = rule_less_case("nginx", steps);
    let script = annotation_script("nginx.ingress.kubernetes.io/", "obj.weight");
    let checks = check_case(&ingress("nginx"), &script, &case, &RunOptions::default());
    let [Err(why)] = &outcomes(&checks)[..] else {
        panic!("{:?}", outcomes(&checks))
    };
    assert!(
        why.starts_with("partly checked: requestHeaderModifier is not checked: ingress-nginx"),
        "{why}"
    );
    // Higress can: there the modifier is demanded (this script does not write it).
    let case = rule_less_case("higress", steps);
    let script = annotation_script("higress.io/", "obj.weight");
    let checks = check_case(&ingress("higress"), &script, &case, &RunOptions::default());
    let [Ok(violations)] = &outcomes(&checks)[..] else {
        panic!("{:?}", outcomes(&checks))
    };
    assert!(
        violations
            .iter()
            .any(|v| v.contains("lacks the header changes x-release: canary")),
        "{violations:?}"
    );
}
