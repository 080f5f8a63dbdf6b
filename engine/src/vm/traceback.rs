//! gopher-lua's `stack traceback:` block for an error a chunk did not catch, which Kruise's
//! log shows after the message (state.go: `ApiError.Error()`, `stackTrace`).

use std::ffi::{c_char, c_int};

use mlua::ffi;

use super::{State, context};

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
    let mut lines: Vec<String> = Vec::new();
    let mut level = 1;
    // SAFETY: lua_Debug is plain integers and pointers; lua_getstack/lua_getinfo fill it.
    let mut ar: ffi::lua_Debug = unsafe { std::mem::zeroed() };
    while unsafe { ffi::lua_getstack(l, level, &mut ar) } != 0 {
        unsafe { ffi::lua_getinfo(l, c"Snl".as_ptr(), &mut ar) };
        let what = text(ar.what);
        if what == "tail" {
            lines.push("\t(tailcall): ?".to_owned());
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
        lines.push(format!("\t{place} in {name}"));
        level += 1;
    }
    lines.push("\t[G]: ?".to_owned());
    if lines.len() > 20 {
        let tail = lines.split_off(lines.len() - 7);
        lines.truncate(7);
        lines.push("\t...".to_owned());
        lines.extend(tail);
    }
    format!("stack traceback:\n{}", lines.join("\n"))
}
