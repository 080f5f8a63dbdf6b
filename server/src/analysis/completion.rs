//! Completion at a byte offset: `obj` fields (nested, through aliases and loop variables),
//! `obj.data.spec` fields from the test cases' specs, library members Kruise provides, locals in
//! scope, globals and keywords.
//!
//! The code is usually incomplete where completion is asked (`obj.` does not parse), so the
//! expression before the cursor is read back from the text, and only names and scopes come from
//! the (partial, recovered) AST.

use kruise_lua_engine::script::ScriptFlavor;
use std::ops::Range;

use full_moon::tokenizer::TokenType;

use super::lex::tokens;
use super::library::{self, LibItem};
use super::obj_schema::{self, Lookup, ObjPath, PathSeg, ShapeKind};
use super::parsed_script::ParsedScript;
use super::semantic::{DeclKind, Model, Value, global_value};
use super::spec_shape::SpecShape;
use crate::lua_source::is_identifier;

/// What completion needs besides the source.
#[derive(Debug, Clone, Copy, Default)]
pub struct CompletionContext<'a> {
    pub flavor: ScriptFlavor,
    /// The merged shape of the script's test cases' `original.spec` (see
    /// [`super::infer_spec_shape`]).
    pub spec_shape: Option<&'a SpecShape>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CompletionKind {
    Field,
    Method,
    Function,
    Variable,
    Module,
    Keyword,
    Constant,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompletionItem {
    pub label: String,
    pub kind: CompletionKind,
    /// A one-line type or signature.
    pub detail: Option<String>,
    /// Markdown documentation.
    pub documentation: Option<String>,
    /// The text to insert, when it differs from the label.
    pub insert_text: Option<String>,
    /// The source range the item replaces (the partial word at the cursor).
    pub replace_range: Range<usize>,
}

impl CompletionItem {
    fn new(label: &str, kind: CompletionKind, replace_range: &Range<usize>) -> Self {
        CompletionItem {
            label: label.to_string(),
            kind,
            detail: None,
            documentation: None,
            insert_text: None,
            replace_range: replace_range.clone(),
        }
    }

    fn detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    fn docs(mut self, docs: impl Into<String>) -> Self {
        self.documentation = Some(docs.into());
        self
    }
}

/// A chain read back from the text before a `.` or `:`: `spec.http[1]` is root `spec` and
/// steps `[Key(http), Index(1)]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Receiver {
    pub root: String,
    pub root_start: usize,
    pub steps: Vec<PathSeg>,
}

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The start of the identifier that ends at `end`.
fn ident_start(source: &str, end: usize) -> usize {
    let bytes = source.as_bytes();
    let mut start = end;
    while start > 0 && is_ident_byte(bytes[start - 1]) {
        start -= 1;
    }
    start
}

/// The identifier around `offset` (empty when there is none).
pub(crate) fn word_at(source: &str, offset: usize) -> Range<usize> {
    let end = offset
        + source.as_bytes()[offset..]
            .iter()
            .take_while(|b| is_ident_byte(**b))
            .count();
    ident_start(source, offset)..end
}

/// The `.` or `:` just before `start` when it is a member access (`..` is concatenation).
pub(crate) fn member_operator(source: &str, start: usize) -> Option<u8> {
    let bytes = source.as_bytes();
    match start.checked_sub(1).map(|i| bytes[i]) {
        Some(b':') => Some(b':'),
        Some(b'.') if !(start > 1 && bytes[start - 2] == b'.') => Some(b'.'),
        _ => None,
    }
}

