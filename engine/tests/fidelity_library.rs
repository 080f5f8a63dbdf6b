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

/// gopher's math library: CheckNumber without string conversion, Go's `math` algorithms
/// (amd64: assembly Exp/Log, pure-Go trigonometry and Pow), luaModulo's sign rule.
#[test]
fn math_library() {
    check(&[
        (r#"E(math.exp, "1")"#, "err:bad argument #1 to (anonymous) (number expected, got string)"),
        (r#"E(math.floor, "50")"#, "err:bad argument #1 to (anonymous) (number expected, got string)"),
        (r#"E(math.max, 1, "2")"#, "err:bad argument #2 to (anonymous) (number expected, got string)"),
        (r#"E(math.min)"#, "err:wrong number of arguments"),
        (r#"E(math.sqrt)"#, "err:bad argument #1 to (anonymous) (number expected, got nil)"),
        (r#"E(math.ldexp, 1, "2")"#, "err:bad argument #2 to (anonymous) (number expected, got string)"),
        (r#"math.modf(1/0)"#, "+Inf NaN"),
        (r#"math.modf(-1/0)"#, "-Inf NaN"),
        (r#"math.modf(-3.5)"#, "-3 -0.5"),
        (r#"math.modf(0/0)"#, "NaN NaN"),
        (r#"math.ldexp(-2147483648, -2147483649)"#, "0"),
        (r#"math.ldexp(1, 2^63)"#, "0"),
        (r#"math.ldexp(3, 1023), math.ldexp(0.75, -1074), math.ldexp(1, -1075)"#, "+Inf 5e-324 0"),
        (r#"math.frexp(-3), math.frexp(5e-324)"#, "-0.75 0.5 -1073"),
        (r#"math.tan(97)"#, "-0.4103212990482421"),
        (r#"math.tan(1e300), math.sin(1e22), math.cos(2^30+0.5)"#, "1.4214488238747243 -0.8522008497671889 0.9863625014361829"),
        (r#"math.sin(0.5), math.cos(0.5), math.tan(0.5), math.tan(-1.5707963267948966)"#, "0.479425538604203 0.8775825618903728 0.5463024898437905 -16331239353195392"),
        (r#"math.exp(1), math.exp(-1), math.exp(0.1), math.exp(700), math.exp(-740), math.exp(709.8)"#, "2.718281828459045 0.36787944117144233 1.1051709180756477 1.0142320547350045e+304 4.2e-322 +Inf"),
        (r#"math.log(10), math.log(0.1), math.log(2), math.log10(1000), math.log10(2), math.log(5e-324), math.log(-1)"#, "2.302585092994046 -2.3025850929940455 0.6931471805599453 3 0.3010299956639812 -709.0895657128241 NaN"),
        (r#"math.pow(10, -2), math.pow(2, 0.5), math.pow(1.1, 100), math.pow(3, 1/3), math.pow(-8, 1/3), math.pow(-2, 3)"#, "0.01 1.4142135623730951 13780.612339822364 1.4422495703074085 NaN -8"),
        (r#"math.asin(0.3), math.acos(0.3), math.atan(3), math.atan2(1, -1), math.atan2(-1/0, -1/0)"#, "0.3046926540153975 1.266103672779499 1.2490457723982544 2.356194490192345 -2.356194490192345"),
        (r#"math.sinh(0.3), math.cosh(3), math.tanh(0.7), math.tanh(0.3), math.sinh(-25)"#, "0.3045202934471426 10.067661995777765 0.6043677771171635 0.2913126124515909 -3.600244966869294e+10"),
        (r#"math.deg(1), math.rad(180), math.deg(math.pi)"#, "57.29577951308232 3.141592653589793 180"),
        (r#"math.fmod(-7, 3), math.fmod(7, -3), math.fmod(1e300, 3), math.fmod(5, 1/0)"#, "-1 1 0 5"),
        (r#"-4 % 2, 5 % -5, -3 % -2, -3 % 2, 3 % -2, 0.0 % -1e-05, 5.5 % 2"#, "2 -5 -3 1 -1 -1e-05 1.5"),
        (r#"math.mod(-4, 2), math.mod(0, -1e-05), math.mod(-1, 1/0)"#, "2 -1e-05 +Inf"),
        (r#"E(math.random, 0)"#, "err:invalid argument to Intn"),
        (r#"E(math.random, 5, 3)"#, "err:invalid argument to Intn"),
        (r#"math.random(3, 3), math.random(1)"#, "3 1"),
        (r#"math.huge == 1/0, math.pi"#, "false 3.141592653589793"),
    ]);
}

/// Argument errors name the function as the call site does (gopher's frameFuncName).
#[test]
fn argument_error_names() {
    check(&[
        (r#"E(function() return math.exp("1") end)"#, "err:bad argument #1 to exp (number expected, got string)"),
        (r#"E(function() local x = math.exp("1") return x end)"#, "err:bad argument #1 to exp (number expected, got string)"),
        (r#"E(function() local f = math.exp; local x = f("1") return x end)"#, "err:bad argument #1 to f (number expected, got string)"),
        (r#"E(function() local t = {math.exp}; local x = t[1]("1") return x end)"#, "err:bad argument #1 to ? (number expected, got string)"),
        (r#"E(function() local x = string.rep("x") return x end)"#, "err:bad argument #2 to rep (number expected, got nil)"),
        (r#"E(function() local x = ("x"):rep() return x end)"#, "err:bad argument #2 to rep (number expected, got nil)"),
        (r#"E(function() local x = (math.exp)("1") return x end)"#, "err:bad argument #1 to exp (number expected, got string)"),
        (r#"E(function() local m = math; local x = m["exp"]("1") return x end)"#, "err:bad argument #1 to exp (number expected, got string)"),
        (r#"E(function() exp2 = math.exp; local x = exp2("1") return x end)"#, "err:bad argument #1 to exp2 (number expected, got string)"),
        (r#"E(function() local x = math.floor() return x end)"#, "err:bad argument #1 to floor (number expected, got nil)"),
        (r#"E(function() local x = string.sub("x") return x end)"#, "err:bad argument #2 to sub (number expected, got nil)"),
        (r#"E(function() local x = table.concat({}, {}) return x end)"#, "err:bad argument #2 to concat (string expected, got table)"),
    ]);
}

/// Base functions: gopher's checks and messages, `next` with an absent key, `setmetatable`
/// on any type, the string table as the strings' metatable, `unpack` reading only the
/// array part, `select`/`assert`/`rawset` rules.
#[test]
fn base_library() {
    check(&[
        (r#"next({}, "")"#, "nil"),
        (r#"next({a=1, b=2, c=3}, "zz")"#, "b 2"),
        (r#"next({a=1, b=2}, 0)"#, "b 2"),
        (r#"next({1, 2, x=1, y=2}, 0/0)"#, "y 2"),
        (r#"next({10, 20}, 1)"#, "2 20"),
        (r#"next({10, 20}, 5)"#, "nil"),
        (r#"E(next)"#, "err:bad argument #1 to (anonymous) (table expected, got nil)"),
        (r#"E(next, {}, nil)"#, ""),
        (r#"pcall(setmetatable, "", {})"#, "true "),
        (r#"E(function() setmetatable(1, {__index = function(a, k) return k end}) return (5).foo end)"#, "foo"),
        (r#"E(setmetatable, {}, 1)"#, "err:bad argument #2 to (anonymous) (nil or table expected, got number)"),
        (r#"E(setmetatable, nil, {})"#, "err:cannot set metatable to a nil object."),
        (r#"E(setmetatable, setmetatable({}, {__metatable = 1}), {})"#, "err:cannot change a protected metatable"),
        (r#"getmetatable("") == string, type(getmetatable("").len), string.__index == string"#, "true function true"),
        (r#"getmetatable(setmetatable({}, {__metatable = "locked"}))"#, "locked"),
        (r#"E(getmetatable)"#, "err:bad argument #1 to (anonymous) (value expected)"),
        (r#"unpack({[0]=0, 1}, 0, 2)"#, "nil 1 nil"),
        (r#"unpack({1, 2, 3}, -1, 1)"#, "nil nil 1"),
        (r#"unpack({1, 2, 3}, 2)"#, "2 3"),
        (r#"unpack({1, 2, 3}, 3, 1)"#, ""),
        (r#"select('#', unpack({}, 1, 0))"#, "0"),
        (r#"E(unpack, {}, 1, 1e9)"#, "err:registry overflow"),
        (r#"E(select, "2", "a", "b")"#, "err:bad argument #1 to (anonymous) (invalid string '2')"),
        (r#"E(select, 0, "a")"#, "err:bad argument #1 to (anonymous) (index out of range)"),
        (r#"select(-1, "a", "b"), select(5, "a")"#, "b"),
        (r#"E(select, -3, "a", "b")"#, "err:bad argument #1 to (anonymous) (index out of range)"),
        (r#"E(select)"#, "err:bad argument #1 to (anonymous) (number or string expected, got nil)"),
        (r#"select(2.7, "a", "b", "c")"#, "b c"),
        (r#"E(assert, false)"#, "err:assertion failed!"),
        (r#"E(assert, nil, "boom")"#, "err:boom"),
        (r#"E(assert, false, 42)"#, "err:bad argument #2 to (anonymous) (string expected, got number)"),
        (r#"E(assert, false, "100%")"#, "err:100%"),
        (r#"assert(1, 2, 3)"#, "1 2 3"),
        (r#"E(tostring)"#, "err:bad argument #1 to (anonymous) (value expected)"),
        (r#"E(type)"#, "err:bad argument #1 to (anonymous) (value expected)"),
        (r#"E(rawget, {}, nil)"#, ""),
        (r#"E(rawget, "x", 1)"#, "err:bad argument #1 to (anonymous) (table expected, got string)"),
        (r#"select('#', rawset({}, 1, 2))"#, "0"),
        (r#"rawequal("a", "a"), rawequal(0/0, 0/0)"#, "true false"),
        (r#"E(rawequal, 1)"#, "err:bad argument #2 to (anonymous) (value expected)"),
        (r#"E(ipairs)"#, "err:bad argument #1 to (anonymous) (table expected, got nil)"),
        (r#"E(pairs, nil)"#, "err:bad argument #1 to (anonymous) (table expected, got nil)"),
        (r#"E(function() local s = 0 for i, v in ipairs({1, 2, nil, 4}) do s = s + v end return s end)"#, "3"),
        (r#"E(function() local n = 0 for k, v in pairs({1, 2, x = 3}) do n = n + 1 end return n end)"#, "3"),
        (r#"E(function() setmetatable("", {}) return pcall(string.len, "x") end)"#, "true 1"),
        (r#"E(function() local mt = getmetatable("") setmetatable("", {}) local ok = pcall(function() return ("x"):len() end) setmetatable("", mt) return ok, ("ab"):len() end)"#, "false 2"),
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
