//! KL014: a field the script writes under `obj.data.spec` at a static path (`spec.http[1].
//! route[1].weigth = …`, `route.destination = {hots = …}` through a local whose path is known)
//! that the CRD's schema does not declare. The API server silently drops (prunes) such a
//! field, so the write does nothing in the cluster. Only with a CRD schema at hand.

use full_moon::ast::{Expression, Field, Index, Stmt, Suffix, Var};
use full_moon::tokenizer::{Symbol, TokenType};
use kruise_lua_engine::script::ScriptFlavor;

use super::unknown_obj_field::suffix_range;
use super::{Lint, LintContext, LintDiagnostic};
use crate::analysis::obj_schema::{self, ObjPath, PathSeg};
use crate::analysis::parse::token_range;
use crate::analysis::semantic::{Value, identifier, index_seg, string_literal};
use crate::analysis::severity::Severity;
use crate::analysis::spec_schema::{SpecSchema, keeps_undeclared, spec_path_text};
use crate::analysis::walk::{Visit, walk_block};
use kruise_lua_engine::schema::Schema;

/// Table constructors nested deeper than this are not followed (bounded recursion).
const MAX_TABLE_DEPTH: usize = 32;

pub struct PrunedSpecField;

impl Lint for PrunedSpecField {
    fn code(&self) -> &'static str {
        "KL014"
    }
    fn name(&self) -> &'static str {
        "pruned-spec-field"
    }
    fn default_severity(&self) -> Severity {
        Severity::Warning
    }

    fn check(&self, ctx: &LintContext) -> Vec<LintDiagnostic> {
        if ctx.flavor != ScriptFlavor::Custom {
            return Vec::new();
        }
        let Some(schema) = ctx.spec_shape.and_then(|s| s.schema.as_ref()) else {
            return Vec::new();
        };
        struct Assignments<'a> {
            found: Vec<&'a full_moon::ast::Assignment>,
        }
        impl<'a> Visit<'a> for Assignments<'a> {
            fn stmt(&mut self, stmt: &'a Stmt) {
                if let Stmt::Assignment(assignment) = stmt {
                    self.found.push(assignment);
                }
            }
        }
        let mut assignments = Assignments { found: Vec::new() };
        walk_block(ctx.ast.nodes(), &mut assignments);
        let mut found = Vec::new();
        for assignment in assignments.found {
            let values: Vec<&Expression> = assignment.expressions().iter().collect();
            for (i, var) in assignment.variables().iter().enumerate() {
                let Var::Expression(var) = var else { continue };
                // Removing a field (`spec.legacy = nil`) is never dropped by the API server.
                if values.get(i).is_some_and(|value| is_nil(value)) {
                    continue;
                }
                let Value::Obj(base) = ctx.model.prefix_value(var.prefix()) else {
                    continue;
                };
                let suffixes: Vec<&Suffix> = var.suffixes().collect();
                let steps: Vec<(PathSeg, &Suffix)> = suffixes
                    .iter()
                    .map_while(|suffix| match suffix {
                        Suffix::Index(index) => Some((index_seg(index), *suffix)),
                        _ => None,
                    })
                    .collect();
                // A call in the chain (`f(spec).x = …`): the path is not static.
                if steps.len() != suffixes.len() {
                    continue;
                }
                let mut check = Check {
                    schema,
                    found: &mut found,
                };
                check.assignment(&base, &steps, values.get(i).copied());
            }
        }
        found
    }
}

/// Whether an expression is the literal `nil`.
fn is_nil(expr: &Expression) -> bool {
    matches!(
        expr,
        Expression::Symbol(token)
            if matches!(token.token().token_type(), TokenType::Symbol { symbol: Symbol::Nil })
    )
}

struct Check<'s, 'f> {
    schema: &'s SpecSchema,
    found: &'f mut Vec<LintDiagnostic>,
}

