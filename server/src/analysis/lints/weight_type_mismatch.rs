//! KL004: an `obj` number compared with a string, or an `obj` string compared with a number:
//! `obj.canaryWeight == "50"` (custom) or `obj.weight == -1` (ingress, where the weight is the
//! string `"-1"`). In Lua `==` between a number and a string is always false (`~=` always true),
//! and `<`, `>`, ... raise "attempt to compare number with string".

use full_moon::ast::{BinOp, Expression, UnOp};
use full_moon::tokenizer::TokenType;

use super::{Lint, LintContext, LintDiagnostic};
use crate::analysis::obj_schema::{self, Lookup, ObjPath, ShapeKind};
use crate::analysis::parse::node_range;
use crate::analysis::semantic::Value;
use crate::analysis::severity::Severity;
use crate::analysis::walk::{Visit, walk_block};

pub struct WeightTypeMismatch;

impl Lint for WeightTypeMismatch {
    fn code(&self) -> &'static str {
        "KL004"
    }
    fn name(&self) -> &'static str {
        "weight-type-mismatch"
    }
    fn default_severity(&self) -> Severity {
        Severity::Error
    }

    fn check(&self, ctx: &LintContext) -> Vec<LintDiagnostic> {
        struct Comparisons<'a> {
            found: Vec<&'a Expression>,
        }
        impl<'a> Visit<'a> for Comparisons<'a> {
            fn expr(&mut self, expr: &'a Expression) {
                if let Expression::BinaryOperator { binop, .. } = expr
                    && comparison(binop).is_some()
                {
                    self.found.push(expr);
                }
            }
        }
        let mut comparisons = Comparisons { found: Vec::new() };
        walk_block(ctx.ast.nodes(), &mut comparisons);
        comparisons
            .found
            .into_iter()
            .filter_map(|expr| check_comparison(ctx, expr))
            .collect()
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Number,
    String,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Number => "number",
            Kind::String => "string",
        }
    }
}

/// `Some(true)` for `==`/`~=`, `Some(false)` for ordering comparisons.
fn comparison(binop: &BinOp) -> Option<bool> {
    match binop {
        BinOp::TwoEqual(_) | BinOp::TildeEqual(_) => Some(true),
        BinOp::LessThan(_)
        | BinOp::LessThanEqual(_)
        | BinOp::GreaterThan(_)
        | BinOp::GreaterThanEqual(_) => Some(false),
        _ => None,
    }
}

/// A literal's kind and its text as the other kind would be written, for the fix.
fn literal(expr: &Expression) -> Option<(Kind, Option<String>)> {
    match expr {
        Expression::Number(token) => {
            let text = token.token().to_string();
            Some((Kind::Number, Some(format!("\"{text}\""))))
        }
        Expression::String(token) => {
            let TokenType::StringLiteral { literal, .. } = token.token().token_type() else {
                return None;
            };
            let as_number = literal
                .trim()
                .parse::<f64>()
                .ok()
                .map(|_| literal.trim().to_string());
            Some((Kind::String, as_number))
        }
        Expression::UnaryOperator {
            unop: UnOp::Minus(_),
            expression,
        } => match expression.as_ref() {
            Expression::Number(token) => {
                Some((Kind::Number, Some(format!("\"-{}\"", token.token()))))
            }
            _ => None,
        },
        Expression::Parentheses { expression, .. } => literal(expression).map(|(k, _)| (k, None)),
        _ => None,
    }
}

/// The obj field an expression reads and its scalar kind.
fn obj_scalar(ctx: &LintContext, expr: &Expression) -> Option<(ObjPath, Kind)> {
    let Value::Obj(path) = ctx.model.expr_value(expr) else {
        return None;
    };
    let Lookup::Found { shape, .. } = obj_schema::lookup(ctx.flavor, &path.0) else {
        return None;
    };
    let kind = match shape.kind {
        ShapeKind::Number => Kind::Number,
        ShapeKind::String => Kind::String,
        _ => return None,
    };
    Some((path, kind))
}

fn check_comparison(ctx: &LintContext, expr: &Expression) -> Option<LintDiagnostic> {
    let Expression::BinaryOperator { lhs, binop, rhs } = expr else {
        return None;
    };
    let equality = comparison(binop)?;
    let (field, field_kind, other) = match (obj_scalar(ctx, lhs), obj_scalar(ctx, rhs)) {
        (Some((path, kind)), _) => (path, kind, rhs.as_ref()),
        (None, Some((path, kind))) => (path, kind, lhs.as_ref()),
        (None, None) => return None,
    };
    let (other_kind, replacement) = literal(other)?;
    if other_kind == field_kind {
        return None;
    }
    let op = binop.token().token().to_string();
    let what = match (field.keys().as_deref(), field_kind) {
        (Some(["weight"]), _) => {
            format!("`{field}` is a string such as \"20\" (\"-1\" without traffic)")
        }
        (_, Kind::Number) => format!("`{field}` is a number"),
        (_, Kind::String) => format!("`{field}` is a string"),
    };
    let outcome = if !equality {
        format!(
            "`{op}` raises \"attempt to compare {} with {}\"",
            field_kind.name(),
            other_kind.name()
        )
    } else if op == "==" {
        format!("comparing it with a {} is always false", other_kind.name())
    } else {
        format!("comparing it with a {} is always true", other_kind.name())
    };
    let range = node_range(expr)?;
    let diagnostic = LintDiagnostic::new(range, format!("{what}; {outcome}"));
    match (replacement, node_range(other)) {
        (Some(text), Some(other_range)) => {
            Some(diagnostic.with_fix(format!("Compare with {text}"), other_range, &text))
        }
        _ => Some(diagnostic),
    }
}
