//! The run side of a debugging session, as the run's observer (`vm::hooks`): stepping,
//! breakpoints, logpoints, the stop on an uncaught error, and giving time spent stopped back
//! to the run's deadline.

use std::collections::HashMap;
use std::ffi::{CStr, c_int};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::NonNull;
use std::time::{Duration, Instant};

use mlua::ffi;

use super::eval::{self, SCRIPT_SOURCE, Shown};
use super::inspect::Paused;
use super::{Breakpoint, Control, Debugger, Output, Resume, Stop, StopReason};
use crate::vm::hooks::RunObserver;
use crate::vm::{self, RunContext, Sandbox, State};

/// Call levels looked at, at most, when measuring the stack's depth.
const MAX_DEPTH: c_int = 1_000;

/// What a finished step in / over / out waits for.
#[derive(Debug, Clone, Copy)]
enum Stepping {
    In,
    /// A line at this depth or shallower.
    Over(c_int),
    /// A line shallower than this depth.
    Out(c_int),
}

/// One debugged run: the debugger, what it shares with other threads, and the stepping and
/// hit-count state. The run context points at it while the run executes.
pub(crate) struct Session<'a> {
    control: &'a Control,
    debugger: &'a mut dyn Debugger,
    /// The sandbox of the run, while it runs.
    sandbox: Option<NonNull<Sandbox>>,
    stepping: Option<Stepping>,
    /// Hits per breakpoint line since the breakpoints were last set.
    hits: HashMap<u32, u64>,
    generation: u64,
    /// How many of the run's prints were handed to the debugger.
    printed: usize,
}

impl<'a> Session<'a> {
    pub(crate) fn new(control: &'a Control, debugger: &'a mut dyn Debugger) -> Session<'a> {
        Session {
            control,
            generation: control.generation(),
            debugger,
            sandbox: None,
            stepping: None,
            hits: HashMap::new(),
            printed: 0,
        }
    }

    /// Hands the debugger what the script printed since the last call.
    fn flush_prints(&mut self, context: &RunContext) {
        let fresh: Vec<String> = context
            .prints
            .borrow()
            .iter()
            .skip(self.printed)
            .cloned()
            .collect();
        self.printed += fresh.len();
        for text in fresh {
            self.debugger.output(Output::Print(text));
        }
    }

    /// A line event of the script: stop when a pause, the entry, a step or a breakpoint
    /// says so.
    ///
    /// # Safety
    /// Called from the hook with its state and record; the sandbox is the run's.
    unsafe fn on_line(&mut self, l: State, ar: *mut ffi::lua_Debug, context: &RunContext) {
        let line = unsafe {
            ffi::lua_getinfo(l, c"Sl".as_ptr(), ar);
            if (*ar).source.is_null() || CStr::from_ptr((*ar).source).to_bytes() != SCRIPT_SOURCE {
                return;
            }
            (*ar).currentline.max(0) as u32
        };
        self.flush_prints(context);
        let started = Instant::now();
        let reason = if self.control.take_pause() {
            Some(StopReason::Pause)
        } else if self.control.take_stop_on_entry() {
            Some(StopReason::Entry)
        } else if self.step_done(l) {
            Some(StopReason::Step)
        } else if let Some(breakpoint) = self.control.breakpoint_at(line)
            && self.breakpoint_fires(&breakpoint)
        {
            Some(StopReason::Breakpoint)
        } else {
            None
        };
        if let Some(reason) = reason {
            let stop = Stop {
                reason,
                line,
                message: None,
                limit: None,
            };
            self.stop(l, 0, &stop);
        }
        give_back(context, started.elapsed());
    }

    /// Whether the step in progress ends at this line.
    fn step_done(&self, l: State) -> bool {
        match self.stepping {
            None => false,
            Some(Stepping::In) => true,
            Some(Stepping::Over(depth)) => stack_depth(l) <= depth,
            Some(Stepping::Out(depth)) => stack_depth(l) < depth,
        }
    }

    /// Counts a hit of `breakpoint` when its condition holds, and says whether to stop
    /// (a logpoint prints its message instead).
    fn breakpoint_fires(&mut self, breakpoint: &Breakpoint) -> bool {
        let generation = self.control.generation();
        if generation != self.generation {
            self.generation = generation;
            self.hits.clear();
        }
        let line = breakpoint.line;
        if let Some(condition) = &breakpoint.condition {
            match self.evaluate(condition) {
                Ok(value) if !value.is_truthy() => return false,
                Ok(_) => {}
                Err(message) => {
                    // Stopping shows the author the problem where it is.
                    self.notice(format!(
                        "line {line}: the breakpoint condition `{condition}` failed: {message}"
                    ));
                    return true;
                }
            }
        }
        let hits = self.hits.entry(line).or_insert(0);
        *hits += 1;
        let hits = *hits;
        if let Some(condition) = &breakpoint.hit_condition {
            match hit_condition_holds(condition, hits) {
                Ok(false) => return false,
                Ok(true) => {}
                Err(message) => self.notice(format!("line {line}: {message}")),
            }
        }
        if let Some(message) = &breakpoint.log_message {
            let text = self.interpolate(message);
            self.debugger.output(Output::Log { line, text });
            return false;
        }
        true
    }

    /// A logpoint's message with each `{expression}` replaced by its value (`{{` and `}}`
    /// stand for braces).
    fn interpolate(&mut self, message: &str) -> String {
        let mut out = String::new();
        let mut rest = message;
        while let Some(at) = rest.find(['{', '}']) {
            out.push_str(&rest[..at]);
            let brace = &rest[at..at + 1];
            rest = &rest[at + 1..];
            if rest.starts_with(brace) {
                out.push_str(brace);
                rest = &rest[1..];
                continue;
            }
            if brace == "}" {
                out.push('}');
                continue;
            }
            let Some(end) = rest.find('}') else {
                out.push('{');
                continue;
            };
            let expression = &rest[..end];
            rest = &rest[end + 1..];
            match self.evaluate(expression) {
                Ok(value) => out.push_str(&value.plain_text()),
                Err(message) => out.push_str(&format!("<{expression}: {message}>")),
            }
        }
        out.push_str(rest);
        out
    }

    /// Evaluates `expression` in the function the line hook stopped in (level 0).
    fn evaluate(&mut self, expression: &str) -> Result<Shown, String> {
        let Some(sandbox) = self.sandbox else {
            return Err("the run is not stopped".to_owned());
        };
        // SAFETY: the sandbox outlives the run, and the state is stopped in the hook.
        unsafe { eval::evaluate(sandbox.as_ref(), Some(0), expression) }
    }

    /// Hands the stopped state to the debugger and sets up what its answer asks for.
    fn stop(&mut self, l: State, base: c_int, stop: &Stop) {
        let Some(sandbox) = self.sandbox else { return };
        // SAFETY: the sandbox outlives the run; the state is stopped (hook or handler).
        let sandbox = unsafe { sandbox.as_ref() };
        let resume = {
            let mut paused = Paused::new(l, sandbox, base);
            self.debugger.stopped(stop, &mut paused)
        };
        let depth = stack_depth(l) - base;
        self.stepping = match resume {
            Resume::Continue => None,
            Resume::StepIn => Some(Stepping::In),
            Resume::StepOver => Some(Stepping::Over(depth)),
            Resume::StepOut => Some(Stepping::Out(depth)),
            Resume::Terminate => {
                self.control.request_terminate();
                None
            }
        };
    }
}

