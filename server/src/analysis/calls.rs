//! The call graph of one script, for call hierarchy: the script's own functions (`local
//! function f`, `function helper`, `function M.f` / `M:m`, `local f = function`) and which of
//! them call which. Calls resolve like names do: `f()` to the local `f` in scope (shadowing
//! respected), otherwise to the global or dotted function of that name.

use std::ops::Range;

use full_moon::ast::{Call, Expression, Prefix, Stmt, Suffix, Var};
use full_moon::tokenizer::TokenReference;

use super::parse::{node_range, token_range};
use super::parsed_script::ParsedScript;
use super::semantic::{DeclId, Model, param_names};
use super::walk::{Chain, Visit, walk_block};

/// A function defined by the script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    /// As written: `f`, `helper`, `M.f`, `M:m`.
    pub name: String,
    /// `function(a, b)`.
    pub detail: String,
    /// The parameter names (`...` included; not the implicit `self` of `M:m`).
    pub params: Vec<String>,
    /// The defining statement (or expression).
    pub range: Range<usize>,
    /// The name.
    pub selection: Range<usize>,
    /// From the parameters' `(` to `end`: calls in here are this function's.
    body: Range<usize>,
    /// The local it is bound to, if any.
    decl: Option<DeclId>,
}

/// One call of a script function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallSite {
    /// Index of the called function in [`CallGraph::functions`].
    pub callee: usize,
    /// The innermost function the call is in; None at the top level of the script.
    pub caller: Option<usize>,
    /// The called name (`f`, `M.f`, `M:m`).
    pub range: Range<usize>,
    /// Whether the call is a method call (`M:m(...)`: the receiver is the first argument).
    pub method: bool,
    /// The arguments in parentheses, each an expression's range (none for `f{...}`, `f"..."`).
    pub args: Vec<Range<usize>>,
}

#[derive(Debug, Clone, Default)]
pub struct CallGraph {
    pub functions: Vec<Function>,
    pub calls: Vec<CallSite>,
}

impl CallGraph {
    /// The function named at `offset`: on its definition's name or on a call of it.
    pub fn function_at(&self, offset: usize) -> Option<usize> {
        let touches = |r: &Range<usize>| r.start <= offset && offset <= r.end;
        self.functions
            .iter()
            .position(|f| touches(&f.selection))
            .or_else(|| {
                self.calls
                    .iter()
                    .find(|c| touches(&c.range))
                    .map(|c| c.callee)
            })
    }

    /// Calls of `function`, grouped by caller (None: the top level), in source order.
    pub fn incoming(&self, function: usize) -> Vec<(Option<usize>, Vec<Range<usize>>)> {
        group(self.calls.iter().filter(|c| c.callee == function), |c| {
            c.caller
        })
    }

    /// Calls made inside `function` (not in functions nested in it), grouped by callee.
    pub fn outgoing(&self, function: usize) -> Vec<(usize, Vec<Range<usize>>)> {
        group(
            self.calls.iter().filter(|c| c.caller == Some(function)),
            |c| c.callee,
        )
    }
}

fn group<'c, K: PartialEq + Copy>(
    calls: impl Iterator<Item = &'c CallSite>,
    key: impl Fn(&CallSite) -> K,
) -> Vec<(K, Vec<Range<usize>>)> {
    let mut groups: Vec<(K, Vec<Range<usize>>)> = Vec::new();
    for call in calls {
        let k = key(call);
        match groups.iter_mut().find(|(g, _)| *g == k) {
            Some((_, ranges)) => ranges.push(call.range.clone()),
            None => groups.push((k, vec![call.range.clone()])),
        }
    }
    groups
}

/// The functions of `source` and the calls between them.
pub fn call_graph(script: &ParsedScript) -> CallGraph {
    let model = script.model();
    let mut collect = Collect {
        model,
        functions: Vec::new(),
        calls: Vec::new(),
    };
    walk_block(script.ast().nodes(), &mut collect);
    let Collect {
        functions, calls, ..
    } = collect;
    let mut resolved = Vec::new();
    for raw in calls {
        let callee = match raw.decl {
            Some(decl) => functions.iter().position(|f| f.decl == Some(decl)),
            None if raw.local_name => None,
            // `M:m` and `M.m` name the same field.
            None => functions.iter().position(|f| {
                f.decl.is_none() && f.name.replace(':', ".") == raw.name.replace(':', ".")
            }),
        };
        let Some(callee) = callee else { continue };
        let caller = functions
            .iter()
            .enumerate()
            .filter(|(_, f)| f.body.start < raw.range.start && raw.range.end <= f.body.end)
            .min_by_key(|(_, f)| f.body.end - f.body.start)
            .map(|(i, _)| i);
        resolved.push(CallSite {
            callee,
            caller,
            range: raw.range,
            method: raw.method,
            args: raw.args,
        });
    }
    CallGraph {
        functions,
        calls: resolved,
    }
}

