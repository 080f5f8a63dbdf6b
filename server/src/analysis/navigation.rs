//! Go to definition, find references and document symbols, on the resolved names of
//! [`super::semantic`] (shadowing, parameters, loop variables and upvalues follow Lua's rules).

use std::ops::Range;

use full_moon::ast::{Block, Expression, FunctionBody, Stmt, Var};

use super::parse::{node_range, token_range};
use super::parsed_script::ParsedScript;
use super::semantic::DeclKind;

/// Where the name at `offset` is declared: the local's name token, or for a global the first
/// place the script assigns it (`function helper()`). None for library globals and unknowns.
pub fn definition(script: &ParsedScript, offset: usize) -> Option<Range<usize>> {
    let model = script.model();
    let (decl, name, _) = model.symbol_at(offset)?;
    match decl {
        Some(d) if model.decls[d].kind == DeclKind::SelfParam => {
            Some(model.decls[d].stmt_range.clone())
        }
        Some(d) => Some(model.decls[d].range.clone()),
        None => model
            .refs
            .iter()
            .find(|r| r.decl.is_none() && r.write && r.name == name)
            .map(|r| r.range.clone()),
    }
}

/// Every use of the name at `offset` (the same local, or the same global), in source order,
/// with the declaration first when `include_declaration`.
pub fn references(
    script: &ParsedScript,
    offset: usize,
    include_declaration: bool,
) -> Vec<Range<usize>> {
    let model = script.model();
    let Some((decl, name, _)) = model.symbol_at(offset) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    match decl {
        Some(d) => {
            if include_declaration && model.decls[d].kind != DeclKind::SelfParam {
                found.push(model.decls[d].range.clone());
            }
            found.extend(model.uses_of(d).map(|r| r.range.clone()));
        }
        None => {
            found.extend(
                model
                    .refs
                    .iter()
                    .filter(|r| r.decl.is_none() && r.name == name)
                    .filter(|r| include_declaration || !r.write)
                    .map(|r| r.range.clone()),
            );
        }
    }
    // Assignments resolve their right-hand side first; report in source order.
    found.sort_by_key(|r| r.start);
    found
}

/// Document highlight: every occurrence of the name at `offset` in source order, each with
/// whether it writes the name (its declaration, an assignment) or reads it.
pub fn highlights(script: &ParsedScript, offset: usize) -> Vec<(Range<usize>, bool)> {
    let model = script.model();
    let Some((decl, name, _)) = model.symbol_at(offset) else {
        return Vec::new();
    };
    let mut found: Vec<(Range<usize>, bool)> = match decl {
        Some(d) => {
            let mut found = Vec::new();
            if model.decls[d].kind != DeclKind::SelfParam {
                found.push((model.decls[d].range.clone(), true));
            }
            found.extend(model.uses_of(d).map(|r| (r.range.clone(), r.write)));
            found
        }
        None => model
            .refs
            .iter()
            .filter(|r| r.decl.is_none() && r.name == name)
            .map(|r| (r.range.clone(), r.write))
            .collect(),
    };
    found.sort_by_key(|(r, _)| r.start);
    found
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SymbolKind {
    Function,
    Variable,
}

/// An outline entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentSymbol {
    pub name: String,
    pub kind: SymbolKind,
    /// `function(a, b)` for functions.
    pub detail: Option<String>,
    /// The whole declaration.
    pub range: Range<usize>,
    /// The name.
    pub selection_range: Range<usize>,
    /// Functions declared inside a function.
    pub children: Vec<DocumentSymbol>,
}

/// The outline: functions (local, global, `t.f`, `t:m`, `local f = function`), with nested
/// functions as children, and top-level locals.
pub fn document_symbols(script: &ParsedScript) -> Vec<DocumentSymbol> {
    block_symbols(script.ast().nodes(), true)
}

fn function_detail(body: &FunctionBody) -> String {
    format!(
        "function({})",
        super::semantic::param_names(body).join(", ")
    )
}

