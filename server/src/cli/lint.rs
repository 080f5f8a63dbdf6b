//! `kruise-lua lint [PATH...]`: the language server's analysis (syntax errors and the lints,
//! configured by the nearest `kruise-lua.toml`) on the same PATH kinds as `check` — trees,
//! scripts, ConfigMap manifests (positions in the manifest) — printed for people, as JSON
//! Lines, GitHub annotations or SARIF. `--fix` applies the lints' fixes in place.
//!
//! Exit status: 1 when a finding at error severity remains (or a warning, with
//! `--deny-warnings`), 2 on usage or I/O errors, else 0.

use std::ops::Range;
use std::path::PathBuf;

use clap::Args;
use kruise_lua_engine::schema::SchemaSet;
use kruise_lua_engine::script::{ScriptFlavor, ScriptKind};
use kruise_lua_engine::testcase::{TestCase, parse_case};
use rayon::prelude::*;
use std::sync::Arc;

use super::lint_finding::{CONFIGMAP, FileFix, Finding, LintFormat, Pos, SYNTAX, TOO_LARGE};
use super::options::{ColorArg, EXIT_FINDINGS, EXIT_OK, InputArgs};
use crate::analysis::{self, LintConfig, Severity, SpecSchema, SpecShape, infer_spec_shape};
use crate::project::MAX_ANALYSED_BYTES;
use crate::project::UsageError;
use crate::project::crd_sources;
use crate::project::embedded;
use crate::project::schema_check;
use crate::project::targets::{Target, collect};

#[derive(Debug, Args)]
pub struct LintArgs {
    /// lua_configuration trees, trafficRouting.lua scripts, or ConfigMap manifests
    #[arg(value_name = "PATH", default_value = "lua_configuration")]
    pub paths: Vec<PathBuf>,
    /// Report format
    #[arg(long, value_enum, default_value_t = LintFormat::Human)]
    pub format: LintFormat,
    /// Exit 1 on warnings too, not only on errors
    #[arg(long)]
    pub deny_warnings: bool,
    /// Apply the lints' fixes in place (each file replaced atomically), then report what remains
    #[arg(long)]
    pub fix: bool,
    /// Lint again whenever a file under PATH changes (until interrupted)
    #[arg(long)]
    pub watch: bool,
    /// Colour the human report
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = ColorArg::Auto)]
    pub color: ColorArg,
    /// CustomResourceDefinition file or folder for KL014 (repeatable), as `check --crd`: wins
    /// over the `crds/` folder and kruise-lua.toml's `crds` for the same group and kind
    #[arg(long = "crd", value_name = "PATH")]
    pub crds: Vec<PathBuf>,
    /// Load no CRD schemas (KL014 then has nothing to check against)
    #[arg(long)]
    pub no_schema: bool,
    #[command(flatten)]
    pub input: InputArgs,
}

/// What is known of `obj.data.spec`: the shape of the cases' specs (as the language server
/// infers it from their first steps) and the CRD's schema for the script's kind (version from
/// the cases' `original.apiVersion`); unreadable cases are skipped, they are `check`'s
/// business.
fn spec_shape(
    kind: &ScriptKind,
    cases: &[PathBuf],
    schemas: Option<&Arc<SchemaSet>>,
) -> Option<SpecShape> {
    let cases: Vec<TestCase> = cases
        .iter()
        // Memory stays bounded: a case too large for the editor is skipped here too.
        .filter(|path| std::fs::metadata(path).is_ok_and(|m| m.len() <= MAX_ANALYSED_BYTES as u64))
        .filter_map(|path| std::fs::read_to_string(path).ok())
        .filter_map(|text| parse_case(&text).ok())
        .collect();
    let specs: Vec<_> = cases
        .iter()
        .filter_map(|case| case.steps.first().and_then(|s| s.obj.data.spec.clone()))
        .collect();
    let schema = match (schemas, kind) {
        (Some(set), ScriptKind::Custom { group, kind }) => {
            let versions: Vec<String> = cases
                .iter()
                .filter_map(schema_check::original_api_version)
                .collect();
            SpecSchema::choose(set.clone(), group, kind, &versions)
        }
        _ => None,
    };
    if specs.is_empty() && schema.is_none() {
        return None;
    }
    Some(infer_spec_shape(&specs).with_schema(schema))
}

