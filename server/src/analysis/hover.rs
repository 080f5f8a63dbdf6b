//! Hover: docs for `obj` fields (with the field's path, so the protocol layer can append the
//! value each test case gives it), library functions and globals, locals' declarations with
//! their inferred shape, and the script's own functions (signature and leading comment).

use kruise_lua_engine::script::ScriptFlavor;
use std::ops::Range;

use super::completion::{
    in_comment_or_string, member_operator, receiver_before, receiver_value, word_at,
};
use super::library;
use super::obj_schema::{self, Lookup, ObjPath, PathSeg, ShapeKind};
use super::parsed_script::ParsedScript;
use super::semantic::{DeclKind, Value, global_value};
use super::spec_shape::{SpecShape, spec_shape_at};

/// What a hover shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hover {
    /// The hovered name.
    pub range: Range<usize>,
    /// Markdown.
    pub contents: String,
    /// When the name is (an alias of) a value inside `obj`: its path, e.g. `canaryWeight` or
    /// `data.spec.http`.
    pub obj_path: Option<ObjPath>,
}

/// Hover at byte `offset` of `source`.
pub fn hover(
    script: &ParsedScript,
    offset: usize,
    flavor: ScriptFlavor,
    spec_shape: Option<&SpecShape>,
) -> Option<Hover> {
    let source = script.source();
    let offset = offset.min(source.len());
    if !source.is_char_boundary(offset) || in_comment_or_string(source, offset) {
        return None;
    }
    let range = word_at(source, offset);
    let start = range.start;
    if range.is_empty() || source.as_bytes()[start].is_ascii_digit() {
        return None;
    }
    let name = &source[range.clone()];
    if library::KEYWORDS.contains(&name) {
        return None;
    }
    let model = script.model();
    // Types only for the hovers that show them, from the same parse.
    let types = || super::types::infer_parsed(script.ast(), model, flavor);

    // A member: `<receiver>.name` or `<receiver>:name`.
    if let Some(operator) = member_operator(source, start) {
        if operator == b':' {
            // Method calls in these scripts are string methods (`s:upper()`).
            let member = library::STRING.member(name)?;
            return Some(Hover {
                range,
                contents: item_markdown(&format!("(method) {}", member.signature), member.doc),
                obj_path: None,
            });
        }
        let receiver = receiver_before(source, start - 1)?;
        let value = receiver_value(model, &receiver, start);
        return match value {
            Value::Obj(path) => {
                let path = path.child(PathSeg::Key(name.to_string()));
                obj_hover(&path, flavor, spec_shape, range)
            }
            Value::Library(lib) => {
                let member = library::library(lib)?.member(name)?;
                Some(Hover {
                    range,
                    contents: item_markdown(member.signature, member.doc),
                    obj_path: None,
                })
            }
            _ => None,
        };
    }

    match model.symbol_at(start) {
        Some((Some(decl), _, _)) => {
            let decl = &model.decls[decl];
            if let Value::Function { params, .. } = &decl.value {
                let mut header = format!("local function {}({})", decl.name, params.join(", "));
                let types = types();
                if let Some(returns) = types.returns_of_function_at(decl.stmt_range.start) {
                    header.push_str(&format!(" -> {returns}"));
                }
                return Some(Hover {
                    range,
                    contents: function_markdown(&header, source, decl.stmt_range.start),
                    obj_path: None,
                });
            }
            let header = match decl.kind {
                DeclKind::Param => format!("(parameter) {}", decl.name),
                DeclKind::SelfParam => "(parameter) self".to_string(),
                _ => first_line(&source[decl.stmt_range.clone()]).to_string(),
            };
            let mut contents = format!("```lua\n{header}\n```");
            if let Some(sketch) = value_sketch(&decl.value, flavor, spec_shape) {
                contents = format!("```lua\n{header}\n{}: {sketch}\n```", decl.name);
            } else if let Some(ty) = types().local(decl.range.start) {
                contents = format!("```lua\n{header}\n{}: {ty}\n```", decl.name);
            }
            let mut obj_path = None;
            match &decl.value {
                Value::Obj(path) => {
                    if let Some(h) = obj_hover(path, flavor, spec_shape, range.clone()) {
                        contents.push_str("\n\n---\n\n");
                        contents.push_str(&h.contents);
                    }
                    obj_path = Some(path.clone());
                }
                Value::LibraryFunction(lib, function) => {
                    if let Some(item) = lib_function(lib, function) {
                        contents.push_str("\n\n---\n\n");
                        contents.push_str(&item_markdown(item.signature, item.doc));
                    }
                }
                _ => {}
            }
            Some(Hover {
                range,
                contents,
                obj_path,
            })
        }
        _ => match model.global_functions.iter().find(|f| f.name == name) {
            Some(function) => {
                let mut header =
                    format!("function {}({})", function.name, function.params.join(", "));
                let types = types();
                if let Some(returns) = types.returns_of_function_at(function.stmt_range.start) {
                    header.push_str(&format!(" -> {returns}"));
                }
                Some(Hover {
                    range,
                    contents: function_markdown(&header, source, function.stmt_range.start),
                    obj_path: None,
                })
            }
            None => global_hover(name, flavor, range),
        },
    }
}

