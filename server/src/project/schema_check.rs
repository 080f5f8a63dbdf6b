//! `check`'s schema validation: each step's output, merged as Kruise patches it onto the
//! case's `original`, and each `expected[i]` checked against the CRD for the script's group
//! and kind ([`kruise_lua_engine::schema`]); an ingress-class script's annotations against
//! Kubernetes' annotation rules. The findings become [`SchemaFinding`]s of the case report.

use std::borrow::Cow;

use kruise_lua_engine::luadata::Data;
use kruise_lua_engine::schema::{self, Finding, SchemaSet, metadata};
use kruise_lua_engine::script::ScriptKind;
use kruise_lua_engine::steps::StepOutcome;
use kruise_lua_engine::testcase::TestCase;
use kruise_lua_engine::value::JsonValue;
use kruise_lua_engine::yaml::{YamlNode, YamlValue};

use super::step_resources::{StepResources, output_data};
use super::verdict::{SchemaFinding, SchemaTarget, case_field_location, span_line};

/// What a script's results are checked as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchemaSubject {
    /// A custom provider's resource: the CRD loaded for this group and kind (when there is
    /// one), and Kubernetes' label and annotation rules.
    Resource { group: String, kind: String },
    /// An ingress-class script's annotations (the Ingress is Kubernetes' own type, with no CRD).
    IngressAnnotations,
}

impl From<&ScriptKind> for SchemaSubject {
    fn from(kind: &ScriptKind) -> SchemaSubject {
        match kind {
            ScriptKind::Custom { group, kind } => SchemaSubject::Resource {
                group: group.clone(),
                kind: kind.clone(),
            },
            ScriptKind::Ingress { .. } => SchemaSubject::IngressAnnotations,
        }
    }
}

/// The schema findings of every step of a case (in step order, each target's in the engine's
/// order). `case_path` is the case file as reports show it.
pub fn case_findings(
    schemas: &SchemaSet,
    subject: &SchemaSubject,
    case: &TestCase,
    case_path: &str,
    steps: &[StepOutcome],
) -> Vec<SchemaFinding> {
    let resources = match subject {
        SchemaSubject::Resource { .. } => Some(StepResources::new(
            original_node(&case.root),
            case,
            steps,
            |_| true,
        )),
        SchemaSubject::IngressAnnotations => None,
    };
    case_findings_sharing(schemas, subject, case, case_path, steps, resources.as_ref())
}

/// [`case_findings`] with the steps' output resources already made (`resources`, for a
/// [`SchemaSubject::Resource`]: made from [`original_node`], for every step with an output;
/// see [`super::check::check_case`], which shares them with the intent check).
pub fn case_findings_sharing(
    schemas: &SchemaSet,
    subject: &SchemaSubject,
    case: &TestCase,
    case_path: &str,
    steps: &[StepOutcome],
    resources: Option<&StepResources>,
) -> Vec<SchemaFinding> {
    let mut validator = match (subject, resources) {
        (SchemaSubject::Resource { group, kind }, Some(resources)) => Validator::Resource {
            schemas,
            group,
            kind,
            before: Cow::Borrowed(resources.original.object()),
            resources,
        },
        (SchemaSubject::Resource { .. }, None) => {
            return case_findings(schemas, subject, case, case_path, steps);
        }
        (SchemaSubject::IngressAnnotations, _) => Validator::IngressAnnotations,
    };
    let mut found = Vec::new();
    for step in steps {
        let entry = case.expected.get(step.index);
        let mut push = |target: SchemaTarget, findings: Vec<Finding>| {
            for finding in findings {
                let line = entry.and_then(|entry| field_line(&entry.node, &finding));
                found.push(SchemaFinding {
                    step: step.index,
                    target,
                    location: case_field_location(case_path, step, line),
                    finding,
                });
            }
        };
        match entry {
            // Equal results are checked once, for both; the next step updates it.
            Some(entry) if step.actual.is_some() && step.actual == step.expected => {
                let checked = validator.validate(&entry.data, Some(step.index));
                push(SchemaTarget::Both, checked.findings);
                validator.written(checked.resource);
            }
            entry => {
                // The output as the engine compared it (its canonical JSON decodes as Kruise
                // decodes a result); a step that errored has none.
                let output = output_data(case, step)
                    .map(|output| validator.validate(&output, Some(step.index)));
                let expected = entry.map(|entry| validator.validate(&entry.data, None));
                // The next step updates what this one wrote: its output, else its
                // expectation.
                let mut written = None;
                if let Some(output) = output {
                    push(SchemaTarget::Output, output.findings);
                    written = Some(output.resource);
                }
                if let Some(expected) = expected {
                    push(SchemaTarget::Expected, expected.findings);
                    written = written.or(Some(expected.resource));
                }
                if let Some(written) = written {
                    validator.written(written);
                }
            }
        }
    }
    found
}

