//! gopher-lua's table library (tablelib.go, table.go): getn, maxn, insert, remove, concat,
//! sort with its quirks (insert at 0 or past the end stores without shifting, remove(t, 0)
//! removes the last slot, concat clamps its range, sort is Go's pdqsort). `#t` is the
//! VM's raw length, gopher's Len; insert/remove/sort work on gopher's array slice, whose
//! length (`alen`, kept by the patched ltable.c) counts trailing nil slots too.

use std::ffi::c_int;

use mlua::ffi;

use super::capi::{
    R, Raise, State, check_int, check_table, lua_fns, opt_bytes, opt_int, type_error, type_name,
};
use super::sort::{self, SortData};

// The patched ltable.c: gopher's array slice length of the table at `idx` (see notealen).
unsafe extern "C" {
    fn kruise_table_alen(l: State, idx: c_int) -> c_int;
    fn kruise_table_setalen(l: State, idx: c_int, n: c_int);
}

lua_fns! {
    lua_getn => getn_imp,
    lua_maxn => maxn_imp,
    lua_insert => insert_imp,
    lua_remove => remove_imp,
    lua_concat => concat_imp,
    lua_sort => sort_imp,
}

pub(super) unsafe fn install(l: State, t: c_int) {
    unsafe {
        super::capi::set_fn(l, t, c"getn", lua_getn);
        super::capi::set_fn(l, t, c"maxn", lua_maxn);
        super::capi::set_fn(l, t, c"insert", lua_insert);
        super::capi::set_fn(l, t, c"remove", lua_remove);
        super::capi::set_fn(l, t, c"concat", lua_concat);
        super::capi::set_fn(l, t, c"sort", lua_sort);
        super::capi::set_nil(l, t, c"foreach");
        super::capi::set_nil(l, t, c"foreachi");
        super::capi::set_nil(l, t, c"setn");
    }
}

unsafe fn len(l: State, t: c_int) -> i64 {
    unsafe { ffi::lua_objlen(l, t) as i64 }
}

/// Pushes t[i] (raw).
unsafe fn geti(l: State, t: c_int, i: i64) {
    unsafe {
        if let Ok(i) = c_int::try_from(i) {
            ffi::lua_rawgeti_(l, t, i);
        } else {
            ffi::lua_pushnumber(l, i as f64);
            ffi::lua_rawget(l, t);
        }
    }
}

/// Pops a value into t[i] (raw).
unsafe fn seti(l: State, t: c_int, i: i64) {
    unsafe {
        if let Ok(i) = c_int::try_from(i) {
            ffi::lua_rawseti_(l, t, i);
        } else {
            ffi::lua_pushnumber(l, i as f64);
            ffi::lua_insert(l, -2);
            ffi::lua_rawset(l, t);
        }
    }
}

unsafe fn getn_imp(l: State) -> R<c_int> {
    unsafe {
        check_table(l, 1, "getn")?;
        ffi::lua_pushnumber(l, len(l, 1) as f64);
        Ok(1)
    }
}

/// tableMaxN: the last non-nil slot of gopher's array part, which is `#t` (keys from
/// 2^26 on, non-integers and keys <= 0 live in the hash part and never count).
unsafe fn maxn_imp(l: State) -> R<c_int> {
    unsafe {
        check_table(l, 1, "maxn")?;
        ffi::lua_pushnumber(l, len(l, 1) as f64);
        Ok(1)
    }
}

/// tableInsert: `insert(t, v)` is gopher's Append (a nil value does nothing; the value
/// goes after the last non-nil slot). `insert(t, pos, v)` is Insert: past the array
/// (`pos > alen`) or at `pos <= 0` it stores without shifting; otherwise every slot from
/// pos to alen, trailing nils included, moves up one.
unsafe fn insert_imp(l: State) -> R<c_int> {
    unsafe {
        check_table(l, 1, "insert")?;
        let nargs = ffi::lua_gettop(l);
        if nargs == 1 {
            return Err(Raise::Msg("wrong number of arguments".into()));
        }
        if nargs == 2 {
            if ffi::lua_isnil(l, 2) == 0 {
                ffi::lua_pushvalue(l, 2);
                seti(l, 1, len(l, 1) + 1);
            }
            return Ok(0);
        }
        let pos = check_int(l, 2, "insert")?;
        super::capi::check_any(l, 3, "insert")?;
        let alen = kruise_table_alen(l, 1) as i64;
        if pos >= 1 && pos <= alen {
            // Storing into alen + 1 (nil or not) grows the slice by one.
            let mut i = alen;
            while i >= pos {
                geti(l, 1, i);
                seti(l, 1, i + 1);
                i -= 1;
            }
        }
        ffi::lua_pushvalue(l, 3);
        seti(l, 1, pos);
        Ok(0)
    }
}

