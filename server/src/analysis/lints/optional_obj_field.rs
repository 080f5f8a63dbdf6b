//! KL009: indexing (or iterating, or taking `#` of) an `obj` field that Kruise leaves nil in
//! some steps, without a guard: `match.headers` of a match with only a path, the labels or
//! annotations of a resource that has none, `obj.requestHeaderModifier.set`, `obj.matches` of a
//! step without matches. The run then fails with "attempt to index a nil value" (or "bad
//! argument #1 to 'ipairs'") only for those inputs, which the test cases often miss.
//!
//! Which fields can be nil is conformance README 2.3 (custom: labels/annotations "absent if nil
//! or empty", `matches` "nil when the step had none", `requestHeaderModifier` "| nil",
//! `set`/`add`/`remove`/`path`/`headers`/`queryParams` "absent when unset or empty") and 2.8
//! (ingress: `annotations = {…} | nil`, same matches and modifier).
//!
//! A field counts as guarded, everywhere in the script, once it is tested anywhere: an operand
//! of `and`/`or`/`not`, compared with `==`/`~=`, an `if`/`while` condition, or passed to
//! `type()` (aliases such as `local rhm = obj.requestHeaderModifier` are followed). That keeps
//! false positives away from the usual idioms (`x or {}`, `if x then`) at the price of missing
//! an unguarded use elsewhere in a script that guards the field once.

use kruise_lua_engine::script::ScriptFlavor;
use std::collections::HashSet;
use std::ops::Range;

use full_moon::ast::{BinOp, Expression, Stmt, Suffix, UnOp};

use super::{Lint, LintContext, LintDiagnostic};
use crate::analysis::obj_schema::{ObjPath, PathSeg};
use crate::analysis::parse::node_range;
use crate::analysis::semantic::{Value, call_args, index_seg, iterator_call};
use crate::analysis::severity::Severity;
use crate::analysis::walk::{Visit, walk_block};

pub struct OptionalObjField;

impl Lint for OptionalObjField {
    fn code(&self) -> &'static str {
        "KL009"
    }
    fn name(&self) -> &'static str {
        "optional-obj-field"
    }
    fn default_severity(&self) -> Severity {
        Severity::Warning
    }

    fn check(&self, ctx: &LintContext) -> Vec<LintDiagnostic> {
        let guarded = guarded_paths(ctx);
        let unguarded = |value: &Value| match value {
            Value::Obj(path) if !guarded.contains(path) => nil_when(ctx.flavor, path),
            _ => None,
        };
        let mut found = Vec::new();
        // `x.y` / `x[k]` where x may be nil.
        for chain in ctx.chains() {
            let Some(prefix_range) = node_range(chain.prefix) else {
                continue;
            };
            let mut value = ctx.model.prefix_value(chain.prefix);
            let mut end = prefix_range.end;
            for suffix in &chain.suffixes {
                let Suffix::Index(index) = suffix else {
                    break;
                };
                if let Some(when) = unguarded(&value) {
                    let range = prefix_range.start..end;
                    found.push(nil_finding(ctx, range, when, "indexing it"));
                    break;
                }
                value = value.index(index_seg(index));
                end = node_range(*suffix).map_or(end, |r| r.end);
                if value == Value::Unknown {
                    break;
                }
            }
        }
        // `ipairs(x)`, `pairs(x)`, `#x` where x may be nil: only a plain name or field, so
        // `x or {}` and other expressions stay quiet.
        struct Uses<'a> {
            iterated: Vec<(&'static str, &'a Expression)>,
            measured: Vec<&'a Expression>,
            model: &'a crate::analysis::semantic::Model,
        }
        impl<'a> Visit<'a> for Uses<'a> {
            fn expr(&mut self, expr: &'a Expression) {
                if let Expression::UnaryOperator {
                    unop: UnOp::Hash(_),
                    expression,
                } = expr
                {
                    self.measured.push(expression);
                } else if let Some(call) = iterator_call(self.model, expr) {
                    self.iterated.push(call);
                }
            }
        }
        let mut uses = Uses {
            iterated: Vec::new(),
            measured: Vec::new(),
            model: ctx.model,
        };
        walk_block(ctx.ast.nodes(), &mut uses);
        let plain = |expr: &&Expression| matches!(expr, Expression::Var(_));
        let nil_at =
            |expr: &Expression| Some((unguarded(&ctx.model.expr_value(expr))?, node_range(expr)?));
        for expr in uses.measured.into_iter().filter(plain) {
            if let Some((when, range)) = nil_at(expr) {
                found.push(nil_finding(ctx, range, when, "taking its length"));
            }
        }
        for (function, expr) in uses.iterated {
            let Some((when, range)) = Some(expr).filter(plain).and_then(nil_at) else {
                continue;
            };
            let text = &ctx.source[range.clone()];
            let fixed = format!("{text} or {{}}");
            found.push(
                nil_finding(ctx, range.clone(), when, &format!("`{function}` over it")).with_fix(
                    format!("Iterate over `{fixed}`"),
                    range,
                    &fixed,
                ),
            );
        }
        found.sort_by_key(|d| (d.range.start, d.range.end));
        found.dedup_by_key(|d| d.range.clone());
        found
    }
}

