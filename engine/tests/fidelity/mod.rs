//! The harness of the library fidelity tests: a row is a Lua snippet and the text
//! gopher-lua (Kruise's 2022 pin, 658193537a64, built with Go 1.19/1.20) produces for it;
//! the snippet runs in a fresh engine state and its values are joined by `tostring` and
//! spaces. Kruise's `json` module is there as well.
//!
//! A row's snippet is an expression list `R(...)` receives; `E(f, ...)` stands for the
//! outcome of a protected call: its results, or `err:` and the message without position.

use kruise_lua_engine::vm::{self, Limits};
use kruise_lua_engine::{json, stdlib};

const PRELUDE: &str = r#"
local function R(...)
  local t = {}
  for i = 1, select('#', ...) do t[i] = tostring((select(i, ...))) end
  return table.concat(t, " ")
end
local function E(f, ...)
  local r = {pcall(f, ...)}
  if r[1] then return unpack(r, 2, table.maxn(r)) end
  return "err:" .. tostring(r[2]):gsub("^<string>:%d+: ", "")
end
"#;

/// Runs `R(<snippet>)` and returns its text, or `error: <message>` when the chunk fails.
pub fn run(snippet: &str) -> String {
    let lua = vm::new_state(&Limits::default()).expect("state");
    stdlib::install(&lua).expect("install");
    // Kruise's runtime opens its `json` module too (rollouts luamanager.RunLuaScript).
    json::install_module(&lua).expect("json module");
    let source = format!("{PRELUDE}\nreturn R({snippet})");
    match vm::exec_chunk(&lua, source.as_bytes()) {
        Ok(values) => match values.into_iter().next() {
            Some(mlua::Value::String(s)) => String::from_utf8_lossy(&s.as_bytes()).into_owned(),
            other => format!("non-string result {other:?}"),
        },
        Err(e) => format!("error: {}", e.message),
    }
}

/// Runs every row; fails listing each row whose text differs.
pub fn check(rows: &[(&str, &str)]) {
    let failures: Vec<String> = rows
        .iter()
        .filter_map(|(snippet, want)| {
            let got = run(snippet);
            (got != *want).then(|| format!("{snippet}\n    got  {got:?}\n    want {want:?}"))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} rows differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
