//! Kubernetes' CEL lists library (`isSorted`, `sum`, `min`, `max`, `indexOf`, `lastIndexOf`),
//! as k8s.io/apiserver `pkg/cel/library/lists.go` declares it (version 0, in every Kubernetes
//! through 1.36), and cel-go's lists extension `first`/`last` (`ext.Lists` version 3, in the
//! base environment since Kubernetes 1.34), which the `cel` crate's lists extension lacks.

use std::cmp::Ordering;

use cel::common::types::{CelBool, CelInt, CelOptional, DYN_TYPE, LIST_TYPE};
use cel::common::value::{CowVal, Val};
use cel::{DeclarationError, Env, ExecutionError};

type Args<'b, 'v> = Vec<CowVal<'b, 'v>>;
type Returns<'b, 'v> = Result<CowVal<'b, 'v>, ExecutionError>;

/// The list argument's items, borrowed (`function` names the caller in the error).
pub(super) fn items<'a, 'v>(
    list: &'a (dyn Val + 'v),
    function: &str,
) -> Result<Vec<&'a (dyn Val + 'v)>, ExecutionError> {
    let iterable = list.as_iterable().ok_or_else(|| {
        ExecutionError::function_error(
            function,
            format!("{} is not a list", list.get_type().name()),
        )
    })?;
    let mut out = Vec::new();
    let mut iter = iterable.iter();
    while let Some(item) = iter.next() {
        out.push(item);
    }
    Ok(out)
}

fn compare(a: &dyn Val, b: &dyn Val, function: &str) -> Result<Ordering, ExecutionError> {
    let comparer = a.as_comparer().ok_or_else(|| {
        ExecutionError::function_error(
            function,
            format!("{} is not comparable", a.get_type().name()),
        )
    })?;
    comparer.compare(b)
}

fn is_sorted<'b, 'v>(args: Args<'b, 'v>) -> Returns<'b, 'v> {
    let items = items(args[0].as_ref(), "isSorted")?;
    for pair in items.windows(2) {
        if compare(pair[0], pair[1], "isSorted")? == Ordering::Greater {
            return Ok(CowVal::owned(CelBool::from(false)));
        }
    }
    Ok(CowVal::owned(CelBool::from(true)))
}

fn sum<'b, 'v>(args: Args<'b, 'v>) -> Returns<'b, 'v> {
    let items = items(args[0].as_ref(), "sum")?;
    let Some((first, rest)) = items.split_first() else {
        // lists.go gives the zero of the element type; an empty list's element type is not
        // known here, and int's zero compares equal to the other numeric zeros.
        return Ok(CowVal::owned(CelInt::from(0)));
    };
    let mut total: Box<dyn Val + 'v> = first.clone_as_boxed();
    for item in rest {
        let adder = total.as_adder().ok_or_else(|| {
            ExecutionError::function_error(
                "sum",
                format!("{} cannot be summed", item.get_type().name()),
            )
        })?;
        let next = adder.add(*item)?.as_ref().clone_as_boxed();
        total = next;
    }
    Ok(CowVal::Owned(total))
}

fn extreme<'b, 'v>(args: Args<'b, 'v>, function: &str, keep: Ordering) -> Returns<'b, 'v> {
    let items = items(args[0].as_ref(), function)?;
    let Some((first, rest)) = items.split_first() else {
        return Err(ExecutionError::function_error(
            function,
            format!("{function} called on empty list"),
        ));
    };
    let mut best = *first;
    for item in rest {
        if compare(*item, best, function)? == keep {
            best = *item;
        }
    }
    Ok(CowVal::Owned(best.clone_as_boxed()))
}

fn min<'b, 'v>(args: Args<'b, 'v>) -> Returns<'b, 'v> {
    extreme(args, "min", Ordering::Less)
}

fn max<'b, 'v>(args: Args<'b, 'v>) -> Returns<'b, 'v> {
    extreme(args, "max", Ordering::Greater)
}

fn index_of<'b, 'v>(args: Args<'b, 'v>) -> Returns<'b, 'v> {
    let items = items(args[0].as_ref(), "indexOf")?;
    let found = items.iter().position(|item| item.equals(args[1].as_ref()));
    Ok(CowVal::owned(CelInt::from(found.map_or(-1, |i| i as i64))))
}

fn last_index_of<'b, 'v>(args: Args<'b, 'v>) -> Returns<'b, 'v> {
    let items = items(args[0].as_ref(), "lastIndexOf")?;
    let found = items.iter().rposition(|item| item.equals(args[1].as_ref()));
    Ok(CowVal::owned(CelInt::from(found.map_or(-1, |i| i as i64))))
}

fn optional_item<'b, 'v>(item: Option<&&(dyn Val + 'v)>) -> Returns<'b, 'v> {
    Ok(CowVal::owned(match item {
        Some(item) => CelOptional::of(item.clone_as_boxed()),
        None => CelOptional::none(),
    }))
}

fn first<'b, 'v>(args: Args<'b, 'v>) -> Returns<'b, 'v> {
    let items = items(args[0].as_ref(), "first")?;
    optional_item(items.first())
}

fn last<'b, 'v>(args: Args<'b, 'v>) -> Returns<'b, 'v> {
    let items = items(args[0].as_ref(), "last")?;
    optional_item(items.last())
}

pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_member_overload("isSorted", "list.isSorted()", LIST_TYPE, vec![], is_sorted)?;
    env.add_member_overload("sum", "list.sum()", LIST_TYPE, vec![], sum)?;
    env.add_member_overload("min", "list.min()", LIST_TYPE, vec![], min)?;
    env.add_member_overload("max", "list.max()", LIST_TYPE, vec![], max)?;
    env.add_member_overload(
        "indexOf",
        "list.indexOf(dyn)",
        LIST_TYPE,
        vec![DYN_TYPE],
        index_of,
    )?;
    env.add_member_overload(
        "lastIndexOf",
        "list.lastIndexOf(dyn)",
        LIST_TYPE,
        vec![DYN_TYPE],
        last_index_of,
    )?;
    env.add_member_overload("first", "list.first()", LIST_TYPE, vec![], first)?;
    env.add_member_overload("last", "list.last()", LIST_TYPE, vec![], last)?;
    Ok(())
}
