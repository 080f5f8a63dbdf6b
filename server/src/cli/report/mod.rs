//! `check`'s report formats over the verdict model ([`crate::project::verdict`]): one module per
//! format, [`describe`] for how findings read in all of them, and the dispatch by `--format`.

use std::io::{self, Write};

pub use describe::*;

pub mod describe;
pub mod github;
pub mod human;
pub mod json;
pub mod junit;
pub mod sarif;
pub mod stream;

/// Output formats of `check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Format {
    /// Per script, case and step, with diffs (for people)
    #[default]
    Human,
    /// JSON Lines, one object per step (and per case-level error)
    Json,
    /// JUnit XML: a testsuite per script, a testcase per step
    Junit,
    /// GitHub Actions workflow annotations (::error / ::warning)
    Github,
    /// SARIF 2.1.0 (GitHub code scanning)
    Sarif,
}

/// Writes `report` in `format`.
pub fn write(report: &Report, format: Format, color: bool, out: &mut dyn Write) -> io::Result<()> {
    match format {
        Format::Human => human::write(report, color, out),
        Format::Json => json::write(report, out),
        Format::Junit => junit::write(report, out),
        Format::Github => github::write(report, out),
        Format::Sarif => sarif::write(report, out),
    }
}

#[cfg(test)]
pub(crate) mod fixtures {
    //! Hand-built outcomes for the formatters' unit tests (no engine run needed).

    use super::*;
    use kruise_lua_engine::steps::{CaseOutcome, FieldDiff, StepOutcome, StepStatus};
    use kruise_lua_engine::testcase::{CaseError, CaseWarning};
    use kruise_lua_engine::value::JsonValue;
    use kruise_lua_engine::yaml::Span;
    use kruise_lua_engine::yaml::{PathSeg, Pos};
    use kruise_lua_engine::{ErrorKind, ScriptError};

    pub fn span(line: u32) -> Option<Span> {
        Some(Span {
            start: Pos {
                line,
                column: 5,
                offset: 0,
            },
            end: Pos {
                line,
                column: 9,
                offset: 0,
            },
        })
    }

