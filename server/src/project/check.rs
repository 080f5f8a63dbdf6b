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
use kruise_lua_engine::luadata::Data;
use kruise_lua_engine::path_text::format_path;
use kruise_lua_engine::runner::{Mode, RunOptions, Script};
use kruise_lua_engine::script::{ScriptFlavor, ScriptKind};
use kruise_lua_engine::steps::{
    CaseOutcome, ControllerIngressResult, StepOutcome, StepToRun, diff_canonical, run_case_step,
    short_value,
};
use kruise_lua_engine::testcase::{CaseError, TestCase, parse_case};
use rayon::prelude::*;

use super::crd_sources::CrdSources;
use super::intent::{IntentFinding, IntentUnverified};
use super::schema_check::{self, CaseSchema, SchemaSubject};
use super::step_resources::{StepResources, output_data};
use super::targets::{Job, Planned};
use super::verdict::{CaseReport, Location, Note, OrderFinding, Report, ScriptReport, Verdict};
use crate::analysis::{self, LintConfig};

/// What a run checks besides the expected results.
#[derive(Debug, Clone, Copy)]
pub struct Checks {
    pub mode: Mode,
    /// Shuffled-key-order reruns per case (`--shuffle`).
    pub shuffle: u32,
    /// Whether to run the intent check (`--no-intent` turns it off).
    pub intent: bool,
    /// Whether a case's steps (and shuffled reruns) run as tasks of the current rayon pool;
    /// the editor's one-thread lanes run them in turn on the run's own thread instead.
    pub parallel_steps: bool,
}

/// Runs every job in parallel and assembles the report in plan order; with `schemas`, each
/// step's output and expectation are validated too, and the CRD sources that could not be
/// used are the report's errors.
pub fn run(
    planned: Vec<Planned>,
    checks: Checks,
    options: &RunOptions,
    schemas: Option<&CrdSources>,
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
        crd_errors: crd_errors(schemas),
    }
}

/// The errors about the CRD sources of a run that could not be used (none with `--no-schema`).
pub fn crd_errors(schemas: Option<&CrdSources>) -> Vec<Note> {
    schemas
        .map(|sources| sources.problems.iter().map(Note::crd_not_loaded).collect())
        .unwrap_or_default()
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
    schemas: Option<&CrdSources>,
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
        // Each worker keeps the patterns it compiles for the cases it takes next.
        let results: Vec<CaseReport> =
            super::workers::map_keeping_patterns(&work, |(index, job)| {
                run_job(&batch[*index], job, checks, options, schemas)
            });
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
    schemas: Option<&CrdSources>,
) -> CaseReport {
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
        schema_not_checked: None,
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
            schema_not_checked: None,
        };
    }
    let locate = |lua_line: u32| Location {
        file: plan.header.path.clone(),
        line: Some(plan.header.file_line(lua_line)),
    };
    let to_run = CaseToRun {
        script: &plan.script,
        flavor: plan.flavor,
        kind: plan.kind.as_ref(),
        subject: &plan.subject,
        case: &case,
        case_path: &job.path,
        script_line: &locate,
    };
    let Some(checked) = check_case(&to_run, checks, options, schemas, &|| false) else {
        unreachable!("a run nobody cancels always ends");
    };
    // The result keeps what front ends show (statuses, texts, diffs, findings): the `obj` each
    // step handed the script is the biggest part of a step's outcome and nothing shows it.
    let mut steps = checked.steps;
    for step in &mut steps {
        step.obj = Default::default();
    }
    CaseReport {
        path: job.path.clone(),
        outcome: CaseOutcome {
            case_error: None,
            warnings: case.warnings.clone(),
            steps,
        },
        order_dependent: checked.order_dependent,
        misrouted: checked.intent.misrouted,
        intent_unverified: checked.intent.unverified,
        schema: checked.schema.findings,
        schema_not_checked: checked.schema.not_checked,
    }
}

/// A parsed case (with at least one step) and what it runs against: what [`check_case`] needs,
/// whichever front end holds the script and the case.
pub struct CaseToRun<'a> {
    pub script: &'a Script,
    pub flavor: ScriptFlavor,
    /// What the script routes (`None`: no intent check).
    pub kind: Option<&'a ScriptKind>,
    /// What its results are validated as.
    pub subject: &'a SchemaSubject,
    pub case: &'a TestCase,
    /// The case file as reports name it (schema findings point into it).
    pub case_path: &'a str,
    /// Where a line of the script is (order findings point at its `pairs()` loops).
    pub script_line: &'a (dyn Fn(u32) -> Location + Sync),
}

