//! Semantic highlighting: what each name of a script is (`obj` and its fields, the library
//! Kruise provides, locals, parameters, upvalues, script globals, functions) and whether it is
//! declared, only read, or assigned there. The protocol layer encodes these as LSP semantic
//! tokens (legend in docs/LSP.md).

use std::collections::HashSet;
use std::ops::Range;

use full_moon::ast::{Expression, FunctionBody, Index, Stmt, Suffix, Var};

use super::parse::{node_range, token_range};
use super::parsed_script::ParsedScript;
use super::semantic::{DeclKind, Model, Value, global_value};
use super::walk::{Chain, Visit, walk_block};

/// What a name is. The order is the legend's (the protocol layer sends the index).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    /// A library table: `string`, `table`, `math`, `json`.
    Namespace,
    /// A local, a loop variable, a script global, or `obj`.
    Variable,
    Parameter,
    /// A Lua function or a library function.
    Function,
    /// A field of `obj` (`obj.data.spec`, also through a local alias).
    Property,
}

impl TokenKind {
    pub const ALL: [TokenKind; 5] = [
        TokenKind::Namespace,
        TokenKind::Variable,
        TokenKind::Parameter,
        TokenKind::Function,
        TokenKind::Property,
    ];
}

/// Modifier bits; the order is the legend's.
pub mod modifier {
    /// Where a local, parameter or loop variable is declared.
    pub const DECLARATION: u32 = 1 << 0;
    /// A local or parameter never assigned after its declaration; `obj` itself.
    pub const READONLY: u32 = 1 << 1;
    /// Where a name or an `obj` field is assigned.
    pub const MODIFICATION: u32 = 1 << 2;
    /// `obj` and what Kruise's Lua provides (`string.format`, `ipairs`).
    pub const DEFAULT_LIBRARY: u32 = 1 << 3;
    /// A global the script defines (not provided by Kruise).
    pub const GLOBAL: u32 = 1 << 4;
    /// A local of an enclosing function, used inside a nested one.
    pub const UPVALUE: u32 = 1 << 5;
    /// The legend's names, in bit order.
    pub const NAMES: [&str; 6] = [
        "declaration",
        "readonly",
        "modification",
        "defaultLibrary",
        "global",
        "upvalue",
    ];
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub range: Range<usize>,
    pub kind: TokenKind,
    pub modifiers: u32,
}

/// The tokens of `source`, in source order, without overlaps.
pub fn tokens(script: &ParsedScript) -> Vec<Token> {
    let model = script.model();
    let mut collector = Collector {
        model,
        functions: Vec::new(),
        global_functions: HashSet::new(),
        tokens: Vec::new(),
    };
    walk_block(script.ast().nodes(), &mut collector);
    let Collector {
        functions,
        global_functions,
        mut tokens,
        ..
    } = collector;
    let functions = Nesting::new(functions);
    let assigned: Vec<bool> = (0..model.decls.len())
        .map(|d| model.uses_of(d).any(|r| r.write))
        .collect();
    let kind_of_decl = |d: usize| match model.decls[d].kind {
        DeclKind::Param | DeclKind::SelfParam => TokenKind::Parameter,
        DeclKind::LocalFunction => TokenKind::Function,
        _ if matches!(model.decls[d].value, Value::Function { .. }) => TokenKind::Function,
        _ => TokenKind::Variable,
    };
    let readonly = |d: usize| if assigned[d] { 0 } else { modifier::READONLY };
    for (d, decl) in model.decls.iter().enumerate() {
        if decl.kind == DeclKind::SelfParam {
            continue; // implicit: no token in the text
        }
        tokens.push(Token {
            range: decl.range.clone(),
            kind: kind_of_decl(d),
            modifiers: modifier::DECLARATION | readonly(d),
        });
    }
    for r in &model.refs {
        let write = if r.write { modifier::MODIFICATION } else { 0 };
        let (kind, modifiers) = match r.decl {
            Some(d) => {
                // A use is an upvalue when some function holds the use but not the declaration:
                // as bodies nest, that is when the innermost body holding the use does not hold
                // the declaration.
                let upvalue = functions
                    .innermost(r.range.start)
                    .is_some_and(|f| !f.contains(&model.decls[d].range.start));
                let upvalue = if upvalue { modifier::UPVALUE } else { 0 };
                (kind_of_decl(d), readonly(d) | write | upvalue)
            }
            None => match global_value(&r.name) {
                Value::Obj(_) => (
                    TokenKind::Variable,
                    modifier::DEFAULT_LIBRARY | modifier::READONLY | write,
                ),
                Value::Library(_) => (TokenKind::Namespace, modifier::DEFAULT_LIBRARY | write),
                Value::LibraryFunction(..) => {
                    (TokenKind::Function, modifier::DEFAULT_LIBRARY | write)
                }
                _ if super::library::is_provided_global(&r.name) => {
                    (TokenKind::Variable, modifier::DEFAULT_LIBRARY | write)
                }
                _ if global_functions.contains(r.name.as_str()) => {
                    (TokenKind::Function, modifier::GLOBAL | write)
                }
                _ => (TokenKind::Variable, modifier::GLOBAL | write),
            },
        };
        tokens.push(Token {
            range: r.range.clone(),
            kind,
            modifiers,
        });
    }
    tokens.sort_by_key(|t| (t.range.start, t.range.end));
    tokens.dedup_by(|b, a| b.range.start < a.range.end);
    tokens
}

