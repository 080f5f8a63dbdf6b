//! The API server's total-cost check of a CRD version's `x-kubernetes-validations` rules
//! (apiextensions-apiserver `pkg/apis/apiextensions/validation/validation.go`:
//! `StaticEstimatedCRDCostLimit`, `getExpressionCost`, `CELSchemaContext.childContext`,
//! `extractMaxElements`; `pkg/apiserver/schema/cel/compilation.go`, `maxCardinality`): each
//! rule's estimated cost times the most times it can run — the product of `maxItems` and
//! `maxProperties` of the lists and maps above it, or, where one is unbounded, the request size
//! over the node's smallest serialized size — plus each messageExpression's cost, summed over
//! the schema. Over the limit, the API server refuses the CRD.
//!
//! Rules are parsed only when needed: if every rule could cost the per-rule limit and the
//! total would still be within the CRD's, nothing is parsed.

use super::cel_cost::{MAX_REQUEST_SIZE_BYTES, STATIC_ESTIMATED_COST_LIMIT, min_serialized_size};
use super::compile::{Additional, Schema, SchemaType};

/// apiextensions `StaticEstimatedCRDCostLimit`.
pub(crate) const STATIC_ESTIMATED_CRD_COST_LIMIT: u64 = 100_000_000;

/// Why the API server refuses a CRD version whose root schema is `root`, for its rules' total
/// cost; `None` when it does not.
pub(crate) fn refusal(root: &Schema) -> Option<String> {
    let mut nodes = Vec::new();
    collect(root, Some(1), &mut nodes);
    // Each rule costs at most the per-rule limit (one over it is reported on its own).
    let bound = nodes.iter().fold(0u64, |sum, (schema, cardinality)| {
        let per_rule = cardinality
            .unwrap_or_else(|| fallback_cardinality(schema))
            .saturating_add(1)
            .saturating_mul(STATIC_ESTIMATED_COST_LIMIT);
        sum.saturating_add(per_rule.saturating_mul(schema.cel_rules.len() as u64))
    });
    if bound <= STATIC_ESTIMATED_CRD_COST_LIMIT {
        return None;
    }
    let mut total = 0u64;
    for (schema, cardinality) in &nodes {
        let cardinality = cardinality.unwrap_or_else(|| fallback_cardinality(schema));
        for rule in &schema.cel_rules {
            let (cost, message_cost) = rule.estimated_costs(schema);
            total = total
                .saturating_add(cost.saturating_mul(cardinality))
                .saturating_add(message_cost);
        }
    }
    (total > STATIC_ESTIMATED_CRD_COST_LIMIT).then(|| {
        format!(
            "the API server refuses this CRD: the total estimated cost of its \
             x-kubernetes-validations rules is {total}, more than the {STATIC_ESTIMATED_CRD_COST_LIMIT} \
             it allows a CRD (apiextensions StaticEstimatedCRDCostLimit; each rule counts as many \
             times as it can run: bound the lists and maps above rules with maxItems and \
             maxProperties)"
        )
    })
}

/// compilation.go `maxCardinality`: as many values of this node as a request can hold.
fn fallback_cardinality(schema: &Schema) -> u64 {
    MAX_REQUEST_SIZE_BYTES / (min_serialized_size(schema) + 1)
}

/// validation.go `extractMaxElements`: how many children of each kind a value of `schema` has
/// at most (`None`: unbounded).
fn max_elements(schema: &Schema) -> Option<u64> {
    match schema.schema_type {
        Some(SchemaType::Array) => schema.max_items,
        Some(SchemaType::Object)
            if matches!(schema.additional, Additional::Any | Additional::Schema(_)) =>
        {
            schema.max_properties
        }
        _ => Some(1),
    }
}

