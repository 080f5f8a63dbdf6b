//! Sandboxes kept ready for one script: Kruise's environment is built and the chunk loaded
//! once, a snapshot is taken, and after every run the sandbox is rewound to it. Each run
//! thus starts from a state identical, byte for byte, to a freshly made one, without paying
//! for making it (most of a short step's cost).

use std::sync::Mutex;

use crate::error::ScriptError;
use crate::json::KeyOrder;
use crate::vm::Sandbox;

use super::{RunOptions, cannot_prepare, fresh_sandbox};

/// Idle sandboxes kept per script: enough for one per worker thread of a parallel check
/// on a usual machine; more are made when needed, and the oldest idle ones dropped.
const MAX_IDLE: usize = 8;

/// The ready sandboxes of one script, shared by the clones of its [`super::Script`].
#[derive(Default)]
pub(super) struct PreparedSandboxes {
    idle: Mutex<Vec<Prepared>>,
}

impl std::fmt::Debug for PreparedSandboxes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let idle = self.idle.lock().map_or(0, |idle| idle.len());
        f.debug_struct("PreparedSandboxes")
            .field("idle", &idle)
            .finish()
    }
}

/// A sandbox with the environment and the chunk, at its snapshot, and what it was built
/// for (the run options that shape a state; the timeout applies per run).
struct Prepared {
    sandbox: Sandbox,
    memory_bytes: usize,
    key_order: KeyOrder,
}

impl Prepared {
    fn suits(&self, options: &RunOptions) -> bool {
        self.memory_bytes == options.limits.memory_bytes && self.key_order == options.key_order
    }
}

impl PreparedSandboxes {
    /// A sandbox for one run of `bytecode` under `options`, with its budget started: an
    /// idle one, or a new one. The error is the run's when the environment or the chunk
    /// does not fit in the memory cap.
    pub(super) fn take(
        &self,
        bytecode: &[u8],
        options: &RunOptions,
    ) -> Result<Lease<'_>, ScriptError> {
        let idle = {
            let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
            // The newest that suits; `remove` keeps the others in age order for `Drop`.
            let found = idle.iter().rposition(|p| p.suits(options));
            found.map(|index| idle.remove(index))
        };
        let prepared = match idle {
            Some(prepared) => prepared,
            None => Prepared {
                sandbox: prepare(bytecode, options)?,
                memory_bytes: options.limits.memory_bytes,
                key_order: options.key_order,
            },
        };
        prepared.sandbox.begin_run(options.limits.timeout);
        Ok(Lease {
            pool: self,
            prepared: Some(prepared),
        })
    }
}

/// A new sandbox with Kruise's environment and the chunk loaded, at its snapshot.
fn prepare(bytecode: &[u8], options: &RunOptions) -> Result<Sandbox, ScriptError> {
    let mut sandbox = loaded_sandbox(bytecode, options)?;
    sandbox.snapshot();
    Ok(sandbox)
}

/// A new sandbox with Kruise's environment and the chunk loaded, without a snapshot (a
/// debugged run's: the debugger takes its own).
pub(super) fn loaded_sandbox(
    bytecode: &[u8],
    options: &RunOptions,
) -> Result<Sandbox, ScriptError> {
    let sandbox = fresh_sandbox(options).map_err(cannot_prepare)?;
    sandbox.load(bytecode)?;
    Ok(sandbox)
}

/// A prepared sandbox lent for one run: rewound and returned to the pool when dropped.
pub(super) struct Lease<'a> {
    pool: &'a PreparedSandboxes,
    prepared: Option<Prepared>,
}

impl std::ops::Deref for Lease<'_> {
    type Target = Sandbox;

    fn deref(&self) -> &Sandbox {
        &self
            .prepared
            .as_ref()
            .expect("leased until dropped")
            .sandbox
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        let Some(mut prepared) = self.prepared.take() else {
            return;
        };
        // A panic may have left the engine's own bookkeeping half done: make no reuse of it.
        if std::thread::panicking() {
            return;
        }
        prepared.sandbox.rewind();
        let mut idle = self.pool.idle.lock().unwrap_or_else(|e| e.into_inner());
        // The oldest goes first: runs under other options (e.g. `check --shuffle`'s seeds)
        // need not starve the current ones.
        if idle.len() == MAX_IDLE {
            idle.remove(0);
        }
        idle.push(prepared);
    }
}