impl RunObserver for Session<'_> {
    fn started(&mut self, sandbox: &Sandbox) {
        self.sandbox = Some(NonNull::from(sandbox));
    }

    fn ended(&mut self, sandbox: &Sandbox) {
        self.flush_prints(sandbox.run_context());
        self.sandbox = None;
    }

    /// The line hook's part in a debugged run; a terminate request ends the run as a spent
    /// deadline does (uncatchable).
    unsafe fn line(&mut self, l: State, ar: *mut ffi::lua_Debug, context: &RunContext) {
        // A panic must not unwind through Lua's C frames: it ends the run instead.
        // SAFETY: as the trait requires.
        let lined = catch_unwind(AssertUnwindSafe(|| unsafe { self.on_line(l, ar, context) }));
        if lined.is_err() {
            self.control.request_terminate();
        }
        if self.control.terminating() {
            context.deadline.set(Some(Instant::now()));
        }
    }

    /// The message handler's part in a debugged run: stop at the frame that raised an
    /// error the script did not catch.
    unsafe fn error(&mut self, l: State, context: &RunContext) {
        let session = self;
        if session.control.terminating() || context.abandoned.get() {
            return;
        }
        let started = Instant::now();
        // A panic must not unwind through Lua's C frames: the error goes on as it was.
        let _ = catch_unwind(AssertUnwindSafe(|| {
            session.flush_prints(context);
            // SAFETY: a valid state inside the handler (level 0); the error value is at 1.
            let (message, base, line) = unsafe {
                let message = vm::error_text(l, 1);
                let (base, line) = raising_frame(l);
                (message, base, line)
            };
            let stop = Stop {
                reason: StopReason::Exception,
                line,
                message: Some(message),
                limit: context.limit_hit(),
            };
            session.stop(l, base, &stop);
        }));
        give_back(context, started.elapsed());
    }

    fn notice(&mut self, text: String) {
        self.debugger.output(Output::Notice(text));
    }
}

