//! KL008: an ingress-class script whose returned annotations hold a value that is visibly not a
//! string (`annotations["x/weight"] = 20`, `return {a = {}}`). Kruise decodes the result into a
//! map of string → string and fails the run with an unmarshal error (conformance README 2.8:
//! "Non-string values or an array give `unmarshal`"). Only values whose type is certain are
//! flagged: literals, arithmetic, table constructors, tables held in locals, and `obj` fields
//! documented as numbers or tables.

use kruise_lua_engine::script::ScriptFlavor;
use std::collections::HashSet;

use full_moon::ast::{
    Expression, Field, FunctionBody, LastStmt, Prefix, Stmt, Suffix, TableConstructor, Var,
};

use super::missing_table_return::literal_kind;
use super::{Lint, LintContext, LintDiagnostic};
use crate::analysis::obj_schema::{self, Lookup, ObjPath, PathSeg, ShapeKind};
use crate::analysis::parse::{node_range, token_range};
use crate::analysis::semantic::{DeclId, Value, index_seg, string_literal};
use crate::analysis::severity::Severity;
use crate::analysis::walk::{Visit, walk_block};

pub struct IngressNonStringValue;

impl Lint for IngressNonStringValue {
    fn code(&self) -> &'static str {
        "KL008"
    }
    fn name(&self) -> &'static str {
        "ingress-non-string-value"
    }
    fn default_severity(&self) -> Severity {
        Severity::Error
    }

    fn check(&self, ctx: &LintContext) -> Vec<LintDiagnostic> {
        if ctx.flavor != ScriptFlavor::Ingress {
            return Vec::new();
        }
        let returned = returned_tables(ctx);
        let mut found = Vec::new();
        let mut flag = |ctx: &LintContext, key: Option<String>, value: &Expression| {
            if let (Some(kind), Some(range)) = (non_string_kind(ctx, value), node_range(value)) {
                let key = key.map_or_else(|| "an annotation".to_string(), |k| format!("`{k}`"));
                found.push(LintDiagnostic::new(
                    range,
                    format!(
                        "{key} gets a {kind}: Kruise decodes an ingress script's result into annotations of string → string and fails the run (unmarshal error); return strings, e.g. `tostring(...)`"
                    ),
                ));
            }
        };
        for table in &returned.constructors {
            for (key, value) in table_fields(table) {
                flag(ctx, key, value);
            }
        }
        // Writes into a returned table: `t[k] = v`, `t.k = v`, `obj.annotations[k] = v`.
        struct Writes<'a>(Vec<(&'a Prefix, Vec<&'a Suffix>, &'a Expression)>);
        impl<'a> Visit<'a> for Writes<'a> {
            fn stmt(&mut self, stmt: &'a Stmt) {
                if let Stmt::Assignment(assignment) = stmt {
                    for (var, value) in assignment
                        .variables()
                        .iter()
                        .zip(assignment.expressions().iter())
                    {
                        if let Var::Expression(var) = var {
                            self.0.push((var.prefix(), var.suffixes().collect(), value));
                        }
                    }
                }
            }
        }
        let mut writes = Writes(Vec::new());
        walk_block(ctx.ast.nodes(), &mut writes);
        for (prefix, suffixes, value) in writes.0 {
            let Some((Suffix::Index(index), table)) = suffixes.split_last() else {
                continue;
            };
            let into_result = match (prefix, table) {
                (Prefix::Name(name), []) => ctx
                    .model
                    .local_of(name)
                    .is_some_and(|decl| returned.locals.contains(&decl)),
                _ => {
                    returned.annotations
                        && ctx.model.chain_value(prefix, table.iter().copied())
                            == Value::Obj(annotations())
                }
            };
            if into_result {
                let key = match index_seg(index) {
                    PathSeg::Key(key) => Some(key),
                    _ => None,
                };
                flag(ctx, key, value);
            }
        }
        found.sort_by_key(|d| d.range.start);
        found.dedup();
        found
    }
}

fn annotations() -> ObjPath {
    ObjPath(vec![PathSeg::Key("annotations".to_string())])
}

/// What the chunk returns at its top level, as far as it can be followed.
#[derive(Default)]
struct Returned<'a> {
    /// Table constructors returned directly or held by a returned local.
    constructors: Vec<&'a TableConstructor>,
    /// Locals returned by name (`return annotations`).
    locals: HashSet<DeclId>,
    /// Whether `obj.annotations` (or an alias of it) is returned.
    annotations: bool,
}

