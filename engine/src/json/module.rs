//! The `json` global Kruise's runtime gives scripts: `json.encode(v)` and `json.decode(s)`.
//!
//! Both return their result, or `nil` and a message when encoding/decoding fails. A missing
//! argument (or a non-string, non-number argument to `decode`) raises a string error, as
//! gopher-lua's argument checks do. `json.encode` writes an empty table as `null`.

use std::cell::RefCell;

use mlua::{Function, Lua, MultiValue, Value};

use super::convert::{self, Orderer};
use super::{EmptyTable, KeyOrder, encode};
use crate::json::gotext;
use crate::value::JsonValue;

/// Lua glue: raises argument errors as plain strings (an mlua callback error would reach the
/// script as userdata) and returns exactly one value on success, two on failure.
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

/// The text gopher-lua's `CheckString` makes of a number: integral values within int64 in
/// plain decimal (so `-0` is `0`), others in Go's `%v` form (`NaN`, `+Inf` fail to decode).
fn number_text(n: f64) -> String {
    if n.is_nan() {
        return "NaN".into();
    }
    if n.is_infinite() {
        return if n > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    let mut text = String::new();
    if n.trunc() == n && (-9.223372036854776e18..9.223372036854776e18).contains(&n) {
        gotext::write_go_int(&mut text, n as i64);
    } else {
        // Go's %v uses 'e' from exponent 21 and below -4; either text parses back to `n`.
        gotext::write_go_float(&mut text, n);
    }
    text
}

type Outcome = (Value, Option<String>, bool);

fn bad_argument(message: String) -> Outcome {
    (Value::Nil, Some(message), true)
}

/// Installs `json` with `json.decode` building tables in `order` (see [`KeyOrder`]).
pub(super) fn install(lua: &Lua, order: KeyOrder) -> mlua::Result<()> {
    let encode_impl = lua.create_function(|lua, args: MultiValue| -> mlua::Result<Outcome> {
        let Some(value) = args.front() else {
            return Ok(bad_argument(
                "bad argument #1 to encode (value expected)".into(),
            ));
        };
        Ok(match encode::encode(value, EmptyTable::Null, Vec::new()) {
            Ok(bytes) => (Value::String(lua.create_string(bytes)?), None, false),
            Err(message) => (Value::Nil, Some(message), false),
        })
    })?;

    let orderer = RefCell::new(Orderer::new(order));
    let decode_impl =
        lua.create_function(move |lua, args: MultiValue| -> mlua::Result<Outcome> {
            let parsed = match args.front() {
                Some(Value::String(s)) => JsonValue::parse_go_interface(&s.as_bytes()),
                Some(Value::Integer(i)) => {
                    JsonValue::parse_go_interface(number_text(*i as f64).as_bytes())
                }
                Some(Value::Number(n)) => JsonValue::parse_go_interface(number_text(*n).as_bytes()),
                other => {
                    let got = other.map_or("no value", |v| v.type_name());
                    return Ok(bad_argument(format!(
                        "bad argument #1 to decode (string expected, got {got})"
                    )));
                }
            };
            Ok(match parsed {
                Ok(value) => {
                    // A finalizer run by the GC while tables are built could decode
                    // re-entrantly; it then gets a sorted order instead of a borrow panic.
                    let table = match orderer.try_borrow_mut() {
                        Ok(mut orderer) => convert::to_lua(lua, &value, &mut orderer)?,
                        Err(_) => {
                            convert::to_lua(lua, &value, &mut Orderer::new(KeyOrder::Sorted))?
                        }
                    };
                    (table, None, false)
                }
                Err(message) => (Value::Nil, Some(message), false),
            })
        })?;

    let raise: Function = lua.globals().raw_get("error")?;
    let (encode, decode): (Function, Function) =
        lua.load(GLUE)
            .set_name("=json")
            .call((encode_impl, decode_impl, raise))?;
    let module = lua.create_table()?;
    module.raw_set("encode", encode)?;
    module.raw_set("decode", decode)?;
    lua.globals().raw_set("json", module)
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
