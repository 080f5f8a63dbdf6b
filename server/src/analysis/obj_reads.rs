//! The `obj` reads of a script, per line: the expressions whose values inline hints show for a
//! step's run (`obj.canaryWeight`, `spec.routes` through an alias of `obj.data.spec`).

use std::collections::BTreeMap;

use full_moon::ast::{Expression, Index, Suffix};

use super::parse::{node_range, token_range};
use super::parsed_script::ParsedScript;
use super::semantic::Value;
use super::walk::{Visit, chains, walk_block};

/// Expressions per line at most (a line packed with reads shows the first ones).
const MAX_PER_LINE: usize = 4;

/// Line (1-based) → the source text of each read of a value inside `obj` on it, once each, in
/// source order. Only plain field reads are taken (`a.b`, `a["b"]`, `a[1]`): evaluating them
/// calls nothing. Assignment targets are left out (the line's locals show what it wrote).
pub fn obj_reads_by_line(parsed: &ParsedScript) -> BTreeMap<u32, Vec<String>> {
    let (source, model) = (parsed.source(), parsed.model());
    let mut reads: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for chain in chains(parsed.ast().nodes()) {
        if chain.write {
            continue;
        }
        // The leading run of plain indexes.
        let plain = chain
            .suffixes
            .iter()
            .take_while(|s| match s {
                Suffix::Index(Index::Dot { .. }) => true,
                Suffix::Index(Index::Brackets { expression, .. }) => {
                    matches!(
                        expression.as_ref(),
                        Expression::String(_) | Expression::Number(_)
                    )
                }
                _ => false,
            })
            .count();
        if plain == 0 {
            continue;
        }
        let suffixes = &chain.suffixes[..plain];
        if !matches!(
            model.chain_value(chain.prefix, suffixes.iter().copied()),
            Value::Obj(_)
        ) {
            continue;
        }
        record(&mut reads, source, chain.prefix, suffixes.last().copied());
    }
    reads
}

/// Line (1-based) → the targets of field assignments on it (`d.weight`, `r.route[1].weight`,
/// `spec["x"]`): plain indexes of a name, whose value after the line shows what the line
/// wrote (the table itself would only show `{…}`). Once each, in source order.
pub fn field_writes_by_line(parsed: &ParsedScript) -> BTreeMap<u32, Vec<String>> {
    let source = parsed.source();
    let mut writes: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for chain in chains(parsed.ast().nodes()) {
        if !chain.write || chain.suffixes.is_empty() {
            continue;
        }
        let plain = chain.suffixes.iter().all(|s| match s {
            Suffix::Index(Index::Dot { .. }) => true,
            Suffix::Index(Index::Brackets { expression, .. }) => matches!(
                expression.as_ref(),
                Expression::String(_) | Expression::Number(_)
            ),
            _ => false,
        });
        if !plain || !matches!(chain.prefix, full_moon::ast::Prefix::Name(_)) {
            continue;
        }
        record(
            &mut writes,
            source,
            chain.prefix,
            chain.suffixes.last().copied(),
        );
    }
    writes
}

/// Line (1-based) → (target, assigned expression) of its single field assignments
/// (`route.weight = obj.canaryWeight`, one target and one value, each on one line): the step
/// values evaluate the expression before the line runs, for when the target cannot be read
/// after it (see `record_step_values_assigned`).
pub fn field_write_values_by_line(parsed: &ParsedScript) -> BTreeMap<u32, Vec<(String, String)>> {
    struct Assignments<'s> {
        source: &'s str,
        found: BTreeMap<u32, Vec<(String, String)>>,
    }
    impl<'a> Visit<'a> for Assignments<'_> {
        fn stmt(&mut self, stmt: &'a full_moon::ast::Stmt) {
            let full_moon::ast::Stmt::Assignment(assignment) = stmt else {
                return;
            };
            let (Some(full_moon::ast::Var::Expression(var)), Some(value), 1, 1) = (
                assignment.variables().iter().next(),
                assignment.expressions().iter().next(),
                assignment.variables().len(),
                assignment.expressions().len(),
            ) else {
                return;
            };
            let (Some(start), Some(end), Some(value)) = (
                node_range(var.prefix()),
                var.suffixes().last().and_then(suffix_end),
                node_range(value),
            ) else {
                return;
            };
            let (Some(target), Some(value)) =
                (self.source.get(start.start..end), self.source.get(value))
            else {
                return;
            };
            if target.contains('\n') || value.contains('\n') {
                return;
            }
            let line = self.source[..start.start].matches('\n').count() as u32 + 1;
            let on_line = self.found.entry(line).or_default();
            if on_line.len() < MAX_PER_LINE {
                on_line.push((target.to_string(), value.to_string()));
            }
        }
    }
    let mut visitor = Assignments {
        source: parsed.source(),
        found: BTreeMap::new(),
    };
    walk_block(parsed.ast().nodes(), &mut visitor);
    visitor.found
}

