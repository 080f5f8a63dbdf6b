//! Times the phases of one step run (state, environment, obj, parse, run, encode) separately.
use std::time::{Duration, Instant};

use kruise_lua_engine::json::{self, EmptyTable, KeyOrder};
use kruise_lua_engine::{stdlib, testcase, vm};

fn main() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../lua_configuration/networking.istio.io/VirtualService");
    let source = std::fs::read_to_string(dir.join("trafficRouting.lua")).unwrap();
    let case =
        testcase::parse_case(&std::fs::read_to_string(dir.join("testdata/weights.yaml")).unwrap())
            .unwrap();
    let obj = case.steps[0].obj.to_json();
    let n = 2000u32;
    let mut t = [Duration::ZERO; 7];
    for _ in 0..n {
        let s = Instant::now();
        let lua = vm::new_state(&vm::Limits::default()).unwrap();
        t[0] += s.elapsed();
        let s = Instant::now();
        stdlib::install(&lua).unwrap();
        t[1] += s.elapsed();
        let s = Instant::now();
        json::install_module(&lua).unwrap();
        t[2] += s.elapsed();
        let s = Instant::now();
        let o = json::json_to_lua(&lua, &obj, KeyOrder::Sorted).unwrap();
        lua.globals().raw_set("obj", o).unwrap();
        t[3] += s.elapsed();
        let s = Instant::now();
        let f = lua
            .load(&source)
            .set_name("=<string>")
            .into_function()
            .unwrap();
        t[4] += s.elapsed();
        let s = Instant::now();
        let v: mlua::Value = f.call(()).unwrap();
        t[5] += s.elapsed();
        let s = Instant::now();
        for mode in [EmptyTable::Null, EmptyTable::EmptyArray] {
            let raw = json::encode_lua(&v, mode).unwrap();
            let d = json::decode_custom_result(&raw).unwrap();
            let _ = d.to_canonical_json();
        }
        t[6] += s.elapsed();
    }
    for (name, d) in [
        "new_state",
        "stdlib",
        "json module",
        "obj",
        "parse",
        "run",
        "encode+decode x2",
    ]
    .iter()
    .zip(t)
    {
        eprintln!("{name:>18}: {:?}", d / n);
    }
}
