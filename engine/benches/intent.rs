//! Benchmarks of the intent check (issue 20): its cost on the bundled library beside the cost
//! of running the same steps, and the hostile steps that once took 23 s and more than 120 s
//! (eight `\p{L}{200}` regex headers; 200 matches of five). Figures are recorded in
//! docs/BENCHMARKS.md ("Intent check"); the whole-process ratio of `check` with and without
//! the check is measured by `scripts/bench-intent.sh`.

use std::path::{Path, PathBuf};

use divan::Bencher;
use kruise_lua_engine::discovery;
use kruise_lua_engine::intent;
use kruise_lua_engine::runner::{Mode, RunOptions, Script};
use kruise_lua_engine::script::{ScriptFlavor, ScriptKind};
use kruise_lua_engine::steps::{self, StepToRun};
use kruise_lua_engine::testcase::{self, TestCase};

fn main() {
    divan::main();
}

fn corpus_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../lua_configuration")
}

/// Every (kind, compiled script, case) of the bundled library, in walk order.
fn corpus() -> Vec<(ScriptKind, Script, TestCase)> {
    let mut all = Vec::new();
    for entry in discovery::discover(&corpus_root()).expect("lua_configuration is readable") {
        let script = Script::new(entry.source.as_str());
        for path in entry.cases.into_iter().flatten() {
            let text = std::fs::read_to_string(&path).expect("case is readable");
            if let Ok(case) = testcase::parse_case(&text) {
                all.push((entry.kind.clone(), script.clone(), case));
            }
        }
    }
    assert!(
        !all.is_empty(),
        "no cases under {}",
        corpus_root().display()
    );
    all
}

/// Every step of the library run as `check` runs it (the cost the intent check is compared
/// with).
#[divan::bench(sample_count = 10)]
fn library_steps(bencher: Bencher) {
    let corpus = corpus();
    let options = RunOptions::default();
    bencher.bench(|| {
        let mut steps = 0;
        for (kind, script, case) in &corpus {
            for index in 0..case.steps.len() {
                steps::run_case_step(StepToRun {
                    script,
                    flavor: ScriptFlavor::from(kind),
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

/// The intent check of every step of the library, alone.
#[divan::bench(sample_count = 10)]
fn library_intent(bencher: Bencher) {
    let corpus = corpus();
    let options = RunOptions::default();
    bencher.bench(|| {
        corpus
            .iter()
            .map(|(kind, script, case)| intent::check_case(kind, script, case, &options).len())
            .sum::<usize>()
    });
}

/// A script putting one Istio route per step match (its headers as `regex`/`exact`) ahead
/// of the routes, to the canary: what the step asks.
const HOSTILE_SCRIPT: &str = r#"local spec = obj.data.spec
local routes = {}
for _, m in ipairs(obj.matches or {}) do
  local headers = {}
  for _, h in ipairs(m.headers or {}) do
    if h.type == "RegularExpression" then headers[h.name] = {regex = h.value}
    else headers[h.name] = {exact = h.value} end
  end
  table.insert(routes, {match = {{headers = headers}}, route = {{destination = {host = obj.canaryService}}}})
end
for _, r in ipairs(spec.http) do table.insert(routes, r) end
spec.http = routes
return obj.data
"#;

/// One step of `matches` matches of `headers` `\p{L}{200}` regex headers each.
fn hostile_case(matches: usize, headers: usize) -> TestCase {
    let mut text = String::from(
        "rollout:\n  spec:\n    strategy:\n      canary:\n        trafficRoutings:\n        - service: web\n        steps:\n        - matches:\n",
    );
    for m in 0..matches {
        text.push_str("          - headers:\n");
        for h in 0..headers {
            text.push_str(&format!(
                "            - {{type: RegularExpression, name: x-m{m}-h{h}, value: \"\\\\p{{L}}{{200}}\"}}\n"
            ));
        }
    }
    text.push_str(
        "original:\n  apiVersion: networking.istio.io/v1\n  kind: VirtualService\n  metadata: {name: web}\n  spec:\n    hosts: [web]\n    http:\n    - route:\n      - destination: {host: web}\n",
    );
    testcase::parse_case(&text).expect("the hostile case parses")
}

fn check_hostile(bencher: Bencher, matches: usize, headers: usize) {
    let case = hostile_case(matches, headers);
    let script = Script::new(HOSTILE_SCRIPT);
    let kind = ScriptKind::Custom {
        group: "networking.istio.io".into(),
        kind: "VirtualService".into(),
    };
    let options = RunOptions::default();
    bencher.bench(|| {
        let checks = intent::check_case(&kind, &script, &case, &options);
        assert!(
            matches!(&checks[0].outcome, intent::StepIntentOutcome::Checked(r) if r.violations.is_empty()),
            "{:?}",
            checks[0].outcome
        );
        checks
    });
}

/// Issue 20: one step with eight `\p{L}{200}` regex headers took 23 s.
#[divan::bench(sample_count = 10)]
fn hostile_eight_regex_headers(bencher: Bencher) {
    check_hostile(bencher, 1, 8);
}

/// Issue 20: 200 matches of five such headers ran past 120 s.
#[divan::bench(sample_count = 5)]
fn hostile_two_hundred_matches(bencher: Bencher) {
    check_hostile(bencher, 200, 5);
}
