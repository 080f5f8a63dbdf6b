//! Runs one VirtualService step many times (for profilers such as callgrind).
use kruise_lua_engine::runner::{self, Mode, RunOptions, ScriptFlavor};
use kruise_lua_engine::testcase;

fn main() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../lua_configuration/networking.istio.io/VirtualService");
    let source = std::fs::read_to_string(dir.join("trafficRouting.lua")).unwrap();
    let case =
        testcase::parse_case(&std::fs::read_to_string(dir.join("testdata/weights.yaml")).unwrap())
            .unwrap();
    let n: usize = std::env::args().nth(1).map_or(200, |a| a.parse().unwrap());
    let started = std::time::Instant::now();
    for _ in 0..n {
        runner::run_case_step(
            &source,
            ScriptFlavor::Custom,
            &case,
            0,
            Mode::Harness,
            &RunOptions::default(),
        );
    }
    eprintln!("{:?} per step", started.elapsed() / n as u32);
}
