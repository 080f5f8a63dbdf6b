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
//! Evaluation runs under a budget too (see [`evaluate_metered`] and [`metered`]), so that a
//! rule whose estimated cost missed something still ends, in bounded memory: loops are
//! charged per iteration, built values by their size, and a call that could build a value
//! larger than its operands is checked against what is left before it runs.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};

use cel::IdedExpr;
use cel::common::ast::{CallExpr, EntryExpr, Expr, LiteralValue};
use cel::common::types::{
    BOOL_TYPE, CelBytes, CelInt, CelString, DYN_TYPE, INT_TYPE, Kind, STRING_TYPE,
};
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

/// The deepest metered tree evaluated: [`metered`] puts at most two calls above each node of
/// the parsed tree (a charge around a call, a size check around each of its operands), so a
/// parsed tree within [`MAX_TREE_DEPTH`] stays within this; checked again on the metered tree.
pub(crate) const MAX_METERED_DEPTH: usize = 3 * MAX_TREE_DEPTH;

/// Stack for parsing one rule (allocated lazily by the OS; the scan keeps use far below it).
const PARSE_STACK: usize = 64 << 20;

/// The stack an evaluation of a metered tree `depth` levels deep gets at least: when the
/// caller's thread has less left, it runs on a fresh one twice as large (reserved, not
/// committed: the OS gives pages as they are touched). 48 KiB per level: the evaluator
/// recurses once per level, and a chain of 766 metered levels took between 28 and 32 MiB in a
/// debug build (about 40 KiB a level; the test `deepest_metered_tree_evaluates` runs the
/// deepest with just this much stack); never less than 4 MiB, as comparing nested values
/// recurses too. Sized per rule, so that the common shallow rule runs on the caller's stack
/// rather than on one mapped for the deepest.
fn eval_red_zone(depth: usize) -> usize {
    (depth * (48 << 10)).max(4 << 20)
}

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

