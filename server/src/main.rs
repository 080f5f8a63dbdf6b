//! `kruise-lua`: checks OpenKruise Rollout traffic-routing Lua scripts against their test cases
//! (`check`), helps authors debug and start them (`obj`, `run`, `new`), and serves them to
//! editors (`lsp`).

mod analysis;
mod atomic_write;
mod chunk_positions;
mod cli;
mod crd_sources;
mod dap;
mod freed_memory;
mod lsp;
mod lua_source;
mod message_limits;

/// The stack of every thread that runs scripts, compares or reports their results: a result
/// may be nested up to the encoder's 10,000 levels (Go's bound), and comparing, diffing and
/// dropping such a value recurses once per level (a 9,000-level result overflowed the 2 MiB
/// worker stacks and the 8 MiB main thread). Reserved, not committed, memory.
pub(crate) const WORKER_STACK: usize = 32 << 20;

fn main() -> std::process::ExitCode {
    cli::main()
}
