//! Parsing Lua 5.1 as gopher-lua accepts it: a best-effort AST plus every syntax error.
//!
//! full_moon is always asked for plain Lua 5.1 ([`LuaVersion::lua51`]), so `goto`, labels, `//`,
//! bit operators and `<const>` are syntax errors, as they are for Kruise. Two differences from
//! full_moon's Lua 5.1 are corrected here:
//! * gopher-lua accepts empty statements (stray `;`, `;;`), which PUC Lua 5.1 and full_moon
//!   reject; such semicolons are blanked out before parsing (offsets unchanged).
//! * full_moon reports one mistake several times at the same spot; duplicates are dropped.

use std::ops::Range;

use full_moon::ast::Ast;
use full_moon::tokenizer::{
    Symbol, Token, TokenKind, TokenReference, TokenType, TokenizerErrorType,
};
use full_moon::{Error, LuaVersion};

use super::lex::tokens;
use super::shape_limits;

/// One syntax error: byte range in the source and a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub range: Range<usize>,
    pub message: String,
}

/// A parsed chunk: the AST (possibly partial when there are errors) and its syntax errors.
pub struct Parsed {
    pub ast: Ast,
    pub errors: Vec<SyntaxError>,
}

/// Nesting beyond this cannot compile: it is Lua 5.1's `LUAI_MAXCCALLS`, the limit of C levels
/// of the compiler the engine runs ("chunk has too many syntax levels").
const MAX_NESTING: usize = 200;

/// Parses `source` as gopher-lua's Lua 5.1. Never fails: with errors, the AST holds whatever
/// full_moon could recover. A chunk nested too deeply to compile is not handed to full_moon,
/// whose parser (and our walks over its AST) recurse once per level and would overflow the
/// stack: its one error is the compiler's. The errors are one per problem (see
/// [`one_per_problem`]), and a chunk full_moon accepts but the compiler rejects (a limit such as
/// 200 locals, see [`is_limit_error`]) gets the compiler's error, so the analysis alone says everything about syntax.
pub fn parse(source: &str) -> Parsed {
    let compiled = kruise_lua_engine::vm::compile(source.as_bytes()).err();
    if let Some(error) = compiled.as_ref().and_then(|e| too_deep(source, e)) {
        return Parsed {
            ast: full_moon::parse_fallible("", LuaVersion::lua51()).into_ast(),
            errors: vec![error],
        };
    }
    let runs = shape_limits::runs(source);
    if let Some(message) = shape_limits::analysis_refusal(&runs) {
        let at = shape_limits::refusal_at(&runs);
        let line = source[..at.min(source.len())].matches('\n').count() + 1;
        return Parsed {
            ast: full_moon::parse_fallible("", LuaVersion::lua51()).into_ast(),
            errors: vec![SyntaxError {
                range: line_span(source, line),
                message,
            }],
        };
    }
    let mut parsed = parse_with_full_moon(source);
    if let Some(error) = &compiled {
        let line = error.line.unwrap_or(1).max(1) as usize;
        if parsed.errors.is_empty() {
            if is_limit_error(&error.message) {
                parsed.errors.push(SyntaxError {
                    range: line_span(source, line),
                    message: without_chunk_position(&error.message),
                });
            }
        } else {
            parsed.errors = one_per_problem(source, std::mem::take(&mut parsed.errors), line);
        }
    }
    parsed
}

fn parse_with_full_moon(source: &str) -> Parsed {
    let result = full_moon::parse_fallible(source, LuaVersion::lua51());
    // Only a failed parse can be about empty statements; lexing again costs time otherwise.
    if result.errors().is_empty() || !source.contains(';') {
        return finish(source, result);
    }
    let stray = stray_semicolons(&significant_tokens(source).collect::<Vec<_>>());
    if stray.is_empty() {
        return finish(source, result);
    }
    let mut bytes = source.as_bytes().to_vec();
    for at in stray {
        bytes[at] = b' ';
    }
    // Replacing one ASCII byte with another keeps the text valid UTF-8.
    let blanked = String::from_utf8(bytes).expect("ASCII replacement keeps UTF-8");
    finish(
        &blanked,
        full_moon::parse_fallible(&blanked, LuaVersion::lua51()),
    )
}

