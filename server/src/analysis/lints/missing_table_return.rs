//! KL003: the chunk must end by returning a table. Flags a missing top-level `return`, an `if`
//! at the end whose branches do not all return, and returned values that are certainly not a
//! table (`return "ok"`, `return t, "x"`: the last value counts) or not the result Kruise wants
//! (`return obj`).

use kruise_lua_engine::script::ScriptFlavor;
use std::ops::Range;

use full_moon::ast::{
    BinOp, Block, Expression, FunctionBody, LastStmt, Prefix, Return, Stmt, Suffix, UnOp,
};
use full_moon::tokenizer::{Symbol, TokenType};

use super::{Lint, LintContext, LintDiagnostic};
use crate::analysis::obj_schema::{self, Lookup, ShapeKind};
use crate::analysis::parse::{node_range, token_range};
use crate::analysis::semantic::Value;
use crate::analysis::severity::Severity;
use crate::analysis::walk::{Visit, walk_block};

pub struct MissingTableReturn;

impl Lint for MissingTableReturn {
    fn code(&self) -> &'static str {
        "KL003"
    }
    fn name(&self) -> &'static str {
        "missing-table-return"
    }
    fn default_severity(&self) -> Severity {
        Severity::Error
    }

    fn check(&self, ctx: &LintContext) -> Vec<LintDiagnostic> {
        // On a partial AST a missing return is usually just the part that did not parse.
        if ctx.has_syntax_errors {
            return Vec::new();
        }
        let mut found = Vec::new();
        // Every `return` of the chunk itself (not of functions inside it).
        struct Returns<'a> {
            depth: usize,
            returns: Vec<&'a Return>,
        }
        impl<'a> Visit<'a> for Returns<'a> {
            fn last_stmt(&mut self, stmt: &'a LastStmt) {
                if let (0, LastStmt::Return(ret)) = (self.depth, stmt) {
                    self.returns.push(ret);
                }
            }
            fn function(&mut self, _: &'a FunctionBody, enter: bool) {
                if enter {
                    self.depth += 1;
                } else {
                    self.depth -= 1;
                }
            }
        }
        let mut returns = Returns {
            depth: 0,
            returns: Vec::new(),
        };
        walk_block(ctx.ast.nodes(), &mut returns);
        for ret in returns.returns {
            if let Some(d) = check_return(ctx, ret) {
                found.push(d);
            }
        }

        let expected = match ctx.flavor {
            ScriptFlavor::Custom => {
                "`return obj.data` or `return {spec = ..., labels = ..., annotations = ...}`"
            }
            ScriptFlavor::Ingress => "`return annotations` (a table of string → string)",
        };
        match flow(ctx, ctx.ast.nodes()) {
            Flow::Returns => {}
            Flow::FallsThrough => {
                let range = last_line_of_chunk(ctx);
                found.push(LintDiagnostic::new(
                    range,
                    format!(
                        "the script does not return a table (Kruise fails with \"expect table output from Lua script, not nil\"); end it with {expected}"
                    ),
                ));
            }
            Flow::Partial(range) => found.push(LintDiagnostic::new(
                range,
                format!(
                    "not every branch of this `if` returns, so the script can end without returning a table; add a final {expected}"
                ),
            )),
        }
        found
    }
}

enum Flow {
    Returns,
    FallsThrough,
    /// Some branches return and some fall through; the range is the `if` keyword.
    Partial(Range<usize>),
}

fn flow(ctx: &LintContext, block: &Block) -> Flow {
    if let Some(last) = block.last_stmt() {
        return match last {
            LastStmt::Return(_) => Flow::Returns,
            _ => Flow::FallsThrough,
        };
    }
    match block.stmts().last() {
        Some(Stmt::If(if_stmt)) => {
            let mut flows = vec![flow(ctx, if_stmt.block())];
            for else_if in if_stmt.else_if().into_iter().flatten() {
                flows.push(flow(ctx, else_if.block()));
            }
            flows.push(match if_stmt.else_block() {
                Some(block) => flow(ctx, block),
                None => Flow::FallsThrough,
            });
            if let Some(partial) = flows.iter().find(|f| matches!(f, Flow::Partial(_))) {
                return match partial {
                    Flow::Partial(range) => Flow::Partial(range.clone()),
                    _ => unreachable!(),
                };
            }
            let returning = flows.iter().filter(|f| matches!(f, Flow::Returns)).count();
            if returning == flows.len() {
                Flow::Returns
            } else if returning == 0 {
                Flow::FallsThrough
            } else {
                Flow::Partial(token_range(if_stmt.if_token()))
            }
        }
        Some(Stmt::Do(block)) => flow(ctx, block.block()),
        // `error(...)` at the end: the script fails on purpose, no return needed.
        Some(Stmt::FunctionCall(call))
            if calls_error(ctx, call.prefix(), call.suffixes().collect()) =>
        {
            Flow::Returns
        }
        _ => Flow::FallsThrough,
    }
}

