//! The validation entry points: a resource as Kruise patches it (a step's [`Data`] merged onto
//! the original object) checked against the CRD for its group and kind, plus Kubernetes' own
//! label and annotation rules.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use super::cel::Old;
use super::compile::Schema;
use super::load::SchemaSet;
use super::metadata::{validate_annotations, validate_labels};
use super::validate::validate_root;
use super::{Finding, Severity};
use crate::controller::ORIGINAL_SPEC_ANNOTATION;
use crate::luadata::{Data, string_map_json};
use crate::value::JsonMap;
use crate::value::JsonValue;
use crate::yaml::PathSeg;

/// Which CRD version a resource was checked against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaChoice {
    pub group: String,
    pub kind: String,
    pub version: String,
    /// Where the CRD was read from (`file:line`).
    pub source: String,
}

/// The outcome of validating one resource.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Validation {
    /// `None` when no loaded CRD has the resource's group and kind (only the label and
    /// annotation rules were checked then).
    pub schema: Option<SchemaChoice>,
    pub findings: Vec<Finding>,
}

impl Validation {
    /// Whether the API server would reject the resource.
    pub fn has_errors(&self) -> bool {
        self.findings.iter().any(|f| f.severity == Severity::Error)
    }

    pub fn errors(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
    }
}

/// A string map member of `metadata`, its non-string values reported (borrowed: a resource's
/// annotations hold Kruise's copy of its original spec, validated at every step).
fn string_map<'a>(
    metadata: Option<&'a JsonMap>,
    field: &str,
    out: &mut Vec<Finding>,
) -> BTreeMap<&'a str, &'a str> {
    let mut map = BTreeMap::new();
    let Some(JsonValue::Object(entries)) = metadata.and_then(|m| m.get(field)) else {
        return map;
    };
    for (key, value) in entries {
        match value {
            JsonValue::String(s) => {
                map.insert(key.as_str(), s.as_str());
            }
            other => {
                let path = [
                    PathSeg::Key("metadata".to_owned()),
                    PathSeg::Key(field.to_owned()),
                    PathSeg::Key(key.clone()),
                ];
                out.push(Finding::error(
                    &path,
                    "type",
                    format!("must be of type string, not {}", other.to_canonical_json()),
                ));
            }
        }
    }
    map
}

fn metadata_of(object: &JsonValue) -> Option<&JsonMap> {
    match object {
        JsonValue::Object(fields) => match fields.get("metadata") {
            Some(JsonValue::Object(meta)) => Some(meta),
            _ => None,
        },
        _ => None,
    }
}

/// The resource Kruise writes for a step: `original` (a whole object: apiVersion, kind,
/// metadata, spec) with the step's spec, labels and annotations, and the original-spec
/// annotation Kruise keeps on the object while a rollout runs (computed from `original` as
/// [`crate::controller::store_original`] does, unless `original` already has it).
pub fn patched_resource(original: &JsonValue, result: &Data) -> JsonValue {
    patched_resource_storing(original, &original_spec_annotation(original), result)
}

/// The original-spec annotation [`patched_resource`] puts on every step's resource: the one
/// `original` has, else `original`'s spec, labels and annotations as Kruise stores them. The
/// same for every step of a case, so callers that patch many steps make it once.
pub fn original_spec_annotation(original: &JsonValue) -> String {
    let original_meta = metadata_of(original);
    match original_meta
        .and_then(|m| m.get("annotations"))
        .and_then(|a| match a {
            JsonValue::Object(a) => a.get(ORIGINAL_SPEC_ANNOTATION),
            _ => None,
        }) {
        Some(JsonValue::String(text)) => text.clone(),
        _ => {
            let mut ignored = Vec::new();
            let owned = |map: BTreeMap<&str, &str>| -> BTreeMap<String, String> {
                map.into_iter()
                    .map(|(key, value)| (key.to_owned(), value.to_owned()))
                    .collect()
            };
            let mut annotations = owned(string_map(original_meta, "annotations", &mut ignored));
            annotations.remove(ORIGINAL_SPEC_ANNOTATION);
            let labels = owned(string_map(original_meta, "labels", &mut ignored));
            // `Data { spec, labels, annotations }.to_canonical_json()`, without copying the spec.
            crate::json::parts_to_canonical(original.get("spec"), Some(&labels), Some(&annotations))
        }
    }
}

