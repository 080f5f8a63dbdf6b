//! CRD validation ratcheting (KEP-4008, GA in Kubernetes 1.33): on an update, the API server
//! lets an error through when the value it is about is unchanged from the object before the
//! update, so an object that an older, laxer CRD admitted can still be updated elsewhere.
//!
//! The rules, as apiextensions-apiserver and apiserver apply them (read, not copied):
//! - `pkg/apiserver/validation/ratcheting.go` (`ratchetingValueValidator.Validate`): a node's
//!   schema errors, its descendants' included, become warnings when the node is equal to its
//!   correlated old value; a node that cannot be correlated leaves its errors to the nearest
//!   correlated ancestor.
//! - apiserver `pkg/cel/common/equality.go` (`CorrelatedObject`): an object's field is
//!   correlated with the old object's field of the same name; an item of a `map` list with the
//!   old item of the same keys; items of `set` and atomic lists are not correlated (the list is
//!   compared whole).
//! - apiextensions `schema/cel/validation.go` (`validateExpressions`, `shouldRatchetError`): a
//!   false rule that does not read `oldSelf` is ratcheted by its node's correlation (or the
//!   nearest correlated ancestor's); an evaluation error, and a transition rule, never are.
//! - `pkg/registry/customresource/strategy.go` (`ValidateUpdate`): list-type uniqueness is
//!   checked apart, and its errors are dropped when the old object already had some.
//!   Embedded-resource and metadata rules are not ratcheted.

use std::cell::Cell;

use super::{Finding, Severity};
use crate::value::JsonValue;
use crate::yaml::PathSeg;

/// What ratcheted findings add to their message.
const RATCHETED: &str = " (unchanged from the object before the update, so the API \
     server lets it through: CRD validation ratcheting)";

/// The rules of list-type uniqueness, which the API server checks apart from the schema.
const LIST_TYPE_RULES: [&str; 2] = ["x-kubernetes-list-type", "x-kubernetes-list-map-keys"];

/// Errors the API server raises outside the schema validator, so that ratcheting by value
/// never lets them through: list-type uniqueness (see [`list_types`]) and embedded resources'
/// `apiVersion`/`kind` (`schema/objectmeta`).
const NOT_RATCHETED: [&str; 3] = [
    LIST_TYPE_RULES[0],
    LIST_TYPE_RULES[1],
    "x-kubernetes-embedded-resource",
];

/// Whether `finding` is a list-type uniqueness error.
pub(super) fn is_list_type_error(finding: &Finding) -> bool {
    finding.severity == Severity::Error && LIST_TYPE_RULES.contains(&finding.rule)
}

/// An update's list-type uniqueness errors are dropped when the object before it had some
/// (`old_had_some`, asked only when there are any): they stay as warnings saying so.
pub(super) fn list_types(findings: &mut [Finding], old_had_some: impl FnOnce() -> bool) {
    if !findings.iter().any(is_list_type_error) || !old_had_some() {
        return;
    }
    for finding in findings.iter_mut().filter(|f| is_list_type_error(f)) {
        finding.severity = Severity::Warning;
        finding.message.push_str(
            " (the object before the update had list-type errors too, so the API server lets \
             it through)",
        );
    }
}

/// The walk's correlated nodes, outermost first: the walk's own path from the root for as long
/// as every node on it has a correlated old value (below a node that has none, nothing is
/// correlated, so these always form a prefix of the walk).
#[derive(Default)]
pub(super) struct Correlation<'v> {
    nodes: Vec<Node<'v>>,
}

struct Node<'v> {
    new: &'v JsonValue,
    old: &'v JsonValue,
    /// Whether `new` equals `old`, once asked (comparing is left until an error needs it).
    equal: Cell<Option<bool>>,
}

impl<'v> Correlation<'v> {
    /// Enters a node whose old value is `old`.
    pub(super) fn enter(&mut self, new: &'v JsonValue, old: &'v JsonValue) {
        self.nodes.push(Node {
            new,
            old,
            equal: Cell::new(None),
        });
    }

    /// Leaves the node [`Self::enter`] entered last.
    pub(super) fn leave(&mut self) {
        self.nodes.pop();
    }

