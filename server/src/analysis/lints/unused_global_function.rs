//! KL013: a global function (`function helper() ... end`) that the script never calls or reads.
//! Kruise only runs the chunk and reads its return value, so nothing outside can call it: it is
//! dead code.

use super::{Lint, LintContext, LintDiagnostic};
use crate::analysis::severity::Severity;

pub struct UnusedGlobalFunction;

impl Lint for UnusedGlobalFunction {
    fn code(&self) -> &'static str {
        "KL013"
    }
    fn name(&self) -> &'static str {
        "unused-global-function"
    }
    fn default_severity(&self) -> Severity {
        Severity::Hint
    }

    fn check(&self, ctx: &LintContext) -> Vec<LintDiagnostic> {
        // Uses may sit in the part that did not parse.
        if ctx.has_syntax_errors {
            return Vec::new();
        }
        let globals = || ctx.model.refs.iter().filter(|r| r.decl.is_none());
        // Read once: asked of each function, the search was quadratic in the globals.
        let read: std::collections::HashSet<&str> = globals()
            .filter(|r| !r.write)
            .map(|r| r.name.as_str())
            .collect();
        globals()
            .filter(|r| r.write && ctx.source[..r.range.start].trim_end().ends_with("function"))
            .filter(|f| !read.contains(f.name.as_str()))
            .map(|f| {
                LintDiagnostic::new(
                    f.range.clone(),
                    format!(
                        "the global function `{}` is never called; Kruise only runs the script's top level, so nothing else can call it",
                        f.name
                    ),
                )
            })
            .collect()
    }
}