/// One result checked: its findings, and the resource Kruise would write (`None` for an
/// ingress-class script, whose resource the checks do not follow).
struct Checked<'a> {
    findings: Vec<Finding>,
    resource: Option<Cow<'a, JsonValue>>,
}

/// Validates a case's results in step order.
enum Validator<'a> {
    Resource {
        schemas: &'a SchemaSet,
        group: &'a str,
        kind: &'a str,
        /// The case's `original` (with Kruise's original-spec annotation of it, made once per
        /// case) and the steps' outputs patched onto it.
        resources: &'a StepResources,
        /// The object before the step: Kruise writes each step with Update
        /// (openkruise/rollouts `custom_network_provider.go`), so transition rules compare
        /// with the case's `original` for the first step and the previous step's result after
        /// it.
        before: Cow<'a, JsonValue>,
    },
    /// An ingress-class script's annotations (the Ingress is Kubernetes' own type).
    IngressAnnotations,
}

impl<'a> Validator<'a> {
    /// `data` as `expected[i]` is compared: an ingress-class script's on its annotations
    /// only. `output`: the step whose output `data` is (its resource is already made).
    fn validate(&self, data: &Data, output: Option<usize>) -> Checked<'a> {
        match self {
            Validator::Resource {
                schemas,
                group,
                kind,
                resources,
                before,
            } => {
                let resources: &'a StepResources = resources;
                let resource = match output.and_then(|index| resources.output(index)) {
                    Some(made) => Cow::Borrowed(made),
                    None => Cow::Owned(resources.original.patched(data)),
                };
                let findings =
                    schema::validate_update_as(schemas, group, kind, &resource, before).findings;
                Checked {
                    findings,
                    resource: Some(resource),
                }
            }
            Validator::IngressAnnotations => {
                let mut findings = Vec::new();
                if let Some(annotations) = &data.annotations {
                    metadata::validate_annotations(annotations, &mut findings);
                }
                Checked {
                    findings,
                    resource: None,
                }
            }
        }
    }

    /// The step wrote `resource` (as [`Self::validate`] built it).
    fn written(&mut self, resource: Option<Cow<'a, JsonValue>>) {
        if let (Validator::Resource { before, .. }, Some(resource)) = (self, resource) {
            *before = resource;
        }
    }
}

/// The case's `original` resource (Kruise's test matches the field name case-insensitively,
/// as `encoding/json` does); `null` when absent.
pub fn original_object(root: &YamlNode) -> JsonValue {
    original_node(root).map_or(JsonValue::Null, YamlNode::to_json)
}

/// The node of [`original_object`].
pub fn original_node(root: &YamlNode) -> Option<&YamlNode> {
    let YamlValue::Map(entries) = &root.value else {
        return None;
    };
    entries
        .iter()
        .rev()
        .find(|(key, _)| {
            key.key_string()
                .is_some_and(|key| key.eq_ignore_ascii_case("original"))
        })
        .map(|(_, value)| value)
}

