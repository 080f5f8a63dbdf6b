//! KL012: a function parameter that is never read. Parameters before a used one must stay, so
//! the suggestion is to prefix the name with `_` (which also silences the lint), not to delete
//! it; KL007 leaves parameters alone for this reason.

use super::{Lint, LintContext, LintDiagnostic};
use crate::analysis::semantic::DeclKind;
use crate::analysis::severity::Severity;

pub struct UnusedParameter;

impl Lint for UnusedParameter {
    fn code(&self) -> &'static str {
        "KL012"
    }
    fn name(&self) -> &'static str {
        "unused-parameter"
    }
    fn default_severity(&self) -> Severity {
        Severity::Hint
    }

    fn check(&self, ctx: &LintContext) -> Vec<LintDiagnostic> {
        // Uses may sit in the part that did not parse.
        if ctx.has_syntax_errors {
            return Vec::new();
        }
        ctx.model
            .decls
            .iter()
            .enumerate()
            .filter(|(_, d)| d.kind == DeclKind::Param && d.reads == 0 && !d.name.starts_with('_'))
            .map(|(id, d)| {
                let diagnostic = LintDiagnostic::new(
                    d.range.clone(),
                    format!(
                        "unused parameter `{}`; prefix it with `_` if callers must still pass it",
                        d.name
                    ),
                );
                // Renaming only the declaration is safe when nothing else names it (a write
                // would otherwise go to a global).
                if ctx.model.uses_of(id).next().is_none() {
                    let renamed = format!("_{}", d.name);
                    diagnostic.with_fix(format!("Rename to `{renamed}`"), d.range.clone(), &renamed)
                } else {
                    diagnostic
                }
            })
            .collect()
    }
}
