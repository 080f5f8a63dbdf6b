//! Runs every vector of ../shared/conformance through the engine and compares output for output.
//!
//! Divergences are allowed only for the vectors in [`KNOWN_DIFFERENCES`], a short named list
//! that README.md documents; the test also fails when a listed vector starts to agree, so the
//! list never keeps stale entries.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use kruise_lua_engine::discovery::{self, ScriptOrigin};
use kruise_lua_engine::runner::{self, Mode, RunOptions};
use kruise_lua_engine::script::ScriptKind;
use kruise_lua_engine::steps::{self, StepStatus};
use kruise_lua_engine::testcase;
use kruise_lua_engine::{Data, JsonValue, ScriptError};

mod common;
use common::{conformance_dir, relative};

/// Vectors where the engine is known to differ from Kruise, with the reason. Keep it short.
const KNOWN_DIFFERENCES: &[(&str, &str)] = &[];

/// The most entries [`KNOWN_DIFFERENCES`] may have.
const MAX_KNOWN_DIFFERENCES: usize = 8;

fn read_json(path: &Path) -> serde_json::Value {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn obj_from_file(path: &Path) -> JsonValue {
    JsonValue::parse_go_interface(&fs::read(path).unwrap()).unwrap()
}

/// What a vector's expectation block says: status, error kind, output.
#[derive(Debug, PartialEq)]
struct Verdict {
    status: String,
    error_kind: Option<String>,
    output: Option<String>,
}

impl Verdict {
    fn from_expected(block: &serde_json::Value) -> Verdict {
        let status = block["status"].as_str().unwrap().to_owned();
        let is_ok = status == "ok";
        Verdict {
            status,
            error_kind: block["error_kind"].as_str().map(str::to_owned),
            // Outputs are compared only for successful runs (README part 1, rule 2).
            output: if is_ok {
                block["output"].as_str().map(str::to_owned)
            } else {
                None
            },
        }
    }

    fn from_result<T>(
        result: &Result<T, ScriptError>,
        canonical: impl Fn(&T) -> String,
    ) -> Verdict {
        match result {
            Ok(value) => Verdict {
                status: "ok".into(),
                error_kind: None,
                output: Some(canonical(value)),
            },
            Err(error) => Verdict {
                status: "error".into(),
                error_kind: Some(error.kind.as_str().into()),
                output: None,
            },
        }
    }
}

fn vector_names(dir: &Path) -> Vec<String> {
    let index = read_json(&dir.join("index.json"));
    index
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap().to_owned())
        .collect()
}

fn options() -> RunOptions {
    RunOptions::default()
}

/// Runs one custom-provider vector; returns the mismatches (empty when it agrees).
fn check_custom_vector(dir: &Path, name: &str) -> Vec<String> {
    let source = fs::read_to_string(dir.join(format!("{name}.lua"))).unwrap();
    let obj = obj_from_file(&dir.join(format!("{name}.obj.json")));
    let expected = read_json(&dir.join(format!("{name}.expected.json")));
    let script = runner::Script::new(source);
    let run = runner::run_custom_json(&script, &obj, &options());
    let mut problems = Vec::new();
    // The second run starts from the sandbox the first one used, rewound.
    let again = runner::run_custom_json(&script, &obj, &options());
    if again != run {
        problems.push(format!("a second run differs: {again:?}, first {run:?}"));
    }
    let production = Verdict::from_result(&run.production, Data::to_canonical_json);
    let want = Verdict::from_expected(&expected);
    if production != want {
        problems.push(format!("controller: got {production:?}, want {want:?}"));
    }
    if expected.get("harness").is_some_and(|h| !h.is_null()) {
        let harness = Verdict::from_result(&run.harness, Data::to_canonical_json);
        let want = Verdict::from_expected(&expected["harness"]);
        if harness != want {
            problems.push(format!("harness: got {harness:?}, want {want:?}"));
        }
    }
    problems
}

