//! One parse of a script, shared by every analysis of it: the source, full_moon's tree with the
//! syntax errors, and the resolved names (built on first use). The language server keeps one per
//! document version, so a request pays for its own walk only (issue 23), not for a parse each.

use std::sync::OnceLock;

use full_moon::ast::Ast;

use super::parse::{self, Parsed, SyntaxError};
use super::semantic::Model;

/// A script parsed once: what [`parse::parse`] gives, and its [`Model`] when first asked for.
pub struct ParsedScript {
    source: String,
    parsed: Parsed,
    model: OnceLock<Model>,
}

impl ParsedScript {
    /// Parses `source` (never fails: see [`parse::parse`]).
    pub fn new(source: impl Into<String>) -> ParsedScript {
        let source = source.into();
        let parsed = parse::parse(&source);
        ParsedScript {
            source,
            parsed,
            model: OnceLock::new(),
        }
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    /// full_moon's tree (partial when there are syntax errors).
    pub fn ast(&self) -> &Ast {
        &self.parsed.ast
    }

    /// Every syntax error, one per problem, in source order.
    pub fn errors(&self) -> &[SyntaxError] {
        &self.parsed.errors
    }

    /// The resolved names, built the first time a request needs them.
    pub fn model(&self) -> &Model {
        self.model
            .get_or_init(|| Model::build(&self.parsed.ast, self.source.len()))
    }
}

impl std::fmt::Debug for ParsedScript {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParsedScript")
            .field("bytes", &self.source.len())
            .field("errors", &self.parsed.errors.len())
            .field("resolved", &self.model.get().is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parsed_script_is_shared_between_threads() {
        fn shareable<T: Send + Sync>() {}
        shareable::<ParsedScript>();
        let script = ParsedScript::new("local a = 1\nreturn a +");
        assert_eq!(script.errors().len(), 1);
        assert_eq!(script.model().decls.len(), 1);
        assert_eq!(script.source(), "local a = 1\nreturn a +");
    }
}
