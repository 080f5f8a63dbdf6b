//! `kruise-lua`: checks and serves OpenKruise Rollout Lua traffic-routing scripts.

mod analysis;
mod lsp;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "kruise-lua", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the language server over stdio.
    Lsp,
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Lsp => lsp::run_stdio(),
    }
}
