//! The library environment Kruise gives scripts, with gopher-lua's behaviour where it differs
//! from PUC Lua 5.1 (conformance README 2.1 and 2.11), plus our sandbox and `print` capture.
//!
//! The library functions are plain C functions over the raw Lua API: installing them is a
//! handful of closure allocations (once per state: the runner rewinds its sandboxes to a
//! snapshot taken after installation instead of installing again), and the errors they raise
//! are Lua strings with gopher's `<string>:LINE:` prefix, as scripts observe them through
//! `pcall`. Argument errors name the function as gopher's call site does. `tostring` and
//! `type` wrap the VM's own functions; `string.len`/`byte`/... and the rest are ours
//! (`baselib`, `strlib`, `tablib`, `mathlib`, `format`, `pattern`, `sort`, `gomath`).

mod baselib;
pub(crate) mod format;
mod gomath;
mod goprint_table;
mod mathlib;
mod pattern;
mod sort;
mod strlib;
mod tablib;

#[cfg(test)]
mod tests;

use std::ffi::{CString, c_char, c_int};
use std::time::{Duration, Instant};

use mlua::{Lua, ffi};

use crate::vm::{self, LimitHit};

// lua51-sys/csrc/kruise_gopher.c: the patched VM's own gopher-lua number rules, so that
// library functions and operators cannot disagree.
unsafe extern "C" {
    /// String to number as arithmetic coerces it (gopher's parseNumber): 1 and `*result`
    /// on success.
    fn kruise_str2number(s: *const c_char, len: usize, result: *mut f64) -> c_int;
    /// The `%` operator (gopher's luaModulo).
    pub(crate) safe fn kruise_nummod(a: f64, b: f64) -> f64;
}

// lua51-sys/patches/gopher.patch (lapi.c): the function `^` and its constant folding use.
unsafe extern "C" {
    fn kruise_set_pow(state: State, pow: extern "C" fn(f64, f64) -> f64);
}

/// `^` as gopher-lua computes it: vm.go numberArith and compile.go constFold call Go's
/// math.Pow (gomath::pow), whose results differ from C's pow (`2 ^ -0.5`, `0.99 ^ 12345`).
extern "C" fn go_pow(x: f64, y: f64) -> f64 {
    gomath::pow(x, y)
}

/// Makes `^` in state `l` (the VM and the compiler's constant folding) use Go's math.Pow.
pub(crate) fn use_go_pow(l: State) {
    // SAFETY: only stores the function pointer in the state's global block.
    unsafe { kruise_set_pow(l, go_pow) }
}

/// How long one library call may loop when the state has no deadline (see [`Poll`]).
pub const FALLBACK_CALL_BUDGET: Duration = Duration::from_secs(1);

/// Bytes `print` keeps per run; later output is dropped (Kruise writes it to a log).
const PRINT_LIMIT: usize = 1 << 20;

/// Largest string a library function builds in Rust memory before handing it to Lua; the
/// VM's memory cap normally stops a run long before this.
pub(crate) const STRING_LIMIT: usize = 256 << 20;

/// gopher's default registry size: the value slots all frames share. Library functions
/// that push more results than could ever fit raise its "registry overflow".
pub(crate) const REGISTRY_SIZE: i64 = 5120;

/// Installs gopher-lua's base/table/string/math behaviour, the extra globals, `require`,
/// and the sandbox into an mlua state (one made by `vm::new_state`, or any other: it then
/// gets a run context without deadline). `print` appends to the run's print log (see
/// [`take_prints`]).
pub fn install(lua: &Lua) -> mlua::Result<()> {
    // Keeps the patched Lua library in every binary that uses us (a no-op call).
    kruise_lua51_sys::link();
    vm::ensure_context(lua, None)?;
    // SAFETY: install_raw only uses the stack within the protected call exec_raw makes.
    unsafe { lua.exec_raw::<()>((), |l| install_raw(l)) }
}

/// Takes what the script printed so far.
pub fn take_prints(lua: &Lua) -> Vec<String> {
    vm::with_context(lua, vm::RunContext::take_prints).unwrap_or_default()
}

pub(crate) use crate::vm::State;

/// How a library function fails. Raised by [`raise`] once the Rust frames are gone.
pub(crate) enum Raise {
    /// A message that gets the caller's position prefix (gopher's `RaiseError`).
    Msg(String),
    /// A message without position (a Go runtime panic inside gopher-lua).
    Raw(String),
    /// `bad argument #n to NAME (msg)`, NAME resolved at raise time from the call site.
    Arg(c_int, String),
    /// The error value is already on top of the stack.
    Top,
}

