//! `kruise-lua check [PATH...]`: finds scripts and their test cases, runs every step in
//! parallel (each step gets its own Lua state), and prints the report in walk order.
//!
//! PATHs are `lua_configuration` trees, single scripts (with their cases found as in a
//! tree), or `kruise-rollout-configuration` ConfigMap manifests. A ConfigMap script takes its
//! cases from the first tree among the PATHs that has testdata for its provider, and the
//! scripts that run follow Kruise's lookup order (the engine's [`resolve`]): the bundled script
//! wins for a custom provider, and the ConfigMap one for an ingress class. Scripts Kruise would
//! never read are listed as skipped.
//!
//! A PATH may also be a test case file: that case runs alone, with the script Kruise's test
//! pairs it with. A case that yields no step is an error (it would check nothing), and with
//! `--deny-warnings` any warning makes the exit code 1.
//!
//! `--shuffle N` reruns each case N more times with `obj`'s maps built in shuffled key order
//! (fixed seeds, so runs are reproducible). A step whose result changes depends on the order
//! `pairs()` visits keys; in the controller that order is random, so its output would be
//! nondeterministic: such a step counts as a finding and makes the exit code 1. The finding
//! names the `pairs()` loops whose order reaches the result (lint KL005) and the JSON paths
//! that differ.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use clap::Args;
use kruise_lua_engine::discovery::{
    CUSTOM_SCRIPT_NAME, EmbeddedScript, INGRESS_FOLDER, ScriptEntry, ScriptOrigin, discover,
    pair_with_testdata, read_configmap, resolve, testdata_dir,
};
use kruise_lua_engine::intent;
use kruise_lua_engine::json::KeyOrder;
use kruise_lua_engine::runner::{Mode, RunOptions, Script};
use kruise_lua_engine::script::ScriptFlavor;
use kruise_lua_engine::script::ScriptKind;
use kruise_lua_engine::steps::{
    CaseOutcome, StepOutcome, StepToRun, diff_canonical, format_path, run_case_step, short_value,
};
use kruise_lua_engine::testcase::{CaseError, TestCase, parse_case};
use rayon::prelude::*;

use super::report::{
    self, CaseReport, Format, IntentFinding, Location, Note, OrderFinding, Report, ScriptReport,
    Summary, Verdict, span_line,
};
use super::schema_check::{self, SchemaSubject};
use super::{ColorArg, InputArgs, LimitArgs, ModeArg, UsageError, paths, read_text};
use crate::analysis::{self, LintConfig};
use crate::crd_sources::{self, CrdSources, SourceProblem};
use kruise_lua_engine::schema::SchemaSet;

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// lua_configuration trees, trafficRouting.lua scripts, test case files (run with their
    /// script), or ConfigMap manifests
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
    /// Exit 1 when there is any warning (unknown case fields, results the controller would
    /// see differently, inputs Kruise would not read; with --lint, lint warnings), not only on
    /// failures and errors
    #[arg(long)]
    pub deny_warnings: bool,
    #[command(flatten)]
    pub limits: LimitArgs,
    #[command(flatten)]
    pub input: InputArgs,
    /// Colour the human report
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = ColorArg::Auto)]
    pub color: ColorArg,
    /// Also lint the scripts (as `kruise-lua lint`), in the same report
    #[arg(long)]
    pub lint: bool,
    /// Check that each step routes traffic the way it asks (the intent check; on by default
    /// for scripts whose gateway has a routing model)
    #[arg(long, overrides_with = "no_intent")]
    pub intent: bool,
    /// Skip the intent check
    #[arg(long, overrides_with = "intent")]
    pub no_intent: bool,
    /// Check again whenever a file under PATH changes (until interrupted)
    #[arg(long)]
    pub watch: bool,
    /// CustomResourceDefinition file or folder to validate results against (repeatable); wins
    /// over the `crds/` folder and kruise-lua.toml's `crds` for the same group and kind
    #[arg(long = "crd", value_name = "PATH")]
    pub crds: Vec<PathBuf>,
    /// Do not validate results and expectations against CRD schemas and Kubernetes' label and
    /// annotation rules
    #[arg(long)]
    pub no_schema: bool,
}

