//! The library environment Kruise gives scripts, with gopher-lua's behaviour where it differs
//! from PUC Lua 5.1 (conformance README 2.1 and 2.11), plus our sandbox and `print` capture.

use mlua::Lua;

/// Output of `print` during one run, one entry per call (arguments joined by tabs).
#[derive(Debug, Default, Clone)]
pub struct PrintLog(pub Vec<String>);

/// Installs gopher-lua's base/table/string/math behaviour, the extra globals, `require`,
/// and the sandbox into a state made by `vm::new_state`. `print` appends to the state's
/// [`PrintLog`] app data (see [`take_prints`]).
pub fn install(lua: &Lua) -> mlua::Result<()> {
    let _ = lua;
    todo!("stdlib helper")
}

/// Takes what the script printed so far.
pub fn take_prints(lua: &Lua) -> Vec<String> {
    let _ = lua;
    todo!("stdlib helper")
}