fn function_symbol(
    name: String,
    selection: Range<usize>,
    range: Range<usize>,
    body: &FunctionBody,
) -> DocumentSymbol {
    DocumentSymbol {
        name,
        kind: SymbolKind::Function,
        detail: Some(function_detail(body)),
        range,
        selection_range: selection,
        children: block_symbols(body.block(), false),
    }
}

/// Symbols of a block; locals that are not functions only at the top level.
fn block_symbols(block: &Block, top_level: bool) -> Vec<DocumentSymbol> {
    let mut symbols = Vec::new();
    for stmt in block.stmts() {
        let Some(range) = node_range(stmt) else {
            continue;
        };
        match stmt {
            Stmt::LocalFunction(function) => symbols.push(function_symbol(
                function.name().token().to_string(),
                token_range(function.name()),
                range,
                function.body(),
            )),
            Stmt::FunctionDeclaration(declaration) => {
                let name = declaration.name();
                let mut text = name
                    .names()
                    .iter()
                    .map(|t| t.token().to_string())
                    .collect::<Vec<_>>()
                    .join(".");
                let mut selection = name
                    .names()
                    .iter()
                    .last()
                    .map_or(range.clone(), token_range);
                if let Some(method) = name.method_name() {
                    text = format!("{text}:{}", method.token());
                    selection = token_range(method);
                }
                symbols.push(function_symbol(text, selection, range, declaration.body()));
            }
            Stmt::LocalAssignment(local) => {
                let exprs: Vec<&Expression> = local.expressions().iter().collect();
                for (i, name) in local.names().iter().enumerate() {
                    match exprs.get(i) {
                        Some(Expression::Function(function)) => symbols.push(function_symbol(
                            name.token().to_string(),
                            token_range(name),
                            range.clone(),
                            function.body(),
                        )),
                        _ if top_level => symbols.push(DocumentSymbol {
                            name: name.token().to_string(),
                            kind: SymbolKind::Variable,
                            detail: None,
                            range: range.clone(),
                            selection_range: token_range(name),
                            children: Vec::new(),
                        }),
                        _ => {}
                    }
                }
            }
            Stmt::Assignment(assignment) => {
                // `helper = function() ... end` / `M.f = function() ... end`
                for (var, expr) in assignment
                    .variables()
                    .iter()
                    .zip(assignment.expressions().iter())
                {
                    if let Expression::Function(function) = expr {
                        let selection = match var {
                            Var::Name(token) => token_range(token),
                            other => node_range(other).unwrap_or(range.clone()),
                        };
                        let name = source_text_of(var);
                        symbols.push(function_symbol(
                            name,
                            selection,
                            range.clone(),
                            function.body(),
                        ));
                    }
                }
            }
            _ => {}
        }
    }
    symbols
}

