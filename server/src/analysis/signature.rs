//! Signature help: inside the parentheses of a call, the signature of the function called — a
//! library function Kruise provides (with gopher-lua's behaviour from [`super::library`]) or one
//! of the script's own (with its leading comment) — and which parameter the cursor is on.

use std::ops::Range;

use full_moon::tokenizer::{Symbol, Token, TokenType};

use super::hover::leading_comment;
use super::lex::tokens;
use super::library::{self, LibItem};
use super::navigation::{DocumentSymbol, SymbolKind, document_symbols};
use super::parsed_script::ParsedScript;
use super::semantic::{Value, global_value};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// `string.format(fmt, ...) -> string`, `helper(rule, weight)`.
    pub label: String,
    /// Markdown.
    pub documentation: Option<String>,
    /// Where each parameter sits in `label`.
    pub parameters: Vec<Range<usize>>,
    /// The parameter the cursor is on (the last one for the extra arguments of `...`).
    pub active_parameter: usize,
}

/// The signature of the call whose argument list holds `offset`.
pub fn signature_help(script: &ParsedScript, offset: usize) -> Option<Signature> {
    let source = script.source();
    let before: Vec<Token> = tokens(source)
        .filter(|t| !t.token_type().is_trivia() && t.end_position().bytes() <= offset)
        .collect();
    let (open, commas) = enclosing_call(&before)?;
    let (callee, method) = callee(&before[..open])?;
    let (label, documentation, skip) = resolve(script, &callee, method, offset)?;
    let parameters = parameter_ranges(&label);
    let skip = skip.min(parameters.len());
    let parameters: Vec<Range<usize>> = parameters[skip..].to_vec();
    let mut active = commas;
    if let Some(last) = parameters.last()
        && &label[last.clone()] == "..."
    {
        active = active.min(parameters.len() - 1);
    }
    Some(Signature {
        label,
        documentation,
        parameters,
        active_parameter: active,
    })
}

fn symbol(token: &Token) -> Option<Symbol> {
    match token.token_type() {
        TokenType::Symbol { symbol } => Some(*symbol),
        _ => None,
    }
}

fn identifier(token: &Token) -> Option<String> {
    match token.token_type() {
        TokenType::Identifier { identifier } => Some(identifier.to_string()),
        _ => None,
    }
}

/// The index of the unclosed `(` of the innermost call around the end of `before`, and the
/// commas between it and the cursor at its own depth.
fn enclosing_call(before: &[Token]) -> Option<(usize, usize)> {
    let mut depth = 0usize;
    let mut commas = 0;
    for (i, token) in before.iter().enumerate().rev() {
        match symbol(token) {
            Some(Symbol::RightParen | Symbol::RightBrace | Symbol::RightBracket) => depth += 1,
            Some(Symbol::LeftBrace | Symbol::LeftBracket) if depth == 0 => return None,
            Some(Symbol::LeftParen) if depth == 0 => return Some((i, commas)),
            Some(Symbol::LeftParen | Symbol::LeftBrace | Symbol::LeftBracket) => depth -= 1,
            Some(Symbol::Comma) if depth == 0 => commas += 1,
            // A statement boundary: the cursor is not inside a call.
            Some(
                Symbol::Do
                | Symbol::Then
                | Symbol::End
                | Symbol::Local
                | Symbol::Function
                | Symbol::Return,
            ) if depth == 0 => return None,
            _ => {}
        }
    }
    None
}

/// The called name before a `(`: `helper`, `string.format`, `M.f`, or `s:upper` (a method).
fn callee(before_paren: &[Token]) -> Option<(Vec<(String, usize)>, bool)> {
    let mut parts = Vec::new();
    let mut method = false;
    let mut i = before_paren.len();
    loop {
        let token = before_paren.get(i.checked_sub(1)?)?;
        parts.push((identifier(token)?, token.start_position().bytes()));
        i -= 1;
        match i.checked_sub(1).and_then(|j| symbol(&before_paren[j])) {
            Some(Symbol::Dot) => i -= 1,
            Some(Symbol::Colon) if parts.len() == 1 => {
                method = true;
                i -= 1;
            }
            _ => break,
        }
    }
    parts.reverse();
    Some((parts, method))
}

/// Label, documentation and how many leading parameters the call does not pass (`self`).
fn resolve(
    script: &ParsedScript,
    callee: &[(String, usize)],
    method: bool,
    offset: usize,
) -> Option<(String, Option<String>, usize)> {
    let model = script.model();
    let library_item = |item: &LibItem| (item.signature.to_string(), Some(item.doc.to_string()));
    let (_, first_at) = callee.first()?;
    let value = match model.symbol_at(*first_at) {
        Some((Some(d), ..)) => model.decls[d].value.clone(),
        Some((None, name, _)) => global_value(name),
        None => Value::Unknown,
    };
    match (callee.len(), &value) {
        (1, Value::LibraryFunction("", name)) => {
            let (label, doc) = library_item(library::global(name)?);
            return Some((label, doc, 0));
        }
        (2, Value::Library(lib)) => {
            let member = library::library(lib)?.member(&callee[1].0)?;
            let (label, doc) = library_item(member);
            return Some((label, doc, 0));
        }
        // `s:upper()`: strings have the string library as methods; `s` is the first argument.
        (2, _) if method => {
            if let Some(member) = library::STRING.member(&callee[1].0) {
                let (label, doc) = library_item(member);
                return Some((label, doc, 1));
            }
        }
        _ => {}
    }
    // The script's own functions: a local one, or a global / table field one from the outline.
    let separator = if method { ":" } else { "." };
    let name = callee
        .iter()
        .map(|(n, _)| n.as_str())
        .collect::<Vec<_>>()
        .join(separator);
    if callee.len() == 1
        && let Some(Value::Function { params, .. }) = Some(&value)
    {
        let declared = match model.symbol_at(*first_at) {
            Some((Some(d), ..)) => Some(model.decls[d].stmt_range.start),
            _ => None,
        };
        let doc = declared.and_then(|at| leading_comment(script.source(), at));
        return Some((format!("{name}({})", params.join(", ")), doc, 0));
    }
    let symbols = document_symbols(script);
    let found = find_function(&symbols, &name, offset)?;
    let params = found
        .detail
        .as_deref()?
        .strip_prefix("function")?
        .to_string();
    Some((
        format!("{name}{params}"),
        leading_comment(script.source(), found.range.start),
        0,
    ))
}

