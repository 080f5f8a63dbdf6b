//! `x-kubernetes-validations` rules, evaluated with the `cel` crate (cel-rust) where it can:
//! `self` is the value the rule sits on, converted as the API server converts it for CEL
//! (apiextensions-apiserver `pkg/apiserver/schema/cel/values.go` and `model/`: `integer` is
//! int, `number` is double, objects are maps of the fields left after pruning).
//!
//! What is reported as "not checked" rather than guessed: transition rules (they read `oldSelf`,
//! the object before the update), rules the crate cannot parse, and rules whose evaluation fails
//! for another reason than a missing field (a function of the Kubernetes CEL libraries the crate
//! lacks — `quantity`, `url`, `ip`, `isSorted`, … —, or a type mix the API server's type
//! checker would have refused when the CRD was created). A missing field (`no such key`) is an
//! error, as the API server reports it. `messageExpression`, `fieldPath` and `reason` are not
//! used: a failure is reported at the rule's node with its `message` (or "failed rule: …",
//! the API server's default).

use std::sync::{Arc, OnceLock};

use cel::{Env, Program};

/// The CEL environment the rules run in: the standard library plus the strings extension
/// (`lowerAscii`, `split`, `join`, …), which Kubernetes enables too.
pub(crate) fn environment() -> Arc<Env> {
    let mut env = Env::stdlib();
    // The extension only declares functions; it cannot fail on a fresh environment, and if it
    // did, rules using it would be reported as not checked.
    let _ = env.add_extension(cel::extensions::strings);
    Arc::new(env)
}

/// One rule, parsed the first time it is evaluated: the `cel` crate's ANTLR parser costs
/// millions of instructions per rule, far more than checking every step of a gateway, and most
/// rules of a CRD sit on fields no script writes.
#[derive(Clone)]
pub struct CelRule {
    pub rule: String,
    pub message: Option<String>,
    env: Arc<Env>,
    check: OnceLock<Check>,
}

impl std::fmt::Debug for CelRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CelRule")
            .field("rule", &self.rule)
            .field("message", &self.message)
            .field("check", &self.check.get())
            .finish()
    }
}

#[derive(Clone)]
pub(super) enum Check {
    Ready(Arc<Program>, Arc<Env>),
    Transition,
    Refused(String),
}

impl std::fmt::Debug for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Check::Ready(program, _) => f.debug_tuple("Ready").field(program).finish(),
            Check::Transition => f.write_str("Transition"),
            Check::Refused(reason) => f.debug_tuple("Refused").field(reason).finish(),
        }
    }
}

/// What evaluating a rule gave.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum CelOutcome {
    Passed,
    /// The rule is false or its evaluation fails as it would in the API server.
    Failed(String),
    NotChecked(String),
}

impl CelRule {
    pub(crate) fn compile(rule: String, message: Option<String>, env: &Arc<Env>) -> CelRule {
        CelRule {
            rule,
            message,
            env: Arc::clone(env),
            check: OnceLock::new(),
        }
    }

    /// The parsed rule (parsed on first use; every later use shares it).
    pub(super) fn check(&self) -> &Check {
        self.check
            .get_or_init(|| match self.env.compile(&self.rule) {
                Err(errors) => Check::Refused(format!("the CEL crate cannot parse it: {errors}")),
                Ok(program) if program.references().has_variable("oldSelf") => Check::Transition,
                Ok(program) => Check::Ready(Arc::new(program), Arc::clone(&self.env)),
            })
    }
}
