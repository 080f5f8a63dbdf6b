//! Types for hover, as far as they are certain from the source alone: a local's type from what
//! initialises it (a literal, an operator's result, a documented `obj` field, a library
//! function's result, another local, a script function's result), and a script function's
//! result type from its `return`s. Unknowns stay unsaid (`any` would only add noise).

use std::collections::HashMap;
use std::ops::Range;

use full_moon::ast::{BinOp, Expression, FunctionBody, LastStmt, Stmt, UnOp, Var};

use super::obj_schema::{self, Lookup};
use super::parse::{node_range, token_range};
use super::semantic::{Model, Value};
use super::walk::{Visit, walk_block, walk_function};
use kruise_lua_engine::script::ScriptFlavor as Flavor;

/// The types found in one script.
#[derive(Debug, Default)]
pub struct Types {
    /// By the start of a local's name token.
    locals: HashMap<usize, String>,
    /// By the start of a function body's parameter list `(`: what it returns.
    returns: HashMap<usize, String>,
    /// Function bodies: their `(` start, with the whole range (to find the one a name defines).
    bodies: Vec<(Range<usize>, usize)>,
}

impl Types {
    /// The type of the local declared at `name` (its name token's start).
    pub fn local(&self, name_start: usize) -> Option<&str> {
        self.locals.get(&name_start).map(String::as_str)
    }

    /// What the function whose statement starts at or before `stmt_start` and whose body
    /// follows returns (the first body starting at or after `stmt_start`).
    pub fn returns_of_function_at(&self, stmt_start: usize) -> Option<&str> {
        let body = self
            .bodies
            .iter()
            .filter(|(range, _)| range.start >= stmt_start)
            .min_by_key(|(range, _)| range.start)?;
        self.returns.get(&body.1).map(String::as_str)
    }
}

/// The types of `source`'s locals and functions (hover parses once and calls [`infer_parsed`]).
#[cfg(test)]
pub fn infer(source: &str, flavor: Flavor) -> Types {
    let parsed = super::parse::parse(source);
    let model = Model::build(&parsed.ast, source.len());
    infer_parsed(&parsed.ast, &model, flavor)
}

/// [`infer`] on a chunk already parsed and resolved (parsing is most of the cost).
pub fn infer_parsed(ast: &full_moon::ast::Ast, model: &Model, flavor: Flavor) -> Types {
    let mut collect = Collect {
        model,
        flavor,
        types: Types::default(),
    };
    walk_block(ast.nodes(), &mut collect);
    collect.types
}

struct Collect<'m> {
    model: &'m Model,
    flavor: Flavor,
    types: Types,
}

fn union(a: Option<String>, b: Option<String>) -> Option<String> {
    match (a, b) {
        (Some(a), Some(b)) if a == b => Some(a),
        (Some(a), Some(b)) => {
            let mut parts: Vec<&str> = a.split('|').chain(b.split('|')).collect();
            parts.sort();
            parts.dedup();
            Some(parts.join("|"))
        }
        _ => None,
    }
}

/// What the library functions the scripts use return (Lua 5.1 reference manual, §5).
fn library_result(lib: &str, function: &str) -> Option<&'static str> {
    Some(match (lib, function) {
        ("", "tostring") | ("", "type") => "string",
        ("", "tonumber") => "number|nil",
        ("", "select") | ("", "next") | ("", "unpack") | ("", "pcall") => return None,
        ("", "ipairs") | ("", "pairs") => "function",
        ("string", "len") | ("string", "byte") | ("string", "find") => "number",
        ("string", _) => "string",
        ("math", _) => "number",
        ("table", "concat") => "string",
        ("table", "getn") | ("table", "maxn") => "number",
        ("json", "encode") => "string",
        ("json", "decode") => "table",
        _ => return None,
    })
}

