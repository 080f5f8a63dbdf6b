//! Deeply nested test cases: up to the YAML reader's nesting bound every walk over the case
//! (conversion, decoding, the run, the comparison and its diff, dropping it) fits a 2 MiB
//! thread stack; past the bound the case fails at the line that crosses it.

use kruise_lua_engine::runner::{Mode, RunOptions, Script};
use kruise_lua_engine::steps::{StepStatus, run_case};
use kruise_lua_engine::testcase::parse_case;
use kruise_lua_engine::yaml::MAX_NESTING_DEPTH;

/// The levels a case puts around `original.spec.x` (the document, `original`, `spec`) and
/// around `expected[0].spec.x` (one more: the `expected` sequence).
const CASE_LEVELS: usize = 4;

/// `levels` mappings nested under `x`, in flow or block style, holding `value`.
fn nested(levels: usize, flow: bool, value: &str) -> String {
    if flow {
        return format!("{}{value}{}", "{a: ".repeat(levels), "}".repeat(levels));
    }
    let lines: String = (0..levels)
        .map(|level| format!("\n{}a:", " ".repeat(6 + level)))
        .collect();
    format!("{lines} {value}")
}

fn case(levels: usize, flow: bool, expected_value: &str) -> String {
    format!(
        "trafficRouting:
  apiVersion: rollouts.kruise.io/v1alpha1
  kind: TrafficRouting
  spec:
    objectRef:
    - service: web
    strategy:
      weight: 20
original:
  kind: Demo
  spec:
    x: {}
expected:
- kind: Demo
  spec:
    x: {}
",
        nested(levels, flow, "1"),
        nested(levels, flow, expected_value)
    )
}

#[test]
fn the_deepest_cases_run_and_compare_on_a_small_stack() {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(|| {
            let levels = MAX_NESTING_DEPTH - CASE_LEVELS;
            for flow in [false, true] {
                for (expected, status) in [("1", StepStatus::Pass), ("2", StepStatus::Fail)] {
                    let parsed = parse_case(&case(levels, flow, expected))
                        .unwrap_or_else(|e| panic!("flow {flow}: {e}"));
                    let outcome = run_case(
                        &Script::new("return obj.data"),
                        &parsed,
                        Mode::Harness,
                        &RunOptions::default(),
                    );
                    assert_eq!(outcome.steps[0].status, status, "flow {flow}");
                    drop((parsed, outcome));
                }
            }
        })
        .unwrap()
        .join()
        .expect("no stack overflow");
}

#[test]
fn a_case_nested_past_the_bound_fails_at_the_line_that_crosses_it() {
    // `original.spec.x` holds three levels fewer than the bound allows; `expected`'s copy one
    // fewer still.
    let in_original = MAX_NESTING_DEPTH - 3 + 1;
    for levels in [in_original, 10_000] {
        // Block style: level n under `original.spec.x` is on line 12 + n.
        let e = parse_case(&case(levels, false, "1")).unwrap_err();
        assert!(
            e.message
                .starts_with("error converting YAML to JSON: yaml: line")
                && e.message.contains("exceeded max depth of 255"),
            "{e}"
        );
        let line = 12 + in_original;
        assert_eq!(e.span.unwrap().start.line as usize, line, "{e}");
        let e = parse_case(&case(levels, true, "1")).unwrap_err();
        assert_eq!(e.span.unwrap().start.line, 12, "{e}");
    }
    // One level more than fits `expected`: the error is in `expected`, on its deepest line.
    let levels = MAX_NESTING_DEPTH - CASE_LEVELS + 1;
    let e = parse_case(&case(levels, false, "1")).unwrap_err();
    assert_eq!(
        e.span.unwrap().start.line as usize,
        12 + levels + 4 + levels,
        "{e}"
    );
}