/// [`patched_resource`] with its original-spec annotation given (`stored`:
/// [`original_spec_annotation`] of `original`).
pub fn patched_resource_storing(original: &JsonValue, stored: &str, result: &Data) -> JsonValue {
    // Only what the step leaves as it was is copied from `original` (its spec and metadata
    // are replaced: copying them to drop them cost more than the rest of this function). Each
    // object's members are gathered, then sorted once (inserting them one by one grew each
    // object once per member).
    let kept = |fields: Option<&JsonMap>, replaced: [&str; 2], room: usize| {
        let mut members: Vec<(String, JsonValue)> =
            Vec::with_capacity(fields.map_or(0, JsonMap::len) + room);
        members.extend(
            fields
                .into_iter()
                .flat_map(JsonMap::iter)
                .filter(|(key, _)| !replaced.contains(&key.as_str()))
                .map(|(key, value)| (key.clone(), value.clone())),
        );
        members
    };
    let mut object = kept(original.as_object(), ["spec", "metadata"], 2);
    if let Some(spec) = &result.spec {
        object.push(("spec".to_owned(), spec.clone()));
    }
    let mut metadata = kept(metadata_of(original), ["labels", "annotations"], 2);
    if let Some(labels) = result.labels.as_ref().filter(|m| !m.is_empty()) {
        metadata.push(("labels".to_owned(), string_map_json(labels)));
    }
    // The step's annotations with the original-spec one (which replaces one the step wrote).
    let annotations: JsonMap = result
        .annotations
        .iter()
        .flatten()
        .filter(|(key, _)| key.as_str() != ORIGINAL_SPEC_ANNOTATION)
        .map(|(key, value)| (key.clone(), JsonValue::String(value.clone())))
        .chain([(
            ORIGINAL_SPEC_ANNOTATION.to_owned(),
            JsonValue::String(stored.to_owned()),
        )])
        .collect();
    metadata.push(("annotations".to_owned(), JsonValue::Object(annotations)));
    object.push((
        "metadata".to_owned(),
        JsonValue::Object(metadata.into_iter().collect()),
    ));
    JsonValue::Object(object.into_iter().collect())
}

/// A case's `original` made ready to patch each step's result onto
/// ([`OriginalResource::patched`]): the object and its original-spec annotation, made once per
/// case. Schema validation and the intent check both patch every step onto it, so the caller
/// that runs both makes it (and each step's resource) once and hands it to both.
#[derive(Debug, Clone, PartialEq)]
pub struct OriginalResource {
    object: JsonValue,
    stored_spec: String,
}

impl OriginalResource {
    pub fn new(object: JsonValue) -> OriginalResource {
        OriginalResource {
            stored_spec: original_spec_annotation(&object),
            object,
        }
    }

    /// The original object.
    pub fn object(&self) -> &JsonValue {
        &self.object
    }

    /// Its [`original_spec_annotation`].
    pub fn stored_spec(&self) -> &str {
        &self.stored_spec
    }

    /// [`patched_resource`] of the original and `result`.
    pub fn patched(&self, result: &Data) -> JsonValue {
        patched_resource_storing(&self.object, &self.stored_spec, result)
    }
}

/// [`validate_object`] on [`patched_resource`]: what the API server says about a step's result.
pub fn validate_patched(set: &SchemaSet, original: &JsonValue, result: &Data) -> Validation {
    validate_object(set, &patched_resource(original, result))
}

/// [`validate_object_as`] on [`patched_resource`], for callers that know the resource's group
/// and kind from elsewhere (the script's folder, the Rollout's `customNetworkRefs`).
pub fn validate_patched_as(
    set: &SchemaSet,
    group: &str,
    kind: &str,
    original: &JsonValue,
    result: &Data,
) -> Validation {
    validate_object_as(set, group, kind, &patched_resource(original, result))
}

fn string_field<'a>(object: &'a JsonValue, name: &str) -> Option<&'a str> {
    match object {
        JsonValue::Object(fields) => match fields.get(name) {
            Some(JsonValue::String(s)) => Some(s.as_str()),
            _ => None,
        },
        _ => None,
    }
}