/// What running a case found: each step's outcome in step order and the checks' findings.
#[derive(Debug, Clone)]
pub struct CaseChecks {
    pub steps: Vec<StepOutcome>,
    pub order_dependent: Vec<OrderFinding>,
    pub intent: CaseIntent,
    pub schema: CaseSchema,
}

/// Runs a case the one way every front end runs it: each step through the engine, the intent
/// check (reusing those step results where the controller would see the same), schema
/// validation of each step's output and expectation (with `schemas`), and `checks.shuffle`
/// reruns in shuffled key order. `None` as soon as `cancelled()` says the run is superseded
/// (asked between steps; `check` never cancels).
pub fn check_case(
    to_run: &CaseToRun,
    checks: Checks,
    options: &RunOptions,
    schemas: Option<&CrdSources>,
    cancelled: &(dyn Fn() -> bool + Sync),
) -> Option<CaseChecks> {
    let steps = run_steps(to_run, checks, options, cancelled)?;
    let order_dependent = if checks.shuffle > 0 {
        order_findings(to_run, &steps, checks, options)
    } else {
        Vec::new()
    };
    if cancelled() {
        return None;
    }
    let (intent, schema) = step_findings(to_run, checks, options, schemas, &steps, steps.len());
    Some(CaseChecks {
        steps,
        order_dependent,
        intent,
        schema,
    })
}

/// What the intent check and schema validation find in a case whose first steps already ran
/// (`steps`: their outcomes, from the first, in order): schema validation checks each as an
/// update of the one before, and the intent check reuses the first `reused` of them and runs
/// the other steps itself. [`check_case`] gives it every step; the debugger the steps up to
/// the one it stopped in, reusing those before it.
pub fn step_findings(
    to_run: &CaseToRun,
    checks: Checks,
    options: &RunOptions,
    schemas: Option<&CrdSources>,
    steps: &[StepOutcome],
    reused: usize,
) -> (CaseIntent, CaseSchema) {
    let case = to_run.case;
    // A custom provider's steps, each patched onto the case's `original` as Kruise writes it:
    // made once for schema validation, then handed to the intent check.
    let schema_resources = match (schemas, to_run.subject) {
        (Some(_), SchemaSubject::Resource { .. }) => {
            Some(schema_check::case_resources(case, steps))
        }
        _ => None,
    };
    let schema = match schemas {
        Some(sources) => schema_check::case_schema(
            &sources.schemas,
            &sources.problems,
            to_run.subject,
            case,
            to_run.case_path,
            steps,
            schema_resources.as_ref(),
        ),
        None => CaseSchema::default(),
    };
    let reused = &steps[..reused];
    let intent = match to_run.kind.filter(|_| checks.intent) {
        Some(kind) => {
            let chained = chained_results(to_run.flavor, checks.mode, case, reused);
            let made;
            let runs = match (&chained, kind) {
                (Some(chained), _) => intent::StepRuns::Ingress(chained),
                (None, ScriptKind::Custom { .. }) => {
                    made = intent_resources(case, reused, schema_resources);
                    intent::StepRuns::Custom {
                        original: &made.original,
                        resources: made.outputs,
                    }
                }
                _ => intent::StepRuns::None,
            };
            let checked = intent::check_case_reusing(kind, to_run.script, case, options, runs);
            CaseIntent {
                misrouted: IntentFinding::from_checks(&checked),
                unverified: IntentUnverified::from_checks(&checked),
            }
        }
        None => CaseIntent::default(),
    };
    (intent, schema)
}

/// The resources of a custom provider's case the intent check reuses: the output of each of
/// `steps` that is [`reusable`], patched onto the case's `original` (it runs the other steps
/// itself). Schema validation's (`schema`) are taken when it read the same `original` node (it
/// reads the key in any case, as Kruise's test does; the intent check as written), else they
/// are made here.
fn intent_resources(
    case: &TestCase,
    steps: &[StepOutcome],
    schema: Option<StepResources>,
) -> StepResources {
    let routed = intent::case_original(case);
    let same_node = schema_check::original_node(&case.root).map(std::ptr::from_ref)
        == routed.map(std::ptr::from_ref);
    let mut made = match schema {
        Some(made) if same_node => made,
        _ => return StepResources::new(routed, case, steps, reusable),
    };
    for (index, resource) in made.outputs.iter_mut().enumerate() {
        if !steps
            .iter()
            .any(|step| step.index == index && reusable(step))
        {
            *resource = None;
        }
    }
    made
}

