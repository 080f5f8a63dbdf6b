//! `allOf`, `anyOf`, `oneOf` and `not` (kube-openapi `pkg/validation/validate`
//! `schemaPropsValidator`): value validation only (a CRD with rules in them is refused:
//! `structural.rs`).

use super::{Rules, Walker};
use crate::schema::Severity;
use crate::schema::cel::Old;
use crate::schema::compile::Schema;
use crate::value::JsonValue;

impl<'v> Walker<'_, 'v> {
    /// `allOf`, `anyOf`, `oneOf` and `not`: value validation only (no pruning below them).
    pub(super) fn check_junctors(
        &mut self,
        schema: &'v Schema,
        value: &'v JsonValue,
        old: Old<'_>,
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
        // allOf's errors are this node's, reported here and ratcheted with it (inside a branch,
        // left to the outermost branch's caller, as the walker leaves its own). The branch's
        // warnings (what it could not check) are reported as they are. Its rules do not run:
        // the API server refuses a CRD with rules there (`structural.rs`).
        let ratchets = !matches!(self.rules, Rules::Branch);
        for branch in &schema.all_of {
            let mut out = Vec::new();
            Walker {
                prefix: self.prefix,
                path: self.path.clone(),
                out: &mut out,
                cel: &mut *self.cel,
                prune: false,
                rules: Rules::Branch,
                correlation: &mut *self.correlation,
            }
            .walk(branch, value, old, None, false);
            for finding in out {
                if finding.severity == Severity::Error {
                    let finding = self.correlation.finding(
                        &finding.path,
                        finding.rule,
                        finding.message,
                        ratchets,
                    );
                    self.out.push(finding);
                } else {
                    self.out.push(finding);
                }
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
