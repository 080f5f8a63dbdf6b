//! The resource Kruise writes for each step of a custom-provider case: the step's output
//! patched onto the case's `original` ([`OriginalResource::patched`]). Schema validation checks
//! it and the intent check routes its probes through it, for the same steps: `check` makes it
//! once per step and hands it to both ([`super::check::check_case`]).

use std::borrow::Cow;

use kruise_lua_engine::json::decode_custom_result;
use kruise_lua_engine::luadata::Data;
use kruise_lua_engine::schema::OriginalResource;
use kruise_lua_engine::steps::StepOutcome;
use kruise_lua_engine::testcase::TestCase;
use kruise_lua_engine::value::JsonValue;
use kruise_lua_engine::yaml::YamlNode;

/// A case's `original`, and the steps' outputs patched onto it.
pub struct StepResources {
    pub original: OriginalResource,
    /// `outputs[i]`: the resource of the output of the case's step `i`, where it was asked for
    /// and the step has an output (one entry per step of the case).
    pub outputs: Vec<Option<JsonValue>>,
}

impl StepResources {
    /// The resources of the outputs of the `steps` (outcomes of `case`'s steps, any of them)
    /// that `wanted` picks, patched onto `original` (the case's `original` node).
    pub fn new(
        original: Option<&YamlNode>,
        case: &TestCase,
        steps: &[StepOutcome],
        wanted: impl Fn(&StepOutcome) -> bool,
    ) -> StepResources {
        let original = OriginalResource::new(original.map_or(JsonValue::Null, YamlNode::to_json));
        let mut outputs = vec![None; case.steps.len()];
        for step in steps.iter().filter(|step| wanted(step)) {
            if let Some(slot) = outputs.get_mut(step.index)
                && let Some(data) = output_data(case, step)
            {
                *slot = Some(original.patched(&data));
            }
        }
        StepResources { original, outputs }
    }

    /// The resource of `steps[index]`'s output, when made.
    pub fn output(&self, index: usize) -> Option<&JsonValue> {
        self.outputs.get(index).and_then(Option::as_ref)
    }
}

/// A step's output as data: the expectation's when the output equals it (already read), else
/// the output's canonical JSON decoded as Kruise decodes a result; `None` when the step has no
/// output (it errored) or it does not decode.
pub fn output_data<'a>(case: &'a TestCase, step: &StepOutcome) -> Option<Cow<'a, Data>> {
    let actual = step.actual.as_deref()?;
    match case.expected.get(step.index) {
        Some(entry) if step.actual == step.expected => Some(Cow::Borrowed(&entry.data)),
        _ => decode_custom_result(actual.as_bytes()).ok().map(Cow::Owned),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kruise_lua_engine::intent;
    use kruise_lua_engine::runner::{Mode, RunOptions, Script};
    use kruise_lua_engine::script::ScriptFlavor;
    use kruise_lua_engine::steps::{StepToRun, run_case_step};
    use kruise_lua_engine::testcase::parse_case;

    const CASE: &str = "rollout:
  apiVersion: rollouts.kruise.io/v1beta1
  kind: Rollout
  metadata: {name: web}
  spec:
    strategy:
      canary:
        trafficRoutings:
        - service: web
          customNetworkRefs:
          - {apiVersion: test.kruise-lua.dev/v1, kind: Gizmo, name: g}
        steps:
        - traffic: 20%
        - traffic: 50%
original:
  apiVersion: test.kruise-lua.dev/v1
  kind: Gizmo
  metadata: {name: g}
  spec: {weight: 0}
expected:
- apiVersion: test.kruise-lua.dev/v1
  kind: Gizmo
  spec: {weight: 20}
- apiVersion: test.kruise-lua.dev/v1
  kind: Gizmo
  spec: {weight: 50}
";

    /// A step's resource is found at its index in the case, also when it is the only outcome
    /// given.
    #[test]
    fn an_output_resource_is_kept_at_its_steps_index() {
        let case = parse_case(CASE).unwrap();
        let script = Script::new("return {spec = {weight = obj.canaryWeight}}");
        let outcome = run_case_step(StepToRun {
            script: &script,
            flavor: ScriptFlavor::Custom,
            case: &case,
            index: 1,
            mode: Mode::Harness,
            options: &RunOptions::default(),
        });
        let resources =
            StepResources::new(intent::case_original(&case), &case, &[outcome], |_| true);
        assert_eq!(resources.outputs.len(), 2);
        assert_eq!(resources.output(0), None);
        let made = resources.output(1).expect("made").to_canonical_json();
        assert!(made.contains(r#""spec":{"weight":50}"#), "{made}");
        assert!(made.contains("original-spec-configuration"), "{made}");
    }
}