/// Whether what a custom-provider step returned in the run `check` just did is the result the
/// controller sees too, for the intent check to reuse instead of running the script again: no
/// step error, no harness/production difference warning, not an empty or non-table result
/// (which the two rules encode differently). Ingress scripts are chained by the controller:
/// see [`chained_results`].
fn reusable(step: &StepOutcome) -> bool {
    step.actual
        .as_deref()
        .is_some_and(|actual| !matches!(actual, "[]" | "{}"))
        && step.error.is_none()
        && step.warnings.is_empty()
}

/// Each step of an ingress case as `check`'s own run left it, for the intent check to reuse
/// instead of replaying the case: in production mode each step ran the controller's way, on
/// the canary Ingress the earlier steps left (`steps::controller_ingress_step`), which is what
/// the intent check replays. `None` in harness mode, for a custom provider, or when a step's
/// annotations cannot be read back exactly from its output.
fn chained_results(
    flavor: ScriptFlavor,
    mode: Mode,
    case: &TestCase,
    steps: &[StepOutcome],
) -> Option<Vec<ControllerIngressResult>> {
    if flavor != ScriptFlavor::Ingress || mode != Mode::Production {
        return None;
    }
    steps
        .iter()
        .map(|step| {
            let result = match (&step.actual, &step.error) {
                (Some(actual), _) => Ok(ingress_annotations(case, step, actual)?),
                (None, Some(error)) => Err(error.clone()),
                (None, None) => return None,
            };
            Some(ControllerIngressResult {
                result,
                not_called: step.not_called,
            })
        })
        .collect()
}

/// The canary Ingress's annotations whose canonical JSON (as an ingress step's result) is
/// `actual`: the expectation's when the step passed (already read), else `actual` decoded,
/// when that reads back to the same text.
fn ingress_annotations(case: &TestCase, step: &StepOutcome, actual: &str) -> Option<Data> {
    let annotations = output_data(case, step)?.annotations.clone();
    let data = Data {
        annotations: annotations.filter(|map| !map.is_empty()),
        ..Data::default()
    };
    (data.to_canonical_json() == actual).then_some(data)
}

