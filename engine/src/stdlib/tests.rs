//! Runs the conformance vectors' Lua in a state with `install` and compares with the
//! oracle's expected output (vector fields that depend on the VM patches — number
//! formatting, `#` — are left to the VM's own tests and named where skipped).

use std::path::PathBuf;

use mlua::{Lua, LuaOptions, StdLib, Value};
use serde_json::Value as Json;

use super::{install, take_prints};

fn state() -> Lua {
    let lua = Lua::new_with(
        StdLib::MATH | StdLib::TABLE | StdLib::STRING,
        LuaOptions::default(),
    )
    .expect("lua state");
    install(&lua).expect("install");
    // The json helper installs its module after us; a stand-in table is enough here.
    lua.load("json = {encode = function() return '' end}")
        .exec()
        .expect("json stand-in");
    lua
}

fn vectors_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance/vectors")
}

struct Vector {
    script: String,
    expected: Json,
}

fn vector(name: &str) -> Vector {
    let dir = vectors_dir();
    let script = std::fs::read_to_string(dir.join(format!("{name}.lua"))).expect("vector script");
    let expected: Json = serde_json::from_str(
        &std::fs::read_to_string(dir.join(format!("{name}.expected.json"))).expect("expected"),
    )
    .expect("expected json");
    Vector { script, expected }
}

/// A Lua value as the result JSON would show it (empty table → null, 1..n → array).
fn to_json(v: &Value) -> Json {
    match v {
        Value::Nil => Json::Null,
        Value::Boolean(b) => Json::Bool(*b),
        Value::Integer(i) => Json::from(*i as f64),
        Value::Number(n) => Json::from(*n),
        Value::String(s) => Json::String(String::from_utf8_lossy(&s.as_bytes()).into_owned()),
        Value::Table(t) => {
            let pairs: Vec<(Value, Value)> = t
                .pairs::<Value, Value>()
                .map(|p| p.expect("pair"))
                .collect();
            if pairs.is_empty() {
                return Json::Null;
            }
            let n = pairs.len();
            let mut arr = vec![Json::Null; n];
            let mut is_array = true;
            for (k, val) in &pairs {
                let idx = match k {
                    Value::Integer(i) => Some(*i as f64),
                    Value::Number(f) => Some(*f),
                    _ => None,
                };
                match idx {
                    Some(f) if f >= 1.0 && f <= n as f64 && f.fract() == 0.0 => {
                        arr[f as usize - 1] = to_json(val)
                    }
                    _ => is_array = false,
                }
            }
            if is_array {
                return Json::Array(arr);
            }
            let mut obj = serde_json::Map::new();
            for (k, val) in &pairs {
                let key = match k {
                    Value::String(s) => String::from_utf8_lossy(&s.as_bytes()).into_owned(),
                    other => panic!("mixed keys in result: {other:?}"),
                };
                obj.insert(key, to_json(val));
            }
            Json::Object(obj)
        }
        other => panic!("unexpected value in result: {other:?}"),
    }
}

