//! The base functions whose argument rules, results or errors differ between PUC Lua 5.1
//! and gopher-lua (baselib.go at Kruise's pin): gopher's checks and messages, `next` with a
//! key the table does not hold, `setmetatable` on any type, `rawset`/`unpack` results.

use std::ffi::{CString, c_int};

use mlua::ffi;

use super::capi::{
    R, REGISTRY_SIZE, Raise, State, arg_error, check_any, check_bytes, check_int, check_table,
    limit_reached, lua_fns, opt_bytes, opt_int, push_bytes, set_fn, set_nil, to_bytes, type_error,
    type_name, wrap_global,
};
use crate::vm;

/// Bytes `print` keeps per run; later output is dropped (Kruise writes it to a log).
const PRINT_LIMIT: usize = 1 << 20;

lua_fns! {
    lua_getmetatable => getmetatable_imp,
    lua_setmetatable => setmetatable_imp,
    lua_next => next_imp,
    lua_pairs => pairs_imp,
    lua_ipairs => ipairs_imp,
    lua_ipairs_aux => ipairs_aux_imp,
    lua_rawequal => rawequal_imp,
    lua_rawget => rawget_imp,
    lua_rawset => rawset_imp,
    lua_tostring => tostring_imp,
    lua_type => type_imp,
    lua_unpack => unpack_imp,
    lua_getfenv => getfenv_imp,
    lua_setfenv => setfenv_imp,
    lua_newproxy => newproxy_imp,
}

/// gopher-lua's array part: positive integer keys below 2^26 (table.go `MaxArrayIndex`).
/// `RawGetInt` reads only there, so `unpack` and `ipairs` see nil at any other index.
const MAX_ARRAY_INDEX: i64 = 1 << 26;

/// Pushes `t[i]` (t at 1) as gopher's `RawGetInt` reads it.
unsafe fn push_array_slot(l: State, i: i64) {
    unsafe {
        if (1..MAX_ARRAY_INDEX).contains(&i) {
            ffi::lua_rawgeti(l, 1, i as _);
        } else {
            ffi::lua_pushnil(l);
        }
    }
}

/// baseGetMetatable: CheckAny, then the metatable or its `__metatable` field.
unsafe fn getmetatable_imp(l: State) -> R<c_int> {
    unsafe {
        check_any(l, 1, "getmetatable")?;
        if ffi::lua_getmetatable(l, 1) == 0 {
            ffi::lua_pushnil(l);
            return Ok(1);
        }
        ffi::lua_getfield(l, -1, c"__metatable".as_ptr());
        if ffi::lua_isnil(l, -1) != 0 {
            ffi::lua_pop(l, 1);
        }
        Ok(1)
    }
}

/// baseSetMetatable: any non-nil value takes a metatable; for a non-table it becomes the
/// metatable of the whole type (gopher's `builtinMts`), as `lua_setmetatable` does.
unsafe fn setmetatable_imp(l: State) -> R<c_int> {
    unsafe {
        // A missing metatable is nil (gopher's Get past the top), so it removes one.
        let t2 = ffi::lua_type(l, 2);
        if t2 != ffi::LUA_TNIL && t2 != ffi::LUA_TTABLE && t2 != ffi::LUA_TNONE {
            let got = type_name(l, 2);
            return Err(arg_error(
                2,
                "setmetatable",
                &format!("nil or table expected, got {got}"),
            ));
        }
        if ffi::lua_isnoneornil(l, 1) != 0 {
            return Err(Raise::Msg("cannot set metatable to a nil object.".into()));
        }
        if ffi::lua_getmetatable(l, 1) != 0 {
            ffi::lua_getfield(l, -1, c"__metatable".as_ptr());
            let protected = ffi::lua_isnil(l, -1) == 0;
            ffi::lua_pop(l, 2);
            if protected {
                return Err(Raise::Msg("cannot change a protected metatable".into()));
            }
        }
        ffi::lua_settop(l, 2);
        ffi::lua_setmetatable(l, 1);
        Ok(1)
    }
}

