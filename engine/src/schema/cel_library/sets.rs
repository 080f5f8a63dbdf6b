//! cel-go's sets extension (`sets.contains`, `sets.equivalent`, `sets.intersects`), in the
//! Kubernetes base environment since 1.29 (k8s.io/apiserver `pkg/cel/environment/base.go`,
//! `ext.Sets()`); semantics from cel-go `ext/sets.go`: membership by CEL equality.

use cel::common::types::{CelBool, LIST_TYPE};
use cel::common::value::{CowVal, Val};
use cel::{DeclarationError, Env, ExecutionError};

use super::lists::items;

type Args<'b, 'v> = Vec<CowVal<'b, 'v>>;
type Returns<'b, 'v> = Result<CowVal<'b, 'v>, ExecutionError>;

/// Every item of `b` is in `a`.
fn holds_all(a: &[&dyn Val], b: &[&dyn Val]) -> bool {
    b.iter().all(|x| a.iter().any(|y| y.equals(*x)))
}

fn contains<'b, 'v>(args: Args<'b, 'v>) -> Returns<'b, 'v> {
    let (a, b) = (
        items(args[0].as_ref(), "sets")?,
        items(args[1].as_ref(), "sets")?,
    );
    Ok(CowVal::owned(CelBool::from(holds_all(&a, &b))))
}

fn equivalent<'b, 'v>(args: Args<'b, 'v>) -> Returns<'b, 'v> {
    let (a, b) = (
        items(args[0].as_ref(), "sets")?,
        items(args[1].as_ref(), "sets")?,
    );
    Ok(CowVal::owned(CelBool::from(
        holds_all(&a, &b) && holds_all(&b, &a),
    )))
}

fn intersects<'b, 'v>(args: Args<'b, 'v>) -> Returns<'b, 'v> {
    let (a, b) = (
        items(args[0].as_ref(), "sets")?,
        items(args[1].as_ref(), "sets")?,
    );
    let any = b.iter().any(|x| a.iter().any(|y| y.equals(*x)));
    Ok(CowVal::owned(CelBool::from(any)))
}

pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let lists = || vec![LIST_TYPE, LIST_TYPE];
    env.add_overload(
        "sets.contains",
        "list_sets_contains_list",
        lists(),
        contains,
    )?;
    env.add_overload(
        "sets.equivalent",
        "list_sets_equivalent_list",
        lists(),
        equivalent,
    )?;
    env.add_overload(
        "sets.intersects",
        "list_sets_intersects_list",
        lists(),
        intersects,
    )?;
    Ok(())
}
