//! Time, depth and stack bounds around the `cel` crate, so that no rule a CRD holds can hang,
//! crash or abort the process: the crate's ANTLR parser and its tree-walking evaluator recurse
//! once per level of the rule (a few kilobytes of stack each in a debug build), 100,000 nested
//! parentheses panic inside it and `1+1+…` of 100,000 terms overflows the stack (an abort,
//! which `catch_unwind` cannot catch). So a rule is measured by a cheap scan before the crate
//! sees it, parsed on a stack of its own, its parsed tree's depth bounded before it is
//! evaluated, and every call into the crate runs under `catch_unwind` as a last resort.
//!
//! The limits are ours, not the API server's: cel-go refuses deeper rules itself (its parser's
//! recursion limit, 250 by default, and its 100,000 code point expression limit: cel-go
//! `parser/options.go`), and no published CRD's rule comes near them. A rule beyond them is
//! reported as not checked, never guessed.

use std::panic::{AssertUnwindSafe, catch_unwind};

use cel::IdedExpr;
use cel::common::ast::{EntryExpr, Expr};

/// The longest rule (in characters) handed to the parser: parse time grows with the text
/// (about 0.3 ms per token in a debug build).
pub(crate) const MAX_RULE_CHARS: usize = 20_000;

/// The deepest a rule may nest by [`nesting_estimate`]: brackets, plus chains of operators the
/// parser nests (`a+b+c` is three levels; `&&`/`||` chains are balanced by the parser).
pub(crate) const MAX_NESTING: usize = 64;

/// The deepest parsed tree evaluated (macros expand into comprehensions, a few levels each).
pub(crate) const MAX_TREE_DEPTH: usize = 256;

/// Stack for parsing one rule (allocated lazily by the OS; the scan keeps use far below it).
const PARSE_STACK: usize = 64 << 20;

/// Evaluation gets at least this much stack: when the caller's thread has less left, it runs
/// on a fresh one of [`EVAL_STACK`].
const EVAL_RED_ZONE: usize = 4 << 20;
const EVAL_STACK: usize = 32 << 20;

/// Why a rule is not handed to the crate, or `None` when it may be.
pub(crate) fn refuse_before_parse(rule: &str) -> Option<String> {
    let chars = rule.chars().count();
    if chars > MAX_RULE_CHARS {
        return Some(format!(
            "the rule has {chars} characters, more than the {MAX_RULE_CHARS} this checker parses"
        ));
    }
    let nesting = nesting_estimate(rule);
    if nesting > MAX_NESTING {
        return Some(format!(
            "the rule nests about {nesting} levels deep, more than the {MAX_NESTING} this \
             checker parses"
        ));
    }
    None
}