    /// An error at `at` as the update leaves it: a warning saying so when `ratchets` (the kind
    /// of error ratchets at all) and [`Self::unchanged`], else an error.
    pub(super) fn finding(
        &self,
        at: &[PathSeg],
        rule: &'static str,
        message: String,
        ratchets: bool,
    ) -> Finding {
        if ratchets && !NOT_RATCHETED.contains(&rule) && self.unchanged() {
            Finding::warning(at, rule, message + RATCHETED)
        } else {
            Finding::error(at, rule, message)
        }
    }

    /// Whether errors raised where the walk is are ratcheted: the nearest correlated node (the
    /// walk's own, or its nearest correlated ancestor) is unchanged. Never, outside an update.
    pub(super) fn unchanged(&self) -> bool {
        self.nodes
            .last()
            .is_some_and(|node| match node.equal.get() {
                Some(equal) => equal,
                None => {
                    let equal = node.new == node.old;
                    node.equal.set(Some(equal));
                    equal
                }
            })
    }
}

#[cfg(test)]
mod tests {
    use crate::schema::Severity;
    use crate::schema::cel::Old;
    use crate::schema::compile::Schema;
    use crate::schema::validate::validate_root;
    use crate::value::JsonValue;
    use crate::yaml::parse_first_document;

    fn json(yaml: &str) -> JsonValue {
        parse_first_document(yaml).unwrap().unwrap().to_json()
    }

    fn schema(yaml: &str) -> Schema {
        Schema::compile(&parse_first_document(yaml).unwrap().unwrap()).unwrap()
    }

    /// The findings of an update from `old` to `new`: path, rule, severity.
    fn update(schema_yaml: &str, new: &str, old: &str) -> Vec<(String, &'static str, Severity)> {
        let (new, old) = (json(new), json(old));
        let mut out = Vec::new();
        validate_root(
            &schema(schema_yaml),
            &new,
            Old::Value(&old),
            false,
            &mut out,
        );
        out.into_iter()
            .map(|f| (f.path_text(), f.rule, f.severity))
            .collect()
    }

    const PORTS: &str = "type: object
properties:
  name: {type: string, pattern: '^[a-z]+$'}
  tags:
    type: array
    items: {type: string, maxLength: 3}
  routes:
    type: array
    x-kubernetes-list-type: map
    x-kubernetes-list-map-keys: [name]
    items:
      type: object
      required: [port]
      properties:
        name: {type: string}
        port: {type: integer, maximum: 100}
        weight:
          type: integer
          x-kubernetes-validations:
          - rule: self <= 50
            message: at most 50
          - rule: self >= oldSelf
            message: may only grow
";

    #[test]
    fn an_unchanged_invalid_value_is_a_warning_and_a_changed_one_an_error() {
        use Severity::{Error, Warning};
        let old = "{name: Web, routes: [{name: a, port: 500}]}";
        assert_eq!(
            update(
                PORTS,
                "{name: Web, routes: [{name: a, port: 500}, {name: b, port: 5}]}",
                old
            ),
            [
                ("name".to_owned(), "pattern", Warning),
                ("routes[0].port".to_owned(), "maximum", Warning),
            ]
        );
        assert_eq!(
            update(PORTS, "{name: Api, routes: [{name: a, port: 501}]}", old),
            [
                ("name".to_owned(), "pattern", Error),
                ("routes[0].port".to_owned(), "maximum", Error),
            ]
        );
        // Without the old object (a create), nothing is ratcheted.
        let s = schema(PORTS);
        let mut out = Vec::new();
        validate_root(&s, &json(old), Old::Unknown, false, &mut out);
        assert!(out.iter().all(|f| f.severity == Error), "{out:?}");
    }

    #[test]
    fn items_of_an_atomic_list_ratchet_only_with_the_whole_list() {
        use Severity::{Error, Warning};
        let old = "{tags: [long, ok]}";
        assert_eq!(
            update(PORTS, old, old),
            [("tags[0]".to_owned(), "maxLength", Warning)]
        );
        // Another item added: the list changed, and its items are not correlated.
        assert_eq!(
            update(PORTS, "{tags: [long, ok, new]}", old),
            [("tags[0]".to_owned(), "maxLength", Error)]
        );
    }

