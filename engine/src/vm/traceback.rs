//! gopher-lua's `stack traceback:` block for an error a chunk did not catch, which Kruise's
//! log shows after the message (state.go: `ApiError.Error()`, `stackTrace`).

use std::ffi::{c_char, c_int};

use mlua::ffi;

use super::{State, context, kruise_lost_tail_calls};

/// The message handler of a chunk's run: records gopher-lua's traceback of the error in
/// the run context (the error value itself is left as it is).
pub(super) unsafe extern "C-unwind" fn traceback_handler(l: State) -> c_int {
    // SAFETY: called by Lua as a message handler, with a valid state and the error value
    // as its argument. The traceback is built in Rust memory; only storing it can raise (a
    // memory error), which leaks nothing but that string.
    unsafe {
        ffi::lua_settop(l, 1);
        let traceback = gopher_traceback(l);
        if let Some(context) = context(l) {
            *context.traceback.borrow_mut() = Some(traceback);
            // An observed run (a debugged one) stops here, with the raising frame still on
            // the stack.
            super::hooks::uncaught_error(l, context);
        }
        1
    }
}

/// gopher-lua's `stackTrace(0)` (state.go) for the error being handled, from the frame that
/// raised it (level 1; level 0 is the handler) down to the chunk: per frame `where(i,
/// false)` (`<string>:LINE:`, or `[G]:` for a Go/C function) and its name as
/// formattedFrameFuncName gives it (the call site's name; `<source:linedefined>` for a Lua
/// function without one or reached by a tail call; `?` for a C function called by Lua
/// without a name, `(anonymous)` otherwise), `(tailcall): ?` for each lost tail call, and
/// a final `[G]: ?`; more than 20 lines keep the first and last 7 around `...`.
///
/// # Safety
/// `l` is a valid state.
unsafe fn gopher_traceback(l: State) -> String {
    fn text(p: *const c_char) -> String {
        if p.is_null() {
            return String::new();
        }
        // SAFETY: lua_getinfo leaves NUL-terminated strings (or NULL) in the record.
        unsafe { std::ffi::CStr::from_ptr(p) }
            .to_string_lossy()
            .into_owned()
    }
    let mut lines = Lines::default();
    let mut level = 1;
    // SAFETY: lua_Debug is plain integers and pointers; lua_getstack/lua_getinfo fill it.
    let mut ar: ffi::lua_Debug = unsafe { std::mem::zeroed() };
    while unsafe { ffi::lua_getstack(l, level, &mut ar) } != 0 {
        unsafe { ffi::lua_getinfo(l, c"Snl".as_ptr(), &mut ar) };
        let what = text(ar.what);
        if what == "tail" {
            // (Reached only past a frame whose lost tail calls were not counted below.)
            lines.push("\t(tailcall): ?");
            level += 1;
            continue;
        }
        let source = text(ar.short_src.as_ptr());
        let is_c = what == "C";
        let place = if is_c {
            "[G]:".to_owned()
        } else {
            format!("{source}:{}:", ar.currentline)
        };
        let name = if what == "main" {
            "main chunk".to_owned()
        } else {
            // (PUC names a non-string key "?", as gopher's getExprName does)
            let called = text(ar.name);
            let name = if !is_c && (called.is_empty() || called == "?") {
                format!("<{source}:{}>", ar.linedefined)
            } else if !called.is_empty() {
                called
            } else {
                // A Go function without a call-site name: "?" when Lua code called it.
                let mut caller: ffi::lua_Debug = unsafe { std::mem::zeroed() };
                let lua_caller = unsafe { ffi::lua_getstack(l, level + 1, &mut caller) } != 0
                    && unsafe { ffi::lua_getinfo(l, c"S".as_ptr(), &mut caller) } != 0
                    && text(caller.what) != "C";
                if lua_caller { "?" } else { "(anonymous)" }.to_owned()
            };
            if name.starts_with('(') || name.starts_with('<') {
                format!("function {name}")
            } else {
                format!("function '{name}'")
            }
        };
        lines.push(&format!("\t{place} in {name}"));
        // A tail-recursive loop cut short by the timeout leaves millions of lost tail calls
        // above the frame: their lines are counted, not made, and their levels skipped at once.
        let lost = unsafe { kruise_lost_tail_calls(l, level) }.max(0);
        lines.push_repeated("\t(tailcall): ?", lost as usize);
        level += 1 + lost;
    }
    lines.push("\t[G]: ?");
    format!("stack traceback:\n{}", lines.shown().join("\n"))
}

/// gopher-lua keeps the first and the last [`KEPT`] lines of a traceback of more than
/// [`SHOWN_WHOLE`] around a `...` line (state.go `stackTrace`).
const SHOWN_WHOLE: usize = 20;
const KEPT: usize = 7;

/// The lines of a traceback as gopher-lua shows them, held in bounded memory however many
/// there are: the first [`KEPT`], the last [`KEPT`] and how many in all.
#[derive(Default)]
struct Lines {
    first: Vec<String>,
    last: std::collections::VecDeque<String>,
    count: usize,
}

impl Lines {
    fn push(&mut self, line: &str) {
        self.push_repeated(line, 1);
    }

    fn push_repeated(&mut self, line: &str, times: usize) {
        let into_first = times.min(SHOWN_WHOLE.saturating_sub(self.first.len()));
        self.first
            .extend(std::iter::repeat_n(line, into_first).map(str::to_owned));
        for _ in 0..times.min(KEPT) {
            if self.last.len() == KEPT {
                self.last.pop_front();
            }
            self.last.push_back(line.to_owned());
        }
        self.count += times;
    }

    /// All of them when there are at most [`SHOWN_WHOLE`] (then `first` holds them all),
    /// else the first and last [`KEPT`] around `...`.
    fn shown(mut self) -> Vec<String> {
        if self.count <= SHOWN_WHOLE {
            return self.first;
        }
        self.first.truncate(KEPT);
        self.first.push("\t...".to_owned());
        self.first.extend(self.last);
        self.first
    }
}
