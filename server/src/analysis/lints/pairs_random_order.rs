//! KL005: `pairs()` over a map that came from `obj` (labels, annotations, spec maps, the ingress
//! annotations) in a loop whose result depends on the visiting order. Kruise builds those tables
//! from Go maps, so the order changes from run to run (conformance README 2.9): appending to an
//! array, building a string, or leaving the loop early makes the output random.

use std::collections::HashSet;
use std::ops::Range;

use full_moon::ast::{
    BinOp, Call, Expression, FunctionBody, GenericFor, Index, LastStmt, Prefix, Stmt, Suffix, UnOp,
    Var,
};
use full_moon::tokenizer::TokenReference;

use super::{Lint, LintContext, LintDiagnostic};
use crate::analysis::obj_schema::{self, Lookup, ObjPath};
use crate::analysis::parse::node_range;
use crate::analysis::semantic::{DeclId, Value, call_args, identifier, iterator_call};
use crate::analysis::severity::Severity;
use crate::analysis::walk::{Chain, Visit, walk_block, walk_expr};

pub struct PairsRandomOrder;

impl Lint for PairsRandomOrder {
    fn code(&self) -> &'static str {
        "KL005"
    }
    fn name(&self) -> &'static str {
        "pairs-random-order"
    }
    fn default_severity(&self) -> Severity {
        Severity::Hint
    }

    fn check(&self, ctx: &LintContext) -> Vec<LintDiagnostic> {
        struct Loops<'a>(Vec<&'a GenericFor>);
        impl<'a> Visit<'a> for Loops<'a> {
            fn stmt(&mut self, stmt: &'a Stmt) {
                if let Stmt::GenericFor(for_loop) = stmt {
                    self.0.push(for_loop);
                }
            }
        }
        let mut loops = Loops(Vec::new());
        walk_block(ctx.ast.nodes(), &mut loops);
        let mut found = Vec::new();
        let mut sorted: Option<HashSet<DeclId>> = None;
        for for_loop in loops.0 {
            let Some((path, call_range)) = random_order_source(ctx, for_loop) else {
                continue;
            };
            let sorted = sorted.get_or_insert_with(|| sorted_locals(ctx));
            let reasons = order_dependence(ctx, for_loop, sorted);
            if reasons.is_empty() {
                continue;
            }
            found.push(LintDiagnostic::new(
                call_range,
                format!(
                    "Kruise builds `{path}` from a Go map, so `pairs` visits its keys in a different order on every run, and this loop's result depends on the order ({}); collect the keys, `table.sort` them and loop over the sorted keys",
                    reasons.join(", ")
                ),
            ));
        }
        found
    }
}

/// The obj map a loop iterates with `pairs` (or `next`) when its order is random, and the range
/// of the iterator expression.
fn random_order_source(
    ctx: &LintContext,
    for_loop: &GenericFor,
) -> Option<(ObjPath, Range<usize>)> {
    let exprs: Vec<&Expression> = for_loop.expressions().iter().collect();
    let (iterated, range) = match exprs.as_slice() {
        [single] => match iterator_call(ctx.model, single) {
            Some(("pairs", arg)) => (arg, node_range(*single)?),
            _ => return None,
        },
        // `for k, v in next, t do`
        [function, table, ..]
            if ctx.model.expr_value(function) == Value::LibraryFunction("", "next") =>
        {
            (
                *table,
                node_range(*function)?.start..node_range(*table)?.end,
            )
        }
        _ => return None,
    };
    let Value::Obj(path) = ctx.model.expr_value(iterated) else {
        return None;
    };
    let random = match obj_schema::lookup(ctx.flavor, &path.0) {
        Lookup::Found { shape, .. } => shape.is_random_order_map(),
        // Inside the spec: a map unless the test cases show an array there (arrays are
        // visited in index order).
        Lookup::Free => match (path.spec_suffix(), ctx.spec_shape) {
            (Some(suffix), Some(shape)) => !shape.node(suffix).is_some_and(|n| n.is_array()),
            (Some(_), None) => true,
            (None, _) => false,
        },
        _ => false,
    };
    random.then_some((path, range))
}

