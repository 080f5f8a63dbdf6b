//! The API server's estimated-cost check of an `x-kubernetes-validations` rule, done before
//! the rule is evaluated: a rule whose worst-case cost exceeds the per-expression limit makes
//! the API server refuse the CRD, and refusing such rules is the first thing that bounds our
//! own evaluation time and memory (the second is the meter evaluation runs under,
//! `cel_bounds::evaluate_metered`).
//!
//! The model follows cel-go's `checker/cost.go` as the API server drives it
//! (apiextensions-apiserver `pkg/apiserver/schema/cel/compilation.go` and `model/`): every
//! variable, field selection and function call costs 1, functions over strings and lists
//! cost a tenth of their size more, and a comprehension (`all`, `exists`, `map`, `filter`, …)
//! costs its range's size times its body's cost, so nested comprehensions multiply. Sizes
//! come from the schema (`maxItems`, `maxLength`, `maxProperties`); without a bound, from the
//! largest request the API server accepts (3 MiB) divided by the smallest serialized item, as
//! `model/schemas.go` (`estimateMaxArrayItemsFromMinSize`) does. It is an estimate of the
//! same kind, not cel-go's exact figure: rules near the limit may land on either side.

use cel::IdedExpr;
use cel::common::ast::{EntryExpr, Expr, LiteralValue};

use super::cel::unescape_property;
use super::compile::{Additional, Schema, SchemaType};

/// apiextensions-apiserver `pkg/apis/apiextensions/validation/validation.go`,
/// `StaticEstimatedCostLimit`: the largest estimated cost of one rule.
pub(crate) const STATIC_ESTIMATED_COST_LIMIT: u64 = 10_000_000;

// apiserver `pkg/apis/cel/config.go` bounds run time too: `PerCallLimit` (1,000,000) per
// evaluation, which our meter mirrors (`cel_bounds::PER_CALL_LIMIT`), and
// `RuntimeCELCostBudget` (10,000,000) per request.

/// apiserver `pkg/cel/limits.go`, `MaxRequestSizeBytes` (3 MiB): bounds lists, maps and
/// strings the schema leaves unbounded.
pub(crate) const MAX_REQUEST_SIZE_BYTES: u64 = 3 * 1024 * 1024;

/// What the estimate knows about a value.
#[derive(Clone)]
enum Shape<'s> {
    /// A value of this schema node.
    Schema(&'s Schema),
    /// A list (built by the rule) of at most `size` items shaped `item`.
    List { size: u64, item: Box<Shape<'s>> },
    /// A string or scalar of at most this size.
    Sized(u64),
    /// Nothing known: as large as a request allows.
    Unknown,
}

impl<'s> Shape<'s> {
    /// The most items (list, map), characters (string) or fields (object) it can have.
    fn size(&self) -> u64 {
        match self {
            Shape::Schema(schema) => schema_size(schema),
            Shape::List { size, .. } => *size,
            Shape::Sized(size) => *size,
            Shape::Unknown => MAX_REQUEST_SIZE_BYTES,
        }
    }

    /// The shape of one item (list) or key (map) a comprehension ranges over.
    fn item(&self) -> Shape<'s> {
        match self {
            Shape::Schema(schema) => match schema.schema_type {
                Some(SchemaType::Array) => schema
                    .items
                    .as_deref()
                    .map_or(Shape::Unknown, Shape::Schema),
                // A map's keys: the API server sizes them by their type's MaxElements, unset
                // (0) for the shared string type it gives map keys (k8s.io/apiserver
                // `pkg/cel/common/schemas.go`, `NewMapType(apiservercel.StringType, …)`), so
                // walking a key costs nothing more (Istio's `self.all(key,
                // !key.contains("*"))` on a 4096-entry map is accepted).
                Some(SchemaType::Object) => Shape::Sized(0),
                _ => Shape::Unknown,
            },
            Shape::List { item, .. } => (**item).clone(),
            _ => Shape::Unknown,
        }
    }

    /// The shape of `self.field` (or `self[key]` on a map).
    fn field(&self, name: Option<&str>) -> Shape<'s> {
        let Shape::Schema(schema) = self else {
            return Shape::Unknown;
        };
        // A field of an object with properties is named in CEL by its escaped name
        // (`__namespace__` for `namespace`: `cel.rs`, `escape_property`).
        let child = match name {
            Some(name) if !schema.properties.is_empty() => {
                unescape_property(name).and_then(|property| schema.properties.get(&property))
            }
            _ => None,
        };
        match (child, &schema.additional, schema.schema_type) {
            (Some(child), _, _) => Shape::Schema(child),
            (None, Additional::Schema(values), _) => Shape::Schema(values),
            (None, _, Some(SchemaType::Array)) => self.item(),
            _ => Shape::Unknown,
        }
    }
}

