//! kruise-lua-engine: runs OpenKruise Rollout traffic-routing Lua scripts exactly as Kruise does.
//!
//! The crate is plain data in, plain data out: script source and a [`LuaData`] (or a parsed
//! test case) go in; per-step outcomes with canonical JSON, diffs and source positions come
//! out. It prints nothing, touches no file unless a caller asks it to, and keeps no global state.

pub mod error;
pub mod json;
pub mod luadata;
pub mod stdlib;
pub mod value;
pub mod vm;
pub mod yaml;
pub mod testcase;
pub mod discovery;
pub mod runner;

pub use error::{ErrorKind, ScriptError};
pub use luadata::{Data, IngressData, LuaData};
pub use value::JsonValue;