/// Adds the source text of `prefix` up to the end of `last` to its line's list: one line only
/// (a chain split over lines would not fit a line's hint), once each, at most
/// [`MAX_PER_LINE`] per line.
fn record(
    by_line: &mut BTreeMap<u32, Vec<String>>,
    source: &str,
    prefix: &full_moon::ast::Prefix,
    last: Option<&Suffix>,
) {
    let (Some(start), Some(end)) = (node_range(prefix), last.and_then(suffix_end)) else {
        return;
    };
    let Some(text) = source.get(start.start..end) else {
        return;
    };
    if text.contains('\n') {
        return;
    }
    let line = source[..start.start].matches('\n').count() as u32 + 1;
    let on_line = by_line.entry(line).or_default();
    if on_line.len() < MAX_PER_LINE && !on_line.iter().any(|t| t == text) {
        on_line.push(text.to_string());
    }
}

/// Where an index suffix ends (node_range stops short of a bracket index's `]`).
fn suffix_end(suffix: &Suffix) -> Option<usize> {
    match suffix {
        Suffix::Index(Index::Brackets { brackets, .. }) => {
            Some(token_range(brackets.tokens().1).end)
        }
        other => node_range(other).map(|r| r.end),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_of_obj_and_its_aliases_per_line() {
        let source = "local spec = obj.data.spec\nlocal w = obj.canaryWeight + obj[\"canaryWeight\"]\nfor _, r in ipairs(spec.routes) do\n  r.weight = w\n  print(r.name, string.upper(obj.stableService))\nend\nobj.data.x = 1\nlocal n = #obj.data.spec.routes[1].name\nreturn obj.data\n";
        let parsed = ParsedScript::new(source);
        let reads = obj_reads_by_line(&parsed);
        let lines: Vec<(u32, Vec<&str>)> = reads
            .iter()
            .map(|(l, r)| (*l, r.iter().map(String::as_str).collect()))
            .collect();
        assert_eq!(
            lines,
            vec![
                (1, vec!["obj.data.spec"]),
                (2, vec!["obj.canaryWeight", "obj[\"canaryWeight\"]"]),
                (3, vec!["spec.routes"]),
                (5, vec!["r.name", "obj.stableService"]),
                (8, vec!["obj.data.spec.routes[1].name"]),
                (9, vec!["obj.data"]),
            ]
        );
        let writes = field_writes_by_line(&parsed);
        assert_eq!(
            writes.get(&4).map(Vec::as_slice),
            Some(&["r.weight".to_string()][..])
        );
        assert_eq!(
            writes.get(&7).map(Vec::as_slice),
            Some(&["obj.data.x".to_string()][..])
        );
        assert_eq!(writes.len(), 2, "{writes:?}");
        let values = field_write_values_by_line(&parsed);
        assert_eq!(
            values.get(&4).map(Vec::as_slice),
            Some(&[("r.weight".to_string(), "w".to_string())][..]),
            "{values:?}"
        );
        // Calls and non-obj chains are not reads; a broken script gives what it can.
        assert!(
            obj_reads_by_line(&ParsedScript::new(
                "string.upper(x)\nlocal t = {}\nprint(t.a)"
            ))
            .is_empty()
        );
        assert_eq!(
            obj_reads_by_line(&ParsedScript::new("local w = obj.canaryWeight\nif then")).len(),
            1
        );
    }
}