/// The smallest serialized size of a value of `schema` (model/schemas.go, `estimateMinSizeJSON`).
pub(crate) fn min_serialized_size(schema: &Schema) -> u64 {
    match schema.schema_type {
        Some(SchemaType::Boolean) => 4,
        Some(SchemaType::Integer | SchemaType::Number) => 1,
        Some(SchemaType::String) => 2 + schema.min_length.unwrap_or(0),
        // `{}`, `[]`, or an int-or-string's shortest form.
        _ => 2,
    }
}

fn schema_size(schema: &Schema) -> u64 {
    let from_request = |min_item: u64| (MAX_REQUEST_SIZE_BYTES - 2) / (min_item + 1);
    match schema.schema_type {
        Some(SchemaType::Array) => schema.max_items.unwrap_or_else(|| {
            from_request(schema.items.as_deref().map_or(1, min_serialized_size))
        }),
        // k8s.io/apiserver `pkg/cel/common/schemas.go`, `SchemaDeclType`: without `maxLength`,
        // a string with an `enum` is as long as its longest value (`estimateMaxStringEnumLength`,
        // in bytes); only a free string is sized by the request.
        Some(SchemaType::String) => {
            schema
                .max_length
                .unwrap_or_else(|| match schema.enum_values.as_deref() {
                    Some(values) if !values.is_empty() => values
                        .iter()
                        .filter_map(|(value, _)| value.as_str())
                        .map(|s| s.len() as u64)
                        .max()
                        .unwrap_or(0),
                    _ => MAX_REQUEST_SIZE_BYTES,
                })
        }
        Some(SchemaType::Object) => match &schema.additional {
            // A map: `"":` plus the smallest value per entry.
            Additional::Schema(values) => schema
                .max_properties
                .unwrap_or_else(|| from_request(3 + min_serialized_size(values))),
            Additional::Any => schema.max_properties.unwrap_or_else(|| from_request(4)),
            _ if schema.preserve_unknown_fields => from_request(4),
            _ => schema.properties.len() as u64,
        },
        Some(_) => 1,
        None => from_request(1),
    }
}

/// The estimated worst-case cost of `rule`, evaluated with `self` (and `oldSelf`) of `schema`.
/// Recurses once per level of the tree: call it on a tree whose depth is bounded.
pub(crate) fn estimate(rule: &IdedExpr, schema: &Schema) -> u64 {
    let mut scope = vec![
        ("self".to_owned(), Shape::Schema(schema)),
        ("oldSelf".to_owned(), Shape::Schema(schema)),
    ];
    estimate_expr(rule, &mut scope).0
}

type Scope<'s> = Vec<(String, Shape<'s>)>;

