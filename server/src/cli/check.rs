//! `kruise-lua check [PATH...]`: the command line over the project layer. PATHs become scripts
//! and cases as [`crate::project::targets`] resolves them (trees, scripts, case files,
//! ConfigMap manifests), each case runs as [`crate::project::check`] runs it (steps, intent,
//! schema, `--shuffle N` reruns in shuffled key order), and the report is printed in walk order
//! in `--format`, with the verdicts and exit code [`crate::project::verdict`] decides. With
//! `--deny-warnings` any warning makes the exit code 1; `--watch` reruns the scripts whose
//! files changed.

use std::path::PathBuf;

use clap::Args;

use super::options::{ColorArg, InputArgs, LimitArgs, ModeArg};
use super::report::stream::ReportStream;
use super::report::{self, Format};
use crate::project::UsageError;
use crate::project::check::{Checks, crd_errors, run, run_each};
use crate::project::crd_sources::{self, CrdSources};
use crate::project::targets::plan;
use crate::project::verdict::{Note, Summary};

/// The most `--shuffle` reruns. Each reruns every step of every case; a few dozen catch a
/// script that depends on key order (each run is a fresh random order), and a thousand
/// already take a thousand times a plain check, so a larger N is a typo or a hang.
pub const MAX_SHUFFLE: u32 = 1000;

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
    /// result changes (they depend on pairs() order; exit code 1). N is 0 (off) to 1000: each
    /// rerun runs every step again, so --shuffle 100 takes about 100 times as long
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=MAX_SHUFFLE as i64))]
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

pub fn execute(args: CheckArgs) -> Result<u8, UsageError> {
    if args.lint && args.format == Format::Junit {
        return Err(UsageError(
            "--lint does not combine with --format junit (use human, json, github or sarif)"
                .to_string(),
        ));
    }
    if args.watch {
        return watch(&args);
    }
    if !args.lint && ReportStream::streams(args.format) {
        return stream(&args, &filters(&args), args.color.enabled());
    }
    let schemas = schemas(&args)?;
    let rendered = render_with(
        &args,
        &filters(&args),
        args.color.enabled(),
        schemas.as_ref(),
    )?;
    leave_for_exit(schemas);
    super::options::write_stdout(&rendered.report)?;
    Ok(rendered.code)
}

/// Runs the scripts `filters` select and writes the report to stdout while they run, a script
/// at a time (see [`ReportStream`]); the exit code.
fn stream(args: &CheckArgs, filters: &[String], color: bool) -> Result<u8, UsageError> {
    let schemas = schemas(args)?;
    let (planned, notes) = plan(&args.paths, filters, args.input.limit_bytes())?;
    let checks = Checks {
        mode: args.mode.into(),
        shuffle: args.shuffle,
        intent: !args.no_intent,
        parallel_steps: true,
    };
    let crd_errors = crd_errors(schemas.as_ref());
    echo_inputs(args.format, &notes, &crd_errors);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let written = (|| {
        let mut stream = ReportStream::begin(args.format, color, &notes, &crd_errors, &mut out)?;
        run_each(
            planned,
            checks,
            &args.limits.run_options(),
            schemas.as_ref(),
            &mut |script| stream.script(&script),
        )?;
        stream.end(args.shuffle)
    })();
    leave_for_exit(schemas);
    match written {
        Ok(summary) => Ok(summary.exit_code_denying(args.deny_warnings)),
        // A closed pipe (`| head`) ends the command quietly, as `write_stdout` does.
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => Ok(super::options::EXIT_OK),
        Err(err) => Err(UsageError(format!(
            "writing the report: {}",
            crate::project::io_message(&err)
        ))),
    }
}

/// Writes on stderr what a format's report does not show of the inputs: the remarks about
/// them for JSON and JUnit, which have no place for them; and the CRD errors (which every
/// format's report carries) for the formats read by machines, whose stdout often goes to a
/// file nobody looks at: the run exits 1, and the log says why. The human report shows both.
fn echo_inputs(format: Format, notes: &[Note], crd_errors: &[Note]) {
    if format != Format::Human {
        for error in crd_errors {
            super::options::write_stderr_line(&super::terminal::escape_controls(&format!(
                "{}: error: {}",
                error.location, error.message
            )));
        }
    }
    if matches!(format, Format::Json | Format::Junit) {
        for note in notes {
            eprintln!("{}: warning: {}", note.location, note.message);
        }
    }
}

/// `check --watch`: the first run checks everything PATH holds; later runs only the scripts
/// whose folder (script, `testdata`) holds a changed file, unless `--filter` was given or the
/// change is elsewhere (a ConfigMap, `kruise-lua.toml`), which reruns everything.
fn watch(args: &CheckArgs) -> Result<u8, UsageError> {
    let user_filters = filters(args);
    let color = args.color.enabled();
    super::watch::watch(&args.paths, &mut |changed| {
        let scoped = if user_filters.is_empty() && !changed.is_empty() {
            super::watch::script_filters(&args.paths, changed)
        } else {
            None
        };
        let filters = scoped.unwrap_or_else(|| user_filters.clone());
        let rendered = render(args, &filters, color)?;
        Ok(super::watch::Outcome {
            summary: rendered.summary,
            report: rendered.report,
        })
    })
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
    render_with(args, filters, color, schemas(args)?.as_ref())
}

/// [`render`] with the run's CRD schemas loaded already.
fn render_with(
    args: &CheckArgs,
    filters: &[String],
    color: bool,
    schemas: Option<&CrdSources>,
) -> Result<Rendered, UsageError> {
    let (planned, notes) = plan(&args.paths, filters, args.input.limit_bytes())?;
    let options = args.limits.run_options();
    let checks = Checks {
        mode: args.mode.into(),
        shuffle: args.shuffle,
        intent: !args.no_intent,
        parallel_steps: true,
    };
    let mut report = run(planned, checks, &options, schemas);
    report.notes = notes;
    echo_inputs(args.format, &report.notes, &report.crd_errors);
    let summary = Summary::of(&report);
    let mut out = Vec::new();
    let mut rendered = Rendered {
        report: Vec::new(),
        summary: summary.line(),
        code: summary.exit_code_denying(args.deny_warnings),
    };
    let written = if args.lint {
        let (mut findings, files) = super::lint::lint_paths(
            &args.paths,
            &args.input,
            schemas.map(|sources| &sources.schemas),
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

/// The run's CRD schemas, once a one-shot `check` is done with them: the process exits right
/// after, so they are left to it rather than freed one schema node at a time, which nobody
/// waits for (issue 20: a few million instructions for the bundled CRDs). Not for `--watch`,
/// which loads them again for every run, nor for the language server.
fn leave_for_exit(schemas: Option<CrdSources>) {
    std::mem::forget(schemas);
}

/// The CRD schemas of the run (`None` with `--no-schema`): every PATH's `crds/` folder and
/// kruise-lua.toml `crds`, then `--crd` (a `--crd` path that does not exist is a usage error).
fn schemas(args: &CheckArgs) -> Result<Option<CrdSources>, UsageError> {
    if args.no_schema {
        return Ok(None);
    }
    crd_sources::for_paths(&args.paths, &args.crds).map(Some)
}
