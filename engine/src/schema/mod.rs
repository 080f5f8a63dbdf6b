//! Checking a resource against its CustomResourceDefinition's structural schema, as the
//! Kubernetes API server would: load CRDs ([`SchemaSet`]), then [`validate_object`] or
//! [`validate_patched`] (or their `_as` forms, given group and kind) give [`Finding`]s (errors the API server rejects, warnings for fields it
//! would drop and rules this module does not evaluate).
//!
//! What is modelled, and from where (kubernetes/apiextensions-apiserver and kubernetes/kube-openapi):
//! * pruning of undeclared fields (`pkg/apiserver/schema/pruning/algorithm.go`, `prune`), and of
//!   nulls in non-nullable fields without a default (`schema/defaulting/prunenulls.go`), run
//!   before validation as `customresource_handler.go` (`unstructuredSchemaCoercer.apply`) does;
//! * value validation (`kube-openapi/pkg/validation/validate`: `type.go`, `validator.go`,
//!   `object_validator.go`, `slice_validator.go`), with formats as
//!   `pkg/apiserver/validation/formats.go` keeps them;
//! * list types (`schema/listtype/validation.go`) and embedded resources
//!   (`schema/objectmeta/validation.go`, `validateEmbeddedResource`);
//! * labels and annotations (apimachinery `pkg/api/validation/objectmeta.go`), in [`metadata`].
//!
//! `x-kubernetes-validations` (CEL) rules are evaluated with the `cel` crate where it can; what
//! it cannot check is a warning with rule `cel` ("not checked"); see `cel.rs`.

mod cel;
mod cel_bounds;
mod cel_cost;
mod cel_eval;
mod cel_library;
mod cel_total_cost;
mod compile;
mod defaulting;
mod formats;
mod load;
pub mod metadata;
mod ratchet;
mod re2;
mod resource;
mod structural;
mod validate;

pub use cel::{CelRule, RuleText};
pub use cel_library::KUBERNETES_VERSION as CEL_KUBERNETES_VERSION;
pub use compile::{Additional, Schema, SchemaType};
pub use load::{
    Crd, CrdVersion, LoadError, MAX_FILE_BYTES as MAX_CRD_FILE_BYTES, SchemaSet, SharedRuleEnv,
};
pub use re2::with_shared_patterns;
pub use resource::{
    DefaultedObject, OriginalResource, SchemaChoice, Validation, original_spec_annotation,
    patched_resource, patched_resource_storing, validate_object, validate_object_as,
    validate_patched, validate_patched_as, validate_update_as, validate_update_chained,
};
pub use validate::validate_value;

use crate::yaml::PathSeg;

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// The API server would accept the object, but changes it (drops a field) or this module
    /// could not check a rule.
    Warning,
    /// The API server would reject the object.
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// One problem at one place of the resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Where, from the resource's root (`spec.rules[0].weight`, see [`crate::path_text::format_path`]).
    pub path: Vec<PathSeg>,
    /// The schema keyword or check that fails: `type`, `required`, `enum`, `pattern`,
    /// `pruned`, `cel`, `label-key`, … (see README "Schema validation (engine)").
    pub rule: &'static str,
    pub severity: Severity,
    pub message: String,
    /// The CRD the finding comes from, `<file>:<line>, version <name>` (`None` for Kubernetes'
    /// own rules: labels, annotations).
    pub crd: Option<String>,
}

impl Finding {
    pub(crate) fn error(path: &[PathSeg], rule: &'static str, message: impl Into<String>) -> Self {
        Finding {
            path: path.to_vec(),
            rule,
            severity: Severity::Error,
            message: message.into(),
            crd: None,
        }
    }

    pub(crate) fn warning(
        path: &[PathSeg],
        rule: &'static str,
        message: impl Into<String>,
    ) -> Self {
        Finding {
            path: path.to_vec(),
            rule,
            severity: Severity::Warning,
            message: message.into(),
            crd: None,
        }
    }

    /// The path as authors write it.
    pub fn path_text(&self) -> String {
        crate::path_text::format_path(&self.path)
    }
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}: {} ({})",
            self.severity.as_str(),
            self.path_text(),
            self.message,
            self.rule
        )
    }
}
