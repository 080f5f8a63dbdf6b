//! A read-only AST walk whose callbacks get references that live as long as the AST (full_moon's
//! own `Visitor` cannot hand those out), so lints can collect nodes.

use full_moon::ast::{
    Block, Call, Expression, Field, FunctionArgs, FunctionBody, Index, LastStmt, Prefix, Stmt,
    Suffix, TableConstructor, Var,
};

/// A chain of indexing and calls: `obj.data.spec`, `table.insert(t, x)`, `s:upper()`.
#[derive(Clone)]
pub struct Chain<'a> {
    pub prefix: &'a Prefix,
    pub suffixes: Vec<&'a Suffix>,
    /// Whether the chain is an assignment target (its last index is written, not read).
    pub write: bool,
}

/// Callbacks of [`walk_block`]; every one defaults to doing nothing.
pub trait Visit<'a> {
    /// Every statement, before its children.
    fn stmt(&mut self, _stmt: &'a Stmt) {}
    /// `return` / `break`, before the returned expressions.
    fn last_stmt(&mut self, _stmt: &'a LastStmt) {}
    /// Every expression, before its children.
    fn expr(&mut self, _expr: &'a Expression) {}
    /// Every chain with at least one suffix (a call or an index), before its arguments.
    fn chain(&mut self, _chain: &Chain<'a>) {}
    /// A function body, before (`enter`) and after its block.
    fn function(&mut self, _body: &'a FunctionBody, _enter: bool) {}
}

pub fn walk_block<'a, V: Visit<'a>>(block: &'a Block, v: &mut V) {
    for stmt in block.stmts() {
        walk_stmt(stmt, v);
    }
    if let Some(last) = block.last_stmt() {
        v.last_stmt(last);
        if let LastStmt::Return(ret) = last {
            for expr in ret.returns().iter() {
                walk_expr(expr, v);
            }
        }
    }
}

pub fn walk_stmt<'a, V: Visit<'a>>(stmt: &'a Stmt, v: &mut V) {
    v.stmt(stmt);
    match stmt {
        Stmt::Assignment(assignment) => {
            for var in assignment.variables().iter() {
                if let Var::Expression(var) = var {
                    walk_chain(var.prefix(), var.suffixes().collect(), true, v);
                }
            }
            for expr in assignment.expressions().iter() {
                walk_expr(expr, v);
            }
        }
        Stmt::LocalAssignment(local) => {
            for expr in local.expressions().iter() {
                walk_expr(expr, v);
            }
        }
        Stmt::LocalFunction(function) => walk_function(function.body(), v),
        Stmt::FunctionDeclaration(declaration) => walk_function(declaration.body(), v),
        Stmt::FunctionCall(call) => walk_chain(call.prefix(), call.suffixes().collect(), false, v),
        Stmt::Do(block) => walk_block(block.block(), v),
        Stmt::While(while_loop) => {
            walk_expr(while_loop.condition(), v);
            walk_block(while_loop.block(), v);
        }
        Stmt::Repeat(repeat) => {
            walk_block(repeat.block(), v);
            walk_expr(repeat.until(), v);
        }
        Stmt::If(if_stmt) => {
            walk_expr(if_stmt.condition(), v);
            walk_block(if_stmt.block(), v);
            for else_if in if_stmt.else_if().into_iter().flatten() {
                walk_expr(else_if.condition(), v);
                walk_block(else_if.block(), v);
            }
            if let Some(block) = if_stmt.else_block() {
                walk_block(block, v);
            }
        }
        Stmt::NumericFor(for_loop) => {
            walk_expr(for_loop.start(), v);
            walk_expr(for_loop.end(), v);
            if let Some(step) = for_loop.step() {
                walk_expr(step, v);
            }
            walk_block(for_loop.block(), v);
        }
        Stmt::GenericFor(for_loop) => {
            for expr in for_loop.expressions().iter() {
                walk_expr(expr, v);
            }
            walk_block(for_loop.block(), v);
        }
        _ => {}
    }
}

pub fn walk_function<'a, V: Visit<'a>>(body: &'a FunctionBody, v: &mut V) {
    v.function(body, true);
    walk_block(body.block(), v);
    v.function(body, false);
}

pub fn walk_expr<'a, V: Visit<'a>>(expr: &'a Expression, v: &mut V) {
    v.expr(expr);
    match expr {
        Expression::BinaryOperator { lhs, rhs, .. } => {
            walk_expr(lhs, v);
            walk_expr(rhs, v);
        }
        Expression::UnaryOperator { expression, .. }
        | Expression::Parentheses { expression, .. } => walk_expr(expression, v),
        Expression::Function(function) => walk_function(function.body(), v),
        Expression::FunctionCall(call) => {
            walk_chain(call.prefix(), call.suffixes().collect(), false, v)
        }
        Expression::TableConstructor(table) => walk_table(table, v),
        Expression::Var(Var::Expression(var)) => {
            walk_chain(var.prefix(), var.suffixes().collect(), false, v)
        }
        _ => {}
    }
}

fn walk_chain<'a, V: Visit<'a>>(
    prefix: &'a Prefix,
    suffixes: Vec<&'a Suffix>,
    write: bool,
    v: &mut V,
) {
    let chain = Chain {
        prefix,
        suffixes,
        write,
    };
    v.chain(&chain);
    if let Prefix::Expression(expr) = prefix {
        walk_expr(expr, v);
    }
    for suffix in chain.suffixes {
        match suffix {
            Suffix::Index(Index::Brackets { expression, .. }) => walk_expr(expression, v),
            Suffix::Call(Call::AnonymousCall(args)) => walk_args(args, v),
            Suffix::Call(Call::MethodCall(method)) => walk_args(method.args(), v),
            _ => {}
        }
    }
}

fn walk_args<'a, V: Visit<'a>>(args: &'a FunctionArgs, v: &mut V) {
    match args {
        FunctionArgs::Parentheses { arguments, .. } => {
            for expr in arguments.iter() {
                walk_expr(expr, v);
            }
        }
        FunctionArgs::TableConstructor(table) => walk_table(table, v),
        _ => {}
    }
}

fn walk_table<'a, V: Visit<'a>>(table: &'a TableConstructor, v: &mut V) {
    for field in table.fields().iter() {
        match field {
            Field::ExpressionKey { key, value, .. } => {
                walk_expr(key, v);
                walk_expr(value, v);
            }
            Field::NameKey { value, .. } => walk_expr(value, v),
            Field::NoKey(value) => walk_expr(value, v),
            _ => {}
        }
    }
}

/// Every chain of a block, in source order.
pub fn chains(block: &Block) -> Vec<Chain<'_>> {
    struct Collect<'a>(Vec<Chain<'a>>);
    impl<'a> Visit<'a> for Collect<'a> {
        fn chain(&mut self, chain: &Chain<'a>) {
            self.0.push(chain.clone());
        }
    }
    let mut collect = Collect(Vec::new());
    walk_block(block, &mut collect);
    collect.0
}