struct RawCall {
    name: String,
    range: Range<usize>,
    decl: Option<DeclId>,
    /// A plain name that resolved to a local that is not a function: never a script function.
    local_name: bool,
    method: bool,
    args: Vec<Range<usize>>,
}

fn arg_ranges(args: &full_moon::ast::FunctionArgs) -> Vec<Range<usize>> {
    match args {
        full_moon::ast::FunctionArgs::Parentheses { arguments, .. } => {
            arguments.iter().filter_map(node_range).collect()
        }
        _ => Vec::new(),
    }
}

struct Collect<'m> {
    model: &'m Model,
    functions: Vec<Function>,
    calls: Vec<RawCall>,
}

impl Collect<'_> {
    fn add(
        &mut self,
        name: String,
        selection: Range<usize>,
        range: Option<Range<usize>>,
        body: &full_moon::ast::FunctionBody,
        decl: Option<DeclId>,
    ) {
        let (open, _) = body.parameters_parentheses().tokens();
        let body_range = token_range(open).start..token_range(body.end_token()).end;
        self.functions.push(Function {
            name,
            detail: format!("function({})", param_names(body).join(", ")),
            params: param_names(body),
            range: range.unwrap_or(selection.clone()),
            selection,
            body: body_range,
            decl,
        });
    }

    fn decl_of(&self, name: &TokenReference) -> Option<DeclId> {
        let range = token_range(name);
        self.model.decls.iter().position(|d| d.range == range)
    }
}

/// `a.b.c` of a chain's prefix and index suffixes, without whitespace; None for anything
/// else (brackets, calls in the middle).
fn dotted(prefix: &Prefix, suffixes: &[&Suffix]) -> Option<String> {
    let Prefix::Name(name) = prefix else {
        return None;
    };
    let mut text = name.token().to_string();
    for suffix in suffixes {
        match suffix {
            Suffix::Index(full_moon::ast::Index::Dot { name, .. }) => {
                text.push('.');
                text.push_str(&name.token().to_string());
            }
            _ => return None,
        }
    }
    Some(text)
}

impl<'a> Visit<'a> for Collect<'_> {
    fn stmt(&mut self, stmt: &'a Stmt) {
        let range = node_range(stmt);
        match stmt {
            Stmt::LocalFunction(f) => {
                let decl = self.decl_of(f.name());
                self.add(
                    f.name().token().to_string(),
                    token_range(f.name()),
                    range,
                    f.body(),
                    decl,
                );
            }
            Stmt::FunctionDeclaration(f) => {
                let names = f.name().names();
                let mut name = names
                    .iter()
                    .map(|t| t.token().to_string())
                    .collect::<Vec<_>>()
                    .join(".");
                let mut selection = names.iter().last().map(token_range);
                if let Some(method) = f.name().method_name() {
                    name = format!("{name}:{}", method.token());
                    selection = Some(token_range(method));
                }
                // `function f()` where a local `f` is in scope assigns that local.
                let decl = match names.len() {
                    1 if f.name().method_name().is_none() => {
                        names.iter().next().and_then(|t| self.model.local_of(t))
                    }
                    _ => None,
                };
                if let Some(selection) = selection {
                    self.add(name, selection, range, f.body(), decl);
                }
            }
            Stmt::LocalAssignment(local) => {
                for (name, expr) in local.names().iter().zip(local.expressions().iter()) {
                    if let Expression::Function(function) = expr {
                        let decl = self.decl_of(name);
                        self.add(
                            name.token().to_string(),
                            token_range(name),
                            range.clone(),
                            function.body(),
                            decl,
                        );
                    }
                }
            }
            Stmt::Assignment(assignment) => {
                for (var, expr) in assignment
                    .variables()
                    .iter()
                    .zip(assignment.expressions().iter())
                {
                    let Expression::Function(function) = expr else {
                        continue;
                    };
                    let (name, selection, decl) = match var {
                        Var::Name(token) => (
                            token.token().to_string(),
                            token_range(token),
                            self.model.local_of(token),
                        ),
                        Var::Expression(v) => {
                            let suffixes: Vec<&Suffix> = v.suffixes().collect();
                            let Some(name) = dotted(v.prefix(), &suffixes) else {
                                continue;
                            };
                            let Some(selection) = node_range(var) else {
                                continue;
                            };
                            (name, selection, None)
                        }
                        _ => continue,
                    };
                    self.add(name, selection, range.clone(), function.body(), decl);
                }
            }
            _ => {}
        }
    }

    fn chain(&mut self, chain: &Chain<'a>) {
        let Some(prefix_range) = node_range(chain.prefix) else {
            return;
        };
        for (i, suffix) in chain.suffixes.iter().enumerate() {
            let Suffix::Call(call) = suffix else { continue };
            let before = &chain.suffixes[..i];
            let (name, range, args) = match call {
                Call::AnonymousCall(args) => {
                    let Some(name) = dotted(chain.prefix, before) else {
                        continue;
                    };
                    let end = before
                        .last()
                        .and_then(|s| node_range(*s))
                        .map_or(prefix_range.end, |r| r.end);
                    (name, prefix_range.start..end, arg_ranges(args))
                }
                Call::MethodCall(method) => {
                    let Some(receiver) = dotted(chain.prefix, before) else {
                        continue;
                    };
                    (
                        format!("{receiver}:{}", method.name().token()),
                        prefix_range.start..token_range(method.name()).end,
                        arg_ranges(method.args()),
                    )
                }
                _ => continue,
            };
            let (decl, local_name) = match (i, chain.prefix, call) {
                (0, Prefix::Name(token), Call::AnonymousCall(_)) => {
                    let decl = self.model.local_of(token);
                    (decl, decl.is_some())
                }
                _ => (None, false),
            };
            self.calls.push(RawCall {
                name,
                range,
                decl,
                local_name,
                method: matches!(call, Call::MethodCall(_)),
                args,
            });
        }
    }
}

