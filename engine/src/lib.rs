//! kruise-lua-engine: runs OpenKruise Rollout traffic-routing Lua scripts exactly as Kruise does.
//!
//! The crate is plain data in, plain data out: script source and a [`LuaData`] (or a parsed
//! test case) go in; per-step outcomes with canonical JSON, diffs and source positions come
//! out. It prints nothing, touches no file unless a caller asks it to, and keeps no global state.

// The patched Lua 5.1 that mlua runs on; mlua-sys's `external` feature leaves linking to us.
extern crate kruise_lua51_sys;

pub mod controller;
pub mod debug;
pub mod discovery;
pub mod error;
pub mod go;
pub mod input;
pub mod intent;
pub mod json;
pub mod luadata;
pub mod path_text;
pub mod render;
pub mod routing;
pub mod runner;
pub mod schema;
pub mod script;
pub mod stdlib;
pub mod steps;
pub mod testcase;
pub mod value;
pub mod vm;
pub mod yaml;

#[cfg(test)]
mod test_draw;

pub use error::{ErrorKind, ScriptError};
pub use luadata::{Data, IngressData, LuaData};
pub use value::JsonValue;