/// tableRemove (table.go Remove) over gopher's array slice of length alen: nothing past
/// it; the last slot (even a trailing nil) for `pos == alen`, `pos <= 0` or no pos;
/// otherwise the slot at pos, the later ones moving down. The slice shrinks by one.
unsafe fn remove_imp(l: State) -> R<c_int> {
    unsafe {
        check_table(l, 1, "remove")?;
        let pos = if ffi::lua_gettop(l) == 1 {
            -1
        } else {
            check_int(l, 2, "remove")?
        };
        let alen = kruise_table_alen(l, 1) as i64;
        if alen == 0 {
            ffi::lua_pushnil(l);
            return Ok(1);
        }
        let i = pos.wrapping_sub(1);
        if i >= alen {
            ffi::lua_pushnil(l);
            return Ok(1);
        }
        if i == alen - 1 || i < 0 {
            geti(l, 1, alen);
        } else {
            geti(l, 1, pos);
            for k in pos..alen {
                geti(l, 1, k + 1);
                seti(l, 1, k);
            }
        }
        ffi::lua_pushnil(l);
        seti(l, 1, alen);
        kruise_table_setalen(l, 1, (alen - 1) as c_int);
        Ok(1)
    }
}

unsafe fn concat_imp(l: State) -> R<c_int> {
    unsafe {
        check_table(l, 1, "concat")?;
        let sep = opt_bytes(l, 2, b"", "concat")?;
        let n = len(l, 1);
        let mut i = opt_int(l, 3, 1, "concat")?;
        let j = opt_int(l, 4, n, "concat")?;
        if ffi::lua_gettop(l) == 3 && (i > n || i < 1) {
            ffi::lua_pushlstring(l, c"".as_ptr(), 0);
            return Ok(1);
        }
        i = i.min(n).max(1);
        let j = j.min(n);
        if i > j {
            ffi::lua_pushlstring(l, c"".as_ptr(), 0);
            return Ok(1);
        }
        let mut b: ffi::luaL_Buffer = std::mem::zeroed();
        ffi::luaL_buffinit(l, &mut b);
        let mut k = i;
        loop {
            geti(l, 1, k);
            let t = ffi::lua_type(l, -1);
            if t != ffi::LUA_TSTRING && t != ffi::LUA_TNUMBER {
                let tn = type_name(l, -1);
                return Err(Raise::Msg(format!(
                    "invalid value ({tn}) at index {k} in table for concat"
                )));
            }
            if i == j {
                // tablelib.go tableConcat hands the one pushed value to vm.go stringConcat,
                // which returns a single value as it is: a number stays a number.
                return Ok(1);
            }
            ffi::luaL_addvalue(&mut b);
            if k == j {
                break;
            }
            ffi::luaL_addlstring(&mut b, sep.as_ptr().cast(), sep.len());
            k += 1;
        }
        ffi::luaL_pushresult(&mut b);
        Ok(1)
    }
}

/// The table at stack index 1 seen as gopher's array: positions 0.. are keys 1..
struct LuaArray {
    l: State,
    /// Comparator at stack index 2, or the `<` operator.
    has_cmp: bool,
}

impl SortData for LuaArray {
    fn less(&mut self, i: usize, j: usize) -> bool {
        let l = self.l;
        // SAFETY: the stack holds the table at 1 (and the comparator at 2); errors raised
        // here unwind through frames that own nothing.
        unsafe {
            if self.has_cmp {
                ffi::lua_pushvalue(l, 2);
                geti(l, 1, i as i64 + 1);
                geti(l, 1, j as i64 + 1);
                ffi::lua_call(l, 2, 1);
                let r = ffi::lua_toboolean(l, -1) != 0;
                ffi::lua_pop(l, 1);
                return r;
            }
            geti(l, 1, i as i64 + 1);
            geti(l, 1, j as i64 + 1);
            let (ta, tb) = (ffi::lua_type(l, -2), ffi::lua_type(l, -1));
            let r = if ta == ffi::LUA_TNUMBER && tb == ffi::LUA_TNUMBER {
                ffi::lua_tonumber(l, -2) < ffi::lua_tonumber(l, -1)
            } else if ta == ffi::LUA_TSTRING && tb == ffi::LUA_TSTRING {
                // Go compares strings bytewise.
                super::capi::to_bytes(l, -2) < super::capi::to_bytes(l, -1)
            } else {
                ffi::lua_lessthan(l, -2, -1) != 0
            };
            ffi::lua_pop(l, 2);
            r
        }
    }

    fn swap(&mut self, i: usize, j: usize) {
        let l = self.l;
        // SAFETY: as in `less`; raw accesses do not raise except on memory errors.
        unsafe {
            geti(l, 1, i as i64 + 1);
            geti(l, 1, j as i64 + 1);
            seti(l, 1, i as i64 + 1);
            seti(l, 1, j as i64 + 1);
        }
    }
}

unsafe fn sort_imp(l: State) -> R<c_int> {
    unsafe {
        check_table(l, 1, "sort")?;
        let has_cmp = ffi::lua_gettop(l) != 1;
        if has_cmp && ffi::lua_type(l, 2) != ffi::LUA_TFUNCTION {
            return Err(type_error(l, 2, "sort", "function"));
        }
        ffi::lua_settop(l, if has_cmp { 2 } else { 1 });
        ffi::luaL_checkstack(l, 8, std::ptr::null());
        // tableSort sorts the whole array slice, trailing nils included (they reach the
        // comparator, and `<` on them raises).
        let n = kruise_table_alen(l, 1).max(0) as usize;
        sort::sort(&mut LuaArray { l, has_cmp }, n);
        Ok(0)
    }
}
