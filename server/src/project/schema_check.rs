//! `check`'s schema validation: each step's output, merged as Kruise patches it onto the
//! case's `original`, and each `expected[i]` checked against the CRD for the script's group
//! and kind ([`kruise_lua_engine::schema`]); an ingress-class script's annotations against
//! Kubernetes' annotation rules. The findings become [`SchemaFinding`]s of the case report.

use std::borrow::Cow;

use kruise_lua_engine::luadata::Data;
use kruise_lua_engine::schema::{self, DefaultedObject, Finding, SchemaSet, metadata};
use kruise_lua_engine::script::ScriptKind;
use kruise_lua_engine::steps::StepOutcome;
use kruise_lua_engine::testcase::TestCase;
use kruise_lua_engine::value::JsonValue;
use kruise_lua_engine::yaml::{YamlNode, YamlValue};

use super::crd_sources::SourceProblem;
use super::step_resources::{StepResources, output_data};
use super::verdict::SchemaNotChecked;
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

impl SchemaSubject {
    /// What `case`'s results are validated as, and what its note names when no CRD is
    /// loaded: a custom provider's results are the case's `original` patched, so they are of
    /// `original`'s type (its `apiVersion` group and `kind`), which is what the API server
    /// validates an object as, and how Kruise picks the script (from a customNetworkRef), as
    /// the intent check reads it. The script's folders (`<group>/<Kind>`) decide only when
    /// `original` does not say: a script kept outside that layout (a regression fixture's
    /// `intent/istio-small-weights/`) has folders that name no kind.
    pub fn for_case(&self, case: &TestCase) -> Cow<'_, SchemaSubject> {
        let SchemaSubject::Resource { .. } = self else {
            return Cow::Borrowed(self);
        };
        match original_type(case) {
            Some((group, kind)) => {
                let resolved = SchemaSubject::Resource { group, kind };
                if resolved == *self {
                    Cow::Borrowed(self)
                } else {
                    Cow::Owned(resolved)
                }
            }
            None => Cow::Borrowed(self),
        }
    }
}