/// Runs an evaluation of a metered tree `depth` levels deep with at least
/// [`eval_red_zone`] of stack, a panic becoming `Err`.
fn evaluate_guarded<T>(depth: usize, evaluate: impl FnOnce() -> T) -> Result<T, String> {
    let red_zone = eval_red_zone(depth);
    catch_unwind(AssertUnwindSafe(|| {
        stacker::maybe_grow(red_zone, 2 * red_zone, evaluate)
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
/// The function a metered call that can build a value larger than its operands (see
/// [`Grows`]) calls on each operand but the last it evaluates: notes the operand's size.
const NOTE: &str = "@kruise_note";
/// The function such a call calls on the last operand it evaluates: from it and the noted
/// sizes, bounds the size of what the call is about to build and stops the evaluation, before
/// the call runs, when that bound is more than what is left of the budget.
const BEFORE: &str = "@kruise_before";

thread_local! {
    /// What is left of the running evaluation's budget (`None`: no evaluation is metered on
    /// this thread), and whether it ran out.
    static BUDGET: Cell<Option<u64>> = const { Cell::new(None) };
    static OVERRUN: Cell<bool> = const { Cell::new(false) };
    /// The sizes [`NOTE`] noted, by call (its node's id) and operand (its place in the order
    /// the crate evaluates them). A call stopped between its operands leaves its notes here;
    /// the next evaluation of that call writes them again before [`BEFORE`] reads them.
    static NOTES: RefCell<HashMap<(i64, i64), Size>> = RefCell::new(HashMap::new());
}

/// What a size check needs to know of an operand.
#[derive(Clone, Copy, Debug, Default)]
struct Size {
    /// A string's or bytes' length in bytes.
    bytes: u64,
    /// A list's or map's items.
    items: u64,
    /// An int's value.
    int: Option<i64>,
    /// An upper bound of the bytes `format` writes for it (only when noted for `format`).
    rendered: u64,
}

fn size_of(value: &dyn Val, rendered: bool) -> Size {
    let mut size = Size::default();
    if let Some(text) = value.downcast_ref::<CelString>() {
        size.bytes = text.inner().len() as u64;
    } else if let Some(bytes) = value.downcast_ref::<CelBytes>() {
        size.bytes = bytes.inner().len() as u64;
    } else if let Some(int) = value.downcast_ref::<CelInt>() {
        size.int = Some(*int.inner());
    } else if let Some(sizer) = value.as_sizer() {
        size.items = u64::try_from(*sizer.size().inner()).unwrap_or(0);
    }
    if rendered {
        size.rendered = rendered_bound(value);
    }
    size
}

/// An upper bound of the bytes the strings extension's `format` writes for `value`: a
/// string's bytes six times over (quoted, each byte escaped at worst), bytes' as many (hex is
/// two a byte), 512 for any other scalar (a double's 309 digits before the point and at most
/// 100 after: `MAX_PRECISION` in the crate's `extensions/strings/format.rs`, cel-go's
/// default), and lists and maps item by item with room for brackets and separators.
fn rendered_bound(value: &dyn Val) -> u64 {
    const SCALAR: u64 = 512;
    if let Some(text) = value.downcast_ref::<CelString>() {
        return (text.inner().len() as u64)
            .saturating_mul(6)
            .saturating_add(2);
    }
    if let Some(bytes) = value.downcast_ref::<CelBytes>() {
        return (bytes.inner().len() as u64)
            .saturating_mul(6)
            .saturating_add(3);
    }
    let kind = value.get_type().kind();
    if matches!(kind, Kind::List | Kind::Map)
        && let Some(iterable) = value.as_iterable()
    {
        let indexer = (kind == Kind::Map).then(|| value.as_indexer()).flatten();
        let mut total: u64 = 2;
        let mut iter = iterable.iter();
        while let Some(item) = iter.next() {
            total = total.saturating_add(rendered_bound(item)).saturating_add(4);
            if let Some(indexer) = indexer {
                total = match indexer.get(item) {
                    Ok(entry) => total.saturating_add(rendered_bound(entry.as_ref())),
                    Err(_) => u64::MAX,
                };
            }
        }
        return total;
    }
    SCALAR
}

/// Registers the meter's functions in the rules' environment.
pub(crate) fn register_meter(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_overload(CHARGE, "@kruise_charge(dyn)", vec![DYN_TYPE], charge_size)?;
    env.add_overload(TICK, "@kruise_tick(dyn)", vec![DYN_TYPE], charge_one)?;
    env.add_overload(
        NOTE,
        "@kruise_note(dyn,int,int,bool)",
        vec![DYN_TYPE, INT_TYPE, INT_TYPE, BOOL_TYPE],
        note_size,
    )?;
    env.add_overload(
        BEFORE,
        "@kruise_before(dyn,int,string)",
        vec![DYN_TYPE, INT_TYPE, STRING_TYPE],
        check_before,
    )?;
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

impl Size {
    /// What a value of this size costs to have built or to walk: one, plus its items (list,
    /// map) or a tenth of its bytes (cel-go's `StringTraversalCostFactor`).
    fn cost(&self) -> u64 {
        (self.bytes / 10)
            .saturating_add(self.items)
            .saturating_add(1)
    }
}

/// [`Size::cost`] of a value.
fn size_cost(value: &dyn Val) -> u64 {
    size_of(value, false).cost()
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

/// Fails, as a spent budget does, when `amount` is more than what is left of it (taking
/// nothing: the value is charged once built).
fn check(amount: u64) -> Result<(), ExecutionError> {
    match BUDGET.get() {
        Some(left) if OVERRUN.get() || amount > left => {
            OVERRUN.set(true);
            Err(ExecutionError::function_error(
                "cost",
                format!(
                    "evaluation would build a value costing {amount}, more than is left of the \
                     budget of {PER_CALL_LIMIT}"
                ),
            ))
        }
        _ => Ok(()),
    }
}

fn literal_int(value: &dyn Val) -> Result<i64, ExecutionError> {
    value
        .downcast_ref::<CelInt>()
        .map(|int| *int.inner())
        .ok_or_else(|| ExecutionError::function_error(BEFORE, "not an int"))
}

fn note_size<'b, 'v>(mut args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    if args.len() != 4 {
        return Err(ExecutionError::invalid_argument_count(4, args.len()));
    }
    let rendered = args[3]
        .as_ref()
        .downcast_ref::<cel::common::types::CelBool>()
        .is_some_and(|b| *b.inner());
    let key = (
        literal_int(args[1].as_ref())?,
        literal_int(args[2].as_ref())?,
    );
    args.truncate(1);
    let value = one_argument(&mut args, NOTE)?;
    if BUDGET.get().is_some() {
        let size = size_of(value.as_ref(), rendered);
        NOTES.with_borrow_mut(|notes| notes.insert(key, size));
    }
    Ok(value)
}

fn check_before<'b, 'v>(mut args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    if args.len() != 3 {
        return Err(ExecutionError::invalid_argument_count(3, args.len()));
    }
    let id = literal_int(args[1].as_ref())?;
    let grows = args[2]
        .as_ref()
        .downcast_ref::<CelString>()
        .and_then(|name| Grows::from_name(name.inner()))
        .ok_or_else(|| ExecutionError::function_error(BEFORE, "unknown call"))?;
    args.truncate(1);
    let value = one_argument(&mut args, BEFORE)?;
    if BUDGET.get().is_some() {
        let noted = |slot: i64| NOTES.with_borrow(|notes| notes.get(&(id, slot)).copied());
        check(grows.bound(value.as_ref(), noted))?;
    }
    Ok(value)
}

/// The calls that can build a value larger than their operands (cel-go `ext/strings.go`,
/// `ext/lists.go`, the `cel` crate's `extensions`), which a metered tree checks before they
/// run. The API server charges a call once it has returned (apiserver
/// `pkg/cel/library/cost.go`, `CallCost`, is handed the call's result); checking before is
/// ours, so that our own memory stays bounded whatever the call would build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Grows {
    /// `s.replace(old, new[, n])`: operands `old`, `new`, [`n`], then `s`.
    Replace,
    /// `s.split(sep[, n])`: `sep`, [`n`], then `s`.
    Split,
    /// `list.join([sep])`: [`sep`], then `list`.
    Join,
    /// `list.flatten([depth])`: [`depth`], then `list`.
    Flatten,
    /// `fmt.format(args)`: `args`, then `fmt`.
    Format,
    /// `lists.range(n)`: `n`.
    Range,
    /// `a + b`: `a`, then `b`.
    Add,
}

impl Grows {
    const ALL: [Grows; 7] = [
        Grows::Replace,
        Grows::Split,
        Grows::Join,
        Grows::Flatten,
        Grows::Format,
        Grows::Range,
        Grows::Add,
    ];

    fn name(self) -> &'static str {
        match self {
            Grows::Replace => "replace",
            Grows::Split => "split",
            Grows::Join => "join",
            Grows::Flatten => "flatten",
            Grows::Format => "format",
            Grows::Range => "lists.range",
            Grows::Add => "_+_",
        }
    }

    fn from_name(name: &str) -> Option<Grows> {
        Grows::ALL.into_iter().find(|g| g.name() == name)
    }

    /// Which call `call` is, if it is one of these with operands they take.
    fn of(call: &CallExpr) -> Option<Grows> {
        let namespace = matches!(
            call.target.as_deref().map(|t| &t.expr),
            Some(Expr::Ident(name)) if name == "lists"
        );
        let args = call.args.len();
        let member = call.target.is_some() && !namespace;
        match (call.func_name.as_str(), member, args) {
            ("replace", true, 2 | 3) => Some(Grows::Replace),
            ("split", true, 1 | 2) => Some(Grows::Split),
            ("join", true, 0 | 1) => Some(Grows::Join),
            ("flatten", true, 0 | 1) => Some(Grows::Flatten),
            ("format", true, 1) => Some(Grows::Format),
            ("range", false, 1) if namespace => Some(Grows::Range),
            ("_+_", false, 2) if call.target.is_none() => Some(Grows::Add),
            _ => None,
        }
    }

    /// An upper bound of the cost ([`size_cost`]) of what the call builds, from its last
    /// operand `last` and the others' noted sizes (`noted(i)`, `i` in evaluation order).
    fn bound(self, last: &dyn Val, noted: impl Fn(i64) -> Option<Size>) -> u64 {
        let text_cost = |bytes: u64| {
            Size {
                bytes,
                ..Size::default()
            }
            .cost()
        };
        // A string's code points, read only where a split or replace needs them.
        let chars = || {
            last.downcast_ref::<CelString>()
                .map_or(0, |text| text.inner().chars().count() as u64)
        };
        let count = |slot| noted(slot).and_then(|s| s.int);
        // A noted operand missing (a call stopped part way leaves none): no bound.
        let missing = u64::MAX;
        match self {
            Grows::Replace => {
                let s = size_of(last, false);
                let (Some(old), Some(new)) = (noted(0), noted(1)) else {
                    return missing;
                };
                let mut matches = match s.bytes.checked_div(old.bytes) {
                    Some(m) => m,
                    // An empty `old` matches before each code point and at the end.
                    None => chars() + 1,
                };
                if let Some(n) = count(2).and_then(|n| u64::try_from(n).ok()) {
                    matches = matches.min(n);
                }
                text_cost(s.bytes.saturating_add(matches.saturating_mul(new.bytes)))
            }
            Grows::Split => {
                let s = size_of(last, false);
                let Some(sep) = noted(0) else {
                    return missing;
                };
                let mut parts = match s.bytes.checked_div(sep.bytes) {
                    Some(m) => m + 1,
                    None => chars(),
                };
                if let Some(n) = count(1).and_then(|n| u64::try_from(n).ok()) {
                    parts = parts.min(n);
                }
                parts.saturating_add(1)
            }
            Grows::Join => {
                let sep = noted(0).map_or(0, |s| s.bytes);
                let mut total: u64 = 0;
                let mut items: u64 = 0;
                if let Some(iterable) = last.as_iterable() {
                    let mut iter = iterable.iter();
                    while let Some(item) = iter.next() {
                        items += 1;
                        total = total.saturating_add(size_of(item, false).bytes);
                    }
                }
                text_cost(total.saturating_add(items.saturating_mul(sep)))
            }
            Grows::Flatten => {
                let depth = count(0).map_or(1, |d| u64::try_from(d).unwrap_or(0));
                leaves(last, depth).saturating_add(1)
            }
            Grows::Format => {
                let Some(args) = noted(0) else {
                    return missing;
                };
                let fmt = size_of(last, false).bytes;
                text_cost(fmt.saturating_add(args.rendered))
            }
            Grows::Range => size_of(last, false)
                .int
                .map_or(1, |n| u64::try_from(n).unwrap_or(0).saturating_add(1)),
            Grows::Add => {
                let Some(a) = noted(0) else {
                    return missing;
                };
                let b = size_of(last, false);
                Size {
                    bytes: a.bytes.saturating_add(b.bytes),
                    items: a.items.saturating_add(b.items),
                    ..Size::default()
                }
                .cost()
            }
        }
    }
}

/// The items `flatten(depth)` gives for `list`: its items, those that are lists replaced by
/// their own, `depth` levels deep.
fn leaves(list: &dyn Val, depth: u64) -> u64 {
    let Some(iterable) = list.as_iterable() else {
        return 0;
    };
    let mut total: u64 = 0;
    let mut iter = iterable.iter();
    while let Some(item) = iter.next() {
        total = total.saturating_add(if depth > 0 && item.get_type().kind() == Kind::List {
            leaves(item, depth - 1)
        } else {
            1
        });
    }
    total
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

/// Runs `evaluate` (which evaluates a [`metered`] tree `depth` levels deep) with a budget of
/// [`PER_CALL_LIMIT`] and at least [`eval_red_zone`] of stack, a panic becoming `Err`. `Ok((result, true))` when the
/// budget ran out: then the result is not the rule's (an error stopped it part way, or a
/// branch that failed on the budget was absorbed by `||`/`&&`).
pub(crate) fn evaluate_metered<T>(
    depth: usize,
    evaluate: impl FnOnce() -> T,
) -> Result<(T, bool), String> {
    struct Reset(Option<u64>, bool, HashMap<(i64, i64), Size>);
    impl Drop for Reset {
        fn drop(&mut self) {
            BUDGET.set(self.0);
            OVERRUN.set(self.1);
            NOTES.set(std::mem::take(&mut self.2));
        }
    }
    let _reset = Reset(BUDGET.get(), OVERRUN.get(), NOTES.take());
    BUDGET.set(Some(PER_CALL_LIMIT));
    OVERRUN.set(false);
    let result = evaluate_guarded(depth, evaluate)?;
    Ok((result, OVERRUN.get()))
}

/// `tree` with the meter's calls put in, evaluated in its place: each comprehension charges
/// for its iterations (the whole range up front for `map`, `filter` and `exists_one`, which
/// walk all of it; one per iteration for `all` and `exists`, which may stop early), and each
/// call that can build a value (any but the operators, which give a boolean or a value that
/// already exists, and `+`, which can build one) charges the size of what it gives. A call that
/// can build a value larger than its operands ([`Grows`]: `replace`, `split`, `join`,
/// `flatten`, `format`, `lists.range`, `+`) is checked before it runs too: from its operands'
/// sizes, an upper bound of the size of its result, which stops the evaluation when it is more
/// than what is left of the budget, so no call builds far past the budget. The tree must stay
/// as the crate expands macros where the crate looks at its shape: a call on a
/// comprehension's accumulator is left as it is. Each parsed level gets at most two metered
/// levels more ([`MAX_METERED_DEPTH`]).
pub(crate) fn metered(tree: &IdedExpr) -> IdedExpr {
    let mut out = tree.clone();
    let mut accumulators = Vec::new();
    meter_node(&mut out, &mut accumulators);
    out
}

fn wrap(node: &mut IdedExpr, function: &str) {
    wrap_with(node, function, Vec::new());
}

/// `node` replaced by a call of `function` on it and `extra` (literals).
fn wrap_with(node: &mut IdedExpr, function: &str, extra: Vec<LiteralValue>) {
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
        args: std::iter::once(inner)
            .chain(extra.into_iter().map(|literal| IdedExpr {
                id,
                expr: Expr::Literal(literal),
            }))
            .collect(),
    });
}

/// Puts the size checks of [`Grows`] around the operands of `call` (node `id`): [`NOTE`]
/// around each but the last the crate evaluates (the arguments in order, then the target),
/// [`BEFORE`] around the last.
fn check_growth(call: &mut CallExpr, id: i64, grows: Grows) {
    let mut operands: Vec<&mut IdedExpr> = call.args.iter_mut().collect();
    if grows != Grows::Range
        && let Some(target) = call.target.as_deref_mut()
    {
        operands.push(target);
    }
    let Some((last, noted)) = operands.split_last_mut() else {
        return;
    };
    for (slot, operand) in noted.iter_mut().enumerate() {
        let format_args = grows == Grows::Format;
        wrap_with(
            operand,
            NOTE,
            vec![
                LiteralValue::Int(CelInt::from(id)),
                LiteralValue::Int(CelInt::from(slot as i64)),
                LiteralValue::Boolean(format_args.into()),
            ],
        );
    }
    wrap_with(
        last,
        BEFORE,
        vec![
            LiteralValue::Int(CelInt::from(id)),
            LiteralValue::String(CelString::from(grows.name().to_owned())),
        ],
    );
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
            let id = i64::try_from(node.id).unwrap_or(-1);
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
                if let Some(grows) = Grows::of(call) {
                    check_growth(call, id, grows);
                }
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

/// Operators and the crate's internal functions (`_+_`, `!_`, `@in`, `@not_strictly_false`),
/// always declared.
pub(crate) fn is_operator(name: &str) -> bool {
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
        evaluate_metered(tree_depth(&tree), || cel::Value::resolve(&tree, &context)).unwrap()
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

    /// Whether the run was stopped by a size check before a call built its value.
    fn refused_before_building(result: &Result<cel::Value, ExecutionError>) -> bool {
        matches!(result, Err(e) if e.to_string().contains("would build a value costing"))
    }

    #[test]
    fn calls_that_grow_their_operands_are_checked_before_they_run() {
        // A 10,000 character string, built within the budget.
        let s = "lists.range(1000).map(x, 'aaaaaaaaaa').join()";
        for hostile in [
            // 10^8 bytes: an empty `old` matches at every character.
            format!("[{s}].all(s, s.replace('', s).size() > 0)"),
            format!("[{s}].all(s, s.replace('', s, 5000).size() > 0)"),
            format!("[{s}].all(s, (s + s).replace('a', s).size() > 0)"),
            // 9,000,000 items: within the estimate (10,000,000), not within the budget.
            "lists.range(9000000).size() > 0".to_owned(),
            format!("[{s}].all(s, lists.range(1000).map(x, 'a').join(s).size() > 0)"),
            // 1,000,001 parts of a 1,000,000 character string.
            format!("[{s}].all(s, lists.range(100).map(x, s).join().split('').size() > 0)"),
            format!("[{s}].all(s, '%s%s'.format([lists.range(1000).map(x, s), [s]]) != '')"),
        ] {
            let (result, overrun) = run_metered(&hostile);
            assert!(overrun, "{hostile}: {result:?}");
            assert!(refused_before_building(&result), "{hostile}: {result:?}");
        }
        // Within the budget, results are as unmetered.
        for rule in [
            "'ab'.replace('', '-') == '-a-b-'",
            "'abcb'.replace('b', 'xy', 1) == 'axycb'",
            "'abcb'.replace('b', '', -1) == 'ac'",
            "'a,b,c'.split(',') == ['a', 'b', 'c']",
            "'a,b,c'.split(',', 2) == ['a', 'b,c']",
            "'abc'.split('') == ['a', 'b', 'c']",
            "['a', 'b'].join() == 'ab' && ['a', 'b'].join('-') == 'a-b'",
            "[[1], [2, [3]]].flatten() == [1, 2, [3]]",
            "[[1], [2, [3]]].flatten(2) == [1, 2, 3]",
            "'%s-%d'.format(['a', 1]) == 'a-1'",
            "lists.range(3) == [0, 1, 2] && lists.range(0) == []",
            "[1] + [2] == [1, 2] && 'a' + 'b' == 'ab' && 1 + 2 == 3",
        ]
        .into_iter()
        {
            let (result, overrun) = run_metered(rule);
            assert!(!overrun, "{rule}: {result:?}");
            assert_eq!(result, Ok(cel::Value::Bool(true)), "{rule}");
        }
    }

    /// The deepest metered tree the checker evaluates runs within its [`eval_red_zone`]: on a
    /// thread with just that much stack left, the evaluation runs in place (no new stack).
    #[test]
    fn deepest_metered_tree_evaluates() {
        // `'a' + ('a' + (…)) != ''`, built as a tree (the crate's parser stops at 96 levels):
        // each `+` gets a charge above it and a size check on its right operand, three
        // metered levels per parsed level.
        let literal = |text: &str| IdedExpr {
            id: 0,
            expr: Expr::Literal(LiteralValue::String(CelString::from(text.to_owned()))),
        };
        let call = |name: &str, args: Vec<IdedExpr>| IdedExpr {
            id: 0,
            expr: Expr::Call(CallExpr {
                func_name: name.to_owned(),
                target: None,
                args,
            }),
        };
        let mut parsed = literal("a");
        for _ in 0..MAX_TREE_DEPTH - 2 {
            parsed = call("_+_", vec![literal("a"), parsed]);
        }
        parsed = call("_!=_", vec![parsed, literal("")]);
        let mut id = 0;
        let mut pending = vec![&mut parsed];
        while let Some(node) = pending.pop() {
            id += 1;
            node.id = id;
            if let Expr::Call(c) = &mut node.expr {
                pending.extend(c.args.iter_mut());
            }
        }
        assert_eq!(tree_depth(&parsed), MAX_TREE_DEPTH);
        let env = crate::schema::cel_library::environment();
        let tree = metered(&parsed);
        let depth = tree_depth(&tree);
        assert!(depth <= MAX_METERED_DEPTH, "{depth}");
        assert!(depth > 3 * MAX_TREE_DEPTH - 10, "{depth}");
        let outcome = std::thread::Builder::new()
            .stack_size(eval_red_zone(depth) + (256 << 10))
            .spawn(move || {
                let context = cel::Context::with_env(Arc::clone(&env));
                evaluate_metered(depth, || cel::Value::resolve(&tree, &context)).unwrap()
            })
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(outcome, (Ok(cel::Value::Bool(true)), false));
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
