//! Running a case, the same for `check` and the language server: every step through the
//! engine (each from a fresh or rewound Lua state), the intent check, schema validation of each
//! step's output and expectation, and (`--shuffle N`) reruns with `obj`'s maps built in
//! shuffled key order (fixed seeds, so runs are reproducible). A step whose result changes
//! depends on the order `pairs()` visits keys; in the controller that order is random, so its
//! output would be nondeterministic. The finding names the `pairs()` loops whose order reaches
//! the result (lint KL005) and the JSON paths that differ. The result is a [`CaseReport`],
//! whose verdict [`super::verdict`] decides.

use std::collections::BTreeSet;

use kruise_lua_engine::intent;
use kruise_lua_engine::json::KeyOrder;
use kruise_lua_engine::runner::{Mode, RunOptions, Script};
use kruise_lua_engine::schema::SchemaSet;
use kruise_lua_engine::script::ScriptKind;
use kruise_lua_engine::steps::{
    CaseOutcome, StepOutcome, StepToRun, diff_canonical, format_path, run_case_step, short_value,
};
use kruise_lua_engine::testcase::{CaseError, TestCase, parse_case};
use rayon::prelude::*;

use super::intent::{IntentFinding, IntentUnverified};
use super::schema_check;
use super::targets::{Job, Planned};
use super::verdict::{CaseReport, Location, OrderFinding, Report, ScriptReport, Verdict};
use crate::analysis::{self, LintConfig};

/// What a run checks besides the expected results.
#[derive(Debug, Clone, Copy)]
pub struct Checks {
    pub mode: Mode,
    /// Shuffled-key-order reruns per case (`--shuffle`).
    pub shuffle: u32,
    /// Whether to run the intent check (`--no-intent` turns it off).
    pub intent: bool,
}

/// Runs every job in parallel and assembles the report in plan order; with `schemas`, each
/// step's output and expectation are validated too.
pub fn run(
    planned: Vec<Planned>,
    checks: Checks,
    options: &RunOptions,
    schemas: Option<&SchemaSet>,
) -> Report {
    let mut scripts = Vec::with_capacity(planned.len());
    let collected: Result<(), std::convert::Infallible> =
        run_each(planned, checks, options, schemas, &mut |script| {
            scripts.push(script);
            Ok(())
        });
    let Ok(()) = collected;
    Report {
        scripts,
        shuffle_runs: checks.shuffle,
        notes: Vec::new(),
    }
}

/// How many cases run between two hand-overs of finished scripts: enough to keep every core
/// busy, few enough that a batch's results stay small (a few MB).
const BATCH_CASES: usize = 256;

/// Runs the scripts a batch at a time (the cases of a batch in parallel) and hands each
/// script's report to `each` in plan order as soon as its batch is done; a report written
/// while it runs (`check`'s streaming formats) so holds one batch of results, not all of them.
pub fn run_each<E>(
    planned: Vec<Planned>,
    checks: Checks,
    options: &RunOptions,
    schemas: Option<&SchemaSet>,
    each: &mut dyn FnMut(ScriptReport) -> Result<(), E>,
) -> Result<(), E> {
    let mut planned = planned.into_iter().peekable();
    while planned.peek().is_some() {
        let mut batch = Vec::new();
        let mut cases = 0;
        while cases < BATCH_CASES
            && let Some(plan) = planned.next()
        {
            cases += plan.jobs.len().max(1);
            batch.push(plan);
        }
        let work: Vec<(usize, &Job)> = batch
            .iter()
            .enumerate()
            .flat_map(|(index, plan)| plan.jobs.iter().map(move |job| (index, job)))
            .collect();
        let results: Vec<CaseReport> = work
            .par_iter()
            .map(|(index, job)| run_job(&batch[*index], job, checks, options, schemas))
            .collect();
        let mut scripts: Vec<ScriptReport> = batch.iter().map(|plan| plan.header.clone()).collect();
        for ((index, _), result) in work.iter().zip(results) {
            scripts[*index].cases.push(result);
        }
        drop(work);
        drop(batch);
        for script in scripts {
            each(script)?;
        }
    }
    Ok(())
}

