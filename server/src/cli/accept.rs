//! `kruise-lua accept CASE.yaml [--step N]… [--dry-run]`: writes the actual output of a test
//! case's failing steps as their `expected` entries, through the editor's accept
//! ([`crate::project::accept`]: minimal edits that keep formatting, comments and anchors) and
//! its compare-and-swap writer (a file changed meanwhile is left alone), and prints what
//! changed as a diff; `--dry-run` prints the diff only.

use std::path::PathBuf;

use clap::Args;
use kruise_lua_engine::discovery;
use kruise_lua_engine::runner::Script;
use kruise_lua_engine::script::ScriptFlavor;

use super::options::{
    EXIT_FINDINGS, EXIT_OK, InputArgs, LimitArgs, ModeArg, write_stderr_line, write_stdout,
};
use super::terminal::escape_controls;
use crate::chunk_positions::file_script_error;
use crate::project::accept::{StepAcceptance, accept_case, write_accepted};
use crate::project::targets::script_of_case;
use crate::project::{UsageError, paths, read_text};

#[derive(Debug, Args)]
pub struct AcceptArgs {
    /// The test case whose failing steps' actual output becomes their expected entries
    #[arg(value_name = "CASE.yaml")]
    pub case: PathBuf,
    /// Accept only step N (numbered from 1, as every report shows them; repeatable)
    #[arg(long = "step", value_name = "N")]
    pub steps: Vec<usize>,
    /// Print the change as a diff and write nothing
    #[arg(long)]
    pub dry_run: bool,
    /// The script to run (default: the one Kruise's test pairs the case with)
    #[arg(long, value_name = "SCRIPT")]
    pub script: Option<PathBuf>,
    /// Result rules: the unit-test harness's (default) or the controller's
    #[arg(long, value_enum, default_value_t = ModeArg::Harness)]
    pub mode: ModeArg,
    #[command(flatten)]
    pub limits: LimitArgs,
    #[command(flatten)]
    pub input: InputArgs,
}

pub fn execute(args: AcceptArgs) -> Result<u8, UsageError> {
    let limit = args.input.limit_bytes();
    let text = read_text(&args.case, limit)?;
    let case_name = paths::display(&args.case);
    let script_path = match &args.script {
        Some(path) => path.clone(),
        None => script_of_case(&args.case).ok_or_else(|| {
            UsageError(format!(
                "{case_name}: not in a testdata folder, so its script is unknown; name it with --script"
            ))
        })?,
    };
    let source = read_text(&script_path, limit)?;
    // An ingress class's script gets the ingress obj; any other script a custom provider's.
    let flavor = match discovery::script_kind_at(&script_path) {
        Some(kind) => ScriptFlavor::from(&kind),
        None => ScriptFlavor::Custom,
    };
    let mut selected = Vec::new();
    for &number in &args.steps {
        if number == 0 {
            return Err(UsageError(format!(
                "--step {number}: steps are numbered from 1"
            )));
        }
        if !selected.contains(&(number - 1)) {
            selected.push(number - 1);
        }
    }
    let acceptance = accept_case(
        &text,
        &Script::new(source),
        flavor,
        args.mode.into(),
        &args.limits.run_options(),
        &selected,
    )
    .map_err(|why| UsageError(format!("{case_name}: {why}")))?;
    // Written first, so a step is said to be rewritten only once it is: a file that cannot be
    // written (read-only, changed meanwhile) is reported as --dry-run would, then the error.
    let changed = acceptance.new_text != text;
    let written = (changed && !args.dry_run)
        .then(|| write_accepted(&args.case, &text, &acceptance.new_text).map_err(UsageError));
    let rewritten = matches!(written, Some(Ok(())));
    let script_name = paths::display(&script_path);
    let mut code = EXIT_OK;
    for (index, status) in &acceptance.steps {
        let number = index + 1;
        let line = match status {
            StepAcceptance::Passes => {
                format!("{case_name}: step {number}: passes, nothing to accept")
            }
            StepAcceptance::Accepted => format!(
                "{case_name}: step {number}: expected[{index}] {}",
                if rewritten {
                    "rewritten"
                } else {
                    "would be rewritten"
                }
            ),
            StepAcceptance::Errored(error) => {
                code = EXIT_FINDINGS;
                // As `run` and `check` show it: at the script's file and line.
                let (at, what) = file_script_error(&script_name, error);
                format!("{case_name}: step {number}: not accepted: {at}: {what}")
            }
            StepAcceptance::Refused(why) => {
                code = EXIT_FINDINGS;
                format!("{case_name}: step {number}: not accepted: {why}")
            }
        };
        write_stderr_line(&escape_controls(&line));
    }
    if !changed {
        return Ok(code);
    }
    let diff = similar::TextDiff::from_lines(&text, &acceptance.new_text)
        .unified_diff()
        .context_radius(3)
        .header(&case_name, &case_name)
        .to_string();
    write_stdout(escape_controls(&diff).as_bytes())?;
    match written {
        Some(Err(error)) => Err(error),
        _ => Ok(code),
    }
}
