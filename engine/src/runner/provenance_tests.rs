//! The write recorder seen through a run's result: each way a script stores a field.

use super::*;
use crate::path_text::parse_path;
use crate::yaml::PathSeg::{Index, Key};

fn written(source: &str) -> WrittenAt {
    let script = Script::new(source);
    let obj = JsonValue::Object(Default::default());
    record_json(&script, &obj, &RunOptions::default()).expect("the script returns a table")
}

fn path(text: &str) -> Vec<PathSeg> {
    parse_path(text).expect("a path")
}

#[test]
fn constructor_fields_get_their_own_lines() {
    let w = written("return {\n  a = 1,\n  b = {\n    c = 'x',\n  },\n}\n");
    assert_eq!(w.line_of(&path("a")), Some(2));
    assert_eq!(w.line_of(&path("b")), Some(3));
    assert_eq!(w.line_of(&path("b.c")), Some(4));
}

#[test]
fn list_items_get_the_line_of_their_value() {
    let w = written(
        "return {\n  list = {\n    'one',\n    { name = 'two' },\n    'three', 'four' },\n}\n",
    );
    assert_eq!(w.line_of(&path("list[0]")), Some(3));
    assert_eq!(w.line_of(&path("list[1]")), Some(4));
    assert_eq!(w.line_of(&path("list[2]")), Some(5));
    assert_eq!(w.line_of(&path("list[3]")), Some(5));
    assert_eq!(w.line_of(&path("list[1].name")), Some(4));
}

#[test]
fn table_insert_and_rawset_are_the_calling_line() {
    let w = written(
        "local t = {}\nt.list = {}\ntable.insert(t.list, 'a')\n\ntable.insert(t.list, 1, 'b')\nrawset(t, 'r', 1)\nreturn t\n",
    );
    // table.insert(t, 1, 'b') shifted 'a' to index 2: both slots were stored on line 5.
    assert_eq!(w.line_of(&path("list[0]")), Some(5));
    assert_eq!(w.line_of(&path("list[1]")), Some(5));
    assert_eq!(w.line_of(&path("r")), Some(6));
    assert_eq!(w.line_of(&path("list")), Some(2));
}

#[test]
fn tables_built_in_helper_functions_keep_the_helpers_lines() {
    let w = written(
        "local function route(name, weight)\n  return {\n    name = name,\n    weight = weight,\n  }\nend\nlocal spec = { routes = {} }\nspec.routes[1] = route('a', 10)\nreturn { spec = spec }\n",
    );
    assert_eq!(w.line_of(&path("spec.routes[0].name")), Some(3));
    assert_eq!(w.line_of(&path("spec.routes[0].weight")), Some(4));
    assert_eq!(w.line_of(&path("spec.routes[0]")), Some(8));
    assert_eq!(w.line_of(&path("spec")), Some(9));
}

#[test]
fn a_field_written_twice_has_the_last_line() {
    let w = written("local t = { w = 1 }\nt.w = 2\nif true then\n  t.w = 3\nend\nreturn t\n");
    assert_eq!(w.line_of(&path("w")), Some(4));
}

#[test]
fn the_last_write_within_a_part_is_the_latest_in_run_order() {
    let w = written(
        "local r = {\n  weight = 90,\n  host = 'web',\n}\nlocal t = { http = {} }\ntable.insert(t.http, r)\nr.weight = 10\nreturn t\n",
    );
    // Line 7 changed the route after line 6 put it in place.
    assert_eq!(w.last_write_within(&path("http[0]")), Some(7));
    assert_eq!(w.line_of(&path("http[0]")), Some(6));
    assert_eq!(w.last_write_within(&path("http[0].host")), Some(3));
    // The entry's line is its last field change, else where it was put in place.
    assert_eq!(w.entry_line(&path("http[0]")), Some(7));
    let w = written(
        "local r = { weight = 90 }\nlocal t = { http = {} }\ntable.insert(t.http, r)\nreturn t\n",
    );
    assert_eq!(w.entry_line(&path("http[0]")), Some(1));
    let w = written("local t = { http = {} }\nt.http[1] = obj\nreturn t\n");
    assert_eq!(w.entry_line(&path("http[0]")), Some(2));
}

#[test]
fn fields_from_obj_have_no_line() {
    let script = Script::new("local a = obj.annotations\na.extra = 'x'\nreturn a\n");
    let obj = JsonValue::parse_go_interface(br#"{"annotations": {"kept": "v"}}"#).expect("JSON");
    let w = record_json(&script, &obj, &RunOptions::default()).expect("a table");
    assert_eq!(w.line_of(&path("kept")), None);
    assert_eq!(w.line_of(&path("extra")), Some(2));
    assert_eq!(w.last_write_within(&[]), Some(2));
}

#[test]
fn the_path_notation_reads_quoted_keys() {
    assert_eq!(
        parse_path(r#"spec.http[1].route[0]"#),
        Some(vec![
            Key("spec".into()),
            Key("http".into()),
            Index(1),
            Key("route".into()),
            Index(0)
        ])
    );
    assert_eq!(
        parse_path(r#"annotations["nginx.ingress.kubernetes.io/canary"]"#),
        Some(vec![
            Key("annotations".into()),
            Key("nginx.ingress.kubernetes.io/canary".into())
        ])
    );
    assert_eq!(parse_path("Mappings a, b"), None);
    assert_eq!(parse_path("(root)"), None);
}

#[test]
fn a_failing_run_records_nothing() {
    let script = Script::new("local t = { a = 1 }\nerror('no')\n");
    assert_eq!(
        record_json(
            &script,
            &JsonValue::Object(Default::default()),
            &RunOptions::default()
        ),
        None
    );
}

#[test]
fn a_script_storing_more_keys_than_the_log_keeps_is_cut_short_not_unbounded() {
    // 1,000 distinct 20,000-byte keys (20 MB of keys, each deleted again): past the log's key
    // bytes the rest is not recorded, and the run gives no lines rather than possibly wrong ones.
    let script = Script::new(
        "local t = {}\nlocal big = string.rep('k', 20000)\nfor i = 1, 1000 do\n  local k = big .. i\n  t[k] = 1\n  t[k] = nil\nend\nlocal r = { kept = 1 }\nreturn r\n",
    );
    let obj = JsonValue::Object(Default::default());
    assert_eq!(record_json(&script, &obj, &RunOptions::default()), None);
    // The same with 100 keys is recorded.
    let w = written(
        "local t = {}\nlocal big = string.rep('k', 20000)\nfor i = 1, 100 do\n  local k = big .. i\n  t[k] = 1\n  t[k] = nil\nend\nlocal r = { kept = 1 }\nreturn r\n",
    );
    assert_eq!(w.line_of(&path("kept")), Some(8));
}

#[test]
fn a_long_list_is_stored_in_several_flushes_with_each_items_line() {
    // 60 items, one per line from line 2: SETLIST flushes 50, then 10.
    let mut source = String::from("return { list = {\n");
    for i in 0..60 {
        source.push_str(&format!("  {{ n = {i} }},\n"));
    }
    source.push_str("} }\n");
    let w = written(&source);
    for i in [0usize, 49, 50, 59] {
        assert_eq!(
            w.line_of(&path(&format!("list[{i}]"))),
            Some(i as u32 + 2),
            "item {i}"
        );
    }
}