pub(crate) type R<T> = Result<T, Raise>;

/// Wraps `fn imp(State) -> R<c_int>` into a `lua_CFunction`.
macro_rules! lua_fns {
    ($($name:ident => $imp:path),* $(,)?) => {
        $(
            pub(crate) unsafe extern "C-unwind" fn $name(l: $crate::stdlib::State) -> std::ffi::c_int {
                // SAFETY: called by Lua with a valid state.
                match unsafe { $imp(l) } {
                    Ok(n) => n,
                    Err(e) => unsafe { $crate::stdlib::raise(l, e) },
                }
            }
        )*
    };
}
pub(crate) use format::go_shortest_g32;
pub(crate) use lua_fns;

#[cold]
pub(crate) unsafe fn raise(l: State, e: Raise) -> ! {
    unsafe {
        match e {
            Raise::Msg(s) => {
                ffi::luaL_where(l, 1);
                push_bytes(l, s.as_bytes());
                drop(s);
                ffi::lua_concat(l, 2);
            }
            Raise::Raw(s) => {
                push_bytes(l, s.as_bytes());
                drop(s);
            }
            Raise::Arg(n, msg) => {
                let text = format!("bad argument #{n} to {} ({msg})", call_site_name(l));
                drop(msg);
                ffi::luaL_where(l, 1);
                push_bytes(l, text.as_bytes());
                drop(text);
                ffi::lua_concat(l, 2);
            }
            Raise::Top => {}
        }
        ffi::lua_error(l)
    }
}

pub(crate) unsafe fn push_bytes(l: State, s: &[u8]) {
    unsafe { ffi::lua_pushlstring(l, s.as_ptr().cast(), s.len()) };
}

pub(crate) unsafe fn type_name(l: State, idx: c_int) -> String {
    unsafe {
        let t = ffi::lua_type(l, idx);
        if t == ffi::LUA_TNONE {
            return "no value".into();
        }
        std::ffi::CStr::from_ptr(ffi::lua_typename(l, t))
            .to_string_lossy()
            .into_owned()
    }
}

/// gopher's ArgError. The function is named as gopher's `frameFuncName` names it, from
/// the call site (see [`call_site_name`]); `_fname` only says which function raises.
pub(crate) fn arg_error(n: c_int, _fname: &str, msg: &str) -> Raise {
    Raise::Arg(n, msg.to_owned())
}

/// The name gopher gives the running library function in argument errors
/// (state.go `frameFuncName`): the name in the calling expression when a Lua function
/// called it (`f`, `t.f`, `t:f`; `?` for any other expression), else `(anonymous)`.
/// gopher's compiler records the names (compile.go `getExprName`) that PUC's `getinfo("n")`
/// finds for the same expressions.
unsafe fn call_site_name(l: State) -> String {
    unsafe {
        let mut ar: ffi::lua_Debug = std::mem::zeroed();
        if ffi::lua_getstack(l, 1, &mut ar) == 0 {
            return "(anonymous)".into();
        }
        ffi::lua_getinfo(l, c"S".as_ptr(), &mut ar);
        let caller_is_lua = !ar.what.is_null() && *ar.what != b'C' as c_char;
        if !caller_is_lua {
            return "(anonymous)".into();
        }
        let mut me: ffi::lua_Debug = std::mem::zeroed();
        if ffi::lua_getstack(l, 0, &mut me) == 0 {
            return "?".into();
        }
        ffi::lua_getinfo(l, c"n".as_ptr(), &mut me);
        if me.name.is_null() {
            "?".into()
        } else {
            std::ffi::CStr::from_ptr(me.name)
                .to_string_lossy()
                .into_owned()
        }
    }
}

/// gopher's TypeError: `bad argument #n to f (T expected, got U)`, where a missing
/// argument is `nil` (gopher's `Get` returns LNil past the top).
pub(crate) unsafe fn type_error(l: State, n: c_int, fname: &str, expected: &str) -> Raise {
    let got = if unsafe { ffi::lua_type(l, n) } == ffi::LUA_TNONE {
        "nil".to_owned()
    } else {
        unsafe { type_name(l, n) }
    };
    arg_error(n, fname, &format!("{expected} expected, got {got}"))
}

pub(crate) unsafe fn check_any(l: State, n: c_int, fname: &str) -> R<()> {
    if unsafe { ffi::lua_gettop(l) } < n {
        Err(arg_error(n, fname, "value expected"))
    } else {
        Ok(())
    }
}

