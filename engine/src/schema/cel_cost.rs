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

/// The smallest serialized size of a value of `schema`: the `MinSerializedSize` of the CEL type
/// k8s.io/apiserver `pkg/cel/common/schemas.go` `SchemaDeclType` gives it, with the minimum sizes
/// of `pkg/cel/limits.go` and `pkg/cel/types.go`. A node the API server gives no CEL type (an
/// array without `items`, an untyped node) counts as 1, the smallest of any (`DynType`).
pub(crate) fn min_serialized_size(schema: &Schema) -> u64 {
    decl_min_size(schema).unwrap_or(1)
}

/// `SchemaDeclType(…).MinSerializedSize`, `None` where it gives no type.
fn decl_min_size(schema: &Schema) -> Option<u64> {
    // "smallest value for a serialized x-kubernetes-int-or-string is 0".
    if schema.int_or_string {
        return Some(1);
    }
    match schema.schema_type? {
        // `NewListType`: `[]`, whatever the items (`minItems` is not read).
        SchemaType::Array => schema.items.as_deref().and_then(decl_min_size).map(|_| 2),
        SchemaType::Object => match &schema.additional {
            // `NewMapType`: `{}` (`minProperties` is not read).
            Additional::Schema(values) => decl_min_size(values).map(|_| 2),
            // An object: `{}` plus, for each required property without a default (defaults
            // are filled in server-side), `"name":` and its value's smallest size, "+ 4" for
            // the quotes, the colon and a comma.
            _ => Some(schema.required.iter().fold(2u64, |size, name| {
                let minimum = schema
                    .properties
                    .get(name)
                    .filter(|property| property.default.is_none())
                    .and_then(decl_min_size);
                size.saturating_add(minimum.map_or(0, |m| name.len() as u64 + m + 4))
            })),
        },
        SchemaType::String => Some(match schema.format.as_deref() {
            // `MinDurationSizeJSON`, `JSONDateSize`, `MinDatetimeSizeJSON`.
            Some("duration") => 3,
            Some("date") => 12,
            Some("date-time") => 21,
            // `MinStringSize`, `""` (`minLength` is not read).
            _ => 2,
        }),
        // `MinBoolSize`, `MinNumberSize`.
        SchemaType::Boolean => Some(4),
        SchemaType::Integer | SchemaType::Number => Some(1),
    }
}

/// apiserver `pkg/cel/limits.go` `MaxDurationSizeJSON`, `JSONDateSize`, `MaxDatetimeSizeJSON`:
/// the longest duration, date and date-time strings (`estimateMaxStringLengthPerRequest`).
const MAX_DURATION_SIZE_JSON: u64 = 32;
const JSON_DATE_SIZE: u64 = 12;
const MAX_DATETIME_SIZE_JSON: u64 = 32;

