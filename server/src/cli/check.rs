//! `kruise-lua check [PATH...]`: finds scripts and their test cases, runs every case in
//! parallel (each engine call makes its own Lua states), and prints the report in walk order.
//!
//! PATHs are `lua_configuration` trees, single `trafficRouting.lua` files (with their sibling
//! `testdata`), or `kruise-rollout-configuration` ConfigMap manifests. A ConfigMap's scripts
//! take the test cases of the same `<group>/<Kind>` (or ingress class) from the first tree
//! among the other PATHs that has it, in argument order — the ConfigMap is what the
//! controller runs in place of the tree's script, so it has to pass the same cases.
//!
//! `--shuffle N` reruns each case N more times with `obj`'s maps built in shuffled key order
//! (fixed seeds, so runs are reproducible). A step whose result changes depends on the order
//! `pairs()` visits keys; in the controller that order is random, so its output would be
//! nondeterministic: such a step counts as a finding and makes the exit code 1.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;
use kruise_lua_engine::discovery::{ScriptEntry, ScriptKind, ScriptOrigin, discover};
use kruise_lua_engine::json::KeyOrder;
use kruise_lua_engine::runner::{
    CaseOutcome, Mode, RunOptions, ScriptFlavor, StepOutcome, StepStatus, run_case_step,
};
use kruise_lua_engine::testcase::{CaseError, TestCase, parse_case};
use rayon::prelude::*;

use super::report::{self, CaseReport, Format, OrderFinding, Report, ScriptReport, Summary};
use super::{ColorArg, LimitArgs, ModeArg, UsageError, existing, paths};

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// lua_configuration trees, trafficRouting.lua scripts, or ConfigMap manifests
    #[arg(value_name = "PATH", default_value = "lua_configuration")]
    pub paths: Vec<PathBuf>,
    /// Verdict rules: the unit-test harness's (default) or the controller's
    #[arg(long, value_enum, default_value_t = ModeArg::Harness)]
    pub mode: ModeArg,
    /// Report format
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// Only scripts or cases whose path contains SUBSTR (repeatable, or a comma list)
    #[arg(long = "filter", value_name = "SUBSTR", value_delimiter = ',')]
    pub filters: Vec<String>,
    /// Rerun each case N times with obj's keys in shuffled order and report steps whose
    /// result changes (they depend on pairs() order; exit code 1)
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub shuffle: u32,
    #[command(flatten)]
    pub limits: LimitArgs,
    /// Colour the human report
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = ColorArg::Auto)]
    pub color: ColorArg,
}

/// A script ready to run: its report header, source, and the cases to run.
struct Planned {
    header: ScriptReport,
    source: String,
    flavor: ScriptFlavor,
    jobs: Vec<Job>,
}

/// One case file to run (or a problem found before running it).
struct Job {
    path: String,
    input: Result<String, CaseError>,
}

pub fn execute(args: CheckArgs) -> Result<u8, UsageError> {
    let filters: Vec<String> = args
        .filters
        .iter()
        .map(|f| f.trim().to_string())
        .filter(|f| !f.is_empty())
        .collect();
    let planned = plan(&args.paths, &filters)?;
    let mut options = args.limits.run_options();
    options.key_order = KeyOrder::Sorted;
    let report = run(planned, args.mode.into(), &options, args.shuffle);
    let summary = Summary::of(&report);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let written = report::write(&report, args.format, args.color.enabled(), &mut out)
        .and_then(|_| out.flush());
    if let Err(err) = written
        && err.kind() != std::io::ErrorKind::BrokenPipe
    {
        return Err(UsageError(format!("writing the report: {err}")));
    }
    Ok(summary.exit_code())
}