/// Cost and shape of one node.
fn estimate_expr<'s>(node: &IdedExpr, scope: &mut Scope<'s>) -> (u64, Shape<'s>) {
    match &node.expr {
        Expr::Literal(LiteralValue::String(s)) => (0, Shape::Sized(s.len() as u64)),
        Expr::Literal(LiteralValue::Bytes(b)) => (0, Shape::Sized(b.len() as u64)),
        Expr::Literal(_) | Expr::Unspecified => (0, Shape::Sized(1)),
        Expr::Ident(name) => {
            let shape = scope
                .iter()
                .rev()
                .find(|(n, _)| n == name)
                .map_or(Shape::Unknown, |(_, s)| s.clone());
            (1, shape)
        }
        Expr::Select(select) => {
            let (cost, operand) = estimate_expr(&select.operand, scope);
            (cost.saturating_add(1), operand.field(Some(&select.field)))
        }
        Expr::List(list) => {
            let mut cost = 1u64;
            let mut item = Shape::Sized(1);
            for element in &list.elements {
                let (c, shape) = estimate_expr(element, scope);
                cost = cost.saturating_add(c);
                item = shape;
            }
            let size = list.elements.len() as u64;
            (
                cost,
                Shape::List {
                    size,
                    item: Box::new(item),
                },
            )
        }
        Expr::Map(map) => {
            let mut cost = 1u64;
            for entry in &map.entries {
                if let EntryExpr::MapEntry(e) = &entry.expr {
                    cost = cost
                        .saturating_add(estimate_expr(&e.key, scope).0)
                        .saturating_add(estimate_expr(&e.value, scope).0);
                }
            }
            (cost, Shape::Sized(map.entries.len() as u64))
        }
        Expr::Struct(s) => {
            let mut cost = 1u64;
            for entry in &s.entries {
                let value = match &entry.expr {
                    EntryExpr::StructField(f) => &f.value,
                    EntryExpr::MapEntry(e) => &e.value,
                };
                cost = cost.saturating_add(estimate_expr(value, scope).0);
            }
            (cost, Shape::Unknown)
        }
        Expr::Call(call) => {
            // `lists.range(n)` is a call of `range` on `lists`, a namespace, not a value.
            let namespace = match call.target.as_deref().map(|t| &t.expr) {
                Some(Expr::Ident(name)) if !scope.iter().any(|(n, _)| n == name) => {
                    Some(name.as_str())
                }
                _ => None,
            };
            let mut cost = 1u64;
            let mut shapes = Vec::with_capacity(call.args.len() + 1);
            let target = call.target.iter().filter(|_| namespace.is_none());
            for operand in target.map(|t| &**t).chain(&call.args) {
                let (c, shape) = estimate_expr(operand, scope);
                cost = cost.saturating_add(c);
                shapes.push(shape);
            }
            if let Some((own, shape)) = list_function(namespace, call, &shapes) {
                return (cost.saturating_add(own), shape);
            }
            // Functions that walk a string or list cost a tenth of its size (cel-go charges
            // 0.1 per character or item for comparisons, `contains`, `matches`, …).
            // Equality stops at the shorter operand; a prefix or suffix test walks the
            // prefix or suffix only.
            let walked_operands = match call.func_name.as_str() {
                "startsWith" | "endsWith" => &shapes[shapes.len().min(1)..],
                _ => &shapes[..],
            };
            let sizes = walked_operands
                .iter()
                .filter(|s| !matches!(s, Shape::Schema(schema) if is_scalar(schema)))
                .map(Shape::size);
            let walked = if matches!(call.func_name.as_str(), "_==_" | "_!=_") {
                sizes.min()
            } else {
                sizes.max()
            }
            .unwrap_or(0);
            if walks_operands(&call.func_name) {
                cost = cost.saturating_add(walked / 10);
            }
            let shape = match (call.func_name.as_str(), shapes.as_slice()) {
                ("_[_]", [container, _]) => container.field(None),
                ("_+_", [a @ Shape::List { .. }, b]) | ("_+_", [a, b @ Shape::List { .. }]) => {
                    Shape::List {
                        size: a.size().saturating_add(b.size()),
                        item: Box::new(a.item()),
                    }
                }
                ("_+_", [a, b]) => Shape::Sized(a.size().saturating_add(b.size())),
                // Optionals and `dyn` hand their operand on: a list stays as large.
                (
                    "value" | "orValue" | "or" | "dyn" | "of" | "ofNonZeroValue",
                    [first, rest @ ..],
                ) => rest.iter().fold(first.clone(), |a, b| {
                    if b.size() > a.size() { b.clone() } else { a }
                }),
                ("_?_:_", [_, a, b]) => {
                    if a.size() >= b.size() {
                        a.clone()
                    } else {
                        b.clone()
                    }
                }
                ("split" | "findAll", [text, ..]) => Shape::List {
                    size: text.size(),
                    item: Box::new(Shape::Sized(text.size())),
                },
                // Functions that build a string as long as their operands.
                (
                    "lowerAscii" | "upperAscii" | "replace" | "substring" | "trim" | "join"
                    | "format" | "string" | "quote" | "reverse" | "sort",
                    _,
                ) => Shape::Sized(walked.max(1)),
                _ => Shape::Sized(1),
            };
            (cost, shape)
        }
        Expr::Comprehension(c) => {
            let (range_cost, range) = estimate_expr(&c.iter_range, scope);
            let (init_cost, init) = estimate_expr(&c.accu_init, scope);
            let items = range.size();
            let before = scope.len();
            scope.push((c.iter_var.clone(), range.item()));
            if let Some(second) = &c.iter_var2 {
                scope.push((second.clone(), range.field(None)));
            }
            // The accumulator of `map`/`filter` grows to one item per iteration.
            let built_item = appended_item(&c.loop_step, &c.accu_var, scope);
            let accumulator = match (&init, &built_item) {
                (Shape::List { size: 0, .. }, Some(item)) => Shape::List {
                    size: items,
                    item: Box::new(item.clone()),
                },
                _ => init,
            };
            scope.push((c.accu_var.clone(), accumulator));
            let per_item = estimate_expr(&c.loop_cond, scope)
                .0
                .saturating_add(estimate_expr(&c.loop_step, scope).0);
            let (result_cost, result) = estimate_expr(&c.result, scope);
            scope.truncate(before);
            let cost = range_cost
                .saturating_add(init_cost)
                .saturating_add(items.saturating_mul(per_item))
                .saturating_add(result_cost);
            (cost, result)
        }
    }
}

