//! A fresh, sandboxed Lua 5.1 state per run, with the time and memory budget armed,
//! and execution of a chunk with its failure classified into an [`ErrorKind`].

use std::cell::Cell;
use std::os::raw::c_int;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use mlua::chunk::ChunkMode;
use mlua::debug::Debug;
use mlua::{HookTriggers, Lua, LuaOptions, MultiValue, StdLib, VmState};

use crate::error::{ErrorKind, ScriptError};

/// VM instructions between two budget checks. One check (clock read plus mlua's hook
/// dispatch) costs well under a microsecond, so 1000 keeps the overhead below ~1% while a
/// caught limit error lets a script run at most this many more instructions.
const HOOK_INTERVAL: u32 = 1000;

/// Message of the timeout error, as gopher-lua's (Go's `context.DeadlineExceeded`).
pub const DEADLINE_MESSAGE: &str = "context deadline exceeded";

/// Message of the memory-cap error (PUC Lua's own text for an allocation failure).
pub const MEMORY_MESSAGE: &str = "not enough memory";

unsafe extern "C-unwind" {
    /// Defined by the patched Lua in lua51-sys (lapi.c): non-zero once any allocation of
    /// the state has failed, i.e. the memory cap was reached.
    fn kruise_memerr(state: *mut mlua::ffi::lua_State) -> c_int;
}

/// Budget of one run. Defaults: 1 s (Kruise's timeout) and 64 MiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub timeout: Duration,
    pub memory_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { timeout: Duration::from_secs(1), memory_bytes: 64 * 1024 * 1024 }
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
    // Keeps the patched Lua (lua51-sys) in the link: mlua-sys's `external` build expects it.
    kruise_lua51_sys::link();
    // mlua always opens the base library first; math, table and string follow in gopher's
    // order (io, os, package and debug stay closed).
    let lua = Lua::new_with(StdLib::NONE, LuaOptions::new())?;
    for lib in [StdLib::MATH, StdLib::TABLE, StdLib::STRING] {
        lua.load_std_libs(lib)?;
    }
    lua.set_app_data(RunBudget::default());
    lua.set_memory_limit(limits.memory_bytes)?;

    let mut raw_state = std::ptr::null_mut();
    // SAFETY: the closure only copies the main state's pointer, which lives as long as
    // `lua` (and so as long as the hook and the app data that keep it).
    unsafe { lua.exec_raw::<()>((), |state| raw_state = state)? };
    lua.set_app_data(MainState(raw_state));
    let deadline = Instant::now() + limits.timeout;
    let triggers = HookTriggers::new().every_nth_instruction(HOOK_INTERVAL);
    lua.set_hook(triggers, move |lua, debug| check_budget(lua, debug, raw_state, deadline))?;
    Ok(lua)
}

/// The hook: once the deadline has passed or an allocation has failed, mark the budget and
/// raise, and keep raising on every later call so that pcall cannot keep the script alive.
fn check_budget(
    lua: &Lua,
    debug: &Debug,
    raw_state: *mut mlua::ffi::lua_State,
    deadline: Instant,
) -> mlua::Result<VmState> {
    let Some(budget) = lua.app_data_ref::<RunBudget>() else {
        return Ok(VmState::Continue);
    };
    if budget.hit.get().is_none() {
        // SAFETY: `raw_state` is the state this hook runs in (see new_state).
        if unsafe { kruise_memerr(raw_state) } != 0 {
            budget.hit.set(Some(LimitHit::Memory));
        } else if Instant::now() >= deadline {
            budget.hit.set(Some(LimitHit::Timeout));
        }
    }
    let hit = budget.hit.get();
    drop(budget);
    let message = match hit {
        None => return Ok(VmState::Continue),
        Some(LimitHit::Timeout) => DEADLINE_MESSAGE,
        Some(LimitHit::Memory) => MEMORY_MESSAGE,
    };
    // From now on run the same hook before every instruction: like gopher-lua's context
    // check, the first instruction after a pcall that caught this error raises it again.
    // SAFETY: lua_sethook only stores the hook fields of the running thread (allowed
    // inside a hook); the hook function stays mlua's.
    unsafe {
        let hook = mlua::ffi::lua_gethook(raw_state);
        mlua::ffi::lua_sethook(raw_state, hook, mlua::ffi::LUA_MASKCOUNT, 1);
    }
    match debug.current_line() {
        Some(line) => Err(mlua::Error::runtime(format!("<string>:{line}: {message}"))),
        None => Err(mlua::Error::runtime(message)),
    }
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
    let budget = lua.app_data_ref::<RunBudget>()?;
    // An allocation failure counts at once, even before the hook has seen it.
    if budget.hit.get().is_none() && memory_failed(lua) {
        budget.hit.set(Some(LimitHit::Memory));
    }
    budget.hit.get()
}

