//! `allOf`, `anyOf`, `oneOf` and `not` (kube-openapi `pkg/validation/validate`
//! `schemaPropsValidator`): value validation only, and the rules of `allOf` branches
//! (apiextensions `schema/cel/validation.go`).

use super::{Rules, Walker};
use crate::schema::Severity;
use crate::schema::cel::Old;
use crate::schema::compile::Schema;
use crate::value::JsonValue;

impl<'v> Walker<'_, 'v> {
    /// `allOf`, `anyOf`, `oneOf` and `not`: value validation only (no pruning below them).
    /// `entered`: whether this node entered [`Self::correlation`] (it has an old value).
    pub(super) fn check_junctors(
        &mut self,
        schema: &'v Schema,
        value: &'v JsonValue,
        old: Old<'_>,
        entered: bool,
    ) {
        if schema.all_of.is_empty()
            && schema.any_of.is_empty()
            && schema.one_of.is_empty()
            && schema.not.is_none()
        {
            return;
        }
        // The other junctors only ask whether a branch has errors, so those walks start from
        // no path (without copying this one) and run no rules.
        let has_errors = |branch: &'v Schema| {
            Walker::findings_of(branch, value, false)
                .iter()
                .any(|f| f.severity == Severity::Error)
        };
        // allOf's errors are this node's, reported here: its schema errors ratchet with it; its
        // rules run on this value (and its old value), their failures ratcheted by this node's
        // parent, as `validate` in apiextensions `schema/cel/validation.go` passes the allOf
        // validators `nearestParentCorrelation` alone.
        // Typed by the node's schema: this one, or, in a branch's own allOf, the node's that
        // types the branch.
        let branch_rules = match self.rules {
            Rules::All => Rules::Branch(Some(schema)),
            rules => rules,
        };
        for branch in &schema.all_of {
            let mut out = Vec::new();
            let (prefix, path) = (self.prefix, self.path.clone());
            self.correlation.above(entered, |parent| {
                Walker {
                    prefix,
                    path,
                    out: &mut out,
                    cel: &mut *self.cel,
                    prune: false,
                    rules: branch_rules,
                    correlation: parent,
                }
                .walk(branch, value, old, None, false)
            });
            for error in out.into_iter().filter(|f| f.severity == Severity::Error) {
                let finding =
                    self.correlation
                        .finding(&error.path, error.rule, error.message, true);
                self.out.push(finding);
            }
        }
        if !schema.any_of.is_empty() && schema.any_of.iter().all(&has_errors) {
            self.error(
                "anyOf",
                "must match at least one schema of anyOf".to_owned(),
            );
        }
        if !schema.one_of.is_empty() {
            let matching = schema.one_of.iter().filter(|b| !has_errors(b)).count();
            if matching != 1 {
                self.error(
                    "oneOf",
                    format!("must match exactly one schema of oneOf, matches {matching}"),
                );
            }
        }
        if let Some(not) = &schema.not
            && !has_errors(not)
        {
            self.error("not", "must not match the schema in not".to_owned());
        }
    }
}