impl Check<'_, '_> {
    /// `base` + `steps` = `value`: every key below `obj.data.spec` checked against the
    /// schema, then the fields of a table constructor assigned there.
    fn assignment(
        &mut self,
        base: &ObjPath,
        steps: &[(PathSeg, &Suffix)],
        value: Option<&Expression>,
    ) {
        let mut path = base.clone();
        let Some(mut node) = self.schema.spec() else {
            return;
        };
        let mut below: Vec<PathSeg> = Vec::new();
        let mut placed = false;
        if let Some(suffix) = path.spec_suffix() {
            below = suffix.to_vec();
            placed = true;
            match self.schema.at(&below) {
                Some(schema) => node = schema,
                None => return, // unknown here already (a read, or reported elsewhere)
            }
        }
        for (seg, suffix) in steps {
            path.0.push(seg.clone());
            if !placed {
                // The chain reaches the spec itself on this step (`obj.data.spec.x`).
                if path.spec_suffix().is_some_and(<[PathSeg]>::is_empty) {
                    placed = true;
                }
                continue;
            }
            below.push(seg.clone());
            match self.step(node, seg, &below, suffix_target(suffix)) {
                Some(next) => node = next,
                None => return,
            }
        }
        if placed && let Some(Expression::TableConstructor(table)) = value {
            self.table(node, table, &mut below, 0);
        }
    }

    /// The schema one step below `node`, or `None` (after reporting an undeclared key) when
    /// the check ends here.
    fn step<'n>(
        &mut self,
        node: &'n Schema,
        seg: &PathSeg,
        path: &[PathSeg],
        target: Target,
    ) -> Option<&'n Schema> {
        match seg {
            PathSeg::Key(name) => match node.child(name) {
                Some(child) => Some(child),
                None => {
                    let is_object = node.schema_type
                        == Some(kruise_lua_engine::schema::SchemaType::Object)
                        || !node.properties.is_empty();
                    if is_object && !keeps_undeclared(node) && !node.embedded_resource {
                        self.report(node, name, path, target);
                    }
                    None
                }
            },
            PathSeg::Index(_) | PathSeg::Any => node.items.as_deref(),
        }
    }

    fn table(
        &mut self,
        node: &Schema,
        table: &full_moon::ast::TableConstructor,
        path: &mut Vec<PathSeg>,
        depth: usize,
    ) {
        if depth > MAX_TABLE_DEPTH {
            return;
        }
        for field in table.fields().iter() {
            let (seg, value, target) = match field {
                Field::NameKey { key, value, .. } => (
                    PathSeg::Key(identifier(key).to_string()),
                    &**value,
                    Some((token_range(key), false)),
                ),
                Field::ExpressionKey { key, value, .. } => match &**key {
                    Expression::String(token) => match string_literal(token) {
                        Some(name) => (
                            PathSeg::Key(name),
                            &**value,
                            Some((token_range(token), true)),
                        ),
                        None => continue,
                    },
                    _ => continue,
                },
                Field::NoKey(value) => (PathSeg::Any, value, None),
                _ => continue,
            };
            path.push(seg.clone());
            if let Some(child) = self.step(node, &seg, path, target)
                && let Expression::TableConstructor(inner) = value
            {
                self.table(child, inner, path, depth + 1);
            }
            path.pop();
        }
    }

    fn report(&mut self, parent: &Schema, name: &str, path: &[PathSeg], target: Target) {
        let Some((range, quoted)) = target else {
            return;
        };
        let suggestion = obj_schema::suggest(name, parent.properties.keys().map(String::as_str));
        let mut message = format!(
            "the API server would drop `{}`: the CRD schema of {} does not declare `{name}`",
            spec_path_text(path),
            self.schema.label()
        );
        let diagnostic = match suggestion {
            Some(suggestion) => {
                message.push_str(&format!("; did you mean `{suggestion}`?"));
                let replacement = if quoted {
                    format!("\"{suggestion}\"")
                } else {
                    suggestion.to_string()
                };
                LintDiagnostic::new(range.clone(), message).with_fix(
                    format!("Change to `{suggestion}`"),
                    range,
                    &replacement,
                )
            }
            None => LintDiagnostic::new(range, message),
        };
        self.found.push(diagnostic);
    }
}

/// Where a finding is shown and what its fix replaces: a name, or a quoted string key
/// (`["weigth"]`); `None` for an array item, which has no name to show.
type Target = Option<(std::ops::Range<usize>, bool)>;

/// The target of an index suffix of the assignment.
fn suffix_target(suffix: &Suffix) -> Target {
    let quoted = matches!(suffix, Suffix::Index(Index::Brackets { .. }));
    Some((suffix_range(suffix), quoted))
}