/// The group and kind of the case's `original` ([`original_node`]): `apiVersion`'s group
/// (none for a core `v1`, which no CRD serves) and `kind`; `None` when either is missing.
fn original_type(case: &TestCase) -> Option<(String, String)> {
    let original = original_node(&case.root)?;
    let string = |key: &str| match &original.get(key)?.value {
        YamlValue::String(text) if !text.is_empty() => Some(text.clone()),
        _ => None,
    };
    let api_version = original_api_version(case)?;
    let (group, _version) = api_version.split_once('/')?;
    Some((group.to_owned(), string("kind")?))
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

/// Why results of `subject` go without a CRD schema, given the CRDs loaded (`schemas`) and the
/// files that could not be (`problems`); `None` when a CRD for its group and kind is loaded.
///
/// An ingress-class script gets `None`: the canary Ingress is Kubernetes' own type (no CRD),
/// and the one thing the script changes on it, the annotations, is checked with the rules the
/// API server applies to them (key syntax, 256 KiB in all); the rest of the Ingress is copied
/// from the stable Ingress, not written by the script.
pub fn not_checked(
    subject: &SchemaSubject,
    schemas: &SchemaSet,
    problems: &[SourceProblem],
) -> Option<SchemaNotChecked> {
    let SchemaSubject::Resource { group, kind } = subject else {
        return None;
    };
    if schemas.find(group, kind).is_some() {
        return None;
    }
    const ONLY_METADATA: &str = "only labels and annotations were checked";
    let reason = if let Some(problem) = problems.iter().find(|p| p.declares(group, kind)) {
        format!("the CRD for {kind} ({group}) was not loaded ({problem}): {ONLY_METADATA}")
    } else if let Some(problem) = problems.iter().find(|p| p.may_declare(group, kind)) {
        format!(
            "no CRD for {kind} ({group}) was loaded, and a CRD source that could not be used may hold it ({problem}): {ONLY_METADATA}"
        )
    } else {
        format!(
            "no CRD for {kind} ({group}) was loaded (add it to the crds/ folder or to kruise-lua.toml crds, or pass --crd): {ONLY_METADATA}"
        )
    };
    Some(SchemaNotChecked { reason })
}

/// What schema validation says of a case: the findings of every step ([`case_findings`]) and,
/// when the script's kind has no CRD loaded, why its steps were not checked against one
/// ([`not_checked`]).
#[derive(Debug, Clone, Default)]
pub struct CaseSchema {
    pub findings: Vec<SchemaFinding>,
    pub not_checked: Option<SchemaNotChecked>,
}

/// [`case_findings`] and [`not_checked`] against the CRDs loaded (`schemas`) and the CRD
/// sources that could not be (`problems`): schema validation of a case as every front end
/// runs it, for the type the case's resource is ([`SchemaSubject::for_case`]), so the note
/// names the kind validation looked for.
pub fn case_schema(
    schemas: &SchemaSet,
    problems: &[SourceProblem],
    subject: &SchemaSubject,
    case: &TestCase,
    case_path: &str,
    steps: &[StepOutcome],
    resources: Option<&StepResources>,
) -> CaseSchema {
    let subject = subject.for_case(case);
    CaseSchema {
        findings: case_findings(schemas, &subject, case, case_path, steps, resources),
        not_checked: not_checked(&subject, schemas, problems),
    }
}

/// The schema findings of every step of a case (in step order, each target's in the engine's
/// order), validated as `subject` (already [`SchemaSubject::for_case`]: [`case_schema`]
/// resolves it). `case_path` is the case file as reports show it. `resources`: for a
/// [`SchemaSubject::Resource`], the steps' outputs patched onto [`original_node`], when the
/// caller made them already (for every step with an output; [`super::check::check_case`]
/// shares them with the intent check); `None` makes them here.
pub fn case_findings(
    schemas: &SchemaSet,
    subject: &SchemaSubject,
    case: &TestCase,
    case_path: &str,
    steps: &[StepOutcome],
    resources: Option<&StepResources>,
) -> Vec<SchemaFinding> {
    // The steps' rules match the same few regex patterns: compiled once for the case.
    schema::with_shared_patterns(|| {
        case_findings_sharing(schemas, subject, case, case_path, steps, resources)
    })
}

/// [`case_findings`] inside its memo of compiled patterns.
fn case_findings_sharing(
    schemas: &SchemaSet,
    subject: &SchemaSubject,
    case: &TestCase,
    case_path: &str,
    steps: &[StepOutcome],
    resources: Option<&StepResources>,
) -> Vec<SchemaFinding> {
    let made;
    let mut validator = match subject {
        SchemaSubject::Resource { group, kind } => {
            let resources = match resources {
                Some(resources) => resources,
                None => {
                    made = case_resources(case, steps);
                    &made
                }
            };
            Validator::Resource {
                schemas,
                group,
                kind,
                before: Cow::Borrowed(resources.original.object()),
                before_defaulted: None,
                resources,
            }
        }
        SchemaSubject::IngressAnnotations => Validator::IngressAnnotations,
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
            Some(_) if step.actual.is_some() && step.actual == step.expected => {
                if let Some(checked) = validator.validate_output(case, step) {
                    push(SchemaTarget::Both, checked.findings);
                    validator.written(checked.resource, checked.defaulted);
                }
            }
            entry => {
                let output = validator.validate_output(case, step);
                let expected = entry.map(|entry| validator.validate(&entry.data));
                // The next step updates what this one wrote: its output, else its
                // expectation.
                let mut written = None;
                if let Some(output) = output {
                    push(SchemaTarget::Output, output.findings);
                    written = Some((output.resource, output.defaulted));
                }
                if let Some(expected) = expected {
                    push(SchemaTarget::Expected, expected.findings);
                    written = written.or(Some((expected.resource, expected.defaulted)));
                }
                if let Some((resource, defaulted)) = written {
                    validator.written(resource, defaulted);
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
    /// The resource defaulted against its CRD, for the next step's validation.
    defaulted: Option<DefaultedObject>,
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
        /// `before` as its own validation defaulted it (none for the case's `original`).
        before_defaulted: Option<DefaultedObject>,
    },
    /// An ingress-class script's annotations (the Ingress is Kubernetes' own type).
    IngressAnnotations,
}

impl<'a> Validator<'a> {
    /// The output of `step` (`None` when it errored): a resource's as already made, an
    /// ingress-class script's annotations as the engine compared them (its canonical JSON
    /// decoded as Kruise decodes a result).
    fn validate_output(&self, case: &TestCase, step: &StepOutcome) -> Option<Checked<'a>> {
        match self {
            Validator::Resource { resources, .. } => {
                let resources: &'a StepResources = resources;
                let made = resources.output(step.index)?;
                Some(self.validate_resource(Cow::Borrowed(made)))
            }
            Validator::IngressAnnotations => {
                output_data(case, step).map(|output| self.validate(&output))
            }
        }
    }

    /// `data` as `expected[i]` is compared: an ingress-class script's on its annotations only.
    fn validate(&self, data: &Data) -> Checked<'a> {
        match self {
            Validator::Resource { resources, .. } => {
                self.validate_resource(Cow::Owned(resources.original.patched(data)))
            }
            Validator::IngressAnnotations => {
                let mut findings = Vec::new();
                if let Some(annotations) = &data.annotations {
                    metadata::validate_annotations(annotations, &mut findings);
                }
                Checked {
                    findings,
                    resource: None,
                    defaulted: None,
                }
            }
        }
    }

    /// `resource` checked against the CRD as an update of the object before the step.
    fn validate_resource(&self, resource: Cow<'a, JsonValue>) -> Checked<'a> {
        let Validator::Resource {
            schemas,
            group,
            kind,
            before,
            before_defaulted,
            ..
        } = self
        else {
            unreachable!("only a resource's validator makes resources");
        };
        let (validation, defaulted) = schema::validate_update_chained(
            schemas,
            group,
            kind,
            &resource,
            before,
            before_defaulted.as_ref(),
        );
        Checked {
            findings: validation.findings,
            resource: Some(resource),
            defaulted,
        }
    }

    /// The step wrote `resource` (as [`Self::validate`] built it; `defaulted` as its
    /// validation defaulted it).
    fn written(
        &mut self,
        resource: Option<Cow<'a, JsonValue>>,
        defaulted: Option<DefaultedObject>,
    ) {
        if let (
            Validator::Resource {
                before,
                before_defaulted,
                ..
            },
            Some(resource),
        ) = (self, resource)
        {
            *before = resource;
            *before_defaulted = defaulted;
        }
    }
}

/// Every step's output patched onto the case's `original` ([`original_node`]), as schema
/// validation checks them.
pub fn case_resources(case: &TestCase, steps: &[StepOutcome]) -> StepResources {
    StepResources::new(original_node(&case.root), case, steps, |_| true)
}

/// The case's `original` resource (Kruise's test matches the field name case-insensitively,
/// as `encoding/json` does).
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
    match &original_node(&case.root)?.get("apiVersion")?.value {
        YamlValue::String(version) => Some(version.clone()),
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
        case_findings(&schemas, &subject, &case, "case.yaml", &steps, None)
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

    /// A script outside the `<group>/<Kind>/` layout (a fixture folder `intent/small-weights/`)
    /// is validated as its case's `original` is typed, and a missing CRD is named by that
    /// type, not by the folders; a resource's type wins over the folders in the layout too,
    /// as the API server validates an object by its own type.
    #[test]
    fn a_case_is_validated_as_its_original_is_typed_whatever_the_folders_say() {
        let case = parse_case(CASE).unwrap();
        let folders = SchemaSubject::Resource {
            group: "intent".into(),
            kind: "small-weights".into(),
        };
        let gizmo = SchemaSubject::Resource {
            group: "test.kruise-lua.dev".into(),
            kind: "Gizmo".into(),
        };
        assert_eq!(*folders.for_case(&case), gizmo);
        let script = Script::new("return {spec = {weight = 150}}".to_string());
        let steps = vec![run_case_step(StepToRun {
            script: &script,
            flavor: ScriptFlavor::Custom,
            case: &case,
            index: 0,
            mode: Mode::Harness,
            options: &RunOptions::default(),
        })];
        let none = case_schema(
            &SchemaSet::new(),
            &[],
            &folders,
            &case,
            "case.yaml",
            &steps,
            None,
        );
        assert_eq!(
            none.not_checked.map(|note| note.message()).as_deref(),
            Some(
                "schema not checked: no CRD for Gizmo (test.kruise-lua.dev) was loaded (add it to the crds/ folder or to kruise-lua.toml crds, or pass --crd): only labels and annotations were checked"
            )
        );
        let mut schemas = SchemaSet::new();
        schemas.add_text("gizmo.yaml", &crd()).unwrap();
        let checked = case_schema(&schemas, &[], &folders, &case, "case.yaml", &steps, None);
        assert!(checked.not_checked.is_none());
        assert!(
            shown(&checked.findings)
                .iter()
                .any(|f| f.contains("spec.weight: 150 must be less than or equal to 100")),
            "{:?}",
            shown(&checked.findings)
        );
        // An `original` whose `apiVersion` names no group: the folders decide.
        let untyped = parse_case(&CASE.replace(
            "  apiVersion: test.kruise-lua.dev/v1\n  kind: Gizmo\n  metadata: {name: g}",
            "  apiVersion: v1\n  kind: Gizmo\n  metadata: {name: g}",
        ))
        .unwrap();
        assert_eq!(*folders.for_case(&untyped), folders);
        assert_eq!(
            *SchemaSubject::IngressAnnotations.for_case(&case),
            SchemaSubject::IngressAnnotations
        );
    }

    /// The one wording of "schema not checked", for a kind with no CRD, a kind whose CRD file
    /// was refused, and a kind a file that could not be read may have held; none for an
    /// ingress class (its annotations are checked) or a kind with a CRD.
    #[test]
    fn not_checked_says_why_once_for_every_front_end() {
        let route = SchemaSubject::Resource {
            group: "example.io".into(),
            kind: "Route".into(),
        };
        let problem = |kinds: Option<Vec<(String, String)>>| SourceProblem {
            file: "crds/route.yaml".into(),
            line: 12,
            message: "version v1: unknown type \"banana\"".into(),
            kinds,
        };
        let reason = |problems: &[SourceProblem]| {
            not_checked(&route, &SchemaSet::new(), problems).map(|note| note.message())
        };
        assert_eq!(
            reason(&[]).as_deref(),
            Some(
                "schema not checked: no CRD for Route (example.io) was loaded (add it to the crds/ folder or to kruise-lua.toml crds, or pass --crd): only labels and annotations were checked"
            )
        );
        let declared = problem(Some(vec![("example.io".into(), "Route".into())]));
        assert_eq!(
            reason(&[declared]).as_deref(),
            Some(
                "schema not checked: the CRD for Route (example.io) was not loaded (crds/route.yaml:12: version v1: unknown type \"banana\"): only labels and annotations were checked"
            )
        );
        let other_kind = problem(Some(vec![("example.io".into(), "Other".into())]));
        assert!(
            reason(&[other_kind])
                .unwrap()
                .contains("(add it to the crds/ folder or to kruise-lua.toml crds, or pass --crd)")
        );
        assert!(
            reason(&[problem(None)])
                .unwrap()
                .contains("a CRD source that could not be used may hold it (crds/route.yaml:12:")
        );
        assert_eq!(
            not_checked(&SchemaSubject::IngressAnnotations, &SchemaSet::new(), &[]),
            None
        );
        let mut schemas = SchemaSet::new();
        schemas
            .add_text(
                "route.yaml",
                &crate::project::crd_sources::test_crd("example.io", "Route", "{}"),
            )
            .unwrap();
        assert_eq!(not_checked(&route, &schemas, &[problem(None)]), None);
    }
}
