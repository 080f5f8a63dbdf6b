//! `kruise-lua`: checks OpenKruise Rollout traffic-routing Lua scripts against their test cases
//! (`check`), and helps authors debug them (`obj`, `run`). A future `lsp` subcommand will live
//! beside these in [`cli::Command`].

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
