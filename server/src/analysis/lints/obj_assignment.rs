//! KL010: assigning to `obj` itself (`obj = {...}`). The script's input is the global `obj`;
//! replacing it silently drops what Kruise passed in (every later `obj.canaryWeight` reads the
//! new table), which is never what a traffic-routing script means. An error, not a hint: unlike
//! other globals (KL006), this one is Kruise's.

use super::{Lint, LintContext, LintDiagnostic};
use crate::analysis::severity::Severity;

pub struct ObjAssignment;

impl Lint for ObjAssignment {
    fn code(&self) -> &'static str {
        "KL010"
    }
    fn name(&self) -> &'static str {
        "obj-assignment"
    }
    fn default_severity(&self) -> Severity {
        Severity::Error
    }

    fn check(&self, ctx: &LintContext) -> Vec<LintDiagnostic> {
        ctx.model
            .refs
            .iter()
            .filter(|r| r.write && r.decl.is_none() && r.name == "obj")
            .map(|r| {
                LintDiagnostic::new(
                    r.range.clone(),
                    "assigning to `obj` replaces the input Kruise gave the script (its resource, weights and matches); build the result in a local instead, e.g. `local data = obj.data`",
                )
            })
            .collect()
    }
}