/// cel-go `common/cost.go`, `ListCreateBaseCost`: what allocating a list costs besides its
/// items.
const LIST_CREATE_BASE_COST: u64 = 10;

/// The lists extension's functions that build a list (cel-go `ext/lists.go`, version 3, in the
/// Kubernetes base environment since 1.34): their own cost and the list they give, as cel-go's
/// `estimateListsRange`, `estimateListSlice`, `estimateListFlatten`, `estimateListReverse`,
/// `estimateListDistinct`, `estimateListSort` and `estimateListSortBy` estimate them. `shapes`
/// are the operands' (the target first); `None` for any other function.
fn list_function<'s>(
    namespace: Option<&str>,
    call: &cel::common::ast::CallExpr,
    shapes: &[Shape<'s>],
) -> Option<(u64, Shape<'s>)> {
    // cel-go `estimateAllocatingListCall`: the result's size times a factor, plus the call and
    // the allocation.
    let allocating = |factor: u64, size: u64, item: Shape<'s>| {
        let cost = size
            .saturating_mul(factor)
            .saturating_add(1 + LIST_CREATE_BASE_COST);
        (
            cost,
            Shape::List {
                size,
                item: Box::new(item),
            },
        )
    };
    // `nodeAsUintValue`: a literal's value, else `unknown` (the size is then not known).
    let literal = |node: Option<&IdedExpr>, unknown: u64| match node.map(|n| &n.expr) {
        Some(Expr::Literal(LiteralValue::Int(n))) => u64::try_from(*n.inner()).unwrap_or(0),
        Some(Expr::Literal(LiteralValue::UInt(n))) => *n.inner(),
        _ => unknown,
    };
    let has_target = call.target.is_some() && namespace.is_none();
    let name = call.func_name.as_str();
    match (namespace, name, has_target, shapes) {
        (Some("lists"), "range", _, [_]) => {
            let size = literal(call.args.first(), u64::MAX);
            Some(allocating(1, size, Shape::Sized(1)))
        }
        (None, "slice", true, [list, _, _]) => {
            let start = literal(call.args.first(), 0);
            let end = literal(call.args.get(1), list.size());
            Some(allocating(1, end.saturating_sub(start), list.item()))
        }
        (None, "reverse", true, [list]) => Some(allocating(1, list.size(), list.item())),
        (None, "flatten", true, [list, depth @ ..]) => {
            let depth = if depth.is_empty() {
                1
            } else {
                literal(call.args.first(), u64::MAX)
            };
            // cel-go sizes the result as the list flattened; its items are the items' items.
            Some(allocating(depth, list.size(), list.item().item()))
        }
        // Quadratic: each item compared with the others; cel-go also gives the result the
        // squared size.
        (None, "distinct" | "sort", true, [list]) => {
            let size = list.size().saturating_mul(list.size());
            Some(allocating(2, size, list.item()))
        }
        // `sortBy` expands to `list.@sortByAssociatedKeys(keys)`, estimated on the keys.
        (None, "@sortByAssociatedKeys", true, [list, keys]) => {
            let size = keys.size().saturating_mul(keys.size());
            Some(allocating(2, size, list.item()))
        }
        _ => None,
    }
}