fn check_known(all_problems: BTreeMap<String, Vec<String>>) {
    assert!(
        KNOWN_DIFFERENCES.len() <= MAX_KNOWN_DIFFERENCES,
        "the known-differences list grew too long"
    );
    let mut report = Vec::new();
    for (name, problems) in &all_problems {
        if !problems.is_empty() && !KNOWN_DIFFERENCES.iter().any(|(known, _)| known == name) {
            report.push(format!("{name}:\n    {}", problems.join("\n    ")));
        }
    }
    for (known, _) in KNOWN_DIFFERENCES {
        if all_problems.get(*known).is_some_and(Vec::is_empty) {
            report.push(format!(
                "{known}: listed as a known difference but now agrees; remove it"
            ));
        }
    }
    assert!(
        report.is_empty(),
        "{} vectors disagree:\n{}",
        report.len(),
        report.join("\n")
    );
}

#[test]
fn custom_provider_vectors() {
    let dir = conformance_dir().join("vectors");
    let names = vector_names(&dir);
    assert!(
        names.len() >= 200,
        "expected the full vector set, found {}",
        names.len()
    );
    let results = names
        .iter()
        .map(|name| (name.clone(), check_custom_vector(&dir, name)))
        .collect();
    check_known(results);
}

/// Where the 2022 pin that Kruise runs differs from Debian's 2017 gopher-lua snapshot
/// (conformance README 2.13): same files and comparison as `vectors/`.
#[test]
fn pin2022_vectors() {
    let dir = conformance_dir().join("pin2022");
    let names = vector_names(&dir);
    assert!(!names.is_empty(), "no pin2022 vectors found");
    let results = names
        .iter()
        .map(|name| (name.clone(), check_custom_vector(&dir, name)))
        .collect();
    check_known(results);
}

#[test]
fn ingress_vectors() {
    let dir = conformance_dir().join("ingress");
    let mut results = BTreeMap::new();
    for name in vector_names(&dir) {
        let source = fs::read_to_string(dir.join(format!("{name}.lua"))).unwrap();
        let obj = obj_from_file(&dir.join(format!("{name}.obj.json")));
        let expected = read_json(&dir.join(format!("{name}.expected.json")));
        let script = runner::Script::new(source);
        let run = runner::run_ingress_json(&script, &obj, &options());
        let got = Verdict::from_result(&run.result, |annotations| {
            kruise_lua_engine::json::annotations_to_canonical_json(annotations.as_ref())
        });
        let want = Verdict::from_expected(&expected);
        let mut problems = Vec::new();
        if got != want {
            problems.push(format!("got {got:?}, want {want:?}"));
        }
        // The second run starts from the sandbox the first one used, rewound.
        let again = runner::run_ingress_json(&script, &obj, &options());
        if again != run {
            problems.push(format!("a second run differs: {again:?}, first {run:?}"));
        }
        results.insert(name, problems);
    }
    check_known(results);
}

