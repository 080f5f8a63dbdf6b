//! Lexing a script as Lua 5.1, as far as it can be lexed: the tokens the parser, the shape
//! limits and the token-level features (folding, completion, signature help, suppression
//! comments) read.

use full_moon::LuaVersion;
use std::ops::Range;

use full_moon::tokenizer::{Lexer, LexerResult, Token, TokenType};

/// The tokens of `source`, trivia (whitespace, comments) included, as far as it can be lexed.
pub fn tokens(source: &str) -> Vec<Token> {
    match Lexer::new(source, LuaVersion::lua51()).collect() {
        LexerResult::Ok(tokens) | LexerResult::Recovered(tokens, _) => tokens,
        LexerResult::Fatal(_) => Vec::new(),
    }
}

/// The byte ranges of the comments of `source` (`--` and `--[[ ]]`), as far as it can be lexed.
pub fn comments(source: &str) -> Vec<Range<usize>> {
    tokens(source)
        .iter()
        .filter(|t| {
            matches!(
                t.token_type(),
                TokenType::SingleLineComment { .. } | TokenType::MultiLineComment { .. }
            )
        })
        .map(|t| t.start_position().bytes()..t.end_position().bytes())
        .collect()
}