fn json_eq(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => x.as_f64() == y.as_f64(),
        (Json::Array(x), Json::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_eq(p, q))
        }
        (Json::Object(x), Json::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

/// Runs the vector and returns its result's `spec` (or the error message).
fn run(lua: &Lua, script: &str) -> Result<Json, String> {
    let ret: Value = lua
        .load(script)
        .set_name("=<string>")
        .eval()
        .map_err(|e| e.to_string())?;
    match ret {
        Value::Table(t) => Ok(to_json(&t.get::<Value>("spec").expect("spec"))),
        other => Ok(to_json(&other)),
    }
}

fn expected_spec(v: &Vector) -> Json {
    let out = v.expected["output"].as_str().expect("ok vector has output");
    let parsed: Json = serde_json::from_str(out).expect("output json");
    parsed.get("spec").cloned().unwrap_or(Json::Null)
}

/// Whole-`spec` comparison for vectors whose every field is library behaviour.
fn check_full(name: &str) {
    let v = vector(name);
    assert_eq!(v.expected["status"], "ok", "{name}");
    let got = run(&state(), &v.script).unwrap_or_else(|e| panic!("{name}: {e}"));
    let want = expected_spec(&v);
    assert!(json_eq(&got, &want), "{name}:\n got  {got}\n want {want}");
}

/// Field-wise comparison, for vectors where some fields depend on the VM patches.
fn check_fields(name: &str, fields: &[&str]) {
    let v = vector(name);
    let got = run(&state(), &v.script).unwrap_or_else(|e| panic!("{name}: {e}"));
    let want = expected_spec(&v);
    for f in fields {
        assert!(
            json_eq(&got[*f], &want[*f]),
            "{name}.{f}: got {} want {}",
            got[*f],
            want[*f]
        );
    }
}

/// The vector must fail with a runtime error.
fn check_error(name: &str) {
    let v = vector(name);
    assert_eq!(v.expected["status"], "error", "{name}");
    assert_eq!(v.expected["error_kind"], "runtime", "{name}");
    assert!(run(&state(), &v.script).is_err(), "{name} should raise");
}

#[test]
fn env_vectors() {
    for name in [
        "env_globals",
        "env_globals_assign",
        "env_loadstring",
        "env_print",
        "env_require_missing",
    ] {
        check_full(name);
    }
    check_full("env_require_string");
    check_full("env_version");
    check_fields("env_require_json", &["same"]);
}

#[test]
fn err_vectors() {
    for name in [
        "err_caught_then_ok",
        "err_pcall_level0",
        "err_pcall_nil",
        "err_pcall_no_args",
        "err_pcall_number",
        "err_pcall_table",
        "err_xpcall",
    ] {
        check_full(name);
    }
    for name in [
        "err_arith_nil",
        "err_arith_table",
        "err_assert",
        "err_call_nil",
        "err_compare",
        "err_concat_nil",
        "err_index_missing_path",
        "err_index_nil",
        "err_io_absent",
        "err_os_absent",
        "err_toplevel_error",
        "err_toplevel_error_table",
    ] {
        // These need `obj`; an empty one is enough for the failures they test.
        let v = vector(name);
        let lua = state();
        lua.load("obj = {data = {spec = {}}, canaryWeight = 20}")
            .exec()
            .unwrap();
        assert_eq!(v.expected["status"], "error");
        assert!(run(&lua, &v.script).is_err(), "{name} should raise");
    }
}

#[test]
fn str_vectors() {
    for name in [
        "str_basic_funcs",
        "str_case_unicode",
        "str_compare",
        "str_find",
        "str_find_empty_pattern",
        "str_find_plain_fifth_arg",
        "str_format",
        "str_format_hex_negative",
        "str_format_missing_arg",
        "str_format_q",
        "str_gmatch",
        "str_gsub",
        "str_length_bytes",
        "str_match",
        "str_match_frontier",
        "str_match_no_match",
        "str_methods",
        "str_reverse_utf8",
        "str_sub",
    ] {
        check_full(name);
    }
    // b and c format 1/3 and 1e15 through tostring: the VM's number conversion.
    check_fields("str_format_s_values", &["a"]);
    for name in [
        "str_find_plain_beyond_end",
        "str_gsub_bad_capture",
        "str_match_no_match_tostring",
    ] {
        check_error(name);
    }
}

#[test]
fn tbl_vectors() {
    for name in [
        "tbl_insert_extra_args",
        "tbl_insert_remove",
        "tbl_insert_zero",
        "tbl_ipairs_stops",
        "tbl_library_members",
        "tbl_maxn_getn",
        "tbl_next",
        "tbl_pairs_array",
        "tbl_remove_edges",
        "tbl_remove_zero",
        "tbl_select_unpack",
        "tbl_sort",
    ] {
        check_full(name);
    }
    // d concatenates 1/3 and 2^53: the VM's number conversion.
    check_fields("tbl_concat", &["a", "b", "c"]);
    for name in ["tbl_concat_bad_item", "tbl_sort_mixed_error"] {
        check_error(name);
    }
    // `#` after insert past the end is the VM's; the stored positions are ours.
    let lua = state();
    let got = run(
        &lua,
        "local t = {}; table.insert(t, 5, 'x'); local u = {1, 2}; table.insert(u, 10, 'y')
         return {spec = {t5 = t[5], u10 = u[10], u3 = tostring(u[3])}}",
    )
    .unwrap();
    assert_eq!(got, serde_json::json!({"t5": "x", "u10": "y", "u3": "nil"}));
}

#[test]
fn num_vectors() {
    check_full("num_tonumber");
    check_full("num_tonumber_base");
    check_full("num_math");
    check_full("num_format_d");
}

fn eval<T: mlua::FromLuaMulti>(lua: &Lua, code: &str) -> T {
    lua.load(code)
        .set_name("=<string>")
        .eval()
        .unwrap_or_else(|e| panic!("{code}: {e}"))
}

#[test]
fn error_values_are_strings_with_position() {
    let lua = state();
    let (ok, e): (bool, String) = eval(&lua, "return pcall(string.rep)");
    assert!(!ok);
    // Called by pcall (not by Lua code), the function has no name (gopher's frameFuncName).
    assert!(e.contains("bad argument #1 to (anonymous)"), "{e}");
    let e: String = eval(
        &lua,
        "local ok, e = pcall(function() return ('x'):gsub('(x)', '%2') end) return e",
    );
    assert_eq!(e, "<string>:1: invalid capture index");
    let e: String = eval(&lua, "local ok, e = pcall(error) return e");
    assert!(e.contains("bad argument #1 to (anonymous)"), "{e}");
    let e: String = eval(
        &lua,
        "local ok, e = pcall(string.find, 'abc', 'c', 10, true) return e",
    );
    assert_eq!(e, "runtime error: slice bounds out of range [9:3]");
    // pcall of a non-function returns false and gopher's basePCall text; no argument raises.
    let (ok, e): (bool, String) = eval(&lua, "return pcall(42)");
    assert!(!ok);
    assert_eq!(e, "attempt to call a number value");
    assert!(lua.load("pcall()").exec().is_err());
}

#[test]
fn require_and_module() {
    let lua = state();
    let same: bool = eval(
        &lua,
        "return require('table') == table and require('_G') == _G and require('math') == math",
    );
    assert!(same);
    let same: bool = eval(&lua, "return require('json') == json");
    assert!(same);
    let (name, v): (String, i64) = eval(
        &lua,
        "local f = loadstring('module(\"a.b\"); x = 7') f() return a.b._NAME .. '|' .. a.b._PACKAGE, a.b.x",
    );
    assert_eq!((name.as_str(), v), ("a.b|a.", 7));
}

#[test]
fn dofile_and_loadfile_never_read_the_disk() {
    let dir = std::env::temp_dir().join(format!("kruise-stdlib-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("chunk.lua");
    std::fs::write(&file, "touched = true; return 1").unwrap();
    let lua = state();
    lua.globals().set("path", file.to_str().unwrap()).unwrap();
    let (n, f, msg, touched): (i64, Value, String, Value) = eval(
        &lua,
        "local n = select('#', dofile(path)); local f, msg = loadfile(path); return n, f, msg, touched",
    );
    assert_eq!(n, 0);
    assert!(f.is_nil());
    assert!(msg.starts_with("can not open file: "), "{msg}");
    assert!(touched.is_nil());
    let (f, msg): (Value, String) = eval(&lua, "return loadfile()");
    assert!(f.is_nil() && msg.contains("<stdin>"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn binary_chunks_are_refused() {
    let lua = state();
    let (f, msg): (Value, String) = eval(
        &lua,
        "return loadstring('\\27Lua\\81\\0\\1\\4\\8\\4\\8\\0')",
    );
    assert!(f.is_nil());
    assert!(msg.contains("binary"), "{msg}");
    let (f, _msg): (Value, String) = eval(
        &lua,
        "local parts = {'\\27Lua', 'QQ'} local i = 0
         return load(function() i = i + 1 return parts[i] end)",
    );
    assert!(f.is_nil());
    let v: i64 = eval(
        &lua,
        "local parts = {'return ', '4', '2'} local i = 0
        return load(function() i = i + 1 return parts[i] end)()",
    );
    assert_eq!(v, 42);
    let ok: bool = eval(&lua, "return (pcall(string.dump, function() end))");
    assert!(!ok);
}

#[test]
fn print_goes_to_the_log() {
    let lua = state();
    lua.load("print('hello', 1, nil, true) print() print(setmetatable({}, {__tostring = function() return 'T' end}))")
        .exec()
        .unwrap();
    assert_eq!(
        take_prints(&lua),
        vec!["hello\t1\tnil\ttrue".to_string(), String::new(), "T".into()]
    );
    assert!(take_prints(&lua).is_empty());
    // A script's own tostring does not change print.
    lua.load("tostring = function() return 'X' end print('y')")
        .exec()
        .unwrap();
    assert_eq!(take_prints(&lua), vec!["y".to_string()]);
}

const CHILD_ENV: &str = "KRUISE_STDLIB_PRINT_CHILD";
const MARKER: &str = "marker-4f1d2c-print-must-not-reach-stdout";

/// Run by `print_never_reaches_stdout` in a child process with output captured.
#[test]
fn print_child() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let lua = state();
    lua.load(format!("print('{MARKER}') _printregs()"))
        .exec()
        .unwrap();
    assert_eq!(take_prints(&lua), vec![MARKER.to_string()]);
}

#[test]
fn print_never_reaches_stdout() {
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args([
            "--exact",
            "stdlib::tests::print_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("1 passed"), "child did not run: {stdout}");
    assert!(!stdout.contains(MARKER) && !String::from_utf8_lossy(&out.stderr).contains(MARKER));
}

#[test]
fn gopher_string_quirks() {
    let lua = state();
    let n: i64 = eval(&lua, "return select('#', string.byte('ABC'))");
    assert_eq!(n, 3, "byte without index returns every byte in gopher");
    let n: i64 = eval(&lua, "return select('#', string.byte('ABC', 0))");
    assert_eq!(n, 0);
    let s: String = eval(&lua, "return string.char(256 + 65, -191)");
    assert_eq!(s, "AA");
    let s: String = eval(&lua, "return (string.gsub('abc', 'b', '%x%%%'))");
    assert_eq!(s, "a%x%%c");
    let (s, n): (String, i64) = eval(&lua, "return string.gsub('aaa', 'a', 'b', 0)");
    assert_eq!(
        (s.as_str(), n),
        ("bbb", 3),
        "a limit of 0 replaces everything in gopher"
    );
    let s: String = eval(
        &lua,
        "return (string.gsub('hello world', '%w+', {hello = true, world = 5}))",
    );
    assert_eq!(s, " 5");
    let ok: bool = eval(&lua, "return (pcall(string.gsub, 'a', 'a', 1))");
    assert!(!ok, "a number replacement is a type error in gopher");
    let words: Vec<String> = eval(
        &lua,
        "local t = {} for w in ('^a ^a'):gmatch('^.a') do t[#t+1] = w end return t",
    );
    assert_eq!(words, vec!["^a"]);
    let ok: bool = eval(&lua, "return (pcall(string.rep, 'x', 1e12))");
    assert!(!ok, "a huge rep is an error, not an abort");
    let n: i64 = eval(&lua, "return #string.rep('ab', 1000)");
    assert_eq!(n, 2000);
    let ok: bool = eval(&lua, "return (pcall(string.sub, 'abc', '2'))");
    assert!(!ok, "gopher's CheckInt does not convert strings");
    let (m, huge): (f64, f64) = eval(&lua, "return math.mod(-5, 3), math.huge");
    assert_eq!((m, huge), (1.0, f64::MAX));
}

#[test]
fn table_quirks() {
    let lua = state();
    let got = run(
        &lua,
        "local t = {1, 2, 3}; local r = table.remove(t, -5)
         local u = {1, 2, 3}; table.insert(u, -1, 'neg')
         local c = table.concat({1, 2, 3}, ',', 0, 9)
         local d = table.concat({1, 2, 3}, ',', 5)
         local m = table.maxn({[1.5] = 1, [7] = 2, x = 3})
         return {spec = {r = r, t = t, neg = u[-1], c = c, d = d, m = m}}",
    )
    .unwrap();
    assert_eq!(
        got,
        serde_json::json!({"r": 3.0, "t": [1.0, 2.0], "neg": "neg", "c": "1,2,3", "d": "", "m": 7.0})
    );
    // A non-strict comparator is fine for Go's sort; PUC would raise "invalid order function".
    let sorted: Vec<i64> = eval(
        &lua,
        "local t = {} for i = 1, 200 do t[i] = (i * 37) % 11 end
         table.sort(t, function(a, b) return a <= b end) return t",
    );
    assert!(sorted.windows(2).all(|w| w[0] <= w[1]));
    // Ties keep the order Go's insertion sort gives small arrays.
    let names: Vec<String> = eval(
        &lua,
        "local t = {{n='a',w=1},{n='b',w=0},{n='c',w=1},{n='d',w=0}}
         table.sort(t, function(x, y) return x.w < y.w end)
         local out = {} for i, v in ipairs(t) do out[i] = v.n end return out",
    );
    assert_eq!(names, vec!["b", "d", "a", "c"]);
}

#[test]
fn pcall_reraises_a_spent_budget() {
    use crate::vm::LimitHit;
    let lua = state();
    let ok: bool = eval(&lua, "return (pcall(error, 'x'))");
    assert!(!ok);
    crate::vm::with_context(&lua, |context| {
        context.budgeted.set(true);
        context.hit.set(Some(LimitHit::Timeout))
    })
    .expect("install gives the state a run context");
    assert!(
        lua.load("local ok = pcall(error, 'x') return 1")
            .exec()
            .is_err()
    );
    assert!(
        lua.load("local ok = xpcall(function() error('x') end, print) return 1")
            .exec()
            .is_err()
    );
}

#[test]
fn pattern_deadline_stops_backtracking() {
    let lua = state();
    crate::vm::with_context(&lua, |context| {
        context.deadline.set(Some(std::time::Instant::now()))
    })
    .expect("install gives the state a run context");
    let started = std::time::Instant::now();
    let r = lua
        .load("return string.find(string.rep('a', 5000), 'a*a*a*a*a*b')")
        .exec();
    assert!(r.is_err());
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
}
