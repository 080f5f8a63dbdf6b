//! The tables open during an iterative walk over nested Lua tables (encoding a result,
//! converting JSON to Lua), kept reachable and addressable by depth.
//!
//! One C call may use at most LUAI_MAXCSTACK (8000) stack slots, and walks go 10000
//! levels deep (Go's limit), so the first [`ON_STACK`] tables sit on the Lua stack and
//! deeper ones in a helper table.

use std::ffi::c_int;

use mlua::ffi;

use crate::vm::State;

/// How many open tables stay on the Lua stack.
const ON_STACK: usize = 4000;

pub(super) struct OpenTables {
    /// Absolute index of the helper table's slot (nil until a walk goes deeper than
    /// `ON_STACK`); the table at depth d <= ON_STACK sits at `base + d`.
    base: c_int,
    depth: usize,
}

impl OpenTables {
    /// Starts an empty stack of tables at the top of `l`'s stack.
    ///
    /// # Safety
    /// `l` is valid, with a free stack slot. Until [`OpenTables::close`], the caller keeps
    /// the stack as these methods leave it (temporaries pushed above are popped again).
    pub(super) unsafe fn new(l: State) -> Self {
        // SAFETY: as the function's # Safety section requires of the caller.
        unsafe {
            ffi::lua_pushnil(l);
            OpenTables {
                base: ffi::lua_gettop(l),
                depth: 0,
            }
        }
    }

    /// Whether the next table opened would go to the helper table (which allocates).
    pub(super) fn next_is_deep(&self) -> bool {
        self.depth >= ON_STACK
    }

    /// Makes the table on top of the stack the innermost open table. Leaves it on top
    /// while the depth allows, else moves it to the helper table.
    ///
    /// # Safety
    /// In a protected call (growing the stack or the helper table may raise a memory error).
    pub(super) unsafe fn push(&mut self, l: State) {
        self.depth += 1;
        // SAFETY: as the function's # Safety section requires of the caller.
        unsafe {
            if self.depth <= ON_STACK {
                // Room for the next table and two temporaries.
                ffi::luaL_checkstack(l, 3, c"tables nested too deep".as_ptr());
                return;
            }
            if ffi::lua_type(l, self.base) == ffi::LUA_TNIL {
                ffi::lua_createtable(l, 64, 0);
                ffi::lua_replace(l, self.base);
            }
            ffi::lua_rawseti_(l, self.base, (self.depth - ON_STACK) as c_int);
        }
    }

    /// Pushes the innermost open table onto the stack when it is not there already, and
    /// returns its index; [`OpenTables::release`] undoes the push.
    ///
    /// # Safety
    /// At least one table is open; a free stack slot.
    pub(super) unsafe fn innermost(&self, l: State) -> c_int {
        // SAFETY: as the function's # Safety section requires of the caller.
        unsafe {
            if self.depth <= ON_STACK {
                return self.base + self.depth as c_int;
            }
            ffi::lua_rawgeti_(l, self.base, (self.depth - ON_STACK) as c_int);
            ffi::lua_gettop(l)
        }
    }

    /// Removes what [`OpenTables::innermost`] pushed (call with the index it returned,
    /// after popping what was pushed above it).
    ///
    /// # Safety
    /// As for `innermost`.
    pub(super) unsafe fn release(&self, l: State, index: c_int) {
        if self.depth > ON_STACK {
            // SAFETY: as the function's # Safety section requires of the caller.
            unsafe { ffi::lua_remove(l, index) };
        }
    }

    /// Closes the innermost open table.
    ///
    /// # Safety
    /// At least one table is open and nothing is pushed above the stack part.
    pub(super) unsafe fn pop(&mut self, l: State) {
        // SAFETY: as the function's # Safety section requires of the caller.
        unsafe {
            if self.depth <= ON_STACK {
                ffi::lua_pop(l, 1);
            } else {
                // Storing nil under an existing key allocates nothing.
                ffi::lua_pushnil(l);
                ffi::lua_rawseti_(l, self.base, (self.depth - ON_STACK) as c_int);
            }
        }
        self.depth -= 1;
    }
}
