//! The CEL environment `x-kubernetes-validations` rules run in: the `cel` crate's standard
//! library plus the libraries the Kubernetes API server adds, as of [`KUBERNETES_VERSION`]
//! (k8s.io/apiserver `pkg/cel/environment/base.go`, `baseOpts`: each library with the version
//! that introduced it), and the check that tells which functions of a rule this checker lacks,
//! so that such a rule is reported as not checked rather than passing because the call sat in
//! a branch that did not run.
//!
//! Implemented here (k8s.io/apiserver `pkg/cel/library/`): `url`/`isURL` and the URL getters
//! (1.0), `find`/`findAll` (1.0), the lists library `isSorted`/`sum`/`min`/`max`/`indexOf`/
//! `lastIndexOf` (1.0), `quantity`/`isQuantity` (1.28), sets (`sets.contains`, `equivalent`,
//! `intersects`, 1.29), `ip`/`isIP`/`cidr`/`isCIDR` (1.30), the format library
//! (`format.dns1123Label()`, …, `format.named`, `.validate`; 1.31, all but `datetime`), semver
//! (1.33); from the crate: the
//! strings extension (1.29 takes version 2; the crate also has `reverse`, of version 3) and
//! cel-go's lists extension (`slice`, `flatten`, `distinct`, `reverse`, `sort`, `sortBy`,
//! `lists.range`, 1.34), plus its `first`/`last` here.
//! Not implemented, so reported as not checked: two-variable comprehensions (`all(k, v, …)`,
//! `transformList`, `transformMap`, …, 1.32). The authorizer library is in the
//! base environment too, but CRD rules have no `authorizer` variable to call it on.

/// `Val` and `StaticVal` for a library's value type: a CEL value of the opaque type `$cel`,
/// equal by the Rust type's `PartialEq` (each library defines only what differs).
macro_rules! library_value {
    ($ty:ty, $cel:expr) => {
        impl cel::common::value::Val for $ty {
            fn get_type(&self) -> &cel::common::types::Type {
                &$cel
            }
            fn cel_type() -> &'static cel::common::types::Type {
                &$cel
            }
            fn equals(&self, other: &dyn cel::common::value::Val) -> bool {
                other.downcast_ref::<$ty>() == Some(self)
            }
            fn clone_as_boxed<'v>(&self) -> Box<dyn cel::common::value::Val + 'v> {
                Box::new(<$ty as Clone>::clone(self))
            }
            fn as_any(&self) -> Option<&dyn std::any::Any> {
                Some(self)
            }
        }
        impl cel::common::value::StaticVal for $ty {}
    };
}

mod format;
mod ip;
mod lists;
mod quantity;
mod regex;
mod semver;
mod sets;
mod url;

use std::collections::HashSet;
use std::sync::Arc;

use cel::common::ast::{CallExpr, Expr, IdedExpr};
use cel::{Context, DeclarationError, Env, ExecutionError, Value};

use super::cel_bounds;

/// The Kubernetes version whose CRD validation environment this follows.
pub const KUBERNETES_VERSION: &str = "1.34";

/// The environment rules run in. Registration cannot fail on a fresh environment (names are
/// distinct); if it did, the functions it failed to add are reported as missing by
/// [`unsupported_function`].
pub(crate) fn environment() -> Arc<Env> {
    let mut env = Env::stdlib();
    let _ = register(&mut env);
    Arc::new(env)
}

fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_extension(cel::extensions::strings)?;
    env.add_extension(cel::extensions::lists)?;
    url::register(env)?;
    regex::register(env)?;
    lists::register(env)?;
    quantity::register(env)?;
    sets::register(env)?;
    ip::register(env)?;
    format::register(env)?;
    semver::register(env)?;
    // The evaluation meter's functions (`cel_bounds::metered` puts their calls in a rule).
    cel_bounds::register_meter(env)?;
    Ok(())
}

/// An error for a value this checker does not model (a quantity past 128 bits, say): the rule
/// is reported as not checked with this reason, not as failed.
pub(crate) fn not_modelled(function: &str, reason: impl std::fmt::Display) -> ExecutionError {
    ExecutionError::InternalError(format!("{function}: {reason}"))
}