/// A function's signature, then the comment block directly above its statement.
fn function_markdown(signature: &str, source: &str, stmt_start: usize) -> String {
    let mut text = format!("```lua\n{signature}\n```");
    if let Some(comment) = leading_comment(source, stmt_start) {
        text.push_str("\n\n---\n\n");
        text.push_str(&comment);
    }
    text
}

/// The `--` lines directly above the line holding `start` (no blank line between), without
/// their dashes; None when there are none. (Hover and signature help show it.)
pub fn leading_comment(source: &str, start: usize) -> Option<String> {
    let line_start = source[..start.min(source.len())]
        .rfind('\n')
        .map_or(0, |i| i + 1);
    let mut lines: Vec<&str> = Vec::new();
    for line in source[..line_start].lines().rev() {
        let Some(text) = line.trim().strip_prefix("--") else {
            break;
        };
        // `--[[ ... ]]` blocks and `---` rulers are kept as text, minus their markers.
        let text = text.trim_start_matches('-').trim_start_matches("[[");
        lines.push(text.trim_end_matches("]]").trim());
    }
    lines.reverse();
    let text = lines.join("\n").trim().to_string();
    (!text.is_empty()).then_some(text)
}

/// What a local is known to hold, as one line: `{ match: […], route: […] }` for a place in the
/// spec seen in the test cases, `{ a, b }` for a local table's fields.
fn value_sketch(
    value: &Value,
    flavor: ScriptFlavor,
    spec_shape: Option<&SpecShape>,
) -> Option<String> {
    match value {
        Value::Obj(path) => match obj_schema::lookup(flavor, &path.0) {
            Lookup::Found { shape, .. } if matches!(shape.kind, ShapeKind::Spec) => {
                spec_shape_at(spec_shape, &[])?.sketch()
            }
            Lookup::Free => spec_shape_at(spec_shape, path.spec_suffix()?)?.sketch(),
            _ => None,
        },
        Value::Table { fields } if !fields.is_empty() => {
            Some(format!("{{ {} }}", fields.join(", ")))
        }
        _ => None,
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("").trim_end()
}

fn item_markdown(signature: &str, doc: &str) -> String {
    format!("```lua\n{signature}\n```\n\n{doc}")
}

fn lib_function(lib: &str, function: &str) -> Option<&'static library::LibItem> {
    if lib.is_empty() {
        library::global(function)
    } else {
        library::library(lib)?.member(function)
    }
}

