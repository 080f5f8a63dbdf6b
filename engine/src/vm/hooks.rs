//! What a run tells an observer while it executes: each line about to run, and an error the
//! script did not catch (with the raising frame still on the stack). The debugger implements
//! [`RunObserver`]; the VM knows nothing more of it.

use std::ptr::NonNull;

use mlua::ffi;

use super::{HOOK_INTERVAL, RunContext, Sandbox, State, check_budget, context};
use crate::error::ScriptError;

/// An observer of one run, called on the thread that runs it.
pub(crate) trait RunObserver {
    /// The run in `sandbox` is about to start (the sandbox lives until [`Self::ended`]).
    fn started(&mut self, sandbox: &Sandbox);

    /// The run in `sandbox` ended.
    fn ended(&mut self, sandbox: &Sandbox);

    /// A line of Lua code is about to run (of any chunk: the observer picks the script's).
    ///
    /// # Safety
    /// Called from the line hook, with its state and activation record; `context` is the
    /// run's.
    unsafe fn line(&mut self, l: State, ar: *mut ffi::lua_Debug, context: &RunContext);

    /// The run's message handler got an error the script did not catch; the error value is
    /// at index 1 and the frame that raised it is still on the stack.
    ///
    /// # Safety
    /// Called from the message handler, with its state; `context` is the run's.
    unsafe fn error(&mut self, l: State, context: &RunContext);

    /// Something about the run the observer should know that the run itself cannot say
    /// (e.g. that the controller does not run the script for a step).
    fn notice(&mut self, text: String);
}

impl Sandbox {
    /// Runs the loaded chunk as [`Sandbox::run`] does, with `observer` told of every line
    /// and of an uncaught error.
    pub(crate) fn run_observed<T>(
        &self,
        observer: &mut dyn RunObserver,
        finish: impl FnMut(Result<(State, std::ffi::c_int), ScriptError>) -> T,
    ) -> T {
        observer.started(self);
        let context = self.run_context();
        let pointer: NonNull<dyn RunObserver + '_> = NonNull::from(&mut *observer);
        // SAFETY: only the lifetime is erased; the context points at the observer only
        // until this run returns, and the observer outlives the call.
        let pointer: NonNull<dyn RunObserver> = unsafe { std::mem::transmute(pointer) };
        context.observer.set(Some(pointer));
        // SAFETY: a valid state; the hook reads the observer through the context.
        unsafe {
            ffi::lua_sethook(
                self.state(),
                Some(observed_hook),
                ffi::LUA_MASKCOUNT | ffi::LUA_MASKLINE,
                HOOK_INTERVAL,
            );
        }
        let result = self.run(finish);
        context.observer.set(None);
        observer.ended(self);
        result
    }
}

/// The hook of an observed run: the observer on line events, the budget check on every
/// event.
unsafe extern "C-unwind" fn observed_hook(l: State, ar: *mut ffi::lua_Debug) {
    // SAFETY: Lua calls the hook with a valid state and record. Nothing owned is alive
    // when check_budget raises.
    unsafe {
        if (*ar).event == ffi::LUA_HOOKLINE
            && let Some(context) = context(l)
            && let Some(mut observer) = context.observer.get()
        {
            observer.as_mut().line(l, ar, context);
        }
        check_budget(l, ar);
    }
}

/// Tells the run's observer, if any, of the error being handled.
///
/// # Safety
/// Called from the run's message handler, with the error value at index 1.
pub(super) unsafe fn uncaught_error(l: State, context: &RunContext) {
    if let Some(mut observer) = context.observer.get() {
        // SAFETY: `run_observed` points the context at a live observer for the run's length.
        unsafe { observer.as_mut().error(l, context) };
    }
}