impl Collect<'_> {
    fn expr_type(&self, expr: &Expression) -> Option<String> {
        let known = |s: &str| Some(s.to_string());
        match expr {
            Expression::Number(_) => known("number"),
            Expression::String(_) => known("string"),
            Expression::Symbol(token) => match token.token().to_string().as_str() {
                "true" | "false" => known("boolean"),
                "nil" => known("nil"),
                _ => None,
            },
            Expression::TableConstructor(_) => known("table"),
            Expression::Function(_) => known("function"),
            Expression::Parentheses { expression, .. } => self.expr_type(expression),
            Expression::UnaryOperator { unop, .. } => match unop {
                UnOp::Minus(_) | UnOp::Hash(_) => known("number"),
                UnOp::Not(_) => known("boolean"),
                _ => None,
            },
            Expression::BinaryOperator { lhs, binop, rhs } => match binop {
                BinOp::Plus(_)
                | BinOp::Minus(_)
                | BinOp::Star(_)
                | BinOp::Slash(_)
                | BinOp::Percent(_)
                | BinOp::Caret(_) => known("number"),
                BinOp::TwoDots(_) => known("string"),
                BinOp::TwoEqual(_)
                | BinOp::TildeEqual(_)
                | BinOp::LessThan(_)
                | BinOp::LessThanEqual(_)
                | BinOp::GreaterThan(_)
                | BinOp::GreaterThanEqual(_) => known("boolean"),
                // `a or b` is one of them (a nil/false `a` is replaced).
                BinOp::Or(_) => union(
                    self.expr_type(lhs)
                        .map(|t| t.replace("|nil", "").replace("nil|", "")),
                    self.expr_type(rhs),
                ),
                BinOp::And(_) => None,
                _ => None,
            },
            Expression::Var(Var::Name(token)) => {
                let start = token_range(token).start;
                let decl = self.model.ref_starting_at(start)?.decl?;
                let name = self.model.decls[decl].range.start;
                self.types.locals.get(&name).cloned()
            }
            _ => self.value_type(&self.model.expr_value(expr), expr),
        }
    }

    fn value_type(&self, value: &Value, expr: &Expression) -> Option<String> {
        match value {
            Value::Obj(path) => match obj_schema::lookup(self.flavor, &path.0) {
                Lookup::Found { shape, .. } => Some(shape.type_name.to_string()),
                _ => None,
            },
            Value::Function { .. } | Value::LibraryFunction(..) => match expr {
                // A call's result, not the function.
                Expression::FunctionCall(_) => None,
                _ => Some("function".into()),
            },
            Value::Table { .. } => Some("table".into()),
            Value::Library(_) => Some("table".into()),
            Value::Unknown => match expr {
                Expression::FunctionCall(call) => {
                    // The callee's value: the chain without its last call.
                    let suffixes: Vec<_> = call.suffixes().collect();
                    let (_, before) = suffixes.split_last()?;
                    match self
                        .model
                        .chain_value(call.prefix(), before.iter().copied())
                    {
                        Value::LibraryFunction(lib, function) => {
                            library_result(lib, function).map(str::to_string)
                        }
                        Value::Function { .. } => {
                            // A script function: what its returns say.
                            let callee = self.callee_body(call.prefix(), before)?;
                            self.types.returns.get(&callee).cloned()
                        }
                        _ => None,
                    }
                }
                _ => None,
            },
        }
    }

    /// The body start of the local function a plain-name call calls.
    fn callee_body(
        &self,
        prefix: &full_moon::ast::Prefix,
        before: &[&full_moon::ast::Suffix],
    ) -> Option<usize> {
        let full_moon::ast::Prefix::Name(token) = prefix else {
            return None;
        };
        if !before.is_empty() {
            return None;
        }
        let decl = self.model.local_of(token)?;
        let stmt = self.model.decls[decl].stmt_range.start;
        self.types
            .bodies
            .iter()
            .filter(|(range, _)| range.start >= stmt)
            .min_by_key(|(range, _)| range.start)
            .map(|(_, key)| *key)
    }

    /// The union of what a body's `return`s give (nested functions aside); a body that can end
    /// without `return` also gives nothing (`nil`).
    fn returns(&self, body: &FunctionBody) -> Option<String> {
        struct Returns<'e>(Vec<Option<&'e Expression>>, usize);
        impl<'e> Visit<'e> for Returns<'e> {
            fn last_stmt(&mut self, stmt: &'e LastStmt) {
                if self.1 == 1
                    && let LastStmt::Return(ret) = stmt
                {
                    self.0.push(ret.returns().iter().next());
                }
            }
            fn function(&mut self, _: &'e FunctionBody, enter: bool) {
                if enter {
                    self.1 += 1;
                } else {
                    self.1 -= 1;
                }
            }
        }
        let mut found = Returns(Vec::new(), 0);
        walk_function(body, &mut found);
        if found.0.is_empty() {
            return None; // a procedure: nothing to say
        }
        let ends_with_return = matches!(body.block().last_stmt(), Some(LastStmt::Return(_)));
        let mut types: Vec<Option<String>> = found
            .0
            .into_iter()
            .map(|e| match e {
                Some(expr) => self.expr_type(expr),
                None => Some("nil".into()),
            })
            .collect();
        if !ends_with_return {
            types.push(Some("nil".into()));
        }
        let first = types.first()?.clone();
        types.into_iter().skip(1).fold(first, union)
    }

    fn record_body(&mut self, body: &FunctionBody) {
        let (open, _) = body.parameters_parentheses().tokens();
        let key = token_range(open).start;
        let range = key..token_range(body.end_token()).end;
        self.types.bodies.push((range, key));
        if let Some(returns) = self.returns(body) {
            self.types.returns.insert(key, returns);
        }
    }
}

