//! Command-line parsing and dispatch: one module per subcommand, shared option types, and
//! the exit-code convention (0 all good, 1 findings, 2 usage or I/O error), which `--help`
//! lists.

use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use kruise_lua_engine::json::KeyOrder;
use kruise_lua_engine::runner::{Mode, RunOptions};
use kruise_lua_engine::vm::Limits;

pub mod accept;
pub mod check;
pub mod fix;
pub mod lint;
pub mod lint_report;
pub mod new;
pub mod obj;
pub mod paths;
pub mod plan;
pub mod report;
pub mod run;
pub mod schema_check;
pub mod terminal;
pub mod watch;

#[derive(Debug, Parser)]
#[command(
    name = "kruise-lua",
    version,
    about = "Runs OpenKruise Rollout traffic-routing Lua scripts exactly as Kruise does",
    propagate_version = true,
    after_help = EXIT_CODES_HELP
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run each step of every test case of every script and report per step (exit 1 on any
    /// failure)
    #[command(after_help = EXIT_CODES_HELP)]
    Check(check::CheckArgs),
    /// Report syntax errors and lint findings, as the language server does (exit 1 on errors)
    Lint(lint::LintArgs),
    /// Print the `obj` each step of a test case hands to the script, as loadable Lua source
    Obj(obj::ObjArgs),
    /// Run a script on the steps of a test case and print the resulting resources as YAML
    Run(run::RunArgs),
    /// Show what a Rollout does to your gateway resources step by step: each step's diff,
    /// traffic split and findings (exit 1 when a step errors, is invalid or misroutes)
    #[command(after_help = EXIT_CODES_HELP)]
    Plan(plan::PlanArgs),
    /// Scaffold a script folder (`<group>/<Kind>` or `ingress/<class>`) with the three
    /// recommended test cases
    New(new::NewArgs),
    /// Write the actual output of a test case's failing steps as their expected entries
    /// (minimal edits: formatting, comments and anchors kept), printing the change as a diff
    Accept(accept::AcceptArgs),
    /// Run the language server over stdio (for editors)
    Lsp(ServeArgs),
    /// Run the debug adapter (Debug Adapter Protocol) over stdio: debug one step of a test
    /// case (for editors; see docs/DEBUGGING.md)
    Dap(ServeArgs),
}

/// Which verdict rules apply (see conformance 2.5/2.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum ModeArg {
    /// Upstream's unit-test harness: empty table → `[]`, a non-table result → `{}`
    #[default]
    Harness,
    /// The controller: empty table → `null`, a non-table result is an error
    Production,
}

impl From<ModeArg> for Mode {
    fn from(mode: ModeArg) -> Mode {
        match mode {
            ModeArg::Harness => Mode::Harness,
            ModeArg::Production => Mode::Production,
        }
    }
}

/// When to colour the human report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum ColorArg {
    /// Colour when stdout is a terminal and `NO_COLOR` is not set
    #[default]
    Auto,
    Always,
    Never,
}

impl ColorArg {
    /// Whether to colour output written to stdout.
    pub fn enabled(self) -> bool {
        use std::io::IsTerminal;
        match self {
            ColorArg::Always => true,
            ColorArg::Never => false,
            ColorArg::Auto => {
                std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty())
                    && std::io::stdout().is_terminal()
            }
        }
    }
}

/// The run budget options shared by `check` and `run`.
#[derive(Debug, Clone, Args)]
pub struct LimitArgs {
    /// Wall-clock budget of one script run, in milliseconds (Kruise's is 1000)
    #[arg(long, value_name = "MS", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout: u64,
    /// Memory cap of one script run, in MiB (a limit of ours; Kruise has none)
    #[arg(long, value_name = "MB", default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=65536))]
    pub memory: u64,
}

impl LimitArgs {
    pub fn run_options(&self) -> RunOptions {
        RunOptions {
            limits: Limits {
                timeout: Duration::from_millis(self.timeout),
                memory_bytes: (self.memory as usize).saturating_mul(1024 * 1024),
            },
            key_order: KeyOrder::Sorted,
        }
    }
}