/// Lints every target in parallel; findings come back in target order, then source order.
pub fn lint_targets(
    targets: &[Target],
    schemas: Option<&Arc<SchemaSet>>,
) -> Result<Vec<Finding>, UsageError> {
    let lint_all = || -> Vec<Result<Vec<Finding>, UsageError>> {
        targets
            .par_iter()
            .map(|target| lint_target(target, schemas))
            .collect()
    };
    let per_target = match analysis_pool() {
        Some(pool) => pool.install(lint_all),
        None => lint_all(),
    };
    let mut findings = Vec::new();
    for result in per_target {
        findings.extend(result?);
    }
    Ok(findings)
}

/// Stack of the analysis threads. The parser and the lints recurse once per nesting level of
/// the script (bounded by the compiler's 200 levels, see `analysis::parse`); a debug build needs
/// more than the default 2 MiB for that. Only the pages used are committed.
const ANALYSIS_STACK: usize = 64 << 20;

/// The threads lints run on (None: the pool could not be made; the global one is used).
fn analysis_pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: std::sync::OnceLock<Option<rayon::ThreadPool>> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .stack_size(ANALYSIS_STACK)
            .thread_name(|i| format!("kruise-lua-lint-{i}"))
            .build()
            .ok()
    })
    .as_ref()
}

/// Lints the files PATH names (what `check --lint` adds to its report), and how many.
pub fn lint_paths(
    roots: &[PathBuf],
    input: &InputArgs,
    schemas: Option<&Arc<SchemaSet>>,
) -> Result<(Vec<Finding>, usize), UsageError> {
    let targets = collect(roots, input.limit_bytes())?;
    Ok((lint_targets(&targets, schemas)?, targets.len()))
}

fn lint_target(
    target: &Target,
    schemas: Option<&Arc<SchemaSet>>,
) -> Result<Vec<Finding>, UsageError> {
    let (config, _) =
        LintConfig::nearest(&target.path).map_err(|error| UsageError(error.to_string()))?;
    let lines = LineStarts::new(&target.text);
    let mut findings = Vec::new();
    if target.text.len() > MAX_ANALYSED_BYTES {
        let message = format!(
            "not analysed: the file has {} bytes, more than the {MAX_ANALYSED_BYTES} the analysis takes",
            target.text.len()
        );
        findings.push(lines.finding(target, None, TOO_LARGE, Severity::Warning, &message, 0..0));
        return Ok(findings);
    }
    for (line, message) in &target.notes {
        let line = line.unwrap_or(1);
        let start = lines.offset_of_line(line);
        findings.push(lines.finding(
            target,
            None,
            CONFIGMAP,
            Severity::Warning,
            message,
            start..start,
        ));
    }
    for script in &target.scripts {
        let flavor = ScriptFlavor::from(&script.kind);
        let shape = spec_shape(&script.kind, &script.cases, schemas);
        let configmap_kind = script.map.is_some().then_some(&script.kind);
        let analysis = analysis::analyze_script(
            &script.source,
            flavor,
            &config,
            shape.as_ref(),
            configmap_kind,
        );
        let to_file = |range: Range<usize>| match &script.map {
            Some(map) => map.to_host(range.start)..map.to_host(range.end),
            None => range,
        };
        let key = script.key.as_deref();
        for error in analysis.syntax_errors {
            let range = to_file(error.range);
            findings.push(lines.finding(
                target,
                key,
                SYNTAX,
                Severity::Error,
                &error.message,
                range,
            ));
        }
        for diagnostic in analysis.diagnostics {
            let range = to_file(diagnostic.range.clone());
            let mut finding = lines.finding(
                target,
                key,
                diagnostic.code,
                diagnostic.severity,
                &diagnostic.message,
                range,
            );
            if let Some(fix) = diagnostic.fix {
                // In a manifest the fix is written in the script's YAML style, and only when
                // the manifest then reads back as the script with the fix.
                let embedded = script.map.as_ref().map(|map| (map, &target.embedded[..]));
                match embedded::fix_edit(&target.text, embedded, &script.source, &fix) {
                    Ok((range, replacement)) => {
                        finding.fix = Some(FileFix {
                            title: fix.title,
                            start: lines.pos(range.start),
                            end: lines.pos(range.end),
                            range,
                            replacement,
                        })
                    }
                    Err(why) => finding.fix_refused = Some(why),
                }
            }
            findings.push(finding);
        }
    }
    // Syntax errors and lints of one script together, in file order (remarks first).
    findings.sort_by_key(|f| (f.code != CONFIGMAP, f.start, f.end));
    Ok(findings)
}

/// Line starts of a text, to turn byte offsets into line and column.
struct LineStarts<'a> {
    text: &'a str,
    starts: Vec<usize>,
}

impl<'a> LineStarts<'a> {
    fn new(text: &'a str) -> Self {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        LineStarts { text, starts }
    }