/// Parameter-name hints: for each argument of a call of a script function, the parameter it
/// binds (`weight(`**`w:`**` 1)`), as (argument start, name). Left out: arguments spelled like
/// their parameter, arguments past the named parameters (`...`), and calls with the receiver
/// shifting the parameters in a way the definition does not say.
pub fn parameter_hints(script: &ParsedScript) -> Vec<(usize, String)> {
    let graph = call_graph(script);
    let mut hints = Vec::new();
    for call in &graph.calls {
        let function = &graph.functions[call.callee];
        let defined_as_method = function.name.contains(':');
        let mut params: Vec<&str> = function.params.iter().map(String::as_str).collect();
        match (defined_as_method, call.method) {
            // `M.m(self, a)` defined, `M:m(a)` called: the receiver is the first parameter.
            (false, true) if !params.is_empty() => {
                params.remove(0);
            }
            // `M:m(a)` defined, `M.m(x, a)` called: the first argument is `self`.
            (true, false) => params.insert(0, "self"),
            _ => {}
        }
        for (param, arg) in params.iter().zip(&call.args) {
            if *param == "..." {
                break;
            }
            if script.source().get(arg.clone()) == Some(*param) {
                continue;
            }
            hints.push((arg.start, param.to_string()));
        }
    }
    hints.sort();
    hints
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = "local M = {}\nlocal function weight(w) return w end\nfunction M.route(r)\n  return weight(r)\nend\nfunction helper()\n  local weight = 1\n  return M.route(weight)\nend\nlocal pick = function() return helper() end\nreturn {spec = {w = weight(1), r = pick()}}\n";

    fn name(graph: &CallGraph, i: Option<usize>) -> &str {
        i.map_or("<script>", |i| graph.functions[i].name.as_str())
    }

    #[test]
    fn functions_and_who_calls_whom() {
        let graph = call_graph(&ParsedScript::new(SOURCE));
        let names: Vec<&str> = graph.functions.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, vec!["weight", "M.route", "helper", "pick"]);
        let weight = graph
            .function_at(SOURCE.find("weight(w)").unwrap())
            .unwrap();
        let incoming: Vec<(&str, usize)> = graph
            .incoming(weight)
            .into_iter()
            .map(|(caller, ranges)| (name(&graph, caller), ranges.len()))
            .collect();
        // `weight` inside `helper` is a number local, not the function.
        assert_eq!(incoming, vec![("M.route", 1), ("<script>", 1)]);
        let helper = graph.function_at(SOURCE.find("helper()").unwrap()).unwrap();
        let outgoing: Vec<&str> = graph
            .outgoing(helper)
            .into_iter()
            .map(|(callee, _)| graph.functions[callee].name.as_str())
            .collect();
        assert_eq!(outgoing, vec!["M.route"]);
        // From a call site.
        let at_call = SOURCE.find("M.route(weight)").unwrap() + 3;
        assert_eq!(graph.function_at(at_call), Some(1));
        let pick = graph.function_at(SOURCE.find("pick =").unwrap()).unwrap();
        assert_eq!(graph.outgoing(pick).len(), 1);
    }

    #[test]
    fn parameter_names_at_call_sites() {
        let source = "local M = {}\nfunction M:scale(w, ...) return w end\nlocal function pair(a, b) return a end\nlocal b = 2\nreturn {spec = {x = pair(1, b), y = M:scale(3, 4), z = M.scale(M, 5), w = print(1)}}\n";
        let hints: Vec<(String, &str)> = parameter_hints(&ParsedScript::new(source))
            .into_iter()
            .map(|(at, name)| (name, &source[at..at + 1]))
            .collect();
        assert_eq!(
            hints,
            vec![
                ("a".to_string(), "1"),
                ("w".to_string(), "3"),
                ("self".to_string(), "M"),
                ("w".to_string(), "5"),
            ]
        );
    }
}