/// A script ready to run: its report header, source, and the cases to run.
struct Planned {
    header: ScriptReport,
    /// What the script routes (`None` for scripts listed but not run).
    kind: Option<ScriptKind>,
    /// Compiled once; every step starts from one of its prepared (rewound) states.
    script: Script,
    flavor: ScriptFlavor,
    /// What its results are validated as.
    subject: SchemaSubject,
    jobs: Vec<Job>,
}

/// One case file to run (or a problem found before running it).
struct Job {
    path: String,
    input: Result<String, CaseError>,
}

pub fn execute(args: CheckArgs) -> Result<u8, UsageError> {
    if args.lint && args.format == Format::Junit {
        return Err(UsageError(
            "--lint does not combine with --format junit (use human, json, github or sarif)"
                .to_string(),
        ));
    }
    if args.watch {
        return super::watch::check(&args);
    }
    let rendered = render(&args, &filters(&args), args.color.enabled())?;
    super::write_stdout(&rendered.report)?;
    Ok(rendered.code)
}

/// The `--filter` texts given, trimmed, without empty ones.
pub(crate) fn filters(args: &CheckArgs) -> Vec<String> {
    args.filters
        .iter()
        .map(|f| f.trim().to_string())
        .filter(|f| !f.is_empty())
        .collect()
}

/// One run's report in `args.format`, its one-line summary and exit code.
pub(crate) struct Rendered {
    pub report: Vec<u8>,
    pub summary: String,
    pub code: u8,
}

/// Runs the scripts `filters` select (and lints them, with `--lint`) and renders the report.
pub(crate) fn render(
    args: &CheckArgs,
    filters: &[String],
    color: bool,
) -> Result<Rendered, UsageError> {
    let schemas = schemas(args)?;
    let (planned, notes) = plan(&args.paths, filters, &args.input)?;
    let options = args.limits.run_options();
    let checks = Checks {
        mode: args.mode.into(),
        shuffle: args.shuffle,
        intent: !args.no_intent,
    };
    let mut report = run(
        planned,
        checks,
        &options,
        schemas.as_ref().map(|sources| &*sources.schemas),
    );
    report.notes = notes;
    let summary = Summary::of(&report);
    if matches!(args.format, Format::Json | Format::Junit) {
        // These formats have no place for remarks about the inputs themselves.
        for note in &report.notes {
            eprintln!("{}: warning: {}", note.location, note.message);
        }
    }
    let mut out = Vec::new();
    let mut rendered = Rendered {
        report: Vec::new(),
        summary: summary.line(),
        code: summary.exit_code_denying(args.deny_warnings),
    };
    if let Some(sources) = &schemas
        && !sources.problems.is_empty()
    {
        // A CRD that cannot be used leaves its kind unvalidated: never a silent pass.
        for problem in &sources.problems {
            super::write_stderr_line(&super::terminal::escape_controls(&format!(
                "{}: error: CRD not loaded: {}",
                problem_location(problem),
                problem.message
            )));
        }
        rendered.code = rendered.code.max(super::EXIT_FINDINGS);
    }
    let written = if args.lint {
        let (mut findings, files) = super::lint::lint_paths(
            &args.paths,
            &args.input,
            schemas.as_ref().map(|sources| &sources.schemas),
        )?;
        if !filters.is_empty() {
            findings.retain(|f| {
                filters
                    .iter()
                    .any(|filter| f.file.contains(filter.as_str()))
            });
        }
        rendered.code = rendered
            .code
            .max(super::lint::exit_code(&findings, args.deny_warnings));
        let lint_summary = format!(
            "lint: {}",
            super::lint_report::summary(&findings, files, None)
        );
        rendered.summary = format!("{}; {lint_summary}", rendered.summary);
        super::lint_report::write_with_check(
            &report,
            &findings,
            &lint_summary,
            args.format,
            color,
            &mut out,
        )
    } else {
        report::write(&report, args.format, color, &mut out)
    };
    written.map_err(|err| UsageError(format!("writing the report: {err}")))?;
    rendered.report = out;
    Ok(rendered)
}