/// gopher's CheckInt: a number (strings are not converted), truncated like Go's int().
pub(crate) unsafe fn check_int(l: State, n: c_int, fname: &str) -> R<i64> {
    unsafe {
        if ffi::lua_type(l, n) == ffi::LUA_TNUMBER {
            Ok(crate::value::go_float_to_int64(ffi::lua_tonumber(l, n)))
        } else {
            Err(type_error(l, n, fname, "number"))
        }
    }
}

pub(crate) unsafe fn opt_int(l: State, n: c_int, default: i64, fname: &str) -> R<i64> {
    unsafe {
        if ffi::lua_isnoneornil(l, n) != 0 {
            Ok(default)
        } else {
            check_int(l, n, fname)
        }
    }
}

/// gopher's CheckNumber (auxlib.go): a number; strings are not converted.
pub(crate) unsafe fn check_number(l: State, n: c_int, fname: &str) -> R<f64> {
    unsafe {
        if ffi::lua_type(l, n) == ffi::LUA_TNUMBER {
            Ok(ffi::lua_tonumber(l, n))
        } else {
            Err(type_error(l, n, fname, "number"))
        }
    }
}

/// The bytes of the string (or number, converted in place) at `n`. The slice lives as long
/// as that stack slot keeps the string.
pub(crate) unsafe fn to_bytes<'a>(l: State, n: c_int) -> &'a [u8] {
    unsafe {
        let mut len = 0usize;
        let p = ffi::lua_tolstring(l, n, &mut len);
        if p.is_null() {
            &[]
        } else {
            std::slice::from_raw_parts(p.cast(), len)
        }
    }
}

/// gopher's CheckString: a string, or a number converted like tostring.
pub(crate) unsafe fn check_bytes<'a>(l: State, n: c_int, fname: &str) -> R<&'a [u8]> {
    unsafe {
        match ffi::lua_type(l, n) {
            ffi::LUA_TSTRING | ffi::LUA_TNUMBER => Ok(to_bytes(l, n)),
            _ => Err(type_error(l, n, fname, "string")),
        }
    }
}

/// gopher's OptString (auxlib.go): nil gives the default; unlike CheckString it converts
/// nothing, so a number is an argument error (`table.concat(t, 5)`).
pub(crate) unsafe fn opt_bytes<'a>(
    l: State,
    n: c_int,
    default: &'a [u8],
    fname: &str,
) -> R<&'a [u8]> {
    unsafe {
        match ffi::lua_type(l, n) {
            ffi::LUA_TNONE | ffi::LUA_TNIL => Ok(default),
            ffi::LUA_TSTRING => Ok(to_bytes(l, n)),
            _ => Err(type_error(l, n, fname, "string")),
        }
    }
}

pub(crate) unsafe fn check_table(l: State, n: c_int, fname: &str) -> R<()> {
    unsafe {
        if ffi::lua_type(l, n) == ffi::LUA_TTABLE {
            Ok(())
        } else {
            Err(type_error(l, n, fname, "table"))
        }
    }
}

/// True once the run has spent its time or memory budget.
unsafe fn limit_reached(l: State) -> bool {
    // SAFETY: called from library functions, with a valid state and free stack.
    unsafe { vm::context(l) }
        .is_some_and(|context| context.budgeted.get() && context.limit_hit().is_some())
}

/// Records that a budget is spent (so the runner classifies the error) when the state has
/// a run context.
unsafe fn mark_limit(l: State, hit: LimitHit) {
    // SAFETY: as in limit_reached.
    if let Some(context) = unsafe { vm::context(l) }
        && context.budgeted.get()
    {
        context.hit.set(Some(hit));
    }
}

/// Poll for long-running library loops: false once the deadline has passed.
pub(crate) struct Poll {
    l: State,
    started: Instant,
}

impl Poll {
    pub(crate) fn new(l: State) -> Self {
        Poll {
            l,
            started: Instant::now(),
        }
    }

    pub(crate) fn keep_going(&mut self) -> bool {
        // SAFETY: `l` is the state of the running call.
        let context = unsafe { vm::context(self.l) };
        if unsafe { limit_reached(self.l) } {
            return false;
        }
        let deadline = context
            .and_then(|context| context.deadline.get())
            .unwrap_or(self.started + FALLBACK_CALL_BUDGET);
        if Instant::now() >= deadline {
            unsafe { mark_limit(self.l, LimitHit::Timeout) };
            return false;
        }
        true
    }
}

/// The error for a string too large to build.
pub(crate) unsafe fn too_large(l: State) -> Raise {
    unsafe { mark_limit(l, LimitHit::Memory) };
    Raise::Msg("not enough memory".into())
}

