//! The library environment Kruise gives scripts, with gopher-lua's behaviour where it differs
//! from PUC Lua 5.1 (conformance README 2.1 and 2.11), plus our sandbox and `print` capture.
//!
//! The library functions are plain C functions over the raw Lua API: installing them is a
//! handful of closure allocations (once per state: the runner rewinds its sandboxes to a
//! snapshot taken after installation instead of installing again), and the errors they raise
//! are Lua strings with gopher's `<string>:LINE:` prefix, as scripts observe them through
//! `pcall`. Argument errors name the function as gopher's call site does. `tostring` and
//! `type` wrap the VM's own functions; `string.len`/`byte`/... and the rest are ours
//! (`baselib`, `strlib`, `tablib`, `mathlib`, `pattern`, `sort`, on Go's own in `crate::go`).

mod baselib;
pub(crate) mod capi;
mod mathlib;
mod pattern;
mod sort;
mod strlib;
mod tablib;

#[cfg(test)]
mod tests;

use mlua::Lua;
use mlua::ffi;

use crate::vm;
use capi::State;

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

pub(crate) unsafe fn install_raw(l: State) {
    unsafe {
        vm::use_go_pow(l);
        let g = ffi::LUA_GLOBALSINDEX;
        ffi::luaL_checkstack(l, 8, std::ptr::null());
        baselib::install(l);

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