/// The `MaxElements` of the CEL type k8s.io/apiserver `pkg/cel/common/schemas.go`
/// `SchemaDeclType` gives `schema`: what cel-go's estimator reads as the value's size.
fn schema_size(schema: &Schema) -> u64 {
    // `estimateMaxStringLengthPerRequest`, for a string without a format bound.
    let request_string = MAX_REQUEST_SIZE_BYTES - 2;
    // `estimateMaxElementsFromMaxLength`: maxLength counts code points, sizes are in bytes,
    // "and an individual unicode code point can be up to 4 bytes long".
    let from_max_length = |max_length: u64| max_length.saturating_mul(4);
    if schema.int_or_string {
        return schema.max_length.map_or(request_string, from_max_length);
    }
    match schema.schema_type {
        // `estimateMaxArrayItemsFromMinSize`: `[` and `]`, then an item and a comma each.
        Some(SchemaType::Array) => schema.max_items.unwrap_or_else(|| {
            (MAX_REQUEST_SIZE_BYTES - 2)
                / (schema.items.as_deref().map_or(1, min_serialized_size) + 1)
        }),
        Some(SchemaType::String) => match (schema.format.as_deref(), schema.max_length) {
            // A `byte` string's maxLength is not multiplied.
            (Some("byte"), Some(max_length)) => max_length,
            (Some("byte"), None) => request_string,
            // `duration`, `date` and `date-time` are sized by their format, maxLength unread.
            (Some("duration"), _) => MAX_DURATION_SIZE_JSON,
            (Some("date"), _) => JSON_DATE_SIZE,
            (Some("date-time"), _) => MAX_DATETIME_SIZE_JSON,
            (_, Some(max_length)) => from_max_length(max_length),
            // Without `maxLength`, a string with an `enum` is as long as its longest value
            // (`estimateMaxStringEnumLength`, in bytes); only a free string is sized by the
            // request.
            (_, None) => match schema.enum_values.as_deref() {
                Some(values) if !values.is_empty() => values
                    .iter()
                    .filter_map(|(value, _)| value.as_str())
                    .map(|s| s.len() as u64)
                    .max()
                    .unwrap_or(0),
                _ => request_string,
            },
        },
        Some(SchemaType::Object) => match &schema.additional {
            // `estimateMaxAdditionalPropertiesFromMinSize`: `"":` and a comma (+ 6) around
            // each value.
            Additional::Schema(values) => schema.max_properties.unwrap_or_else(|| {
                (MAX_REQUEST_SIZE_BYTES - 2) / (min_serialized_size(values) + 6)
            }),
            // No CEL map type for these (`SchemaDeclType` makes one only of an
            // `additionalProperties` schema): sized as the most `"":{}` entries a request holds.
            Additional::Any => schema
                .max_properties
                .unwrap_or((MAX_REQUEST_SIZE_BYTES - 2) / 5),
            _ if schema.preserve_unknown_fields => (MAX_REQUEST_SIZE_BYTES - 2) / 5,
            _ => schema.properties.len() as u64,
        },
        // `BoolType`, `IntType`, `DoubleType`: no `MaxElements`, so 0 (cel-go's estimator reads
        // `self.port` as of size 0; `self.port == 1` costs nothing more than its operands).
        Some(_) => 0,
        None => request_string,
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
        // cel-go `computeExprSize`: a string literal's size is its count of code points.
        Expr::Literal(LiteralValue::String(s)) => (0, Shape::Sized(s.chars().count() as u64)),
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
            // cel-go `costSelect`: a presence test (`has(self.x)`) costs its operand and the
            // presence test cost, which Kubernetes sets to 0 (apiserver
            // `pkg/cel/environment/base.go`, `checker.PresenceTestHasCost(false)`); a field
            // selection costs 1 more (`selectAndIdentCost`).
            let own = u64::from(!select.test);
            (cost.saturating_add(own), operand.field(Some(&select.field)))
        }
        Expr::List(list) => {
            // cel-go `costCreateList`: the items plus `ListCreateBaseCost`.
            let mut cost = LIST_CREATE_BASE_COST;
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
            // cel-go `costCreateMap`: `MapCreateBaseCost`.
            let mut cost = MAP_CREATE_BASE_COST;
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
            // cel-go `costCreateStruct`: `StructCreateBaseCost`.
            let mut cost = STRUCT_CREATE_BASE_COST;
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
            let mut costs = Vec::with_capacity(call.args.len() + 1);
            let mut shapes = Vec::with_capacity(call.args.len() + 1);
            let target = call.target.iter().filter(|_| namespace.is_none());
            let operands: Vec<&IdedExpr> = target.map(|t| &**t).chain(&call.args).collect();
            for operand in &operands {
                let (c, shape) = estimate_expr(operand, scope);
                costs.push(c);
                shapes.push(shape);
            }
            let operands_cost = costs.iter().fold(0u64, |sum, c| sum.saturating_add(*c));
            if let Some((own, shape)) = list_function(namespace, call, &shapes) {
                return (operands_cost.saturating_add(1).saturating_add(own), shape);
            }
            let cost = match (call.func_name.as_str(), costs.as_slice()) {
                // cel-go `functionCost`, `LogicalOr`/`LogicalAnd`: the operands only.
                ("_&&_" | "_||_", _) => operands_cost,
                // `Conditional`: the condition and the dearer branch.
                ("_?_:_", [condition, then, otherwise]) => {
                    condition.saturating_add(*then.max(otherwise))
                }
                _ => {
                    operands_cost.saturating_add(own_call_cost(&call.func_name, &operands, &shapes))
                }
            };
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
                ) => Shape::Sized(shapes.iter().map(Shape::size).max().unwrap_or(0).max(1)),
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

/// cel-go `common.StringTraversalCostFactor` (0.1) applied as `MultiplyByCostFactor` does:
/// rounded up.
fn traversal(size: u64) -> u64 {
    size.div_ceil(10)
}

/// What a call costs besides its operands (cel-go `checker/cost.go` `functionCost`, after
/// k8s.io/apiserver `pkg/cel/library/cost.go` `EstimateCallCost`, which leaves the operators
/// below to cel-go). `operands` and `shapes` are the target's and the arguments', target
/// first.
fn own_call_cost(name: &str, operands: &[&IdedExpr], shapes: &[Shape<'_>]) -> u64 {
    // A number, bool, … (cel-go's scalar overloads: `_<_` on ints costs 1, not a walk).
    let scalar = |i: usize| {
        matches!(shapes.get(i), Some(Shape::Schema(schema)) if is_scalar(schema))
            || matches!(
                operands.get(i).map(|o| &o.expr),
                Some(Expr::Literal(
                    LiteralValue::Int(_)
                        | LiteralValue::UInt(_)
                        | LiteralValue::Double(_)
                        | LiteralValue::Boolean(_)
                        | LiteralValue::Null
                ))
            )
    };
    let size = |i: usize| shapes.get(i).map_or(0, Shape::size);
    match name {
        // `Equals`, `NotEquals`, and `LessString`, …, `GreaterEqualsBytes`: the smaller of
        // the two sizes, a tenth per unit, and nothing for the call itself (a path to an int
        // is of size 0, so `self.port == 1` costs its operands only).
        "_==_" | "_!=_" => traversal(size(0).min(size(1))),
        "_<_" | "_<=_" | "_>_" | "_>=_" => {
            if scalar(0) || scalar(1) {
                1
            } else {
                traversal(size(0).min(size(1)))
            }
        }
        // `InList`: the list's size, one per item (a map's `in` is O(1)).
        "@in" => match shapes.get(1) {
            Some(list @ Shape::List { .. }) => list.size(),
            Some(Shape::Schema(schema)) if schema.schema_type == Some(SchemaType::Array) => {
                schema_size(schema)
            }
            _ => 1,
        },
        // `AddList` costs 1; `AddString`/`AddBytes` a tenth of the result's size; numbers 1.
        "_+_" => {
            if matches!(shapes, [Shape::List { .. }, _] | [_, Shape::List { .. }])
                || matches!(shapes, [Shape::Schema(s), _] | [_, Shape::Schema(s)]
                    if s.schema_type == Some(SchemaType::Array))
                || scalar(0)
                || scalar(1)
            {
                1
            } else {
                traversal(size(0).saturating_add(size(1)))
            }
        }
        // `StartsWithString`, `EndsWithString`: a tenth of the prefix or suffix.
        "startsWith" | "endsWith" => traversal(size(1)),
        // The other functions whose cost grows with their operands: the call, and a tenth of
        // the largest operand.
        _ if walks_operands(name) => {
            1 + traversal(shapes.iter().map(Shape::size).max().unwrap_or(0))
        }
        _ => 1,
    }
}

/// cel-go `common/cost.go`, `ListCreateBaseCost`: what allocating a list costs besides its
/// items.
const LIST_CREATE_BASE_COST: u64 = 10;
/// cel-go `common/cost.go`, `MapCreateBaseCost`.
const MAP_CREATE_BASE_COST: u64 = 30;
/// cel-go `common/cost.go`, `StructCreateBaseCost`.
const STRUCT_CREATE_BASE_COST: u64 = 40;

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
        "contains"
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
        // A free string still counts as long as a request allows, for a function that walks
        // it (`in` does not: cel-go's `InList` costs the list's size).
        let free = cost_of_free_string();
        assert!(free > 100_000, "{free}");
    }

    fn cost_of_free_string() -> u64 {
        cost(
            "type: array\nmaxItems: 1024\nitems: {type: string}\n",
            "self.all(p, p.lowerAscii() in ['exact', 'pathprefix', 'regularexpression'])",
        )
    }

    #[test]
    fn rule_costs_are_cel_gos() {
        // cel-go `checker/cost.go` with Kubernetes' options (has() costs its operand only):
        // `!_` 1 + has 1 = 2; `_==_` min(serviceType's 4 * 10 = 40, 'http' 4) * 0.1 rounded
        // up = 1, + operands 2 = 3; `_||_` the operands only: 2 + 3 = 5.
        let settings = "type: object\nproperties:\n  httpSettings: {type: object}\n  serviceType: {type: string, maxLength: 10}\n";
        assert_eq!(
            cost(
                settings,
                "!has(self.httpSettings) || self.serviceType == 'http'"
            ),
            5
        );
        // Each ternary: its condition 1 + max(0, 0); each int `_+_` 1 + operands: 3, 5, 7;
        // `== 1` min(1, 1) * 0.1 = 1, + 7: 8.
        let header = "type: object\nproperties:\n  exact: {type: string}\n  prefix: {type: string}\n  suffix: {type: string}\n  contains: {type: string}\n";
        assert_eq!(
            cost(
                header,
                "(has(self.exact) ? 1 : 0) + (has(self.prefix) ? 1 : 0) + (has(self.suffix) ? 1 : 0) + (has(self.contains) ? 1 : 0) == 1"
            ),
            8
        );
        // `_&&_` and `_||_` add nothing: (1 + 2) + (2 + 1) = 6.
        assert_eq!(
            cost(
                "type: object\nproperties:\n  a: {type: object}\n  b: {type: object}\n",
                "(has(self.a) && !has(self.b)) || (!has(self.a) && has(self.b))"
            ),
            6
        );
        // maxLength counts code points, the size bytes: 250 * 4 = 1000, a tenth is 100;
        // + operands (self.n[0]: 3, self.m: 2) = 105; the ternary adds its condition: 106.
        let names = "type: object\nproperties:\n  m: {type: string, maxLength: 250}\n  n: {type: array, maxItems: 8, items: {type: string}}\n";
        assert_eq!(cost(names, "has(self.n) ? self.n[0] == self.m : true"), 106);
        // `in` a list costs the list's size (`InList`), a list literal 10 (`ListCreateBaseCost`).
        assert_eq!(cost(names, "self.m in ['a', 'b', 'c']"), 2 + 10 + 3);
        // An int comparison costs 1 and its operands; a path to an int is of size 0.
        let port = "type: object\nproperties:\n  port: {type: integer}\n";
        assert_eq!(cost(port, "self.port < 65536"), 3);
        assert_eq!(cost(port, "self.port == 1"), 2);
    }

    #[test]
    fn smallest_sizes_are_the_api_servers() {
        let compile =
            |yaml: &str| Schema::compile(&parse_first_document(yaml).unwrap().unwrap()).unwrap();
        // `{}` + `"a":` "" (1 + 2 + 4) + `"bb":` 0 (2 + 1 + 4); optional and defaulted
        // properties do not count, nor does minLength.
        let object = compile(
            "type: object\nrequired: [a, bb, c, d]\nproperties:\n  a: {type: string, minLength: 5}\n  bb: {type: integer}\n  c: {type: boolean, default: true}\n  e: {type: string}\n",
        );
        assert_eq!(min_serialized_size(&object), 2 + 7 + 7);
        // A list of such objects holds (3 MiB - 2) / (16 + 1) of them.
        let list = compile(
            "type: array\nitems:\n  type: object\n  required: [a, bb]\n  properties:\n    a: {type: string}\n    bb: {type: integer}\n",
        );
        assert_eq!(schema_size(&list), (MAX_REQUEST_SIZE_BYTES - 2) / 17);
        // A map: (3 MiB - 2) / (value + 6).
        let map = compile("type: object\nadditionalProperties: {type: string}\n");
        assert_eq!(schema_size(&map), (MAX_REQUEST_SIZE_BYTES - 2) / 8);
        // Strings: maxLength * 4; a duration's longest form; a free string 3 MiB - 2.
        assert_eq!(schema_size(&compile("type: string\nmaxLength: 63\n")), 252);
        assert_eq!(
            schema_size(&compile("type: string\nformat: duration\n")),
            32
        );
        assert_eq!(
            schema_size(&compile("type: string\n")),
            MAX_REQUEST_SIZE_BYTES - 2
        );
    }

    #[test]
    fn map_keys_are_sized_as_the_api_server_sizes_them() {
        // Istio's label maps (maxProperties 4096) with a rule walking every key are accepted.
        let labels = "type: object\nmaxProperties: 4096\nadditionalProperties: {type: string}\n";
        let cost = cost(labels, "self.all(key, !key.contains('*'))");
        assert!(cost < 100_000, "{cost}");
    }
}
