//! KL006: assigning a global that was never declared `local` (`count = 0`, `function helper()`).
//! Globals leak between helper functions and shadow nothing useful; a `local` is clearer and
//! lets the other lints follow the value.

use std::collections::HashMap;
use std::ops::Range;

use full_moon::ast::{Stmt, Var};

use super::{Lint, LintContext, LintDiagnostic};
use crate::analysis::parse::{node_range, token_range};
use crate::analysis::severity::Severity;

/// Where `local ` can be inserted with certainty for a global written at a range: the name's
/// first use anywhere is this write, and the write is a top-level statement assigning that one
/// name (`count = 0`, `function helper() ... end`). Then every later use sees the local exactly
/// as it saw the global. Anything else (a write inside a function or a branch, a use before,
/// `a, b = ...`) has no certain fix. Built once per script: asked of each write, the scans
/// were quadratic (8,667 writes on issue 22's densest script: 72 % of its analysis).
struct CertainInsertions<'a> {
    /// Each global's first use.
    first_use: HashMap<&'a str, usize>,
    /// The written name's range of each top-level statement assigning one name, and where the
    /// statement starts.
    single_writes: HashMap<(usize, usize), usize>,
}

impl<'a> CertainInsertions<'a> {
    fn new(ctx: &'a LintContext) -> CertainInsertions<'a> {
        let mut first_use: HashMap<&str, usize> = HashMap::new();
        for r in ctx.model.refs.iter().filter(|r| r.decl.is_none()) {
            let first = first_use.entry(r.name.as_str()).or_insert(r.range.start);
            *first = (*first).min(r.range.start);
        }
        let mut single_writes = HashMap::new();
        for stmt in ctx.ast.nodes().stmts() {
            let written = match stmt {
                Stmt::Assignment(a) if a.variables().len() == 1 => {
                    match a.variables().iter().next() {
                        Some(Var::Name(token)) => Some(token_range(token)),
                        _ => None,
                    }
                }
                Stmt::FunctionDeclaration(f)
                    if f.name().method_name().is_none() && f.name().names().len() == 1 =>
                {
                    f.name().names().iter().next().map(token_range)
                }
                _ => None,
            };
            if let (Some(name), Some(at)) = (written, node_range(stmt)) {
                // The first statement of a range, as a search from the top finds it.
                single_writes
                    .entry((name.start, name.end))
                    .or_insert(at.start);
            }
        }
        CertainInsertions {
            first_use,
            single_writes,
        }
    }

    fn at(&self, name: &str, written: &Range<usize>) -> Option<usize> {
        if self.first_use.get(name) != Some(&written.start) {
            return None;
        }
        self.single_writes
            .get(&(written.start, written.end))
            .copied()
    }
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
        let insertions = CertainInsertions::new(ctx);
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
                match insertions.at(&r.name, &r.range) {
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