#[test]
fn order_dependent_vectors() {
    let dir = conformance_dir().join("order_dependent");
    let mut results = BTreeMap::new();
    for name in vector_names(&dir) {
        let expected = read_json(&dir.join(format!("{name}.expected.json")));
        let problems = if expected["deterministic"] == serde_json::Value::Bool(false) {
            // Random in Kruise: any observed output is acceptable (README part 1, rule 4).
            let source = fs::read_to_string(dir.join(format!("{name}.lua"))).unwrap();
            let obj = obj_from_file(&dir.join(format!("{name}.obj.json")));
            let run = runner::run_custom_json(&runner::Script::new(source), &obj, &options());
            let observed: Vec<&str> = expected["observed_outputs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap())
                .collect();
            match &run.production {
                Ok(data) if observed.contains(&data.to_canonical_json().as_str()) => vec![],
                other => vec![format!("got {other:?}, want one of {observed:?}")],
            }
        } else {
            check_custom_vector(&dir, &name)
        };
        results.insert(name, problems);
    }
    check_known(results);
}

/// One line of `cases.*.jsonl`, reduced to what must agree.
#[derive(Debug, PartialEq)]
struct CaseLine {
    script: String,
    case: String,
    step: i64,
    status: String,
    error_kind: Option<String>,
    actual: Option<String>,
    expected: Option<String>,
    obj: Option<String>,
}

impl CaseLine {
    /// The line of a case that fails before any step runs.
    fn case_error(script: &str, case: String) -> CaseLine {
        CaseLine {
            script: script.to_owned(),
            case,
            step: -1,
            status: "error".into(),
            error_kind: Some("case".into()),
            actual: None,
            expected: None,
            obj: None,
        }
    }
}

/// Runs `check` over conformance/cases the way the oracle does and returns its lines.
fn check_cases(mode: Mode) -> Vec<CaseLine> {
    let root = conformance_dir().join("cases");
    let mut lines = Vec::new();
    for entry in discovery::discover(&root).unwrap() {
        assert!(matches!(entry.kind, ScriptKind::Custom { .. }));
        let ScriptOrigin::File(script_path) = &entry.origin else {
            panic!("file scripts only")
        };
        let script = relative(&root, script_path);
        let cases = match &entry.cases {
            Ok(cases) => cases,
            Err(_) => {
                let folder = relative(&root, &script_path.parent().unwrap().join("testdata"));
                lines.push(CaseLine::case_error(&script, folder));
                continue;
            }
        };
        for case_path in cases {
            let case_name = relative(&root, case_path);
            let source = fs::read_to_string(case_path).unwrap();
            let case = match testcase::parse_case(&source) {
                Ok(case) => case,
                Err(_) => {
                    lines.push(CaseLine::case_error(&script, case_name));
                    continue;
                }
            };
            let outcome = steps::run_case(
                &runner::Script::new(entry.source.as_str()),
                &case,
                mode,
                &options(),
            );
            for step in outcome.steps {
                lines.push(CaseLine {
                    script: script.clone(),
                    case: case_name.clone(),
                    step: step.index as i64,
                    status: match step.status {
                        StepStatus::Pass => "pass",
                        StepStatus::Fail => "fail",
                        StepStatus::Error => "error",
                    }
                    .into(),
                    error_kind: step.error.as_ref().map(|e| e.kind.as_str().to_owned()),
                    actual: step.actual,
                    expected: step.expected,
                    obj: Some(step.obj.to_json().to_canonical_json()),
                });
            }
        }
    }
    lines
}

fn expected_lines(file: &str) -> Vec<CaseLine> {
    let text = fs::read_to_string(conformance_dir().join(file)).unwrap();
    text.lines()
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            let s = |key: &str| v[key].as_str().map(str::to_owned);
            let step = v["step"].as_i64().unwrap();
            CaseLine {
                script: s("script").unwrap(),
                case: s("case").unwrap(),
                step,
                status: s("status").unwrap(),
                error_kind: s("error_kind"),
                actual: s("actual"),
                expected: s("expected"),
                obj: if step < 0 { None } else { s("obj") },
            }
        })
        .collect()
}

fn compare_case_lines(mode: Mode, file: &str) {
    let got = check_cases(mode);
    let want = expected_lines(file);
    let mut report = Vec::new();
    for (index, want_line) in want.iter().enumerate() {
        match got.get(index) {
            Some(got_line) if got_line == want_line => {}
            Some(got_line) => report.push(format!(
                "line {}:\n  got  {got_line:?}\n  want {want_line:?}",
                index + 1
            )),
            None => report.push(format!("line {}: missing, want {want_line:?}", index + 1)),
        }
    }
    if got.len() > want.len() {
        report.push(format!(
            "{} extra lines, first {:?}",
            got.len() - want.len(),
            got[want.len()]
        ));
    }
    assert!(
        report.is_empty(),
        "{file}: {} lines disagree:\n{}",
        report.len(),
        report.join("\n")
    );
}

#[test]
fn cases_harness_mode() {
    compare_case_lines(Mode::Harness, "cases.expected.jsonl");
}

#[test]
fn cases_production_mode() {
    compare_case_lines(Mode::Production, "cases.production.jsonl");
}
