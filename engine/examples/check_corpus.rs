//! Does what `kruise-lua check` does over the bundled library (discover, parse every case,
//! compile each script once, run every step) and prints the step count; time it with
//! `time target/release/examples/check_corpus` to see the wall time including process start.
use kruise_lua_engine::discovery;
use kruise_lua_engine::runner::{Mode, RunOptions, Script};
use kruise_lua_engine::script::ScriptFlavor;
use kruise_lua_engine::steps::{self, StepStatus, StepToRun};
use kruise_lua_engine::testcase;

fn main() {
    let root = std::env::args().nth(1).map_or_else(
        || std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../lua_configuration"),
        std::path::PathBuf::from,
    );
    let options = RunOptions::default();
    let (mut steps, mut passed) = (0, 0);
    for entry in discovery::discover(&root).expect("the library is readable") {
        let flavor = ScriptFlavor::from(&entry.kind);
        let script = Script::new(entry.source.as_str());
        for path in entry.cases.into_iter().flatten() {
            let text = std::fs::read_to_string(&path).expect("case is readable");
            let Ok(case) = testcase::parse_case(&text) else {
                continue;
            };
            for index in 0..case.steps.len() {
                let outcome = steps::run_case_step(StepToRun {
                    script: &script,
                    flavor,
                    case: &case,
                    index,
                    mode: Mode::Harness,
                    options: &options,
                });
                steps += 1;
                passed += usize::from(outcome.status == StepStatus::Pass);
            }
        }
    }
    println!("{passed}/{steps} steps pass");
}
