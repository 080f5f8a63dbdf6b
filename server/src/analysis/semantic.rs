//! Name resolution for one chunk: every local declaration with the byte range where it is
//! visible, every use of a name resolved to its declaration (or to a global), and what is known
//! of a local's value (an alias into `obj`, a library table, a function).
//!
//! Lua's scoping rules are followed exactly: a `local` is visible from the end of its statement
//! (so `local x = x` reads the outer `x`), a `local function` inside its own body, for-loop
//! variables and parameters inside the body, and the locals of a `repeat` block in its `until`
//! condition.

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::sync::Arc;

use full_moon::ast::{
    Ast, BinOp, Block, Call, Expression, Field, FunctionArgs, FunctionBody, Index, LastStmt,
    Parameter, Prefix, Stmt, Suffix, Var,
};
use full_moon::tokenizer::{TokenReference, TokenType};

use super::library;
use super::obj_schema::{ObjPath, PathSeg};
use super::parse::{node_range, token_range};

pub type DeclId = usize;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeclKind {
    /// `local x = ...`
    Local,
    /// `local function f() ... end`
    LocalFunction,
    /// A function parameter.
    Param,
    /// The implicit `self` of `function t:m() ... end`.
    SelfParam,
    /// A `for` loop variable.
    ForVar,
}

/// What is known statically about a value.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Value {
    #[default]
    Unknown,
    /// A value inside `obj` (an alias such as `local spec = obj.data.spec`).
    Obj(ObjPath),
    /// A library table: `string`, `table`, `math`, `json` (also via `require("json")`).
    Library(&'static str),
    /// A library function: (`"table"`, `"insert"`); base functions have library `""`.
    LibraryFunction(&'static str, &'static str),
    /// A Lua function with these parameter names; `returns`: what its body's final
    /// `return x` gives, when known (a local table built inside, an `obj` alias).
    Function {
        params: Vec<String>,
        returns: Box<Value>,
    },
    /// A table built by a constructor: the string keys it was given there, in order, then the
    /// ones assigned later through the local that holds it (`t.name = ...`). Shared: each use of
    /// the local takes the value, and copying the keys per use was quadratic in a large table.
    Table { fields: Arc<Vec<String>> },
}

/// Segments of the deepest `obj` path the analysis follows.
pub const MAX_OBJ_PATH_DEPTH: usize = 32;

impl Value {
    /// The value of `self[seg]`: a path deeper into `obj`, or a library's member.
    pub fn index(self, seg: PathSeg) -> Value {
        match (self, seg) {
            // Deeper than any field Kruise's objects have: unknown, so that each step of a
            // chain such as `obj.a.a.a…` costs the same (every step used to hash and compare
            // the whole path so far, quadratic in the chain: 20,000 steps took 14 s).
            (Value::Obj(path), _) if path.0.len() >= MAX_OBJ_PATH_DEPTH => Value::Unknown,
            (Value::Obj(mut path), seg) => {
                path.0.push(seg);
                Value::Obj(path)
            }
            (Value::Library(lib), PathSeg::Key(member)) => library::library(lib)
                .and_then(|l| l.member(&member))
                .map_or(Value::Unknown, |m| Value::LibraryFunction(lib, m.name)),
            _ => Value::Unknown,
        }
    }
}

/// A local variable, parameter or loop variable.
#[derive(Debug, Clone)]
pub struct Decl {
    pub name: String,
    pub kind: DeclKind,
    /// The name token.
    pub range: Range<usize>,
    /// The whole declaring statement (for a parameter or loop variable: the function or loop
    /// header).
    pub stmt_range: Range<usize>,
    /// Where the name refers to this declaration.
    pub visible: Range<usize>,
    pub value: Value,
    /// Number of reads of the variable.
    pub reads: usize,
    /// Indices into [`Model::refs`] of every use (reads and writes), in the order seen.
    uses: Vec<usize>,
}

/// One use of a name (not its declaration).
#[derive(Debug, Clone)]
pub struct NameRef {
    pub name: String,
    pub range: Range<usize>,
    /// The local it refers to; None for a global.
    pub decl: Option<DeclId>,
    /// Whether the use assigns the name (`x = 1`, `function x() end`).
    pub write: bool,
}