/// The reason a rule cannot be checked because it calls functions `env` does not declare
/// (naming them), or `None` when every call is declared. Probes each function by calling it
/// with no arguments: an undeclared one is the only call that fails with
/// `UndeclaredReference`.
pub(crate) fn unsupported_function(root: &IdedExpr, env: &Arc<Env>) -> Option<String> {
    let variables = bound_variables(root);
    let context = Context::with_env(Arc::clone(env));
    let mut seen = HashSet::new();
    let mut missing: Vec<(String, &CallExpr)> = Vec::new();
    let mut pending = vec![root];
    while let Some(node) = pending.pop() {
        pending.extend(cel_bounds::children(node).into_iter().rev());
        let Expr::Call(call) = &node.expr else {
            continue;
        };
        if cel_bounds::is_operator(&call.func_name) || !seen.insert(call_key(call)) {
            continue;
        }
        let name = match qualified_name(call, &variables) {
            Some(qualified) if probe(&context, &qualified, false) => continue,
            Some(qualified) => qualified,
            None if probe(&context, &call.func_name, call.target.is_some()) => continue,
            None => call.func_name.clone(),
        };
        if !missing.iter().any(|(seen, _)| *seen == name) {
            missing.push((name, call));
        }
    }
    (!missing.is_empty()).then(|| missing_reason(&missing))
}

fn call_key(call: &CallExpr) -> (String, bool, usize) {
    (
        call.func_name.clone(),
        call.target.is_some(),
        call.args.len(),
    )
}

/// Variables a rule can name: `self`, `oldSelf` and every comprehension's variables.
fn bound_variables(root: &IdedExpr) -> HashSet<String> {
    let mut names: HashSet<String> = ["self", "oldSelf"].map(str::to_owned).into();
    let mut pending = vec![root];
    while let Some(node) = pending.pop() {
        if let Expr::Comprehension(c) = &node.expr {
            names.insert(c.iter_var.clone());
            names.insert(c.accu_var.clone());
            names.extend(c.iter_var2.clone());
        }
        pending.extend(cel_bounds::children(node));
    }
    names
}

/// `sets.contains` for `sets.contains(a, b)`: a call on a dotted name that is no variable is
/// a call of a namespaced function.
fn qualified_name(call: &CallExpr, variables: &HashSet<String>) -> Option<String> {
    let mut segments = vec![call.func_name.as_str()];
    let mut target = call.target.as_deref()?;
    loop {
        match &target.expr {
            Expr::Select(select) if !select.test => {
                segments.push(&select.field);
                target = &select.operand;
            }
            Expr::Ident(root) if !variables.contains(root) => {
                segments.push(root);
                segments.reverse();
                return Some(segments.join("."));
            }
            _ => return None,
        }
    }
}

/// Whether `env` declares a global (or, with `member`, a member) function `name`.
fn probe(context: &Context<'_, '_>, name: &str, member: bool) -> bool {
    let target = member.then(|| {
        Box::new(IdedExpr {
            id: 0,
            expr: Expr::Literal(cel::common::ast::LiteralValue::Null),
        })
    });
    let call = IdedExpr {
        id: 0,
        expr: Expr::Call(CallExpr {
            func_name: name.to_owned(),
            target,
            args: Vec::new(),
        }),
    };
    !matches!(
        Value::resolve(&call, context),
        Err(ExecutionError::UndeclaredReference(_))
    )
}

fn missing_reason(missing: &[(String, &CallExpr)]) -> String {
    let names = missing
        .iter()
        .map(|(name, _)| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let two_variable = missing.iter().any(|(name, call)| {
        matches!(name.as_str(), "all" | "exists" | "existsOne" | "exists_one")
            && call.args.len() == 3
            || matches!(
                name.as_str(),
                "transformList" | "transformMap" | "transformMapEntry"
            )
    });
    if two_variable {
        return format!(
            "it uses {names}: two-variable comprehensions (Kubernetes 1.32), which this \
             checker does not implement"
        );
    }
    format!(
        "it uses {names}, which this checker does not have (it implements the CEL of \
         Kubernetes {KUBERNETES_VERSION} CRD validation except two-variable \
         comprehensions)"
    )
}

#[cfg(test)]
mod tests;