// ---------------------------------------------------------------------------------------
// Base library

lua_fns! {
    lua_print => print_imp,
    lua_pcall => pcall_imp,
    lua_xpcall => xpcall_imp,
    lua_error => error_imp,
    lua_select => select_imp,
    lua_assert => assert_imp,
    lua_tonumber => tonumber_imp,
    lua_require => require_imp,
    lua_module => module_imp,
    lua_dofile => dofile_imp,
    lua_loadfile => loadfile_imp,
    lua_loadstring => loadstring_imp,
    lua_load => load_imp,
    lua_collectgarbage => collectgarbage_imp,
    lua_printregs => printregs_imp,
}

/// `print`: arguments through the original `tostring` (upvalue 1), joined by tabs, into
/// the run's print log. Nothing reaches stdout.
unsafe fn print_imp(l: State) -> R<c_int> {
    unsafe {
        let n = ffi::lua_gettop(l);
        ffi::luaL_checkstack(l, 2 * n + 4, c"too many arguments to print".as_ptr());
        for i in 1..=n {
            ffi::lua_pushvalue(l, ffi::lua_upvalueindex(1));
            ffi::lua_pushvalue(l, i);
            ffi::lua_call(l, 1, 1);
            if ffi::lua_type(l, -1) != ffi::LUA_TSTRING && ffi::lua_type(l, -1) != ffi::LUA_TNUMBER
            {
                // gopher prints the String() of whatever __tostring returned.
                ffi::lua_pushvalue(l, ffi::lua_upvalueindex(1));
                ffi::lua_insert(l, -2);
                ffi::lua_call(l, 1, 1);
            }
            if i < n {
                ffi::lua_pushlstring(l, c"\t".as_ptr(), 1);
            }
        }
        if n == 0 {
            ffi::lua_pushlstring(l, c"".as_ptr(), 0);
        } else {
            ffi::lua_concat(l, 2 * n - 1);
        }
        let line = String::from_utf8_lossy(to_bytes(l, -1)).into_owned();
        if let Some(context) = vm::context(l)
            && context.print_bytes.get() + line.len() <= PRINT_LIMIT
        {
            context
                .print_bytes
                .set(context.print_bytes.get() + line.len());
            context.prints.borrow_mut().push(line);
        }
        Ok(0)
    }
}

/// Finishes a protected call made with `status`: `true` and the results, or `false` and the
/// error value; a spent time/memory budget or an abandoned run is raised again instead.
/// Slot 1 holds a placeholder that becomes the boolean.
unsafe fn caught(l: State, status: c_int) -> R<c_int> {
    unsafe {
        ffi::lua_pushboolean(l, c_int::from(status == 0));
        ffi::lua_replace(l, 1);
        if status != 0 && (limit_reached(l) || abandoned(l)) {
            ffi::lua_settop(l, 2);
            return Err(Raise::Top);
        }
        Ok(ffi::lua_gettop(l))
    }
}

/// `pcall`: a protected call made here (one frame, as gopher-lua's pcall is: the call-depth
/// limit counts it once), but a spent time/memory budget is raised again. As gopher-lua's
/// basePCall (baselib.go, 2022 pin): a table with a `__call` function is called; any other
/// non-function gives `false, "attempt to call a <type> value"` without raising.
unsafe fn pcall_imp(l: State) -> R<c_int> {
    unsafe {
        check_any(l, 1, "pcall")?;
        if ffi::lua_type(l, 1) != ffi::LUA_TFUNCTION {
            let callable = ffi::luaL_getmetafield(l, 1, c"__call".as_ptr()) != 0
                && ffi::lua_type(l, -1) == ffi::LUA_TFUNCTION;
            if !callable {
                let message = format!("attempt to call a {} value", type_name(l, 1));
                ffi::lua_settop(l, 0);
                ffi::lua_pushboolean(l, 0);
                push_bytes(l, message.as_bytes());
                return Ok(2);
            }
            ffi::lua_pop(l, 1);
        }
        ffi::lua_pushnil(l);
        ffi::lua_insert(l, 1);
        let status = ffi::lua_pcall(l, ffi::lua_gettop(l) - 2, ffi::LUA_MULTRET, 0);
        caught(l, status)
    }
}