/// A `function name(a, b) ... end` statement assigning a global.
#[derive(Debug, Clone, PartialEq)]
pub struct GlobalFunction {
    pub name: String,
    pub params: Vec<String>,
    /// The whole statement.
    pub stmt_range: Range<usize>,
}

/// The resolved names of a chunk.
#[derive(Debug, Default)]
pub struct Model {
    pub decls: Vec<Decl>,
    pub refs: Vec<NameRef>,
    /// `function name(...)` statements that assign a global (not `t.f` / `t:m`).
    pub global_functions: Vec<GlobalFunction>,
    /// What a function's final `return x` gives, by the start of its parameter list.
    function_returns: HashMap<usize, Value>,
    ref_by_start: HashMap<usize, usize>,
}

impl Model {
    /// Resolves every name of `ast`; `source_len` closes scopes whose `end` is missing.
    pub fn build(ast: &Ast, source_len: usize) -> Model {
        let mut builder = Builder {
            model: Model::default(),
            scopes: vec![Vec::new()],
            active: HashMap::new(),
            table_keys: HashMap::new(),
            source_len,
        };
        builder.block(ast.nodes(), source_len);
        builder.model
    }

    /// Parses `source` and resolves its names.
    #[cfg(test)]
    pub fn of_source(source: &str) -> Model {
        Model::build(&super::parse::parse(source).ast, source.len())
    }

    /// The name use whose token starts at `start`.
    pub fn ref_starting_at(&self, start: usize) -> Option<&NameRef> {
        self.ref_by_start.get(&start).map(|&i| &self.refs[i])
    }

    /// The local a name token (a use) refers to; None for a global.
    pub fn local_of(&self, token: &TokenReference) -> Option<DeclId> {
        self.ref_starting_at(token_range(token).start)?.decl
    }

    /// The declaration a name token (use or declaration) touching `offset` stands for, with the
    /// token's range. `offset` may be just after the name (a cursor at its end).
    pub fn symbol_at(&self, offset: usize) -> Option<(Option<DeclId>, &str, Range<usize>)> {
        let touches = |r: &Range<usize>| r.start <= offset && offset <= r.end;
        if let Some(d) = self.decls.iter().position(|d| touches(&d.range)) {
            let decl = &self.decls[d];
            return Some((Some(d), decl.name.as_str(), decl.range.clone()));
        }
        self.refs
            .iter()
            .find(|r| touches(&r.range))
            .map(|r| (r.decl, r.name.as_str(), r.range.clone()))
    }

    /// Locals visible at `offset`, innermost first, shadowed ones left out.
    pub fn visible_at(&self, offset: usize) -> Vec<DeclId> {
        let mut visible: Vec<DeclId> = (0..self.decls.len())
            .filter(|&d| {
                let r = &self.decls[d].visible;
                r.start <= offset && offset <= r.end
            })
            .collect();
        // A later-starting scope is nested in (or follows) an earlier one, so it shadows it.
        visible.sort_by_key(|&d| std::cmp::Reverse(self.decls[d].visible.start));
        let mut seen = HashSet::new();
        visible.retain(|&d| seen.insert(self.decls[d].name.as_str()));
        visible
    }

    /// Every use of declaration `decl`. Indexed per declaration: callers ask this for every
    /// declaration, which a scan of all uses made quadratic (issue 22: 10,000 locals took 16 s).
    pub fn uses_of(&self, decl: DeclId) -> impl Iterator<Item = &NameRef> {
        self.decls[decl].uses.iter().map(|&i| &self.refs[i])
    }

    /// What is known of the value of `expr` (after the model has seen the names in it).
    pub fn expr_value(&self, expr: &Expression) -> Value {
        match expr {
            Expression::Parentheses { expression, .. } => self.expr_value(expression),
            Expression::BinaryOperator {
                lhs,
                binop: BinOp::Or(_),
                rhs,
            } => match self.expr_value(lhs) {
                Value::Unknown => match self.expr_value(rhs) {
                    table @ Value::Table { .. } => table,
                    _ => Value::Unknown,
                },
                // `obj.data.labels or {}` is still the labels (or an empty table).
                known => known,
            },
            Expression::Var(Var::Name(token)) => self.name_value(token),
            Expression::Var(Var::Expression(var)) => self.chain_value(var.prefix(), var.suffixes()),
            Expression::FunctionCall(call) => self.chain_value(call.prefix(), call.suffixes()),
            Expression::Function(function) => Value::Function {
                params: param_names(function.body()),
                returns: Box::new(self.returns_of(function.body())),
            },
            Expression::TableConstructor(table) => Value::Table {
                fields: Arc::new(constructor_keys(table)),
            },
            _ => Value::Unknown,
        }
    }