fn source_text_of(var: &Var) -> String {
    var.to_string().trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Offset of the `n`-th occurrence of `needle`.
    fn at(source: &str, needle: &str, n: usize) -> usize {
        source.match_indices(needle).nth(n).unwrap().0
    }

    #[test]
    fn definition_respects_shadowing_params_and_loops() {
        let source = "local x = 1\nlocal function f(x)\n  for x = 1, x do print(x) end\n  return x\nend\nprint(x)";
        // `print(x)` inside the loop: the loop variable.
        assert_eq!(
            definition(&ParsedScript::new(source), at(source, "print(x)", 0) + 6),
            Some(at(source, "x = 1, x", 0)..at(source, "x = 1, x", 0) + 1)
        );
        // The loop's upper bound `x` is the parameter (evaluated outside the loop scope).
        let bound = at(source, "x do", 0);
        let param = at(source, "f(x)", 0) + 2;
        assert_eq!(
            definition(&ParsedScript::new(source), bound),
            Some(param..param + 1)
        );
        // `return x`: the parameter; the final `print(x)`: the first local.
        assert_eq!(
            definition(&ParsedScript::new(source), at(source, "return x", 0) + 7),
            Some(param..param + 1)
        );
        assert_eq!(
            definition(&ParsedScript::new(source), at(source, "print(x)", 1) + 6),
            Some(6..7)
        );
    }

    #[test]
    fn definition_of_upvalues_and_globals() {
        let source = "local count = 0\nlocal function bump()\n  count = count + 1\nend\nfunction helper() return bump() end\nhelper()";
        let decl = at(source, "count", 0);
        assert_eq!(
            definition(&ParsedScript::new(source), at(source, "count", 2)),
            Some(decl..decl + 5)
        );
        let helper = at(source, "helper", 0);
        assert_eq!(
            definition(&ParsedScript::new(source), at(source, "helper", 1)),
            Some(helper..helper + 6)
        );
        assert_eq!(definition(&ParsedScript::new("print(1)"), 1), None);
    }

    #[test]
    fn references_of_locals_and_globals() {
        let source = "local spec = obj.data.spec\nlocal function f(spec) return spec end\nspec.x = f(spec)\nreturn spec";
        let refs = references(&ParsedScript::new(source), 6, true);
        let texts: Vec<usize> = refs.iter().map(|r| r.start).collect();
        assert_eq!(
            texts,
            vec![
                6,
                at(source, "spec.x", 0),
                at(source, "f(spec)", 1) + 2,
                at(source, "return spec", 1) + 7
            ]
        );
        assert_eq!(references(&ParsedScript::new(source), 6, false).len(), 3);
        // The parameter's references stay inside the function.
        let param = at(source, "f(spec)", 0) + 2;
        assert_eq!(references(&ParsedScript::new(source), param, true).len(), 2);
        let source = "g = 1\nprint(g, g)";
        assert_eq!(references(&ParsedScript::new(source), 0, true).len(), 3);
        assert_eq!(references(&ParsedScript::new(source), 0, false).len(), 2);
    }

    #[test]
    fn highlights_tell_writes_from_reads() {
        let source =
            "local n = 1\nn = n + 1\nlocal function f(n) return n end\nreturn {spec = {n = n}}";
        let found: Vec<(usize, bool)> = highlights(&ParsedScript::new(source), 6)
            .into_iter()
            .map(|(r, write)| (source[..r.start].matches('\n').count(), write))
            .collect();
        // The parameter `n` of `f` is another variable.
        assert_eq!(found, vec![(0, true), (1, true), (1, false), (3, false)]);
        assert!(
            highlights(
                &ParsedScript::new(source),
                source.find("return n").unwrap() + 7
            )
            .len()
                == 2
        );
        assert!(
            highlights(&ParsedScript::new("print(1)"), 3)
                .iter()
                .all(|(_, write)| !write)
        );
    }

    #[test]
    fn outline() {
        let source = "local json = require('json')\nlocal M = {}\nfunction M.helper(a) local function inner() end return a end\n\
                      function M:method() end\nlocal f = function(x, y) end\nglobal = function() end\n\
                      local function top(n)\n  local hidden = 1\n  return n\nend\nreturn {}";
        let symbols = document_symbols(&ParsedScript::new(source));
        let names: Vec<(&str, SymbolKind)> =
            symbols.iter().map(|s| (s.name.as_str(), s.kind)).collect();
        assert_eq!(
            names,
            vec![
                ("json", SymbolKind::Variable),
                ("M", SymbolKind::Variable),
                ("M.helper", SymbolKind::Function),
                ("M:method", SymbolKind::Function),
                ("f", SymbolKind::Function),
                ("global", SymbolKind::Function),
                ("top", SymbolKind::Function),
            ]
        );
        assert_eq!(symbols[2].children.len(), 1);
        assert_eq!(symbols[2].children[0].name, "inner");
        assert_eq!(symbols[4].detail.as_deref(), Some("function(x, y)"));
        assert!(
            symbols[6].children.is_empty(),
            "locals inside functions are not listed"
        );
        assert_eq!(&source[symbols[3].selection_range.clone()], "method");
    }
}