/// `xpcall(f, handler)`: f runs without arguments (Lua 5.1); budget errors are raised again.
/// The handler runs protected: when it raises, the run is abandoned (see
/// `vm::RunContext::abandoned`), as gopher-lua's PCall cannot recover from that.
unsafe fn xpcall_imp(l: State) -> R<c_int> {
    unsafe {
        if ffi::lua_type(l, 1) != ffi::LUA_TFUNCTION {
            return Err(type_error(l, 1, "xpcall", "function"));
        }
        if ffi::lua_type(l, 2) != ffi::LUA_TFUNCTION {
            return Err(type_error(l, 2, "xpcall", "function"));
        }
        ffi::lua_settop(l, 2);
        ffi::lua_pushcclosure(l, xpcall_handler, 1);
        ffi::lua_insert(l, 1);
        let status = ffi::lua_pcall(l, 0, ffi::LUA_MULTRET, 1);
        caught(l, status)
    }
}

/// The error handler xpcall installs: calls the script's handler (upvalue 1) on the error
/// value, and abandons the run when that handler raises.
unsafe extern "C-unwind" fn xpcall_handler(l: State) -> c_int {
    // SAFETY: called by Lua as an error handler with a valid state and the error value as
    // its argument; LUA_MINSTACK slots are free.
    unsafe {
        ffi::lua_settop(l, 1);
        ffi::lua_pushvalue(l, ffi::lua_upvalueindex(1));
        ffi::lua_insert(l, 1);
        if ffi::lua_pcall(l, 1, 1, 0) != 0
            && let Some(context) = vm::context(l)
        {
            context.abandoned.set(true);
        }
        1
    }
}

/// Whether an xpcall handler's error abandoned the run (errors are raised again then).
unsafe fn abandoned(l: State) -> bool {
    // SAFETY: called from library functions, with a valid state and free stack.
    unsafe { vm::context(l) }.is_some_and(|context| context.abandoned.get())
}

/// `error(v [, level])`: v is required; only string values get a position (numbers stay
/// numbers, unlike PUC).
unsafe fn error_imp(l: State) -> R<c_int> {
    unsafe {
        check_any(l, 1, "error")?;
        let level = opt_int(l, 2, 1, "error")?;
        ffi::lua_settop(l, 1);
        if ffi::lua_type(l, 1) == ffi::LUA_TSTRING && level > 0 {
            // gopher-lua's raiseError(level) names where(level-1) (state.go), with this
            // function's own frame as level 0: `error(m, 2)` names the caller of `error`.
            ffi::luaL_where(l, (level - 1).min(c_int::MAX as i64) as c_int);
            ffi::lua_pushvalue(l, 1);
            ffi::lua_concat(l, 2);
        }
        Err(Raise::Top)
    }
}

/// `assert(v [, message])` as gopher-lua's baseAssert (baselib.go): no argument counts as
/// false, and the message must be a string (OptString: numbers are refused), raised with the
/// caller's position.
unsafe fn assert_imp(l: State) -> R<c_int> {
    unsafe {
        if ffi::lua_toboolean(l, 1) != 0 {
            return Ok(ffi::lua_gettop(l));
        }
        match ffi::lua_type(l, 2) {
            ffi::LUA_TNONE | ffi::LUA_TNIL => Err(Raise::Msg("assertion failed!".into())),
            ffi::LUA_TSTRING => {
                ffi::luaL_where(l, 1);
                ffi::lua_pushvalue(l, 2);
                ffi::lua_concat(l, 2);
                Err(Raise::Top)
            }
            _ => Err(type_error(l, 2, "assert", "string")),
        }
    }
}

/// `select(n, ...)` as gopher-lua's baseSelect (baselib.go, 2022 pin): `n` is a number
/// (Go's `int()` of it; strings other than "#" are refused) counted over all arguments,
/// clamped to their count, so an index past the end returns nothing.
unsafe fn select_imp(l: State) -> R<c_int> {
    unsafe {
        let num = i64::from(ffi::lua_gettop(l));
        match ffi::lua_type(l, 1) {
            ffi::LUA_TNUMBER => {
                let mut idx = crate::value::go_float_to_int64(ffi::lua_tonumber(l, 1));
                if idx < 0 {
                    idx = num.wrapping_add(idx);
                } else if idx > num {
                    idx = num;
                }
                if idx < 1 {
                    return Err(arg_error(1, "select", "index out of range"));
                }
                Ok((num - idx) as c_int)
            }
            ffi::LUA_TSTRING => {
                let s = to_bytes(l, 1);
                if s != b"#" {
                    let message = format!("invalid string '{}'", String::from_utf8_lossy(s));
                    return Err(arg_error(1, "select", &message));
                }
                ffi::lua_pushnumber(l, (num - 1) as f64);
                Ok(1)
            }
            _ => {
                let got = if ffi::lua_type(l, 1) == ffi::LUA_TNONE {
                    "nil".to_owned()
                } else {
                    type_name(l, 1)
                };
                let message = format!("number or string expected, got {got}");
                Err(arg_error(1, "select", &message))
            }
        }
    }
}

