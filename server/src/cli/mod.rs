//! Command-line parsing and dispatch: one module per subcommand, shared option types, and
//! the exit-code convention (0 all good, 1 findings, 2 usage or I/O error), which `--help`
//! lists.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::project::UsageError;
use options::{EXIT_CODES_HELP, EXIT_FINDINGS, EXIT_USAGE, ServeArgs, write_stderr_line};

pub mod accept;
pub mod check;
pub mod fix;
pub mod lint;
pub mod lint_finding;
pub mod lint_report;
pub mod new;
pub mod obj;
pub mod options;
pub mod plan;
pub mod report;
pub mod run;
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
    #[command(after_help = plan::EXIT_CODES_HELP)]
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

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    if matches!(cli.command, Command::Lsp(_) | Command::Dap(_)) {
        crate::freed_memory::one_arena();
    }
    // Steps run on rayon's pool, reports are written on the command's thread: both with
    // stacks for the deepest results (see WORKER_STACK).
    let _ = rayon::ThreadPoolBuilder::new()
        .stack_size(crate::project::WORKER_STACK)
        .build_global();
    std::thread::Builder::new()
        .name("kruise-lua".into())
        .stack_size(crate::project::WORKER_STACK)
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
