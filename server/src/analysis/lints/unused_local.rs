//! KL007: a local variable, local function or loop variable that is never read. Names starting
//! with `_` are exempt (`for _, v in ipairs(t)`); parameters are exempt too, since callbacks
//! often must accept arguments they ignore.

use super::{Lint, LintContext, LintDiagnostic};
use crate::analysis::semantic::DeclKind;
use crate::analysis::severity::Severity;

pub struct UnusedLocal;

impl Lint for UnusedLocal {
    fn code(&self) -> &'static str {
        "KL007"
    }
    fn name(&self) -> &'static str {
        "unused-local"
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
            .filter(|d| d.reads == 0 && !d.name.starts_with('_'))
            .filter_map(|d| {
                let message = match d.kind {
                    DeclKind::Local => format!("unused local `{}`", d.name),
                    DeclKind::LocalFunction => format!("unused local function `{}`", d.name),
                    DeclKind::ForVar => {
                        format!(
                            "unused loop variable `{}`; name it `_` if it is not needed",
                            d.name
                        )
                    }
                    DeclKind::Param | DeclKind::SelfParam => return None,
                };
                let diagnostic = LintDiagnostic::new(d.range.clone(), message);
                Some(if d.kind == DeclKind::ForVar {
                    diagnostic.with_fix("Rename to `_`", d.range.clone(), "_")
                } else {
                    diagnostic.with_fix(
                        format!("Rename to `_{}`", d.name),
                        d.range.clone(),
                        &format!("_{}", d.name),
                    )
                })
            })
            .collect()
    }
}