    #[test]
    fn a_missing_required_field_ratchets_with_its_object() {
        use Severity::{Error, Warning};
        let old = "{routes: [{name: a}]}";
        assert_eq!(
            update(PORTS, "{routes: [{name: a}, {name: b, port: 1}]}", old),
            [("routes[0].port".to_owned(), "required", Warning)]
        );
        assert_eq!(
            update(PORTS, "{routes: [{name: a, weight: 1}]}", old),
            [("routes[0].port".to_owned(), "required", Error)]
        );
    }

    #[test]
    fn false_rules_ratchet_unless_they_read_old_self() {
        use Severity::{Error, Warning};
        // Unchanged 60: `self <= 50` ratchets. Down from 70 to 60: both rules fail, and
        // neither ratchets (the value changed).
        assert_eq!(
            update(
                PORTS,
                "{routes: [{name: a, port: 1, weight: 60}]}",
                "{routes: [{name: a, port: 1, weight: 60}]}"
            ),
            [("routes[0].weight".to_owned(), "cel", Warning)]
        );
        assert_eq!(
            update(
                PORTS,
                "{routes: [{name: a, port: 1, weight: 60}]}",
                "{routes: [{name: a, port: 1, weight: 70}]}"
            ),
            [
                ("routes[0].weight".to_owned(), "cel", Error),
                ("routes[0].weight".to_owned(), "cel", Error),
            ]
        );
    }

    #[test]
    fn list_type_errors_are_dropped_only_when_the_old_object_had_some() {
        use Severity::{Error, Warning};
        let dup = "{routes: [{name: a, port: 1}, {name: a, port: 2}]}";
        assert_eq!(
            update(PORTS, dup, "{routes: [{name: a, port: 1}]}"),
            [("routes[1]".to_owned(), "x-kubernetes-list-map-keys", Error)]
        );
        assert_eq!(
            update(
                PORTS,
                dup,
                "{routes: [{name: b, port: 1}, {name: b, port: 2}]}"
            ),
            [(
                "routes[1]".to_owned(),
                "x-kubernetes-list-map-keys",
                Warning
            )]
        );
    }

    /// An `allOf` branch's errors are its node's, ratcheted once, by the node; an `allOf`
    /// inside a branch as well (its errors were ratcheted by the branch, then dropped as
    /// warnings by the branch's caller).
    #[test]
    fn all_of_errors_ratchet_once_with_their_node() {
        use Severity::{Error, Warning};
        // A branch's schema error under an unchanged node is a warning, not dropped.
        let required = "type: object\nproperties:\n  a:\n    type: object\n    allOf:\n    - required: [count]\n  b: {type: integer}\n";
        assert_eq!(
            update(required, "{a: {}, b: 1}", "{a: {}, b: 2}"),
            [("a.count".to_owned(), "required", Warning)]
        );
        assert_eq!(
            update(required, "{a: {}, b: 1}", "{b: 1}"),
            [("a.count".to_owned(), "required", Error)]
        );
        // Ratcheted once, not once by the branch and again by its node.
        let unchanged = json("{a: {}}");
        let mut out = Vec::new();
        validate_root(
            &schema(required),
            &unchanged,
            Old::Value(&unchanged),
            false,
            &mut out,
        );
        assert_eq!(out[0].message.matches("ratcheting").count(), 1, "{out:?}");
        // An allOf inside a branch.
        let nested = "type: object\nproperties:\n  a:\n    type: object\n    properties:\n      num: {type: integer}\n    allOf:\n    - allOf:\n      - properties:\n          num: {minimum: 1}\n  b: {type: integer}\n";
        assert_eq!(
            update(nested, "{a: {num: 0}, b: 1}", "{a: {num: 0}, b: 2}"),
            [("a.num".to_owned(), "minimum", Warning)]
        );
        assert_eq!(
            update(nested, "{a: {num: 0}}", "{a: {num: 5}}"),
            [("a.num".to_owned(), "minimum", Error)]
        );
    }
}