/// baseNext: CheckTable; the end (or an empty table) gives a single nil. A key the table
/// does not hold is no error (the VM's `luaH_next` follows gopher's table.go `Next`).
unsafe fn next_imp(l: State) -> R<c_int> {
    unsafe {
        check_table(l, 1, "next")?;
        ffi::lua_settop(l, 2);
        if ffi::lua_next(l, 1) != 0 {
            Ok(2)
        } else {
            ffi::lua_pushnil(l);
            Ok(1)
        }
    }
}

/// basePairs: CheckTable, then (next, t, nil).
unsafe fn pairs_imp(l: State) -> R<c_int> {
    unsafe {
        check_table(l, 1, "pairs")?;
        ffi::lua_pushvalue(l, ffi::lua_upvalueindex(1));
        ffi::lua_pushvalue(l, 1);
        ffi::lua_pushnil(l);
        Ok(3)
    }
}

/// baseIpairs: CheckTable, then (ipairsaux, t, 0).
unsafe fn ipairs_imp(l: State) -> R<c_int> {
    unsafe {
        check_table(l, 1, "ipairs")?;
        ffi::lua_pushvalue(l, ffi::lua_upvalueindex(1));
        ffi::lua_pushvalue(l, 1);
        ffi::lua_pushnumber(l, 0.0);
        Ok(3)
    }
}

/// ipairsaux: the next index of the array part, nothing at its first nil.
unsafe fn ipairs_aux_imp(l: State) -> R<c_int> {
    unsafe {
        check_table(l, 1, "ipairs")?;
        let i = check_int(l, 2, "ipairs")?.wrapping_add(1);
        push_array_slot(l, i);
        if ffi::lua_isnil(l, -1) != 0 {
            return Ok(0);
        }
        ffi::lua_pushnumber(l, i as f64);
        ffi::lua_insert(l, -2);
        Ok(2)
    }
}

unsafe fn rawequal_imp(l: State) -> R<c_int> {
    unsafe {
        check_any(l, 1, "rawequal")?;
        check_any(l, 2, "rawequal")?;
        ffi::lua_pushboolean(l, ffi::lua_rawequal(l, 1, 2));
        Ok(1)
    }
}

unsafe fn rawget_imp(l: State) -> R<c_int> {
    unsafe {
        check_table(l, 1, "rawget")?;
        check_any(l, 2, "rawget")?;
        ffi::lua_settop(l, 2);
        ffi::lua_rawget(l, 1);
        Ok(1)
    }
}

/// baseRawSet returns nothing (PUC returns the table).
unsafe fn rawset_imp(l: State) -> R<c_int> {
    unsafe {
        check_table(l, 1, "rawset")?;
        check_any(l, 2, "rawset")?;
        check_any(l, 3, "rawset")?;
        ffi::lua_settop(l, 3);
        ffi::lua_rawset(l, 1);
        Ok(0)
    }
}

/// gopher's CheckAny first, then the VM's own function (upvalue 1).
unsafe fn call_original(l: State, fname: &str) -> R<c_int> {
    unsafe {
        check_any(l, 1, fname)?;
        ffi::lua_settop(l, 1);
        ffi::lua_pushvalue(l, ffi::lua_upvalueindex(1));
        ffi::lua_insert(l, 1);
        ffi::lua_call(l, 1, 1);
        Ok(1)
    }
}
/// baseToString (ToStringMeta): a `__tostring` that is not a function is ignored.
unsafe fn tostring_imp(l: State) -> R<c_int> {
    unsafe {
        check_any(l, 1, "tostring")?;
        if ffi::luaL_getmetafield(l, 1, c"__tostring".as_ptr()) != 0 {
            let callable = ffi::lua_type(l, -1) == ffi::LUA_TFUNCTION;
            ffi::lua_pop(l, 1);
            if !callable {
                // The value's own String(): its type and address, as the VM writes them.
                let text = format!("{}: {:p}", type_name(l, 1), ffi::lua_topointer(l, 1));
                ffi::lua_settop(l, 0);
                super::capi::push_bytes(l, text.as_bytes());
                return Ok(1);
            }
        }
        call_original(l, "tostring")
    }
}
/// baseType: CheckAny, then the type's name (gopher's names are PUC's).
unsafe fn type_imp(l: State) -> R<c_int> {
    unsafe {
        check_any(l, 1, "type")?;
        ffi::lua_pushstring(l, ffi::lua_typename(l, ffi::lua_type(l, 1)));
        Ok(1)
    }
}

