//! Folding ranges: blocks (`function`, `if` and each of its branches, loops, `do`), multi-line
//! table constructors, and comment blocks (a `--[[ ]]` over several lines, or consecutive `--`
//! lines). Byte ranges from the opening keyword to the closing one; the protocol layer keeps the
//! closing line visible.

use std::ops::Range;

use full_moon::ast::{Expression, Stmt};
use full_moon::tokenizer::TokenType;

use super::lex::tokens;
use super::parse::{node_range, token_range};
use super::parsed_script::ParsedScript;
use super::walk::{Visit, walk_block};

/// One foldable region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fold {
    /// From the start of the opener to the start of the closer (`end`, `}`, `until`, the next
    /// branch), or over the whole comment.
    pub range: Range<usize>,
    pub comment: bool,
}

/// Every foldable region of `source`, in source order (parsing recovers, so a broken script
/// still folds what parsed).
pub fn folding_ranges(script: &ParsedScript) -> Vec<Fold> {
    let source = script.source();
    let mut collect = Collect(Vec::new());
    walk_block(script.ast().nodes(), &mut collect);
    let mut folds: Vec<Fold> = collect
        .0
        .into_iter()
        .filter(|r| r.start < r.end)
        .map(|range| Fold {
            range,
            comment: false,
        })
        .collect();
    folds.extend(comment_folds(source));
    folds.sort_by_key(|f| (f.range.start, std::cmp::Reverse(f.range.end)));
    folds.dedup_by(|a, b| a.range == b.range);
    folds
}

struct Collect(Vec<Range<usize>>);

impl Collect {
    /// From `opener`'s start to `closer`'s start.
    fn span(&mut self, opener: Option<Range<usize>>, closer: Range<usize>) {
        if let Some(opener) = opener {
            self.0.push(opener.start..closer.start);
        }
    }
}

impl<'a> Visit<'a> for Collect {
    fn stmt(&mut self, stmt: &'a Stmt) {
        let whole = node_range(stmt);
        match stmt {
            Stmt::Do(block) => self.span(whole, token_range(block.end_token())),
            Stmt::While(w) => self.span(whole, token_range(w.end_token())),
            Stmt::Repeat(r) => self.span(whole, token_range(r.until_token())),
            Stmt::NumericFor(f) => self.span(whole, token_range(f.end_token())),
            Stmt::GenericFor(f) => self.span(whole, token_range(f.end_token())),
            Stmt::If(if_stmt) => {
                // Each branch folds on its own, as in other Lua editors.
                let mut starts = vec![whole.map(|r| r.start)];
                for else_if in if_stmt.else_if().into_iter().flatten() {
                    starts.push(Some(token_range(else_if.else_if_token()).start));
                }
                if let Some(token) = if_stmt.else_token() {
                    starts.push(Some(token_range(token).start));
                }
                starts.push(Some(token_range(if_stmt.end_token()).start));
                for pair in starts.windows(2) {
                    if let [Some(start), Some(end)] = pair {
                        self.0.push(*start..*end);
                    }
                }
            }
            // Function statements fold through their body (see `function`).
            _ => {}
        }
    }

    fn expr(&mut self, expr: &'a Expression) {
        if let Expression::TableConstructor(table) = expr {
            let (open, close) = table.braces().tokens();
            self.0
                .push(token_range(open).start..token_range(close).start);
        }
    }

    fn function(&mut self, body: &'a full_moon::ast::FunctionBody, enter: bool) {
        if enter {
            let (open, _) = body.parameters_parentheses().tokens();
            self.0
                .push(token_range(open).start..token_range(body.end_token()).start);
        }
    }
}

/// `--[[ ]]` comments over several lines, and runs of two or more `--` lines (with nothing but
/// whitespace between them).
fn comment_folds(source: &str) -> Vec<Fold> {
    let mut folds = Vec::new();
    let mut run: Option<Range<usize>> = None;
    let mut lines_in_run = 0;
    let flush = |run: &mut Option<Range<usize>>, lines: &mut usize, folds: &mut Vec<Fold>| {
        if let Some(range) = run.take()
            && *lines >= 2
        {
            folds.push(Fold {
                range,
                comment: true,
            });
        }
        *lines = 0;
    };
    for token in tokens(source) {
        let start = token.start_position().bytes();
        let end = token.end_position().bytes();
        match token.token_type() {
            TokenType::MultiLineComment { .. } => {
                flush(&mut run, &mut lines_in_run, &mut folds);
                if source[start..end].contains('\n') {
                    folds.push(Fold {
                        range: start..end,
                        comment: true,
                    });
                }
            }
            TokenType::SingleLineComment { .. } => {
                match &mut run {
                    Some(range) => range.end = end,
                    None => run = Some(start..end),
                }
                lines_in_run += 1;
            }
            TokenType::Whitespace { characters } => {
                // A blank line ends a run.
                if characters.matches('\n').count() > 1 {
                    flush(&mut run, &mut lines_in_run, &mut folds);
                }
            }
            _ => flush(&mut run, &mut lines_in_run, &mut folds),
        }
    }
    flush(&mut run, &mut lines_in_run, &mut folds);
    folds
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(source: &str) -> Vec<(usize, usize, bool)> {
        let line = |offset: usize| source[..offset].matches('\n').count();
        folding_ranges(&ParsedScript::new(source))
            .into_iter()
            .map(|f| (line(f.range.start), line(f.range.end), f.comment))
            .collect()
    }

    #[test]
    fn blocks_branches_tables_and_comments() {
        let source = "-- one\n-- two\nlocal function f(a)\n  if a then\n    return 1\n  elseif a == 2 then\n    return 2\n  else\n    return 3\n  end\nend\nlocal t = {\n  a = 1,\n}\nfor i = 1, 2 do\n  print(i)\nend\n--[[ long\ncomment ]]\nreturn t\n";
        assert_eq!(
            lines(source),
            vec![
                (0, 1, true),
                (2, 10, false),
                (3, 5, false),
                (5, 7, false),
                (7, 9, false),
                (11, 13, false),
                (14, 16, false),
                (17, 18, true),
            ]
        );
    }

    #[test]
    fn a_broken_script_still_folds_what_parsed() {
        let source = "local t = {\n  a = 1,\n}\nlocal x = = 2\n";
        assert!(
            lines(source).contains(&(0, 2, false)),
            "{:?}",
            lines(source)
        );
    }
}