/// The message limit shared by `lsp` and `dap`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Largest message read from the client, in MiB; larger ones are skipped unread and answered
    /// with an error. It also bounds the JSON values in one message (one per 32 bytes)
    #[arg(long, value_name = "MB", default_value_t = crate::message_limits::DEFAULT_MAX_MESSAGE_MIB, value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub max_message_size: u64,
}

impl ServeArgs {
    fn limits(&self) -> crate::message_limits::MessageLimits {
        crate::message_limits::MessageLimits::from_mib(self.max_message_size)
    }
}

/// The input size option shared by `check`, `obj` and `run`.
#[derive(Debug, Clone, Args)]
pub struct InputArgs {
    /// Largest script, test case or manifest read, in MiB (reading a case costs a few dozen
    /// times its size in memory)
    #[arg(long, value_name = "MB", default_value_t = DEFAULT_MAX_INPUT_MIB, value_parser = clap::value_parser!(u64).range(1..=65536))]
    pub max_input_size: u64,
}

/// The default of `--max-input-size`: the engine's default limit.
const DEFAULT_MAX_INPUT_MIB: u64 = kruise_lua_engine::input::DEFAULT_MAX_INPUT_BYTES >> 20;

impl InputArgs {
    pub fn limit_bytes(&self) -> u64 {
        self.max_input_size << 20
    }
}

/// A failure that ends the command with exit code 2 (bad usage, unreadable input).
#[derive(Debug)]
pub struct UsageError(pub String);

impl UsageError {
    /// An I/O failure on `path`. An error that carries its own message (the engine's walk
    /// names the folder deep in a tree that failed) is shown as it is.
    pub fn io(path: &std::path::Path, err: &std::io::Error) -> UsageError {
        if err.get_ref().is_some() {
            return UsageError(err.to_string());
        }
        UsageError(format!("{}: {}", paths::display(path), io_message(err)))
    }
}

/// An I/O error's message without Rust's " (os error N)" suffix.
fn io_message(err: &std::io::Error) -> String {
    kruise_lua_engine::input::io_text(err)
}

/// Writes a subcommand's whole output to stdout. A closed pipe (`| head`) ends the command
/// quietly; any other write error (`> /dev/full`) is an I/O error (exit 2).
pub fn write_stdout(text: impl AsRef<[u8]>) -> Result<(), UsageError> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_ref()).and_then(|()| out.flush()) {
        Err(err) if err.kind() != std::io::ErrorKind::BrokenPipe => Err(UsageError(format!(
            "writing the output: {}",
            io_message(&err)
        ))),
        _ => Ok(()),
    }
}

/// Writes one line to stderr; a failure to write it is ignored (there is nowhere left to
/// report it, and the exit code still tells).
pub fn write_stderr_line(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// The exit codes, as `--help` lists them.
pub const EXIT_CODES_HELP: &str = "Exit codes:
  0  every step passed (check), or the command did its work
  1  a step failed, errored or is invalid (the API server would reject it), a case
     is broken, a CRD file cannot be used, a step depends on pairs() order
     (--shuffle), a step misroutes (the intent check), or a warning with --deny-warnings
  2  usage or I/O error: a bad option, a missing or unreadable path, a --filter that
     matches nothing";

/// Exit codes of every subcommand.
pub const EXIT_OK: u8 = 0;
pub const EXIT_FINDINGS: u8 = 1;
pub const EXIT_USAGE: u8 = 2;

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    // Steps run on rayon's pool, reports are written on the command's thread: both with
    // stacks for the deepest results (see WORKER_STACK).
    let _ = rayon::ThreadPoolBuilder::new()
        .stack_size(crate::WORKER_STACK)
        .build_global();
    std::thread::Builder::new()
        .name("kruise-lua".into())
        .stack_size(crate::WORKER_STACK)
        .spawn(move || dispatch(cli))
        .map_or(ExitCode::from(EXIT_USAGE), |thread| {
            thread.join().unwrap_or(ExitCode::from(EXIT_USAGE))
        })
}

