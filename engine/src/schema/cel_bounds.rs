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
//!
//! Evaluation runs under a budget too (see [`evaluate_metered`]), so that a rule whose estimated cost
//! missed something still ends, in bounded memory.

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};

use cel::IdedExpr;
use cel::common::ast::{CallExpr, EntryExpr, Expr};
use cel::common::types::{CelBytes, CelString, DYN_TYPE};
use cel::common::value::{CowVal, Val};
use cel::{DeclarationError, Env, ExecutionError};

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

/// apiserver `pkg/apis/cel/config.go`, `PerCallLimit`: the runtime cost the API server lets one
/// evaluation of a rule reach before it cancels it ("operation cancelled: actual cost limit
/// exceeded"). Our meter counts in units of the same order (one per iteration, a list's items,
/// a tenth of a string's characters) but not cel-go's exact figure.
pub(crate) const PER_CALL_LIMIT: u64 = 1_000_000;

/// The function a metered tree calls on a value it builds or walks: charges its size, hands it
/// on. Its name cannot be written in CEL source (it starts with `@`).
const CHARGE: &str = "@kruise_charge";
/// The function a metered `all`/`exists` calls on its loop condition each iteration.
const TICK: &str = "@kruise_tick";

thread_local! {
    /// What is left of the running evaluation's budget (`None`: no evaluation is metered on
    /// this thread), and whether it ran out.
    static BUDGET: Cell<Option<u64>> = const { Cell::new(None) };
    static OVERRUN: Cell<bool> = const { Cell::new(false) };
}

/// Registers the meter's functions in the rules' environment.
pub(crate) fn register_meter(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_overload(CHARGE, "@kruise_charge(dyn)", vec![DYN_TYPE], charge_size)?;
    env.add_overload(TICK, "@kruise_tick(dyn)", vec![DYN_TYPE], charge_one)?;
    Ok(())
}

/// Takes `amount` from the running evaluation's budget; once it is spent, every charge fails,
/// so loops stop at their next iteration and no list is built further.
fn charge(amount: u64) -> Result<(), ExecutionError> {
    let Some(left) = BUDGET.get() else {
        return Ok(());
    };
    if OVERRUN.get() || amount > left {
        OVERRUN.set(true);
        return Err(ExecutionError::function_error(
            "cost",
            format!("evaluation exceeded the budget of {PER_CALL_LIMIT}"),
        ));
    }
    BUDGET.set(Some(left - amount));
    Ok(())
}

/// What a value costs to have built or to walk: one, plus its items (list, map) or a tenth of
/// its characters or bytes (cel-go's `StringTraversalCostFactor`).
fn size_cost(value: &dyn Val) -> u64 {
    let size = if let Some(text) = value.downcast_ref::<CelString>() {
        text.inner().len() as u64 / 10
    } else if let Some(bytes) = value.downcast_ref::<CelBytes>() {
        bytes.inner().len() as u64 / 10
    } else {
        value
            .as_sizer()
            .map_or(0, |sizer| u64::try_from(*sizer.size().inner()).unwrap_or(0))
    };
    size.saturating_add(1)
}

fn charge_size<'b, 'v>(mut args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let value = one_argument(&mut args, CHARGE)?;
    charge(size_cost(value.as_ref()))?;
    Ok(value)
}

fn charge_one<'b, 'v>(mut args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let value = one_argument(&mut args, TICK)?;
    charge(1)?;
    Ok(value)
}

fn one_argument<'b, 'v>(
    args: &mut Vec<CowVal<'b, 'v>>,
    function: &str,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    if args.len() != 1 {
        return Err(ExecutionError::invalid_argument_count(1, args.len()));
    }
    args.pop()
        .ok_or_else(|| ExecutionError::function_error(function, "no argument"))
}

/// Runs `evaluate` (which evaluates a [`metered`] tree) with a budget of [`PER_CALL_LIMIT`] and
/// at least [`EVAL_RED_ZONE`] of stack, a panic becoming `Err`. `Ok((result, true))` when the
/// budget ran out: then the result is not the rule's (an error stopped it part way, or a
/// branch that failed on the budget was absorbed by `||`/`&&`).
pub(crate) fn evaluate_metered<T>(evaluate: impl FnOnce() -> T) -> Result<(T, bool), String> {
    struct Reset(Option<u64>, bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            BUDGET.set(self.0);
            OVERRUN.set(self.1);
        }
    }
    let _reset = Reset(BUDGET.get(), OVERRUN.get());
    BUDGET.set(Some(PER_CALL_LIMIT));
    OVERRUN.set(false);
    let result = evaluate_guarded(evaluate)?;
    Ok((result, OVERRUN.get()))
}

/// `tree` with the meter's calls put in, evaluated in its place: each comprehension charges
/// for its iterations (the whole range up front for `map`, `filter` and `exists_one`, which
/// walk all of it; one per iteration for `all` and `exists`, which may stop early), and each
/// call that can build a value (any but the operators, which give a boolean or a value that
/// already exists, and `+`, which can build one) charges the size of what it gives. The tree
/// must stay as the crate expands macros where the crate looks at its shape: a call on a
/// comprehension's accumulator is left as it is.
pub(crate) fn metered(tree: &IdedExpr) -> IdedExpr {
    let mut out = tree.clone();
    let mut accumulators = Vec::new();
    meter_node(&mut out, &mut accumulators);
    out
}

