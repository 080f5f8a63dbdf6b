//! KL002: globals and library functions that Kruise's Lua (gopher-lua, Lua 5.1, with only the
//! base, math, table, string and json libraries) does not have: `os`, `io`, `utf8`,
//! `table.unpack`, `string.split`, `require("socket")`, ... They are nil at run time.

use std::collections::HashSet;

use full_moon::ast::{Call, Expression, FunctionArgs, Suffix};

use super::{Lint, LintContext, LintDiagnostic};
use crate::analysis::library;
use crate::analysis::obj_schema::{PathSeg, suggest};
use crate::analysis::parse::node_range;
use crate::analysis::semantic::{Value, index_seg, single_string_arg};
use crate::analysis::severity::Severity;

pub struct UnsupportedGlobal;

impl Lint for UnsupportedGlobal {
    fn code(&self) -> &'static str {
        "KL002"
    }
    fn name(&self) -> &'static str {
        "unsupported-global"
    }
    fn default_severity(&self) -> Severity {
        Severity::Error
    }

    fn check(&self, ctx: &LintContext) -> Vec<LintDiagnostic> {
        let mut found = Vec::new();
        let model = ctx.model;
        // Globals the script defines itself are fine to read.
        let defined: HashSet<&str> = model
            .refs
            .iter()
            .filter(|r| r.write && r.decl.is_none())
            .map(|r| r.name.as_str())
            .collect();
        for r in model.refs.iter().filter(|r| !r.write && r.decl.is_none()) {
            let name = r.name.as_str();
            if library::is_provided_global(name) || defined.contains(name) {
                continue;
            }
            let message = match library::missing_global_hint(name) {
                Some(hint) => format!("`{name}` is nil in Kruise's Lua: {hint}"),
                None => {
                    let known = library::GLOBALS
                        .iter()
                        .map(|g| g.name)
                        .chain(library::LIBRARIES.iter().map(|l| l.name))
                        .chain(["obj"])
                        .chain(model.decls.iter().map(|d| d.name.as_str()));
                    match suggest(name, known) {
                        Some(better) => format!(
                            "`{name}` is not defined (nil in Kruise's Lua); did you mean `{better}`?"
                        ),
                        None => format!("`{name}` is not defined (nil in Kruise's Lua)"),
                    }
                }
            };
            found.push(LintDiagnostic::new(r.range.clone(), message));
        }

        let all = ctx.chains();
        // `string.split = function ... end` defines the member for later reads.
        let mut defined_members: HashSet<(&'static str, String)> = HashSet::new();
        for chain in all.iter().filter(|c| c.write && c.suffixes.len() == 1) {
            if let (Value::Library(lib), Some(Suffix::Index(index))) =
                (model.prefix_value(chain.prefix), chain.suffixes.first())
                && let PathSeg::Key(member) = index_seg(index)
            {
                defined_members.insert((lib, member));
            }
        }
        for chain in all.iter().filter(|c| !c.write || c.suffixes.len() > 1) {
            let first = chain.suffixes.first().copied();
            match (model.prefix_value(chain.prefix), first) {
                (Value::Library(lib), Some(Suffix::Index(index))) => {
                    let PathSeg::Key(member) = index_seg(index) else {
                        continue;
                    };
                    let library = library::library(lib).expect("known library");
                    if library.member(&member).is_some()
                        || defined_members.contains(&(lib, member.clone()))
                    {
                        continue;
                    }
                    let range = node_range(index).unwrap_or(0..0);
                    let range = range.start.saturating_add(1).min(range.end)..range.end;
                    let message = match library::missing_member_hint(lib, &member) {
                        Some(hint) => {
                            format!("`{lib}.{member}` does not exist in Kruise's Lua: {hint}")
                        }
                        None => {
                            let names = library.members.iter().map(|m| m.name);
                            match suggest(&member, names) {
                                Some(better) => format!(
                                    "`{lib}.{member}` does not exist in Kruise's Lua; did you mean `{lib}.{better}`?"
                                ),
                                None => format!(
                                    "`{lib}.{member}` does not exist in Kruise's Lua (it has: {})",
                                    library
                                        .members
                                        .iter()
                                        .map(|m| m.name)
                                        .collect::<Vec<_>>()
                                        .join(", ")
                                ),
                            }
                        }
                    };
                    found.push(LintDiagnostic::new(range, message));
                }
                (
                    Value::LibraryFunction("", "require"),
                    Some(Suffix::Call(Call::AnonymousCall(args))),
                ) => {
                    let Some(name) = single_string_arg(args) else {
                        continue;
                    };
                    if library::REQUIRABLE.contains(&name.as_str()) {
                        continue;
                    }
                    let range = match args.as_ref() {
                        FunctionArgs::Parentheses { arguments, .. } => arguments
                            .iter()
                            .next()
                            .and_then(|e: &Expression| node_range(e)),
                        other => node_range(other),
                    }
                    .unwrap_or(0..0);
                    found.push(LintDiagnostic::new(
                        range,
                        format!(
                            "`require(\"{name}\")` fails in Kruise: there is no package library; only {} can be required",
                            library::REQUIRABLE.join(", ")
                        ),
                    ));
                }
                _ => {}
            }
        }
        found
    }
}
