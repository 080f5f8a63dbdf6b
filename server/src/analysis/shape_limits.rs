//! Shapes of valid Lua that the analysis or the formatter refuse, found by one scan of the
//! tokens before either parses: the longest run of binary operators in one expression, and the
//! longest chain of indexes and calls (`obj.a.a…`, `f()()…`), and the number of tokens.
//!
//! Why: Lua 5.1's compiler (and gopher-lua's) folds `1 + 1 + …` left to right, so a chain of
//! 200,000 terms compiles, but full_moon nests it as 200,000 binary-operator nodes, and its
//! parser, every walk over the AST and the AST's drop recurse once per node: the language
//! server overflowed its stack and aborted. StyLua lays a chain of 500,000 calls out in memory
//! quadratic in its length (it aborted on a failed 140 MB allocation). Real scripts stay far
//! below both bounds.
//!
//! The token count bounds memory (issue 22): full_moon keeps every token with its trivia and
//! position, 300–1,000 bytes per token once in the tree, so a dense file just under the byte cap
//! (100,000 `elseif a then` lines, 66,000 short `local`s) took 0.7–1.3 GB per request. Bounded
//! by tokens, a tree stays near [`MAX_ANALYSED_TOKENS`] × that, whatever the bytes.

use full_moon::LuaVersion;
use full_moon::tokenizer::{Lexer, LexerResult, Symbol, TokenType};

/// Binary operators in a row past which a file is not analysed (it may still run).
pub const MAX_OPERATOR_CHAIN: usize = 500;
/// Indexes and calls in one chain past which a file is not analysed or formatted.
pub const MAX_SUFFIX_CHAIN: usize = 1000;
/// Tokens (names, keywords, literals, symbols; not whitespace or comments) past which a file is
/// not analysed or formatted: about 13,000 lines of ordinary Lua (the 2,000-line benchmark
/// script has about 15,000), where Kruise's scripts have a few thousand.
pub const MAX_ANALYSED_TOKENS: usize = 100_000;

/// The longest runs in one scan.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Runs {
    /// Binary operators in a row within one expression (at one bracket level).
    pub operators: usize,
    /// Indexes and calls in a row after one name or bracket.
    pub suffixes: usize,
    /// The byte offsets where the longest operator run and suffix chain end.
    pub operators_at: usize,
    pub suffixes_at: usize,
    /// Tokens other than trivia, and where the one past [`MAX_ANALYSED_TOKENS`] starts.
    pub tokens: usize,
    pub tokens_over_at: usize,
}

fn binary(symbol: Symbol) -> bool {
    matches!(
        symbol,
        Symbol::Plus
            | Symbol::Minus
            | Symbol::Star
            | Symbol::Slash
            | Symbol::Percent
            | Symbol::Caret
            | Symbol::TwoDots
            | Symbol::TwoEqual
            | Symbol::TildeEqual
            | Symbol::LessThan
            | Symbol::LessThanEqual
            | Symbol::GreaterThan
            | Symbol::GreaterThanEqual
            | Symbol::And
            | Symbol::Or
    )
}

/// Whether a token of this type ends a primary expression, so that `(`, `[`, `.`, `:`, a
/// string or a table after it continues a chain.
fn ends_primary(token: &TokenType) -> bool {
    match token {
        TokenType::Identifier { .. } | TokenType::StringLiteral { .. } => true,
        TokenType::Symbol { symbol } => matches!(
            symbol,
            Symbol::RightParen | Symbol::RightBracket | Symbol::RightBrace
        ),
        _ => false,
    }
}

/// The longest operator run and suffix chain of `source` (as far as it lexes).
pub fn runs(source: &str) -> Runs {
    let mut longest = Runs::default();
    // Per open bracket: the operator run and the suffix chain of the enclosing expression,
    // resumed when the bracket closes.
    let mut outer: Vec<(usize, usize)> = Vec::new();
    let (mut operators, mut suffixes) = (0usize, 0usize);
    let mut previous: Option<TokenType> = None;
    // One token at a time: collecting them all first (trivia included) cost 100 bytes a token
    // on top of the parse this scan guards.
    let mut lexer = Lexer::new(source, LuaVersion::lua51());
    while let Some(next) = lexer.consume() {
        let token = match &next {
            LexerResult::Ok(token) | LexerResult::Recovered(token, _) => token.token(),
            LexerResult::Fatal(_) => continue,
        };
        let kind = token.token_type();
        if kind.is_trivia() {
            continue;
        }
        if !matches!(kind, TokenType::Eof) {
            longest.tokens += 1;
            if longest.tokens == MAX_ANALYSED_TOKENS + 1 {
                longest.tokens_over_at = token.start_position().bytes();
            }
        }
        let continues = previous.as_ref().is_some_and(ends_primary);
        match kind {
            TokenType::Symbol { symbol } if binary(*symbol) => {
                operators += 1;
                suffixes = 0;
            }
            TokenType::Symbol {
                symbol: Symbol::LeftParen | Symbol::LeftBracket | Symbol::LeftBrace,
            } => {
                if continues {
                    suffixes += 1;
                }
                outer.push((operators, suffixes));
                (operators, suffixes) = (0, 0);
            }
            TokenType::Symbol {
                symbol: Symbol::RightParen | Symbol::RightBracket | Symbol::RightBrace,
            } => {
                (operators, suffixes) = outer.pop().unwrap_or_default();
            }
            TokenType::Symbol {
                symbol: Symbol::Dot | Symbol::Colon,
            } => suffixes += 1,
            TokenType::StringLiteral { .. } if continues => suffixes += 1,
            // A name after `.` or `:` is part of the chain; any other starts a new one.
            TokenType::Identifier { .. } => {
                let indexed = matches!(
                    previous,
                    Some(TokenType::Symbol {
                        symbol: Symbol::Dot | Symbol::Colon
                    })
                );
                if !indexed {
                    suffixes = 0;
                }
            }
            TokenType::StringLiteral { .. } | TokenType::Number { .. } => suffixes = 0,
            TokenType::Symbol {
                symbol: Symbol::Not | Symbol::Hash,
            } => suffixes = 0,
            // Keywords and separators end an expression.
            _ => (operators, suffixes) = (0, 0),
        }
        if operators > longest.operators {
            longest.operators = operators;
            longest.operators_at = token.end_position().bytes();
        }
        if suffixes > longest.suffixes {
            longest.suffixes = suffixes;
            longest.suffixes_at = token.end_position().bytes();
        }
        previous = Some(kind.clone());
    }
    longest
}