/// Discovers every PATH, pairs ConfigMap scripts with test cases, applies the filters and
/// reads the case files (unreadable files are usage errors, exit 2).
fn plan(roots: &[PathBuf], filters: &[String]) -> Result<Vec<Planned>, UsageError> {
    let mut found: Vec<(PathBuf, ScriptEntry)> = Vec::new();
    for root in roots {
        existing(root)?;
        let entries = discover(root).map_err(|err| UsageError::io(root, &err))?;
        if entries.is_empty() {
            return Err(UsageError(format!(
                "{}: no trafficRouting.lua script or ConfigMap script found",
                paths::display(root)
            )));
        }
        found.extend(entries.into_iter().map(|entry| (root.clone(), entry)));
    }

    let mut planned = Vec::new();
    for (root, entry) in &found {
        let header = header(root, entry);
        let cases = cases_of(root, entry, &found);
        let script_matches =
            filters.is_empty() || filters.iter().any(|f| header.id().contains(f.as_str()));
        let has_cases = cases.as_ref().is_ok_and(|cases| !cases.is_empty());
        let mut jobs = Vec::new();
        match cases {
            Ok(case_paths) => {
                for case_path in case_paths {
                    let path = paths::display(&case_path);
                    if script_matches || filters.iter().any(|f| path.contains(f.as_str())) {
                        jobs.push(Job {
                            input: read_case(&case_path)?,
                            path,
                        });
                    }
                }
            }
            Err((path, error)) => {
                if script_matches {
                    jobs.push(Job {
                        path,
                        input: Err(error),
                    });
                }
            }
        }
        if !script_matches && jobs.is_empty() {
            continue;
        }
        let mut header = header;
        let flavor = match &entry.kind {
            ScriptKind::Custom { .. } => ScriptFlavor::Custom,
            ScriptKind::Ingress { class } => {
                // Ingress-class scripts rarely have test cases; without any there is nothing
                // to run (unlike a custom provider, where Kruise's test requires testdata).
                if !has_cases {
                    header.skipped =
                        Some(format!("ingress-class script `{class}` has no test cases"));
                    jobs.clear();
                }
                ScriptFlavor::Ingress
            }
        };
        planned.push(Planned {
            header,
            source: entry.source.clone(),
            flavor,
            jobs,
        });
    }
    if planned.is_empty() && !filters.is_empty() {
        return Err(UsageError(format!(
            "--filter {} matched no script or case",
            filters.join(",")
        )));
    }
    Ok(planned)
}

/// The report header of a discovered script.
fn header(root: &Path, entry: &ScriptEntry) -> ScriptReport {
    let (path, key, first_line) = match &entry.origin {
        ScriptOrigin::File(path) => (under_root(root, path), None, 1),
        ScriptOrigin::ConfigMap { path, key, line } => {
            (under_root(root, path), Some(key.clone()), *line)
        }
    };
    let case_base = match &entry.origin {
        ScriptOrigin::File(_) => path.parent().map(paths::display).unwrap_or_default(),
        ScriptOrigin::ConfigMap { .. } => String::new(),
    };
    ScriptReport {
        path: paths::display(&path),
        key,
        first_line,
        case_base,
        cases: Vec::new(),
        skipped: None,
    }
}

/// The case files of `entry`, or the (display path, error) to report instead. A ConfigMap
/// script without cases of its own takes those of the first tree script of the same kind.
fn cases_of(
    root: &Path,
    entry: &ScriptEntry,
    found: &[(PathBuf, ScriptEntry)],
) -> Result<Vec<PathBuf>, (String, CaseError)> {
    let own = |root: &Path, entry: &ScriptEntry| match &entry.cases {
        Ok(cases) => Ok(cases
            .iter()
            .map(|case| under_root(root, case))
            .collect::<Vec<_>>()),
        Err(error) => Err((missing_testdata_path(root, entry), error.clone())),
    };
    let ScriptOrigin::ConfigMap { path, .. } = &entry.origin else {
        return own(root, entry);
    };
    if let Ok(cases) = &entry.cases
        && !cases.is_empty()
    {
        return own(root, entry);
    }
    let tree = found.iter().find(|(_, other)| {
        other.kind == entry.kind && matches!(other.origin, ScriptOrigin::File(_))
    });
    match tree {
        Some((tree_root, other)) => own(tree_root, other),
        None => {
            let what = match &entry.kind {
                ScriptKind::Custom { group, kind } => format!("{group}/{kind}"),
                ScriptKind::Ingress { class } => format!("ingress class {class}"),
            };
            Err((
                paths::display(&under_root(root, path)),
                CaseError {
                    message: format!(
                        "no test cases for {what}: also pass the lua_configuration tree holding {what}/testdata"
                    ),
                    span: None,
                },
            ))
        }
    }
}

/// Where a script's `testdata` folder should be, for reporting its absence.
fn missing_testdata_path(root: &Path, entry: &ScriptEntry) -> String {
    match &entry.origin {
        ScriptOrigin::File(path) => {
            let path = under_root(root, path);
            paths::display(&path.parent().unwrap_or(Path::new("")).join("testdata"))
        }
        ScriptOrigin::ConfigMap { path, .. } => paths::display(&under_root(root, path)),
    }
}

/// A path from discovery as the user gave it: discovery may return paths below `root`
/// already, or relative to it.
fn under_root(root: &Path, path: &Path) -> PathBuf {
    if path.is_absolute() || path.starts_with(root) || root == path {
        return path.to_path_buf();
    }
    if root.is_dir() {
        root.join(path)
    } else {
        root.parent().unwrap_or(Path::new("")).join(path)
    }
}