/// baseUnpack: `t[i]` for i from start (1) to end (`#t`), read as `RawGetInt` does: only
/// the array part, so index 0, negative and huge indices give nil.
unsafe fn unpack_imp(l: State) -> R<c_int> {
    unsafe {
        check_table(l, 1, "unpack")?;
        let start = opt_int(l, 2, 1, "unpack")?;
        let end = if ffi::lua_isnoneornil(l, 3) != 0 {
            ffi::lua_objlen(l, 1) as i64
        } else {
            check_int(l, 3, "unpack")?
        };
        // Go's int arithmetic: a count that wraps positive (end = int(NaN)) overflows too.
        let count = end.wrapping_sub(start).wrapping_add(1);
        // gopher pushes while `i <= end` before it counts (baselib.go baseUnpack): a range
        // too long for an int64 count (start = int(2^63) or int(NaN), the minimum) overflows.
        if count <= 0 && start <= end {
            return Err(Raise::Msg("registry overflow".into()));
        }
        if count <= 0 {
            return Ok(0);
        }
        // gopher's value stack (its "registry") has 5120 slots for all frames together;
        // pushing past it raises "registry overflow". Counts that could never fit fail so.
        if count >= REGISTRY_SIZE || ffi::lua_checkstack(l, count as c_int) == 0 {
            return Err(Raise::Msg("registry overflow".into()));
        }
        for k in 0..count {
            push_array_slot(l, start + k);
        }
        Ok(count as c_int)
    }
}

/// The Lua function `level` frames up (1 = the caller), pushed; false (nothing pushed)
/// when there is none or it is a C function (gopher's frame walk in baseGetFEnv).
unsafe fn push_lua_function_at(l: State, level: i64) -> bool {
    unsafe {
        let mut ar: ffi::lua_Debug = std::mem::zeroed();
        let Ok(level) = c_int::try_from(level) else {
            return false;
        };
        if ffi::lua_getstack(l, level, &mut ar) == 0 {
            return false;
        }
        ffi::lua_getinfo(l, c"f".as_ptr(), &mut ar);
        if ffi::lua_iscfunction(l, -1) != 0 {
            ffi::lua_pop(l, 1);
            return false;
        }
        true
    }
}

/// baseGetFEnv: a Lua function's environment, or the function's `level` frames up;
/// the globals for C functions, levels past the stack, and any other argument.
unsafe fn getfenv_imp(l: State) -> R<c_int> {
    unsafe {
        let pushed = match ffi::lua_type(l, 1) {
            ffi::LUA_TNONE => push_lua_function_at(l, 1),
            ffi::LUA_TFUNCTION if ffi::lua_iscfunction(l, 1) == 0 => {
                ffi::lua_pushvalue(l, 1);
                true
            }
            ffi::LUA_TNUMBER => {
                let level = crate::go::math::go_float_to_int64(ffi::lua_tonumber(l, 1));
                level > 0 && push_lua_function_at(l, level)
            }
            _ => false,
        };
        if pushed {
            ffi::lua_getfenv(l, -1);
        } else {
            ffi::lua_pushvalue(l, ffi::LUA_GLOBALSINDEX);
        }
        Ok(1)
    }
}