fn calls_error(ctx: &LintContext, prefix: &Prefix, suffixes: Vec<&Suffix>) -> bool {
    matches!(
        (ctx.model.prefix_value(prefix), suffixes.as_slice()),
        (Value::LibraryFunction("", "error"), [Suffix::Call(_)])
    )
}

/// The first line of the chunk's last statement (or the first line of an empty chunk).
fn last_line_of_chunk(ctx: &LintContext) -> Range<usize> {
    let block = ctx.ast.nodes();
    let start = block
        .stmts()
        .last()
        .and_then(node_range)
        .map_or(0, |r| r.start);
    let line_end = ctx.source[start..]
        .find('\n')
        .map_or(ctx.source.len(), |i| start + i);
    start..line_end.max(start)
}

/// A finding when the returned (last) value is certainly not a usable table.
fn check_return(ctx: &LintContext, ret: &Return) -> Option<LintDiagnostic> {
    let Some(last) = ret.returns().iter().last() else {
        return Some(LintDiagnostic::new(
            token_range(ret.token()),
            "`return` with no value returns nil; Kruise expects a table (\"expect table output from Lua script, not nil\")",
        ));
    };
    let range = node_range(last).unwrap_or_else(|| token_range(ret.token()));
    let several = ret.returns().len() > 1;
    let not_table = |kind: &str| {
        let mut message = format!(
            "the script returns a {kind}, not a table (Kruise fails with \"expect table output from Lua script, not {kind}\")"
        );
        if several {
            message.push_str("; with several return values Kruise takes the last one");
        }
        Some(LintDiagnostic::new(range.clone(), message))
    };
    if let Some(kind) = literal_kind(ctx, last) {
        return not_table(kind);
    }
    if let Value::Obj(path) = ctx.model.expr_value(last) {
        if path.0.is_empty() {
            let message = match ctx.flavor {
                ScriptFlavor::Custom => {
                    "returning `obj` itself gives an empty result: Kruise keeps only the `spec`, `labels` and `annotations` keys of the returned table; return `obj.data`"
                }
                ScriptFlavor::Ingress => {
                    "returning `obj` itself fails: the result must be a table of string → string annotations; return `obj.annotations` (after editing) or a new table"
                }
            };
            return Some(LintDiagnostic::new(range, message));
        }
        if let Lookup::Found { shape, .. } = obj_schema::lookup(ctx.flavor, &path.0) {
            match shape.kind {
                ShapeKind::Number => return not_table("number"),
                ShapeKind::String => return not_table("string"),
                _ => {}
            }
        }
    }
    None
}

/// The gopher-lua type name of an expression that is certainly not a table.
pub(super) fn literal_kind(ctx: &LintContext, expr: &Expression) -> Option<&'static str> {
    match expr {
        Expression::Number(_) => Some("number"),
        Expression::String(_) => Some("string"),
        Expression::Function(_) => Some("function"),
        Expression::Symbol(token) => match token.token().token_type() {
            TokenType::Symbol {
                symbol: Symbol::Nil,
            } => Some("nil"),
            TokenType::Symbol {
                symbol: Symbol::True | Symbol::False,
            } => Some("boolean"),
            _ => None,
        },
        Expression::Parentheses { expression, .. } => literal_kind(ctx, expression),
        Expression::BinaryOperator { binop, .. } => match binop {
            BinOp::TwoDots(_) => Some("string"),
            BinOp::Plus(_)
            | BinOp::Minus(_)
            | BinOp::Star(_)
            | BinOp::Slash(_)
            | BinOp::Percent(_)
            | BinOp::Caret(_) => Some("number"),
            BinOp::TwoEqual(_)
            | BinOp::TildeEqual(_)
            | BinOp::LessThan(_)
            | BinOp::LessThanEqual(_)
            | BinOp::GreaterThan(_)
            | BinOp::GreaterThanEqual(_) => Some("boolean"),
            _ => None,
        },
        Expression::UnaryOperator { unop, .. } => match unop {
            UnOp::Not(_) => Some("boolean"),
            UnOp::Minus(_) | UnOp::Hash(_) => Some("number"),
            _ => None,
        },
        Expression::FunctionCall(call) => {
            match ctx.model.chain_value(
                call.prefix(),
                call.suffixes().take(call.suffixes().count() - 1),
            ) {
                Value::LibraryFunction("", "tostring") => Some("string"),
                Value::LibraryFunction("", "tonumber") => Some("number"),
                Value::LibraryFunction("json", "encode") => Some("string"),
                Value::LibraryFunction(
                    "string",
                    "format" | "sub" | "upper" | "lower" | "rep" | "reverse" | "char",
                ) => Some("string"),
                Value::LibraryFunction("string", "len" | "byte") => Some("number"),
                Value::LibraryFunction("table", "concat") => Some("string"),
                _ => None,
            }
        }
        _ => None,
    }
}