/// Function bodies by nesting, to find the innermost one around an offset without a scan of
/// all of them per use (that scan made many functions times many uses quadratic).
struct Nesting {
    /// Sorted by start, an enclosing body before the bodies it holds.
    ranges: Vec<Range<usize>>,
    /// The index of the body around each body.
    parent: Vec<Option<usize>>,
}

impl Nesting {
    fn new(mut ranges: Vec<Range<usize>>) -> Nesting {
        ranges.sort_by_key(|r| (r.start, std::cmp::Reverse(r.end)));
        let mut parent = Vec::with_capacity(ranges.len());
        let mut open: Vec<usize> = Vec::new();
        for (i, range) in ranges.iter().enumerate() {
            while open.last().is_some_and(|&o| ranges[o].end <= range.start) {
                open.pop();
            }
            parent.push(open.last().copied());
            open.push(i);
        }
        Nesting { ranges, parent }
    }

    /// The innermost body holding `offset`: the last body starting at or before it, or the first
    /// of its enclosing bodies that reaches past it (climbs at most the nesting depth).
    fn innermost(&self, offset: usize) -> Option<&Range<usize>> {
        let after = self.ranges.partition_point(|r| r.start <= offset);
        let mut at = after.checked_sub(1);
        while let Some(i) = at {
            if self.ranges[i].contains(&offset) {
                return Some(&self.ranges[i]);
            }
            at = self.parent[i];
        }
        None
    }
}

struct Collector<'m> {
    model: &'m Model,
    /// Byte ranges of function bodies (for upvalues).
    functions: Vec<Range<usize>>,
    /// Globals the script assigns a function to.
    global_functions: HashSet<String>,
    tokens: Vec<Token>,
}