/// `group/version` split as Kubernetes does (`v1` alone is the core group).
fn split_api_version(api_version: &str) -> (&str, &str) {
    api_version.rsplit_once('/').unwrap_or(("", api_version))
}

/// Validates a whole object (apiVersion, kind, metadata, spec…): labels and annotations against
/// Kubernetes' rules, and the rest against the CRD for its `apiVersion`'s group and its `kind`,
/// in the version `apiVersion` names.
pub fn validate_object(set: &SchemaSet, object: &JsonValue) -> Validation {
    let (group, _) = split_api_version(string_field(object, "apiVersion").unwrap_or(""));
    let kind = string_field(object, "kind").unwrap_or("");
    validate_object_as(set, group, kind, object)
}

/// [`validate_object`] for a resource of `group` and `kind`: the version is the one the object's
/// `apiVersion` names when it is of that group, else the CRD's storage version.
pub fn validate_object_as(
    set: &SchemaSet,
    group: &str,
    kind: &str,
    object: &JsonValue,
) -> Validation {
    validate_as(set, group, kind, object, Old::Unknown, None).0
}

/// [`validate_object_as`] for an `Update` from `old` (the object before it), so transition
/// rules (`oldSelf`) are checked too; Kruise writes the gateway object with Update
/// (openkruise/rollouts `custom_network_provider.go`).
pub fn validate_update_as(
    set: &SchemaSet,
    group: &str,
    kind: &str,
    object: &JsonValue,
    old: &JsonValue,
) -> Validation {
    validate_as(set, group, kind, object, Old::Value(old), None).0
}

/// A resource defaulted against the CRD version it was validated with
/// ([`validate_update_chained`]), for the update that follows, whose old object it is: Kruise
/// writes each step as an update of the step before, so a step's resource is the new object of
/// one validation and the old one of the next, and is defaulted once for both.
#[derive(Debug, Clone)]
pub struct DefaultedObject {
    schema: Arc<Schema>,
    /// `None` when defaulting left the object as it was.
    value: Option<JsonValue>,
}

/// [`validate_update_as`] in a chain of updates: `old_defaulted` is what validating `old` gave
/// (when it was validated), taken as `old` defaulted when it was made with the same schema.
/// Returns the validation and `object` defaulted (`None` when no schema validated it), for
/// the next update of the chain.
pub fn validate_update_chained(
    set: &SchemaSet,
    group: &str,
    kind: &str,
    object: &JsonValue,
    old: &JsonValue,
    old_defaulted: Option<&DefaultedObject>,
) -> (Validation, Option<DefaultedObject>) {
    validate_as(set, group, kind, object, Old::Value(old), old_defaulted)
}

