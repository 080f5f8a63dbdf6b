//! Differential test of kruise-lua's engine against gopher-lua: random scripts (seeded) run
//! through both; every difference not on the expected (2017-vs-2022) or open lists is reported
//! with a shrunk reproducer. The CLI is `src/main.rs`; how to run it is in docs/ENGINE.md.

pub mod classes;
pub mod engines;
pub mod generate;
pub mod outcome;
pub mod pools;
pub mod session;