/// What the intent check says of a case's steps.
#[derive(Debug, Clone, Default)]
pub struct CaseIntent {
    /// The steps that misroute (none when the gateway has no routing model).
    pub misrouted: Vec<IntentFinding>,
    /// The steps it could not verify, and why (every front end says so).
    pub unverified: Vec<IntentUnverified>,
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

/// Runs every step of a case (a fresh or rewound Lua state per step): each as its own task
/// with `checks.parallel_steps`, else in turn on this thread. `None` when cancelled.
fn run_steps(
    to_run: &CaseToRun,
    checks: Checks,
    options: &RunOptions,
    cancelled: &(dyn Fn() -> bool + Sync),
) -> Option<Vec<StepOutcome>> {
    let step = |index: usize| {
        if cancelled() {
            return None;
        }
        Some(run_case_step(StepToRun {
            script: to_run.script,
            flavor: to_run.flavor,
            case: to_run.case,
            index,
            mode: checks.mode,
            options,
        }))
    };
    let count = to_run.case.steps.len();
    if checks.parallel_steps {
        (0..count).into_par_iter().map(step).collect()
    } else {
        (0..count).map(step).collect()
    }
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

/// Reruns the case `checks.shuffle` times with shuffled key orders and reports steps whose
/// result differs from the sorted-order run.
fn order_findings(
    to_run: &CaseToRun,
    base: &[StepOutcome],
    checks: Checks,
    options: &RunOptions,
) -> Vec<OrderFinding> {
    let base_results = step_results(base);
    let rerun = |run: u32| {
        let options = RunOptions {
            key_order: KeyOrder::Shuffled(shuffle_seed(run)),
            ..*options
        };
        let steps = run_steps(to_run, checks, &options, &|| false).unwrap_or_default();
        step_results(&steps)
    };
    // Folded as they finish, never collected: memory grows with the distinct results seen,
    // not with N (a Vec of N reruns was allocated up front: 24 bytes × 2^32 for a large N).
    // One `Reruns` per worker's run of consecutive reruns, merged in run order.
    let empty = || Reruns::new(base_results.len());
    let add = |mut seen: Reruns, run: u32| {
        seen.add(&base_results, rerun(run));
        seen
    };
    let reruns = if checks.parallel_steps {
        let merge = |mut left: Reruns, right: Reruns| {
            left.merge(right);
            left
        };
        (0..checks.shuffle)
            .into_par_iter()
            .fold(empty, add)
            .reduce(empty, merge)
    } else {
        (0..checks.shuffle).fold(empty(), add)
    };
    let mut findings = Vec::new();
    // Located once per case, and only when some step turns out order-dependent.
    let mut calls: Option<Vec<Location>> = None;
    for (index, (base_result, step)) in base_results.iter().zip(reruns.steps).enumerate() {
        if let Some(first_other) = &step.first_other {
            let mut distinct = step.others;
            distinct.insert(base_result.clone());
            findings.push(OrderFinding {
                step: base[index].index,
                distinct: distinct.len(),
                runs: reruns.runs + 1,
                sample: describe_difference(base_result, first_other),
                pairs_calls: calls.get_or_insert_with(|| pairs_calls(to_run)).clone(),
            });
        }
    }
    findings
}

/// What shuffled reruns gave, per step, merged run by run in run order.
struct Reruns {
    /// How many reruns were merged.
    runs: usize,
    steps: Vec<StepReruns>,
}

#[derive(Default)]
struct StepReruns {
    /// The distinct results that differ from the sorted-order run's.
    others: BTreeSet<StepResult>,
    /// The earliest run's differing result: the sample a report shows (the same at every
    /// thread count, as runs merge in run order).
    first_other: Option<StepResult>,
}

impl Reruns {
    fn new(steps: usize) -> Reruns {
        Reruns {
            runs: 0,
            steps: (0..steps).map(|_| StepReruns::default()).collect(),
        }
    }

    /// Adds one rerun's results.
    fn add(&mut self, base: &[StepResult], results: Vec<StepResult>) {
        self.runs += 1;
        for ((step, base), result) in self.steps.iter_mut().zip(base).zip(results) {
            if &result != base {
                step.first_other.get_or_insert_with(|| result.clone());
                step.others.insert(result);
            }
        }
    }

    /// Adds the reruns of `later`, all after this one's.
    fn merge(&mut self, later: Reruns) {
        self.runs += later.runs;
        for (step, later) in self.steps.iter_mut().zip(later.steps) {
            if step.first_other.is_none() {
                step.first_other = later.first_other;
            }
            step.others.extend(later.others);
        }
    }
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
fn pairs_calls(to_run: &CaseToRun) -> Vec<Location> {
    let source = to_run.script.source();
    let specs: Vec<_> = to_run
        .case
        .steps
        .iter()
        .filter_map(|step| step.obj.data.spec.clone())
        .collect();
    let shape = (!specs.is_empty()).then(|| analysis::infer_spec_shape(&specs));
    let analysis = analysis::analyze_script(
        source,
        to_run.flavor,
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
            (to_run.script_line)(lua_line)
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
                let resources =
                    StepResources::new(intent::case_original(&case), &case, &steps, reusable);
                assert!(
                    resources.outputs.iter().any(Option::is_some),
                    "{}",
                    path.display()
                );
                let reused = intent::check_case_reusing(
                    &entry.kind,
                    &script,
                    &case,
                    &options,
                    intent::StepRuns::Custom {
                        original: &resources.original,
                        resources: resources.outputs,
                    },
                );
                let ran = intent::check_case(&entry.kind, &script, &case, &options);
                assert_eq!(reused, ran, "{}", path.display());
                compared += 1;
            }
        }
        assert!(compared > 30, "{compared}");
    }

    /// An ingress case's steps as `check` runs them in production mode read back to what the
    /// intent check's own chained replay of the case gives, on every ingress case of the
    /// library and of the fixtures (failing and erroring steps included).
    #[test]
    fn ingress_step_outcomes_read_back_to_the_controller_results() {
        let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let options = RunOptions::default();
        let mut compared = 0;
        let mut roots = vec![manifest.join("../lua_configuration")];
        for fixture in std::fs::read_dir(manifest.join("../tests/fixtures")).unwrap() {
            roots.push(fixture.unwrap().path());
        }
        let (mut failing, mut erroring) = (0, 0);
        let mut compare = |script: &Script, case: &TestCase, what: &str| {
            let steps: Vec<StepOutcome> = (0..case.steps.len())
                .map(|index| {
                    run_case_step(StepToRun {
                        script,
                        flavor: ScriptFlavor::Ingress,
                        case,
                        index,
                        mode: Mode::Production,
                        options: &options,
                    })
                })
                .collect();
            let chained = chained_results(ScriptFlavor::Ingress, Mode::Production, case, &steps);
            let replayed =
                kruise_lua_engine::steps::controller_ingress_results(script, case, &options);
            assert_eq!(chained.as_ref(), Some(&replayed), "{what}");
            assert_eq!(
                chained_results(ScriptFlavor::Ingress, Mode::Harness, case, &steps),
                None
            );
            failing += steps.iter().filter(|s| s.actual != s.expected).count();
            erroring += steps.iter().filter(|s| s.actual.is_none()).count();
            compared += 1;
        };
        // A step that fails, and one the controller never gets past.
        let script = Script::new(
            r#"local a = obj.annotations or {}
if obj.weight == "30" then error("no 30") end
a["test/weight"] = obj.weight
a["test/json"] = "<\u{e9}\"\n>"
return a"#,
        );
        let case = parse_case(
            r#"rollout:
  spec:
    strategy:
      canary:
        trafficRoutings:
        - service: web
          ingress:
            name: web
        steps:
        - traffic: "10%"
        - traffic: "30%"
        - traffic: "50%"
original:
  apiVersion: networking.k8s.io/v1
  kind: Ingress
  metadata:
    name: web
expected:
- apiVersion: networking.k8s.io/v1
  kind: Ingress
  metadata:
    annotations:
      test/weight: "10"
"#,
        )
        .unwrap();
        compare(&script, &case, "inline");
        for root in roots {
            let Ok(entries) = kruise_lua_engine::discovery::discover(&root) else {
                continue;
            };
            for entry in entries {
                if !matches!(entry.kind, ScriptKind::Ingress { .. }) {
                    continue;
                }
                let script = Script::new(entry.source.as_str());
                for path in entry.cases.into_iter().flatten() {
                    let Ok(case) = parse_case(&std::fs::read_to_string(&path).unwrap()) else {
                        continue;
                    };
                    compare(&script, &case, &path.display().to_string());
                }
            }
        }
        assert!(
            compared > 15 && failing > 0 && erroring > 0,
            "{compared} {failing} {erroring}"
        );
    }

    /// Schema validation and the intent check share each step's resource: the intent check's
    /// findings are the same whether schema validation runs beside it or not, also when the
    /// two read different `original`s (schema validation, as Kruise's test, reads an
    /// `Original:` key; the intent check only `original:`).
    #[test]
    fn the_intent_check_finds_the_same_with_or_without_schema_validation() {
        let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/intent/istio-small-weights");
        let script =
            Script::new(std::fs::read_to_string(fixture.join("trafficRouting.lua")).unwrap());
        let text = std::fs::read_to_string(fixture.join("testdata/case.yaml")).unwrap();
        let kind = ScriptKind::Custom {
            group: "networking.istio.io".to_owned(),
            kind: "VirtualService".to_owned(),
        };
        let subject = SchemaSubject::from(&kind);
        let schemas = CrdSources::default();
        let checks = Checks {
            mode: Mode::Harness,
            shuffle: 0,
            intent: true,
            parallel_steps: false,
        };
        let options = RunOptions::default();
        let run = |text: &str, schemas: Option<&CrdSources>| {
            let case = parse_case(text).unwrap();
            let to_run = CaseToRun {
                script: &script,
                flavor: ScriptFlavor::Custom,
                kind: Some(&kind),
                subject: &subject,
                case: &case,
                case_path: "case.yaml",
                script_line: &|line| Location {
                    file: "trafficRouting.lua".to_owned(),
                    line: Some(line),
                },
            };
            let checked = check_case(&to_run, checks, &options, schemas, &|| false).unwrap();
            (
                format!("{:?}", checked.intent.misrouted),
                format!("{:?}", checked.intent.unverified),
            )
        };
        let alone = run(&text, None);
        assert_ne!(alone.0, "[]");
        assert_eq!(run(&text, Some(&schemas)), alone);
        let renamed = text.replace("\noriginal:", "\nOriginal:");
        assert_ne!(renamed, text);
        let alone = run(&renamed, None);
        assert!(alone.1.contains("no original resource"), "{alone:?}");
        assert_eq!(run(&renamed, Some(&schemas)), alone);
    }

    #[test]
    fn seeds_differ_per_run() {
        let seeds: BTreeSet<u64> = (0..100).map(shuffle_seed).collect();
        assert_eq!(seeds.len(), 100);
    }
}