fn validate_as(
    set: &SchemaSet,
    group: &str,
    kind: &str,
    object: &JsonValue,
    old: Old<'_>,
    old_defaulted: Option<&DefaultedObject>,
) -> (Validation, Option<DefaultedObject>) {
    let mut findings = Vec::new();
    let metadata = metadata_of(object);
    validate_labels(
        &string_map(metadata, "labels", &mut findings),
        &mut findings,
    );
    validate_annotations(
        &string_map(metadata, "annotations", &mut findings),
        &mut findings,
    );
    let version = string_field(object, "apiVersion")
        .map(split_api_version)
        .filter(|(object_group, _)| *object_group == group)
        .map(|(_, version)| version);
    let Some(crd) = set.find(group, kind) else {
        return (
            Validation {
                schema: None,
                findings,
            },
            None,
        );
    };
    let chosen = match version {
        None => crd
            .storage_version()
            .ok_or_else(|| format!("the CRD for {kind}.{group} has no storage version")),
        Some(name) => crd.version(name).ok_or_else(|| {
            let known: Vec<&str> = crd.versions.iter().map(|v| v.name.as_str()).collect();
            format!(
                "the CRD for {kind}.{group} has no version {name:?} (it has {})",
                known.join(", ")
            )
        }),
    };
    let version = match chosen {
        Ok(version) => version,
        Err(message) => {
            findings.push(Finding::error(
                &[PathSeg::Key("apiVersion".to_owned())],
                "apiVersion",
                message,
            ));
            return (
                Validation {
                    schema: None,
                    findings,
                },
                None,
            );
        }
    };
    let choice = SchemaChoice {
        group: group.to_owned(),
        kind: kind.to_owned(),
        version: version.name.clone(),
        source: format!("{}:{}", crd.file, crd.line),
    };
    if !version.served {
        findings.push(Finding::error(
            &[PathSeg::Key("apiVersion".to_owned())],
            "apiVersion",
            format!("version {:?} of {kind}.{group} is not served", version.name),
        ));
    }
    let mut defaulted = None;
    match &version.schema {
        Some(schema) => {
            // Every finding of the CRD's schema names the CRD it comes from: on a version
            // mismatch with the cluster, the first thing to check.
            let first = findings.len();
            // The old object as validating it left it, when that was against this schema.
            let (old, old_is_defaulted) = match (old, old_defaulted) {
                (Old::Value(old), Some(made)) if Arc::ptr_eq(&made.schema, schema) => {
                    (Old::Value(made.value.as_ref().unwrap_or(old)), true)
                }
                (old, _) => (old, false),
            };
            let value = validate_root(schema, object, old, old_is_defaulted, &mut findings);
            defaulted = Some(DefaultedObject {
                schema: Arc::clone(schema),
                value: match value {
                    Cow::Owned(value) => Some(value),
                    Cow::Borrowed(_) => None,
                },
            });
            let refusals = version.refusals.get_or_init(|| {
                let structural = super::structural::nested_rules_refusal(schema)
                    .map(|reason| ("crd-structural", reason));
                let cost =
                    super::cel_total_cost::refusal(schema).map(|reason| ("crd-cost", reason));
                structural.into_iter().chain(cost).collect()
            });
            for (rule, reason) in refusals {
                findings.push(Finding::error(&[], rule, reason.clone()));
            }
            if findings.len() > first {
                let source = format!("{}:{}, version {}", crd.file, crd.line, version.name);
                for finding in &mut findings[first..] {
                    finding.crd = Some(source.clone());
                }
            }
        }
        None => findings.push(Finding::warning(
            &[],
            "schema",
            format!(
                "version {:?} of {kind}.{group} has no openAPIV3Schema: not validated",
                version.name
            ),
        )),
    }
    (
        Validation {
            schema: Some(choice),
            findings,
        },
        defaulted,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::parse_first_document;

    const CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gizmos.test.dev}
spec:
  group: test.dev
  names: {kind: Gizmo, plural: gizmos}
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
              mode: {type: string, default: fast}
              weight:
                type: integer
                x-kubernetes-validations:
                - {rule: self >= oldSelf, message: weight may only grow}
            x-kubernetes-validations:
            - {rule: self.mode == oldSelf.mode, message: mode is immutable}
";

    /// Each step's resource, defaulted while it is validated, is the old object of the next
    /// step as it would be if defaulted again: the findings of a chain are those of each
    /// update on its own.
    #[test]
    fn a_chain_of_updates_defaults_each_object_once_and_finds_the_same() {
        let mut set = SchemaSet::new();
        set.add_text("gizmo.yaml", CRD).unwrap();
        let object = |spec: &str| {
            parse_first_document(&format!(
                "{{apiVersion: test.dev/v1, kind: Gizmo, metadata: {{name: g}}, spec: {spec}}}"
            ))
            .unwrap()
            .unwrap()
            .to_json()
        };
        let steps = [
            object("{weight: 1}"),
            object("{weight: 2, mode: fast}"),
            object("{weight: 1}"),
            object("{weight: 3, mode: slow}"),
        ];
        let mut defaulted: Option<DefaultedObject> = None;
        let mut found = Vec::new();
        for pair in steps.windows(2) {
            let (validation, next) = validate_update_chained(
                &set,
                "test.dev",
                "Gizmo",
                &pair[1],
                &pair[0],
                defaulted.as_ref(),
            );
            let alone = validate_update_as(&set, "test.dev", "Gizmo", &pair[1], &pair[0]);
            assert_eq!(validation, alone);
            found.extend(validation.findings.into_iter().map(|f| f.message));
            defaulted = next;
            // Defaulting adds `mode` where it is missing, and copies nothing otherwise.
            let value = defaulted.as_ref().unwrap().value.as_ref();
            assert_eq!(
                value.is_some(),
                pair[1].get("spec").unwrap().get("mode").is_none()
            );
        }
        assert_eq!(found, ["weight may only grow", "mode is immutable"]);
    }
}
