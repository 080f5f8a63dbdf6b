//! Links the patched Lua 5.1.5 that mlua (built with mlua-sys's `external` feature) runs on.
//!
//! Depend on this crate and refer to [`link`] once so the static library is kept.

/// Forces the linker to keep this crate (and so the Lua library) in the final binary.
#[inline(never)]
pub fn link() {}