/// Reads the chain that ends just before `end` (the position of a `.` or `:`), backwards.
pub(crate) fn receiver_before(source: &str, end: usize) -> Option<Receiver> {
    let bytes = source.as_bytes();
    let mut pos = end;
    let mut steps = Vec::new();
    loop {
        if pos > 0 && bytes[pos - 1] == b']' {
            // A bracket index: find its `[`.
            let mut depth = 0usize;
            let mut open = None;
            for i in (0..pos).rev() {
                match bytes[i] {
                    b']' => depth += 1,
                    b'[' => {
                        depth -= 1;
                        if depth == 0 {
                            open = Some(i);
                            break;
                        }
                    }
                    b'\n' => return None,
                    _ => {}
                }
            }
            let open = open?;
            let inner = source[open + 1..pos - 1].trim();
            let step = if let Ok(i) = inner.parse::<u32>() {
                if i > 0 {
                    PathSeg::Index(i)
                } else {
                    PathSeg::Any
                }
            } else if inner.len() >= 2
                && (inner.starts_with('"') && inner.ends_with('"')
                    || inner.starts_with('\'') && inner.ends_with('\''))
            {
                PathSeg::Key(inner[1..inner.len() - 1].to_string())
            } else {
                PathSeg::Any
            };
            steps.push(step);
            pos = open;
            continue;
        }
        let start = ident_start(source, pos);
        if start == pos || bytes[start].is_ascii_digit() {
            return None;
        }
        let name = &source[start..pos];
        if start > 0 && bytes[start - 1] == b'.' && !(start > 1 && bytes[start - 2] == b'.') {
            steps.push(PathSeg::Key(name.to_string()));
            pos = start - 1;
            continue;
        }
        if library::KEYWORDS.contains(&name) {
            return None;
        }
        steps.reverse();
        return Some(Receiver {
            root: name.to_string(),
            root_start: start,
            steps,
        });
    }
}

/// The value of a receiver at `offset`, using the locals visible there.
pub(crate) fn receiver_value(model: &Model, receiver: &Receiver, offset: usize) -> Value {
    let local = model
        .visible_at(offset)
        .into_iter()
        .find(|&d| model.decls[d].name == receiver.root);
    let mut value = match local {
        Some(d) => model.decls[d].value.clone(),
        None => global_value(&receiver.root),
    };
    for step in &receiver.steps {
        value = value.index(step.clone());
    }
    value
}

/// Whether `offset` is inside a comment or a string literal.
pub(crate) fn in_comment_or_string(source: &str, offset: usize) -> bool {
    tokens(source).any(|t| {
        let (start, end) = (t.start_position().bytes(), t.end_position().bytes());
        match t.token_type() {
            TokenType::StringLiteral { .. } | TokenType::MultiLineComment { .. } => {
                // Inside, or at the end of an unclosed one.
                start < offset && (offset < end || (offset == end && end == source.len()))
            }
            TokenType::SingleLineComment { .. } => start < offset && offset <= end,
            _ => false,
        }
    })
}

/// Completion items at byte `offset` of `source`.
pub fn complete(
    script: &ParsedScript,
    offset: usize,
    ctx: &CompletionContext,
) -> Vec<CompletionItem> {
    let source = script.source();
    let offset = offset.min(source.len());
    if !source.is_char_boundary(offset) || in_comment_or_string(source, offset) {
        return Vec::new();
    }
    let replace = word_at(source, offset);
    let word_start = replace.start;
    let prefix = &source[word_start..offset];
    let model = script.model();

    let mut items = match member_operator(source, word_start) {
        Some(operator) => {
            let method = operator == b':';
            match receiver_before(source, word_start - 1) {
                Some(receiver) => {
                    let value = receiver_value(model, &receiver, word_start);
                    member_items(&value, method, ctx, &replace)
                }
                None if method => string_methods(&replace),
                None => Vec::new(),
            }
        }
        None => scope_items(model, offset, ctx.flavor, &replace),
    };
    if !prefix.is_empty() {
        let lower = prefix.to_ascii_lowercase();
        items.retain(|i| i.label.to_ascii_lowercase().starts_with(&lower));
    }
    items
}