    /// What calling the function with `body` gives, when known.
    fn returns_of(&self, body: &FunctionBody) -> Value {
        let key = token_range(body.parameters_parentheses().tokens().0).start;
        self.function_returns.get(&key).cloned().unwrap_or_default()
    }

    /// The value a name token stands for.
    pub fn name_value(&self, token: &TokenReference) -> Value {
        let start = token_range(token).start;
        match self.ref_starting_at(start) {
            Some(NameRef {
                decl: Some(decl), ..
            }) => self.decls[*decl].value.clone(),
            Some(r) => global_value(&r.name),
            None => Value::Unknown,
        }
    }

    /// The value of the start of a chain (`obj` in `obj.data.spec`).
    pub fn prefix_value(&self, prefix: &Prefix) -> Value {
        match prefix {
            Prefix::Name(token) => self.name_value(token),
            Prefix::Expression(expr) => self.expr_value(expr),
            _ => Value::Unknown,
        }
    }

    /// The value of `prefix` followed by `suffixes` (`obj.data.spec`, `require("json")`).
    pub fn chain_value<'s>(
        &self,
        prefix: &Prefix,
        suffixes: impl IntoIterator<Item = &'s Suffix>,
    ) -> Value {
        let mut value = self.prefix_value(prefix);
        for suffix in suffixes {
            value = match (value, suffix) {
                (value, Suffix::Index(index)) => value.index(index_seg(index)),
                (
                    Value::LibraryFunction("", "require"),
                    Suffix::Call(Call::AnonymousCall(args)),
                ) => match single_string_arg(args).as_deref() {
                    Some(name) => {
                        library::library(name).map_or(Value::Unknown, |l| Value::Library(l.name))
                    }
                    None => Value::Unknown,
                },
                (Value::Function { returns, .. }, Suffix::Call(Call::AnonymousCall(_))) => *returns,
                _ => Value::Unknown,
            };
            if value == Value::Unknown {
                break;
            }
        }
        value
    }
}

/// What a global name is in Kruise's Lua.
pub fn global_value(name: &str) -> Value {
    if name == "obj" {
        Value::Obj(ObjPath::root())
    } else if let Some(lib) = library::library(name) {
        Value::Library(lib.name)
    } else if let Some(g) = library::global(name).filter(|g| g.is_function) {
        Value::LibraryFunction("", g.name)
    } else {
        Value::Unknown
    }
}

/// The path step an index suffix stands for.
pub fn index_seg(index: &Index) -> PathSeg {
    match index {
        Index::Dot { name, .. } => PathSeg::Key(identifier(name).to_string()),
        Index::Brackets { expression, .. } => match expression.as_ref() {
            Expression::String(token) => match string_literal(token) {
                Some(s) => PathSeg::Key(s),
                None => PathSeg::Any,
            },
            Expression::Number(token) => match token.token().token_type() {
                TokenType::Number { text } => text
                    .parse::<u32>()
                    .ok()
                    .filter(|&i| i > 0)
                    .map_or(PathSeg::Any, PathSeg::Index),
                _ => PathSeg::Any,
            },
            _ => PathSeg::Any,
        },
        _ => PathSeg::Any,
    }
}

/// The text of an identifier token (without going through `Display`).
pub fn identifier(token: &TokenReference) -> std::borrow::Cow<'_, str> {
    match token.token().token_type() {
        TokenType::Identifier { identifier } => std::borrow::Cow::Borrowed(identifier.as_str()),
        _ => std::borrow::Cow::Owned(token.token().to_string()),
    }
}

