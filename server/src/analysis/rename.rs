//! Rename of a local, parameter, upvalue or script global (a global function) across one script,
//! on the resolved names of [`super::semantic`]; `obj`, the library Kruise provides and keywords
//! are refused with the reason.

use std::ops::Range;

use super::library::{self, KEYWORDS};
use super::parsed_script::ParsedScript;
use super::semantic::{DeclKind, Model};

/// What is renamed: the name's range under the cursor and its current text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenameTarget {
    pub range: Range<usize>,
    pub name: String,
}

/// Whether the name at `offset` can be renamed; the refusal says why.
pub fn prepare_rename(script: &ParsedScript, offset: usize) -> Result<RenameTarget, String> {
    target(script.source(), script.model(), offset).map(|(target, _)| target)
}

/// Every range to replace with `new_name` to rename the name at `offset` (declaration and
/// uses), in source order; refused when the name cannot be renamed, `new_name` is not a Lua
/// name, or it would capture or be captured by another name.
pub fn rename(
    script: &ParsedScript,
    offset: usize,
    new_name: &str,
) -> Result<Vec<Range<usize>>, String> {
    let (source, model) = (script.source(), script.model());
    let (target, decl) = target(source, model, offset)?;
    if !crate::lua_source::is_identifier(new_name) {
        return Err(format!("`{new_name}` is not a Lua name"));
    }
    if new_name == target.name {
        return Ok(Vec::new());
    }
    if library::is_provided_global(new_name) {
        return Err(format!(
            "`{new_name}` is provided by Kruise's Lua: renaming to it would hide it"
        ));
    }
    let mut ranges: Vec<Range<usize>> = match decl {
        Some(d) => std::iter::once(model.decls[d].range.clone())
            .chain(model.uses_of(d).map(|r| r.range.clone()))
            .collect(),
        None => model
            .refs
            .iter()
            .filter(|r| r.decl.is_none() && r.name == target.name)
            .map(|r| r.range.clone())
            .collect(),
    };
    ranges.sort_by_key(|r| r.start);
    // Every place the name appears must still mean the same thing under the new name.
    for range in &ranges {
        let captured = model
            .visible_at(range.start)
            .into_iter()
            .any(|other| Some(other) != decl && model.decls[other].name == new_name);
        if captured {
            return Err(format!(
                "`{new_name}` is already a local visible at line {}: the rename would change what a name refers to",
                line_of(source, range.start)
            ));
        }
    }
    // A local renamed to a global the script uses inside its scope would hide that global.
    if let Some(d) = decl {
        let scope = &model.decls[d].visible;
        let hidden = model.refs.iter().find(|r| {
            r.name == new_name
                && r.range.start >= scope.start
                && r.range.end <= scope.end
                && r.decl.is_none_or(|other| {
                    model.decls[other].visible.start < scope.start
                        || model.decls[other].visible.end > scope.end
                })
        });
        if let Some(hidden) = hidden {
            return Err(format!(
                "`{new_name}` is used at line {} where the renamed local would hide it",
                line_of(source, hidden.range.start)
            ));
        }
    }
    Ok(ranges)
}

fn line_of(source: &str, offset: usize) -> usize {
    source[..offset.min(source.len())].matches('\n').count() + 1
}

/// The name at `offset` and its declaration (None for a script global), or why it cannot be
/// renamed.
fn target(
    source: &str,
    model: &Model,
    offset: usize,
) -> Result<(RenameTarget, Option<usize>), String> {
    let Some((decl, name, range)) = model.symbol_at(offset) else {
        let word = word_at(source, offset);
        return Err(if KEYWORDS.contains(&word) {
            format!("`{word}` is a Lua keyword, not a name")
        } else {
            "no local, parameter or global name here".to_string()
        });
    };
    if let Some(d) = decl
        && model.decls[d].kind == DeclKind::SelfParam
    {
        return Err("`self` is implicit in a method: it cannot be renamed".into());
    }
    if decl.is_none() {
        if name == "obj" {
            return Err(
                "`obj` is the input Kruise gives the script: its name cannot change".into(),
            );
        }
        if library::is_provided_global(name) {
            return Err(format!(
                "`{name}` is provided by Kruise's Lua: it cannot be renamed"
            ));
        }
    }
    Ok((
        RenameTarget {
            range,
            name: name.to_string(),
        },
        decl,
    ))
}