fn run_job(
    plan: &Planned,
    job: &Job,
    checks: Checks,
    options: &RunOptions,
    schemas: Option<&SchemaSet>,
) -> CaseReport {
    let Checks { mode, shuffle, .. } = checks;
    let failed = |error: CaseError| CaseReport {
        path: job.path.clone(),
        outcome: CaseOutcome {
            case_error: Some(error),
            warnings: Vec::new(),
            steps: Vec::new(),
        },
        order_dependent: Vec::new(),
        misrouted: Vec::new(),
        intent_unverified: Vec::new(),
        schema: Vec::new(),
    };
    let text = match &job.input {
        Ok(text) => text,
        Err(error) => return failed(error.clone()),
    };
    let case = match parse_case(text) {
        Ok(case) => case,
        Err(error) => return failed(error),
    };
    if case.steps.is_empty() {
        return CaseReport {
            path: job.path.clone(),
            outcome: no_steps(&case),
            order_dependent: Vec::new(),
            misrouted: Vec::new(),
            intent_unverified: Vec::new(),
            schema: Vec::new(),
        };
    }
    let outcome = CaseOutcome {
        case_error: None,
        warnings: case.warnings.clone(),
        steps: run_steps(plan, &case, mode, options),
    };
    let order_dependent = if shuffle > 0 {
        order_findings(plan, &case, &outcome, mode, options, shuffle)
    } else {
        Vec::new()
    };
    let CaseIntent {
        misrouted,
        unverified: intent_unverified,
    } = match (&plan.kind, checks.intent) {
        (Some(kind), true) => {
            let results = reusable_results(kind, &case, &outcome.steps);
            let checks = intent::check_case_reusing(kind, &plan.script, &case, options, &results);
            CaseIntent {
                misrouted: IntentFinding::from_checks(&checks),
                unverified: IntentUnverified::from_checks(&checks),
            }
        }
        _ => CaseIntent::default(),
    };
    let schema = match schemas {
        Some(schemas) => {
            schema_check::case_findings(schemas, &plan.subject, &case, &job.path, &outcome.steps)
        }
        None => Vec::new(),
    };
    // The result keeps what front ends show (statuses, texts, diffs, findings): the `obj` each
    // step handed the script is the biggest part of a step's outcome and nothing shows it.
    let mut outcome = outcome;
    for step in &mut outcome.steps {
        step.obj = Default::default();
    }
    CaseReport {
        path: job.path.clone(),
        outcome,
        order_dependent,
        misrouted,
        intent_unverified,
        schema,
    }
}

/// What each step of a custom-provider script returned, from the run `check` just did, for the
/// intent check to reuse instead of running the script again: only where that result is the
/// one the controller sees too (no step error, no harness/production difference warning, not
/// an empty or non-table result, which the two rules encode differently). The expectation's
/// data stands for an output equal to it (already read); another output is decoded as Kruise
/// decodes a result. Ingress scripts are replayed by the intent check itself (the controller
/// chains them).
fn reusable_results(
    kind: &ScriptKind,
    case: &TestCase,
    steps: &[StepOutcome],
) -> Vec<Option<kruise_lua_engine::luadata::Data>> {
    if !matches!(kind, ScriptKind::Custom { .. }) {
        return Vec::new();
    }
    steps
        .iter()
        .map(|step| {
            let actual = step.actual.as_deref()?;
            if step.error.is_some() || !step.warnings.is_empty() || matches!(actual, "[]" | "{}") {
                return None;
            }
            match case.expected.get(step.index) {
                Some(entry) if step.actual == step.expected => Some(entry.data.clone()),
                _ => kruise_lua_engine::json::decode_custom_result(actual.as_bytes()).ok(),
            }
        })
        .collect()
}

/// What the intent check says of a case's steps.
#[derive(Debug, Clone, Default)]
pub struct CaseIntent {
    /// The steps that misroute (none when the gateway has no routing model).
    pub misrouted: Vec<IntentFinding>,
    /// The steps it could not verify, and why (every front end says so).
    pub unverified: Vec<IntentUnverified>,
}

