//! Benchmarks of the engine on the bundled script library: one step of the Istio
//! VirtualService script (fresh state + obj conversion + run + encode + compare), the same
//! step for a script compiled and prepared for that one run, and every step of 100 test
//! cases. Figures are recorded in docs/BENCHMARKS.md.

use std::path::{Path, PathBuf};

use divan::Bencher;
use kruise_lua_engine::discovery;
use kruise_lua_engine::runner::{self, Mode, RunOptions, Script};
use kruise_lua_engine::script::ScriptFlavor;
use kruise_lua_engine::steps::{self, StepToRun};
use kruise_lua_engine::testcase::{self, TestCase};

fn main() {
    divan::main();
}

fn corpus_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../lua_configuration")
}

/// Every (compiled script, flavor, case) of the bundled library, in walk order.
fn corpus() -> Vec<(Script, ScriptFlavor, TestCase)> {
    let mut all = Vec::new();
    for entry in discovery::discover(&corpus_root()).expect("lua_configuration is readable") {
        let flavor = ScriptFlavor::from(&entry.kind);
        let script = Script::new(entry.source.as_str());
        for path in entry.cases.into_iter().flatten() {
            let text = std::fs::read_to_string(&path).expect("case is readable");
            if let Ok(case) = testcase::parse_case(&text) {
                all.push((script.clone(), flavor, case));
            }
        }
    }
    assert!(
        !all.is_empty(),
        "no cases found under {}",
        corpus_root().display()
    );
    all
}

#[divan::bench]
fn virtual_service_step(bencher: Bencher) {
    let dir = corpus_root().join("networking.istio.io/VirtualService");
    let script = Script::new(std::fs::read_to_string(dir.join("trafficRouting.lua")).unwrap());
    let case =
        testcase::parse_case(&std::fs::read_to_string(dir.join("testdata/weights.yaml")).unwrap())
            .unwrap();
    let options = RunOptions::default();
    bencher.bench(|| {
        let outcome = steps::run_case_step(StepToRun {
            script: &script,
            flavor: ScriptFlavor::Custom,
            case: &case,
            index: 0,
            mode: Mode::Harness,
            options: &options,
        });
        assert_eq!(outcome.status, steps::StepStatus::Pass);
        outcome
    });
}

/// The step with a new `Script` each time: compiling, building a prepared state and taking
/// its snapshot are part of the run (what `controller::run_step` pays).
#[divan::bench]
fn virtual_service_step_new_script(bencher: Bencher) {
    let dir = corpus_root().join("networking.istio.io/VirtualService");
    let source = std::fs::read_to_string(dir.join("trafficRouting.lua")).unwrap();
    let case =
        testcase::parse_case(&std::fs::read_to_string(dir.join("testdata/weights.yaml")).unwrap())
            .unwrap();
    let options = RunOptions::default();
    bencher.bench(|| {
        let script = Script::new(source.as_str());
        let outcome = steps::run_case_step(StepToRun {
            script: &script,
            flavor: ScriptFlavor::Custom,
            case: &case,
            index: 0,
            mode: Mode::Harness,
            options: &options,
        });
        assert_eq!(outcome.status, steps::StepStatus::Pass);
        outcome
    });
}

#[divan::bench(sample_count = 20)]
fn hundred_cases_sequential(bencher: Bencher) {
    let corpus = corpus();
    let cases: Vec<_> = corpus.iter().cycle().take(100).collect();
    let options = RunOptions::default();
    bencher.bench(|| {
        let mut steps = 0;
        for (script, flavor, case) in &cases {
            for index in 0..case.steps.len() {
                steps::run_case_step(StepToRun {
                    script,
                    flavor: *flavor,
                    case,
                    index,
                    mode: Mode::Harness,
                    options: &options,
                });
                steps += 1;
            }
        }
        steps
    });
}

/// A fresh state with Kruise's environment, before the chunk is loaded: what preparing a
/// state for a script costs (once per script and thread; runs then rewind it).
#[divan::bench]
fn fresh_state(bencher: Bencher) {
    let options = RunOptions::default();
    bencher.bench(|| runner::fresh_sandbox(&options).unwrap());
}