/// full_moon's recovery reports one mistake several times: `local x = = 1` is "expected an
/// expression" and then "unexpected token" on the `1`; `7 // 2` is one error per `/`; a label
/// `::x::` one per `::` plus "expected `end`" on the loop around it. Kept: one error per line
/// (the one naming newer Lua syntax when there is one, else the first), and an unclosed block
/// (reported at its opener) only when no error inside it is where the compiler — which stops at
/// the first real error, on `compiler_line` (1-based) — stopped or before.
fn one_per_problem(
    source: &str,
    errors: Vec<SyntaxError>,
    compiler_line: usize,
) -> Vec<SyntaxError> {
    let line_of = |offset: usize| source[..offset.min(source.len())].matches('\n').count() + 1;
    let mut kept: Vec<(usize, SyntaxError)> = Vec::with_capacity(errors.len());
    for error in errors {
        let line = line_of(error.range.start);
        match kept.last_mut() {
            Some((last, first)) if *last == line => {
                if !first.message.ends_with(NEWER_SYNTAX) && error.message.ends_with(NEWER_SYNTAX) {
                    *first = error;
                }
            }
            _ => kept.push((line, error)),
        }
    }
    let lines: Vec<usize> = kept.iter().map(|(line, _)| *line).collect();
    let mut index = 0;
    kept.retain(|(line, error)| {
        index += 1;
        let unclosed = error.message.starts_with("expected `end`");
        let inner_first = lines[index..]
            .iter()
            .any(|l| *l > *line && *l <= compiler_line);
        !(unclosed && inner_first)
    });
    kept.into_iter().map(|(_, error)| error).collect()
}

/// Compiler errors about Lua 5.1's limits (lparser.c: 200 locals, 60 upvalues, "function or
/// expression too complex", ...), which a parser of the grammar alone cannot see.
fn is_limit_error(message: &str) -> bool {
    ["too many", "overflow", "has more than", "too complex"]
        .iter()
        .any(|m| message.contains(m))
}

/// The byte range of 1-based `line` (clamped to the source).
fn line_span(source: &str, line: usize) -> Range<usize> {
    let start = if line <= 1 {
        0
    } else {
        source
            .match_indices('\n')
            .nth(line - 2)
            .map_or(source.len(), |(i, _)| i + 1)
    };
    let end = source[start..]
        .find('\n')
        .map_or(source.len(), |i| start + i);
    start..end
}

/// The compiler's message without its leading `<chunk>:LINE:`, which reports give anyway.
fn without_chunk_position(message: &str) -> String {
    match message.split_once(": ") {
        Some((place, rest)) if place.contains(':') => rest.to_string(),
        _ => message.to_string(),
    }
}

/// The compiler's error for a chunk too deep to parse safely, given the compiler's verdict. A
/// chunk the engine's compiler accepts is nested at most [`MAX_NESTING`] levels in every
/// construct; one it rejects for another reason is measured by [`nesting`].
fn too_deep(source: &str, error: &kruise_lua_engine::error::ScriptError) -> Option<SyntaxError> {
    let deep = error.message.contains("syntax levels") || error.message.contains("C levels");
    if !deep && nesting(source) <= MAX_NESTING {
        return None;
    }
    let line = error.line.unwrap_or(1).max(1) as usize;
    let message = without_chunk_position(&error.message);
    let message = if deep {
        message
    } else {
        format!("{message} (and nested more than {MAX_NESTING} levels deep)")
    };
    Some(SyntaxError {
        range: line_span(source, line),
        message,
    })
}

/// An upper bound of how deeply the parser must recurse: open brackets and blocks, plus runs
/// of unary operators and chains of right-associative `..`/`^` at that point.
fn nesting(source: &str) -> usize {
    let (mut depth, mut unary, mut chain, mut deepest) = (0usize, 0usize, 0usize, 0usize);
    for token in significant_tokens(source) {
        let symbol = match token.token_type() {
            TokenType::Symbol { symbol } => Some(*symbol),
            _ => None,
        };
        match symbol {
            Some(Symbol::Minus | Symbol::Not | Symbol::Hash) => unary += 1,
            _ => unary = 0,
        }
        match symbol {
            Some(
                Symbol::LeftParen
                | Symbol::LeftBrace
                | Symbol::LeftBracket
                | Symbol::Function
                | Symbol::Do
                | Symbol::Then
                | Symbol::Repeat,
            ) => {
                depth += 1;
                chain = 0;
            }
            Some(
                Symbol::RightParen
                | Symbol::RightBrace
                | Symbol::RightBracket
                | Symbol::End
                | Symbol::Until
                | Symbol::ElseIf,
            ) => {
                depth = depth.saturating_sub(1);
                chain = 0;
            }
            Some(Symbol::TwoDots | Symbol::Caret) => chain += 1,
            Some(
                Symbol::Comma | Symbol::Semicolon | Symbol::Equal | Symbol::Local | Symbol::Return,
            ) => chain = 0,
            _ => {}
        }
        deepest = deepest.max(depth + unary + chain);
    }
    deepest
}

