//! The `json` global Kruise's runtime gives scripts: `json.encode(v)` and `json.decode(s)`.
//!
//! Both return their result, or `nil` and a message when encoding/decoding fails. A missing
//! argument (or a non-string, non-number argument to `decode`) raises a string error, as
//! gopher-lua's argument checks do. `json.encode` writes an empty table as `null`.

use std::ffi::c_int;
use std::sync::OnceLock;

use mlua::ffi;

use super::convert::{self, Orderer};
use super::encode;
use super::{EmptyTable, KeyOrder};
use crate::go;
use crate::value::JsonValue;
use crate::vm::{self, State};

/// Lua glue: raises argument errors as plain strings at the script's position, and returns
/// exactly one value on success, two on failure. `json.encode`/`json.decode` being Lua
/// functions also makes them count as a call frame, as gopher-lua's Go functions do.
const GLUE: &str = r#"
local encode_impl, decode_impl, raise = ...
local function encode(...)
  local value, message, bad = encode_impl(...)
  if bad then raise(message, 2) end
  if message ~= nil then return nil, message end
  return value
end
local function decode(...)
  local value, message, bad = decode_impl(...)
  if bad then raise(message, 2) end
  if message ~= nil then return nil, message end
  return value
end
return encode, decode
"#;

/// The glue's bytecode, compiled once per process (parsing it per state cost more than the
/// rest of the module's installation).
fn glue_bytecode() -> &'static [u8] {
    static BYTECODE: OnceLock<Vec<u8>> = OnceLock::new();
    BYTECODE.get_or_init(|| {
        vm::compile_named(GLUE.as_bytes(), c"=json").expect("the json glue compiles")
    })
}

/// The text gopher-lua's `CheckString` makes of a number: integral values within int64 in
/// plain decimal (so `-0` is `0`), others in Go's `%v` form (`NaN`, `+Inf` fail to decode).
fn number_text(n: f64) -> String {
    if !n.is_finite() {
        return go::json_text::go_special_float(n).into();
    }
    let mut text = String::new();
    if n.trunc() == n && (-9.223372036854776e18..9.223372036854776e18).contains(&n) {
        go::json_text::write_go_int(&mut text, n as i64);
    } else {
        // Go's %v uses 'e' from exponent 21 and below -4; either text parses back to `n`.
        go::json_text::write_go_float(&mut text, n);
    }
    text
}

/// Pushes the three results the glue expects: value, message (or nil), bad-argument flag.
unsafe fn outcome(l: State, message: Option<String>, bad: bool) -> c_int {
    // SAFETY: called from the C functions below, with a valid state and LUA_MINSTACK slots.
    unsafe {
        match message {
            Some(message) => {
                ffi::lua_pushlstring(l, message.as_ptr().cast(), message.len());
            }
            None => ffi::lua_pushnil(l),
        }
        ffi::lua_pushboolean(l, bad as c_int);
    }
    3
}

/// `encode_impl(v)`: the text, or nil and the encoder's message.
unsafe extern "C-unwind" fn encode_impl(l: State) -> c_int {
    // SAFETY: called by Lua with a valid state and LUA_MINSTACK free slots. The buffers
    // leak if pushing the result raises a memory error.
    unsafe {
        if ffi::lua_gettop(l) < 1 {
            ffi::lua_pushnil(l);
            return outcome(
                l,
                Some("bad argument #1 to encode (value expected)".into()),
                true,
            );
        }
        let mut text = Vec::new();
        match encode::encode_at(l, 1, EmptyTable::Null, &mut text) {
            Ok(_) => {
                ffi::lua_pushlstring(l, text.as_ptr().cast(), text.len());
                drop(text);
                outcome(l, None, false)
            }
            Err(message) => {
                drop(text);
                ffi::lua_pushnil(l);
                outcome(l, Some(message), false)
            }
        }
    }
}