/// The intent check of `case`: what `check`, the language server and the debugger all use.
pub fn intent_findings(
    kind: &ScriptKind,
    script: &Script,
    case: &TestCase,
    options: &RunOptions,
) -> CaseIntent {
    let checks = intent::check_case(kind, script, case, options);
    CaseIntent {
        misrouted: IntentFinding::from_checks(&checks),
        unverified: IntentUnverified::from_checks(&checks),
    }
}

/// A case that yields no step checks nothing (often a typo: `step:` for `steps:`, which Kruise
/// ignores), so it is an error rather than a green case: at the engine's "steps is empty"
/// warning when there is one (it names the empty list), with the other warnings kept.
fn no_steps(case: &TestCase) -> CaseOutcome {
    const EMPTY: &str = "steps is empty";
    let reason = case
        .warnings
        .iter()
        .find(|warning| warning.message.contains(EMPTY));
    let error = CaseError {
        message: format!(
            "the case yields no step, so it checks nothing{}",
            reason
                .map(|warning| format!(" ({})", warning.message))
                .unwrap_or_default()
        ),
        span: reason.and_then(|warning| warning.span),
    };
    CaseOutcome {
        case_error: Some(error),
        warnings: case
            .warnings
            .iter()
            .filter(|warning| !warning.message.contains(EMPTY))
            .cloned()
            .collect(),
        steps: Vec::new(),
    }
}

/// Runs every step of a case, each as its own task (a fresh Lua state per step).
fn run_steps(
    plan: &Planned,
    case: &TestCase,
    mode: Mode,
    options: &RunOptions,
) -> Vec<StepOutcome> {
    (0..case.steps.len())
        .into_par_iter()
        .map(|index| {
            run_case_step(StepToRun {
                script: &plan.script,
                flavor: plan.flavor,
                case,
                index,
                mode,
                options,
            })
        })
        .collect()
}