/// The content of a string literal token (escapes left as written).
pub fn string_literal(token: &TokenReference) -> Option<String> {
    match token.token().token_type() {
        TokenType::StringLiteral { literal, .. } => Some(literal.to_string()),
        _ => None,
    }
}

/// The string argument of `f("x")` / `f "x"`, when that is the only argument.
pub fn single_string_arg(args: &FunctionArgs) -> Option<String> {
    match args {
        FunctionArgs::String(token) => string_literal(token),
        FunctionArgs::Parentheses { arguments, .. } if arguments.len() == 1 => {
            match arguments.iter().next()? {
                Expression::String(token) => string_literal(token),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The parameter names of a function (`...` included as written).
pub fn param_names(body: &FunctionBody) -> Vec<String> {
    body.parameters()
        .iter()
        .map(|p| match p {
            Parameter::Name(token) => token.token().to_string(),
            _ => "...".to_string(),
        })
        .collect()
}

/// The arguments of a call suffix, when it has a parenthesised list.
pub fn call_args(call: &Call) -> Vec<&Expression> {
    let args = match call {
        Call::AnonymousCall(args) => args,
        Call::MethodCall(method) => method.args(),
        _ => return Vec::new(),
    };
    match args {
        FunctionArgs::Parentheses { arguments, .. } => arguments.iter().collect(),
        _ => Vec::new(),
    }
}

struct Builder {
    model: Model,
    /// The declarations of each open scope, innermost last.
    scopes: Vec<Vec<DeclId>>,
    /// For each name, the declarations currently in scope, innermost last.
    active: HashMap<String, Vec<DeclId>>,
    /// The keys of each table local assigned a field so far, to add a key once.
    table_keys: HashMap<DeclId, HashSet<String>>,
    source_len: usize,
}

impl Builder {
    fn lookup(&self, name: &str) -> Option<DeclId> {
        self.active.get(name).and_then(|ids| ids.last()).copied()
    }

    fn open_scope(&mut self) {
        self.scopes.push(Vec::new());
    }

    fn close_scope(&mut self) {
        for id in self.scopes.pop().unwrap_or_default() {
            if let Some(ids) = self.active.get_mut(&self.model.decls[id].name) {
                ids.pop();
            }
        }
    }

    fn activate(&mut self, id: DeclId) {
        self.scopes
            .last_mut()
            .expect("a scope is always open")
            .push(id);
        self.active
            .entry(self.model.decls[id].name.clone())
            .or_default()
            .push(id);
    }

    fn use_name(&mut self, token: &TokenReference, write: bool) {
        let name = identifier(token).to_string();
        let range = token_range(token);
        let decl = self.lookup(&name);
        if let Some(d) = decl {
            if !write {
                self.model.decls[d].reads += 1;
            }
            self.model.decls[d].uses.push(self.model.refs.len());
        }
        self.model
            .ref_by_start
            .insert(range.start, self.model.refs.len());
        self.model.refs.push(NameRef {
            name,
            range,
            decl,
            write,
        });
    }

    fn declare(
        &mut self,
        token: &TokenReference,
        kind: DeclKind,
        stmt_range: Range<usize>,
        visible: Range<usize>,
        value: Value,
    ) -> DeclId {
        let range = token_range(token);
        let id = self.model.decls.len();
        self.model.decls.push(Decl {
            name: identifier(token).to_string(),
            kind,
            range,
            stmt_range,
            visible,
            value,
            reads: 0,
            uses: Vec::new(),
        });
        self.activate(id);
        id
    }

    /// The start of a closing token, or the end of the source when the parser made it up.
    fn closing(&self, token: &TokenReference, opened_at: usize) -> usize {
        let at = token_range(token).start;
        if at <= opened_at || at > self.source_len {
            self.source_len
        } else {
            at
        }
    }

    fn scoped_block(&mut self, block: &Block, end: usize) {
        self.open_scope();
        self.block(block, end);
        self.close_scope();
    }

    fn block(&mut self, block: &Block, end: usize) {
        for stmt in block.stmts() {
            self.stmt(stmt, end);
        }
        if let Some(LastStmt::Return(ret)) = block.last_stmt() {
            for expr in ret.returns().iter() {
                self.expr(expr);
            }
        }
    }

    fn stmt(&mut self, stmt: &Stmt, scope_end: usize) {
        let stmt_range = node_range(stmt).unwrap_or(0..0);
        match stmt {
            Stmt::Assignment(assignment) => {
                for expr in assignment.expressions().iter() {
                    self.expr(expr);
                }
                for var in assignment.variables().iter() {
                    match var {
                        Var::Name(token) => self.use_name(token, true),
                        Var::Expression(var) => {
                            self.chain(var.prefix(), var.suffixes());
                            self.record_table_field(var);
                        }
                        _ => {}
                    }
                }
            }
            Stmt::LocalAssignment(local) => {
                let exprs: Vec<&Expression> = local.expressions().iter().collect();
                for expr in &exprs {
                    self.expr(expr);
                }
                let values: Vec<Value> = (0..local.names().len())
                    .map(|i| {
                        exprs
                            .get(i)
                            .map_or(Value::Unknown, |e| self.model.expr_value(e))
                    })
                    .collect();
                let visible = stmt_range.end..scope_end;
                for (name, value) in local.names().iter().zip(values) {
                    self.declare(
                        name,
                        DeclKind::Local,
                        stmt_range.clone(),
                        visible.clone(),
                        value,
                    );
                }
            }
            Stmt::LocalFunction(function) => {
                let value = Value::Function {
                    params: param_names(function.body()),
                    returns: Box::new(Value::Unknown),
                };
                // Visible in its own body, so it can recurse.
                let visible = token_range(function.name()).start..scope_end;
                let id = self.declare(
                    function.name(),
                    DeclKind::LocalFunction,
                    stmt_range.clone(),
                    visible,
                    value,
                );
                self.function_body(function.body(), false, stmt_range);
                // Known only once the body is resolved.
                let returns = self.model.returns_of(function.body());
                if let Value::Function { returns: slot, .. } = &mut self.model.decls[id].value {
                    **slot = returns;
                }
            }
            Stmt::FunctionDeclaration(declaration) => {
                let name = declaration.name();
                let mut names = name.names().iter();
                if let Some(first) = names.next() {
                    // `function f()` assigns f; `function t.f()` / `t:f()` reads t.
                    let plain = name.names().len() == 1 && name.method_name().is_none();
                    self.use_name(first, plain);
                    if plain && self.lookup(&identifier(first)).is_none() {
                        self.model.global_functions.push(GlobalFunction {
                            name: identifier(first).to_string(),
                            params: param_names(declaration.body()),
                            stmt_range: stmt_range.clone(),
                        });
                    }
                }
                self.function_body(declaration.body(), name.method_name().is_some(), stmt_range);
            }
            Stmt::FunctionCall(call) => self.chain(call.prefix(), call.suffixes()),
            Stmt::Do(block) => {
                let end = self.closing(block.end_token(), stmt_range.start);
                self.scoped_block(block.block(), end);
            }
            Stmt::While(while_loop) => {
                self.expr(while_loop.condition());
                let end = self.closing(while_loop.end_token(), stmt_range.start);
                self.scoped_block(while_loop.block(), end);
            }
            Stmt::Repeat(repeat) => {
                // The `until` condition sees the block's locals.
                let end = node_range(repeat.until()).map_or(self.source_len, |r| r.end);
                self.open_scope();
                self.block(repeat.block(), end);
                self.expr(repeat.until());
                self.close_scope();
            }
            Stmt::If(if_stmt) => {
                self.expr(if_stmt.condition());
                let end_if = self.closing(if_stmt.end_token(), stmt_range.start);
                // A block's locals end where the next branch starts.
                let mut branch_ends: Vec<usize> = Vec::new();
                for else_if in if_stmt.else_if().into_iter().flatten() {
                    branch_ends.push(token_range(else_if.else_if_token()).start);
                }
                if let Some(token) = if_stmt.else_token() {
                    branch_ends.push(token_range(token).start);
                }
                branch_ends.push(end_if);
                let mut ends = branch_ends.into_iter();
                let first_end = ends.next().unwrap_or(end_if);
                self.scoped_block(if_stmt.block(), first_end);
                for else_if in if_stmt.else_if().into_iter().flatten() {
                    self.expr(else_if.condition());
                    let end = ends.next().unwrap_or(end_if);
                    self.scoped_block(else_if.block(), end);
                }
                if let Some(block) = if_stmt.else_block() {
                    self.scoped_block(block, end_if);
                }
            }
            Stmt::NumericFor(for_loop) => {
                self.expr(for_loop.start());
                self.expr(for_loop.end());
                if let Some(step) = for_loop.step() {
                    self.expr(step);
                }
                let body_start = token_range(for_loop.do_token()).end;
                let end = self.closing(for_loop.end_token(), stmt_range.start);
                self.open_scope();
                let header = stmt_range.start..body_start;
                self.declare(
                    for_loop.index_variable(),
                    DeclKind::ForVar,
                    header,
                    body_start..end,
                    Value::Unknown,
                );
                self.block(for_loop.block(), end);
                self.close_scope();
            }
            Stmt::GenericFor(for_loop) => {
                let exprs: Vec<&Expression> = for_loop.expressions().iter().collect();
                for expr in &exprs {
                    self.expr(expr);
                }
                let element = match exprs.as_slice() {
                    [single] => iterated_value(&self.model, single),
                    _ => Value::Unknown,
                };
                let body_start = token_range(for_loop.do_token()).end;
                let end = self.closing(for_loop.end_token(), stmt_range.start);
                self.open_scope();
                let header = stmt_range.start..body_start;
                for (i, name) in for_loop.names().iter().enumerate() {
                    let value = if i == 1 {
                        element.clone()
                    } else {
                        Value::Unknown
                    };
                    self.declare(
                        name,
                        DeclKind::ForVar,
                        header.clone(),
                        body_start..end,
                        value,
                    );
                }
                self.block(for_loop.block(), end);
                self.close_scope();
            }
            _ => {}
        }
    }

    fn function_body(&mut self, body: &FunctionBody, method: bool, stmt_range: Range<usize>) {
        let parens = body.parameters_parentheses().tokens();
        let start = token_range(parens.0).start;
        let end = self.closing(body.end_token(), start);
        self.open_scope();
        if method {
            // `self` has no token; it is declared on the parameter list's `(`, zero-width.
            let id = self.model.decls.len();
            self.model.decls.push(Decl {
                name: "self".to_string(),
                kind: DeclKind::SelfParam,
                range: start..start,
                stmt_range: stmt_range.clone(),
                visible: start..end,
                value: Value::Unknown,
                reads: 0,
                uses: Vec::new(),
            });
            self.activate(id);
        }
        for param in body.parameters().iter() {
            if let Parameter::Name(token) = param {
                self.declare(
                    token,
                    DeclKind::Param,
                    stmt_range.clone(),
                    start..end,
                    Value::Unknown,
                );
            }
        }
        self.block(body.block(), end);
        self.record_returns(body);
        self.close_scope();
    }

    /// Records what `body`'s final `return x` gives (after its block was resolved).
    fn record_returns(&mut self, body: &FunctionBody) {
        let Some(LastStmt::Return(ret)) = body.block().last_stmt() else {
            return;
        };
        let returns: Vec<&Expression> = ret.returns().iter().collect();
        let [single] = returns.as_slice() else {
            return;
        };
        let value = self.model.expr_value(single);
        if value != Value::Unknown {
            let key = token_range(body.parameters_parentheses().tokens().0).start;
            self.model.function_returns.insert(key, value);
        }
    }

    /// `t.name = ...` where `t` is a local holding a table: `name` joins the table's fields.
    fn record_table_field(&mut self, var: &full_moon::ast::VarExpression) {
        let Prefix::Name(token) = var.prefix() else {
            return;
        };
        let suffixes: Vec<&Suffix> = var.suffixes().collect();
        let [Suffix::Index(index)] = suffixes.as_slice() else {
            return;
        };
        let PathSeg::Key(key) = index_seg(index) else {
            return;
        };
        let Some(decl) = self.lookup(&identifier(token)) else {
            return;
        };
        if let Value::Table { fields } = &mut self.model.decls[decl].value {
            let known = self
                .table_keys
                .entry(decl)
                .or_insert_with(|| fields.iter().cloned().collect());
            if known.insert(key.clone()) {
                Arc::make_mut(fields).push(key);
            }
        }
    }

    fn chain<'a>(&mut self, prefix: &Prefix, suffixes: impl Iterator<Item = &'a Suffix>) {
        match prefix {
            Prefix::Name(token) => self.use_name(token, false),
            Prefix::Expression(expr) => self.expr(expr),
            _ => {}
        }
        for suffix in suffixes {
            match suffix {
                Suffix::Index(Index::Brackets { expression, .. }) => self.expr(expression),
                Suffix::Call(Call::AnonymousCall(args)) => self.args(args),
                Suffix::Call(Call::MethodCall(method)) => self.args(method.args()),
                _ => {}
            }
        }
    }

    fn args(&mut self, args: &FunctionArgs) {
        match args {
            FunctionArgs::Parentheses { arguments, .. } => {
                for expr in arguments.iter() {
                    self.expr(expr);
                }
            }
            FunctionArgs::TableConstructor(table) => self.table(table),
            _ => {}
        }
    }

    fn table(&mut self, table: &full_moon::ast::TableConstructor) {
        for field in table.fields().iter() {
            match field {
                Field::ExpressionKey { key, value, .. } => {
                    self.expr(key);
                    self.expr(value);
                }
                Field::NameKey { value, .. } => self.expr(value),
                Field::NoKey(value) => self.expr(value),
                _ => {}
            }
        }
    }

    fn expr(&mut self, expr: &Expression) {
        match expr {
            Expression::BinaryOperator { lhs, rhs, .. } => {
                self.expr(lhs);
                self.expr(rhs);
            }
            Expression::UnaryOperator { expression, .. }
            | Expression::Parentheses { expression, .. } => self.expr(expression),
            Expression::Function(function) => {
                let range = node_range(function.as_ref()).unwrap_or(0..0);
                self.function_body(function.body(), false, range);
            }
            Expression::FunctionCall(call) => self.chain(call.prefix(), call.suffixes()),
            Expression::TableConstructor(table) => self.table(table),
            Expression::Var(Var::Name(token)) => self.use_name(token, false),
            Expression::Var(Var::Expression(var)) => self.chain(var.prefix(), var.suffixes()),
            _ => {}
        }
    }
}

/// The string keys a table constructor gives (`{a = 1, ["b"] = 2}`: `a`, `b`).
fn constructor_keys(table: &full_moon::ast::TableConstructor) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    // Seen keys by value: a search of `keys` per field was quadratic in a large table.
    let mut seen = HashSet::new();
    for field in table.fields().iter() {
        let key = match field {
            Field::NameKey { key, .. } => Some(identifier(key).to_string()),
            Field::ExpressionKey { key, .. } => match key.as_ref() {
                Expression::String(token) => string_literal(token),
                _ => None,
            },
            _ => None,
        };
        if let Some(key) = key
            && seen.insert(key.clone())
        {
            keys.push(key);
        }
    }
    keys
}

/// The element value of `ipairs(E)` / `pairs(E)` when E is inside `obj`.
pub fn iterated_value(model: &Model, expr: &Expression) -> Value {
    let Some((function, arg)) = iterator_call(model, expr) else {
        return Value::Unknown;
    };
    match (function, model.expr_value(arg)) {
        ("ipairs" | "pairs", Value::Obj(path)) => Value::Obj(path.child(PathSeg::Any)),
        _ => Value::Unknown,
    }
}

/// `pairs(E)` / `ipairs(E)` (the global functions): the function name and E.
pub fn iterator_call<'a>(
    model: &Model,
    expr: &'a Expression,
) -> Option<(&'static str, &'a Expression)> {
    let Expression::FunctionCall(call) = expr else {
        return None;
    };
    let Prefix::Name(name) = call.prefix() else {
        return None;
    };
    let suffixes: Vec<&Suffix> = call.suffixes().collect();
    let [Suffix::Call(call_suffix)] = suffixes.as_slice() else {
        return None;
    };
    let function = match model.name_value(name) {
        Value::LibraryFunction("", f @ ("pairs" | "ipairs")) => f,
        _ => return None,
    };
    call_args(call_suffix).first().map(|arg| (function, *arg))
}

#[cfg(test)]
mod tests;