fn returned_tables<'a>(ctx: &LintContext<'a>) -> Returned<'a> {
    struct Collect<'a, 'c> {
        ctx: &'c LintContext<'a>,
        depth: usize,
        out: Returned<'a>,
        /// Every `local x = {...}` table constructor, by declaration.
        initial: Vec<(DeclId, &'a TableConstructor)>,
    }
    impl<'a> Visit<'a> for Collect<'a, '_> {
        fn stmt(&mut self, stmt: &'a Stmt) {
            let Stmt::LocalAssignment(local) = stmt else {
                return;
            };
            for (name, expr) in local.names().iter().zip(local.expressions().iter()) {
                let start = token_range(name).start;
                let decl = self
                    .ctx
                    .model
                    .decls
                    .iter()
                    .position(|d| d.range.start == start);
                if let (Some(decl), Expression::TableConstructor(table)) = (decl, expr) {
                    self.initial.push((decl, table));
                }
            }
        }
        fn last_stmt(&mut self, stmt: &'a LastStmt) {
            let (0, LastStmt::Return(ret)) = (self.depth, stmt) else {
                return;
            };
            // Kruise takes the last returned value.
            match ret.returns().iter().last() {
                Some(Expression::TableConstructor(table)) => self.out.constructors.push(table),
                Some(Expression::Var(Var::Name(name))) => match self.ctx.model.local_of(name) {
                    Some(decl) if self.ctx.model.decls[decl].value == Value::Obj(annotations()) => {
                        self.out.annotations = true
                    }
                    Some(decl) => {
                        self.out.locals.insert(decl);
                    }
                    None => {}
                },
                Some(expr) if self.ctx.model.expr_value(expr) == Value::Obj(annotations()) => {
                    self.out.annotations = true;
                }
                _ => {}
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
    let mut collect = Collect {
        ctx,
        depth: 0,
        out: Returned::default(),
        initial: Vec::new(),
    };
    walk_block(ctx.ast.nodes(), &mut collect);
    let mut out = collect.out;
    for (decl, table) in collect.initial {
        if out.locals.contains(&decl) {
            out.constructors.push(table);
        }
    }
    out
}

/// The keyed fields of a table constructor, with their key when it is a name or a string.
fn table_fields(table: &TableConstructor) -> Vec<(Option<String>, &Expression)> {
    table
        .fields()
        .iter()
        .filter_map(|field| match field {
            Field::NameKey { key, value, .. } => {
                Some((Some(key.token().to_string()), value as &Expression))
            }
            Field::ExpressionKey { key, value, .. } => {
                let key = match &**key {
                    Expression::String(token) => string_literal(token),
                    _ => None,
                };
                Some((key, &**value))
            }
            // A positional item makes the result an array or a mixed table: its value is
            // checked too, since any non-string fails the same way.
            Field::NoKey(value) => Some((None, value as &Expression)),
            _ => None,
        })
        .collect()
}

/// The type of a value that is certainly not a string (None when it may be one).
fn non_string_kind(ctx: &LintContext, value: &Expression) -> Option<&'static str> {
    match value {
        Expression::TableConstructor(_) => return Some("table"),
        Expression::Parentheses { expression, .. } => return non_string_kind(ctx, expression),
        _ => {}
    }
    if let Some(kind) = literal_kind(ctx, value) {
        // `nil` removes the key (fine); strings are what Kruise wants.
        return (kind != "string" && kind != "nil").then_some(kind);
    }
    // `x or y` may be either side's value.
    if let Expression::BinaryOperator { .. } = value {
        return None;
    }
    // A local that is assigned again may hold anything by now.
    if let Expression::Var(Var::Name(name)) = value
        && let Some(decl) = ctx.model.local_of(name)
        && ctx.model.uses_of(decl).any(|r| r.write)
    {
        return None;
    }
    match ctx.model.expr_value(value) {
        Value::Table { .. } => Some("table"),
        Value::Function { .. } => Some("function"),
        Value::Obj(path) => match obj_schema::lookup(ctx.flavor, &path.0) {
            Lookup::Found { shape, .. } => match shape.kind {
                ShapeKind::Number => Some("number"),
                ShapeKind::Object(_) | ShapeKind::Array(_) | ShapeKind::StringMap => Some("table"),
                _ => None,
            },
            _ => None,
        },
        _ => None,
    }
}
