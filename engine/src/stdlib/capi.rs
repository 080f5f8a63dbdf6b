//! The C-API helper kit of the library functions: how they fail ([`Raise`], raised once the
//! Rust frames are gone), gopher's argument checks and messages, polling a long loop against
//! the run's budget, and setting functions into tables.

use std::ffi::{c_char, c_int};
use std::time::{Duration, Instant};

use mlua::ffi;

use crate::vm::{self, LimitHit};

// lua51-sys/csrc/kruise_gopher.c: the patched VM's own gopher-lua number rules, so that
// library functions and operators cannot disagree.
unsafe extern "C" {
    /// The `%` operator (gopher's luaModulo).
    pub(crate) safe fn kruise_nummod(a: f64, b: f64) -> f64;
}

/// How long one library call may loop when the state has no deadline (see [`Poll`]).
pub const FALLBACK_CALL_BUDGET: Duration = Duration::from_secs(1);

/// Largest string a library function builds in Rust memory before handing it to Lua; the
/// VM's memory cap normally stops a run long before this.
pub(crate) const STRING_LIMIT: usize = 256 << 20;

/// gopher's default registry size: the value slots all frames share. Library functions
/// that push more results than could ever fit raise its "registry overflow".
pub(crate) const REGISTRY_SIZE: i64 = 5120;

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
            pub(crate) unsafe extern "C-unwind" fn $name(l: $crate::stdlib::capi::State) -> std::ffi::c_int {
                // SAFETY: called by Lua with a valid state.
                match unsafe { $imp(l) } {
                    Ok(n) => n,
                    Err(e) => unsafe { $crate::stdlib::capi::raise(l, e) },
                }
            }
        )*
    };
}
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
            Ok(crate::go::math::go_float_to_int64(ffi::lua_tonumber(l, n)))
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
pub(crate) unsafe fn limit_reached(l: State) -> bool {
    // SAFETY: called from library functions, with a valid state and free stack.
    unsafe { vm::context(l) }
        .is_some_and(|context| context.budgeted.get() && context.limit_hit().is_some())
}

/// Records that a budget is spent (so the runner classifies the error) when the state has
/// a run context.
pub(crate) unsafe fn mark_limit(l: State, hit: LimitHit) {
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

pub(crate) unsafe fn set_fn(l: State, table: c_int, name: &std::ffi::CStr, f: ffi::lua_CFunction) {
    unsafe {
        ffi::lua_pushcfunction(l, f);
        ffi::lua_setfield(l, table, name.as_ptr());
    }
}

pub(crate) unsafe fn set_nil(l: State, table: c_int, name: &std::ffi::CStr) {
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