/// baseSetFEnv: sets a Lua function's environment (or that of the function `level`
/// frames up) and returns the function; level 0 or below replaces the thread's globals.
unsafe fn setfenv_imp(l: State) -> R<c_int> {
    unsafe {
        check_table(l, 2, "setfenv")?;
        let cannot = || Raise::Msg("cannot change the environment of given object".into());
        match ffi::lua_type(l, 1) {
            ffi::LUA_TFUNCTION => {
                if ffi::lua_iscfunction(l, 1) != 0 {
                    return Err(cannot());
                }
                ffi::lua_pushvalue(l, 1);
            }
            ffi::LUA_TNUMBER | ffi::LUA_TNONE => {
                let level = if ffi::lua_type(l, 1) == ffi::LUA_TNONE {
                    1
                } else {
                    crate::go::math::go_float_to_int64(ffi::lua_tonumber(l, 1))
                };
                if level <= 0 {
                    ffi::lua_pushvalue(l, 2);
                    ffi::lua_replace(l, ffi::LUA_GLOBALSINDEX);
                    return Ok(0);
                }
                if !push_lua_function_at(l, level) {
                    return Err(cannot());
                }
            }
            _ => return Err(cannot()),
        }
        ffi::lua_pushvalue(l, 2);
        ffi::lua_setfenv(l, -2);
        Ok(1)
    }
}

/// baseNewProxy: a new userdata; `true` gives it a fresh metatable, another userdata
/// lends its (visible) metatable, anything else none.
unsafe fn newproxy_imp(l: State) -> R<c_int> {
    unsafe {
        ffi::lua_settop(l, 1);
        ffi::lua_newuserdata(l, 0);
        if ffi::lua_type(l, 1) == ffi::LUA_TBOOLEAN && ffi::lua_toboolean(l, 1) != 0 {
            ffi::lua_createtable(l, 0, 0);
            ffi::lua_setmetatable(l, 2);
        } else if ffi::lua_type(l, 1) == ffi::LUA_TUSERDATA && ffi::lua_getmetatable(l, 1) != 0 {
            ffi::lua_getfield(l, -1, c"__metatable".as_ptr());
            if ffi::lua_isnil(l, -1) != 0 {
                ffi::lua_pop(l, 1);
            } else {
                ffi::lua_remove(l, -2);
            }
            if ffi::lua_type(l, -1) == ffi::LUA_TTABLE {
                ffi::lua_setmetatable(l, 2);
            } else {
                ffi::lua_pop(l, 1);
            }
        }
        Ok(1)
    }
}

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
                let mut idx = crate::go::math::go_float_to_int64(ffi::lua_tonumber(l, 1));
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
    let t = std::str::from_utf8(crate::go::fmt::trim_go(s)).ok()?;
    if t.contains('.') {
        // Go's ParseFloat: the coercion's integer syntax cannot read a point.
        return crate::go::fmt::parse_go_number(t.as_bytes());
    }
    let (base, digits) = if !has_base && (t.starts_with("0x") || t.starts_with("0X")) {
        (16, &t[2..])
    } else {
        (base, t)
    };
    if base != 0 && !(2..=36).contains(&base) {
        return None;
    }
    crate::go::fmt::parse_go_int(digits, base as u32).map(|v| v as f64)
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

/// Installs the functions above into the globals; `pairs` gets `next` as its iterator and
/// `tostring` keeps the VM's function as its upvalue.
pub(super) unsafe fn install(l: State) {
    unsafe {
        let g = ffi::LUA_GLOBALSINDEX;
        for (name, f) in [
            (c"getmetatable", lua_getmetatable as ffi::lua_CFunction),
            (c"setmetatable", lua_setmetatable),
            (c"next", lua_next),
            (c"rawequal", lua_rawequal),
            (c"rawget", lua_rawget),
            (c"rawset", lua_rawset),
            (c"unpack", lua_unpack),
            (c"getfenv", lua_getfenv),
            (c"setfenv", lua_setfenv),
            (c"newproxy", lua_newproxy),
        ] {
            set_fn(l, g, name, f);
        }
        wrap_global(l, c"tostring", lua_tostring);
        set_fn(l, ffi::LUA_GLOBALSINDEX, c"type", lua_type);
        ffi::lua_pushcfunction(l, lua_next);
        ffi::lua_pushcclosure(l, lua_pairs, 1);
        ffi::lua_setfield(l, g, c"pairs".as_ptr());
        ffi::lua_pushcfunction(l, lua_ipairs_aux);
        ffi::lua_pushcclosure(l, lua_ipairs, 1);
        ffi::lua_setfield(l, g, c"ipairs".as_ptr());

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
    }
}
