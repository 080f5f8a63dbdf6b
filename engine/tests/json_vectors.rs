//! Conformance vectors through this crate's JSON layer, with a plain PUC Lua state standing in
//! for the gopher-compatible VM: input conversion (2.2), the `json` module, the encoder (2.4)
//! and result decoding for the controller (2.5), the harness (2.6) and ingress (2.8).
//!
//! Vectors that depend on gopher-lua's own library or VM behaviour cannot pass on a stock PUC
//! state; they are listed in `NEEDS_GOPHER_RUNTIME` with the reason. Every other vector must
//! match byte for byte, and a listed vector that starts failing differently is still reported.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use kruise_lua_engine::JsonValue;
use kruise_lua_engine::json::{
    EmptyTable, KeyOrder, annotations_to_canonical_json, decode_custom_result,
    decode_ingress_result, encode_lua, install_module, json_to_lua,
};
use mlua::{HookTriggers, Lua, MultiValue, Value, VmState};
use serde_json::Value as Json;

/// Vectors marked `puc_5_1_differs` whose difference lies in the JSON layer (conversion or
/// encoder), so they must pass here even on a stock PUC state. The other marked vectors may fail.
const JSON_LAYER_DIFFERS: &[&str] = &[
    "obj_array_null_items",
    "enc_shared_table_error",
    "enc_shared_in_array_error",
    "json_decode_nulls",
];

/// Vectors that a stock PUC Lua 5.1 state cannot run as gopher-lua does, beyond those marked
/// `puc_5_1_differs` in index.json. Each needs a piece of the gopher
/// runtime (stdlib/vm helpers), not of the JSON layer.
const NEEDS_GOPHER_RUNTIME: &[(&str, &str)] = &[
    (
        "err_pcall_number",
        "PUC's error() turns a number message into a string; gopher keeps the number",
    ),
    (
        "err_os_absent",
        "Lua::new() opens os; Kruise's environment has no os (stdlib sandbox)",
    ),
    (
        "err_io_absent",
        "Lua::new() opens io; Kruise's environment has no io (stdlib sandbox)",
    ),
    (
        "lim_timeout_in_pcall",
        "this test's timeout hook raises a catchable error; the vm helper re-raises it",
    ),
];

fn conformance_dir() -> PathBuf {
    let dir = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/conformance"
    ));
    assert!(
        dir.join("vectors/index.json").is_file(),
        "conformance vectors not found at {} (expected ../shared/conformance next to the repo root)",
        dir.display()
    );
    dir.to_path_buf()
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// One side of an expectation: status, kind, output and raw.
#[derive(Debug, PartialEq)]
struct Outcome {
    status: &'static str,
    error_kind: Option<&'static str>,
    output: Option<String>,
    raw: Option<String>,
    message: Option<String>,
}

impl Outcome {
    fn ok(output: String, raw: Option<String>) -> Self {
        Outcome {
            status: "ok",
            error_kind: None,
            output: Some(output),
            raw,
            message: None,
        }
    }
    fn error(kind: &'static str, raw: Option<String>, message: String) -> Self {
        Outcome {
            status: "error",
            error_kind: Some(kind),
            output: None,
            raw,
            message: Some(message),
        }
    }
}

/// Runs `source` with `obj` on a fresh PUC state with our `json` module; the last returned value,
/// or the error kind and message.
fn run_script(source: &[u8], obj: &JsonValue) -> Result<(Lua, Value), (&'static str, String)> {
    // Keeps the patched Lua library in the test binary (vm::new_state does this in the crate).
    kruise_lua51_sys::link();
    let lua = Lua::new();
    install_module(&lua).expect("install json");
    let obj = json_to_lua(&lua, obj, KeyOrder::Sorted).expect("obj to Lua");
    lua.globals().set("obj", obj).expect("set obj");
    let start = Instant::now();
    lua.set_hook(
        HookTriggers::new().every_nth_instruction(1000),
        move |_, _| {
            if start.elapsed() > Duration::from_secs(1) {
                Err(mlua::Error::RuntimeError("timeout".into()))
            } else {
                Ok(VmState::Continue)
            }
        },
    )
    .expect("hook");
    let function = match lua.load(source).set_name("=<string>").into_function() {
        Ok(f) => f,
        Err(e) => return Err(("syntax", e.to_string())),
    };
    match function.call::<MultiValue>(()) {
        Ok(values) => {
            let last = values.into_iter().last().unwrap_or(Value::Nil);
            Ok((lua, last))
        }
        Err(e) if start.elapsed() > Duration::from_secs(1) => Err(("timeout", e.to_string())),
        Err(e) => Err(("runtime", e.to_string())),
    }
}

