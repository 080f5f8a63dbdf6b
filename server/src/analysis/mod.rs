//! Static analysis of Kruise traffic-routing Lua scripts, for the language server and `check`.
#![allow(dead_code)]

pub mod library;
pub mod obj_schema;
pub mod parse;
pub mod semantic;
pub mod config;
pub mod lints;
pub mod spec_shape;
pub mod walk;
pub mod completion;
pub mod hover;
pub mod navigation;