    fn pos(&self, offset: usize) -> Pos {
        let offset = offset.min(self.text.len());
        let line = self.starts.partition_point(|start| *start <= offset) - 1;
        let start = self.starts[line];
        let column = self
            .text
            .get(start..offset)
            .map_or(0, |s| s.chars().count());
        Pos {
            line: line as u32 + 1,
            column: column as u32 + 1,
        }
    }

    fn offset_of_line(&self, line: u32) -> usize {
        let index = (line.max(1) as usize - 1).min(self.starts.len() - 1);
        self.starts[index]
    }

    fn line_text(&self, line: u32) -> &str {
        let start = self.offset_of_line(line);
        let end = self.text[start..]
            .find('\n')
            .map_or(self.text.len(), |i| start + i);
        self.text[start..end].trim_end_matches('\r')
    }

    fn finding(
        &self,
        target: &Target,
        key: Option<&str>,
        code: &'static str,
        severity: Severity,
        message: &str,
        range: Range<usize>,
    ) -> Finding {
        let start = self.pos(range.start);
        let end = self.pos(range.end.max(range.start));
        Finding {
            file: target.display.clone(),
            key: key.map(str::to_string),
            code,
            severity,
            message: message.to_string(),
            source_line: self.line_text(start.line).to_string(),
            start,
            end,
            fix: None,
            fix_refused: None,
        }
    }
}

/// 1 when a finding at error severity (or warning, with `deny_warnings`) is among `findings`.
pub fn exit_code(findings: &[Finding], deny_warnings: bool) -> u8 {
    let failing = |f: &Finding| {
        f.severity == Severity::Error || (deny_warnings && f.severity == Severity::Warning)
    };
    if findings.iter().any(failing) {
        EXIT_FINDINGS
    } else {
        EXIT_OK
    }
}

pub fn execute(args: LintArgs) -> Result<u8, UsageError> {
    if args.watch {
        let color = args.color.enabled();
        return super::watch::watch(&args.paths, &mut |_changed| {
            let run = run_once(&args, color)?;
            Ok(super::watch::Outcome {
                summary: run.summary,
                report: run.report,
            })
        });
    }
    let run = run_once(&args, args.color.enabled())?;
    super::options::write_stdout(&run.report)?;
    Ok(run.code)
}

/// What one lint run prints and its exit code.
struct Run {
    report: Vec<u8>,
    summary: String,
    code: u8,
}

fn run_once(args: &LintArgs, color: bool) -> Result<Run, UsageError> {
    // Read again on every run (`--watch`: a CRD may have changed).
    let sources = if args.no_schema {
        None
    } else {
        Some(crd_sources::for_paths(&args.paths, &args.crds)?)
    };
    let schemas = sources.as_ref().map(|sources| &sources.schemas);
    let mut targets = collect(&args.paths, args.input.limit_bytes())?;
    let mut findings = lint_targets(&targets, schemas)?;
    let mut fixed = None;
    if args.fix {
        let count = super::fix::apply(&targets, &findings)?;
        if count.edits > 0 {
            targets = collect(&args.paths, args.input.limit_bytes())?;
            findings = lint_targets(&targets, schemas)?;
        }
        fixed = Some(count);
    }
    let summary = super::lint_report::summary(&findings, targets.len(), fixed);
    let mut report = Vec::new();
    super::lint_report::write(&findings, &summary, args.format, color, &mut report)
        .map_err(|err| UsageError(format!("writing the report: {err}")))?;
    if let (Some(count), LintFormat::Json | LintFormat::Sarif) = (fixed, args.format) {
        // Those formats have no place for it.
        eprintln!("{}", count.line());
    }
    let mut code = exit_code(&findings, args.deny_warnings);
    for problem in sources.iter().flat_map(|sources| &sources.problems) {
        // A CRD that cannot be used leaves its kind unchecked: never silently (as `check`).
        super::options::write_stderr_line(&super::terminal::escape_controls(&format!(
            "{problem}: error: CRD not loaded"
        )));
        code = EXIT_FINDINGS;
    }
    Ok(Run {
        report,
        summary,
        code,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_characters_from_one() {
        let lines = LineStarts::new("ab\né x\r\nlast");
        assert_eq!(lines.pos(0), Pos { line: 1, column: 1 });
        assert_eq!(lines.pos(3), Pos { line: 2, column: 1 });
        assert_eq!(lines.pos(6), Pos { line: 2, column: 3 });
        assert_eq!(lines.pos(100), Pos { line: 3, column: 5 });
        assert_eq!(lines.line_text(2), "é x");
        assert_eq!(lines.offset_of_line(9), lines.offset_of_line(3));
    }
}
