//! Lexing a script as Lua 5.1, as far as it can be lexed: the tokens the parser, the shape
//! limits and the token-level features (folding, completion, signature help, suppression
//! comments) read.

use full_moon::LuaVersion;
use full_moon::tokenizer::{Lexer, LexerResult, Token};

/// The tokens of `source`, trivia (whitespace, comments) included, as far as it can be lexed.
pub fn tokens(source: &str) -> Vec<Token> {
    match Lexer::new(source, LuaVersion::lua51()).collect() {
        LexerResult::Ok(tokens) | LexerResult::Recovered(tokens, _) => tokens,
        LexerResult::Fatal(_) => Vec::new(),
    }
}
