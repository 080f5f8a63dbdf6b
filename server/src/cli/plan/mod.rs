//! `kruise-lua plan --rollout ROLLOUT.yaml --resource RESOURCE.yaml…`: what a Rollout will do to
//! the real gateway resources, step by step (the plan itself is computed by [`crate::project::plan`]),
//! shown as a human report, JSON or a self-contained HTML page, and saved as a test case with
//! `--save-case`. Exit 1 when a stage errors, is invalid or misroutes.

use std::io::Read;
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use kruise_lua_engine::discovery::{self, read_configmap};
use kruise_lua_engine::script::ScriptKind;

use crate::project::plan::manifests::{self, Manifest};
use crate::project::plan::scripts::{ConfigScripts, GivenScript, ScriptSources};
use crate::project::plan::{self, Plan, Settings, case_file};

use super::options::{
    ColorArg, EXIT_FINDINGS, EXIT_OK, InputArgs, LimitArgs, read_text, write_stderr_line,
    write_stdout,
};
use crate::project::{UsageError, io_message, paths};

mod html;
mod human;
mod json;

#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The Rollout (or TrafficRouting) manifest, `-` for stdin
    #[arg(long, value_name = "ROLLOUT.yaml")]
    pub rollout: PathBuf,
    /// Resource manifests the Rollout references (repeatable; `-` for stdin; several
    /// documents and `kind: List` as `kubectl get -o yaml` prints them)
    #[arg(long = "resource", value_name = "RESOURCE.yaml", required = true)]
    pub resources: Vec<PathBuf>,
    /// The lua_configuration tree whose bundled scripts (and crds/ folder) are used
    #[arg(long, value_name = "DIR", default_value = "lua_configuration")]
    pub tree: PathBuf,
    /// A kruise-rollout-configuration ConfigMap manifest holding scripts (repeatable)
    #[arg(long = "config", value_name = "CONFIGMAP.yaml")]
    pub configs: Vec<PathBuf>,
    /// A script to run instead of the one Kruise would find (repeatable; a script outside a
    /// lua_configuration layout serves every resource)
    #[arg(long = "script", value_name = "SCRIPT.lua")]
    pub scripts: Vec<PathBuf>,
    /// Report format
    #[arg(long, value_enum, default_value_t = PlanFormat::Human)]
    pub format: PlanFormat,
    /// Also write the plan as a test case (rollout, original, expected per step); with several
    /// resources, one file per resource named PATH's stem plus `-<kind>`
    #[arg(long, value_name = "PATH")]
    pub save_case: Option<PathBuf>,
    /// CustomResourceDefinition file or folder to validate the resources against (repeatable)
    #[arg(long = "crd", value_name = "PATH")]
    pub crds: Vec<PathBuf>,
    /// Do not validate the resources against CRD schemas
    #[arg(long)]
    pub no_schema: bool,
    /// Colour the human report
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = ColorArg::Auto)]
    pub color: ColorArg,
    #[command(flatten)]
    pub limits: LimitArgs,
    #[command(flatten)]
    pub input: InputArgs,
}

/// How the plan is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum PlanFormat {
    /// Per resource and step: the diff, the traffic table and findings (for people)
    #[default]
    Human,
    /// One JSON document (see docs/CLI.md for its fields)
    Json,
    /// One self-contained HTML page: per step the diff and a chart of the traffic split
    Html,
}

