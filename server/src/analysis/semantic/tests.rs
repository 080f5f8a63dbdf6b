//! Tests of the name model: what each use resolves to and the values it knows.

use super::*;

/// The declaration (by its offset in the source) that the `n`-th use of `name` resolves to.
fn resolve(source: &str, name: &str, n: usize) -> Option<usize> {
    let m = Model::of_source(source);
    let r = m.refs.iter().filter(|r| r.name == name).nth(n).unwrap();
    r.decl.map(|d| m.decls[d].range.start)
}

#[test]
fn shadowing_and_self_reference() {
    let source = "local x = 1\nlocal x = x + 1\nreturn x";
    // The `x` in `x + 1` is the first x; the returned x is the second.
    assert_eq!(resolve(source, "x", 0), Some(6));
    assert_eq!(resolve(source, "x", 1), Some(18));
}

#[test]
fn blocks_end_scopes() {
    let source = "do local a = 1 end\nreturn a";
    assert_eq!(resolve(source, "a", 0), None);
    let source = "if c then local a = 1 else return a end";
    assert_eq!(resolve(source, "a", 0), None);
    let source = "repeat local done = true until done";
    assert_eq!(resolve(source, "done", 0), Some(13));
}

#[test]
fn params_loop_vars_and_upvalues() {
    let source = "local n = 0\nlocal function f(a, n)\n  for i = 1, n do a = a + i end\n  \
                  return function() return n end\nend\nfor k, v in pairs(t) do print(k, v) end";
    let m = Model::of_source(source);
    let n_param = m
        .decls
        .iter()
        .position(|d| d.name == "n" && d.kind == DeclKind::Param);
    let uses: Vec<Option<DeclId>> = m
        .refs
        .iter()
        .filter(|r| r.name == "n")
        .map(|r| r.decl)
        .collect();
    assert_eq!(uses, vec![n_param, n_param]);
    assert_eq!(m.decls[0].reads, 0, "the outer n is shadowed everywhere");
    assert!(m.refs.iter().any(|r| r.name == "i" && r.decl.is_some()));
    assert!(m.refs.iter().any(|r| r.name == "t" && r.decl.is_none()));
    assert!(
        m.refs
            .iter()
            .filter(|r| r.name == "k" || r.name == "v")
            .all(|r| r.decl.is_some())
    );
}

#[test]
fn recursion_and_methods() {
    let source = "local function fact(n) return n < 2 and 1 or n * fact(n - 1) end\n\
                  local M = {}\nfunction M:get() return self end\nfunction g() end";
    let m = Model::of_source(source);
    assert!(m.refs.iter().any(|r| r.name == "fact" && r.decl == Some(0)));
    assert!(m.refs.iter().any(|r| r.name == "self" && r.decl.is_some()));
    assert!(
        m.refs
            .iter()
            .any(|r| r.name == "g" && r.write && r.decl.is_none())
    );
    assert!(
        m.refs
            .iter()
            .any(|r| r.name == "M" && !r.write && r.decl.is_some())
    );
}

#[test]
fn obj_aliases() {
    let source = "local spec = obj.data.spec\nlocal labels = obj.data.labels or {}\n\
                  for _, r in ipairs(spec.http) do local first = r.route[1] end\n\
                  local json = require(\"json\")\nlocal insert = table.insert\n\
                  local obj = {}\nlocal mine = obj.data";
    let m = Model::of_source(source);
    let value = |name: &str| {
        m.decls
            .iter()
            .find(|d| d.name == name)
            .unwrap()
            .value
            .clone()
    };
    let key = |k: &str| PathSeg::Key(k.to_string());
    assert_eq!(
        value("spec"),
        Value::Obj(ObjPath(vec![key("data"), key("spec")]))
    );
    assert_eq!(
        value("labels"),
        Value::Obj(ObjPath(vec![key("data"), key("labels")]))
    );
    assert_eq!(
        value("r"),
        Value::Obj(ObjPath(vec![
            key("data"),
            key("spec"),
            key("http"),
            PathSeg::Any
        ]))
    );
    assert_eq!(
        value("first"),
        Value::Obj(ObjPath(vec![
            key("data"),
            key("spec"),
            key("http"),
            PathSeg::Any,
            key("route"),
            PathSeg::Index(1)
        ]))
    );
    assert_eq!(value("json"), Value::Library("json"));
    assert_eq!(value("insert"), Value::LibraryFunction("table", "insert"));
    // A local named obj shadows the global.
    assert_eq!(value("mine"), Value::Unknown);
}

#[test]
fn visible_at_offset() {
    let source = "local a = 1\nlocal function f(b)\n  local c = 2\n  \nend\nlocal d";
    let m = Model::of_source(source);
    let names = |offset: usize| -> Vec<String> {
        let mut v: Vec<String> = m
            .visible_at(offset)
            .into_iter()
            .map(|d| m.decls[d].name.clone())
            .collect();
        v.sort();
        v
    };
    let inside = source.find("  \nend").unwrap() + 1;
    assert_eq!(names(inside), vec!["a", "b", "c", "f"]);
    assert_eq!(names(source.len()), vec!["a", "d", "f"]);
}