fn find_function<'s>(
    symbols: &'s [DocumentSymbol],
    name: &str,
    offset: usize,
) -> Option<&'s DocumentSymbol> {
    for symbol in symbols {
        if symbol.kind == SymbolKind::Function && symbol.name == name {
            return Some(symbol);
        }
        if symbol.range.start <= offset
            && offset <= symbol.range.end
            && let Some(found) = find_function(&symbol.children, name, offset)
        {
            return Some(found);
        }
    }
    None
}

/// The parameters of a signature label: the names between its first `(` and the matching `)`,
/// optional brackets dropped (`string.byte(s [, i [, j]])` has `s`, `i`, `j`).
fn parameter_ranges(label: &str) -> Vec<Range<usize>> {
    let Some(open) = label.find('(') else {
        return Vec::new();
    };
    let mut depth = 0;
    let mut close = label.len();
    for (i, c) in label[open..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    close = open + i;
                    break;
                }
            }
            _ => {}
        }
    }
    let mut ranges = Vec::new();
    let mut start: Option<usize> = None;
    for (i, c) in label[open + 1..close].char_indices() {
        let at = open + 1 + i;
        let part_of_name = c.is_alphanumeric() || c == '_' || c == '.';
        match (part_of_name, start) {
            (true, None) => start = Some(at),
            (false, Some(s)) => {
                ranges.push(s..at);
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        ranges.push(s..close);
    }
    ranges
}

#[cfg(test)]
mod tests {
    use super::*;

    fn help(source: &str) -> Signature {
        let offset = source.find('|').expect("cursor");
        let source = source.replacen('|', "", 1);
        signature_help(&ParsedScript::new(source), offset).expect("signature")
    }

    fn params(s: &Signature) -> Vec<&str> {
        s.parameters.iter().map(|r| &s.label[r.clone()]).collect()
    }

    #[test]
    fn library_functions_with_gopher_lua_docs() {
        let s = help("local x = string.format('%d %s', obj.canaryWeight, |)");
        assert!(s.label.starts_with("string.format(fmt, ...)"), "{s:?}");
        assert_eq!(params(&s), vec!["fmt", "..."]);
        assert_eq!(s.active_parameter, 1, "the extra arguments are all `...`");
        assert!(s.documentation.unwrap().contains("Go"));
        let s = help("local t = {}\ntable.insert(t, |");
        assert_eq!(s.active_parameter, 1);
        let s = help("local b = string.byte('abc', 1, |");
        assert_eq!(params(&s), vec!["s", "i", "j"]);
        assert_eq!(s.active_parameter, 2);
        let s = help("for i, v in ipairs(|");
        assert!(s.label.starts_with("ipairs("), "{s:?}");
        // Through `require` and a local alias, and as a string method.
        let s = help("local json = require('json')\nlocal t = json.decode(|");
        assert!(s.label.starts_with("json.decode("), "{s:?}");
        let s = help("local s = 'x'\nlocal u = s:rep(3, |");
        assert_eq!(params(&s).first(), Some(&"n"), "{s:?}");
    }

    #[test]
    fn the_scripts_own_functions() {
        let s = help(
            "-- Sets the weight of a route.\nlocal function set(route, weight)\nend\nset(r, {a = 1}, |)",
        );
        assert_eq!(s.label, "set(route, weight)");
        assert_eq!(params(&s), vec!["route", "weight"]);
        assert_eq!(s.active_parameter, 2, "past the last parameter");
        assert_eq!(
            s.documentation.as_deref(),
            Some("Sets the weight of a route.")
        );
        let s = help("local M = {}\nfunction M.helper(a, b) end\nM.helper(f(1, 2), |)");
        assert_eq!(s.label, "M.helper(a, b)");
        assert_eq!(s.active_parameter, 1, "commas of inner calls do not count");
        let s = help("function g(x) end\ng(|");
        assert_eq!(s.label, "g(x)");
        assert_eq!(s.active_parameter, 0);
    }

    #[test]
    fn outside_a_call_nothing() {
        let source = "local x = f(1)\nlocal y = ";
        assert_eq!(
            signature_help(&ParsedScript::new(source), source.len()),
            None
        );
        assert_eq!(
            signature_help(&ParsedScript::new("local t = {a = f("), 17).map(|s| s.label),
            None
        );
    }
}
