//! Selection ranges ("expand selection"): from the word at the cursor outwards through the
//! partial chains (`obj` → `obj.data` → `obj.data.spec`), expressions, statements, function
//! bodies, up to the whole script.

use std::ops::Range;

use full_moon::ast::{Expression, FunctionBody, LastStmt, Stmt};

use super::completion::word_at;
use super::parse::{node_range, token_range};
use super::parsed_script::ParsedScript;
use super::walk::{Chain, Visit, walk_block};

/// For each offset, the ranges holding it, innermost first, each strictly larger than the one
/// before; the last is the whole script.
pub fn selection_ranges(script: &ParsedScript, offsets: &[usize]) -> Vec<Vec<Range<usize>>> {
    let source = script.source();
    let mut collect = Collect(Vec::new());
    walk_block(script.ast().nodes(), &mut collect);
    let mut nodes: Vec<Range<usize>> = collect.0.into_iter().map(|r| trimmed(source, r)).collect();
    nodes.push(0..source.len());
    offsets
        .iter()
        .map(|&offset| {
            let offset = offset.min(source.len());
            let mut holding: Vec<Range<usize>> = nodes
                .iter()
                .filter(|r| r.start <= offset && offset <= r.end)
                .cloned()
                .collect();
            if source.is_char_boundary(offset) {
                let word = word_at(source, offset);
                if !word.is_empty() {
                    holding.push(word);
                }
            }
            holding.sort_by_key(|r| (r.end - r.start, std::cmp::Reverse(r.start)));
            let mut chain: Vec<Range<usize>> = Vec::new();
            for range in holding {
                // Each one strictly contains the previous (clients reject anything else).
                if chain.last().is_none_or(|last| {
                    range.start <= last.start && last.end <= range.end && range != *last
                }) {
                    chain.push(range);
                }
            }
            if chain.is_empty() {
                chain.push(offset..offset);
            }
            chain
        })
        .collect()
}

/// `range` without the whitespace at its ends.
fn trimmed(source: &str, range: Range<usize>) -> Range<usize> {
    let Some(text) = source.get(range.clone()) else {
        return range;
    };
    let start = range.start + (text.len() - text.trim_start().len());
    let end = range.end - (text.len() - text.trim_end().len());
    start..end.max(start)
}

struct Collect(Vec<Range<usize>>);

impl<'a> Visit<'a> for Collect {
    fn stmt(&mut self, stmt: &'a Stmt) {
        self.0.extend(node_range(stmt));
    }
    fn last_stmt(&mut self, stmt: &'a LastStmt) {
        self.0.extend(node_range(stmt));
    }
    fn expr(&mut self, expr: &'a Expression) {
        self.0.extend(node_range(expr));
    }
    fn chain(&mut self, chain: &Chain<'a>) {
        let Some(prefix) = node_range(chain.prefix) else {
            return;
        };
        for suffix in &chain.suffixes {
            if let Some(suffix) = node_range(*suffix) {
                self.0.push(prefix.start..suffix.end);
            }
        }
    }
    fn function(&mut self, body: &'a FunctionBody, enter: bool) {
        if enter {
            let (open, close) = body.parameters_parentheses().tokens();
            let end = token_range(body.end_token());
            // The body between the parameters and `end`, then the parameters with it.
            self.0.push(token_range(close).end..end.start);
            self.0.push(token_range(open).start..end.end);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_the_word_out_to_the_script() {
        let source =
            "local function f(a)\n  local w = obj.data.spec\n  return w\nend\nreturn f(1)\n";
        let at = source.find("data").unwrap() + 1;
        let chain = selection_ranges(&ParsedScript::new(source), &[at]).remove(0);
        let texts: Vec<&str> = chain.iter().map(|r| &source[r.clone()]).collect();
        assert_eq!(texts[0], "data");
        assert_eq!(texts[1], "obj.data");
        assert_eq!(texts[2], "obj.data.spec");
        assert_eq!(texts[3], "local w = obj.data.spec");
        assert!(
            texts.contains(&"local w = obj.data.spec\n  return w"),
            "{texts:?}"
        );
        assert_eq!(*chain.last().unwrap(), 0..source.len());
        for pair in chain.windows(2) {
            assert!(
                pair[1].start <= pair[0].start && pair[0].end <= pair[1].end && pair[0] != pair[1]
            );
        }
    }
}