/// Why `source` is not analysed (nor formatted), if it is not. full_moon holds a chain's
/// suffixes in one vector of large nodes: 500,000 calls asked for one 140 MB block, and a failed
/// allocation aborts the process.
pub fn analysis_refusal(runs: &Runs) -> Option<String> {
    if runs.operators > MAX_OPERATOR_CHAIN {
        return Some(format!(
            "too deeply nested to analyse: an expression chains {} binary operators (the analysis stops at {MAX_OPERATOR_CHAIN}; the script may still run)",
            runs.operators
        ));
    }
    if runs.suffixes > MAX_SUFFIX_CHAIN {
        return Some(format!(
            "too long to analyse: a chain of {} indexes and calls is over the {MAX_SUFFIX_CHAIN} the analysis takes (the script may still run)",
            runs.suffixes
        ));
    }
    (runs.tokens > MAX_ANALYSED_TOKENS).then(|| {
        format!(
            "too large to analyse: {} tokens, over the {MAX_ANALYSED_TOKENS} the analysis takes (the script may still run)",
            runs.tokens
        )
    })
}

/// Where the shape `analysis_refusal` names is: the end of the operator run or the chain, or
/// the first token past the token limit.
pub fn refusal_at(runs: &Runs) -> usize {
    if runs.operators > MAX_OPERATOR_CHAIN {
        runs.operators_at
    } else if runs.suffixes > MAX_SUFFIX_CHAIN {
        runs.suffixes_at
    } else {
        runs.tokens_over_at
    }
}

/// Why `source` is not formatted, if it is not.
pub fn formatting_refusal(source: &str) -> Option<String> {
    analysis_refusal(&runs(source))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_operator_runs_per_expression() {
        assert_eq!(runs("local x = 1 + 2 * 3 - 4").operators, 3);
        // Brackets hold their own expressions; the outer run resumes after them.
        assert_eq!(runs("x = (1 + 2 + 3) + 4").operators, 2);
        assert_eq!(runs("x = 1 + 1\ny = 2 + 2").operators, 1);
        assert_eq!(runs("if a and b then c = d or e end").operators, 1);
    }

    #[test]
    fn counts_suffix_chains() {
        assert_eq!(runs("local s = obj.a.a.a").suffixes, 3);
        assert_eq!(runs("f()()()").suffixes, 3);
        assert_eq!(runs("s:upper():lower() t[1][2] g 'x' {}").suffixes, 4);
        assert_eq!(runs("local t = {a = 1}").suffixes, 0);
    }

    #[test]
    fn long_shapes_are_refused_with_their_size() {
        let chain = format!("local x = 1{}\n", " + 1".repeat(MAX_OPERATOR_CHAIN + 1));
        let why = analysis_refusal(&runs(&chain)).unwrap();
        assert!(why.contains("chains 501 binary operators"), "{why}");
        let calls = format!("f{}\n", "()".repeat(MAX_SUFFIX_CHAIN + 1));
        let why = formatting_refusal(&calls).unwrap();
        assert!(why.contains("1001 indexes and calls"), "{why}");
        assert!(analysis_refusal(&runs(&calls)).is_some());
        assert!(formatting_refusal("local x = obj.data.spec\n").is_none());
    }

    #[test]
    fn too_many_tokens_are_refused_where_the_limit_is_passed() {
        // `x = 1` is three tokens a line.
        let lines = MAX_ANALYSED_TOKENS / 3;
        let under = "x = 1\n".repeat(lines);
        let found = runs(&under);
        assert_eq!(found.tokens, lines * 3);
        assert!(analysis_refusal(&found).is_none());
        let over = "x = 1\n".repeat(lines + 1);
        let found = runs(&over);
        let why = analysis_refusal(&found).unwrap();
        assert!(why.starts_with("too large to analyse"), "{why}");
        assert!(
            why.contains(&format!("{} tokens", (lines + 1) * 3)),
            "{why}"
        );
        // Token 100,000 is the last line's `x`; the one past the limit its `=`.
        assert_eq!(refusal_at(&found), under.len() + 2);
    }
}