impl<'a> Visit<'a> for Collector<'_> {
    fn stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::FunctionDeclaration(declaration) => {
                let names = declaration.name().names();
                if names.len() == 1
                    && declaration.name().method_name().is_none()
                    && let Some(name) = names.iter().next()
                {
                    self.global_functions.insert(name.token().to_string());
                }
            }
            Stmt::Assignment(assignment) => {
                for (var, expr) in assignment
                    .variables()
                    .iter()
                    .zip(assignment.expressions().iter())
                {
                    if let (Var::Name(name), Expression::Function(_)) = (var, expr) {
                        self.global_functions.insert(name.token().to_string());
                    }
                }
            }
            _ => {}
        }
    }

    fn function(&mut self, body: &'a FunctionBody, enter: bool) {
        if enter && let Some(range) = node_range(body) {
            self.functions.push(range);
        }
    }

    fn chain(&mut self, chain: &Chain<'a>) {
        let mut value = self.model.prefix_value(chain.prefix);
        let last = chain.suffixes.len().saturating_sub(1);
        for (i, suffix) in chain.suffixes.iter().enumerate() {
            let Suffix::Index(index) = suffix else { break };
            let next = value.clone().index(super::semantic::index_seg(index));
            if let Index::Dot { name, .. } = index {
                let written = chain.write && i == last;
                let write = if written { modifier::MODIFICATION } else { 0 };
                let token = match (&value, &next) {
                    (Value::Obj(_), _) => Some((TokenKind::Property, write)),
                    (Value::Library(_), Value::LibraryFunction(..)) => {
                        Some((TokenKind::Function, modifier::DEFAULT_LIBRARY | write))
                    }
                    _ => None,
                };
                if let Some((kind, modifiers)) = token {
                    self.tokens.push(Token {
                        range: token_range(name),
                        kind,
                        modifiers,
                    });
                }
            }
            value = next;
            if value == Value::Unknown {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(text, kind, modifiers)` of every token.
    fn described(source: &str) -> Vec<(&str, TokenKind, u32)> {
        tokens(&ParsedScript::new(source))
            .into_iter()
            .map(|t| (&source[t.range], t.kind, t.modifiers))
            .collect()
    }

    #[test]
    fn obj_library_locals_parameters_upvalues_globals() {
        use TokenKind::*;
        use modifier::*;
        let source = "local spec = obj.data.spec\nlocal n = 0\nfunction helper(rule)\n  n = n + 1\n  spec.x = string.format('%d', rule)\nend\nhelper(obj.canaryWeight)\nreturn obj.data";
        let found = described(source);
        let expect = |text: &str, kind: TokenKind, modifiers: u32| {
            assert!(
                found.contains(&(text, kind, modifiers)),
                "{text} {kind:?} {modifiers:b} not in {found:?}"
            );
        };
        expect("spec", Variable, DECLARATION | READONLY);
        expect("obj", Variable, DEFAULT_LIBRARY | READONLY);
        expect("data", Property, 0);
        expect("n", Variable, DECLARATION);
        expect("n", Variable, MODIFICATION | UPVALUE);
        expect("n", Variable, UPVALUE);
        expect("helper", Function, GLOBAL | MODIFICATION);
        expect("helper", Function, GLOBAL);
        expect("rule", Parameter, DECLARATION | READONLY);
        expect("rule", Parameter, READONLY);
        expect("spec", Variable, READONLY | UPVALUE);
        expect("x", Property, MODIFICATION);
        expect("string", Namespace, DEFAULT_LIBRARY);
        expect("format", Function, DEFAULT_LIBRARY);
        expect("canaryWeight", Property, 0);
        // Sorted, no overlaps.
        let tokens = tokens(&ParsedScript::new(source));
        assert!(
            tokens
                .windows(2)
                .all(|w| w[0].range.end <= w[1].range.start)
        );
    }

    #[test]
    fn incomplete_code_still_highlights() {
        let found = described("local a = obj.\nlocal b = = a\n");
        assert!(
            found
                .iter()
                .any(|(t, k, _)| *t == "obj" && *k == TokenKind::Variable)
        );
    }

    proptest::proptest! {
        /// The innermost body found through the nesting is the one a scan of every body finds.
        #[test]
        fn innermost_body_is_the_smallest_holding_the_offset(
            spans in proptest::collection::vec((0usize..200, 1usize..60), 0..40),
            offset in 0usize..260,
        ) {
            // Properly nested bodies, as a parse gives them: keep each span that nests with or
            // is disjoint from every span kept before it.
            let mut bodies: Vec<Range<usize>> = Vec::new();
            for (start, len) in spans {
                let new = start..start + len;
                let nests = |old: &Range<usize>| {
                    new.end <= old.start || old.end <= new.start
                        || (old.start <= new.start && new.end <= old.end)
                        || (new.start <= old.start && old.end <= new.end)
                };
                if bodies.iter().all(|old| nests(old) && *old != new) {
                    bodies.push(new);
                }
            }
            let scanned = bodies
                .iter()
                .filter(|b| b.contains(&offset))
                .min_by_key(|b| b.end - b.start)
                .cloned();
            proptest::prop_assert_eq!(Nesting::new(bodies).innermost(offset).cloned(), scanned);
        }
    }
}
