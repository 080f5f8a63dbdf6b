//! KL001: reading a field of `obj` that Kruise never sets (a typo such as `obj.canaryweight`,
//! `obj.data.specs`, or a field of the other provider's `obj`). Such a read is always nil.

use kruise_lua_engine::script::ScriptFlavor;
use std::collections::HashSet;

use full_moon::ast::{Index, Suffix};

use super::{Lint, LintContext, LintDiagnostic};
use crate::analysis::obj_schema::{self, Lookup, ObjPath, PathSeg, ShapeKind};
use crate::analysis::parse::{node_range, token_range};
use crate::analysis::semantic::{Value, index_seg};
use crate::analysis::severity::Severity;
use crate::analysis::walk::Chain;

pub struct UnknownObjField;

impl Lint for UnknownObjField {
    fn code(&self) -> &'static str {
        "KL001"
    }
    fn name(&self) -> &'static str {
        "unknown-obj-field"
    }
    fn default_severity(&self) -> Severity {
        Severity::Error
    }

    fn check(&self, ctx: &LintContext) -> Vec<LintDiagnostic> {
        let all = ctx.chains();
        // Fields the script stores into obj itself may be read back.
        let written: HashSet<ObjPath> = all
            .iter()
            .filter(|c| c.write)
            .filter_map(|c| {
                let (base, steps) = obj_steps(ctx, c)?;
                let mut path = base;
                path.0.extend(steps.into_iter().map(|(seg, _)| seg));
                Some(path)
            })
            .collect();
        let mut found = Vec::new();
        for chain in all {
            let Some((base, steps)) = obj_steps(ctx, chain) else {
                continue;
            };
            // The last index of an assignment target is written, not read.
            let read_steps = if chain.write && steps.len() == chain.suffixes.len() {
                steps.len().saturating_sub(1)
            } else {
                steps.len()
            };
            let mut path = base;
            for (seg, suffix) in steps.into_iter().take(read_steps) {
                path.0.push(seg);
                if written.contains(&path) {
                    break;
                }
                let at = path.0.len() - 1;
                match obj_schema::lookup(ctx.flavor, &path.0) {
                    Lookup::UnknownField { at: bad, parent } if bad == at => {
                        found.push(unknown_field(ctx.flavor, &path, parent, suffix));
                        break;
                    }
                    Lookup::NotATable { at: bad, value } if bad == at => {
                        let parent = ObjPath(path.0[..at].to_vec());
                        found.push(LintDiagnostic::new(
                            suffix_range(suffix),
                            format!("`{parent}` is a {}; it has no fields", value.type_name),
                        ));
                        break;
                    }
                    Lookup::Found { .. } => {}
                    // Free-form below here, or already reported at an earlier step.
                    _ => break,
                }
            }
        }
        found
    }
}

/// The `obj` path a chain starts from and the path steps of its leading index suffixes
/// (up to the first call).
fn obj_steps<'a>(
    ctx: &LintContext,
    chain: &Chain<'a>,
) -> Option<(ObjPath, Vec<(PathSeg, &'a Suffix)>)> {
    let Value::Obj(base) = ctx.model.prefix_value(chain.prefix) else {
        return None;
    };
    let steps = chain
        .suffixes
        .iter()
        .map_while(|suffix| match suffix {
            Suffix::Index(index) => Some((index_seg(index), *suffix)),
            _ => None,
        })
        .collect();
    Some((base, steps))
}

pub(super) fn suffix_range(suffix: &Suffix) -> std::ops::Range<usize> {
    match suffix {
        Suffix::Index(Index::Dot { name, .. }) => token_range(name),
        Suffix::Index(Index::Brackets { expression, .. }) => {
            node_range(expression.as_ref()).unwrap_or(0..0)
        }
        other => node_range(other).unwrap_or(0..0),
    }
}

fn unknown_field(
    flavor: ScriptFlavor,
    path: &ObjPath,
    parent_shape: &'static obj_schema::Shape,
    suffix: &Suffix,
) -> LintDiagnostic {
    let Some(PathSeg::Key(name)) = path.0.last() else {
        unreachable!("only keys can be unknown fields");
    };
    let parent = ObjPath(path.0[..path.0.len() - 1].to_vec());
    let range = suffix_range(suffix);
    if let ShapeKind::Array(_) = parent_shape.kind {
        return LintDiagnostic::new(
            range,
            format!(
                "`{parent}` is an array ({}); index an element first: `{parent}[1].{name}`, or loop with `for _, item in ipairs({parent})`",
                parent_shape.type_name
            ),
        );
    }
    let other = match flavor {
        ScriptFlavor::Custom => ScriptFlavor::Ingress,
        ScriptFlavor::Ingress => ScriptFlavor::Custom,
    };
    let candidates = parent_shape.fields().iter().map(|f| f.name);
    let suggestion = obj_schema::suggest(name, candidates);
    let mut message = format!("`{parent}` has no field `{name}`");
    if parent.0.is_empty() && obj_schema::root(other).field(name).is_some() {
        let (this, that) = match flavor {
            ScriptFlavor::Custom => ("a custom", "ingress"),
            ScriptFlavor::Ingress => ("an ingress", "custom-provider"),
        };
        message = format!(
            "`obj.{name}` exists only for {that} scripts; {this} script's obj has no `{name}`"
        );
        let hint = match (flavor, name.as_str()) {
            (ScriptFlavor::Custom, "weight") => {
                Some(" (use `obj.canaryWeight`, a number, and `obj.stableWeight`)")
            }
            (ScriptFlavor::Custom, "annotations") => Some(" (use `obj.data.annotations`)"),
            (ScriptFlavor::Ingress, "canaryWeight" | "stableWeight") => {
                Some(" (use `obj.weight`, a string such as \"20\")")
            }
            (ScriptFlavor::Ingress, "data") => Some(" (use `obj.annotations`)"),
            _ => None,
        };
        message.push_str(hint.unwrap_or(""));
        return LintDiagnostic::new(range, message);
    }
    match suggestion {
        Some(better) => {
            message.push_str(&format!("; did you mean `{better}`?"));
            let diagnostic = LintDiagnostic::new(range.clone(), message);
            // Only a `.name` can be replaced by a name as is.
            if matches!(suffix, Suffix::Index(Index::Dot { .. })) {
                diagnostic.with_fix(format!("Change to `{better}`"), range, better)
            } else {
                diagnostic
            }
        }
        None => {
            let known: Vec<&str> = parent_shape.fields().iter().map(|f| f.name).collect();
            message.push_str(&format!(" (it has: {})", known.join(", ")));
            LintDiagnostic::new(range, message)
        }
    }
}
