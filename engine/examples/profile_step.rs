//! Runs one VirtualService step many times (for profilers such as callgrind).
use kruise_lua_engine::runner::{Mode, RunOptions, Script};
use kruise_lua_engine::script::ScriptFlavor;
use kruise_lua_engine::steps::{self, StepToRun};
use kruise_lua_engine::testcase;

fn main() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../lua_configuration/networking.istio.io/VirtualService");
    let script = Script::new(std::fs::read_to_string(dir.join("trafficRouting.lua")).unwrap());
    let case =
        testcase::parse_case(&std::fs::read_to_string(dir.join("testdata/weights.yaml")).unwrap())
            .unwrap();
    let n: usize = std::env::args().nth(1).map_or(200, |a| a.parse().unwrap());
    let options = RunOptions::default();
    let started = std::time::Instant::now();
    for _ in 0..n {
        steps::run_case_step(StepToRun {
            script: &script,
            flavor: ScriptFlavor::Custom,
            case: &case,
            index: 0,
            mode: Mode::Harness,
            options: &options,
        });
    }
    eprintln!("{:?} per step", started.elapsed() / n as u32);
}