/// The CRD schemas of the run (`None` with `--no-schema`): every PATH's `crds/` folder and
/// kruise-lua.toml `crds`, then `--crd` (a `--crd` path that does not exist is a usage error).
fn schemas(args: &CheckArgs) -> Result<Option<CrdSources>, UsageError> {
    if args.no_schema {
        return Ok(None);
    }
    crd_sources::for_paths(&args.paths, &args.crds).map(Some)
}

/// `file:line` of a CRD source problem (`file` alone when the line is unknown).
fn problem_location(problem: &SourceProblem) -> Location {
    Location {
        file: problem.file.clone(),
        line: Some(problem.line).filter(|line| *line > 0),
    }
}

/// Discovers every PATH, pairs ConfigMap scripts with test cases, keeps the scripts Kruise
/// would run (the engine's [`resolve`] order), applies the filters and reads the case files
/// (unreadable files are usage errors, exit 2).
fn plan(
    roots: &[PathBuf],
    filters: &[String],
    input: &InputArgs,
) -> Result<(Vec<Planned>, Vec<Note>), UsageError> {
    let mut bundled: Vec<ScriptEntry> = Vec::new();
    let mut trees: Vec<&Path> = Vec::new();
    let mut manifests: Vec<(&Path, Vec<EmbeddedScript>)> = Vec::new();
    let mut notes = Vec::new();
    let mut total = 0;
    // Entries of `bundled` made for case-file PATHs.
    let mut from_case_files: Vec<usize> = Vec::new();
    for root in roots {
        let metadata = std::fs::metadata(root).map_err(|err| UsageError::io(root, &err))?;
        let found = if metadata.is_dir() {
            trees.push(root);
            let entries = discover(root).map_err(|err| UsageError::io(root, &err))?;
            let found = entries.len();
            bundled.extend(entries);
            found
        } else if root.extension().is_some_and(|ext| ext == "lua") {
            let entries = discover_script(root)?;
            let found = entries.len();
            bundled.extend(entries);
            found
        } else if let Some(script) = script_of_case(root) {
            // A test case file runs alone, with the script Kruise's test pairs it with.
            let entries = discover_script(&script)?;
            let found = entries.len();
            for mut entry in entries {
                // Several case files of one script run under it once.
                match from_case_files
                    .iter()
                    .find(|&&at| bundled[at].origin == entry.origin)
                {
                    Some(&at) => {
                        if let Ok(cases) = &mut bundled[at].cases {
                            cases.push(root.clone());
                        }
                    }
                    None => {
                        entry.cases = Ok(vec![root.clone()]);
                        from_case_files.push(bundled.len());
                        bundled.push(entry);
                    }
                }
            }
            found
        } else {
            let text = read_text(root, input)?;
            let read = read_configmap(&text).map_err(|error| {
                let location = Location {
                    file: paths::display(root),
                    line: span_line(error.span.as_ref()),
                };
                // A test case outside a testdata folder reads as a manifest without a ConfigMap.
                let hint = if error.message.contains("no ConfigMap") {
                    format!(
                        " (a test case file runs with its script from <group>/<Kind>/testdata/ or {INGRESS_FOLDER}/testdata/<class>/)"
                    )
                } else {
                    String::new()
                };
                UsageError(format!("{location}: {}{hint}", error.message))
            })?;
            for note in read.notes {
                let location = Location {
                    file: paths::display(root),
                    line: span_line(note.span.as_ref()),
                };
                notes.push(Note {
                    location,
                    message: note.message,
                });
            }
            let found = read.scripts.len();
            manifests.push((root.as_path(), read.scripts));
            found
        };
        total += found;
    }

    // A tree may hold only the testdata of ConfigMap scripts, so only an empty whole counts.
    if total == 0 {
        let names: Vec<String> = roots.iter().map(|root| paths::display(root)).collect();
        return Err(UsageError(format!(
            "{}: no trafficRouting.lua, ingress-class or ConfigMap script found",
            names.join(", ")
        )));
    }

    // ConfigMap scripts take their cases from the first tree that has cases for them.
    let mut from_configmaps = Vec::new();
    for (manifest, scripts) in manifests {
        for script in scripts {
            let paired = trees
                .iter()
                .map(|tree| pair_with_testdata(vec![script.clone()], manifest, Some(tree)))
                .find(|entries| {
                    entries[0]
                        .cases
                        .as_ref()
                        .is_ok_and(|cases| !cases.is_empty())
                })
                .unwrap_or_else(|| pair_with_testdata(vec![script.clone()], manifest, None));
            from_configmaps.extend(paired);
        }
    }
    let ignored = ignored_scripts(&bundled, &from_configmaps);
    let entries = resolve(bundled, from_configmaps);

    let matches = |text: &str| filters.iter().any(|f| text.contains(f.as_str()));
    let mut planned = Vec::new();
    for entry in &entries {
        if let Some(error) = &entry.read_error {
            return Err(UsageError(error.clone()));
        }
        for skipped in &entry.skipped_cases {
            notes.push(Note {
                location: Location {
                    file: paths::display(&skipped.path),
                    line: None,
                },
                message: skipped.reason.clone(),
            });
        }
        let mut header = header(entry);
        let script_matches = filters.is_empty() || matches(&header.id());
        let mut jobs = Vec::new();
        match &entry.cases {
            Ok(case_paths) => {
                for case_path in case_paths {
                    let path = paths::display(case_path);
                    if script_matches || matches(&path) {
                        jobs.push(Job {
                            input: read_case(case_path, input)?,
                            path,
                        });
                    }
                }
                if case_paths.is_empty() {
                    header.skipped = no_cases_reason(entry);
                }
            }
            Err(error) => {
                if script_matches {
                    jobs.push(Job {
                        path: missing_testdata_path(entry),
                        input: Err(error.clone()),
                    });
                }
            }
        }
        if !script_matches && jobs.is_empty() {
            continue;
        }
        let flavor = ScriptFlavor::from(&entry.kind);
        let script = Script::new(entry.source.clone());
        header.syntax_error = script.syntax_error().cloned();
        planned.push(Planned {
            header,
            kind: Some(entry.kind.clone()),
            script,
            flavor,
            subject: SchemaSubject::from(&entry.kind),
            jobs,
        });
    }
    for (entry, reason) in ignored {
        let mut header = header(&entry);
        if filters.is_empty() || matches(&header.id()) {
            header.skipped = Some(reason);
            planned.push(Planned {
                header,
                kind: None,
                script: Script::new(String::new()),
                flavor: ScriptFlavor::Custom,
                subject: SchemaSubject::from(&entry.kind),
                jobs: Vec::new(),
            });
        }
    }
    if planned.is_empty() && !filters.is_empty() {
        return Err(UsageError(format!(
            "--filter {} matched no script or case",
            filters.join(",")
        )));
    }
    Ok((planned, notes))
}

