//! What every subcommand shares: the option groups (`--mode`, `--color`, limits, input size),
//! the exit codes, writing output, and reading inputs.

use std::time::Duration;

use clap::{Args, ValueEnum};
use kruise_lua_engine::json::KeyOrder;
use kruise_lua_engine::runner::{Mode, RunOptions};
use kruise_lua_engine::vm::Limits;

use crate::project::{UsageError, io_message, paths};

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

/// The run budget options shared by every command that runs scripts (`check`, `obj`, `run`,
/// `plan`, `accept`).
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
    pub fn limits(&self) -> crate::message_limits::MessageLimits {
        crate::message_limits::MessageLimits::from_mib(self.max_message_size)
    }
}

/// The input size option shared by every command that reads scripts, cases or manifests.
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
            write_stderr_line(&super::terminal::escape_controls(&format!(
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
        write_stderr_line(&super::terminal::escape_controls(&format!(
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
    crate::project::read_text(path, input.limit_bytes())
}
