//! `x-kubernetes-validations` rules as data: the rule's texts (`rule`, `message`,
//! `messageExpression`, `reason`, `fieldPath`, `optionalOldSelf`), the CEL environment they run
//! in, and what evaluating one gives. Parsing, costing and evaluating a rule against a value
//! under its schema is `cel_eval.rs` (it needs the compiled schema, which holds these rules).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use cel::{Env, IdedExpr, Program};

use crate::value::JsonValue;
use crate::yaml::PathSeg;

/// The CEL environment the rules of one schema run in (see `cel_library/mod.rs`), with the
/// rules it has parsed, by their text: a CRD repeats a rule at many nodes (Istio's duration
/// rule sits under every timeout), and parsing is the costly part (the `cel` crate's ANTLR
/// parser), so each text is parsed once. What depends on the node (the estimated cost) is not
/// kept here.
pub struct RuleEnv {
    pub(super) env: Arc<Env>,
    /// Parsed programs, or why a text cannot be checked, by rule text.
    pub(super) parsed: Mutex<HashMap<String, Result<Arc<Parsed>, String>>>,
}

/// A rule's text parsed, and the tree that is evaluated: the same with the calls of the
/// evaluation meter put in (`cel_bounds::metered`).
pub(super) struct Parsed {
    pub(super) program: Program,
    pub(super) metered: IdedExpr,
    /// How many levels deep `metered` is: what its evaluation needs of the stack.
    pub(super) metered_depth: usize,
}

pub(crate) fn environment() -> Arc<RuleEnv> {
    Arc::new(RuleEnv {
        env: super::cel_library::environment(),
        parsed: Mutex::new(HashMap::new()),
    })
}

/// What a rule says besides its expression (`x-kubernetes-validations` entry fields).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuleText {
    pub rule: String,
    pub message: Option<String>,
    pub message_expression: Option<String>,
    /// `FieldValueInvalid` (the default), `FieldValueForbidden`, `FieldValueRequired` or
    /// `FieldValueDuplicate`.
    pub reason: Option<String>,
    /// Where a failure is reported, relative to the rule's node (`.spec.port`, `['a.b']`).
    pub field_path: Vec<PathSeg>,
    /// `optionalOldSelf`: the rule also runs on a create, with `oldSelf` an optional.
    pub optional_old_self: bool,
}

/// One rule, parsed the first time it is evaluated: the `cel` crate's ANTLR parser costs
/// millions of instructions per rule, far more than checking every step of a gateway, and most
/// rules of a CRD sit on fields no script writes.
#[derive(Clone)]
pub struct CelRule {
    pub rule: String,
    pub message: Option<String>,
    pub(super) text: Arc<RuleText>,
    pub(super) env: Arc<RuleEnv>,
    pub(super) check: OnceLock<Check>,
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
    Ready {
        program: Arc<Parsed>,
        message: Option<Arc<Parsed>>,
        transition: bool,
        /// Estimated costs of the rule and of its messageExpression (cel_cost.rs).
        cost: u64,
        message_cost: u64,
    },
    /// The API server would refuse the CRD because of this rule.
    CrdRefused(String),
    Refused(String),
}

impl std::fmt::Debug for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Check::Ready { program, .. } => f.debug_tuple("Ready").field(&program.program).finish(),
            Check::CrdRefused(reason) => f.debug_tuple("CrdRefused").field(reason).finish(),
            Check::Refused(reason) => f.debug_tuple("Refused").field(reason).finish(),
        }
    }
}

/// The value before the update at a rule's node, for transition rules (`oldSelf`).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Old<'a> {
    /// Not known to the caller (a validation that is not an update): transition rules are
    /// reported as not checked.
    Unknown,
    /// The old object lacks this node (or it cannot be matched, as in an atomic list):
    /// transition rules do not run (apiextensions `schema/cel/validation.go`).
    Absent,
    Value(&'a JsonValue),
}

impl<'a> Old<'a> {
    /// The old value of field `key` below this one.
    pub(crate) fn field(self, key: &str) -> Old<'a> {
        match self {
            Old::Value(JsonValue::Object(fields)) => {
                fields.get(key).map_or(Old::Absent, Old::Value)
            }
            Old::Value(_) | Old::Absent => Old::Absent,
            Old::Unknown => Old::Unknown,
        }
    }
}

/// A failed rule, as the API server reports it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Failure {
    pub message: String,
    /// The rule's `fieldPath` when the rule is false (an evaluation error is reported at the
    /// rule's node).
    pub field_path: Vec<PathSeg>,
    /// Whether an update that leaves the rule's value unchanged lets it through (CRD
    /// validation ratcheting, `ratchet.rs`): a false rule that does not read `oldSelf`; never
    /// an evaluation error.
    pub ratchets: bool,
}

/// What evaluating a rule gave.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum CelOutcome {
    Passed,
    /// The rule is false or its evaluation fails as it would in the API server.
    Failed(Failure),
    NotChecked(String),
    /// The API server refuses the CRD itself because of this rule (its estimated cost).
    CrdRefused(String),
}

