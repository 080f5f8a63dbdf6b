//! Debugging one step of a case: the step runs as everywhere else (same sandbox, obj and
//! limits), with a line hook that stops at breakpoints, steps and pauses and hands a
//! [`Debugger`] the stopped state to inspect. Plain data in and out: no protocol here.
//!
//! Time spent stopped (or evaluating breakpoint conditions and logpoints) is given back to
//! the run's deadline, so the 1 s timeout counts the script's own time only. Scripts never
//! see the `debug` library: the hook is installed through the C API.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::steps::{self, StepOutcome, StepToRun};

mod eval;
mod inspect;
mod session;
#[cfg(test)]
mod tests;
mod values;

pub use inspect::{Frame, Paused, Scope, Variable};
pub(crate) use session::Session;
pub use session::check_hit_condition;
pub use values::{
    LineValue, MAX_RECORDED_STOPS, StepValues, record_step_values, record_step_values_after,
    record_step_values_assigned,
};

/// A line breakpoint of the script, with DAP's optional parts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Breakpoint {
    /// 1-based script line.
    pub line: u32,
    /// Stop only when this Lua expression is truthy in the stopped frame.
    pub condition: Option<String>,
    /// Stop only when the hit count satisfies this: `N` or `==N`, `>N`, `>=N`, `<N`, `<=N`,
    /// `%N` (every Nth hit).
    pub hit_condition: Option<String>,
    /// A logpoint: print this message (with `{expression}` parts evaluated) instead of
    /// stopping.
    pub log_message: Option<String>,
}

/// Why the run stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// The first line of the script (`stopOnEntry`).
    Entry,
    Breakpoint,
    /// A step in / over / out finished.
    Step,
    /// [`Control::request_pause`] while the script ran.
    Pause,
    /// An error the script did not catch; the run ends when resumed.
    Exception,
}

/// Where and why the run stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stop {
    pub reason: StopReason,
    /// The script line of the innermost script frame (0 when no script frame is running).
    pub line: u32,
    /// The error message of an exception stop.
    pub message: Option<String>,
    /// For an exception stop, the budget the run spent, if that is what raised it (a timeout
    /// is a timeout, not a runtime error, as the verdict and `check` call it).
    pub limit: Option<crate::vm::LimitHit>,
}

/// How to go on from a stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resume {
    Continue,
    /// Stop at the next script line, in whatever function.
    StepIn,
    /// Stop at the next line of this function or of a caller.
    StepOver,
    /// Stop at the next line of a caller.
    StepOut,
    /// End the run now (it ends with a timeout error, which the script cannot catch).
    Terminate,
}

/// What the run printed or the debugger has to say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// One `print` call of the script.
    Print(String),
    /// A logpoint's message, with the line it is on.
    Log { line: u32, text: String },
    /// A note about the run (a breakpoint condition that failed to evaluate, a step the
    /// controller does not run the script for).
    Notice(String),
}

/// The debugger's side: called on the thread that runs the step.
pub trait Debugger {
    /// The run stopped: answer requests through `paused`, then say how to go on.
    fn stopped(&mut self, stop: &Stop, paused: &mut Paused<'_>) -> Resume;
    /// Output, in the order the run produced it.
    fn output(&mut self, output: Output);
}

/// What another thread may change while the step runs: breakpoints, a pause or terminate
/// request.
#[derive(Debug, Default)]
pub struct Control {
    pause: AtomicBool,
    terminate: AtomicBool,
    stop_on_entry: AtomicBool,
    breakpoints: Mutex<Vec<Breakpoint>>,
    /// Bumped by every [`Self::set_breakpoints`]: hit counts start again.
    generation: AtomicU64,
}

impl Control {
    pub fn new(stop_on_entry: bool) -> Control {
        let control = Control::default();
        control
            .stop_on_entry
            .store(stop_on_entry, Ordering::Relaxed);
        control
    }

    /// Replaces every breakpoint (DAP's setBreakpoints does the same per source).
    pub fn set_breakpoints(&self, breakpoints: Vec<Breakpoint>) {
        *self.breakpoints.lock().unwrap_or_else(|e| e.into_inner()) = breakpoints;
        self.generation.fetch_add(1, Ordering::Relaxed);
    }

    /// Stops the run at the next script line it executes (a running loop stops where it is).
    pub fn request_pause(&self) {
        self.pause.store(true, Ordering::Relaxed);
    }

    /// Ends the run at the next line or budget check.
    pub fn request_terminate(&self) {
        self.terminate.store(true, Ordering::Relaxed);
    }

    fn take_pause(&self) -> bool {
        self.pause.swap(false, Ordering::Relaxed)
    }

    /// Whether the run was asked to end.
    pub fn terminating(&self) -> bool {
        self.terminate.load(Ordering::Relaxed)
    }

    fn take_stop_on_entry(&self) -> bool {
        self.stop_on_entry.swap(false, Ordering::Relaxed)
    }

    fn generation(&self) -> u64 {
        self.generation.load(Ordering::Relaxed)
    }

    /// The breakpoint on `line`, if any.
    fn breakpoint_at(&self, line: u32) -> Option<Breakpoint> {
        let breakpoints = self.breakpoints.lock().unwrap_or_else(|e| e.into_inner());
        breakpoints.iter().find(|b| b.line == line).cloned()
    }
}

/// Runs `step` as [`steps::run_case_step`] does, with `debugger` attached to the script's
/// run, and returns the step's outcome (verdict and diff against `expected[index]`).
///
/// The debugged run is the one whose result the verdict compares, except for an ingress
/// script in production mode: there the controller may run the script several times on the
/// canary Ingress the earlier steps left, and the debugger is attached to the first of those
/// runs of this step; the verdict is the controller's, computed as everywhere else.
pub fn run_step(
    step: StepToRun<'_>,
    control: &Control,
    debugger: &mut dyn Debugger,
) -> StepOutcome {
    let mut session = Session::new(control, debugger);
    steps::run_case_step_observed(step, &mut session)
}
