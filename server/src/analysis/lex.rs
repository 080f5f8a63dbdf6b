//! Lexing a script as Lua 5.1, as far as it can be lexed: the tokens the parser, the shape
//! limits and the token-level features (folding, completion, signature help, suppression
//! comments) read.

use full_moon::LuaVersion;
use std::ops::Range;

use full_moon::tokenizer::{Lexer, LexerResult, Token, TokenType};

/// The tokens of `source`, trivia (whitespace, comments) included, as far as it can be lexed,
/// one at a time: the features that read them keep few, and a dense script's whole list is
/// hundreds of bytes a token (38 MB for a 430 KiB script, once per request that read it).
pub fn tokens(source: &str) -> impl Iterator<Item = Token> + use<> {
    let mut lexer = Lexer::new(source, LuaVersion::lua51());
    // As full_moon's `Lexer::collect`: every token of a reference, trivia around it, and
    // nothing of a reference it could not lex.
    std::iter::from_fn(move || lexer.consume())
        .filter_map(|result| match result {
            LexerResult::Ok(reference) | LexerResult::Recovered(reference, _) => Some(reference),
            LexerResult::Fatal(_) => None,
        })
        .flat_map(|reference| {
            let mut all: Vec<Token> = reference.leading_trivia().cloned().collect();
            all.push(reference.token().clone());
            all.extend(reference.trailing_trivia().cloned());
            all
        })
}

/// The byte ranges of the comments of `source` (`--` and `--[[ ]]`), as far as it can be lexed.
pub fn comments(source: &str) -> Vec<Range<usize>> {
    tokens(source)
        .filter(|t| {
            matches!(
                t.token_type(),
                TokenType::SingleLineComment { .. } | TokenType::MultiLineComment { .. }
            )
        })
        .map(|t| t.start_position().bytes()..t.end_position().bytes())
        .collect()
}
