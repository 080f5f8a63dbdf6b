//! Static analysis of Kruise traffic-routing Lua scripts, for the language server and `check`.
#![allow(dead_code)]

pub mod parse;