/// The identifier-like word around `offset`.
fn word_at(source: &str, offset: usize) -> &str {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let offset = offset.min(source.len());
    let start = source[..offset]
        .rfind(|c: char| !is_word(c))
        .map_or(0, |i| i + 1);
    let end = source[offset..]
        .find(|c: char| !is_word(c))
        .map_or(source.len(), |i| offset + i);
    source.get(start..end).unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(source: &str, needle: &str, n: usize) -> usize {
        source.match_indices(needle).nth(n).unwrap().0
    }

    fn renamed(source: &str, offset: usize, new_name: &str) -> String {
        let mut out = source.to_string();
        for range in rename(&ParsedScript::new(source), offset, new_name)
            .unwrap()
            .into_iter()
            .rev()
        {
            out.replace_range(range, new_name);
        }
        out
    }

    #[test]
    fn locals_parameters_and_upvalues() {
        let source = "local count = 0\nlocal function bump(step)\n  count = count + step\n  return step\nend\nlocal step = 2\nbump(step)\nreturn {count = count}";
        assert_eq!(
            renamed(source, at(source, "count", 0), "total"),
            "local total = 0\nlocal function bump(step)\n  total = total + step\n  return step\nend\nlocal step = 2\nbump(step)\nreturn {count = total}"
        );
        // The parameter, not the later local of the same name.
        assert_eq!(
            renamed(source, at(source, "step", 1), "by"),
            "local count = 0\nlocal function bump(by)\n  count = count + by\n  return by\nend\nlocal step = 2\nbump(step)\nreturn {count = count}"
        );
        let target = prepare_rename(&ParsedScript::new(source), at(source, "bump", 1) + 2).unwrap();
        assert_eq!(target.name, "bump");
    }

    #[test]
    fn global_functions_across_the_script() {
        let source = "function helper(x) return x end\nlocal y = helper(1)\nreturn {y = helper(y)}";
        assert_eq!(
            renamed(source, at(source, "helper", 2), "double"),
            "function double(x) return x end\nlocal y = double(1)\nreturn {y = double(y)}"
        );
    }

    #[test]
    fn refusals_say_why() {
        let source = "local s = string.format('%d', obj.canaryWeight)\nif s then print(s) end\nreturn obj.data";
        let obj = prepare_rename(&ParsedScript::new(source), at(source, "obj", 0)).unwrap_err();
        assert!(obj.contains("`obj`"), "{obj}");
        let lib = prepare_rename(&ParsedScript::new(source), at(source, "string", 0)).unwrap_err();
        assert!(lib.contains("provided by Kruise"), "{lib}");
        let print = prepare_rename(&ParsedScript::new(source), at(source, "print", 0)).unwrap_err();
        assert!(print.contains("provided"), "{print}");
        let keyword =
            prepare_rename(&ParsedScript::new(source), at(source, "then", 0) + 1).unwrap_err();
        assert!(keyword.contains("keyword"), "{keyword}");
        // Bad new names and captures.
        let s = at(source, "s =", 0);
        assert!(
            rename(&ParsedScript::new(source), s, "end")
                .unwrap_err()
                .contains("not a Lua name")
        );
        assert!(
            rename(&ParsedScript::new(source), s, "print")
                .unwrap_err()
                .contains("provided")
        );
        let source = "local a = 1\nlocal b = 2\nreturn {a + b}";
        let err = rename(&ParsedScript::new(source), 6, "b").unwrap_err();
        assert!(err.contains("line 3"), "{err}");
        let source = "local a = 1\nreturn {a, helper()}";
        assert!(
            rename(&ParsedScript::new(source), 6, "helper")
                .unwrap_err()
                .contains("hide")
        );
    }
}
