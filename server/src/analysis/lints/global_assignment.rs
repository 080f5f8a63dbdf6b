//! KL006: assigning a global that was never declared `local` (`count = 0`, `function helper()`).
//! Globals leak between helper functions and shadow nothing useful; a `local` is clearer and
//! lets the other lints follow the value.

use super::{Lint, LintContext, LintDiagnostic};
use crate::analysis::severity::Severity;

pub struct GlobalAssignment;

impl Lint for GlobalAssignment {
    fn code(&self) -> &'static str {
        "KL006"
    }
    fn name(&self) -> &'static str {
        "global-assignment"
    }
    fn default_severity(&self) -> Severity {
        Severity::Hint
    }

    fn check(&self, ctx: &LintContext) -> Vec<LintDiagnostic> {
        ctx.model
            .refs
            .iter()
            .filter(|r| r.write && r.decl.is_none())
            // Assigning `obj` is KL010's (an error).
            .filter(|r| r.name != "obj")
            .map(|r| {
                let is_function = ctx.source[..r.range.start].trim_end().ends_with("function");
                let message = if is_function {
                    format!(
                        "`{0}` is a global function; declare it with `local function {0}`",
                        r.name
                    )
                } else {
                    format!(
                        "assignment to the undeclared global `{0}`; declare it with `local {0}`",
                        r.name
                    )
                };
                LintDiagnostic::new(r.range.clone(), message)
            })
            .collect()
    }
}
