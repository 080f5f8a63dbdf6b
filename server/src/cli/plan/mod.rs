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
    /// The lua_configuration tree whose bundled scripts (and crds/ folder) are used [default:
    /// lua_configuration, which may be absent when --config or --script gives the scripts]
    #[arg(long, value_name = "DIR")]
    pub tree: Option<PathBuf>,
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

/// `plan`'s exit codes, as `--help` lists them (docs/CLI.md says the same).
pub const EXIT_CODES_HELP: &str = "Exit codes:
  0  every stage of every resource was planned: no step errors, is invalid or misroutes
  1  Kruise's Rollout webhook would refuse the Rollout, a step errors, is invalid (the API
     server would refuse it) or misroutes (the intent check), a resource has no script, or
     a CRD file cannot be used
  2  usage or I/O error: a bad option; a missing or unreadable input, --tree, --config,
     --script or --crd; a manifest that does not parse (its file and line named); no
     Rollout in --rollout; a Rollout of more than 200 steps; more than 1,000 objects in
     an input or in all; an input over --max-input-size; a --save-case file that cannot
     be written";

/// The tree `--tree` defaults to.
const DEFAULT_TREE: &str = "lua_configuration";

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
    sources.tree = tree(args)?;
    Ok(sources)
}

/// The tree plan looks in, if any. A `--tree` must be a folder; the default
/// `lua_configuration` may be absent only when `--config` or `--script` can give the scripts
/// (else no resource could get one: a usage error naming the folder, not a plan of failures).
fn tree(args: &PlanArgs) -> Result<Option<PathBuf>, UsageError> {
    let (tree, named) = match &args.tree {
        Some(tree) => (tree.clone(), true),
        None => (PathBuf::from(DEFAULT_TREE), false),
    };
    let shown = paths::display(&tree);
    match std::fs::metadata(&tree) {
        Ok(meta) if meta.is_dir() => Ok(Some(tree)),
        Ok(_) => Err(UsageError(format!(
            "{shown}: not a directory (--tree names a lua_configuration folder)"
        ))),
        Err(err) if named => Err(UsageError(format!(
            "{shown}: {} (--tree)",
            io_message(&err)
        ))),
        Err(_) if args.configs.is_empty() && args.scripts.is_empty() => Err(UsageError(format!(
            "{shown}: no such directory (the default --tree); name the scripts' tree with --tree, a ConfigMap with --config or a script with --script"
        ))),
        // The scripts come from --config or --script; a resource they do not serve says so.
        Err(_) => Ok(None),
    }
}