fn dispatch(cli: Cli) -> ExitCode {
    let result = match cli.command {
        Command::Check(args) => check::execute(args),
        Command::Lint(args) => lint::execute(args),
        Command::Obj(args) => obj::execute(args),
        Command::Run(args) => run::execute(args),
        Command::Plan(args) => plan::execute(args),
        Command::Accept(args) => accept::execute(args),
        Command::New(args) => new::execute(args),
        Command::Dap(args) => {
            return match crate::dap::run_stdio(args.limits()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    eprintln!("kruise-lua dap: {error}");
                    ExitCode::from(EXIT_FINDINGS)
                }
            };
        }
        Command::Lsp(args) => {
            return match crate::lsp::run_stdio(args.limits()) {
                // The LSP spec: `exit` without `shutdown` first exits with 1.
                Ok(crate::lsp::Ending::ExitWithoutShutdown) => ExitCode::from(EXIT_FINDINGS),
                Ok(_) => ExitCode::SUCCESS,
                Err(error) => {
                    eprintln!("kruise-lua lsp: {error:#}");
                    ExitCode::from(EXIT_FINDINGS)
                }
            };
        }
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(UsageError(message)) => {
            write_stderr_line(&format!("kruise-lua: error: {message}"));
            ExitCode::from(EXIT_USAGE)
        }
    }
}

/// A test case read for `obj` and `run`, with the steps `--step` selects.
pub struct SelectedCase {
    pub case: kruise_lua_engine::testcase::TestCase,
    /// How the case's path is shown in messages.
    pub name: String,
    pub steps: Vec<usize>,
}

/// Reads and parses the case at `path` and selects step number `step` (from 1; or every
/// step); the selected steps are given as 0-based indices. A case that does
/// not parse is reported on stderr as `file:line: case error: …` and gives `Ok(Err(exit code))`.
pub fn load_case_steps(
    path: &std::path::Path,
    step: Option<usize>,
    input: &InputArgs,
) -> Result<Result<SelectedCase, u8>, UsageError> {
    let text = read_text(path, input)?;
    let name = paths::display(path);
    let case = match kruise_lua_engine::testcase::parse_case(&text) {
        Ok(case) => case,
        Err(error) => {
            let line = error
                .span
                .map(|span| format!(":{}", span.start.line))
                .unwrap_or_default();
            write_stderr_line(&terminal::escape_controls(&format!(
                "{name}{line}: case error: {}",
                error.message
            )));
            return Ok(Err(EXIT_FINDINGS));
        }
    };
    drop(text);
    for warning in &case.warnings {
        let line = warning
            .span
            .map(|span| format!(":{}", span.start.line))
            .unwrap_or_default();
        write_stderr_line(&terminal::escape_controls(&format!(
            "{name}{line}: warning: {}",
            warning.message
        )));
    }
    // `--step` numbers steps from 1, as every report does.
    let steps = match step {
        Some(number) if (1..=case.steps.len()).contains(&number) => vec![number - 1],
        Some(number) => {
            return Err(UsageError(format!(
                "--step {number}: {name} has {} step(s), numbered from 1",
                case.steps.len()
            )));
        }
        None => (0..case.steps.len()).collect(),
    };
    Ok(Ok(SelectedCase { case, name, steps }))
}

/// Reads a whole file as UTF-8 for a subcommand's input, refusing what is not a regular
/// file or is over `--max-input-size`; errors name the path (and the line of the first
/// invalid byte for non-UTF-8 text).
pub fn read_text(path: &std::path::Path, input: &InputArgs) -> Result<String, UsageError> {
    use kruise_lua_engine::input::{self, ReadError};
    input::read_text(path, input.limit_bytes()).map_err(|err| match err {
        ReadError::NotUtf8 { line, column } => UsageError(format!(
            "{}:{line}: byte {column} is not valid UTF-8 (kruise-lua reads UTF-8 text only)",
            paths::display(path)
        )),
        other => UsageError(format!("{}: {other}", paths::display(path))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_name_the_failing_path() {
        let plain = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        assert_eq!(
            UsageError::io(std::path::Path::new("./tree"), &plain).0,
            "tree: permission denied"
        );
        let deep = std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            "tree/g/K/testdata: permission denied",
        );
        assert_eq!(
            UsageError::io(std::path::Path::new("tree"), &deep).0,
            "tree/g/K/testdata: permission denied"
        );
    }
}