fn nil_finding(ctx: &LintContext, range: Range<usize>, when: &str, what: &str) -> LintDiagnostic {
    let text = &ctx.source[range.clone()];
    LintDiagnostic::new(
        range.clone(),
        format!(
            "`{text}` is nil {when}, and {what} then fails the run; guard it (`if {text} then`) or default it (`{text} or {{}}`)"
        ),
    )
}

/// When Kruise leaves the `obj` field at `path` nil (None: it is always there, or free-form).
fn nil_when(flavor: ScriptFlavor, path: &ObjPath) -> Option<&'static str> {
    fn key(seg: &PathSeg) -> Option<&str> {
        match seg {
            PathSeg::Key(k) => Some(k.as_str()),
            _ => None,
        }
    }
    let segs: Vec<Option<&str>> = path.0.iter().map(key).collect();
    match (flavor, segs.as_slice()) {
        (ScriptFlavor::Custom, [Some("data"), Some("labels" | "annotations")]) => {
            Some("when the resource has none")
        }
        (ScriptFlavor::Ingress, [Some("annotations")]) => Some("when the Ingress has none"),
        (_, [Some("matches")]) => Some("in a step without matches"),
        (_, [Some("requestHeaderModifier")]) => Some("in a step without a requestHeaderModifier"),
        (
            _,
            [
                Some("requestHeaderModifier"),
                Some("set" | "add" | "remove"),
            ],
        ) => Some("when the step's requestHeaderModifier does not set it"),
        (
            _,
            [
                Some("matches"),
                None,
                Some("path" | "headers" | "queryParams"),
            ],
        ) => Some(
            "in a match that does not set it (a match may set only some of path, headers and queryParams)",
        ),
        _ => None,
    }
}

/// Every `obj` path the script tests for nil somewhere.
fn guarded_paths(ctx: &LintContext) -> HashSet<ObjPath> {
    struct Tests<'c, 'a> {
        ctx: &'c LintContext<'a>,
        paths: HashSet<ObjPath>,
    }
    impl Tests<'_, '_> {
        fn tested(&mut self, expr: &Expression) {
            if let Value::Obj(path) = self.ctx.model.expr_value(expr) {
                self.paths.insert(path);
            }
        }
    }
    impl<'a> Visit<'a> for Tests<'_, 'a> {
        fn stmt(&mut self, stmt: &'a Stmt) {
            match stmt {
                Stmt::If(if_stmt) => {
                    self.tested(if_stmt.condition());
                    for else_if in if_stmt.else_if().into_iter().flatten() {
                        self.tested(else_if.condition());
                    }
                }
                Stmt::While(while_loop) => self.tested(while_loop.condition()),
                Stmt::Repeat(repeat) => self.tested(repeat.until()),
                _ => {}
            }
        }
        fn expr(&mut self, expr: &'a Expression) {
            match expr {
                Expression::BinaryOperator {
                    lhs,
                    binop: BinOp::And(_) | BinOp::Or(_) | BinOp::TwoEqual(_) | BinOp::TildeEqual(_),
                    rhs,
                } => {
                    self.tested(lhs);
                    self.tested(rhs);
                }
                Expression::UnaryOperator {
                    unop: UnOp::Not(_),
                    expression,
                } => self.tested(expression),
                Expression::FunctionCall(call) => {
                    let suffixes: Vec<&Suffix> = call.suffixes().collect();
                    if let [Suffix::Call(args)] = suffixes.as_slice()
                        && self.ctx.model.prefix_value(call.prefix())
                            == Value::LibraryFunction("", "type")
                        && let [arg] = call_args(args).as_slice()
                    {
                        self.tested(arg);
                    }
                }
                _ => {}
            }
        }
    }
    let mut tests = Tests {
        ctx,
        paths: HashSet::new(),
    };
    walk_block(ctx.ast.nodes(), &mut tests);
    tests.paths
}