/// `decode_impl(s)`: the decoded value, or nil and the parser's message. With an upvalue (a
/// userdata holding an [`Orderer`]) object keys are inserted in that order, else sorted.
unsafe extern "C-unwind" fn decode_impl(l: State) -> c_int {
    // SAFETY: as for encode_impl; the upvalue, when present, is the Orderer installed below.
    unsafe {
        let parsed = match ffi::lua_type(l, 1) {
            ffi::LUA_TSTRING => JsonValue::parse_go_interface(crate::stdlib::capi::to_bytes(l, 1)),
            ffi::LUA_TNUMBER => {
                JsonValue::parse_go_interface(number_text(ffi::lua_tonumber(l, 1)).as_bytes())
            }
            _ => {
                let got = crate::stdlib::capi::type_name(l, 1);
                let message = format!("bad argument #1 to decode (string expected, got {got})");
                ffi::lua_pushnil(l);
                return outcome(l, Some(message), true);
            }
        };
        match parsed {
            Ok(value) => {
                let stored = ffi::lua_touserdata(l, ffi::lua_upvalueindex(1)).cast::<Orderer>();
                // Work on a copy: a finalizer run by the collector while tables are built
                // may decode re-entrantly, and must not alias this call's generator.
                let mut orderer = match stored.as_ref() {
                    Some(stored) => stored.clone(),
                    None => Orderer::Sorted,
                };
                convert::push_json(l, &value, &mut orderer);
                drop(value);
                if !stored.is_null() {
                    *stored = orderer;
                }
                outcome(l, None, false)
            }
            Err(message) => {
                ffi::lua_pushnil(l);
                outcome(l, Some(message), false)
            }
        }
    }
}

// An Orderer lives in a Lua userdata, which has no finalizer: it must need no drop.
const _: () = assert!(!std::mem::needs_drop::<Orderer>());

/// Installs the `json` global with `json.decode` building tables in `order`.
///
/// # Safety
/// `l` is a valid state with the base library open, in a protected call.
pub(crate) unsafe fn install_raw(l: State, order: KeyOrder) {
    // SAFETY: called from the C functions below, with a valid state and LUA_MINSTACK slots.
    unsafe {
        let glue = glue_bytecode();
        ffi::luaL_checkstack(l, 6, std::ptr::null());
        if vm::load_compiled(l, glue) != 0 {
            ffi::lua_error(l);
        }
        ffi::lua_pushcfunction(l, encode_impl);
        match Orderer::new(order) {
            Orderer::Sorted => ffi::lua_pushcfunction(l, decode_impl),
            shuffled => {
                let slot = ffi::lua_newuserdata(l, std::mem::size_of::<Orderer>());
                slot.cast::<Orderer>().write(shuffled);
                ffi::lua_pushcclosure(l, decode_impl, 1);
            }
        }
        ffi::lua_pushlstring(l, c"error".as_ptr(), 5);
        ffi::lua_rawget(l, ffi::LUA_GLOBALSINDEX);
        ffi::lua_call(l, 3, 2);
        ffi::lua_createtable(l, 0, 2);
        ffi::lua_pushvalue(l, -3);
        ffi::lua_setfield(l, -2, c"encode".as_ptr());
        ffi::lua_pushvalue(l, -2);
        ffi::lua_setfield(l, -2, c"decode".as_ptr());
        ffi::lua_pushlstring(l, c"json".as_ptr(), 4);
        ffi::lua_insert(l, -2);
        ffi::lua_rawset(l, ffi::LUA_GLOBALSINDEX);
        ffi::lua_pop(l, 2);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_arguments_read_as_gopher_prints_them() {
        assert_eq!(number_text(42.0), "42");
        assert_eq!(number_text(-0.0), "0");
        assert_eq!(number_text(1.5), "1.5");
        assert_eq!(number_text(1e21), "1e+21");
        assert_eq!(number_text(f64::NAN), "NaN");
        assert_eq!(number_text(f64::NEG_INFINITY), "-Inf");
    }
}
