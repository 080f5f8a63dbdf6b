//! `kruise-lua`: checks OpenKruise Rollout traffic-routing Lua scripts against their test cases
//! (`check`), helps authors debug and start them (`obj`, `run`, `new`), and serves them to
//! editors (`lsp`).

mod analysis;
mod atomic_write;
mod chunk_positions;
mod cli;
mod dap;
mod framing;
mod freed_memory;
mod lsp;
mod lua_source;
mod message_limits;
mod project;
#[cfg(test)]
mod test_scratch;

fn main() -> std::process::ExitCode {
    cli::main()
}
