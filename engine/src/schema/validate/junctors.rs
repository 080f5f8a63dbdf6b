//! `allOf`, `anyOf`, `oneOf` and `not` (kube-openapi `pkg/validation/validate`
//! `schemaPropsValidator`): value validation only (a CRD with rules in them is refused:
//! `structural.rs`).

use super::Walker;
use super::pruned::pruned;
use crate::schema::cel::Old;
use crate::schema::compile::Schema;
use crate::schema::ratchet::Correlation;
use crate::schema::{Finding, Severity};
use crate::value::JsonValue;

impl<'v> Walker<'_, 'v> {
    /// `allOf`, `anyOf`, `oneOf` and `not`: value validation only (no pruning below them).
    pub(super) fn check_junctors(&mut self, schema: &'v Schema, value: &'v JsonValue, root: bool) {
        if schema.all_of.is_empty()
            && schema.any_of.is_empty()
            && schema.one_of.is_empty()
            && schema.not.is_none()
        {
            return;
        }
        // The branches validate the value as pruning leaves it (the API server prunes first):
        // a field the walk reports as dropped does not satisfy a branch's `required`. Inside
        // a branch the value is already pruned.
        let pruned = if self.prune {
            pruned(schema, value, root, 0)
        } else {
            None
        };
        let value = pruned.as_ref().unwrap_or(value);
        // allOf's errors are this node's, reported here and ratcheted with it: the branch walks
        // with no correlation, so its errors (and those of an allOf inside it) come back as
        // errors for the outermost node to ratchet. The branch's warnings (what it could not
        // check) are reported as they are, once per place. Its rules do not run: the API server
        // refuses a CRD with rules there (`structural.rs`).
        for branch in &schema.all_of {
            let mut out = Vec::new();
            Walker {
                prefix: self.prefix,
                path: self.path.clone(),
                out: &mut out,
                cel: None,
                prune: false,
                correlation: &mut Correlation::default(),
            }
            .walk(branch, value, Old::Unknown, None, false);
            for finding in out {
                if finding.severity == Severity::Error {
                    let finding = self.correlation.finding(
                        &finding.path,
                        finding.rule,
                        finding.message,
                        true,
                    );
                    self.out.push(finding);
                } else if !self.out.contains(&finding) {
                    self.out.push(finding);
                }
            }
        }
        // The other junctors only ask whether a branch matches, so those walks start from no
        // path (without copying this one) and run no rules. A branch that could not check
        // something, and found no error, may or may not match: the junctor then says it was
        // not checked rather than deciding.
        let judge = |branch: &'v Schema| {
            let found = Walker::findings_of(branch, value, false);
            if found.iter().any(|f| f.severity == Severity::Error) {
                Judged::Fails
            } else if let Some(unsure) = found.iter().find(|f| is_not_checked(f)) {
                Judged::Unknown(unsure.message.clone())
            } else {
                Judged::Passes
            }
        };
        if !schema.any_of.is_empty() {
            // The first branch that surely matches settles it: the rest are not walked.
            let mut unsure = None;
            let mut passes = false;
            for branch in &schema.any_of {
                match judge(branch) {
                    Judged::Passes => {
                        passes = true;
                        break;
                    }
                    Judged::Unknown(why) => {
                        unsure.get_or_insert(why);
                    }
                    Judged::Fails => {}
                }
            }
            match (passes, unsure) {
                (true, _) => {}
                (false, Some(why)) => self.warning(
                    "anyOf",
                    format!("anyOf not checked: no branch surely matches, and one may ({why})"),
                ),
                (false, None) => self.error(
                    "anyOf",
                    "must match at least one schema of anyOf".to_owned(),
                ),
            }
        }
        if !schema.one_of.is_empty() {
            let judged: Vec<Judged> = schema.one_of.iter().map(judge).collect();
            let matching = judged
                .iter()
                .filter(|j| matches!(j, Judged::Passes))
                .count();
            match judged.iter().find_map(Judged::unknown) {
                Some(why) if matching < 2 => self.warning(
                    "oneOf",
                    format!(
                        "oneOf not checked: {matching} branch(es) surely match, and one may ({why})"
                    ),
                ),
                _ if matching != 1 => self.error(
                    "oneOf",
                    format!("must match exactly one schema of oneOf, matches {matching}"),
                ),
                _ => {}
            }
        }
        if let Some(not) = &schema.not {
            match judge(not) {
                Judged::Fails => {}
                Judged::Passes => self.error("not", "must not match the schema in not".to_owned()),
                Judged::Unknown(why) => self.warning(
                    "not",
                    format!("not: not checked, the value may match the schema in not ({why})"),
                ),
            }
        }
    }
}

/// How a branch of `anyOf`, `oneOf` or `not` judges a value.
enum Judged {
    Fails,
    Passes,
    /// No error, but something it could not check (the first such warning's message).
    Unknown(String),
}

impl Judged {
    fn unknown(&self) -> Option<&str> {
        match self {
            Judged::Unknown(why) => Some(why),
            _ => None,
        }
    }
}

/// A warning that something was not checked (a `pattern` the regex crate refuses, a format
/// this module does not know, …): every such message says "not checked".
fn is_not_checked(finding: &Finding) -> bool {
    finding.severity == Severity::Warning && finding.message.contains("not checked")
}