fn wrap(node: &mut IdedExpr, function: &str) {
    let id = node.id;
    let inner = std::mem::replace(
        node,
        IdedExpr {
            id,
            expr: Expr::Unspecified,
        },
    );
    node.expr = Expr::Call(CallExpr {
        func_name: function.to_owned(),
        target: None,
        args: vec![inner],
    });
}

/// Recurses once per level: call it on a tree whose depth is bounded ([`MAX_TREE_DEPTH`]).
fn meter_node(node: &mut IdedExpr, accumulators: &mut Vec<String>) {
    match &mut node.expr {
        Expr::Comprehension(c) => {
            meter_node(&mut c.iter_range, accumulators);
            meter_node(&mut c.accu_init, accumulators);
            accumulators.push(c.accu_var.clone());
            meter_node(&mut c.loop_cond, accumulators);
            meter_node(&mut c.loop_step, accumulators);
            meter_node(&mut c.result, accumulators);
            accumulators.pop();
            if matches!(c.loop_cond.expr, Expr::Literal(_)) {
                wrap(&mut c.iter_range, CHARGE);
            } else {
                wrap(&mut c.loop_cond, TICK);
            }
        }
        Expr::Call(call) => {
            let on_accumulator =
                call.target.iter().map(|t| &**t).chain(&call.args).any(
                    |operand| matches!(&operand.expr, Expr::Ident(n) if accumulators.contains(n)),
                );
            let builds = call.func_name == "_+_" || !is_operator(&call.func_name);
            if let Some(target) = call.target.as_deref_mut() {
                meter_node(target, accumulators);
            }
            for arg in &mut call.args {
                meter_node(arg, accumulators);
            }
            if builds && !on_accumulator {
                wrap(node, CHARGE);
            }
        }
        Expr::List(list) => {
            for element in &mut list.elements {
                meter_node(element, accumulators);
            }
        }
        Expr::Map(map) => {
            for entry in &mut map.entries {
                if let EntryExpr::MapEntry(e) = &mut entry.expr {
                    meter_node(&mut e.key, accumulators);
                    meter_node(&mut e.value, accumulators);
                }
            }
        }
        Expr::Struct(s) => {
            for entry in &mut s.entries {
                match &mut entry.expr {
                    EntryExpr::StructField(f) => meter_node(&mut f.value, accumulators),
                    EntryExpr::MapEntry(e) => {
                        meter_node(&mut e.key, accumulators);
                        meter_node(&mut e.value, accumulators);
                    }
                }
            }
        }
        Expr::Select(select) => meter_node(&mut select.operand, accumulators),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
}

/// Operators and the crate's internal functions (`_+_`, `!_`, `@in`, `@not_strictly_false`).
fn is_operator(name: &str) -> bool {
    name.starts_with(['_', '@', '!', '-'])
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// `rule` evaluated as rules are (metered, in the rules' environment), bypassing the
    /// estimated cost: whether the budget ran out, and the result.
    fn run_metered(rule: &str) -> (Result<cel::Value, ExecutionError>, bool) {
        let env = crate::schema::cel_library::environment();
        let program = env.compile(rule).unwrap();
        let tree = metered(program.expression());
        let context = cel::Context::with_env(Arc::clone(&env));
        evaluate_metered(|| cel::Value::resolve(&tree, &context)).unwrap()
    }

    #[test]
    fn evaluation_stops_when_its_budget_is_spent() {
        // What the estimate refuses, run anyway: the meter stops it (it would loop 10^12
        // times, or build 10^10 items).
        for hostile in [
            "lists.range(1000000).all(x, lists.range(1000000).all(y, y >= 0))",
            "lists.range(100000).map(x, lists.range(100000)).size() > 0",
            "lists.range(1000).all(x, lists.range(1000).all(y, lists.range(1000).exists(z, z < 0)) || true)",
            "lists.range(1000).all(a, lists.range(1000).all(b, a + b >= 0))",
        ] {
            let (result, overrun) = run_metered(hostile);
            assert!(overrun, "{hostile}: {result:?}");
        }
        // Within the budget, results are as unmetered, errors a later item overrides included.
        for (rule, expected) in [
            (
                "lists.range(100).map(x, x * 2).filter(y, y > 100).size() == 49",
                true,
            ),
            ("[0, 1].exists(x, 10 / x > 1)", true),
            ("[1, 0].all(x, 10 / x > 100)", false),
            ("lists.range(4).sortBy(x, -x) == [3, 2, 1, 0]", true),
            (
                "['a', 'b'].exists_one(s, s == 'b') && 'ab'.startsWith('a')",
                true,
            ),
            (
                "lists.range(100).all(a, lists.range(100).all(b, a + b >= 0))",
                true,
            ),
        ] {
            let (result, overrun) = run_metered(rule);
            assert!(!overrun, "{rule}");
            assert_eq!(result, Ok(cel::Value::Bool(expected)), "{rule}");
        }
        let (result, overrun) = run_metered("[1, 0].all(x, 10 / x > 1)");
        assert!(!overrun);
        assert!(
            matches!(result, Err(ExecutionError::DivisionByZero(_))),
            "{result:?}"
        );
    }

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
