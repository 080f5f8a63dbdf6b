//! Library fidelity: each row is a Lua snippet and the text gopher-lua (Kruise's 2022 pin,
//! 658193537a64, built with Go 1.19/1.20) produces for it; the snippet runs in a fresh
//! engine state and its values are joined by `tostring` and spaces.
//!
//! A row's snippet is an expression list `R(...)` receives; `E(f, ...)` stands for the
//! outcome of a protected call: its results, or `err:` and the message without position.

use kruise_lua_engine::vm::{self, Limits};
use kruise_lua_engine::{runner, stdlib};

mod common;
use common::conformance_dir;

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
fn run(snippet: &str) -> String {
    let lua = vm::new_state(&Limits::default()).expect("state");
    stdlib::install(&lua).expect("install");
    let source = format!("{PRELUDE}\nreturn R({snippet})");
    match vm::exec_chunk(&lua, source.as_bytes()) {
        Ok(values) => match values.into_iter().next() {
            Some(mlua::Value::String(s)) => String::from_utf8_lossy(&s.as_bytes()).into_owned(),
            other => format!("non-string result {other:?}"),
        },
        Err(e) => format!("error: {}", e.message),
    }
}

fn check(rows: &[(&str, &str)]) {
    let failures: Vec<String> = rows
        .iter()
        .filter_map(|(snippet, want)| {
            let got = run(snippet);
            (got != *want).then(|| format!("{snippet}\n    got  {got:?}\n    want {want:?}"))
        })
        .collect();
    assert!(failures.is_empty(), "{} rows differ:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn patterns() {
    check(&[
        // A quantifier with nothing to repeat is a literal character.
        (r#"string.gsub("web-canary", "-canary$", "")"#, "web 1"),
        (r#"string.find("xa*", "(a)*")"#, "2 3 a"),
        (r#"string.find("a+b", "+b")"#, "2 3"),
        (r#"string.match("x?y", "(?)y")"#, "?"),
        (r#"string.match("a**", "a**")"#, "a*"),
        (r#"string.find("(%b)*", "%b()*")"#, "1 5"),
        (r#"string.gsub("--x--", "-", "+")"#, "++x++ 4"),
        (r#"string.match("k-v", "^(%w+)(-)(%w+)$")"#, "k - v"),
        // `]` and `-` first in a set, `[` in a set, `]` outside a set.
        (r#"E(function() local n = 0 for a, b in string.gmatch("", "f[s][-%]]b()()") do n = n + 1 end return n end)"#, "0"),
        (r#"string.match("a-]b", "[-%]]+")"#, "-]"),
        (r#"string.match("x]]y", "[]]+")"#, "]]"),
        (r#"string.match("x]-y", "[]-]+")"#, "]-"),
        (r#"string.match("a[b", "[[]")"#, "["),
        (r#"string.match("a]b", "a]")"#, "a]"),
        (r#"string.match("z-a", "[^-]+")"#, "z"),
        (r#"string.match("b-", "[a--]+")"#, "-"),
        // Error positions are 0-based offsets of the last byte the parser consumed.
        (r#"E(string.find, "a", "[]")"#, "err:unexpected EOS at 1"),
        (r#"E(string.find, "a", "(a")"#, "err:unfinished capture at EOS"),
        (r#"E(string.find, "a", "a)")"#, "err:invalid ')' at 0"),
        (r#"E(string.find, "a", "%0")"#, "err:invalid capture index at 0"),
        (r#"E(string.find, "abc", "[a")"#, "err:unexpected EOS at 1"),
        (r#"E(string.find, "abc", "[")"#, "err:unexpected EOS at 0"),
        (r#"E(string.find, "abc", "%")"#, ""),
        (r#"E(string.gsub, "abc", "(a)", "%2")"#, "err:invalid capture index"),
        // %p is punctuation only; digits are not.
        (r#"string.find("a", "1*%S%p*", 1e300)"#, "nil"),
        (r#"string.match("12;:ab", "%p+")"#, ";:"),
        (r#"string.match("12;:ab", "%P+")"#, "12"),
        (r#"string.gsub("a1!b2?", "%p", "")"#, "a1b2 2"),
    ]);
}

/// The 2022-pin pattern vectors of ../shared/conformance/pin2022 (README 2.13).
#[test]
fn pin2022_pattern_vectors() {
    let dir = conformance_dir().join("pin2022");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".lua").filter(|s| s.starts_with("pin_pat_")) else {
            continue;
        };
        seen += 1;
        let source = std::fs::read_to_string(&path).unwrap();
        let obj = std::fs::read(dir.join(format!("{stem}.obj.json"))).unwrap();
        let obj = kruise_lua_engine::JsonValue::parse_go_interface(&obj).unwrap();
        let expected: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join(format!("{stem}.expected.json"))).unwrap(),
        )
        .unwrap();
        let run = runner::run_custom_json(&runner::Script::new(source), &obj, &Default::default());
        match &run.production {
            Ok(data) => {
                assert_eq!(expected["status"], "ok", "{stem}: {data:?}");
                assert_eq!(data.to_canonical_json(), expected["output"].as_str().unwrap(), "{stem}");
            }
            Err(e) => {
                assert_eq!(expected["status"], "error", "{stem}: {e:?}");
                assert_eq!(e.kind.as_str(), expected["error_kind"].as_str().unwrap(), "{stem}");
            }
        }
    }
    assert_eq!(seen, 4, "pin2022 pattern vectors");
}
