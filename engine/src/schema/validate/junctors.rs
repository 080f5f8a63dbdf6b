//! `allOf`, `anyOf`, `oneOf` and `not` (kube-openapi `pkg/validation/validate`
//! `schemaPropsValidator`): value validation only, and the rules of `allOf` branches
//! (apiextensions `schema/cel/validation.go`).

use super::{NOT_RATCHETED, RATCHETED, Rules, Walker};
use crate::schema::cel::Old;
use crate::schema::compile::Schema;
use crate::schema::ratchet;
use crate::schema::{Finding, Severity};
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
        let unchanged = self.correlation.unchanged();
        for branch in &schema.all_of {
            let mut out = Vec::new();
            let mut rules = Vec::new();
            Walker {
                prefix: self.prefix,
                path: self.path.clone(),
                out: &mut out,
                cel: &mut rules,
                prune: false,
                rules: Rules::BranchTop(schema),
                correlation: self.correlation.above(entered),
            }
            .walk(branch, value, old, None, false);
            self.out.extend(
                out.into_iter()
                    .filter(|f| f.severity == Severity::Error || ratchet::is_ratcheted(f))
                    .map(|error| {
                        if unchanged && !NOT_RATCHETED.contains(&error.rule) {
                            Finding::warning(&error.path, error.rule, error.message + RATCHETED)
                        } else {
                            error
                        }
                    }),
            );
            self.cel.extend(rules);
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