/// The shape of the item a `map`/`filter` step appends (`accu + [item]`), if it is one.
fn appended_item<'s>(step: &IdedExpr, accu: &str, scope: &mut Scope<'s>) -> Option<Shape<'s>> {
    let Expr::Call(call) = &step.expr else {
        return None;
    };
    match (call.func_name.as_str(), call.args.as_slice()) {
        ("_+_", [first, second]) if matches!(&first.expr, Expr::Ident(n) if n == accu) => {
            match &second.expr {
                Expr::List(list) => list.elements.first().map(|e| estimate_expr(e, scope).1),
                _ => None,
            }
        }
        ("_?_:_", [_, then, _]) => appended_item(then, accu, scope),
        _ => None,
    }
}

fn is_scalar(schema: &Schema) -> bool {
    matches!(
        schema.schema_type,
        Some(SchemaType::Integer | SchemaType::Number | SchemaType::Boolean)
    )
}

/// Functions whose cost grows with the size of their operands (cel-go `checker/cost.go`,
/// `functionCost`, and k8s.io/apiserver `pkg/cel/library/cost.go`). Conversions such as
/// `duration(s)`, `timestamp(s)` and `string(x)` are not among them: they cost 1 (only
/// `string(bytes)` and `bytes(s)` walk their operand; `string` is left out for its cheap
/// overloads).
fn walks_operands(name: &str) -> bool {
    matches!(
        name,
        "_==_"
            | "_!=_"
            | "_<_"
            | "_<=_"
            | "_>_"
            | "_>=_"
            | "_+_"
            | "@in"
            | "contains"
            | "startsWith"
            | "endsWith"
            | "matches"
            | "find"
            | "findAll"
            | "split"
            | "join"
            | "replace"
            | "indexOf"
            | "lastIndexOf"
            | "lowerAscii"
            | "upperAscii"
            | "trim"
            | "substring"
            | "charAt"
            | "format"
            | "quote"
            | "reverse"
            | "sort"
            | "isSorted"
            | "sum"
            | "min"
            | "max"
            | "indexOfList"
            | "url"
            | "isURL"
            | "quantity"
            | "isQuantity"
            | "ip"
            | "isIP"
            | "cidr"
            | "isCIDR"
            | "bytes"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::parse_first_document;

    fn cost(schema: &str, rule: &str) -> u64 {
        let schema = Schema::compile(&parse_first_document(schema).unwrap().unwrap()).unwrap();
        let tree = cel::Env::stdlib().compile(rule).unwrap();
        estimate(tree.expression(), &schema)
    }

    /// The cost of `rule` parsed in the rules' own environment (`lists.range`, `sortBy`, …).
    fn cost_in_env(schema: &str, rule: &str) -> u64 {
        let schema = Schema::compile(&parse_first_document(schema).unwrap().unwrap()).unwrap();
        let tree = crate::schema::cel_library::environment()
            .compile(rule)
            .unwrap();
        estimate(tree.expression(), &schema)
    }

    #[test]
    fn lists_the_library_builds_are_sized_as_cel_go_sizes_them() {
        // `lists.range(n)` has n items (cel-go `ext/lists.go`, `estimateListsRange`): walking
        // it is no longer priced as walking one item, so these rules, which would run for
        // ever or exhaust memory, are refused as the API server refuses them.
        let object = "type: object\nproperties:\n  name: {type: string, maxLength: 10}\n";
        for hostile in [
            "lists.range(1000000).all(x, lists.range(1000000).all(y, y >= 0))",
            "lists.range(100000).map(x, lists.range(100000)).size() > 0",
            "lists.range(100000).map(x, [x]).flatten().all(y, lists.range(100000).all(z, z >= y))",
            "lists.range(5000).sort().all(x, lists.range(5000).reverse().all(y, y >= 0))",
            "lists.range(100000).slice(0, 100000).all(x, lists.range(100000).all(y, y >= 0))",
            "lists.range(4000).distinct().all(x, x >= 0)",
            "lists.range(100000).sortBy(x, -x).all(x, lists.range(100000).all(y, y >= 0))",
        ] {
            let cost = cost_in_env(object, hostile);
            assert!(cost > STATIC_ESTIMATED_COST_LIMIT, "{hostile}: {cost}");
        }
        // Small ranges stay cheap.
        let small = cost_in_env(
            object,
            "lists.range(10).all(x, lists.range(10).all(y, y >= 0))",
        );
        assert!(small < 1_000, "{small}");
        // A size the rule computes is not known: as large as a list can be.
        let computed = cost_in_env(object, "lists.range(self.name.size()).all(x, x >= 0)");
        assert!(computed > 1_000_000, "{computed}");
    }

    #[test]
    fn escaped_property_names_are_sized_by_their_schema() {
        // k8s.io/apiserver `pkg/cel/escaping.go`: `namespace` is `__namespace__` in CEL and
        // `a-b` is `a__dash__b`; sized from their schema, not as unknown (3 MiB) values.
        let refs = "type: array\nmaxItems: 1000\nitems:\n  type: object\n  properties:\n    namespace: {type: string, maxLength: 63}\n    a-b: {type: string, maxLength: 63}\n";
        let cost = cost(
            refs,
            "self.all(r, r.__namespace__.contains('x') && r.a__dash__b.contains('y'))",
        );
        assert!(cost < 100_000, "{cost}");
    }

    const NESTED: &str = "type: array\nmaxItems: 100\nitems:\n  type: array\n  maxItems: 100\n  items:\n    type: array\n    maxItems: 100\n    items:\n      type: array\n      maxItems: 100\n      items: {type: integer}\n";

    #[test]
    fn nested_comprehensions_multiply() {
        let one = cost(NESTED, "self.all(a, size(a) > 0)");
        let four = cost(NESTED, "self.all(a, a.all(b, b.all(c, c.all(d, d > 0))))");
        assert!(one < 10_000, "{one}");
        assert!(four > STATIC_ESTIMATED_COST_LIMIT, "{four}");
        let three = cost(NESTED, "self.all(a, a.all(b, b.all(c, size(c) > 0)))");
        assert!(three < STATIC_ESTIMATED_COST_LIMIT, "{three}");
    }

    #[test]
    fn map_results_keep_their_size() {
        let mapped = cost(
            NESTED,
            "self.map(a, a.map(b, b.map(c, c.map(d, d + 1)))).size() > 0",
        );
        assert!(mapped > STATIC_ESTIMATED_COST_LIMIT, "{mapped}");
        let over_map = cost(
            "type: array\nmaxItems: 100\nitems: {type: integer}\n",
            "self.map(a, [a, a, a]).all(x, x.all(y, y > 0))",
        );
        assert!(over_map < 100_000, "{over_map}");
    }

    #[test]
    fn unbounded_lists_are_sized_from_the_request_limit() {
        let unbounded = "type: array\nitems: {type: string}\n";
        assert!(cost(unbounded, "self.all(a, a.size() > 0)") < STATIC_ESTIMATED_COST_LIMIT);
        assert!(cost(unbounded, "self.all(a, self.all(b, a != b))") > STATIC_ESTIMATED_COST_LIMIT);
    }

    #[test]
    fn conversions_cost_one_whatever_the_string() {
        // cel-go charges `duration(s)` as any call: a rule on every item of an unbounded
        // list stays cheap (Istio's duration rules, on unbounded route lists).
        let cost = cost("type: string\n", "duration(self) >= duration('1ms')");
        assert!(cost < 10, "{cost}");
    }

    #[test]
    fn enum_strings_are_as_long_as_their_longest_value() {
        // Gateway API's HTTPRoute: a rule on every path match of 1024, the path's `type` an enum
        // without maxLength. The API server sizes it by its longest value (17 bytes), so the
        // CRD is accepted; sized by the request, each rule would cost millions.
        let paths = "type: array\nmaxItems: 1024\nitems:\n  type: object\n  properties:\n    type: {type: string, enum: [Exact, PathPrefix, RegularExpression]}\n";
        let cost = cost(
            paths,
            "self.all(p, p.type in ['Exact', 'PathPrefix', 'RegularExpression'])",
        );
        assert!(cost < 100_000, "{cost}");
        // A free string still counts as long as a request allows.
        let free = cost_of_free_string();
        assert!(free > 100_000, "{free}");
    }

    fn cost_of_free_string() -> u64 {
        cost(
            "type: array\nmaxItems: 1024\nitems: {type: string}\n",
            "self.all(p, p in ['Exact', 'PathPrefix', 'RegularExpression'])",
        )
    }

    #[test]
    fn map_keys_are_sized_as_the_api_server_sizes_them() {
        // Istio's label maps (maxProperties 4096) with a rule walking every key are accepted.
        let labels = "type: object\nmaxProperties: 4096\nadditionalProperties: {type: string}\n";
        let cost = cost(labels, "self.all(key, !key.contains('*'))");
        assert!(cost < 100_000, "{cost}");
    }
}
