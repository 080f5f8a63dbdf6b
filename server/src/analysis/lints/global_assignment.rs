//! KL006: assigning a global that was never declared `local` (`count = 0`, `function helper()`).
//! Globals leak between helper functions and shadow nothing useful; a `local` is clearer and
//! lets the other lints follow the value.

use std::ops::Range;

use full_moon::ast::{Stmt, Var};

use super::{Lint, LintContext, LintDiagnostic};
use crate::analysis::parse::{node_range, token_range};
use crate::analysis::severity::Severity;

/// Where `local ` can be inserted with certainty for the global written at `name`: the name's
/// first use anywhere is this write, and the write is a top-level statement assigning that one
/// name (`count = 0`, `function helper() ... end`). Then every later use sees the local exactly
/// as it saw the global. Anything else (a write inside a function or a branch, a use before,
/// `a, b = ...`) has no certain fix.
fn certain_local_insertion(ctx: &LintContext, name: &str, at: &Range<usize>) -> Option<usize> {
    let first = ctx
        .model
        .refs
        .iter()
        .filter(|r| r.decl.is_none() && r.name == name)
        .map(|r| r.range.start)
        .min()?;
    if first != at.start {
        return None;
    }
    ctx.ast.nodes().stmts().find_map(|stmt| match stmt {
        Stmt::Assignment(a) if a.variables().len() == 1 => match a.variables().iter().next() {
            Some(Var::Name(token)) if token_range(token) == *at => {
                node_range(stmt).map(|r| r.start)
            }
            _ => None,
        },
        Stmt::FunctionDeclaration(f)
            if f.name().method_name().is_none()
                && f.name().names().len() == 1
                && f.name().names().iter().next().map(token_range).as_ref() == Some(at) =>
        {
            node_range(stmt).map(|r| r.start)
        }
        _ => None,
    })
}

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
                let diagnostic = LintDiagnostic::new(r.range.clone(), message);
                match certain_local_insertion(ctx, &r.name, &r.range) {
                    Some(at) => diagnostic.with_fix(
                        format!("Declare `{}` with `local`", r.name),
                        at..at,
                        "local ",
                    ),
                    None => diagnostic,
                }
            })
            .collect()
    }
}