/// Reads a case file. I/O failures are usage errors; a folder or non-UTF-8 text is a case
/// error (Kruise's test fails on those too).
fn read_case(path: &Path) -> Result<Result<String, CaseError>, UsageError> {
    let metadata = std::fs::metadata(path).map_err(|err| UsageError::io(path, &err))?;
    if metadata.is_dir() {
        return Ok(Err(CaseError {
            message: "is a directory, not a test case file".to_string(),
            span: None,
        }));
    }
    let bytes = std::fs::read(path).map_err(|err| UsageError::io(path, &err))?;
    Ok(String::from_utf8(bytes).map_err(|_| CaseError {
        message: "the file is not valid UTF-8".to_string(),
        span: None,
    }))
}

/// Runs every job in parallel and assembles the report in plan order.
fn run(planned: Vec<Planned>, mode: Mode, options: &RunOptions, shuffle: u32) -> Report {
    let work: Vec<(usize, &Job)> = planned
        .iter()
        .enumerate()
        .flat_map(|(index, plan)| plan.jobs.iter().map(move |job| (index, job)))
        .collect();
    let results: Vec<CaseReport> = work
        .par_iter()
        .map(|(index, job)| run_job(&planned[*index], job, mode, options, shuffle))
        .collect();
    let mut scripts: Vec<ScriptReport> = planned.iter().map(|plan| plan.header.clone()).collect();
    for ((index, _), result) in work.iter().zip(results) {
        scripts[*index].cases.push(result);
    }
    Report {
        scripts,
        shuffle_runs: shuffle,
    }
}

fn run_job(
    plan: &Planned,
    job: &Job,
    mode: Mode,
    options: &RunOptions,
    shuffle: u32,
) -> CaseReport {
    let failed = |error: CaseError| CaseReport {
        path: job.path.clone(),
        outcome: CaseOutcome {
            case_error: Some(error),
            warnings: Vec::new(),
            steps: Vec::new(),
        },
        order_dependent: Vec::new(),
    };
    let text = match &job.input {
        Ok(text) => text,
        Err(error) => return failed(error.clone()),
    };
    let case = match parse_case(text) {
        Ok(case) => case,
        Err(error) => return failed(error),
    };
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
    CaseReport {
        path: job.path.clone(),
        outcome,
        order_dependent,
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
        .map(|index| run_case_step(&plan.source, plan.flavor, case, index, mode, options))
        .collect()
}

/// What must stay the same across key orders for a step to be deterministic.
type StepResult = (u8, Option<String>, Option<&'static str>);

fn step_results(outcome: &CaseOutcome) -> Vec<StepResult> {
    outcome
        .steps
        .iter()
        .map(|step| {
            let status = match step.status {
                StepStatus::Pass => 0,
                StepStatus::Fail => 1,
                StepStatus::Error => 2,
            };
            (
                status,
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
            let steps = run_steps(plan, case, mode, &options);
            step_results(&CaseOutcome {
                case_error: None,
                warnings: Vec::new(),
                steps,
            })
        })
        .collect();
    let base_results = step_results(base);
    let mut findings = Vec::new();
    for (index, base_result) in base_results.iter().enumerate() {
        let mut distinct: BTreeSet<&StepResult> = BTreeSet::from([base_result]);
        let mut sample = None;
        for rerun in &reruns {
            if let Some(result) = rerun.get(index) {
                distinct.insert(result);
                if result != base_result && sample.is_none() {
                    sample = Some(describe_result(result));
                }
            }
        }
        if let Some(sample) = sample {
            findings.push(OrderFinding {
                step: base.steps[index].index,
                distinct: distinct.len(),
                runs: reruns.len() + 1,
                sample,
            });
        }
    }
    findings
}

fn describe_result(result: &StepResult) -> String {
    match result {
        (_, _, Some(kind)) => format!("a {kind} error"),
        (_, Some(actual), None) => actual.clone(),
        (_, None, None) => "no result".to_string(),
    }
}

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

    #[test]
    fn seeds_differ_per_run() {
        let seeds: BTreeSet<u64> = (0..100).map(shuffle_seed).collect();
        assert_eq!(seeds.len(), 100);
    }

    #[test]
    fn discovery_paths_are_shown_as_given() {
        let root = Path::new("lua_configuration");
        let below = Path::new("lua_configuration/a.io/K/trafficRouting.lua");
        assert_eq!(under_root(root, below), below);
        let file = Path::new("/tmp/x/trafficRouting.lua");
        assert_eq!(under_root(file, file), file);
    }
}