/// `original.apiVersion` of a case: the CRD version its resource is checked (and its spec
/// completed) against.
pub fn original_api_version(case: &TestCase) -> Option<String> {
    match original_object(&case.root) {
        JsonValue::Object(fields) => match fields.get("apiVersion") {
            Some(JsonValue::String(version)) => Some(version.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// The line of the finding's field in `expected[i]`; see [`field_node`].
fn field_line(entry: &YamlNode, finding: &Finding) -> Option<u32> {
    field_node(entry, finding).and_then(|node| span_line(Some(&node.span)))
}

/// The finding's field in `expected[i]` (the resource's own layout: `spec`,
/// `metadata.labels`, …), else its nearest ancestor written there; `None` when only the
/// entry itself is. (The language server marks this node.)
pub fn field_node<'a>(entry: &'a YamlNode, finding: &Finding) -> Option<&'a YamlNode> {
    (1..=finding.path.len())
        .rev()
        .find_map(|len| entry.at_path(&finding.path[..len]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kruise_lua_engine::runner::{Mode, RunOptions, Script};
    use kruise_lua_engine::script::ScriptFlavor;
    use kruise_lua_engine::steps::{StepToRun, run_case_step};
    use kruise_lua_engine::testcase::parse_case;

    fn crd() -> String {
        crate::project::crd_sources::test_crd(
            "test.kruise-lua.dev",
            "Gizmo",
            "{weight: {type: integer, maximum: 100}}",
        )
    }

    const CASE: &str = "trafficRouting:
  apiVersion: rollouts.kruise.io/v1alpha1
  kind: TrafficRouting
  metadata: {name: t}
  spec:
    objectRef:
    - service: svc
      customNetworkRefs:
      - {apiVersion: test.kruise-lua.dev/v1, kind: Gizmo, name: g}
    strategy:
      weight: 50
original:
  apiVersion: test.kruise-lua.dev/v1
  kind: Gizmo
  metadata: {name: g}
  spec: {weight: 0}
expected:
- apiVersion: test.kruise-lua.dev/v1
  kind: Gizmo
  spec:
    weight: 150
    extra: true
";

    fn run(script: &str) -> Vec<SchemaFinding> {
        let mut schemas = SchemaSet::new();
        schemas.add_text("gizmo.yaml", &crd()).unwrap();
        let case = parse_case(CASE).unwrap();
        let script = Script::new(script.to_string());
        let steps: Vec<StepOutcome> = (0..case.steps.len())
            .map(|index| {
                run_case_step(StepToRun {
                    script: &script,
                    flavor: ScriptFlavor::Custom,
                    case: &case,
                    index,
                    mode: Mode::Harness,
                    options: &RunOptions::default(),
                })
            })
            .collect();
        let subject = SchemaSubject::Resource {
            group: "test.kruise-lua.dev".into(),
            kind: "Gizmo".into(),
        };
        case_findings(&schemas, &subject, &case, "case.yaml", &steps)
    }

    fn shown(found: &[SchemaFinding]) -> Vec<String> {
        found
            .iter()
            .map(|f| format!("{} {}", f.location, f.message()))
            .collect()
    }

    #[test]
    fn equal_output_and_expectation_are_checked_once_at_the_field() {
        let found = run("return {spec = {weight = 150, extra = true}}");
        assert_eq!(
            shown(&found),
            [
                "case.yaml:22 output and expected[0] spec.extra: the API server would drop `spec.extra`: the schema does not declare it (pruned) [CRD gizmo.yaml:1, version v1]",
                "case.yaml:21 output and expected[0] spec.weight: 150 must be less than or equal to 100 (maximum) [CRD gizmo.yaml:1, version v1]",
            ]
        );
        assert!(!found[0].is_error() && found[1].is_error());
    }

    #[test]
    fn output_and_expectation_are_checked_apart_when_they_differ() {
        let found = run("return {spec = {weight = 50.5}}");
        assert_eq!(
            shown(&found),
            [
                "case.yaml:21 output spec.weight: must be of type integer, not number 50.5 (type) [CRD gizmo.yaml:1, version v1]",
                "case.yaml:22 expected[0] spec.extra: the API server would drop `spec.extra`: the schema does not declare it (pruned) [CRD gizmo.yaml:1, version v1]",
                "case.yaml:21 expected[0] spec.weight: 150 must be less than or equal to 100 (maximum) [CRD gizmo.yaml:1, version v1]",
            ]
        );
    }
}