/// Moves the run's deadline later by `paused`: the debugger's time is not the script's.
fn give_back(context: &RunContext, paused: Duration) {
    if let Some(deadline) = context.deadline.get() {
        context.deadline.set(Some(deadline + paused));
    }
}

/// How many call levels the stack has.
fn stack_depth(l: State) -> c_int {
    let mut depth = 0;
    // SAFETY: lua_getstack only reads the call records; the record is plain data.
    let mut ar: ffi::lua_Debug = unsafe { std::mem::zeroed() };
    while depth < MAX_DEPTH && unsafe { ffi::lua_getstack(l, depth, &mut ar) } != 0 {
        depth += 1;
    }
    depth
}

/// In the message handler: the level of the innermost Lua function (the one that raised,
/// or that called the library function which raised; level 0 is the handler) and the
/// innermost script line.
///
/// # Safety
/// `l` is a valid state.
unsafe fn raising_frame(l: State) -> (c_int, u32) {
    let mut base = None;
    let mut line = 0;
    let mut ar: ffi::lua_Debug = unsafe { std::mem::zeroed() };
    let mut level = 1;
    while level < MAX_DEPTH && unsafe { ffi::lua_getstack(l, level, &mut ar) } != 0 {
        unsafe { ffi::lua_getinfo(l, c"Sl".as_ptr(), &mut ar) };
        // SAFETY: getinfo "S" sets `what` and `source` to NUL-terminated strings.
        let (what, source) = unsafe {
            (
                CStr::from_ptr(ar.what).to_bytes(),
                CStr::from_ptr(ar.source).to_bytes(),
            )
        };
        if what != b"C" && base.is_none() {
            base = Some(level);
        }
        if source == SCRIPT_SOURCE && ar.currentline > 0 {
            line = ar.currentline as u32;
            break;
        }
        level += 1;
    }
    (base.unwrap_or(1), line)
}

/// Why a DAP hit condition is refused (not a count, or one no hit can reach), checked when the
/// breakpoint is set so the author hears of it before the run.
pub fn check_hit_condition(condition: &str) -> Result<(), String> {
    hit_condition_holds(condition, 1).map(|_| ())
}

/// Whether `hits` satisfies a DAP hit condition: `N` / `==N`, `>N`, `>=N`, `<N`, `<=N`,
/// `%N`.
fn hit_condition_holds(condition: &str, hits: u64) -> Result<bool, String> {
    let condition = condition.trim();
    let (op, number) = ["==", ">=", "<=", ">", "<", "%", "="]
        .iter()
        .find_map(|op| condition.strip_prefix(op).map(|rest| (*op, rest)))
        .unwrap_or(("==", condition));
    let n: u64 = number.trim().parse().map_err(|_| {
        format!(
            "the hit condition `{condition}` is not a count (N, ==N, >N, >=N, <N, <=N or %N); the breakpoint stops on every hit"
        )
    })?;
    // A count no hit can reach would silently never stop: it is refused like a non-count
    // (hits count from 1, so `%0`, `<1`, `<=0` and `==0` can never hold).
    let never = match op {
        "%" | "<=" | "==" | "=" => n == 0,
        "<" => n <= 1,
        _ => false,
    };
    if never {
        return Err(format!(
            "the hit condition `{condition}` can never hold (hits count from 1); the breakpoint stops on every hit"
        ));
    }
    Ok(match op {
        ">" => hits > n,
        ">=" => hits >= n,
        "<" => hits < n,
        "<=" => hits <= n,
        "%" => n != 0 && hits.is_multiple_of(n),
        _ => hits == n,
    })
}

#[cfg(test)]
mod tests {
    use super::hit_condition_holds;

    #[test]
    fn hit_conditions_compare_the_count() {
        assert_eq!(hit_condition_holds("3", 3), Ok(true));
        assert_eq!(hit_condition_holds("3", 4), Ok(false));
        assert_eq!(hit_condition_holds(">= 2", 2), Ok(true));
        assert_eq!(hit_condition_holds(">2", 2), Ok(false));
        assert_eq!(hit_condition_holds("%2", 4), Ok(true));
        assert_eq!(hit_condition_holds("%2", 3), Ok(false));
        assert_eq!(hit_condition_holds("<2", 1), Ok(true));
        assert!(hit_condition_holds("often", 1).is_err());
        for never in ["%0", "0", "==0", "<1", "<0", "<=0", "= 0"] {
            let error = hit_condition_holds(never, 1).unwrap_err();
            assert!(error.contains("can never hold"), "{never}: {error}");
        }
    }
}