/// App data of a state made by [`new_state`]: its main thread, for reading the patched
/// VM's allocation-failure flag.
struct MainState(*mut mlua::ffi::lua_State);

/// Whether any allocation of the state has failed, i.e. the memory cap was reached.
fn memory_failed(lua: &Lua) -> bool {
    match lua.app_data_ref::<MainState>() {
        // SAFETY: the pointer is the live main state of `lua` (see new_state).
        Some(main) => unsafe { kruise_memerr(main.0) != 0 },
        None => false,
    }
}

/// Loads `source` as a text chunk named `=<string>` (so messages read `<string>:LINE:` as in
/// gopher-lua) and runs it, returning every value it returned, or the error classified as
/// syntax / runtime (with line) / timeout / memory.
pub fn exec_chunk(lua: &Lua, source: &[u8]) -> Result<MultiValue, ScriptError> {
    match catch_unwind(AssertUnwindSafe(|| run_chunk(lua, source))) {
        Ok(result) => result,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            Err(classify(lua, ErrorKind::Runtime, format!("internal error: {what}")))
        }
    }
}

fn run_chunk(lua: &Lua, source: &[u8]) -> Result<MultiValue, ScriptError> {
    let function = lua
        .load(source)
        .set_name("=<string>")
        .set_mode(ChunkMode::Text)
        .into_function()
        .map_err(|e| classify(lua, ErrorKind::Syntax, error_message(&e)))?;
    let values = function
        .call::<MultiValue>(())
        .map_err(|e| classify(lua, ErrorKind::Runtime, error_message(&e)))?;
    // A script that caught the memory error and finished anyway may have computed its
    // result from that error: the run still ends on the memory cap.
    if limit_hit(lua) == Some(LimitHit::Memory) {
        return Err(ScriptError::new(ErrorKind::Memory, MEMORY_MESSAGE));
    }
    Ok(values)
}

/// The error of a failed run: the spent budget decides the kind when there is one (the
/// allocator flag is read too, in case no hook ran after the failed allocation).
fn classify(lua: &Lua, default: ErrorKind, message: String) -> ScriptError {
    let kind = match limit_hit(lua) {
        Some(LimitHit::Timeout) => ErrorKind::Timeout,
        Some(LimitHit::Memory) => ErrorKind::Memory,
        None => default,
    };
    let line = script_line(&message);
    ScriptError::new(kind, message).at_line(line)
}

/// The message of an mlua error, without mlua's wrapping of errors raised in callbacks.
fn error_message(error: &mlua::Error) -> String {
    match error {
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        mlua::Error::RuntimeError(message) => message.clone(),
        mlua::Error::MemoryError(message) => message.clone(),
        mlua::Error::CallbackError { cause, .. } => error_message(cause),
        mlua::Error::WithContext { cause, .. } => error_message(cause),
        other => other.to_string(),
    }
}