/// Every node carrying rules, with how many times it can occur (`None`: unbounded).
fn collect<'s>(
    schema: &'s Schema,
    cardinality: Option<u64>,
    out: &mut Vec<(&'s Schema, Option<u64>)>,
) {
    if !schema.cel_rules.is_empty() {
        out.push((schema, cardinality));
    }
    let below = cardinality.and_then(|c| max_elements(schema).map(|m| c.saturating_mul(m)));
    for child in schema.properties.values() {
        collect(child, below, out);
    }
    if let Some(items) = &schema.items {
        collect(items, below, out);
    }
    if let Additional::Schema(values) = &schema.additional {
        collect(values, below, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::parse_first_document;

    fn schema(outer_max_items: &str) -> Schema {
        let yaml = format!(
            "type: object\nproperties:\n  routes:\n    type: array\n{outer_max_items}    items:\n      type: object\n      properties:\n        tags:\n          type: array\n          maxItems: 100\n          items: {{type: string, maxLength: 10}}\n      x-kubernetes-validations:\n      - rule: self.tags.all(t, t.size() < 10)\n"
        );
        Schema::compile(&parse_first_document(&yaml).unwrap().unwrap()).unwrap()
    }

    #[test]
    fn a_cheap_rule_on_an_unbounded_list_exceeds_the_crds_total() {
        // Each rule is far under the per-rule limit, but it can run once per item of a list
        // a 3 MiB request can fill with a million `{}`.
        let unbounded = schema("");
        let (cost, _) = unbounded.properties["routes"]
            .items
            .as_ref()
            .unwrap()
            .cel_rules[0]
            .estimated_costs(unbounded.properties["routes"].items.as_ref().unwrap());
        assert!(cost < STATIC_ESTIMATED_COST_LIMIT, "{cost}");
        let reason = refusal(&unbounded).expect("refused");
        assert!(reason.contains("StaticEstimatedCRDCostLimit"), "{reason}");
        // Bounded, it is fine; and a schema without rules is not even parsed.
        assert_eq!(refusal(&schema("    maxItems: 100\n")), None);
    }

    /// The shape of Contour's HTTPProxy upstream validation (an object with required strings,
    /// under unbounded lists, its rule comparing a list's first item with a field), at four
    /// places. Written for this test, not copied.
    fn upstreams() -> Schema {
        let upstream = "type: object\n\
             required: [secretRef, hostName]\n\
             properties:\n\
             \x20 secretRef: {type: string, minLength: 1, maxLength: 100}\n\
             \x20 hostName: {type: string, minLength: 1, maxLength: 200}\n\
             \x20 hostNames: {type: array, maxItems: 4, minItems: 1, items: {type: string}}\n\
             x-kubernetes-validations:\n\
             - rule: 'has(self.hostNames) ? self.hostNames[0] == self.hostName : true'\n";
        let indented = |by: usize| {
            upstream
                .lines()
                .map(|line| format!("{}{line}\n", " ".repeat(by)))
                .collect::<String>()
        };
        let list = |name: &str, field: &str| {
            format!(
                "  {name}:\n    type: array\n    items:\n      type: object\n      properties:\n        {field}:\n{}",
                indented(10)
            )
        };
        let yaml = format!(
            "type: object\nproperties:\n{}{}{}{}",
            list("routes", "upstream"),
            list("mirrors", "upstream"),
            list("tcp", "upstream"),
            list("includes", "upstream"),
        );
        Schema::compile(&parse_first_document(&yaml).unwrap().unwrap()).unwrap()
    }

    #[test]
    fn a_rule_under_unbounded_lists_counts_as_often_as_its_smallest_object_fits() {
        // The API server's figures (k8s.io/apiserver `pkg/cel/common/schemas.go`, cel-go
        // `checker/cost.go`, apiextensions `compilation.go` `maxCardinality`):
        //
        // The upstream object's smallest serialization (`SchemaDeclType` MinSerializedSize):
        // `{}` = 2, plus each required property without a default, len(name) + its smallest
        // value (a string: `""`, 2, whatever its minLength) + 4:
        //   2 + (9 + 2 + 4) [secretRef] + (8 + 2 + 4) [hostName] = 31,
        // so it fits 3 MiB / (31 + 1) = 3,145,728 / 32 = 98,304 times in a request.
        //
        // The rule's cost (PresenceTestHasCost(false): `has()` costs only its operand):
        //   has(self.hostNames)           self 1                                    = 1
        //   self.hostNames[0]             self 1 + .hostNames 1 + index 1           = 3
        //   self.hostName                 self 1 + .hostName 1                      = 2
        //   _==_  min(item size 3,145,726 (free string: 3 MiB - 2),
        //             hostName 200 * 4 = 800 bytes) * 0.1 = 80, + operands 3 + 2    = 85
        //   _?_:_ condition 1 + max(85, literal true 0)                            = 86
        //
        // Total: 4 places * 86 * 98,304 = 33,816,576, within the 100,000,000 allowed.
        // (Before, the object was sized 2 whatever its required fields, so 3 MiB / 3 =
        // 1,048,576 copies, and the rule cost 29: 4 * 29 * 1,048,576 = 121,634,816, refused.)
        let root = upstreams();
        let mut nodes = Vec::new();
        collect(&root, Some(1), &mut nodes);
        assert_eq!(nodes.len(), 4);
        let mut total = 0;
        for (schema, cardinality) in &nodes {
            assert_eq!(*cardinality, None, "under an unbounded list");
            assert_eq!(fallback_cardinality(schema), 98_304);
            let (cost, message) = schema.cel_rules[0].estimated_costs(schema);
            assert_eq!((cost, message), (86, 0));
            total += cost * fallback_cardinality(schema);
        }
        assert_eq!(total, 33_816_576);
        assert_eq!(refusal(&root), None);
    }
}