fn global_hover(name: &str, flavor: ScriptFlavor, range: Range<usize>) -> Option<Hover> {
    let (contents, obj_path) = match global_value(name) {
        Value::Obj(path) => (
            format!(
                "```lua\n(global) obj: {}\n```\n\n{}",
                obj_schema::root(flavor).type_name,
                obj_schema::root_doc(flavor)
            ),
            Some(path),
        ),
        Value::Library(lib) => {
            let library = library::library(lib)?;
            (
                format!("```lua\n(library) {lib}\n```\n\n{}", library.doc),
                None,
            )
        }
        _ => match library::global(name) {
            Some(item) => (item_markdown(item.signature, item.doc), None),
            None => {
                let hint = library::missing_global_hint(name)?;
                (format!("`{name}` is nil in Kruise's Lua: {hint}"), None)
            }
        },
    };
    Some(Hover {
        range,
        contents,
        obj_path,
    })
}

/// Docs of the value at `path` inside `obj`.
fn obj_hover(
    path: &ObjPath,
    flavor: ScriptFlavor,
    spec_shape: Option<&SpecShape>,
    range: Range<usize>,
) -> Option<Hover> {
    let contents = match obj_schema::lookup(flavor, &path.0) {
        Lookup::Found { shape, field } => {
            let doc = field.map_or("", |f| f.doc);
            format!("```lua\n(field) {path}: {}\n```\n\n{doc}", shape.type_name)
        }
        Lookup::Free => {
            let suffix = path.spec_suffix()?;
            match spec_shape.and_then(|s| s.describe_at(suffix)) {
                Some((kind, docs)) => format!("```lua\n(field) {path}: {kind}\n```\n\n{docs}"),
                None => format!(
                    "```lua\n(field) {path}\n```\n\nPart of the resource's spec (free-form; not in the test cases' specs)."
                ),
            }
        }
        Lookup::UnknownField { .. } | Lookup::NotATable { .. } => return None,
    };
    Some(Hover {
        range,
        contents,
        obj_path: Some(path.clone()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hover_at(text: &str, flavor: ScriptFlavor) -> Option<Hover> {
        let offset = text.find('|').expect("cursor");
        let source = text.replacen('|', "", 1);
        hover(&ParsedScript::new(source), offset, flavor, None)
    }

    fn keys(h: &Hover) -> Vec<&str> {
        h.obj_path.as_ref().unwrap().keys().unwrap()
    }

    #[test]
    fn obj_fields_with_paths() {
        let h = hover_at(
            "local w = obj.canary|Weight\nreturn obj.data",
            ScriptFlavor::Custom,
        )
        .unwrap();
        assert_eq!(keys(&h), vec!["canaryWeight"]);
        assert!(h.contents.contains("-1"), "{}", h.contents);
        assert!(
            h.contents.contains("(field) obj.canaryWeight: number"),
            "{}",
            h.contents
        );
        assert_eq!(h.range, 14..26);

        let h = hover_at(
            "local spec = obj.data.spec\nprint(spec.ht|tp)",
            ScriptFlavor::Custom,
        )
        .unwrap();
        assert_eq!(keys(&h), vec!["data", "spec", "http"]);

        let h = hover_at("print(obj.we|ight)", ScriptFlavor::Ingress).unwrap();
        assert!(h.contents.contains("string"), "{}", h.contents);

        // The obj global itself and an alias local.
        let h = hover_at("print(o|bj.data)", ScriptFlavor::Custom).unwrap();
        assert_eq!(h.obj_path, Some(ObjPath::root()));
        let h = hover_at(
            "local labels = obj.data.labels or {}\nprint(lab|els)",
            ScriptFlavor::Custom,
        )
        .unwrap();
        assert_eq!(keys(&h), vec!["data", "labels"]);
        assert!(
            h.contents.contains("local labels = obj.data.labels or {}"),
            "{}",
            h.contents
        );
        assert!(h.contents.contains("random order"), "{}", h.contents);

        // Array elements through a loop variable.
        let h = hover_at(
            "for _, m in ipairs(obj.matches) do print(m.head|ers) end",
            ScriptFlavor::Custom,
        )
        .unwrap();
        assert_eq!(
            h.obj_path.unwrap().0,
            vec![
                PathSeg::Key("matches".into()),
                PathSeg::Any,
                PathSeg::Key("headers".into())
            ]
        );
        assert!(hover_at("print(obj.nope|x)", ScriptFlavor::Custom).is_none());
    }

    #[test]
    fn spec_fields_show_the_crd_type_and_description() {
        use crate::analysis::spec_schema::tests::gizmo;
        let shape = SpecShape::default().with_schema(Some(gizmo(&[])));
        let text = "local spec = obj.data.spec\nspec.http[1].route[2].wei|ght = 5";
        let offset = text.find('|').unwrap();
        let source = text.replacen('|', "", 1);
        let h = hover(
            &ParsedScript::new(source),
            offset,
            ScriptFlavor::Custom,
            Some(&shape),
        )
        .unwrap();
        assert_eq!(
            h.contents,
            "```lua\n(field) obj.data.spec.http[1].route[2].weight: integer\n```\n\n`integer`\n\nShare of the traffic.\n\nFrom the CRD schema of Gizmo test.kruise-lua.dev/v1."
        );
    }

    #[test]
    fn library_functions_and_globals() {
        let h = hover_at("table.ins|ert(t, 1)", ScriptFlavor::Custom).unwrap();
        assert!(
            h.contents.contains("table.insert(t, [pos,] value)"),
            "{}",
            h.contents
        );
        let h = hover_at("local s = string.for|mat('%d', 1)", ScriptFlavor::Custom).unwrap();
        assert!(h.contents.contains("MISSING"), "{}", h.contents);
        let h = hover_at("for k in pai|rs(t) do end", ScriptFlavor::Custom).unwrap();
        assert!(h.contents.contains("random"), "{}", h.contents);
        let h = hover_at(
            "local j = require('json')\nj.enc|ode({})",
            ScriptFlavor::Custom,
        )
        .unwrap();
        assert!(h.contents.contains("json.encode"), "{}", h.contents);
        let h = hover_at("print(o|s.time())", ScriptFlavor::Custom).unwrap();
        assert!(h.contents.contains("nil in Kruise"), "{}", h.contents);
        let h = hover_at("local s = obj.canaryService:up|per()", ScriptFlavor::Custom).unwrap();
        assert!(h.contents.contains("string.upper"), "{}", h.contents);
    }

    #[test]
    fn locals_show_their_declaration() {
        let h = hover_at("local count = 1 + 2\nprint(co|unt)", ScriptFlavor::Custom).unwrap();
        assert!(h.contents.contains("local count = 1 + 2"), "{}", h.contents);
        assert_eq!(h.obj_path, None);
        let h = hover_at(
            "local function f(alpha)\n  return al|pha\nend",
            ScriptFlavor::Custom,
        )
        .unwrap();
        assert!(h.contents.contains("(parameter) alpha"), "{}", h.contents);
        let h = hover_at(
            "local insert = table.insert\nins|ert(t, 1)",
            ScriptFlavor::Custom,
        )
        .unwrap();
        assert!(h.contents.contains("Appends"), "{}", h.contents);
        assert!(hover_at("-- obj|.data", ScriptFlavor::Custom).is_none());
        assert!(hover_at("loc|al x = 1", ScriptFlavor::Custom).is_none());
    }

    fn hover_with(text: &str, shape: &SpecShape) -> Hover {
        let offset = text.find('|').expect("cursor");
        let source = text.replacen('|', "", 1);
        hover(
            &ParsedScript::new(source),
            offset,
            ScriptFlavor::Custom,
            Some(shape),
        )
        .expect("a hover")
    }

    fn istio_shape() -> SpecShape {
        let json = r#"{"hosts": ["a.example.com"],
            "http": [{"route": [{"destination": {"host": "echo"}, "weight": 100}],
                      "match": [{"headers": {}}], "timeout": "5s"}]}"#;
        crate::analysis::spec_shape::infer_spec_shape(&[
            kruise_lua_engine::JsonValue::parse_go_interface(json.as_bytes()).unwrap(),
        ])
    }

    #[test]
    fn locals_show_their_inferred_shape() {
        let shape = istio_shape();
        let h = hover_with(
            "local spec = obj.data.spec\nfor _, rule in ipairs(spec.http) do\n  print(ru|le)\nend",
            &shape,
        );
        assert!(
            h.contents
                .contains("rule: { match: […], route: […], timeout: string }"),
            "{}",
            h.contents
        );
        let h = hover_with("local spec = obj.data.spec\nprint(sp|ec)", &shape);
        assert!(
            h.contents.contains("spec: { hosts: […], http: […] }"),
            "{}",
            h.contents
        );
        let h = hover_with(
            "local spec = obj.data.spec\nlocal d = spec.http[1].route[1].destination\nprint(|d)",
            &shape,
        );
        assert!(h.contents.contains("d: { host: string }"), "{}", h.contents);
        // A local table: keys from its constructor and from later assignments.
        let h = hover_with(
            "local out = { name = 1, [\"x-y\"] = 2 }\nout.weight = 3\nout[1] = 4\nreturn o|ut",
            &shape,
        );
        assert!(
            h.contents.contains("out: { name, x-y, weight }"),
            "{}",
            h.contents
        );
        // No shape: the declaration and the type its initialiser gives.
        let h = hover_with("local n = 1\nreturn |n", &shape);
        assert_eq!(h.contents, "```lua\nlocal n = 1\nn: number\n```");
        let h = hover_with("local f = g()\nreturn |f", &shape);
        assert_eq!(
            h.contents, "```lua\nlocal f = g()\n```",
            "unknown: nothing said"
        );
    }

    #[test]
    fn functions_show_signature_and_leading_comment() {
        let source = "-- unrelated\n\n-- Splits the weight between\n-- the two routes.\nlocal function split(weight, routes)\n  return weight\nend\nreturn sp|lit(1, {})";
        let h = hover_at(source, ScriptFlavor::Custom).unwrap();
        assert_eq!(
            h.contents,
            "```lua\nlocal function split(weight, routes)\n```\n\n---\n\nSplits the weight between\nthe two routes."
        );
        // On the declaration itself, and for a function assigned to a local.
        let h = hover_at("local function sp|lit(a)\nend", ScriptFlavor::Custom).unwrap();
        assert_eq!(h.contents, "```lua\nlocal function split(a)\n```");
        let h = hover_at(
            "--- Doubles.\nlocal twice = function(x) return 2 * x end\nprint(twi|ce(2))",
            ScriptFlavor::Custom,
        )
        .unwrap();
        assert!(
            h.contents
                .starts_with("```lua\nlocal function twice(x) -> number\n```")
                && h.contents.ends_with("Doubles."),
            "{}",
            h.contents
        );
        // Global functions, at a call site before or after the declaration and on the name.
        let source = "local r = pick(1)\n--[[ Picks a route. ]]\nfunction pick(index, fallback)\n  return index\nend\n";
        for at in ["local r = pi|ck(1)", "function pi|ck(index"] {
            let text = source.replacen(&at.replace('|', ""), at, 1);
            let h = hover_at(&text, ScriptFlavor::Custom).unwrap();
            assert_eq!(
                h.contents, "```lua\nfunction pick(index, fallback)\n```\n\n---\n\nPicks a route.",
                "{at}"
            );
        }
        // A table's function field is not a global function.
        assert!(
            hover_at(
                "local t = {}\nfunction t.f() end\nf|oo()",
                ScriptFlavor::Custom
            )
            .is_none()
        );
    }
}