/// `tonumber(v [, base])` with gopher's string rules (README 2.11).
unsafe fn tonumber_imp(l: State) -> R<c_int> {
    unsafe {
        let has_base = ffi::lua_isnoneornil(l, 2) == 0;
        let base = opt_int(l, 2, 10, "tonumber")?;
        check_any(l, 1, "tonumber")?;
        match ffi::lua_type(l, 1) {
            ffi::LUA_TNUMBER => ffi::lua_pushvalue(l, 1),
            ffi::LUA_TSTRING => match string_to_number(to_bytes(l, 1), has_base, base) {
                Some(v) => ffi::lua_pushnumber(l, v),
                None => ffi::lua_pushnil(l),
            },
            _ => ffi::lua_pushnil(l),
        }
        Ok(1)
    }
}

fn string_to_number(s: &[u8], has_base: bool, base: i64) -> Option<f64> {
    let t = std::str::from_utf8(format::trim_go(s)).ok()?;
    if t.contains('.') {
        // Go's ParseFloat: the coercion's integer syntax cannot read a point.
        return format::parse_go_number(t.as_bytes());
    }
    let (base, digits) = if !has_base && (t.starts_with("0x") || t.starts_with("0X")) {
        (16, &t[2..])
    } else {
        (base, t)
    };
    if base != 0 && !(2..=36).contains(&base) {
        return None;
    }
    format::parse_go_int(digits, base as u32).map(|v| v as f64)
}

/// `require(name)`: only libraries already loaded (registry `_LOADED`, or the `json`
/// global, which is installed after us); there is no package library to load more.
unsafe fn require_imp(l: State) -> R<c_int> {
    unsafe {
        let name = check_bytes(l, 1, "require")?;
        ffi::lua_getfield(l, ffi::LUA_REGISTRYINDEX, c"_LOADED".as_ptr());
        if ffi::lua_type(l, -1) == ffi::LUA_TTABLE {
            ffi::lua_pushvalue(l, 1);
            ffi::lua_rawget(l, -2);
            if ffi::lua_toboolean(l, -1) != 0 {
                return Ok(1);
            }
            ffi::lua_pop(l, 1);
        }
        ffi::lua_pop(l, 1);
        if name == b"json" {
            ffi::lua_getfield(l, ffi::LUA_GLOBALSINDEX, c"json".as_ptr());
            if ffi::lua_toboolean(l, -1) != 0 {
                return Ok(1);
            }
        }
        Err(Raise::Msg(format!(
            "module {} not found: the package library is not available",
            String::from_utf8_lossy(name)
        )))
    }
}

/// `module(name, ...)`: Lua 5.1's module function over `_LOADED` and the globals.
unsafe fn module_imp(l: State) -> R<c_int> {
    unsafe {
        let name = check_bytes(l, 1, "module")?;
        let cname = CString::new(
            name.iter()
                .copied()
                .filter(|&b| b != 0)
                .collect::<Vec<u8>>(),
        )
        .expect("no NUL bytes");
        let top = ffi::lua_gettop(l);
        ffi::luaL_checkstack(l, 8, std::ptr::null());
        ffi::luaL_findtable(l, ffi::LUA_REGISTRYINDEX, c"_LOADED".as_ptr(), 1);
        let loaded = ffi::lua_gettop(l);
        ffi::lua_getfield(l, loaded, cname.as_ptr());
        if ffi::lua_type(l, -1) != ffi::LUA_TTABLE {
            ffi::lua_pop(l, 1);
            if !ffi::luaL_findtable(l, ffi::LUA_GLOBALSINDEX, cname.as_ptr(), 1).is_null() {
                return Err(Raise::Msg(format!(
                    "name conflict for module: {}",
                    String::from_utf8_lossy(name)
                )));
            }
            ffi::lua_pushvalue(l, -1);
            ffi::lua_setfield(l, loaded, cname.as_ptr());
        }
        let tb = ffi::lua_gettop(l);
        ffi::lua_getfield(l, tb, c"_NAME".as_ptr());
        let named = ffi::lua_isnil(l, -1) == 0;
        ffi::lua_pop(l, 1);
        if !named {
            ffi::lua_pushvalue(l, tb);
            ffi::lua_setfield(l, tb, c"_M".as_ptr());
            ffi::lua_pushvalue(l, 1);
            ffi::lua_setfield(l, tb, c"_NAME".as_ptr());
            let package = match name.iter().rposition(|&b| b == b'.') {
                Some(dot) => &name[..=dot],
                None => &[][..],
            };
            push_bytes(l, package);
            ffi::lua_setfield(l, tb, c"_PACKAGE".as_ptr());
        }
        drop(cname);
        let mut ar: ffi::lua_Debug = std::mem::zeroed();
        if ffi::lua_getstack(l, 1, &mut ar) == 0 {
            return Err(Raise::Msg("no calling stack.".into()));
        }
        ffi::lua_getinfo(l, c"f".as_ptr(), &mut ar);
        if ffi::lua_iscfunction(l, -1) != 0 {
            return Err(Raise::Msg(
                "module() can not be called from GFunctions.".into(),
            ));
        }
        ffi::lua_pushvalue(l, tb);
        ffi::lua_setfenv(l, -2);
        ffi::lua_pop(l, 1);
        for i in 2..=top {
            ffi::lua_pushvalue(l, i);
            ffi::lua_pushvalue(l, tb);
            ffi::lua_call(l, 1, 0);
        }
        ffi::lua_pushvalue(l, tb);
        Ok(1)
    }
}