/// What in the loop body makes its effect depend on the visiting order. Appending to an array
/// that is later passed to `table.sort` is the recommended fix, not a problem.
fn order_dependence(
    ctx: &LintContext,
    for_loop: &GenericFor,
    sorted: &HashSet<DeclId>,
) -> Vec<&'static str> {
    struct Body<'c, 'a> {
        ctx: &'c LintContext<'a>,
        depth: usize,
        reasons: Vec<&'static str>,
        sorted: &'c HashSet<DeclId>,
    }
    impl Body<'_, '_> {
        fn add(&mut self, reason: &'static str) {
            if self.depth == 0 && !self.reasons.contains(&reason) {
                self.reasons.push(reason);
            }
        }
        /// Whether `name` is a local that the script sorts somewhere.
        fn is_sorted(&self, name: Option<&TokenReference>) -> bool {
            name.and_then(|name| self.ctx.model.local_of(name))
                .is_some_and(|d| self.sorted.contains(&d))
        }
    }
    impl<'a> Visit<'a> for Body<'_, '_> {
        fn function(&mut self, _: &'a FunctionBody, enter: bool) {
            if enter {
                self.depth += 1;
            } else {
                self.depth -= 1;
            }
        }
        fn last_stmt(&mut self, stmt: &'a LastStmt) {
            match stmt {
                LastStmt::Return(_) => self.add("it returns from inside the loop"),
                _ => self.add("it leaves the loop early with `break`"),
            }
        }
        fn chain(&mut self, chain: &Chain<'a>) {
            let Some((Suffix::Call(call), callee)) = chain.suffixes.split_last() else {
                return;
            };
            if self
                .ctx
                .model
                .chain_value(chain.prefix, callee.iter().copied())
                == Value::LibraryFunction("table", "insert")
                && !self.is_sorted(first_arg_name(call))
            {
                self.add("it appends to an array with `table.insert`");
            }
        }
        fn stmt(&mut self, stmt: &'a Stmt) {
            let Stmt::Assignment(assignment) = stmt else {
                return;
            };
            for (var, value) in assignment
                .variables()
                .iter()
                .zip(assignment.expressions().iter())
            {
                match var {
                    Var::Name(name) if concatenates(value, &identifier(name)) => {
                        self.add("it builds a string with `..`");
                    }
                    Var::Expression(target) => {
                        let appends = target.suffixes().any(|s| {
                            matches!(s, Suffix::Index(Index::Brackets { expression, .. }) if uses_length(expression))
                        });
                        let array = match target.prefix() {
                            Prefix::Name(name) => Some(name),
                            _ => None,
                        };
                        if appends && !self.is_sorted(array) {
                            self.add("it appends to an array with `t[#t + 1]`");
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    let mut body = Body {
        ctx,
        depth: 0,
        reasons: Vec::new(),
        sorted,
    };
    walk_block(for_loop.block(), &mut body);
    body.reasons
}

/// Locals passed to `table.sort` anywhere in the chunk.
fn sorted_locals(ctx: &LintContext) -> HashSet<DeclId> {
    let mut sorted = HashSet::new();
    for chain in ctx.chains() {
        let Some((Suffix::Call(call), callee)) = chain.suffixes.split_last() else {
            continue;
        };
        if ctx.model.chain_value(chain.prefix, callee.iter().copied())
            != Value::LibraryFunction("table", "sort")
        {
            continue;
        }
        if let Some(decl) = first_arg_name(call).and_then(|name| ctx.model.local_of(name)) {
            sorted.insert(decl);
        }
    }
    sorted
}

/// The first argument of a call when it is a plain name (`t` in `table.sort(t)`).
fn first_arg_name(call: &Call) -> Option<&TokenReference> {
    match call_args(call).first() {
        Some(Expression::Var(Var::Name(name))) => Some(name),
        _ => None,
    }
}

/// Whether `expr` concatenates the variable `name` (`s = s .. k`).
fn concatenates(expr: &Expression, name: &str) -> bool {
    struct Finder<'n> {
        name: &'n str,
        found: bool,
    }
    impl<'a> Visit<'a> for Finder<'_> {
        fn expr(&mut self, expr: &'a Expression) {
            if let Expression::BinaryOperator { binop, lhs, rhs } = expr
                && matches!(binop, BinOp::TwoDots(_))
            {
                for side in [lhs, rhs] {
                    if let Expression::Var(Var::Name(token)) = side.as_ref()
                        && identifier(token) == self.name
                    {
                        self.found = true;
                    }
                }
            }
        }
    }
    let mut finder = Finder { name, found: false };
    walk_expr(expr, &mut finder);
    finder.found
}

fn uses_length(expr: &Expression) -> bool {
    struct Finder(bool);
    impl<'a> Visit<'a> for Finder {
        fn expr(&mut self, expr: &'a Expression) {
            if let Expression::UnaryOperator {
                unop: UnOp::Hash(_),
                ..
            } = expr
            {
                self.0 = true;
            }
        }
    }
    let mut finder = Finder(false);
    walk_expr(expr, &mut finder);
    finder.0
}
