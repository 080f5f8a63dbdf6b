//! Times the phases of one VirtualService step run separately: compiling the script (once
//! per script, not per step), a fresh sandbox with the environment (once per script and
//! thread: runs rewind a prepared one), then the whole step (rewound sandbox + obj + run +
//! encode + canonical JSON + compare), per step.
use std::time::{Duration, Instant};

use kruise_lua_engine::runner::{self, Mode, RunOptions, Script};
use kruise_lua_engine::script::ScriptFlavor;
use kruise_lua_engine::steps::{self, StepToRun};
use kruise_lua_engine::testcase;

fn main() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../lua_configuration/networking.istio.io/VirtualService");
    let source = std::fs::read_to_string(dir.join("trafficRouting.lua")).unwrap();
    let case =
        testcase::parse_case(&std::fs::read_to_string(dir.join("testdata/weights.yaml")).unwrap())
            .unwrap();
    let options = RunOptions::default();
    let n = 2000u32;
    let median = |mut times: Vec<Duration>| {
        times.sort();
        times[times.len() / 2]
    };
    let timed = |f: &mut dyn FnMut()| {
        let times: Vec<Duration> = (0..n)
            .map(|_| {
                let started = Instant::now();
                f();
                started.elapsed()
            })
            .collect();
        median(times)
    };
    let compile = timed(&mut || drop(Script::new(source.as_str())));
    let script = Script::new(source.as_str());
    let sandbox = timed(&mut || drop(runner::fresh_sandbox(&options).unwrap()));
    let obj = timed(&mut || drop(case.steps[0].obj.to_json()));
    let step = timed(&mut || {
        let outcome = steps::run_case_step(StepToRun {
            script: &script,
            flavor: ScriptFlavor::Custom,
            case: &case,
            index: 0,
            mode: Mode::Harness,
            options: &options,
        });
        assert_eq!(outcome.status, steps::StepStatus::Pass);
    });
    let canonical = timed(&mut || drop(case.expected[0].data.to_canonical_json()));
    eprintln!("medians over {n} runs:");
    eprintln!("  compile (once per script)      {compile:?}");
    eprintln!("  fresh sandbox + environment    {sandbox:?} (once per script and thread)");
    eprintln!("  obj to JSON (not on the path)  {obj:?}");
    eprintln!("  canonical JSON of expected[0]  {canonical:?}");
    eprintln!("  whole step                     {step:?}");
}
