//! A script that tail-calls itself until the deadline leaves millions of lost tail calls on
//! the stack; gopher-lua's traceback of the timeout names one line per lost tail call, and
//! shows only the first and last seven. Building it must take memory for the lines shown,
//! not for the lines named: before, every line was made (a `check` of such a script took
//! 2.5 GB and was aborted under a 4 GB address-space limit). Its own test binary, so that the
//! allocator counting the Rust heap's peak sees this run alone.

mod counting;

use kruise_lua_engine::JsonValue;
use kruise_lua_engine::error::ErrorKind;
use kruise_lua_engine::runner::{self, RunOptions};

#[global_allocator]
static ALLOCATOR: counting::Counting = counting::Counting;

#[test]
fn a_timeout_among_millions_of_tail_calls_keeps_the_traceback_small() {
    let obj = JsonValue::parse_go_interface(b"{}").unwrap();
    let script = runner::Script::new("local function f(n) return f(n + 1) end\nf(1)\nreturn obj");
    let (run, grown) =
        counting::peak_growth(|| runner::run_custom_json(&script, &obj, &RunOptions::default()));

    let error = run.production.unwrap_err();
    assert_eq!(error.kind, ErrorKind::Timeout);
    // (The Lua state's own memory comes from its arena, outside this count.)
    assert!(
        grown < 16 << 20,
        "the run held {} MiB of Rust heap at its peak",
        grown >> 20
    );
    let tail = "\t(tailcall): ?\n";
    let want = format!(
        "stack traceback:\n\t<string>:1: in function <<string>:1>\n{}\t...\n{}\
         \t<string>:2: in main chunk\n\t[G]: ?",
        tail.repeat(6),
        tail.repeat(5)
    );
    assert_eq!(error.traceback.as_deref(), Some(want.as_str()));
}

/// Frames between two runs of lost tail calls keep their lines (the run of the inner
/// frame is skipped by its count, not searched for: a search could jump over `f`).
#[test]
fn frames_between_runs_of_lost_tail_calls_are_named() {
    let obj = JsonValue::parse_go_interface(b"{}").unwrap();
    let script = runner::Script::new(
        "local function g(n) if n == 0 then error('x') end return g(n - 1) end\n\
         local function f() local r = g(3) return r end\n\
         local function h() return f() end\n\
         h()\nreturn obj",
    );
    let run = runner::run_custom_json(&script, &obj, &RunOptions::default());
    let error = run.production.unwrap_err();
    let tail = "\t(tailcall): ?\n";
    let want = format!(
        "stack traceback:\n\t[G]: in function 'error'\n\t<string>:1: in function <<string>:1>\n\
         {}\t<string>:2: in function <<string>:2>\n{}\t<string>:4: in main chunk\n\t[G]: ?",
        tail.repeat(3),
        tail
    );
    assert_eq!(error.traceback.as_deref(), Some(want.as_str()));
}
