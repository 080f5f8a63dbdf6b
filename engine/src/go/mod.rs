//! Go's behaviour that Kruise's scripts observe, ported bit for bit and free of Lua: `fmt`
//! and `strconv` (through gopher-lua's `string.format` and number parsing), the `math`
//! package, and `encoding/json`'s text and its reading into `interface{}`.

pub mod fmt;
pub(crate) mod json_parse;
pub mod json_text;
pub mod math;
