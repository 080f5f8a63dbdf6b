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

/// The table library over gopher's array slice: trailing nil slots seen by insert, remove
/// and sort; maxn as the array length; concat's separator through OptString.
#[test]
fn table_library() {
    check(&[
        (r#"E(function() local t = {1, 2, 3, nil} local r = table.remove(t, 0) return r, #t, t[3] end)"#, "nil 3 3"),
        (r#"E(function() local t = {1, 2, 3, nil} local r = table.remove(t) return r, #t, t[3] end)"#, "nil 3 3"),
        (r#"E(function() local t = {nil} return #t end)"#, "0"),
        (r#"E(function() local t = {nil} table.insert(t, "x") return #t, t[1] end)"#, "1 x"),
        (r#"E(function() local t = {nil} table.insert(t, 1, "x") return #t, t[1], t[2], table.remove(t), table.remove(t) end)"#, "1 x nil nil x"),
        (r#"E(function() local t = {1, nil, nil} table.insert(t, 2, "x") return #t, t[1], t[2], t[3], t[4] end)"#, "2 1 x"),
        (r#"E(function() local t = {} t[5] = nil table.insert(t, 3, "x") return #t, t[3], t[4] end)"#, "3 x"),
        (r#"E(function() local t = {} t[5] = nil return table.remove(t), table.remove(t, 2), table.remove(t, 9) end)"#, ""),
        (r#"table.maxn({[2^53] = 1}), table.maxn({[1.5] = 1}), table.maxn({1, 2, [10] = 3}), table.maxn({[-1] = 1})"#, "0 0 10 0"),
        (r#"E(function() local t = {3, 2, 1, nil} table.sort(t) return t[1], t[2], t[3], t[4] end)"#, "err:attempt to compare nil with number"),
        (r#"E(function() local t = {3, 2, 1, nil} table.sort(t, function(a, b) return (a or 0) < (b or 0) end) return t[1], t[2], t[3], t[4] end)"#, "nil 1 2 3"),
        (r#"E(function() local t = {1, 2, 3} table.remove(t, 2) return #t, t[1], t[2], t[3] end)"#, "2 1 3"),
        (r#"E(function() local t = {1, 2, 3} t[3] = nil return table.remove(t), #t end)"#, "nil 2"),
        (r#"E(function() local t = {1, 2, 3} t[3] = nil t[2] = nil return table.remove(t, 1), #t end)"#, "1 0"),
        (r#"E(table.concat, {[0]="", 1}, 5)"#, "err:bad argument #2 to (anonymous) (string expected, got number)"),
        (r#"E(table.concat, {1, 2}, ", ", 1, 2)"#, "1, 2"),
        (r#"table.concat({1, 2, 3}, nil, 2)"#, "23"),
        (r#"E(table.insert, {})"#, "err:wrong number of arguments"),
        (r#"E(table.insert, {}, "a", "b")"#, "err:bad argument #2 to (anonymous) (number expected, got string)"),
        (r#"E(table.insert, nil, 1)"#, "err:bad argument #1 to (anonymous) (table expected, got nil)"),
        (r#"E(table.remove, {}, "1")"#, "err:bad argument #2 to (anonymous) (number expected, got string)"),
        (r#"E(function() local t = setmetatable({}, {__len = function() return 5 end}) table.insert(t, "x") return t[1], #t end)"#, "x 5"),
        (r#"E(loadstring, "return 1", 5)"#, "err:bad argument #2 to (anonymous) (string expected, got number)"),
        (r#"E(table.sort, {3, 1, "x"})"#, "err:attempt to compare string with number"),
        (r#"E(table.sort, {3, nil, 1})"#, "err:attempt to compare nil with number"),
        (r#"E(table.sort, {3, 1}, 5)"#, "err:bad argument #2 to (anonymous) (function expected, got number)"),
        (r#"E(table.sort)"#, "err:bad argument #1 to (anonymous) (table expected, got nil)"),
    ]);
}

/// table.sort is Go's sort.Sort (pdqsort, Go 1.19/1.20): the order of ties and the result
/// of inconsistent comparators follow its exact steps.
#[test]
fn table_sort_order() {
    check(&[
        (r#"(function() local t, x = {}, 1 for i = 1, 12 do x = x * 16807 % 2147483647 t[i] = {k = x % 3, id = i} end table.sort(t, function(a, b) return a.k < b.k end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "7,11,1,2,5,10,3,4,6,8,9,12"),
        (r#"(function() local t, x = {}, 1 for i = 1, 12 do x = x * 16807 % 2147483647 t[i] = {k = x % 3, id = i} end table.sort(t, function(a, b) return true end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "12,11,10,9,8,7,6,5,4,3,2,1"),
        (r#"(function() local t, x = {}, 1 for i = 1, 12 do x = x * 16807 % 2147483647 t[i] = {k = x % 3, id = i} end table.sort(t, function(a, b) return a.k <= b.k end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "11,7,10,5,2,1,12,9,8,6,4,3"),
        (r#"(function() local t, x = {}, 1 for i = 1, 12 do x = x * 16807 % 2147483647 t[i] = {k = x % 3, id = i} end table.sort(t, function(a, b) return a.k > b.k end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "3,4,6,8,9,12,1,2,5,10,7,11"),
        (r#"(function() local t, x = {}, 2 for i = 1, 13 do x = x * 16807 % 2147483647 t[i] = {k = x % 3, id = i} end table.sort(t, function(a, b) return a.k < b.k end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "7,12,3,11,9,8,4,6,5,10,1,2,13"),
        (r#"(function() local t, x = {}, 2 for i = 1, 13 do x = x * 16807 % 2147483647 t[i] = {k = x % 3, id = i} end table.sort(t, function(a, b) return true end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "12,11,10,9,8,1,6,5,4,3,2,13,7"),
        (r#"(function() local t, x = {}, 2 for i = 1, 13 do x = x * 16807 % 2147483647 t[i] = {k = x % 3, id = i} end table.sort(t, function(a, b) return a.k <= b.k end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "9,8,7,3,12,11,6,5,4,10,13,2,1"),
        (r#"(function() local t, x = {}, 2 for i = 1, 13 do x = x * 16807 % 2147483647 t[i] = {k = x % 3, id = i} end table.sort(t, function(a, b) return a.k > b.k end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "1,2,13,10,5,6,4,7,8,9,11,12,3"),
        (r#"(function() local t, x = {}, 3 for i = 1, 20 do x = x * 16807 % 2147483647 t[i] = {k = x % 3, id = i} end table.sort(t, function(a, b) return a.k < b.k end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "7,15,14,20,18,6,2,1,8,10,9,17,13,3,11,16,12,5,19,4"),
        (r#"(function() local t, x = {}, 3 for i = 1, 20 do x = x * 16807 % 2147483647 t[i] = {k = x % 3, id = i} end table.sort(t, function(a, b) return true end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "2,7,5,20,13,8,10,9,12,16,15,1,3,14,6,4,19,18,17,11"),
        (r#"(function() local t, x = {}, 3 for i = 1, 20 do x = x * 16807 % 2147483647 t[i] = {k = x % 3, id = i} end table.sort(t, function(a, b) return a.k <= b.k end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "15,1,7,20,14,6,18,2,9,8,3,13,10,17,4,5,19,11,12,16"),
        (r#"(function() local t, x = {}, 3 for i = 1, 20 do x = x * 16807 % 2147483647 t[i] = {k = x % 3, id = i} end table.sort(t, function(a, b) return a.k > b.k end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "16,4,5,19,11,12,13,3,9,10,17,8,18,14,15,1,2,20,7,6"),
        (r#"(function() local t, x = {}, 4 for i = 1, 28 do x = x * 16807 % 2147483647 t[i] = {k = x % 3, id = i} end table.sort(t, function(a, b) return a.k < b.k end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "15,12,13,27,16,19,7,8,9,26,23,10,28,2,4,25,20,18,1,17,21,22,11,24,5,14,6,3"),
        (r#"(function() local t, x = {}, 4 for i = 1, 28 do x = x * 16807 % 2147483647 t[i] = {k = x % 3, id = i} end table.sort(t, function(a, b) return true end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "19,22,24,17,2,9,11,5,7,6,16,12,8,14,28,20,23,13,10,21,3,1,18,4,27,26,25,15"),
        (r#"(function() local t, x = {}, 4 for i = 1, 28 do x = x * 16807 % 2147483647 t[i] = {k = x % 3, id = i} end table.sort(t, function(a, b) return a.k <= b.k end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "8,7,12,13,16,19,27,9,15,28,10,4,1,23,25,26,18,20,2,17,6,5,24,14,11,21,3,22"),
        (r#"(function() local t, x = {}, 4 for i = 1, 28 do x = x * 16807 % 2147483647 t[i] = {k = x % 3, id = i} end table.sort(t, function(a, b) return a.k > b.k end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "24,21,17,22,5,6,14,11,3,2,25,1,20,28,23,4,26,18,10,8,19,16,15,13,12,9,27,7"),
        (r#"(function() local t, x = {}, 5 for i = 1, 28 do x = x * 16807 % 2147483647 t[i] = {k = x % 3, id = i} end table.sort(t, function(a, b) return a.k < b.k end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "15,28,27,24,5,6,7,8,19,10,3,26,25,14,23,21,9,18,17,20,16,22,1,4,13,12,11,2"),
        (r#"(function() local t, x = {}, 5 for i = 1, 28 do x = x * 16807 % 2147483647 t[i] = {k = x % 3, id = i} end table.sort(t, function(a, b) return true end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "19,22,24,17,2,9,11,5,7,6,16,12,8,14,28,20,23,13,10,21,3,1,18,4,27,26,25,15"),
        (r#"(function() local t, x = {}, 5 for i = 1, 28 do x = x * 16807 % 2147483647 t[i] = {k = x % 3, id = i} end table.sort(t, function(a, b) return a.k <= b.k end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "27,5,7,24,28,15,6,14,19,3,25,26,9,21,10,23,8,2,4,1,11,12,13,22,16,20,17,18"),
        (r#"(function() local t, x = {}, 5 for i = 1, 28 do x = x * 16807 % 2147483647 t[i] = {k = x % 3, id = i} end table.sort(t, function(a, b) return a.k > b.k end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "12,2,22,4,20,18,17,1,16,13,11,8,25,14,26,9,10,23,19,3,21,5,6,24,7,15,27,28"),
        (r#"(function() local t, x = {}, 6 for i = 1, 40 do x = x * 16807 % 2147483647 t[i] = {k = x % 2, id = i} end table.sort(t, function(a, b) return a.k < b.k end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "21,35,3,4,40,38,19,8,9,20,11,34,13,14,15,32,17,1,7,2,18,22,30,29,27,31,12,28,33,23,26,25,24,16,10,36,37,6,39,5"),
        (r#"(function() local t, x = {}, 6 for i = 1, 40 do x = x * 16807 % 2147483647 t[i] = {k = x % 2, id = i} end table.sort(t, function(a, b) return true end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "6,23,11,38,27,9,25,39,13,17,2,29,37,5,4,1,10,22,16,24,12,26,18,28,14,32,30,40,19,3,7,15,31,20,8,35,36,33,34,21"),
        (r#"(function() local t, x = {}, 6 for i = 1, 40 do x = x * 16807 % 2147483647 t[i] = {k = x % 2, id = i} end table.sort(t, function(a, b) return a.k <= b.k end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "9,7,40,14,27,29,2,19,3,38,32,34,11,20,8,35,15,18,17,4,30,22,1,13,21,37,36,10,12,33,39,31,23,24,28,25,6,5,26,16"),
        (r#"(function() local t, x = {}, 6 for i = 1, 40 do x = x * 16807 % 2147483647 t[i] = {k = x % 2, id = i} end table.sort(t, function(a, b) return a.k > b.k end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "16,39,37,36,5,6,33,31,28,10,26,12,25,24,23,11,29,18,19,20,21,22,15,14,13,1,27,9,17,30,8,32,7,34,35,4,3,38,2,40"),
        (r#"(function() local t, x = {}, 7 for i = 1, 50 do x = x * 16807 % 2147483647 t[i] = {k = x % 3, id = i} end table.sort(t, function(a, b) return a.k < b.k end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "15,35,3,32,30,29,7,39,27,37,26,41,22,17,10,11,48,18,45,20,21,13,44,1,40,47,9,8,6,5,31,50,33,34,2,36,12,38,28,25,24,42,43,23,19,46,16,14,49,4"),
        (r#"(function() local t, x = {}, 7 for i = 1, 50 do x = x * 16807 % 2147483647 t[i] = {k = x % 3, id = i} end table.sort(t, function(a, b) return true end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "7,32,31,11,14,27,50,41,47,33,13,17,30,9,37,48,25,43,22,29,34,35,46,18,24,26,16,1,12,38,10,28,8,21,6,44,23,36,49,19,39,45,15,3,2,5,4,40,42,20"),
        (r#"(function() local t, x = {}, 7 for i = 1, 50 do x = x * 16807 % 2147483647 t[i] = {k = x % 3, id = i} end table.sort(t, function(a, b) return a.k <= b.k end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "22,39,15,27,37,26,29,30,32,3,35,41,7,17,2,21,50,47,9,34,44,40,36,20,5,8,48,10,6,45,33,1,31,18,11,13,24,12,46,14,16,28,42,19,23,4,38,49,43,25"),
        (r#"(function() local t, x = {}, 7 for i = 1, 50 do x = x * 16807 % 2147483647 t[i] = {k = x % 3, id = i} end table.sort(t, function(a, b) return a.k > b.k end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "25,38,49,4,46,43,42,28,16,24,23,12,19,14,1,18,31,50,13,20,21,33,11,10,48,5,9,8,47,45,44,6,40,2,34,36,32,15,39,27,41,37,35,7,29,26,30,3,22,17"),
        (r#"(function() local t, x = {}, 8 for i = 1, 64 do x = x * 16807 % 2147483647 t[i] = {k = x % 5, id = i} end table.sort(t, function(a, b) return a.k < b.k end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "30,2,62,55,50,46,45,38,36,35,34,26,59,14,15,16,17,57,51,20,44,1,32,5,42,24,27,3,29,61,31,18,33,22,53,12,37,7,10,49,64,39,56,21,4,54,25,52,6,43,19,48,47,40,8,9,23,58,13,60,11,28,63,41"),
        (r#"(function() local t, x = {}, 8 for i = 1, 64 do x = x * 16807 % 2147483647 t[i] = {k = x % 5, id = i} end table.sort(t, function(a, b) return true end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "38,46,22,34,4,18,42,10,59,24,32,64,16,36,8,40,20,44,57,48,26,52,12,30,13,31,62,15,27,7,35,17,37,3,39,19,41,50,43,21,45,63,47,61,49,11,51,25,23,5,33,60,9,6,14,29,53,55,54,58,2,56,1,28"),
        (r#"(function() local t, x = {}, 8 for i = 1, 64 do x = x * 16807 % 2147483647 t[i] = {k = x % 5, id = i} end table.sort(t, function(a, b) return a.k <= b.k end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "46,38,50,55,36,35,62,45,30,2,44,20,34,59,17,26,15,14,57,51,1,16,32,18,61,33,42,31,37,29,53,27,3,7,5,12,22,24,25,52,10,49,64,21,56,4,39,54,60,13,58,40,41,43,23,28,9,47,8,19,63,48,6,11"),
        (r#"(function() local t, x = {}, 8 for i = 1, 64 do x = x * 16807 % 2147483647 t[i] = {k = x % 5, id = i} end table.sort(t, function(a, b) return a.k > b.k end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "58,41,40,43,47,6,48,8,9,28,11,23,13,63,19,60,21,10,64,56,39,4,49,52,25,54,53,12,29,18,31,24,33,27,7,5,37,22,42,3,61,16,20,44,14,15,1,59,34,17,51,32,57,26,35,55,30,50,38,36,46,62,45,2"),
        (r#"(function() local t, x = {}, 9 for i = 1, 100 do x = x * 16807 % 2147483647 t[i] = {k = x % 3, id = i} end table.sort(t, function(a, b) return a.k < b.k end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "21,8,80,72,97,78,7,22,9,70,11,93,43,14,15,79,17,18,19,20,68,100,3,83,1,60,27,84,29,30,55,32,87,34,35,51,50,38,88,40,46,44,36,42,45,41,47,39,49,37,77,33,53,54,31,86,28,58,59,89,61,24,23,64,65,91,67,92,69,10,95,99,73,74,25,76,75,71,66,63,81,82,62,57,85,56,52,48,26,90,16,13,12,94,6,96,5,98,4,2"),
        (r#"(function() local t, x = {}, 9 for i = 1, 100 do x = x * 16807 % 2147483647 t[i] = {k = x % 3, id = i} end table.sort(t, function(a, b) return true end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "78,100,22,70,54,38,86,10,50,48,92,99,34,55,87,82,42,90,44,67,24,52,12,56,28,64,60,32,68,95,72,94,76,98,80,40,25,20,88,58,91,1,4,23,49,11,51,36,53,5,63,27,57,13,59,29,93,61,31,65,15,26,33,69,7,71,35,73,17,75,37,18,45,79,39,81,19,83,41,85,9,97,43,47,21,66,96,2,6,14,30,62,74,16,77,8,84,3,89,46"),
        (r#"(function() local t, x = {}, 9 for i = 1, 100 do x = x * 16807 % 2147483647 t[i] = {k = x % 3, id = i} end table.sort(t, function(a, b) return a.k <= b.k end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "93,83,11,100,27,9,88,22,80,17,40,29,20,46,97,44,78,1,50,84,79,87,18,55,14,32,30,72,70,38,3,43,15,51,8,35,7,60,34,68,21,19,61,65,73,59,77,31,89,47,10,37,53,45,33,58,42,91,86,64,54,28,95,92,36,41,69,49,67,39,24,99,23,74,12,52,63,81,2,94,25,85,48,62,90,71,6,98,57,82,56,16,13,75,4,96,5,66,26,76"),
        (r#"(function() local t, x = {}, 9 for i = 1, 100 do x = x * 16807 % 2147483647 t[i] = {k = x % 3, id = i} end table.sort(t, function(a, b) return a.k > b.k end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "76,48,98,4,5,6,96,94,90,85,82,12,13,81,75,16,66,63,62,57,56,52,2,71,25,26,61,65,99,95,31,92,33,91,89,36,37,86,39,10,41,42,77,74,45,73,47,49,24,69,23,67,53,54,28,64,59,58,79,17,14,19,18,21,55,80,22,68,8,70,20,72,46,44,15,1,43,78,27,60,51,11,83,84,40,38,87,88,35,9,34,32,93,50,30,7,97,3,29,100"),
        (r#"(function() local t, x = {}, 10 for i = 1, 130 do x = x * 16807 % 2147483647 t[i] = {k = x % 10, id = i} end table.sort(t, function(a, b) return a.k < b.k end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "20,60,68,70,46,78,7,125,83,123,121,34,1,14,15,27,108,18,79,44,51,112,3,43,126,80,38,87,35,30,119,32,88,66,50,110,57,76,52,100,21,102,29,97,4,124,117,105,120,104,56,82,2,129,96,25,81,58,114,116,85,107,13,90,48,98,62,16,12,63,71,26,23,101,75,94,5,113,106,109,95,49,41,73,118,103,67,33,122,6,91,128,99,53,54,111,42,31,59,61,89,127,10,24,65,69,39,74,77,84,28,17,8,9,115,45,22,86,47,37,11,55,72,40,19,64,36,92,93,130"),
        (r#"(function() local t, x = {}, 10 for i = 1, 130 do x = x * 16807 % 2147483647 t[i] = {k = x % 10, id = i} end table.sort(t, function(a, b) return true end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "124,27,75,26,11,83,35,99,19,67,55,3,59,47,103,39,79,31,111,23,18,15,95,7,121,57,126,89,122,105,49,62,85,113,41,81,37,61,33,77,65,117,25,73,127,97,17,69,13,109,9,128,8,87,1,92,58,4,90,56,106,54,88,129,114,50,86,48,104,46,84,44,118,42,82,40,102,38,80,36,112,34,78,123,100,30,76,28,120,32,74,24,98,22,29,20,110,43,45,16,96,14,68,12,116,10,66,125,94,6,64,63,108,2,130,5,119,115,107,91,93,51,72,52,71,53,70,21,101,60"),
        (r#"(function() local t, x = {}, 10 for i = 1, 130 do x = x * 16807 % 2147483647 t[i] = {k = x % 10, id = i} end table.sort(t, function(a, b) return a.k <= b.k end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "60,121,7,83,18,34,20,78,68,14,125,108,46,123,15,70,27,1,30,119,43,79,80,51,88,112,35,87,126,3,38,44,32,110,76,21,50,124,97,29,52,100,102,4,66,57,117,105,129,120,104,82,56,2,85,48,96,90,13,107,25,114,116,81,58,98,16,62,63,75,12,23,113,71,94,109,101,26,95,106,5,41,128,33,6,67,103,73,53,54,118,49,91,99,122,24,69,31,74,77,42,61,59,127,10,89,65,111,39,47,86,17,9,115,22,8,37,84,28,45,130,64,72,55,36,40,19,93,92,11"),
        (r#"(function() local t, x = {}, 10 for i = 1, 130 do x = x * 16807 % 2147483647 t[i] = {k = x % 10, id = i} end table.sort(t, function(a, b) return a.k > b.k end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "11,130,64,92,93,40,19,36,55,72,17,22,9,115,37,28,8,86,45,47,84,24,59,10,111,89,42,77,69,39,31,74,65,61,127,33,122,91,128,99,41,67,6,103,118,54,53,73,49,75,113,16,109,106,23,12,71,94,26,101,5,62,63,95,98,48,90,96,58,85,13,81,25,116,114,107,120,105,104,117,56,82,129,2,29,66,4,124,57,52,50,110,76,21,102,100,97,119,38,3,87,30,80,79,126,32,88,44,43,35,51,112,14,7,1,18,46,20,108,70,121,15,123,34,125,78,27,83,68,60"),
        (r#"(function() local t, x = {}, 11 for i = 1, 300 do x = x * 16807 % 2147483647 t[i] = {k = x % 4, id = i} end table.sort(t, function(a, b) return a.k < b.k end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "85,2,300,298,292,291,7,289,9,286,11,12,283,282,278,277,17,273,19,20,267,264,263,261,258,26,257,255,29,30,253,251,246,240,228,225,224,217,216,209,208,206,203,44,202,197,188,185,49,183,177,52,175,169,167,164,157,152,59,144,143,141,63,140,128,66,124,68,106,105,103,102,73,101,75,100,99,78,98,97,92,227,151,297,293,8,287,10,284,13,280,15,272,271,21,23,24,25,28,31,74,249,248,104,245,242,241,34,238,110,111,112,113,236,235,234,232,231,230,120,121,1,222,67,125,211,127,65,205,130,200,199,194,192,135,191,190,138,186,179,168,159,57,60,155,58,147,137,22,299,84,146,153,296,145,6,290,285,14,160,281,91,279,81,165,16,276,274,93,170,268,95,173,262,53,176,27,178,252,180,181,32,247,33,48,244,243,47,69,239,114,229,35,122,226,36,223,123,132,221,218,45,43,204,214,42,207,212,77,119,126,41,213,129,215,39,38,201,219,220,131,198,46,40,196,195,133,193,134,254,118,117,233,116,115,136,237,109,83,76,107,189,187,139,70,184,50,71,72,250,182,64,108,210,37,256,51,79,259,260,80,174,96,149,265,266,172,171,269,270,94,54,18,62,275,55,166,56,163,162,161,142,90,89,158,88,87,288,86,61,156,5,82,294,295,154,148,4,150,3"),
        (r#"(function() local t, x = {}, 11 for i = 1, 300 do x = x * 16807 % 2147483647 t[i] = {k = x % 4, id = i} end table.sort(t, function(a, b) return a.k <= b.k end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "185,2,253,261,59,177,258,78,100,278,209,63,289,144,102,263,124,49,9,251,29,99,17,97,283,240,206,225,216,169,217,175,52,298,44,85,224,197,257,26,255,143,164,183,101,291,246,30,73,140,98,188,202,12,203,264,105,66,106,208,20,152,277,75,273,128,228,286,11,167,282,300,141,103,7,92,292,68,157,19,267,186,199,34,192,280,57,28,238,15,284,13,271,245,190,211,121,249,125,232,23,272,168,65,159,205,1,112,242,194,60,191,58,138,231,120,248,31,236,25,8,179,21,24,104,130,67,155,135,127,222,10,113,234,241,111,287,230,297,227,235,74,293,200,147,110,151,47,114,16,281,93,35,247,22,178,160,180,176,33,262,274,252,214,243,145,268,170,207,153,32,27,43,42,221,181,14,123,165,122,45,48,132,53,290,244,279,36,276,69,204,137,95,91,6,285,218,239,229,146,81,212,296,226,299,223,173,84,142,260,71,163,195,118,96,148,126,4,270,40,18,288,77,295,89,119,201,184,70,266,198,187,158,37,256,56,166,80,3,250,139,86,294,62,254,108,54,72,259,215,46,55,39,83,265,87,129,219,269,64,109,82,51,115,79,275,61,171,196,134,117,136,107,162,150,5,210,149,189,156,94,154,182,233,90,88,220,213,116,172,131,193,41,237,174,76,38,161,133,50"),
        (r#"(function() local t, x = {}, 11 for i = 1, 300 do x = x * 16807 % 2147483647 t[i] = {k = x % 4, id = i} end table.sort(t, function(a, b) return a.k > b.k end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "77,116,3,4,5,156,158,295,294,150,288,149,148,161,162,142,163,18,275,139,270,166,269,136,266,265,154,134,260,259,256,133,131,254,171,129,37,38,39,40,41,172,126,174,215,46,119,118,250,50,51,117,115,54,55,56,182,184,187,237,61,62,233,64,109,108,107,189,193,70,71,72,220,219,195,76,196,198,80,79,201,82,83,210,96,86,87,88,89,90,94,213,285,296,95,176,212,84,207,93,81,45,27,218,69,221,223,226,229,239,243,244,181,114,53,299,247,48,47,180,178,91,252,122,204,43,173,42,36,35,33,132,32,262,170,268,137,22,274,165,276,16,279,14,145,146,160,281,123,290,214,6,153,151,222,297,8,1,159,147,293,10,287,284,13,138,280,168,15,135,130,272,127,125,271,21,23,121,179,120,113,112,24,111,25,186,110,28,31,190,191,192,34,194,104,249,248,245,199,200,57,58,242,241,205,238,60,236,235,234,211,232,231,230,65,227,155,67,74,66,261,73,75,224,225,217,216,228,78,85,92,97,63,98,209,208,99,206,59,240,100,203,202,101,102,246,52,197,103,49,251,44,253,105,255,106,257,258,30,29,68,188,263,264,26,185,267,183,177,124,175,128,273,20,19,17,277,278,169,167,140,282,283,164,12,286,141,11,289,143,291,292,144,9,157,7,152,298,2,300"),
        (r#"(function() local t, x = {}, 12 for i = 1, 600 do x = x * 16807 % 2147483647 t[i] = {k = x % 1000, id = i} end table.sort(t, function(a, b) return a.k < b.k end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "401,372,200,66,97,321,412,558,379,289,207,316,309,568,559,543,598,367,243,225,569,540,549,181,147,226,144,311,453,471,448,580,455,134,350,50,479,408,3,117,113,600,152,489,382,335,515,526,363,171,440,128,295,426,404,259,149,13,87,32,115,212,290,445,12,429,137,90,385,116,337,357,345,62,368,467,394,576,577,534,423,553,331,175,123,251,310,180,101,355,274,435,419,495,100,230,545,307,365,156,266,484,188,324,373,389,430,16,194,595,264,234,370,163,196,210,473,161,272,72,364,51,111,288,524,61,315,70,53,501,33,29,34,80,470,505,47,174,44,552,494,384,37,442,518,481,462,276,582,362,242,56,427,127,536,233,68,244,375,511,25,232,475,439,57,535,547,172,257,422,178,326,441,136,40,148,528,145,169,79,5,443,500,436,513,300,466,45,193,89,120,563,360,478,319,107,409,521,587,456,41,224,227,26,99,437,512,469,472,96,566,265,186,396,287,159,488,376,298,575,133,477,2,140,597,20,214,452,240,64,218,236,510,184,283,267,216,397,8,202,279,356,182,424,239,344,229,209,314,555,303,567,197,54,49,10,339,399,503,21,457,556,496,167,506,465,334,106,281,323,340,55,574,151,78,358,554,185,388,431,544,509,126,119,183,250,486,369,284,476,249,403,585,301,433,263,480,493,93,121,351,215,589,262,308,349,523,82,168,299,366,519,329,541,522,19,176,153,191,499,118,95,65,449,490,75,220,371,14,155,124,103,592,208,293,561,338,537,444,571,139,387,353,7,102,482,425,76,222,154,551,92,189,581,43,491,27,428,35,420,83,221,141,81,381,565,190,391,98,464,343,341,342,416,237,158,275,400,532,112,258,560,517,52,130,198,450,406,110,135,69,374,599,48,278,463,114,204,296,317,594,77,104,579,109,248,179,327,36,252,166,415,177,483,4,213,398,514,432,88,195,73,1,291,74,271,160,241,11,31,71,377,260,203,94,584,223,63,533,173,312,557,246,586,192,85,410,346,125,122,18,17,286,451,201,211,285,507,516,530,504,417,380,108,347,24,390,447,386,187,129,67,550,254,354,228,570,306,411,305,485,393,313,502,418,28,474,86,273,336,170,330,157,383,235,268,39,131,596,205,328,84,60,150,162,525,405,206,352,434,15,591,30,269,132,261,22,527,548,294,142,165,280,562,461,304,302,413,359,395,255,217,253,487,58,318,332,59,146,508,459,138,320,9,578,292,588,199,468,392,520,378,492,421,529,497,361,333,46,531,282,538,238,164,42,270,256,277,446,438,219,573,322,91,458,38,245,6,407,143,498,402,539,23,297,546,590,583,564,460,572,414,325,542,231,247,348,105,593,454"),
        (r#"(function() local t, x = {}, 12 for i = 1, 600 do x = x * 16807 % 2147483647 t[i] = {k = x % 1000, id = i} end table.sort(t, function(a, b) return a.k <= b.k end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "401,372,200,66,97,412,321,558,379,289,207,316,309,568,559,543,367,598,243,569,225,540,549,181,147,226,311,144,453,471,448,580,455,134,350,50,479,408,3,117,113,600,152,382,489,335,515,363,526,440,171,128,295,426,404,259,149,13,87,32,115,290,212,445,12,429,137,90,116,385,337,345,357,62,467,368,394,576,577,534,423,553,331,251,175,123,180,310,101,274,355,435,419,495,100,230,545,307,365,266,156,484,188,324,373,389,16,430,194,595,264,234,370,163,196,210,473,161,272,72,364,51,111,288,524,61,315,70,53,33,501,34,29,80,470,505,47,174,44,552,494,384,37,518,442,481,462,276,582,362,242,56,427,536,127,233,511,244,68,375,25,232,475,439,57,535,547,172,257,178,422,441,326,40,136,148,528,145,169,79,5,443,500,436,513,300,466,193,45,89,563,120,360,478,319,107,409,521,587,41,456,227,224,26,99,437,512,469,566,472,96,265,396,186,287,159,488,376,298,575,133,477,2,140,597,214,20,452,240,64,218,184,510,236,267,283,216,8,397,202,279,182,356,424,239,344,229,209,314,555,303,567,197,49,54,10,339,399,503,21,457,496,556,506,167,465,334,106,281,323,340,55,574,151,78,358,554,185,388,431,119,126,509,544,183,250,486,369,284,476,403,249,585,433,301,263,480,493,93,121,589,351,215,262,349,308,168,82,523,299,366,519,541,329,522,176,19,191,153,499,118,65,95,449,490,75,220,371,14,155,124,103,592,208,293,338,561,537,444,571,139,387,353,7,102,482,76,425,222,551,154,92,189,581,43,27,491,428,35,420,83,221,141,81,381,565,190,391,98,464,343,342,341,416,237,158,275,400,532,258,112,560,517,52,450,198,130,406,110,135,69,374,599,48,278,463,114,204,317,296,594,77,104,579,109,248,179,327,36,252,166,415,177,483,4,213,398,514,432,88,195,73,1,291,74,271,160,241,11,71,31,377,260,203,584,94,223,63,533,173,312,557,246,586,192,85,410,346,125,122,18,17,286,451,201,211,285,507,516,530,504,417,380,108,347,24,390,447,386,187,129,67,550,254,354,228,570,306,305,411,485,393,313,502,418,28,474,86,273,336,170,330,157,383,235,268,39,205,596,131,328,84,60,525,150,162,405,206,352,434,15,591,269,30,132,261,22,527,548,294,142,165,280,562,461,304,302,413,359,255,395,217,253,487,58,318,332,59,146,508,459,138,320,9,292,578,588,199,468,392,520,378,492,421,529,497,361,333,46,531,282,238,538,164,42,270,256,277,446,438,219,573,91,322,458,38,245,6,407,498,143,402,539,23,297,590,546,583,564,460,572,414,542,325,231,247,348,105,593,454"),
        (r#"(function() local t, x = {}, 12 for i = 1, 600 do x = x * 16807 % 2147483647 t[i] = {k = x % 1000, id = i} end table.sort(t, function(a, b) return a.k > b.k end) local o = {} for i, v in ipairs(t) do o[i] = v.id end return table.concat(o, ',') end)()"#, "593,454,105,348,247,231,414,325,542,572,460,564,583,590,546,297,23,539,402,143,498,407,6,245,38,458,91,322,573,438,219,446,277,256,270,42,164,538,238,282,531,46,333,361,497,529,492,421,378,520,392,468,199,588,578,292,9,320,138,459,508,146,59,332,318,58,487,217,253,255,395,413,359,302,304,461,562,280,165,142,294,548,527,261,22,132,269,15,591,30,434,352,206,405,525,150,162,60,84,328,131,205,596,39,268,235,383,330,157,170,273,336,86,474,28,418,502,313,393,485,305,411,306,570,228,354,254,550,67,129,187,386,447,390,24,347,108,380,417,504,530,516,507,211,285,201,451,286,18,17,122,125,346,410,192,85,586,246,557,312,173,533,63,223,94,584,203,260,377,31,71,11,241,160,271,74,291,1,73,195,88,432,514,398,213,4,483,177,415,166,252,327,36,179,248,109,579,104,77,594,317,296,204,114,463,278,48,599,374,69,135,110,406,198,130,450,52,517,560,112,258,400,532,275,158,237,416,342,341,343,464,98,391,190,565,381,81,141,221,83,420,35,428,27,491,43,581,189,92,551,154,222,425,76,482,102,353,7,387,139,571,444,338,537,561,293,208,592,103,124,155,14,220,371,75,490,449,95,65,118,499,191,153,176,19,541,329,522,519,366,299,168,82,523,308,349,262,351,589,215,121,93,493,480,263,301,433,585,403,249,476,284,369,486,250,183,126,119,544,509,431,388,185,554,358,78,151,55,574,340,323,281,106,334,465,506,167,556,496,457,21,503,399,339,10,49,197,54,567,303,314,555,209,229,344,239,424,356,182,279,202,397,8,216,267,283,510,236,184,218,64,240,452,20,214,597,140,2,477,133,575,298,376,159,488,287,186,396,265,472,566,96,469,512,437,99,26,227,224,456,41,587,521,409,319,107,478,360,563,120,89,45,193,466,300,513,436,500,443,5,79,169,145,528,148,136,40,441,326,422,178,257,172,547,535,57,439,475,25,232,68,244,375,511,233,127,536,427,56,242,362,582,276,462,481,442,518,37,384,494,552,174,44,47,505,470,80,29,34,501,33,53,70,315,61,524,288,111,51,364,72,272,161,210,473,196,163,370,234,264,194,595,430,16,373,389,324,188,484,266,156,365,307,545,230,100,495,419,435,274,355,101,310,180,175,123,251,331,553,423,534,577,576,394,467,368,62,345,357,337,116,385,90,137,429,12,445,212,290,115,32,87,13,149,259,404,426,295,128,171,440,526,363,515,335,489,382,152,600,113,117,3,479,408,350,50,134,455,580,448,471,453,144,311,226,147,181,549,540,569,225,243,598,367,543,559,568,309,316,207,289,379,412,321,558,97,66,372,200,401"),
        (r#"(function() local t = {} for i = 1, 200 do t[i] = {k = i % 7 == 0 and 0 or i, id = i} end table.sort(t, function(a, b) return a.k < b.k end) local o = {} for i = 1, 20 do o[i] = t[i].id end return table.concat(o, ',') end)()"#, "168,140,98,28,35,175,105,91,42,56,119,126,84,133,112,49,147,63,154,77"),
        (r#"(function() local t = {} for i = 1, 200 do t[i] = {k = 200 - i + (i % 3), id = i} end table.sort(t, function(a, b) return a.k < b.k end) local o = {} for i = 1, 30 do o[i] = t[i].id end return table.concat(o, ',') end)()"#, "200,199,198,197,196,195,194,193,192,191,190,189,188,187,186,185,184,183,182,181,180,179,178,177,176,175,174,173,172,171"),
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