/// `dofile`: gopher ignores the error of a file it cannot open and returns nothing; in the
/// sandbox no file can be opened, and the disk is never touched.
unsafe fn dofile_imp(_l: State) -> R<c_int> {
    Ok(0)
}

/// `loadfile`: nil and gopher's "can not open file" message, without touching the disk.
unsafe fn loadfile_imp(l: State) -> R<c_int> {
    unsafe {
        let name: Vec<u8> = if ffi::lua_gettop(l) < 1 {
            b"<stdin>".to_vec()
        } else {
            check_bytes(l, 1, "loadfile")?.to_vec()
        };
        ffi::lua_pushnil(l);
        let mut msg = b"can not open file: ".to_vec();
        msg.extend_from_slice(&name);
        push_bytes(l, &msg);
        Ok(2)
    }
}

/// Compiles `src` as a text chunk named `chunkname` (verbatim, as gopher names chunks):
/// the function, or nil and the message. Binary chunks are refused.
unsafe fn compile(l: State, src: &[u8], chunkname: &[u8]) -> c_int {
    unsafe {
        if src.first() == Some(&0x1b) {
            ffi::lua_pushnil(l);
            let mut msg = chunkname.to_vec();
            msg.extend_from_slice(b": binary chunks are not supported");
            push_bytes(l, &msg);
            return 2;
        }
        let mut name = Vec::with_capacity(chunkname.len() + 2);
        name.push(b'=');
        name.extend(chunkname.iter().copied().filter(|&b| b != 0));
        let name = CString::new(name).expect("no NUL bytes");
        let status = ffi::luaL_loadbuffer(l, src.as_ptr().cast(), src.len(), name.as_ptr());
        if status == 0 {
            1
        } else {
            ffi::lua_pushnil(l);
            ffi::lua_insert(l, -2);
            2
        }
    }
}

unsafe fn loadstring_imp(l: State) -> R<c_int> {
    unsafe {
        let src = check_bytes(l, 1, "loadstring")?;
        let name = opt_bytes(l, 2, b"<string>", "loadstring")?;
        Ok(compile(l, src, name))
    }
}

/// `load(reader [, chunkname])`: concatenates the reader's pieces until nil or "".
unsafe fn load_imp(l: State) -> R<c_int> {
    unsafe {
        if ffi::lua_type(l, 1) != ffi::LUA_TFUNCTION {
            return Err(type_error(l, 1, "load", "function"));
        }
        let name = opt_bytes(l, 2, b"?", "load")?;
        ffi::lua_settop(l, 2);
        ffi::lua_pushlstring(l, c"".as_ptr(), 0);
        loop {
            ffi::lua_pushvalue(l, 1);
            ffi::lua_call(l, 0, 1);
            match ffi::lua_type(l, -1) {
                ffi::LUA_TNIL => break,
                ffi::LUA_TSTRING if ffi::lua_objlen(l, -1) == 0 => break,
                ffi::LUA_TSTRING => ffi::lua_concat(l, 2),
                _ => {
                    return Err(Raise::Msg(
                        "loader function must return a string or nil object.".into(),
                    ));
                }
            }
        }
        ffi::lua_settop(l, 3);
        let src = to_bytes(l, 3);
        Ok(compile(l, src, name))
    }
}

