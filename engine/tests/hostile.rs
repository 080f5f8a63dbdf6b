//! Hostile scripts through the runner (the path `check` and the language server use): each
//! ends in its typed error — never a crash, a hang or an abort — and the next run is unaffected.

use std::time::Duration;

use kruise_lua_engine::ErrorKind;
use kruise_lua_engine::luadata::LuaData;
use kruise_lua_engine::runner::{Mode, RunOptions, Script, run_custom};
use kruise_lua_engine::vm::Limits;

fn options() -> RunOptions {
    options_with(Duration::from_millis(200))
}

/// For scripts that must end in something other than a timeout: a deadline no loaded machine
/// reaches while filling 16 MiB (with 200 ms, a busy CI host turned memory errors into timeouts).
fn patient_options() -> RunOptions {
    options_with(Duration::from_secs(60))
}

fn options_with(timeout: Duration) -> RunOptions {
    RunOptions {
        limits: Limits {
            timeout,
            memory_bytes: 16 * 1024 * 1024,
        },
        ..RunOptions::default()
    }
}

fn error_kind(source: &str, options: &RunOptions) -> Option<ErrorKind> {
    let run = run_custom(&Script::new(source), &LuaData::default(), options);
    run.result(Mode::Production)
        .as_ref()
        .err()
        .map(|error| error.kind)
}

#[test]
fn each_hostile_script_ends_in_its_error_kind() {
    let cases: &[(&str, &str, ErrorKind)] = &[
        ("infinite loop", "while true do end", ErrorKind::Timeout),
        (
            "loop swallowing the timeout in pcall",
            "while true do pcall(function() while true do end end) end",
            ErrorKind::Timeout,
        ),
        (
            "string.rep bomb",
            "local s = string.rep('x', 1e9) return {}",
            ErrorKind::Memory,
        ),
        (
            "doubling string",
            "local s = 'x' while true do s = s .. s end",
            ErrorKind::Memory,
        ),
        (
            "growing table",
            "local t = {} for i = 1, 1e9 do t[i] = {i} end",
            ErrorKind::Memory,
        ),
        (
            "deep recursion",
            "local function f(n) return 1 + f(n + 1) end return {spec = f(1)}",
            ErrorKind::Runtime,
        ),
        (
            "recursion through pcall",
            "local function f() return pcall(f) end f() while true do end",
            ErrorKind::Timeout,
        ),
        (
            "coroutines are absent",
            "local co = coroutine.create(function() end)",
            ErrorKind::Runtime,
        ),
        (
            "backtracking pattern",
            "return {spec = {string.find(string.rep('a', 5000), 'a*a*a*a*a*a*b')}}",
            ErrorKind::Timeout,
        ),
        ("syntax error", "return {", ErrorKind::Syntax),
        (
            "binary chunk",
            "return loadstring('\\27Lua')() ",
            ErrorKind::Runtime,
        ),
        (
            "dofile does not reach the disk",
            "return dofile('/etc/passwd')",
            ErrorKind::NotTable,
        ),
    ];
    for (name, source, kind) in cases {
        let options = if *kind == ErrorKind::Timeout {
            options()
        } else {
            patient_options()
        };
        assert_eq!(
            error_kind(source, &options),
            Some(*kind),
            "{name}: {source}"
        );
    }
    // A script's finalizer would run with hooks off, beyond the deadline: like gopher-lua, a
    // sandbox calls none, so the run simply completes.
    let finalizer = "local p = newproxy(true) getmetatable(p).__gc = function() while true do end end \
                     p = nil collectgarbage() local t = {} for i = 1, 1e4 do t[i] = {} end return {}";
    assert_eq!(error_kind(finalizer, &patient_options()), None);
    // The state of one run never leaks into the next.
    assert_eq!(error_kind("leaked = 1 return {}", &options()), None);
    assert_eq!(
        error_kind("if leaked then error('leaked') end return {}", &options()),
        None
    );
}

#[test]
fn an_encode_error_deep_in_a_result_has_a_short_path() {
    // A result nested past the encoder's depth bound, and one with a NaN 9,000 levels down:
    // each error's path keeps its two ends only (it was 60 KB).
    for (depth, ending) in [
        (10_000, "level.level: tables are nested more than"),
        (9_000, "level.bad: "),
    ] {
        let source = format!(
            "local t = {{bad = 0/0}} for i = 1, {depth} do t = {{level = t}} end return {{spec = t}}"
        );
        let run = run_custom(&Script::new(source), &LuaData::default(), &options());
        let error = run.result(Mode::Production).as_ref().unwrap_err();
        assert!(error.message.len() < 1000, "{} bytes", error.message.len());
        assert!(
            error.message.contains("at spec.level.level")
                && error.message.contains(" levels)… level.level")
                && error.message.contains(ending),
            "{}",
            error.message
        );
    }
}

/// A memory error names the script line whose allocation the cap refused, as a timeout names
/// the line it stopped at (PUC Lua's own memory error carries no position); an allocation
/// inside a library call is located at the script line that called it.
#[test]
fn a_memory_error_names_the_script_line() {
    let cases: &[(&str, u32)] = &[
        ("local t = {}\nfor i = 1, 1e9 do\n  t[i] = {i}\nend\n", 3),
        (
            "local x = 1\n\nlocal s = string.rep('x', 1e9)\nreturn {}\n",
            3,
        ),
        ("local s = 'x'\nwhile true do\n  s = s .. s\nend\n", 3),
    ];
    for (source, line) in cases {
        let run = run_custom(
            &Script::new(*source),
            &LuaData::default(),
            &patient_options(),
        );
        let error = run.result(Mode::Production).as_ref().unwrap_err();
        assert_eq!(error.kind, ErrorKind::Memory, "{source}");
        assert_eq!(error.line, Some(*line), "{source}: {}", error.message);
        assert_eq!(
            error.message,
            format!("<string>:{line}: not enough memory"),
            "{source}"
        );
    }
    // The next run starts without the previous run's line.
    let run = run_custom(&Script::new("return {}"), &LuaData::default(), &options());
    assert!(run.result(Mode::Production).is_ok());
}