impl<'a> Visit<'a> for Collect<'_> {
    fn stmt(&mut self, stmt: &'a Stmt) {
        if let Stmt::LocalAssignment(local) = stmt {
            let exprs: Vec<&Expression> = local.expressions().iter().collect();
            for (i, name) in local.names().iter().enumerate() {
                let ty = match exprs.get(i) {
                    Some(expr) => self.expr_type(expr),
                    // `local x` alone is nil until assigned; say nothing.
                    None if exprs.is_empty() => None,
                    // A multiple result's later values: unknown.
                    None => None,
                };
                if let Some(ty) = ty {
                    self.types.locals.insert(token_range(name).start, ty);
                }
            }
        }
        let _ = node_range(stmt);
    }

    fn function(&mut self, body: &'a FunctionBody, enter: bool) {
        // After the body is walked, so functions it calls that are declared earlier are known;
        // recursion or later functions stay unknown.
        if !enter {
            self.record_body(body);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locals_and_function_results() {
        let source = "local n = 1 + 2\nlocal s = 'a' .. n\nlocal w = obj.canaryWeight\nlocal t = {}\nlocal h = obj.data.spec\nlocal f = string.format('%d', n)\nlocal m = tonumber(s) or 0\nlocal b = not n\nlocal function weight(x)\n  if x then return 1 end\n  return 2\nend\nlocal function maybe(x)\n  if x then return 'y' end\nend\nlocal r = weight(1)\nlocal c = n\nreturn obj.data\n";
        let types = infer(source, Flavor::Custom);
        let of = |name: &str| types.local(source.find(&format!("local {name} ")).unwrap() + 6);
        assert_eq!(of("n"), Some("number"));
        assert_eq!(of("s"), Some("string"));
        assert_eq!(of("w"), Some("number"));
        assert_eq!(of("t"), Some("table"));
        assert!(of("h").unwrap().starts_with("table"));
        assert_eq!(of("f"), Some("string"));
        assert_eq!(of("m"), Some("number"));
        assert_eq!(of("b"), Some("boolean"));
        assert_eq!(of("r"), Some("number"));
        assert_eq!(of("c"), Some("number"));
        let weight = source.find("local function weight").unwrap();
        assert_eq!(types.returns_of_function_at(weight), Some("number"));
        let maybe = source.find("local function maybe").unwrap();
        assert_eq!(types.returns_of_function_at(maybe), Some("nil|string"));
    }
}