/// `collectgarbage(...)`: collects and returns nothing, whatever the option (gopher).
unsafe fn collectgarbage_imp(l: State) -> R<c_int> {
    unsafe { ffi::lua_gc(l, ffi::LUA_GCCOLLECT, 0) };
    Ok(0)
}

/// `_printregs`: gopher dumps VM registers to stdout; here it does nothing.
unsafe fn printregs_imp(_l: State) -> R<c_int> {
    Ok(0)
}

// ---------------------------------------------------------------------------------------
// Installation

pub(crate) unsafe fn set_fn(l: State, table: c_int, name: &std::ffi::CStr, f: ffi::lua_CFunction) {
    unsafe {
        ffi::lua_pushcfunction(l, f);
        ffi::lua_setfield(l, table, name.as_ptr());
    }
}

unsafe fn set_nil(l: State, table: c_int, name: &std::ffi::CStr) {
    unsafe {
        ffi::lua_pushnil(l);
        ffi::lua_setfield(l, table, name.as_ptr());
    }
}

/// Replaces global `name` with closure `f` whose upvalue is the current value of `name`.
pub(crate) unsafe fn wrap_global(l: State, name: &std::ffi::CStr, f: ffi::lua_CFunction) {
    unsafe {
        let g = ffi::LUA_GLOBALSINDEX;
        ffi::lua_getfield(l, g, name.as_ptr());
        ffi::lua_pushcclosure(l, f, 1);
        ffi::lua_setfield(l, g, name.as_ptr());
    }
}

pub(crate) unsafe fn install_raw(l: State) {
    unsafe {
        use_go_pow(l);
        let g = ffi::LUA_GLOBALSINDEX;
        ffi::luaL_checkstack(l, 8, std::ptr::null());
        baselib::install(l);
        // print formats through gopher's tostring (baselib's), whatever the script does to
        // the global later.
        ffi::lua_getfield(l, g, c"tostring".as_ptr());
        ffi::lua_pushcclosure(l, lua_print, 1);
        ffi::lua_setfield(l, g, c"print".as_ptr());
        set_fn(l, g, c"pcall", lua_pcall);
        set_fn(l, g, c"xpcall", lua_xpcall);
        set_fn(l, g, c"error", lua_error);
        set_fn(l, g, c"select", lua_select);
        set_fn(l, g, c"assert", lua_assert);
        set_fn(l, g, c"tonumber", lua_tonumber);
        set_fn(l, g, c"require", lua_require);
        set_fn(l, g, c"module", lua_module);
        set_fn(l, g, c"dofile", lua_dofile);
        set_fn(l, g, c"loadfile", lua_loadfile);
        set_fn(l, g, c"loadstring", lua_loadstring);
        set_fn(l, g, c"load", lua_load);
        set_fn(l, g, c"collectgarbage", lua_collectgarbage);
        set_fn(l, g, c"_printregs", lua_printregs);
        set_nil(l, g, c"gcinfo");
        set_nil(l, g, c"coroutine");
        ffi::lua_pushlstring(l, c"GopherLua 0.1".as_ptr(), 13);
        ffi::lua_setfield(l, g, c"_GOPHER_LUA_VERSION".as_ptr());
        ffi::lua_pushlstring(l, c"Lua 5.1".as_ptr(), 7);
        ffi::lua_setfield(l, g, c"_VERSION".as_ptr());

        ffi::lua_getfield(l, g, c"math".as_ptr());
        if ffi::lua_type(l, -1) == ffi::LUA_TTABLE {
            mathlib::install(l, ffi::lua_gettop(l));
        }
        ffi::lua_pop(l, 1);

        ffi::lua_getfield(l, g, c"table".as_ptr());
        if ffi::lua_type(l, -1) == ffi::LUA_TTABLE {
            tablib::install(l, ffi::lua_gettop(l));
        }
        ffi::lua_pop(l, 1);

        ffi::lua_getfield(l, g, c"string".as_ptr());
        if ffi::lua_type(l, -1) == ffi::LUA_TTABLE {
            let t = ffi::lua_gettop(l);
            strlib::install(l, t);
            // gopher's OpenString: the string table is the strings' metatable itself,
            // with `__index` pointing at itself (getmetatable("") == string).
            ffi::lua_pushvalue(l, t);
            ffi::lua_setfield(l, t, c"__index".as_ptr());
            ffi::lua_pushlstring(l, c"".as_ptr(), 0);
            ffi::lua_pushvalue(l, t);
            ffi::lua_setmetatable(l, -2);
            ffi::lua_pop(l, 1);
        }
        ffi::lua_pop(l, 1);
    }
}