pub fn execute(args: PlanArgs) -> Result<u8, UsageError> {
    let stdin = Path::new("-");
    let stdin_inputs = std::iter::once(&args.rollout)
        .chain(&args.resources)
        .filter(|path| path.as_path() == stdin)
        .count();
    if stdin_inputs > 1 {
        return Err(UsageError("stdin (`-`) can be read only once".to_owned()));
    }
    let read_input = |path: &Path| -> Result<(String, String), UsageError> {
        if path == stdin {
            return Ok(("<stdin>".to_owned(), read_stdin(&args.input)?));
        }
        Ok((paths::display(path), read_text(path, &args.input)?))
    };
    let (rollout_file, rollout_text) = read_input(&args.rollout)?;
    let mut rollouts = Vec::new();
    let mut resources: Vec<Manifest> = Vec::new();
    for manifest in manifests::read(&rollout_file, &rollout_text).map_err(UsageError)? {
        if is_rollout(&manifest) {
            rollouts.push(manifest);
        } else {
            // A Rollout file may hold the resources too.
            resources.push(manifest);
        }
    }
    drop(rollout_text);
    let rollout = match rollouts.len() {
        1 => rollouts.remove(0),
        0 => {
            return Err(UsageError(format!(
                "{rollout_file}: no Rollout or TrafficRouting (rollouts.kruise.io) in it"
            )));
        }
        n => {
            return Err(UsageError(format!(
                "{rollout_file}: {n} Rollouts or TrafficRoutings; plan one at a time ({})",
                rollouts
                    .iter()
                    .map(|r| r.place.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    };
    for path in &args.resources {
        let (file, text) = read_input(path)?;
        let read = manifests::read(&file, &text).map_err(UsageError)?;
        if resources.len() + read.len() > manifests::MAX_OBJECTS {
            return Err(UsageError(format!(
                "{file}: more than {} resources in all; plan reads at most that many",
                manifests::MAX_OBJECTS
            )));
        }
        resources.extend(read);
    }
    let sources = script_sources(&args)?;
    let mut crd_problems = false;
    let schemas = if args.no_schema {
        None
    } else {
        let roots: Vec<PathBuf> = sources.tree.iter().cloned().collect();
        let loaded = crate::project::crd_sources::for_paths(&roots, &args.crds)?;
        // A CRD that cannot be used leaves its kind unvalidated: never a silent pass (as `check`).
        crd_problems = !loaded.problems.is_empty();
        for problem in &loaded.problems {
            write_stderr_line(&super::terminal::escape_controls(&format!(
                "{problem}: error: CRD not loaded"
            )));
        }
        Some(loaded)
    };
    let options = args.limits.run_options();
    let settings = Settings {
        scripts: &sources,
        options: &options,
        schemas: schemas.as_ref(),
    };
    let plan = plan::plan(&rollout, &resources, &settings).map_err(UsageError)?;
    if let Some(path) = &args.save_case {
        save_cases(&plan, path, &args.input)?;
    }
    let rendered = match args.format {
        PlanFormat::Human => human::render(&plan, args.color.enabled()),
        PlanFormat::Json => json::render(&plan),
        PlanFormat::Html => html::render(&plan),
    };
    write_stdout(rendered)?;
    Ok(if plan.has_failures() || crd_problems {
        EXIT_FINDINGS
    } else {
        EXIT_OK
    })
}

/// Whether a manifest is the Rollout side of a plan.
fn is_rollout(manifest: &Manifest) -> bool {
    manifest.group() == "rollouts.kruise.io"
        && matches!(manifest.field("kind"), "Rollout" | "TrafficRouting")
}

/// Reads stdin whole, refusing more than `--max-input-size`.
fn read_stdin(input: &InputArgs) -> Result<String, UsageError> {
    let limit = input.limit_bytes();
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|err| UsageError(format!("<stdin>: {}", io_message(&err))))?;
    if bytes.len() as u64 > limit {
        return Err(UsageError(format!(
            "<stdin>: is more than {limit} bytes, over the {} limit for an input file (raise it with --max-input-size)",
            kruise_lua_engine::input::size_text(limit)
        )));
    }
    kruise_lua_engine::input::utf8_text(bytes).map_err(|err| UsageError(format!("<stdin>: {err}")))
}

/// The scripts of `--script`, `--config` and the tree.
fn script_sources(args: &PlanArgs) -> Result<ScriptSources, UsageError> {
    let mut sources = ScriptSources {
        max_bytes: args.input.limit_bytes(),
        ..ScriptSources::default()
    };
    for path in &args.scripts {
        sources.given.push(GivenScript {
            path: paths::display(path),
            kind: discovery::script_kind_at(path),
            source: read_text(path, &args.input)?,
        });
    }
    for path in &args.configs {
        let shown = paths::display(path);
        let text = read_text(path, &args.input)?;
        let read = read_configmap(&text).map_err(|error| {
            let line = error
                .span
                .map(|s| format!(":{}", s.start.line))
                .unwrap_or_default();
            UsageError(format!("{shown}{line}: {}", error.message))
        })?;
        for note in &read.notes {
            let line = note
                .span
                .map(|s| format!(":{}", s.start.line))
                .unwrap_or_default();
            write_stderr_line(&super::terminal::escape_controls(&format!(
                "{shown}{line}: warning: {}",
                note.message
            )));
        }
        sources.configmaps.push(ConfigScripts {
            path: shown,
            scripts: read.scripts,
        });
    }
    if args.tree.is_dir() {
        sources.tree = Some(args.tree.clone());
    }
    Ok(sources)
}

/// Writes each planned resource's case (atomically); one resource: `path` itself.
fn save_cases(plan: &Plan, path: &Path, input: &InputArgs) -> Result<(), UsageError> {
    let cases: Vec<_> = plan
        .resources
        .iter()
        .filter_map(|resource| resource.case.as_ref().map(|case| (resource, case)))
        .collect();
    if cases.is_empty() {
        return Err(UsageError(
            "--save-case: no resource could be planned".to_owned(),
        ));
    }
    for (resource, case) in &cases {
        let target = if cases.len() == 1 {
            path.to_path_buf()
        } else {
            per_resource_path(path, &resource.resource, &case.kind)
        };
        let shown = paths::display(&target);
        let text = case_file::saved_case(case, &plan.rollout)
            .map_err(|why| UsageError(format!("{shown}: {}: {why}", resource.resource)))?;
        if text.len() as u64 > input.limit_bytes() {
            return Err(UsageError(format!(
                "{shown}: the case would be {} bytes, more than `check` reads (--max-input-size)",
                text.len()
            )));
        }
        write_case(&target, text.as_bytes())?;
        write_stderr_line(&format!("wrote {shown} ({})", resource.resource));
        if !case.modes_differ.is_empty() {
            let steps: Vec<String> = case.modes_differ.iter().map(|n| n.to_string()).collect();
            write_stderr_line(&format!(
                "{shown}: warning: on step(s) {} the controller gets another result than Kruise's unit test; the case passes `check` in harness mode only",
                steps.join(", ")
            ));
        }
    }
    Ok(())
}

/// Writes a case atomically: a new file, or in place of the file as it was just read (a file
/// changed in between is left alone and reported).
fn write_case(target: &Path, text: &[u8]) -> Result<(), UsageError> {
    use crate::atomic_write::{create_new_file, replace_file};
    match std::fs::read(target) {
        Ok(existing) => {
            replace_file(target, &existing, text).map_err(|err| UsageError(err.to_string()))
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            create_new_file(target, text).map_err(|err| UsageError::io(target, &err))
        }
        Err(err) => Err(UsageError::io(target, &err)),
    }
}

/// `dir/name.yaml` + `VirtualService web` → `dir/name-virtualservice.yaml`; when `dir` is the
/// `testdata/` of a tree's `<group>/<Kind>/` and the tree has a script for the resource's own
/// provider (`kind`) with a `testdata/`, the file goes there instead, where `check`
/// runs it with its script.
fn per_resource_path(path: &Path, resource: &str, kind: &ScriptKind) -> PathBuf {
    let kind_name = resource
        .split(' ')
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let extension = path
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_else(|| ".yaml".to_owned());
    let name = format!("{stem}-{kind_name}{extension}");
    let testdata = path.parent().filter(|dir| dir.ends_with("testdata"));
    let tree = testdata.and_then(|dir| dir.parent()?.parent()?.parent());
    if let (Some(tree), ScriptKind::Custom { group, kind }) = (tree, kind) {
        let provider = tree.join(group).join(kind);
        if provider.join(discovery::CUSTOM_SCRIPT_NAME).is_file()
            && provider.join("testdata").is_dir()
        {
            return provider.join("testdata").join(name);
        }
    }
    path.with_file_name(name)
}
