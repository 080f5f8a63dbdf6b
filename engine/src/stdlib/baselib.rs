//! The base functions whose argument rules, results or errors differ between PUC Lua 5.1
//! and gopher-lua (baselib.go at Kruise's pin): gopher's checks and messages, `next` with a
//! key the table does not hold, `setmetatable` on any type, `rawset`/`unpack` results.

use std::ffi::c_int;

use mlua::ffi;

use super::{
    R, REGISTRY_SIZE, Raise, State, arg_error, check_any, check_int, check_table, lua_fns, opt_int,
    set_fn, type_name, wrap_global,
};

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
                super::push_bytes(l, text.as_bytes());
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
    }
}