fn finish(text: &str, result: full_moon::ast::AstResult) -> Parsed {
    let errors = collect_errors(text, result.errors());
    Parsed {
        ast: result.into_ast(),
        errors,
    }
}

/// The non-trivia tokens of `source` (no whitespace or comments).
fn significant_tokens(source: &str) -> impl Iterator<Item = Token> + use<> {
    tokens(source).filter(|t| !t.token_type().is_trivia() && t.token_kind() != TokenKind::Eof)
}

/// Offsets of the `;` that are empty statements: a `;` where a statement could start (at the
/// start of a block, or after another `;`). PUC Lua 5.1 and full_moon reject those; gopher-lua
/// accepts them.
fn stray_semicolons(tokens: &[Token]) -> Vec<usize> {
    let mut stray = Vec::new();
    // Set while inside `function name(` ... `)`: the `)` closing it starts the body.
    let mut params_depth: Option<usize> = None;
    let mut paren_depth = 0usize;
    let mut block_starts = true; // the start of the chunk
    for token in tokens {
        let TokenType::Symbol { symbol } = token.token_type() else {
            block_starts = false;
            continue;
        };
        let mut starts_block = false;
        match symbol {
            Symbol::Semicolon if block_starts => {
                stray.push(token.start_position().bytes());
                starts_block = true;
            }
            Symbol::Semicolon => starts_block = true,
            Symbol::Do | Symbol::Then | Symbol::Else | Symbol::Repeat => starts_block = true,
            Symbol::Function => params_depth = Some(paren_depth),
            Symbol::LeftParen => paren_depth += 1,
            Symbol::RightParen => {
                paren_depth = paren_depth.saturating_sub(1);
                if params_depth == Some(paren_depth) {
                    params_depth = None;
                    starts_block = true;
                }
            }
            _ => {}
        }
        block_starts = starts_block;
    }
    stray
}

fn collect_errors(source: &str, errors: &[Error]) -> Vec<SyntaxError> {
    let mut out: Vec<SyntaxError> = Vec::with_capacity(errors.len());
    for error in errors {
        let (start, end) = error.range();
        let start = start.bytes().min(source.len());
        let end = end.bytes().clamp(start, source.len());
        let message = match error {
            // The tokenizer's own Display appends a line:column range; the range is ours.
            Error::TokenizerError(e) => match e.error() {
                TokenizerErrorType::UnclosedString => "unfinished string".to_string(),
                TokenizerErrorType::UnclosedComment => "unfinished long comment".to_string(),
                TokenizerErrorType::InvalidNumber => "malformed number".to_string(),
                TokenizerErrorType::UnexpectedToken(c) => {
                    format!("unexpected symbol `{c}` (not valid in Lua 5.1)")
                }
                TokenizerErrorType::InvalidSymbol(s) => {
                    format!("unexpected symbol `{s}` (not valid in Lua 5.1)")
                }
            },
            Error::AstError(e) => e.error_message().to_string(),
        };
        let range = start..end;
        // One mistake often yields several messages at one spot; the first is the clearest.
        if out.iter().any(|e| e.range == range) {
            continue;
        }
        out.push(SyntaxError {
            message: explain_newer_syntax(source, &range).unwrap_or(message),
            range,
        });
    }
    out.sort_by_key(|e| (e.range.start, e.range.end));
    out
}

/// How messages about syntax of later Lua versions end.
const NEWER_SYNTAX: &str = " is not supported: Kruise runs Lua 5.1 (gopher-lua)";

/// A clearer message when the error sits on syntax that exists only in newer Lua versions.
fn explain_newer_syntax(source: &str, range: &Range<usize>) -> Option<String> {
    let at = source.get(range.start..)?;
    let before = source.get(..range.start)?.trim_end();
    let what = if at.starts_with("//") {
        "`//` (floor division, Lua 5.3)"
    } else if at.starts_with("<<") || at.starts_with(">>") {
        "bit shifts (Lua 5.3)"
    } else if (at.starts_with('&') || at.starts_with('|') || at.starts_with('~'))
        && !at.starts_with("~=")
    {
        "bit operators (Lua 5.3)"
    } else if at.starts_with("::") || before.ends_with("::") {
        "labels (Lua 5.2)"
    } else if at.starts_with("/") && before.ends_with('/') {
        "`//` (floor division, Lua 5.3)"
    } else if before.ends_with("goto") || at.starts_with("goto") {
        "`goto` (Lua 5.2)"
    } else if at.starts_with('<') && before.ends_with(|c: char| c.is_alphanumeric() || c == '_') {
        "variable attributes (Lua 5.4)"
    } else {
        return None;
    };
    Some(format!("{what}{NEWER_SYNTAX}"))
}