/// Writes each planned resource's case (atomically); one resource: `path` itself. Every
/// target is checked before the first is written, so a refused one leaves nothing half done.
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
    let mut targets: Vec<PathBuf> = cases
        .iter()
        .map(|(resource, case)| {
            if cases.len() == 1 {
                path.to_path_buf()
            } else {
                per_resource_path(path, &resource.resource, &case.kind, false)
            }
        })
        .collect();
    // Two resources of one kind would get one file, the second replacing the first's case:
    // each of them is named after its resource too.
    for i in 0..targets.len() {
        if targets.iter().filter(|t| **t == targets[i]).count() > 1 {
            let same = targets[i].clone();
            for (j, (resource, case)) in cases.iter().enumerate() {
                if targets[j] == same {
                    targets[j] = per_resource_path(path, &resource.resource, &case.kind, true);
                }
            }
        }
    }
    let mut texts = Vec::new();
    // What each target holds now, read once: written over only if it is still that.
    let mut existing = Vec::new();
    for ((resource, case), target) in cases.iter().zip(&targets) {
        let shown = paths::display(target);
        let text = case_file::saved_case(case, &plan.rollout)
            .map_err(|why| UsageError(format!("{shown}: {}: {why}", resource.resource)))?;
        if text.len() as u64 > input.limit_bytes() {
            return Err(UsageError(format!(
                "{shown}: the case would be {} bytes, more than `check` reads (--max-input-size)",
                text.len()
            )));
        }
        existing.push(existing_case(target, input.limit_bytes())?);
        texts.push(text);
    }
    for (i, ((resource, case), target)) in cases.iter().zip(&targets).enumerate() {
        let shown = paths::display(target);
        // A file two resources of one kind and name share holds the earlier one's case by now.
        let now = match targets[..i].iter().rposition(|earlier| earlier == target) {
            Some(earlier) => Some(texts[earlier].as_bytes().to_vec()),
            None => existing[i].take(),
        };
        write_case(target, texts[i].as_bytes(), now)?;
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

/// What `target` holds now: `None` when nothing is there (a case is created), the bytes of a
/// regular file (replaced only if they do not change meanwhile). Anything else is refused
/// with what it is: a FIFO or device is read as every input is ([`input::read_bytes`]:
/// non-blocking, by its type), never opened for writing nor replaced by a regular file; a
/// symlink to nothing is not followed (it would create a file where the user did not look).
fn existing_case(target: &Path, limit: u64) -> Result<Option<Vec<u8>>, UsageError> {
    use kruise_lua_engine::input::{self, ReadError};
    let shown = paths::display(target);
    match input::read_bytes(target, limit) {
        Ok(existing) => Ok(Some(existing)),
        Err(ReadError::Io(err)) if err.kind() == std::io::ErrorKind::NotFound => {
            match std::fs::read_link(target) {
                Ok(link) => Err(UsageError(format!(
                    "{shown}: is a symbolic link to {}, which does not exist; nothing was written (create the file it points to, or remove the link)",
                    link.display()
                ))),
                Err(_) => Ok(None),
            }
        }
        Err(ReadError::NotRegular { what }) => Err(UsageError(format!(
            "{shown}: is {what}, not a regular file; nothing was written (--save-case writes regular files only)"
        ))),
        Err(ReadError::TooLarge { size, .. }) => Err(UsageError(format!(
            "{shown}: is {size} bytes, more than a case `check` reads (--max-input-size); not replaced"
        ))),
        Err(ReadError::Io(err)) => Err(UsageError::io(target, &err)),
        Err(other) => Err(UsageError(format!("{shown}: {other}"))),
    }
}

/// Writes a case atomically ([`crate::atomic_write`]): a new file where there was none
/// (`existing` is `None`), or in place of the regular file that held `existing` (a file
/// changed since is left alone and reported).
fn write_case(target: &Path, text: &[u8], existing: Option<Vec<u8>>) -> Result<(), UsageError> {
    use crate::atomic_write::{create_new_file, replace_file};
    match existing {
        Some(existing) => {
            replace_file(target, &existing, text).map_err(|err| UsageError(err.to_string()))
        }
        None => create_new_file(target, text).map_err(|err| {
            if err.kind() == std::io::ErrorKind::AlreadyExists {
                UsageError(format!(
                    "{}: appeared while plan ran; nothing was written",
                    paths::display(target)
                ))
            } else {
                UsageError::io(target, &err)
            }
        }),
    }
}

/// `dir/name.yaml` + `VirtualService web` → `dir/name-virtualservice.yaml` (with `named`,
/// `dir/name-virtualservice-web.yaml`); when `dir` is the `testdata/` of a tree's
/// `<group>/<Kind>/` and the tree has a script for the resource's own provider (`kind`) with a
/// `testdata/`, the file goes there instead, where `check` runs it with its script.
fn per_resource_path(path: &Path, resource: &str, kind: &ScriptKind, named: bool) -> PathBuf {
    let mut words = resource.split(' ');
    let mut kind_name = words.next().unwrap_or("").to_ascii_lowercase();
    if named {
        // A valid Kubernetes name is safe in a file name; the manifest's may not be valid.
        let name: String = words
            .next()
            .unwrap_or("")
            .chars()
            .map(|c| match c {
                'a'..='z' | '0'..='9' | '-' | '.' => c,
                _ => '_',
            })
            .collect();
        kind_name = format!("{kind_name}-{name}");
    }
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