/// What must stay the same across key orders for a step to be deterministic.
type StepResult = (Verdict, Option<String>, Option<&'static str>);

fn step_results(steps: &[StepOutcome]) -> Vec<StepResult> {
    steps
        .iter()
        .map(|step| {
            (
                step.status.into(),
                step.actual.clone(),
                step.error.as_ref().map(|error| error.kind.as_str()),
            )
        })
        .collect()
}

/// Reruns the case `runs` times with shuffled key orders and reports steps whose result
/// differs from the sorted-order run.
fn order_findings(
    plan: &Planned,
    case: &TestCase,
    base: &CaseOutcome,
    mode: Mode,
    options: &RunOptions,
    runs: u32,
) -> Vec<OrderFinding> {
    let reruns: Vec<Vec<StepResult>> = (0..runs)
        .into_par_iter()
        .map(|run| {
            let options = RunOptions {
                key_order: KeyOrder::Shuffled(shuffle_seed(run)),
                ..*options
            };
            step_results(&run_steps(plan, case, mode, &options))
        })
        .collect();
    let base_results = step_results(&base.steps);
    let mut findings = Vec::new();
    // Located once per case, and only when some step turns out order-dependent.
    let mut calls: Option<Vec<Location>> = None;
    for (index, base_result) in base_results.iter().enumerate() {
        let mut distinct: BTreeSet<&StepResult> = BTreeSet::from([base_result]);
        let mut sample = None;
        for rerun in &reruns {
            if let Some(result) = rerun.get(index) {
                distinct.insert(result);
                if result != base_result && sample.is_none() {
                    sample = Some(describe_difference(base_result, result));
                }
            }
        }
        if let Some(sample) = sample {
            findings.push(OrderFinding {
                step: base.steps[index].index,
                distinct: distinct.len(),
                runs: reruns.len() + 1,
                sample,
                pairs_calls: calls.get_or_insert_with(|| pairs_calls(plan, case)).clone(),
            });
        }
    }
    findings
}

/// How a shuffled run's result differs from the sorted-order one: the differing JSON paths
/// with both values when both are results, else the other run's result or error.
fn describe_difference(sorted: &StepResult, other: &StepResult) -> String {
    if let ((_, Some(sorted), None), (_, Some(other), None)) = (sorted, other)
        && let Some(diffs) = diff_canonical(sorted, other)
        && !diffs.is_empty()
    {
        const SHOWN: usize = 5;
        let mut listed: Vec<String> = diffs
            .iter()
            .take(SHOWN)
            .map(|(path, sorted, other)| {
                format!(
                    "{}: {} (sorted order: {})",
                    format_path(path),
                    short_value(other.as_ref()),
                    short_value(sorted.as_ref())
                )
            })
            .collect();
        if diffs.len() > SHOWN {
            listed.push(format!("and {} more", diffs.len() - SHOWN));
        }
        return listed.join("; ");
    }
    match other {
        (_, _, Some(kind)) => format!("a {kind} error"),
        (_, Some(actual), None) => actual.clone(),
        (_, None, None) => "no result".to_string(),
    }
}

/// Where the script loops with `pairs()` in a way whose order can reach its result (the
/// KL005 lint's findings, with the shape of the case's specs as the language server gives
/// it), mapped to the script's file and line.
fn pairs_calls(plan: &Planned, case: &TestCase) -> Vec<Location> {
    let source = plan.script.source();
    let specs: Vec<_> = case
        .steps
        .iter()
        .filter_map(|step| step.obj.data.spec.clone())
        .collect();
    let shape = (!specs.is_empty()).then(|| analysis::infer_spec_shape(&specs));
    let analysis = analysis::analyze_script(
        source,
        plan.flavor,
        &LintConfig::default(),
        shape.as_ref(),
        None,
    );
    analysis
        .diagnostics
        .iter()
        .filter(|diagnostic| diagnostic.code == PAIRS_LINT)
        .map(|diagnostic| {
            let before = &source[..diagnostic.range.start.min(source.len())];
            let lua_line = before.matches('\n').count() as u32 + 1;
            Location {
                file: plan.header.path.clone(),
                line: Some(plan.header.file_line(lua_line)),
            }
        })
        .collect()
}

/// The lint that finds `pairs()` loops over Go maps whose order reaches the result.
const PAIRS_LINT: &str = "KL005";

/// The seed of shuffled run `run` (SplitMix64 of the run number, so every run differs and
/// reports are reproducible).
fn shuffle_seed(run: u32) -> u64 {
    let mut z = 0x6b72_7569_7365_6c75u64
        .wrapping_add((u64::from(run) + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reusing `check`'s step results gives the intent check the same findings as running
    /// the script again, on every custom-provider case of the library.
    #[test]
    fn reused_results_give_the_same_intent_findings() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../lua_configuration");
        let options = RunOptions::default();
        let mut compared = 0;
        for entry in kruise_lua_engine::discovery::discover(&root).unwrap() {
            if !matches!(entry.kind, ScriptKind::Custom { .. }) {
                continue;
            }
            let script = Script::new(entry.source.as_str());
            for path in entry.cases.into_iter().flatten() {
                let case = parse_case(&std::fs::read_to_string(&path).unwrap()).unwrap();
                let steps: Vec<StepOutcome> = (0..case.steps.len())
                    .map(|index| {
                        run_case_step(StepToRun {
                            script: &script,
                            flavor: kruise_lua_engine::script::ScriptFlavor::Custom,
                            case: &case,
                            index,
                            mode: Mode::Harness,
                            options: &options,
                        })
                    })
                    .collect();
                let results = reusable_results(&entry.kind, &case, &steps);
                assert!(results.iter().any(Option::is_some), "{}", path.display());
                let reused =
                    intent::check_case_reusing(&entry.kind, &script, &case, &options, &results);
                let ran = intent::check_case(&entry.kind, &script, &case, &options);
                assert_eq!(reused, ran, "{}", path.display());
                compared += 1;
            }
        }
        assert!(compared > 30, "{compared}");
    }

    #[test]
    fn seeds_differ_per_run() {
        let seeds: BTreeSet<u64> = (0..100).map(shuffle_seed).collect();
        assert_eq!(seeds.len(), 100);
    }
}
