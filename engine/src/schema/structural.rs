//! The one structural-schema rule that decides which `x-kubernetes-validations` exist: the API
//! server refuses a CRD with rules inside `allOf`, `anyOf`, `oneOf` or `not` (apiextensions
//! `pkg/apiserver/schema/validation.go`, `validateNestedValueValidation`: "must be empty to be
//! structural"; CRDs are checked with `ValidateStructural`, whose options forbid nested rules).
//! So no such rule ever runs in a cluster, and none runs here: the CRD is reported instead.

use super::compile::{Additional, Schema};

/// Why the API server refuses a CRD version whose schema is `root` for rules inside junctors
/// (the first place, and how many there are), or `None`.
pub(crate) fn nested_rules_refusal(root: &Schema) -> Option<String> {
    let mut places = Vec::new();
    find(root, &mut "openAPIV3Schema".to_owned(), false, &mut places);
    let first = places.first()?;
    let more = match places.len() - 1 {
        0 => String::new(),
        1 => " (and 1 more place)".to_owned(),
        n => format!(" (and {n} more places)"),
    };
    Some(format!(
        "the API server refuses this CRD: {first}.x-kubernetes-validations must be empty to be \
         structural{more} (apiextensions allows no x-kubernetes-validations inside allOf, anyOf, \
         oneOf or not, so these rules never run)"
    ))
}

/// The places below `schema` (at `at`, from `openAPIV3Schema`, written as the API server
/// writes field paths) holding rules inside a junctor (`in_junctor`: `schema` itself is in
/// one), depth first. Runs once per CRD version. Compiled schemas nest at most 100 levels,
/// which bounds the recursion.
fn find(schema: &Schema, at: &mut String, in_junctor: bool, places: &mut Vec<String>) {
    if in_junctor && !schema.cel_rules.is_empty() {
        places.push(at.clone());
    }
    let mut below = |child: &Schema, step: std::fmt::Arguments, in_junctor: bool| {
        let len = at.len();
        std::fmt::Write::write_fmt(at, step).expect("writing to a String");
        find(child, at, in_junctor, places);
        at.truncate(len);
    };
    for (name, child) in &schema.properties {
        below(child, format_args!(".properties[{name}]"), in_junctor);
    }
    if let Additional::Schema(child) = &schema.additional {
        below(child, format_args!(".additionalProperties"), in_junctor);
    }
    if let Some(items) = &schema.items {
        below(items, format_args!(".items"), in_junctor);
    }
    let junctors = [
        ("allOf", &schema.all_of),
        ("anyOf", &schema.any_of),
        ("oneOf", &schema.one_of),
    ];
    for (junctor, branches) in junctors {
        for (index, branch) in branches.iter().enumerate() {
            below(branch, format_args!(".{junctor}[{index}]"), true);
        }
    }
    if let Some(not) = &schema.not {
        below(not, format_args!(".not"), true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::parse_first_document;

    fn refusal(yaml: &str) -> Option<String> {
        let schema = Schema::compile(&parse_first_document(yaml).unwrap().unwrap()).unwrap();
        nested_rules_refusal(&schema)
    }

    #[test]
    fn rules_inside_junctors_refuse_the_crd_and_rules_beside_them_do_not() {
        assert_eq!(
            refusal(
                "type: object\nproperties:\n  a:\n    type: integer\n    x-kubernetes-validations:\n    - rule: self > 0\n    allOf:\n    - minimum: 1\n"
            ),
            None
        );
        let refused = refusal(
            "type: object\nproperties:\n  a:\n    type: object\n    properties:\n      num: {type: integer}\n    allOf:\n    - properties:\n        num:\n          x-kubernetes-validations:\n          - rule: self > 0\n    anyOf:\n    - x-kubernetes-validations:\n      - rule: has(self.num)\n",
        )
        .expect("refused");
        assert!(
            refused.contains(
                "openAPIV3Schema.properties[a].allOf[0].properties[num].x-kubernetes-validations must be empty to be structural (and 1 more place)"
            ),
            "{refused}"
        );
    }
}