/// The line of the first `<string>:N:` in a message.
pub fn script_line(message: &str) -> Option<u32> {
    const PREFIX: &str = "<string>:";
    let mut rest = message;
    while let Some(at) = rest.find(PREFIX) {
        rest = &rest[at + PREFIX.len()..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && rest[digits..].starts_with(':') {
            return rest[..digits].parse().ok();
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use mlua::{FromLuaMulti, Value};

    fn state() -> Lua {
        new_state(&Limits::default()).expect("new state")
    }

    /// Runs `source` through exec_chunk in a fresh state and converts its values.
    fn eval<T: FromLuaMulti>(source: &str) -> T {
        let lua = state();
        let values = exec_chunk(&lua, source.as_bytes()).unwrap_or_else(|e| panic!("{source}: {e}"));
        T::from_lua_multi(values, &lua).expect("convert result")
    }

    fn run_err(limits: &Limits, source: &str) -> ScriptError {
        let lua = new_state(limits).expect("new state");
        match exec_chunk(&lua, source.as_bytes()) {
            Ok(_) => panic!("{source}: expected an error"),
            Err(e) => e,
        }
    }

    fn short_timeout() -> Limits {
        Limits { timeout: Duration::from_millis(50), ..Limits::default() }
    }

    // ---- Part B: the state, budgets and error classification ----

    #[test]
    fn opens_only_math_base_table_string() {
        let (math, string, table, io, os, package, debug): (bool, bool, bool, bool, bool, bool, bool) =
            eval(
                "return math ~= nil, string ~= nil, table ~= nil, io ~= nil, os ~= nil, \
                 package ~= nil, debug ~= nil",
            );
        assert!(math && string && table);
        assert!(!io && !os && !package && !debug);
    }

    #[test]
    fn returns_all_values() {
        let (a, b, c): (i64, String, Value) = eval("return 1, 'x', nil");
        assert_eq!((a, b.as_str()), (1, "x"));
        assert!(c.is_nil());
    }

    #[test]
    fn syntax_error_has_kind_and_line() {
        let e = run_err(&Limits::default(), "local a = 1\nlocal b = = 2\n");
        assert_eq!(e.kind, ErrorKind::Syntax);
        assert_eq!(e.line, Some(2));
        assert!(e.message.starts_with("<string>:2:"), "{}", e.message);
    }

    #[test]
    fn binary_chunk_is_refused() {
        let e = run_err(&Limits::default(), "\x1bLua\x51\x00");
        assert_eq!(e.kind, ErrorKind::Syntax);
    }

    #[test]
    fn runtime_error_has_line() {
        let e = run_err(&Limits::default(), "local t = {}\n\nreturn t.x.y\n");
        assert_eq!(e.kind, ErrorKind::Runtime);
        assert_eq!(e.line, Some(3));
        let e = run_err(&Limits::default(), "\nerror('boom')");
        assert_eq!((e.kind, e.line), (ErrorKind::Runtime, Some(2)));
        assert!(e.message.contains("boom"));
    }

    #[test]
    fn script_line_takes_the_first_position() {
        assert_eq!(script_line("<string>:12: x <string>:3: y"), Some(12));
        assert_eq!(script_line("<string>: x <string>:7: y"), Some(7));
        assert_eq!(script_line("no position"), None);
    }

    #[test]
    fn infinite_loop_times_out() {
        let started = Instant::now();
        let e = run_err(&short_timeout(), "local n = 0\nwhile true do n = n + 1 end");
        assert_eq!(e.kind, ErrorKind::Timeout);
        assert!(e.message.contains(DEADLINE_MESSAGE), "{}", e.message);
        assert_eq!(e.line, Some(2));
        assert!(started.elapsed() < Duration::from_millis(1500), "{:?}", started.elapsed());
    }

    #[test]
    fn pcall_cannot_outlive_the_deadline() {
        let started = Instant::now();
        let e = run_err(&short_timeout(), "while true do pcall(function() while true do end end) end");
        assert_eq!(e.kind, ErrorKind::Timeout);
        let e = run_err(
            &short_timeout(),
            "local ok = pcall(function() while true do end end)\nreturn {ok = ok}",
        );
        assert_eq!(e.kind, ErrorKind::Timeout);
        assert!(started.elapsed() < Duration::from_millis(1500), "{:?}", started.elapsed());
    }

    #[test]
    fn long_loop_finishes_well_inside_the_deadline() {
        let started = Instant::now();
        let s: f64 = eval("local s = 0; for i = 1, 1e6 do s = s + i end; return s");
        assert_eq!(s, 500000500000.0);
        assert!(started.elapsed() < Duration::from_millis(500), "{:?}", started.elapsed());
    }

    #[test]
    fn string_rep_bomb_hits_the_memory_cap() {
        let limits = Limits { memory_bytes: 8 * 1024 * 1024, ..Limits::default() };
        let e = run_err(&limits, "local s = string.rep('x', 1e9)\nreturn #s");
        assert_eq!(e.kind, ErrorKind::Memory);
        let e = run_err(&limits, "local s = 'x'\nwhile true do s = s .. s end");
        assert_eq!(e.kind, ErrorKind::Memory);
        // caught by pcall, the run still ends on the memory cap
        let e = run_err(&limits, "local ok = pcall(string.rep, 'x', 1e9)\nreturn ok");
        assert_eq!(e.kind, ErrorKind::Memory);
        let lua = new_state(&limits).unwrap();
        assert_eq!(limit_hit(&lua), None);
        let _ = exec_chunk(&lua, b"local t = {} for i = 1, 1e8 do t[i] = i end");
        assert_eq!(limit_hit(&lua), Some(LimitHit::Memory));
    }

    #[test]
    fn rust_panic_in_a_callback_becomes_an_error() {
        let lua = state();
        let boom = lua.create_function(|_, ()| -> mlua::Result<()> { panic!("boom") }).unwrap();
        lua.globals().set("boom", boom).unwrap();
        let e = exec_chunk(&lua, b"boom()").unwrap_err();
        assert_eq!(e.kind, ErrorKind::Runtime);
        assert!(e.message.contains("boom"), "{}", e.message);
    }
}