impl CelRule {
    pub(crate) fn compile(text: RuleText, env: &Arc<RuleEnv>) -> CelRule {
        CelRule {
            rule: text.rule.clone(),
            message: text.message.clone(),
            text: Arc::new(text),
            env: Arc::clone(env),
            check: OnceLock::new(),
        }
    }
}

/// A rule's text as messages show it: whole up to 120 characters, cut after.
pub(crate) fn short_rule(rule: &str) -> String {
    const SHOWN: usize = 120;
    let rule = rule.trim();
    if rule.chars().count() <= SHOWN {
        rule.to_owned()
    } else {
        format!("{}…", rule.chars().take(SHOWN).collect::<String>())
    }
}

/// Reads a rule's `fieldPath` (`.a.b`, `.a['b.c']`) into path segments; `None` when it is not
/// one (the API server refuses such a CRD).
pub(crate) fn parse_field_path(text: &str) -> Option<Vec<PathSeg>> {
    let mut segments = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            if end == 0 {
                return None;
            }
            segments.push(PathSeg::Key(after[..end].to_owned()));
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix("['") {
            let end = after.find("']")?;
            segments.push(PathSeg::Key(after[..end].to_owned()));
            rest = &after[end + 2..];
        } else {
            return None;
        }
    }
    Some(segments)
}

/// Words CEL reserves (k8s.io/apiserver `pkg/cel/escaping.go`, `celReservedSymbols`): a
/// property named so is `__word__` in CEL.
const CEL_RESERVED_SYMBOLS: [&str; 21] = [
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// The name a property of an object with `properties` has in CEL, as the API server exposes it
/// (k8s.io/apiserver `pkg/cel/escaping.go`, `Escape`, used by `pkg/cel/common/schemas.go` and
/// `valuesunstructured.go`): a reserved word becomes `__word__`; otherwise `__` becomes
/// `__underscores__`, `.` `__dot__`, `-` `__dash__` and `/` `__slash__`. `None` (the property
/// is not accessible) for an empty name, one starting with a digit, or one with any character
/// but ASCII letters, digits and `_.-/`.
pub(crate) fn escape_property(name: &str) -> Option<String> {
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    if CEL_RESERVED_SYMBOLS.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let mut escaped = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(c) = rest.chars().next() {
        // Scanned as escaping.go's `expandMatcher` matches, leftmost first: `__` before `_`.
        if let Some(after) = rest.strip_prefix("__") {
            escaped.push_str("__underscores__");
            rest = after;
            continue;
        }
        match c {
            '.' => escaped.push_str("__dot__"),
            '-' => escaped.push_str("__dash__"),
            '/' => escaped.push_str("__slash__"),
            c if c.is_ascii_alphanumeric() || c == '_' => escaped.push(c),
            _ => return None,
        }
        rest = &rest[c.len_utf8()..];
    }
    Some(escaped)
}

/// The property a CEL field name stands for (escaping.go, `Unescape`): each `__word__` (two
/// underscores, characters other than `_`, two underscores, leftmost first) is replaced by what
/// it escapes; `None` when one escapes nothing, or a reserved word's is not the whole name.
pub(crate) fn unescape_property(field: &str) -> Option<String> {
    let mut out = String::with_capacity(field.len());
    let mut rest = field;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("__") {
            let word_end = after.find('_').unwrap_or(after.len());
            if word_end > 0 && after[word_end..].starts_with("__") {
                let word = &after[..word_end];
                let whole = 2 + word_end + 2 == field.len();
                match word {
                    "underscores" => out.push_str("__"),
                    "dot" => out.push('.'),
                    "dash" => out.push('-'),
                    "slash" => out.push('/'),
                    word if CEL_RESERVED_SYMBOLS.contains(&word) && whole => out.push_str(word),
                    _ => return None,
                }
                rest = &after[word_end + 2..];
                continue;
            }
        }
        let c = rest.chars().next().unwrap_or('_');
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn property_names_escape_and_unescape_as_in_the_api_server() {
        // k8s.io/apiserver `pkg/cel/escaping.go` (and its tests' cases).
        for (name, escaped) in [
            ("namespace", Some("__namespace__")),
            ("if", Some("__if__")),
            ("plain_name", Some("plain_name")),
            ("_leading", Some("_leading")),
            ("a-b", Some("a__dash__b")),
            ("a.b/c", Some("a__dot__b__slash__c")),
            ("x__y", Some("x__underscores__y")),
            ("___x", Some("__underscores___x")),
            ("namespaces", Some("namespaces")),
            ("1st", None),
            ("a b", None),
            ("ünicode", None),
            ("", None),
        ] {
            assert_eq!(escape_property(name).as_deref(), escaped, "{name}");
            if let Some(escaped) = escaped {
                assert_eq!(
                    unescape_property(escaped).as_deref(),
                    Some(name),
                    "{escaped}"
                );
            }
        }
        // Escapes that stand for nothing, or a reserved word's inside a longer name.
        assert_eq!(unescape_property("__foo__"), None);
        assert_eq!(unescape_property("a__if__b"), None);
        assert_eq!(unescape_property("___dot__").as_deref(), Some("_."));
    }
}