    pub fn step(index: usize, status: StepStatus) -> StepOutcome {
        StepOutcome {
            index,
            status,
            obj: Default::default(),
            actual: Some(r#"{"spec":{"weight":10}}"#.to_string()),
            expected: Some(r#"{"spec":{"weight":10}}"#.to_string()),
            error: None,
            diff: vec![],
            unified_diff: String::new(),
            warnings: vec![],
            not_called: None,
            prints: vec![],
            expected_span: span(20 + 10 * index as u32),
            step_span: span(5 + index as u32),
        }
    }

    /// One script with a passing case, a failing step, a runtime error, a case error and
    /// warnings; the failing step has `<&>` and a quote in its values to exercise escaping.
    pub fn report() -> Report {
        let mut failing = step(1, StepStatus::Fail);
        failing.actual = Some(r#"{"spec":{"host":"a<&>\"b","weight":30}}"#.to_string());
        failing.expected = Some(r#"{"spec":{"weight":20}}"#.to_string());
        failing.diff = vec![
            FieldDiff {
                path: vec![PathSeg::Key("spec".into()), PathSeg::Key("weight".into())],
                expected: Some(JsonValue::Int(20)),
                actual: Some(JsonValue::Float(30.0)),
                span: span(34),
            },
            FieldDiff {
                path: vec![PathSeg::Key("spec".into()), PathSeg::Key("host".into())],
                expected: None,
                actual: Some(JsonValue::String("a<&>\"b".into())),
                span: None,
            },
        ];
        failing.unified_diff =
            "--- expected\n+++ actual\n@@ -1,2 +1,3 @@\n spec:\n-  weight: 20\n+  host: a<&>\"b\n+  weight: 30\n"
                .to_string();
        failing.warnings = vec!["the controller's result differs: {\"spec\":null}".to_string()];
        failing.prints = vec!["debug 100%".to_string()];

        let mut erroring = step(0, StepStatus::Error);
        erroring.actual = None;
        erroring.error = Some(
            ScriptError::new(
                ErrorKind::Runtime,
                "<string>:7: attempt to index a nil value\nstack traceback",
            )
            .at_line(Some(7)),
        );
        let mut timing_out = step(1, StepStatus::Error);
        timing_out.actual = None;
        timing_out.error = Some(ScriptError::new(
            ErrorKind::Timeout,
            "script exceeded 100 ms",
        ));

        let script = ScriptReport {
            path: "lua_configuration/example.io/Demo/trafficRouting.lua".into(),
            key: None,
            lines: Vec::new(),
            case_base: "lua_configuration/example.io/Demo".into(),
            skipped: None,
            syntax_error: None,
            cases: vec![
                CaseReport {
                    path: "lua_configuration/example.io/Demo/testdata/pass.yaml".into(),
                    outcome: CaseOutcome {
                        case_error: None,
                        warnings: vec![CaseWarning {
                            message: "unknown field `weight` in steps[0]".into(),
                            span: span(12),
                        }],
                        steps: vec![step(0, StepStatus::Pass)],
                    },
                    order_dependent: vec![],
                    misrouted: vec![],
                    intent_unverified: vec![],
                    schema: vec![],
                    schema_not_checked: None,
                },
                CaseReport {
                    path: "lua_configuration/example.io/Demo/testdata/fail.yaml".into(),
                    outcome: CaseOutcome {
                        case_error: None,
                        warnings: vec![],
                        steps: vec![step(0, StepStatus::Pass), failing],
                    },
                    order_dependent: vec![],
                    misrouted: vec![],
                    intent_unverified: vec![],
                    schema: vec![],
                    schema_not_checked: None,
                },
                CaseReport {
                    path: "lua_configuration/example.io/Demo/testdata/error.yaml".into(),
                    outcome: CaseOutcome {
                        case_error: None,
                        warnings: vec![],
                        steps: vec![erroring, timing_out],
                    },
                    order_dependent: vec![],
                    misrouted: vec![],
                    intent_unverified: vec![],
                    schema: vec![],
                    schema_not_checked: None,
                },
                CaseReport {
                    path: "lua_configuration/example.io/Demo/testdata/broken.yaml".into(),
                    outcome: CaseOutcome {
                        case_error: Some(CaseError {
                            message: "neither rollout nor trafficRouting defined".into(),
                            span: span(1),
                        }),
                        warnings: vec![],
                        steps: vec![],
                    },
                    order_dependent: vec![],
                    misrouted: vec![],
                    intent_unverified: vec![],
                    schema: vec![],
                    schema_not_checked: None,
                },
            ],
        };
        Report {
            scripts: vec![script],
            shuffle_runs: 0,
            notes: Vec::new(),
            crd_errors: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::project::verdict::OrderFinding;
    use kruise_lua_engine::value::JsonValue;
    use kruise_lua_engine::yaml::PathSeg;
    use kruise_lua_engine::{ErrorKind, ScriptError};

    #[test]
    fn paths_read_as_written_in_yaml() {
        let path = vec![
            PathSeg::Key("spec".into()),
            PathSeg::Key("http".into()),
            PathSeg::Index(0),
            PathSeg::Key("a.b".into()),
        ];
        assert_eq!(format_path(&path), r#"spec.http[0]["a.b"]"#);
        assert_eq!(format_path(&[]), "(root)");
        assert_eq!(format_path(&[PathSeg::Index(2)]), "[2]");
    }

    #[test]
    fn values_read_like_go_json() {
        assert_eq!(go_number(50.0), "50");
        assert_eq!(go_number(0.5), "0.5");
        assert_eq!(go_number(1e21), "1e+21");
        assert_eq!(go_number(1e-7), "1e-7");
        assert_eq!(go_number(1e20), "100000000000000000000");
        let value = JsonValue::Array(vec![
            JsonValue::Int(1),
            JsonValue::String("a\"<".into()),
            JsonValue::Null,
        ]);
        assert_eq!(format_value(Some(&value)), r#"[1,"a\"<",null]"#);
        assert_eq!(format_value(None), "(absent)");
    }

    #[test]
    fn lua_positions_map_to_the_script_file() {
        let script = ScriptReport {
            path: "cm.yaml".into(),
            lines: (10..20).collect(),
            ..Default::default()
        };
        let error = ScriptError::new(
            ErrorKind::Runtime,
            "<string>:4: attempt to index a nil value",
        );
        assert_eq!(
            error_message(&script, &error),
            "attempt to index a nil value"
        );
        assert_eq!(
            located_error(&script, &error),
            "cm.yaml:13: attempt to index a nil value"
        );
        let error = ScriptError::new(ErrorKind::Runtime, "<string>: odd");
        assert_eq!(error_message(&script, &error), "<string>: odd");
    }

    #[test]
    fn positions_quoted_in_warnings_are_mapped_too() {
        let mut report = fixtures::report();
        let script = &mut report.scripts[0];
        script.cases[0].outcome.steps[0].warnings =
            vec!["Kruise's unit test gets a runtime error (<string>:3: boom)".into()];
        assert_eq!(
            step_warnings(script, &script.cases[0].outcome.steps[0]),
            [
                "Kruise's unit test gets a runtime error (lua_configuration/example.io/Demo/trafficRouting.lua:3: boom)"
            ]
        );
    }

    #[test]
    fn passing_steps_the_controller_skips_count_apart() {
        let mut report = fixtures::report();
        let step = &mut report.scripts[0].cases[0].outcome.steps[0];
        step.not_called = Some(kruise_lua_engine::steps::NOT_CALLED_NO_TRAFFIC);
        assert!(skip_reason(step).is_some());
        let summary = Summary::of(&report);
        assert_eq!((summary.passed, summary.skipped_steps), (1, 1));
        assert_eq!(
            summary.line(),
            "1 passed, 1 failed, 3 errors, 1 step skipped, 2 warnings"
        );
    }

    #[test]
    fn summary_counts_steps_and_case_errors() {
        let summary = Summary::of(&fixtures::report());
        assert_eq!((summary.passed, summary.failed, summary.errors), (2, 1, 3));
        assert_eq!(summary.warnings, 2);
        assert_eq!(summary.exit_code(), 1);
        assert_eq!(summary.line(), "2 passed, 1 failed, 3 errors, 2 warnings");
    }

    #[test]
    fn deny_warnings_fails_a_green_run_with_warnings() {
        let mut report = fixtures::report();
        report.scripts[0].cases.truncate(1);
        let summary = Summary::of(&report);
        assert_eq!(summary.warnings, 1);
        assert_eq!(summary.exit_code_denying(false), 0);
        assert_eq!(summary.exit_code_denying(true), 1);
    }

    #[test]
    fn order_dependence_alone_fails_the_run() {
        let mut report = fixtures::report();
        report.scripts[0].cases.truncate(1);
        assert_eq!(Summary::of(&report).exit_code(), 0);
        report.scripts[0].cases[0]
            .order_dependent
            .push(OrderFinding {
                step: 0,
                distinct: 2,
                runs: 4,
                sample: "{}".into(),
                pairs_calls: Vec::new(),
            });
        let summary = Summary::of(&report);
        assert_eq!(summary.exit_code(), 1);
        assert_eq!(report.scripts[0].cases[0].verdict(), Verdict::Fail);
    }

    #[test]
    fn configmap_lines_are_offset() {
        let script = ScriptReport {
            lines: (10..20).collect(),
            key: Some("lua.traffic.routing.K.g".into()),
            path: "cm.yaml".into(),
            ..Default::default()
        };
        assert_eq!(script.file_line(1), 10);
        assert_eq!(script.file_line(4), 13);
        assert_eq!(script.id(), "cm.yaml#lua.traffic.routing.K.g");
    }
}