/// An upper estimate of how deep the parsed tree of `rule` nests, without parsing it: per
/// bracket group, the operators of its longest run between `&&`, `||`, `,`, `?` and `:`
/// (each nests one level: `a.b.c`, `1+2+3`, `!!x`), plus the deepest group inside that run.
/// String literals are skipped.
pub(crate) fn nesting_estimate(rule: &str) -> usize {
    #[derive(Default)]
    struct Group {
        deepest: usize,
        run_ops: usize,
        run_child: usize,
    }
    impl Group {
        fn end_run(&mut self) {
            self.deepest = self.deepest.max(self.run_ops + self.run_child);
            self.run_ops = 0;
            self.run_child = 0;
        }
        fn depth(mut self) -> usize {
            self.end_run();
            self.deepest
        }
    }
    let mut stack = vec![Group::default()];
    let bytes = rule.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b'\'' | b'"' => {
                i = skip_string(bytes, i);
                continue;
            }
            b'(' | b'[' | b'{' => stack.push(Group::default()),
            b')' | b']' | b'}' if stack.len() > 1 => {
                let inner = stack.pop().map_or(0, Group::depth) + 1;
                if let Some(top) = stack.last_mut() {
                    top.run_child = top.run_child.max(inner);
                }
            }
            b'&' | b'|' if bytes.get(i + 1) == Some(&b) => {
                if let Some(top) = stack.last_mut() {
                    top.end_run();
                }
                i += 2;
                continue;
            }
            b',' | b'?' | b':' => {
                if let Some(top) = stack.last_mut() {
                    top.end_run();
                }
            }
            b'+' | b'-' | b'*' | b'/' | b'%' | b'!' | b'.' | b'<' | b'>' | b'=' => {
                if let Some(top) = stack.last_mut() {
                    top.run_ops += 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    // Unclosed groups count as closed at the end (the parser reports them).
    let mut depth = 0;
    while let Some(group) = stack.pop() {
        depth = group.depth().max(depth) + usize::from(!stack.is_empty());
    }
    depth
}

/// The index after the string literal starting at `start` (a quote), triple quotes included.
fn skip_string(bytes: &[u8], start: usize) -> usize {
    let quote = bytes[start];
    let triple = bytes.get(start + 1) == Some(&quote) && bytes.get(start + 2) == Some(&quote);
    let raw = start > 0 && matches!(bytes[start - 1], b'r' | b'R');
    let mut i = start + if triple { 3 } else { 1 };
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if !raw => i += 2,
            b if b == quote => {
                if !triple {
                    return i + 1;
                }
                if bytes.get(i + 1) == Some(&quote) && bytes.get(i + 2) == Some(&quote) {
                    return i + 3;
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    bytes.len()
}

/// How deep a parsed tree nests (iteratively: the tree may be deeper than the stack allows).
pub(crate) fn tree_depth(root: &IdedExpr) -> usize {
    let mut deepest = 0;
    let mut pending: Vec<(&IdedExpr, usize)> = vec![(root, 1)];
    while let Some((node, depth)) = pending.pop() {
        deepest = deepest.max(depth);
        pending.extend(children(node).into_iter().map(|child| (child, depth + 1)));
    }
    deepest
}

/// The nodes directly below `node`.
pub(crate) fn children(node: &IdedExpr) -> Vec<&IdedExpr> {
    let mut out = Vec::new();
    match &node.expr {
        Expr::Call(call) => {
            out.extend(call.target.as_deref());
            out.extend(&call.args);
        }
        Expr::Comprehension(c) => out.extend([
            &c.iter_range,
            &c.accu_init,
            &c.loop_cond,
            &c.loop_step,
            &c.result,
        ]),
        Expr::List(list) => out.extend(&list.elements),
        Expr::Map(map) => {
            for entry in &map.entries {
                if let EntryExpr::MapEntry(e) = &entry.expr {
                    out.extend([&e.key, &e.value]);
                }
            }
        }
        Expr::Struct(s) => {
            for entry in &s.entries {
                match &entry.expr {
                    EntryExpr::StructField(f) => out.push(&f.value),
                    EntryExpr::MapEntry(e) => out.extend([&e.key, &e.value]),
                }
            }
        }
        Expr::Select(select) => out.push(&select.operand),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
    out
}

/// Runs `parse` on a stack of its own, a panic inside it becoming `Err`.
pub(crate) fn parse_guarded<T>(parse: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(|| stacker::grow(PARSE_STACK, parse)))
        .map_err(|panic| format!("the CEL crate failed on it ({})", panic_text(&*panic)))
}

/// Runs an evaluation with at least [`EVAL_RED_ZONE`] of stack, a panic becoming `Err`.
pub(crate) fn evaluate_guarded<T>(evaluate: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(|| {
        stacker::maybe_grow(EVAL_RED_ZONE, EVAL_STACK, evaluate)
    }))
    .map_err(|panic| format!("the CEL crate failed on it ({})", panic_text(&*panic)))
}

fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_counts_brackets_and_operator_chains() {
        assert_eq!(nesting_estimate("self.a"), 1);
        assert_eq!(nesting_estimate("1+2+3"), 2);
        assert_eq!(nesting_estimate("((1))"), 2);
        // `&&` chains are balanced by the parser: a run each.
        assert_eq!(nesting_estimate("a.b && c.d && e.f"), 1);
        // Strings are skipped, escapes and triple quotes included.
        assert_eq!(nesting_estimate(r#"'(((\'+' + "..." + '''a'b''' "#), 2);
        assert_eq!(nesting_estimate(&"(".repeat(100_000)), 100_000);
        assert!(nesting_estimate(&vec!["1"; 100_000].join("+")) > MAX_NESTING);
        assert!(refuse_before_parse("self.all(x, x.all(y, y > 0 && y.size() < 3))").is_none());
    }
}
