//! A fresh, sandboxed Lua 5.1 state per run, with the time and memory budget armed,
//! and execution of a chunk with its failure classified into an [`ErrorKind`].

use std::cell::Cell;
use std::time::Duration;

use mlua::Lua;

use crate::error::ScriptError;

/// Budget of one run. Defaults: 1 s (Kruise's timeout) and 64 MiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub timeout: Duration,
    pub memory_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout: Duration::from_secs(1),
            memory_bytes: 64 * 1024 * 1024,
        }
    }
}

/// Which budget a run has spent, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitHit {
    Timeout,
    Memory,
}

/// Creates a Lua state opened as Kruise opens it (math, base, table, string; the `json`
/// module and gopher-lua's library differences are installed by `stdlib`/`json`), with the
/// deadline and memory cap of `limits` armed from now on.
pub fn new_state(limits: &Limits) -> mlua::Result<Lua> {
    let _ = limits;
    todo!("vm helper")
}

/// App data of a state made by [`new_state`]: which budget the run has spent, if any.
/// The hook and the allocator-limit handling set it; library code reads it.
#[derive(Debug, Default)]
pub struct RunBudget {
    pub hit: Cell<Option<LimitHit>>,
}

/// `Some` once the run in `lua` has spent its time or memory budget. Library code that
/// catches errors (pcall, xpcall) uses this to re-raise instead of swallowing the limit.
pub fn limit_hit(lua: &Lua) -> Option<LimitHit> {
    lua.app_data_ref::<RunBudget>()
        .and_then(|budget| budget.hit.get())
}

/// Loads `source` as a text chunk named `=<string>` (so messages read `<string>:LINE:` as in
/// gopher-lua) and runs it, returning every value it returned, or the error classified as
/// syntax / runtime (with line) / timeout / memory.
pub fn exec_chunk(lua: &Lua, source: &[u8]) -> Result<mlua::MultiValue, ScriptError> {
    let _ = (lua, source);
    todo!("vm helper")
}