/// The script a test case file belongs to, as Kruise's test pairs them: a case under
/// `<group>/<Kind>/testdata/` runs `<group>/<Kind>/trafficRouting.lua`, one under
/// `trafficrouting_ingress/testdata/<class>/` runs `trafficrouting_ingress/<class>.lua`.
/// `None` for a file outside any `testdata` folder (a ConfigMap manifest, then).
fn script_of_case(path: &Path) -> Option<PathBuf> {
    let testdata = path
        .ancestors()
        .skip(1)
        .find(|dir| dir.file_name().is_some_and(|name| name == "testdata"))?;
    let folder = testdata.parent().unwrap_or(Path::new(""));
    if folder
        .file_name()
        .is_some_and(|name| name == INGRESS_FOLDER)
    {
        let class = path.strip_prefix(testdata).ok()?.components().next()?;
        let class = class.as_os_str().to_str()?;
        // A case file directly in the ingress testdata folder has no class.
        if path.parent() == Some(testdata) {
            return None;
        }
        Some(folder.join(format!("{class}.lua")))
    } else {
        Some(folder.join(CUSTOM_SCRIPT_NAME))
    }
}

/// A single script PATH, discovered from its folder (from the ingress folder's parent for an
/// ingress-class script) so its kind and cases follow the same rules as in a tree.
pub(crate) fn discover_script(path: &Path) -> Result<Vec<ScriptEntry>, UsageError> {
    let non_empty = |dir: Option<&Path>| match dir {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let parent = non_empty(path.parent());
    let root = if parent
        .file_name()
        .is_some_and(|name| name == INGRESS_FOLDER)
    {
        non_empty(parent.parent())
    } else {
        parent.clone()
    };
    let wanted = parent.join(path.file_name().unwrap_or_default());
    let entries = discover(&root).map_err(|err| UsageError::io(&root, &err))?;
    let entries: Vec<ScriptEntry> = entries
        .into_iter()
        .filter(|entry| matches!(&entry.origin, ScriptOrigin::File(file) if *file == wanted))
        .collect();
    if entries.is_empty() {
        return Err(UsageError(format!(
            "{}: not a script Kruise would find (a path containing trafficRouting.lua, or {INGRESS_FOLDER}/<class>.lua)",
            paths::display(path)
        )));
    }
    Ok(entries)
}

/// Scripts Kruise never runs once ConfigMaps are taken into account, and why: a ConfigMap
/// custom-provider script whose provider has a bundled script (the bundled one wins), and a
/// bundled ingress-class script replaced by a ConfigMap one.
fn ignored_scripts(
    bundled: &[ScriptEntry],
    from_configmaps: &[ScriptEntry],
) -> Vec<(ScriptEntry, String)> {
    let mut ignored = Vec::new();
    for entry in from_configmaps {
        let Some(bundled_entry) = bundled.iter().find(|b| b.kind == entry.kind) else {
            continue;
        };
        match &entry.kind {
            ScriptKind::Custom { group, kind } => ignored.push((
                entry.clone(),
                format!(
                    "Kruise runs the bundled script for {group}/{kind} ({}); this ConfigMap script is never read",
                    header(bundled_entry).id()
                ),
            )),
            ScriptKind::Ingress { class } => ignored.push((
                bundled_entry.clone(),
                format!("the ConfigMap script for ingress class `{class}` ({}) replaces it", header(entry).id()),
            )),
        }
    }
    ignored
}

/// Why a script with no case files is not run (`None`: it is shown, with nothing to run).
fn no_cases_reason(entry: &ScriptEntry) -> Option<String> {
    match (&entry.origin, &entry.kind) {
        (ScriptOrigin::ConfigMap { .. }, ScriptKind::Custom { group, kind }) => Some(format!(
            "no test cases: also pass the lua_configuration tree that holds {group}/{kind}/testdata"
        )),
        (ScriptOrigin::ConfigMap { .. }, ScriptKind::Ingress { class }) => Some(format!(
            "no test cases: also pass the lua_configuration tree that holds {INGRESS_FOLDER}/testdata/{class}"
        )),
        (ScriptOrigin::File(_), ScriptKind::Ingress { class }) => Some(format!(
            "no test cases in {INGRESS_FOLDER}/testdata/{class}"
        )),
        // Kruise's test passes a custom provider whose testdata folder holds no case.
        (ScriptOrigin::File(_), ScriptKind::Custom { .. }) => None,
    }
}

/// The report header of a discovered script (discovery keeps PATHs as given).
fn header(entry: &ScriptEntry) -> ScriptReport {
    let (path, key, first_line) = match &entry.origin {
        ScriptOrigin::File(path) => (path.clone(), None, 1),
        ScriptOrigin::ConfigMap { path, key, line } => (path.clone(), Some(key.clone()), *line),
    };
    let case_base = match (&entry.origin, &entry.cases) {
        (ScriptOrigin::File(_), _) => path.parent().map(paths::display).unwrap_or_default(),
        // A ConfigMap script's cases live in a tree: name them from their testdata folder on.
        (ScriptOrigin::ConfigMap { .. }, Ok(cases)) => cases
            .first()
            .and_then(|case| {
                case.ancestors()
                    .find(|dir| dir.file_name().is_some_and(|n| n == "testdata"))
            })
            .and_then(Path::parent)
            .map(paths::display)
            .unwrap_or_default(),
        (ScriptOrigin::ConfigMap { .. }, Err(_)) => String::new(),
    };
    ScriptReport {
        path: paths::display(&path),
        key,
        first_line,
        case_base,
        cases: Vec::new(),
        skipped: None,
        syntax_error: None,
    }
}

/// Where a script's `testdata` folder should be, for reporting its absence.
fn missing_testdata_path(entry: &ScriptEntry) -> String {
    match &entry.origin {
        ScriptOrigin::File(path) => paths::display(&testdata_dir(
            path.parent().unwrap_or(Path::new("")),
            &entry.kind,
        )),
        ScriptOrigin::ConfigMap { path, .. } => paths::display(path),
    }
}

/// Reads a case file. I/O failures are usage errors; a folder, non-UTF-8 text or a file
/// over `--max-input-size` is a case error (Kruise's test fails on the first two too).
fn read_case(path: &Path, input: &InputArgs) -> Result<Result<String, CaseError>, UsageError> {
    use kruise_lua_engine::input::{self, ReadError};
    match input::read_text(path, input.limit_bytes()) {
        Ok(text) => Ok(Ok(text)),
        Err(ReadError::Io(err)) => Err(UsageError::io(path, &err)),
        Err(ReadError::NotRegular {
            what: "a directory",
        }) => Ok(Err(CaseError {
            message: "is a directory, not a test case file".to_string(),
            span: None,
        })),
        Err(ReadError::NotUtf8 { line, column }) => {
            let at = kruise_lua_engine::yaml::Pos {
                line,
                column,
                offset: 0,
            };
            Ok(Err(CaseError {
                message: format!(
                    "byte {column} is not valid UTF-8 (kruise-lua reads UTF-8 text only)"
                ),
                span: Some(kruise_lua_engine::yaml::Span { start: at, end: at }),
            }))
        }
        Err(other) => Ok(Err(CaseError {
            message: other.to_string(),
            span: None,
        })),
    }
}

/// What a run checks besides the expected results.
#[derive(Debug, Clone, Copy)]
struct Checks {
    mode: Mode,
    /// Shuffled-key-order reruns per case (`--shuffle`).
    shuffle: u32,
    /// Whether to run the intent check (`--no-intent` turns it off).
    intent: bool,
}

/// Runs every job in parallel and assembles the report in plan order; with `schemas`, each
/// step's output and expectation are validated too.
fn run(
    planned: Vec<Planned>,
    checks: Checks,
    options: &RunOptions,
    schemas: Option<&SchemaSet>,
) -> Report {
    let Checks { shuffle, .. } = checks;
    let work: Vec<(usize, &Job)> = planned
        .iter()
        .enumerate()
        .flat_map(|(index, plan)| plan.jobs.iter().map(move |job| (index, job)))
        .collect();
    let results: Vec<CaseReport> = work
        .par_iter()
        .map(|(index, job)| run_job(&planned[*index], job, checks, options, schemas))
        .collect();
    let mut scripts: Vec<ScriptReport> = planned.iter().map(|plan| plan.header.clone()).collect();
    for ((index, _), result) in work.iter().zip(results) {
        scripts[*index].cases.push(result);
    }
    Report {
        scripts,
        shuffle_runs: shuffle,
        notes: Vec::new(),
    }
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
    let misrouted = match (&plan.kind, checks.intent) {
        (Some(kind), true) => intent::check_case(kind, &plan.script, &case, options)
            .map(|steps| IntentFinding::from_checks(&steps))
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    let schema = match schemas {
        Some(schemas) => {
            schema_check::case_findings(schemas, &plan.subject, &case, &job.path, &outcome.steps)
        }
        None => Vec::new(),
    };
    CaseReport {
        path: job.path.clone(),
        outcome,
        order_dependent,
        misrouted,
        schema,
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

    #[test]
    fn seeds_differ_per_run() {
        let seeds: BTreeSet<u64> = (0..100).map(shuffle_seed).collect();
        assert_eq!(seeds.len(), 100);
    }
}