fn member_items(
    value: &Value,
    method: bool,
    ctx: &CompletionContext,
    replace: &Range<usize>,
) -> Vec<CompletionItem> {
    match value {
        Value::Obj(path) => obj_members(path, method, ctx, replace),
        Value::Library(lib) if !method => library::library(lib)
            .map(|l| l.members.iter().map(|m| lib_item(m, replace)).collect())
            .unwrap_or_default(),
        Value::Table { fields } if !method => fields
            .iter()
            .map(|name| {
                let mut item = CompletionItem::new(name, CompletionKind::Field, replace)
                    .detail("field of a local table");
                if !is_identifier(name) {
                    item.insert_text = Some(format!("[\"{name}\"]"));
                }
                item
            })
            .collect(),
        _ if method => string_methods(replace),
        _ => Vec::new(),
    }
}

fn obj_members(
    path: &ObjPath,
    method: bool,
    ctx: &CompletionContext,
    replace: &Range<usize>,
) -> Vec<CompletionItem> {
    match obj_schema::lookup(ctx.flavor, &path.0) {
        Lookup::Found { shape, .. } => match shape.kind {
            ShapeKind::Object(fields) if !method => fields
                .iter()
                .map(|f| {
                    CompletionItem::new(f.name, CompletionKind::Field, replace)
                        .detail(f.shape.type_name)
                        .docs(f.doc)
                })
                .collect(),
            ShapeKind::Spec if !method => spec_members(&[], ctx, replace),
            ShapeKind::String if method => string_methods(replace),
            _ => Vec::new(),
        },
        Lookup::Free => match path.spec_suffix() {
            Some(suffix) if !method => spec_members(suffix, ctx, replace),
            _ if method => string_methods(replace),
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

fn spec_members(
    suffix: &[PathSeg],
    ctx: &CompletionContext,
    replace: &Range<usize>,
) -> Vec<CompletionItem> {
    let Some(shape) = ctx.spec_shape else {
        return Vec::new();
    };
    shape
        .field_names(suffix)
        .into_iter()
        .filter_map(|name| {
            let mut path = suffix.to_vec();
            path.push(PathSeg::Key(name.clone()));
            let (kind, docs) = shape.describe_at(&path)?;
            let mut item = CompletionItem::new(&name, CompletionKind::Field, replace)
                .detail(kind)
                .docs(docs);
            // Keys that are not Lua names need the bracket form.
            if !is_identifier(&name) {
                item.insert_text = Some(format!("[\"{name}\"]"));
            }
            Some(item)
        })
        .collect()
}

fn lib_item(item: &LibItem, replace: &Range<usize>) -> CompletionItem {
    let kind = if item.is_function {
        CompletionKind::Function
    } else {
        CompletionKind::Constant
    };
    CompletionItem::new(item.name, kind, replace)
        .detail(item.signature)
        .docs(item.doc)
}

fn string_methods(replace: &Range<usize>) -> Vec<CompletionItem> {
    library::STRING
        .members
        .iter()
        .map(|m| {
            let mut item = lib_item(m, replace);
            item.kind = CompletionKind::Method;
            item
        })
        .collect()
}

fn scope_items(
    model: &Model,
    offset: usize,
    flavor: ScriptFlavor,
    replace: &Range<usize>,
) -> Vec<CompletionItem> {
    let mut items = Vec::new();
    // Locals come deduplicated; globals they shadow are left out.
    let mut seen = std::collections::HashSet::new();
    for d in model.visible_at(offset) {
        let decl = &model.decls[d];
        seen.insert(decl.name.as_str());
        let (kind, detail) = match (&decl.value, decl.kind) {
            (Value::Function { params, .. }, _) => (
                CompletionKind::Function,
                format!("function {}({})", decl.name, params.join(", ")),
            ),
            (_, DeclKind::Param) => (CompletionKind::Variable, "parameter".to_string()),
            (Value::Obj(path), _) => (
                CompletionKind::Variable,
                format!("local {} = {path}", decl.name),
            ),
            (Value::Library(lib), _) => (
                CompletionKind::Module,
                format!("local {} = {lib}", decl.name),
            ),
            _ => (CompletionKind::Variable, format!("local {}", decl.name)),
        };
        items.push(CompletionItem::new(&decl.name, kind, replace).detail(detail));
    }
    if seen.insert("obj") {
        items.push(
            CompletionItem::new("obj", CompletionKind::Variable, replace)
                .detail(obj_schema::root(flavor).type_name)
                .docs(obj_schema::root_doc(flavor)),
        );
    }
    for lib in library::LIBRARIES {
        if seen.insert(lib.name) {
            items
                .push(CompletionItem::new(lib.name, CompletionKind::Module, replace).docs(lib.doc));
        }
    }
    for global in library::GLOBALS {
        if seen.insert(global.name) {
            items.push(lib_item(global, replace));
        }
    }
    for keyword in library::KEYWORDS {
        items.push(CompletionItem::new(
            keyword,
            CompletionKind::Keyword,
            replace,
        ));
    }
    items
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::spec_shape::infer_spec_shape;
    use kruise_lua_engine::JsonValue;

    /// Completion labels at the `|` in `text`.
    fn labels_with(text: &str, flavor: ScriptFlavor, shape: Option<&SpecShape>) -> Vec<String> {
        let offset = text.find('|').expect("cursor");
        let source = text.replacen('|', "", 1);
        let ctx = CompletionContext {
            flavor,
            spec_shape: shape,
        };
        complete(&ParsedScript::new(source), offset, &ctx)
            .into_iter()
            .map(|i| i.label)
            .collect()
    }

    fn labels(text: &str) -> Vec<String> {
        labels_with(text, ScriptFlavor::Custom, None)
    }

    fn istio_shape() -> SpecShape {
        let json = r#"{"hosts": ["a.example.com"], "gateways": ["mesh"],
            "http": [{"route": [{"destination": {"host": "echo"}, "weight": 100}],
                      "match": [{"headers": {}}], "x-key": 1}]}"#;
        infer_spec_shape(&[JsonValue::parse_go_interface(json.as_bytes()).unwrap()])
    }

    #[test]
    fn obj_members_on_incomplete_code() {
        let found = labels("local w = obj.|");
        assert_eq!(
            found,
            vec![
                "data",
                "canaryWeight",
                "stableWeight",
                "matches",
                "canaryService",
                "stableService",
                "requestHeaderModifier"
            ]
        );
        assert_eq!(
            labels("local w = obj.can|"),
            vec!["canaryWeight", "canaryService"]
        );
        assert_eq!(
            labels("print(obj.data.|)\nreturn obj.data"),
            vec!["spec", "labels", "annotations"]
        );
        assert_eq!(
            labels("x = obj.matches[1].headers[1].|"),
            vec!["type", "name", "value"]
        );
        assert_eq!(
            labels("x = obj.requestHeaderModifier.|"),
            vec!["set", "add", "remove"]
        );
        assert_eq!(
            labels_with("local a = obj.|", ScriptFlavor::Ingress, None),
            vec![
                "annotations",
                "weight",
                "matches",
                "canaryService",
                "requestHeaderModifier"
            ]
        );
    }

    #[test]
    fn item_details_and_docs() {
        let source = "local w = obj.";
        let items = complete(
            &ParsedScript::new(source),
            source.len(),
            &CompletionContext::default(),
        );
        let canary = items.iter().find(|i| i.label == "canaryWeight").unwrap();
        assert_eq!(canary.kind, CompletionKind::Field);
        assert_eq!(canary.detail.as_deref(), Some("number"));
        assert!(canary.documentation.as_ref().unwrap().contains("-1"));
        assert_eq!(canary.replace_range, source.len()..source.len());
        let source = "local w = obj.canaryW";
        let items = complete(
            &ParsedScript::new(source),
            source.len(),
            &CompletionContext::default(),
        );
        assert_eq!(items[0].replace_range, 14..source.len());
    }

    #[test]
    fn spec_fields_through_aliases_and_loops() {
        let shape = istio_shape();
        let spec = |text: &str| labels_with(text, ScriptFlavor::Custom, Some(&shape));
        assert_eq!(
            spec("x = obj.data.spec.|"),
            vec!["gateways", "hosts", "http"]
        );
        assert_eq!(
            spec("local spec = obj.data.spec\nspec.|"),
            vec!["gateways", "hosts", "http"]
        );
        assert_eq!(
            spec("local spec = obj.data.spec\nlocal r = spec.http[1].|"),
            vec!["match", "route", "x-key"]
        );
        assert_eq!(
            spec(
                "local spec = obj.data.spec\nfor _, r in ipairs(spec.http) do\n  r.|\nend\nreturn obj.data"
            ),
            vec!["match", "route", "x-key"]
        );
        // Incomplete loop at the end of the file, and deeper through an alias of an alias.
        assert_eq!(
            spec(
                "local spec = obj.data.spec\nfor _, r in ipairs(spec.http) do\n  local first = r.route[1]\n  first.destination.|"
            ),
            vec!["host"]
        );
        // Keys that are not Lua names are inserted with brackets.
        let source = "local r = obj.data.spec.http[1].";
        let items = complete(
            &ParsedScript::new(source),
            source.len(),
            &CompletionContext {
                flavor: ScriptFlavor::Custom,
                spec_shape: Some(&shape),
            },
        );
        let odd = items.iter().find(|i| i.label == "x-key").unwrap();
        assert_eq!(odd.insert_text.as_deref(), Some("[\"x-key\"]"));
        assert!(odd.documentation.as_ref().unwrap().contains("number"));
        // The issue's loop: the element of `spec.http` through `or {}` and a second alias.
        assert_eq!(
            spec(
                "local vs = obj.data
local spec = vs.spec
for _, rule in ipairs(spec.http or {}) do
  if rule.|"
            ),
            vec!["match", "route", "x-key"]
        );
        assert_eq!(
            spec("for k, v in pairs(obj.data.spec.http[1].route[1]) do v.| end"),
            Vec::<String>::new(),
            "pairs over an object gives its members' values, not a shape"
        );
        // A function returning a place in the spec.
        assert_eq!(
            spec(
                "local function routes() return obj.data.spec.http end\nfor _, r in ipairs(routes()) do r.| end"
            ),
            vec!["match", "route", "x-key"]
        );
        // Without test cases, the spec has nothing to offer.
        assert!(labels("x = obj.data.spec.|").is_empty());
    }

    #[test]
    fn local_table_fields() {
        assert_eq!(
            labels(
                "local out = { name = 1, [\"x-y\"] = 2, 3 }\nout.weight = 1\nout.name = 2\nout.|"
            ),
            vec!["name", "x-y", "weight"]
        );
        // Fields assigned through another path or to a global are not the local's.
        assert_eq!(
            labels("local out = {}\nlocal other = {}\nother.a = 1\nout.b.c = 2\nout.|"),
            Vec::<String>::new()
        );
        assert_eq!(labels("local out = cached or { a = 1 }\nout.|"), vec!["a"]);
        // Through a function's final `return` (local function or function expression).
        let make = "local function make()\n  local t = { a = 1 }\n  t.b = 2\n  return t\nend\n";
        assert_eq!(
            labels(&format!("{make}local x = make()\nx.c = 3\nx.|")),
            vec!["a", "b", "c"]
        );
        assert_eq!(
            labels("local make = function() return { z = 1 } end\nlocal y = make()\ny.|"),
            vec!["z"]
        );
        // A return inside a branch is not the function's result; nor is a call's call.
        assert!(
            labels("local function f() if c then return { a = 1 } end end\nlocal v = f()\nv.|")
                .is_empty()
        );
        assert!(labels(&format!("{make}local w = make()()\nw.|")).is_empty());
    }

    #[test]
    fn spec_fields_from_the_crd_schema_merged_with_the_cases() {
        use crate::analysis::spec_schema::tests::gizmo;
        let json = r#"{"http": [{"route": [{"weight": 1}], "fromCases": true}]}"#;
        let shape = infer_spec_shape(&[JsonValue::parse_go_interface(json.as_bytes()).unwrap()])
            .with_schema(Some(gizmo(&[])));
        let items = |text: &str| {
            let offset = text.find('|').expect("cursor");
            let source = text.replacen('|', "", 1);
            let ctx = CompletionContext {
                flavor: ScriptFlavor::Custom,
                spec_shape: Some(&shape),
            };
            complete(&ParsedScript::new(source), offset, &ctx)
        };
        let labels =
            |text: &str| -> Vec<String> { items(text).into_iter().map(|i| i.label).collect() };
        assert_eq!(
            labels("x = obj.data.spec.|"),
            vec!["free", "http", "labels"]
        );
        assert_eq!(
            labels("for _, r in ipairs(obj.data.spec.http) do r.|"),
            vec!["fromCases", "mode", "port", "route"]
        );
        let found = items("local r = obj.data.spec.http[1].route[1].|");
        let weight = found.iter().find(|i| i.label == "weight").unwrap();
        assert_eq!(weight.detail.as_deref(), Some("integer"));
        let docs = weight.documentation.as_deref().unwrap();
        assert!(
            docs.starts_with("`integer`\n\nShare of the traffic."),
            "{docs}"
        );
        assert!(docs.contains("From the test cases"), "{docs}");
        let mode = items("obj.data.spec.http[1].|");
        let mode = mode.iter().find(|i| i.label == "mode").unwrap();
        assert_eq!(mode.detail.as_deref(), Some("string (enum: Canary|Blue)"));
        assert!(
            !mode
                .documentation
                .as_deref()
                .unwrap()
                .contains("test cases")
        );
        // The schema alone (no cases) is enough.
        let schema_only = SpecShape::default().with_schema(Some(gizmo(&[])));
        let ctx = CompletionContext {
            flavor: ScriptFlavor::Custom,
            spec_shape: Some(&schema_only),
        };
        let source = "x = obj.data.spec.";
        let found: Vec<String> = complete(&ParsedScript::new(source), source.len(), &ctx)
            .into_iter()
            .map(|i| i.label)
            .collect();
        assert_eq!(found, vec!["free", "http", "labels"]);
    }

    #[test]
    fn library_members_are_kruise_only() {
        let table = labels("table.|");
        assert_eq!(
            table,
            vec!["concat", "getn", "insert", "maxn", "remove", "sort"]
        );
        assert!(labels("string.|").contains(&"gfind".to_string()));
        assert!(!labels("string.|").contains(&"split".to_string()));
        assert_eq!(
            labels("local j = require(\"json\")\nj.|"),
            vec!["encode", "decode"]
        );
        assert!(labels("math.|").contains(&"huge".to_string()));
        assert!(labels("local s = obj.canaryService:|").contains(&"upper".to_string()));
    }

    #[test]
    fn scope_globals_and_keywords() {
        let text = "local alpha = 1\nlocal function helper(arg) end\ndo local hidden = 2 end\nlocal function f(param)\n  |\nend";
        let found = labels(text);
        for expected in [
            "alpha", "helper", "f", "param", "obj", "json", "pairs", "tostring", "local", "return",
        ] {
            assert!(
                found.contains(&expected.to_string()),
                "{expected} in {found:?}"
            );
        }
        for absent in ["hidden", "arg", "os", "io", "rawlen"] {
            assert!(
                !found.contains(&absent.to_string()),
                "{absent} in {found:?}"
            );
        }
        assert_eq!(labels("local alpha = 1\nal|"), vec!["alpha"]);
        // Shadowed names appear once.
        let text = "local x = 1\ndo local x = 2\n  |\nend";
        assert_eq!(labels(text).iter().filter(|l| *l == "x").count(), 1);
    }

    #[test]
    fn nothing_in_comments_and_strings() {
        assert!(labels("-- obj.|").is_empty());
        assert!(labels("local s = \"obj.|\"").is_empty());
        assert!(labels("local s = 'obj.|").is_empty());
        // `..` is concatenation, not a member access.
        assert!(labels("local s = obj.canaryService ..|").contains(&"obj".to_string()));
    }
}