/// Byte range of a token, without its surrounding trivia.
pub fn token_range(token: &TokenReference) -> Range<usize> {
    let start = token.token().start_position().bytes();
    let end = token.token().end_position().bytes();
    start..end.max(start)
}

/// Byte range of any AST node, without leading/trailing trivia; `None` for synthesized nodes.
pub fn node_range(node: &impl full_moon::node::Node) -> Option<Range<usize>> {
    let (start, end) = node.range()?;
    let (start, end) = (start.bytes(), end.bytes());
    (end >= start).then_some(start..end)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `f` on a thread with the default 2 MiB stack (rayon's and tokio's blocking
    /// threads have no more), where unbounded recursion would abort the process.
    fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(f)
            .unwrap()
            .join()
            .unwrap()
    }

    #[test]
    fn nesting_too_deep_to_compile_is_one_error_without_parsing() {
        for deep in [
            format!(
                "local x = {}1{}\nreturn {{}}\n",
                "(".repeat(20_000),
                ")".repeat(20_000)
            ),
            format!(
                "local x = {}1{}\nreturn {{}}\n",
                "{".repeat(20_000),
                "}".repeat(20_000)
            ),
            format!("local x = {}1\nreturn {{}}\n", "- ".repeat(20_000)),
            format!("local x = 1{}\nreturn {{}}\n", " .. 1".repeat(20_000)),
            // A syntax error before the deep part: the compiler stops there.
            format!(
                "local = 1\nlocal x = {}1{}\n",
                "(".repeat(20_000),
                ")".repeat(20_000)
            ),
        ] {
            let errors = on_small_stack(move || parse(&deep).errors);
            assert_eq!(errors.len(), 1, "{errors:?}");
            assert!(errors[0].range.start < 20, "{errors:?}");
        }
        // Nesting the compiler accepts is parsed as usual (full_moon needs more than 2 MiB of
        // stack for it in a debug build, hence the analysis threads' big stacks).
        let fine = format!(
            "local x = {}1{}\nreturn {{}}\n",
            "(".repeat(150),
            ")".repeat(150)
        );
        let errors = std::thread::Builder::new()
            .stack_size(64 << 20)
            .spawn(move || parse(&fine).errors)
            .unwrap()
            .join()
            .unwrap();
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(nesting("local t = {a = {b = (1)}} .. x"), 3);
        assert_eq!(nesting("return - - x .. y .. z"), 2);
    }

    fn errors(source: &str) -> Vec<(Range<usize>, String)> {
        parse(source)
            .errors
            .into_iter()
            .map(|e| (e.range, e.message))
            .collect()
    }

    fn error_texts(source: &str) -> Vec<&str> {
        parse(source)
            .errors
            .into_iter()
            .map(|e| &source[e.range])
            .collect()
    }

    #[test]
    fn valid_lua51_has_no_errors() {
        let source = "local t = {a = 1, [2] = 'x'; 3}\nfor i = 1, #t do t[i] = i end\n\
                      local function f(...) return select('#', ...) end\n\
                      while false do break end\nrepeat local x = 1 until x == 1\n\
                      local s = [==[long]==] .. 'a\\\nb' .. \"\\x41\"\nreturn {spec = t}";
        assert_eq!(errors(source), vec![]);
    }

    #[test]
    fn empty_statements_are_accepted_like_gopher_lua() {
        assert_eq!(errors(";;local x = 1;; ; return {spec = x};"), vec![]);
        assert_eq!(
            errors(
                "do ; end if true then ; else ; end repeat ; until true\n\
                    local function f(a) ; return a end local t = {1; 2} return t"
            ),
            vec![]
        );
        // A `;` as a table separator or after a statement is untouched.
        assert!(!errors("local t = {;}").is_empty());
    }

    #[test]
    fn lua52_and_later_syntax_is_rejected() {
        for (source, bad) in [
            ("return {spec = {x = 1 & 2}}", "&"),
            ("local a = 1 ~ 2", "~"),
            ("return {spec = {x = 7 // 2}}", "/"),
            ("local a = 1 >> 2", ">"),
            ("local a = ~1", "~"),
            ("local a = 1 | 2", "|"),
            ("local x <const> = 1", "<"),
        ] {
            let found = parse(source).errors;
            assert!(
                found
                    .iter()
                    .any(|e| &source[e.range.clone()] == bad && e.message.contains("Lua 5.1")),
                "{source}: {found:?}"
            );
        }
        // goto and labels: one error each, the first on the goto statement.
        let source = "local x = 0; goto skip; x = 1\n::skip:: return {spec = {x = x}}";
        let found = parse(source).errors;
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(&source[found[0].range.clone()], "skip");
        assert!(found[0].message.contains("goto"), "{found:?}");
        assert!(
            found.iter().any(|e| e.message.contains("labels")),
            "{found:?}"
        );
    }

    #[test]
    fn one_error_per_problem() {
        // Each of these was reported two or three times by full_moon's recovery.
        for (source, at, says) in [
            (
                "local x = = 1\nreturn obj.data\n",
                "=",
                "expected an expression",
            ),
            ("local y = 7 // 2\nreturn obj.data\n", "/", "floor division"),
            (
                "local t = {}\nfor _, v in ipairs(t) do\n  ::continue::\nend\nreturn obj.data\n",
                ":",
                "labels",
            ),
        ] {
            let found = parse(source).errors;
            assert_eq!(found.len(), 1, "{source}: {found:?}");
            assert_eq!(&source[found[0].range.clone()], at, "{source}: {found:?}");
            assert!(found[0].message.contains(says), "{source}: {found:?}");
        }
        // goto and its label are two problems on two lines, with no follow-ons.
        let source = "for i = 1, 3 do\n  if i == 2 then goto continue end\n  print(i)\n  ::continue::\nend\nreturn obj.data\n";
        let found = parse(source).errors;
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].message.contains("goto") && found[1].message.contains("labels"));
        // A missing `end` is still reported where full_moon finds it.
        let found = parse("for i = 1, 2 do\n  print(i)\nreturn obj.data\n").errors;
        assert_eq!(found.len(), 1, "{found:?}");
    }

    #[test]
    fn compiler_limits_full_moon_misses_are_reported() {
        // Lua 5.1 allows 200 locals per function (LUAI_MAXVARS, lparser.c); full_moon has no limit.
        let mut source = String::new();
        for i in 0..201 {
            source.push_str(&format!("local v{i} = {i}\n"));
        }
        source.push_str("return obj.data\n");
        let found = parse(&source).errors;
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].message.contains("local variables"), "{found:?}");
        assert!(!found[0].message.starts_with('<'), "{found:?}");
    }

    #[test]
    fn z_escape_breaks_the_string_as_in_gopher_lua() {
        // `\z` is a plain `z` in Lua 5.1, so the newline after it ends the string too early.
        let source = "return {spec = {a = 'a\\z\n   b'}}";
        let found = parse(source).errors;
        assert_eq!(found[0].range, 20..25);
        assert_eq!(found[0].message, "unfinished string");
    }

    #[test]
    fn several_errors_with_exact_ranges() {
        let source = "local x = 1\nlocal y = = 2\nlocal z = 3\nlocal w = ) 4\nreturn z";
        assert_eq!(
            errors(source),
            // One per mistake: not also "unexpected token" on the `2` and the `4`.
            vec![
                (20..21, "expected an expression".to_string()),
                (46..47, "expected an expression".to_string()),
            ]
        );
        // Recovery keeps the statements around the errors.
        let parsed = parse(source);
        assert_eq!(parsed.ast.nodes().stmts().count(), 4);
    }

    #[test]
    fn missing_end_and_unfinished_string() {
        let source = "if true then return {spec = {}}";
        assert_eq!(
            errors(source),
            vec![(31..31, "expected `end` to conclude `if`".to_string())]
        );
        let source = "return {spec = {x = 'abc}}";
        let found = parse(source).errors;
        assert_eq!(found[0].range, 20..26);
        assert_eq!(found[0].message, "unfinished string");
    }

    #[test]
    fn statement_after_return_is_an_error() {
        let source = "return {}\nx = 1";
        assert_eq!(error_texts(source), vec!["x"]);
    }

    #[test]
    fn conformance_syntax_vectors_all_fail() {
        let dir = crate::analysis::conformance_vectors();
        let entries = std::fs::read_dir(dir).expect("shared/conformance beside the worktree");
        let mut checked = 0;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            let Some(stem) = name.strip_suffix(".lua") else {
                continue;
            };
            let source = std::fs::read_to_string(entry.path()).unwrap();
            let expected =
                std::fs::read_to_string(dir.join(format!("{stem}.expected.json"))).unwrap();
            let is_syntax = expected.contains("\"error_kind\": \"syntax\"");
            let found = parse(&source).errors;
            assert_eq!(!found.is_empty(), is_syntax, "{stem}: {found:?}");
            checked += 1;
        }
        assert!(checked > 200, "only {checked} vectors");
    }
}