/// The custom provider's rules: `empty` picks controller (Null) or harness (EmptyArray).
fn custom_outcome(
    result: &Result<(Lua, Value), (&'static str, String)>,
    empty: EmptyTable,
) -> Outcome {
    let value = match result {
        Err((kind, message)) => return Outcome::error(kind, None, message.clone()),
        Ok((_, value)) => value,
    };
    if !matches!(value, Value::Table(_)) {
        return match empty {
            EmptyTable::Null => Outcome::error(
                "not_table",
                None,
                format!(
                    "expect table output from Lua script, not {}",
                    value.type_name()
                ),
            ),
            EmptyTable::EmptyArray => Outcome::ok("{}".into(), None),
        };
    }
    let raw = match encode_lua(value, empty) {
        Ok(raw) => raw,
        Err(message) => return Outcome::error("encode", None, message),
    };
    let raw_text = String::from_utf8(raw.clone()).expect("encoder output is UTF-8");
    match decode_custom_result(&raw) {
        Ok(data) => Outcome::ok(data.to_canonical_json(), Some(raw_text)),
        Err(message) => Outcome::error("unmarshal", Some(raw_text), message),
    }
}

fn ingress_outcome(result: &Result<(Lua, Value), (&'static str, String)>) -> Outcome {
    let value = match result {
        Err((kind, message)) => return Outcome::error(kind, None, message.clone()),
        Ok((_, value)) => value,
    };
    if !matches!(value, Value::Table(_)) {
        return Outcome::error(
            "not_table",
            None,
            format!(
                "expect table output from Lua script, not {}",
                value.type_name()
            ),
        );
    }
    let raw = match encode_lua(value, EmptyTable::Null) {
        Ok(raw) => raw,
        Err(message) => return Outcome::error("encode", None, message),
    };
    let raw_text = String::from_utf8(raw.clone()).expect("encoder output is UTF-8");
    match decode_ingress_result(&raw) {
        Ok(map) => Outcome::ok(annotations_to_canonical_json(map.as_ref()), Some(raw_text)),
        Err(message) => Outcome::error("unmarshal", Some(raw_text), message),
    }
}

/// Differences between an expectation block and an outcome (empty when they agree).
fn compare(label: &str, expected: &Json, got: &Outcome) -> Vec<String> {
    let mut problems = Vec::new();
    let status = expected["status"].as_str().expect("status");
    let kind = expected["error_kind"].as_str();
    if status != got.status || kind != got.error_kind {
        problems.push(format!(
            "{label}: expected {status}/{kind:?}, got {}/{:?} ({})",
            got.status,
            got.error_kind,
            got.message.as_deref().unwrap_or("")
        ));
        return problems;
    }
    if status == "ok" {
        let output = expected["output"].as_str().expect("ok has output");
        if got.output.as_deref() != Some(output) {
            problems.push(format!(
                "{label}: output\n    expected {output}\n    got      {:?}",
                got.output
            ));
        }
    }
    if let Some(raw) = expected["raw"].as_str()
        && got.raw.as_deref() != Some(raw)
    {
        problems.push(format!(
            "{label}: raw\n    expected {raw}\n    got      {:?}",
            got.raw
        ));
    }
    problems
}

fn obj_of(dir: &Path, name: &str) -> JsonValue {
    JsonValue::parse_go_interface(&read(&dir.join(format!("{name}.obj.json"))))
        .expect("obj.json parses")
}

fn expected_of(dir: &Path, name: &str) -> Json {
    serde_json::from_slice(&read(&dir.join(format!("{name}.expected.json"))))
        .expect("expected.json parses")
}

#[test]
fn vectors_through_the_json_layer() {
    let root = conformance_dir();
    let vectors = root.join("vectors");
    let index: Json =
        serde_json::from_slice(&read(&vectors.join("index.json"))).expect("index.json");
    let index = index.as_array().expect("index is a list");
    assert!(
        index.len() >= 210,
        "index.json lists {} vectors",
        index.len()
    );

    let mut failures: Vec<(String, Vec<String>)> = Vec::new();
    let mut passed = 0;
    let mut puc_differs = std::collections::BTreeMap::new();
    for entry in index {
        let name = entry["name"].as_str().expect("name");
        if let Some(why) = entry["puc_5_1_differs"].as_str() {
            puc_differs.insert(name.to_string(), why.to_string());
        }
        let source = read(&vectors.join(format!("{name}.lua")));
        let expected = expected_of(&vectors, name);
        let result = run_script(&source, &obj_of(&vectors, name));
        let mut problems = compare(
            "controller",
            &expected,
            &custom_outcome(&result, EmptyTable::Null),
        );
        problems.extend(compare(
            "harness",
            &expected["harness"],
            &custom_outcome(&result, EmptyTable::EmptyArray),
        ));
        if problems.is_empty() {
            passed += 1;
        } else {
            failures.push((name.to_string(), problems));
        }
    }

    let ingress = root.join("ingress");
    let mut ingress_names: Vec<String> = std::fs::read_dir(&ingress)
        .expect("ingress dir")
        .filter_map(|e| {
            e.ok()?
                .file_name()
                .to_str()?
                .strip_suffix(".lua")
                .map(str::to_string)
        })
        .collect();
    ingress_names.sort();
    assert_eq!(ingress_names.len(), 9, "ingress vectors");
    for name in &ingress_names {
        let source = read(&ingress.join(format!("{name}.lua")));
        let result = run_script(&source, &obj_of(&ingress, name));
        let problems = compare(
            "ingress",
            &expected_of(&ingress, name),
            &ingress_outcome(&result),
        );
        if problems.is_empty() {
            passed += 1;
        } else {
            failures.push((name.clone(), problems));
        }
    }

    eprintln!(
        "json layer: {passed} passed, {} failed of {} vectors ({} marked puc_5_1_differs)",
        failures.len(),
        index.len() + ingress_names.len(),
        puc_differs.len()
    );
    let mut unexpected = Vec::new();
    for (name, problems) in &failures {
        let known = NEEDS_GOPHER_RUNTIME.iter().find(|(n, _)| n == name);
        let tag = match (known, puc_differs.get(name)) {
            (Some((_, why)), _) => format!("expected, needs gopher runtime: {why}"),
            (None, Some(why)) if !JSON_LAYER_DIFFERS.contains(&name.as_str()) => {
                format!("expected, puc_5_1_differs: {why}")
            }
            _ => {
                unexpected.push(name.clone());
                "UNEXPECTED".to_string()
            }
        };
        eprintln!("- {name} [{tag}]");
        for p in problems {
            eprintln!("    {p}");
        }
    }
    assert!(
        unexpected.is_empty(),
        "vectors failing in the JSON layer: {unexpected:?}"
    );
}
