//! Tests of the VM: the sandbox against an mlua state, limits, gopher-lua's number
//! formatting and arithmetic, table length and iteration order, recursion limits.

use super::*;
use mlua::{FromLuaMulti, Value};

fn state() -> Lua {
    new_state(&Limits::default()).expect("new state")
}

/// Runs `source` through exec_chunk in a fresh state and converts its values.
fn eval<T: FromLuaMulti>(source: &str) -> T {
    let lua = state();
    let values = exec_chunk(&lua, source.as_bytes()).unwrap_or_else(|e| panic!("{source}: {e}"));
    T::from_lua_multi(values, &lua).expect("convert result")
}

/// The error of `source` in a [`Sandbox`] (checked to have the same kind and line in a
/// [`new_state`] state), both with the full environment.
fn run_err(limits: &Limits, source: &str) -> ScriptError {
    let lua = new_state(limits).expect("new state");
    crate::stdlib::install(&lua).unwrap();
    crate::json::install_module(&lua).unwrap();
    let from_mlua = match exec_chunk(&lua, source.as_bytes()) {
        Ok(_) => panic!("{source}: expected an error"),
        Err(e) => e,
    };
    let from_sandbox = match sandbox_eval(limits, source) {
        Ok(v) => panic!("{source}: expected an error in the sandbox, got {v}"),
        Err(e) => e,
    };
    // (mlua appends a traceback, where a message without position finds a line.)
    let line = from_sandbox.line.or(from_mlua.line);
    // The sandbox's arena locates a memory error (the line whose allocation it refused);
    // mlua's allocator cannot, so there only the sandbox may have a line.
    let mlua_line = match from_mlua.line {
        None if from_sandbox.kind == ErrorKind::Memory => from_sandbox.line,
        line => line,
    };
    assert_eq!(
        (from_sandbox.kind, line),
        (from_mlua.kind, mlua_line),
        "{source}: {from_sandbox:?} vs {from_mlua:?}"
    );
    from_sandbox
}

/// Runs `source` in a [`Sandbox`] with the full environment; the last returned value as
/// text (strings and numbers as `tostring` makes them).
fn sandbox_eval(limits: &Limits, source: &str) -> Result<String, ScriptError> {
    let bytecode = compile(source.as_bytes())?;
    let sandbox = Sandbox::new(limits).expect("sandbox");
    sandbox
        .protected(|l| unsafe {
            crate::stdlib::install_raw(l);
            crate::json::install_module_raw(l, crate::json::KeyOrder::Sorted);
        })
        .expect("environment");
    sandbox.load(&bytecode)?;
    sandbox.start_collector();
    sandbox.run(|returned| {
        let (l, idx) = returned?;
        // SAFETY: the returned value in the live state.
        Ok(unsafe { error_text(l, idx) })
    })
}

/// `source`'s result in a `new_state` state with the full environment, as text.
fn mlua_eval(source: &str) -> Result<String, ScriptError> {
    let lua = state();
    crate::stdlib::install(&lua).unwrap();
    crate::json::install_module(&lua).unwrap();
    let values = exec_chunk(&lua, source.as_bytes())?;
    let last = values.into_iter().last().unwrap_or(Value::Nil);
    Ok(match last {
        Value::String(s) => s.to_string_lossy(),
        Value::Nil => "nil".into(),
        other => lua
            .globals()
            .get::<mlua::Function>("tostring")
            .unwrap()
            .call::<String>(other)
            .unwrap(),
    })
}

#[test]
fn loaded_bytecode_keeps_constants_and_debug_names() {
    // Repeated constants across nested functions, numbers, booleans, and the keys that
    // error messages quote: the same results as a parsed chunk.
    let source = r#"
        local label = "spec"
        local function name(t) return label .. "." .. t.spec .. tostring(1.5) .. tostring(true) end
        local missing = nil
        local ok, err = pcall(function() return missing.spec end)
        local ok2, err2 = pcall(function() local inner = nil; return inner.label end)
        return name({spec = "spec"}) .. "|" .. err .. "|" .. err2
    "#;
    let expected = mlua_eval(source).unwrap();
    assert!(
        expected.contains("<string>:5: attempt to index a non-table object(nil) with key 'spec'"),
        "{expected}"
    );
    assert!(expected.contains("with key 'label'"), "{expected}");
    assert_eq!(sandbox_eval(&Limits::default(), source).unwrap(), expected);
}

#[test]
fn sandbox_has_the_environment_of_an_mlua_state() {
    let probe = "local out = {} \
        local function keys(name, t) local ks = {} \
          for k in pairs(t) do ks[#ks + 1] = tostring(k) end \
          out[#out + 1] = name .. ':' .. table.concat(ks, ',') end \
        keys('_G', _G) keys('string', string) keys('table', table) keys('math', math) \
        keys('json', json) \
        out[#out + 1] = tostring(getfenv(print) == _G) .. tostring(getfenv(1) == _G) \
          .. tostring(require('string') == string) .. tostring(getmetatable('').__index == string) \
          .. tostring(_VERSION) .. tostring(coroutine) .. tostring(io) \
        return table.concat(out, ';')";
    let from_sandbox = sandbox_eval(&Limits::default(), probe).unwrap();
    assert_eq!(from_sandbox, mlua_eval(probe).unwrap());
    assert!(from_sandbox.starts_with("_G:_G,assert,"), "{from_sandbox}");
    assert!(
        from_sandbox.ends_with("truetruetruetrueLua 5.1nilnil"),
        "{from_sandbox}"
    );
}

#[test]
fn sandbox_limits_calls_and_slots_as_mlua_states_do() {
    let simple = "local function f(n) if n == 0 then return 0 end return 1 + f(n - 1) end\n";
    let many_locals = "local function f(n)\n\
         local a, b, c, d, e, f1, g, h, i, j, k, l, m, o, p, q, r, s, t, u, v, w, x, y, z = \
         1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25\n\
         if n == 0 then return 0 end\n\
         return 1 + f(n - 1) + a\n\
         end\n";
    let with_json = "local function f(n) if n == 0 then return #json.encode({1}) end \
         return 1 + f(n - 1) end\n";
    for (f, depths) in [
        (simple, 250..258),
        (many_locals, 140..260),
        (with_json, 250..258),
    ] {
        for depth in depths {
            let source = format!("{f}local v = f({depth}) return v");
            let sandbox = sandbox_eval(&Limits::default(), &source);
            let mlua = mlua_eval(&source);
            assert_eq!(
                sandbox.as_ref().map_err(|e| (e.kind, e.line)),
                mlua.as_ref().map_err(|e| (e.kind, e.line)),
                "{source}"
            );
        }
    }
}

fn short_timeout() -> Limits {
    Limits {
        timeout: Duration::from_millis(50),
        ..Limits::default()
    }
}

// ---- Part B: the state, budgets and error classification ----

#[test]
fn opens_only_math_base_table_string() {
    let (math, string, table, io, os, package, debug): (bool, bool, bool, bool, bool, bool, bool) =
        eval(
            "return math ~= nil, string ~= nil, table ~= nil, io ~= nil, os ~= nil, \
             package ~= nil, debug ~= nil",
        );
    assert!(math && string && table);
    assert!(!io && !os && !package && !debug);
}

#[test]
fn returns_all_values() {
    let (a, b, c): (i64, String, Value) = eval("return 1, 'x', nil");
    assert_eq!((a, b.as_str()), (1, "x"));
    assert!(c.is_nil());
}

#[test]
fn syntax_error_has_kind_and_line() {
    let e = run_err(&Limits::default(), "local a = 1\nlocal b = = 2\n");
    assert_eq!(e.kind, ErrorKind::Syntax);
    assert_eq!(e.line, Some(2));
    assert!(e.message.starts_with("<string>:2:"), "{}", e.message);
}

#[test]
fn binary_chunk_is_refused() {
    let e = run_err(&Limits::default(), "\x1bLua\x51\x00");
    assert_eq!(e.kind, ErrorKind::Syntax);
}

#[test]
fn runtime_error_has_line() {
    let e = run_err(&Limits::default(), "local t = {}\n\nreturn t.x.y\n");
    assert_eq!(e.kind, ErrorKind::Runtime);
    assert_eq!(e.line, Some(3));
    let e = run_err(&Limits::default(), "\nerror('boom')");
    assert_eq!((e.kind, e.line), (ErrorKind::Runtime, Some(2)));
    assert!(e.message.contains("boom"));
}

#[test]
fn script_line_takes_the_first_position() {
    assert_eq!(script_line("<string>:12: x <string>:3: y"), Some(12));
    assert_eq!(script_line("<string>: x <string>:7: y"), Some(7));
    assert_eq!(script_line("no position"), None);
}

#[test]
fn infinite_loop_times_out() {
    let started = Instant::now();
    let e = run_err(&short_timeout(), "local n = 0\nwhile true do n = n + 1 end");
    assert_eq!(e.kind, ErrorKind::Timeout);
    assert!(e.message.contains(DEADLINE_MESSAGE), "{}", e.message);
    assert_eq!(e.line, Some(2));
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn pcall_cannot_outlive_the_deadline() {
    let started = Instant::now();
    let e = run_err(
        &short_timeout(),
        "while true do pcall(function() while true do end end) end",
    );
    assert_eq!(e.kind, ErrorKind::Timeout);
    let e = run_err(
        &short_timeout(),
        "local ok = pcall(function() while true do end end)\nreturn {ok = ok}",
    );
    assert_eq!(e.kind, ErrorKind::Timeout);
    // xpcall too, whether its handler returns or (hit by the deadline) raises: the spent
    // budget wins over an abandoned run
    for handler in ["function(e) return e end", "function(e) error(e) end"] {
        let e = run_err(
            &short_timeout(),
            &format!(
                "local ok = xpcall(function() while true do end end, {handler})\n\
                 return {{ok = ok}}"
            ),
        );
        assert_eq!(e.kind, ErrorKind::Timeout, "{handler}");
    }
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn long_loop_finishes_well_inside_the_deadline() {
    let s: f64 = eval("local s = 0; for i = 1, 1e6 do s = s + i end; return s");
    assert_eq!(s, 500000500000.0);
}

#[test]
fn string_rep_bomb_hits_the_memory_cap() {
    let limits = Limits {
        memory_bytes: 8 * 1024 * 1024,
        ..Limits::default()
    };
    let e = run_err(&limits, "local s = string.rep('x', 1e9)\nreturn #s");
    assert_eq!(e.kind, ErrorKind::Memory);
    assert_eq!(e.line, Some(1), "the line of the refused allocation: {e:?}");
    let e = run_err(&limits, "local s = 'x'\nwhile true do s = s .. s end");
    assert_eq!(e.kind, ErrorKind::Memory);
    // caught by pcall, the run still ends on the memory cap
    let e = run_err(&limits, "local ok = pcall(string.rep, 'x', 1e9)\nreturn ok");
    assert_eq!(e.kind, ErrorKind::Memory);
    let lua = new_state(&limits).unwrap();
    assert_eq!(limit_hit(&lua), None);
    let _ = exec_chunk(&lua, b"local t = {} for i = 1, 1e8 do t[i] = i end");
    assert_eq!(limit_hit(&lua), Some(LimitHit::Memory));
}

#[test]
fn rust_panic_in_a_callback_becomes_an_error() {
    let lua = state();
    let boom = lua
        .create_function(|_, ()| -> mlua::Result<()> { panic!("boom") })
        .unwrap();
    lua.globals().set("boom", boom).unwrap();
    let e = exec_chunk(&lua, b"boom()").unwrap_err();
    assert_eq!(e.kind, ErrorKind::Runtime);
    assert!(e.message.contains("boom"), "{}", e.message);
}

// ---- Part A: the gopher-lua patches of lua51-sys ----

/// The strings a `return a, b, ...` source returns (collected in a table).
fn strings(source: &str) -> Vec<String> {
    let list = source.strip_prefix("return ").expect("return list");
    eval(&format!("return {{{list}}}"))
}

#[test]
fn tostring_formats_numbers_as_gopher() {
    // vectors num_tostring and num_tostring_nan_inf
    let got = strings(
        "return tostring(1/3), tostring(1e15), tostring(2^53 + 1), tostring(-0), \
         tostring(1e21), tostring(2^63), tostring(0.1), tostring(100), tostring(1e100), \
         tostring(123456789012), tostring(-2.5), tostring(1e16), tostring(2^31), \
         (function() return tostring(0/0), tostring(1/0), tostring(-1/0) end)()",
    );
    let want = [
        "0.3333333333333333",
        "1000000000000000",
        "9007199254740992",
        "0",
        "1e+21",
        "9.223372036854776e+18",
        "0.1",
        "100",
        "1e+100",
        "123456789012",
        "-2.5",
        "10000000000000000",
        "2147483648",
        // in a function of their own: the 0 constant is shared with -0 above, as in
        // gopher-lua, so 1/0 there would be -Inf
        "NaN",
        "+Inf",
        "-Inf",
    ];
    assert_eq!(got, want);
}

#[test]
fn tostring_uses_go_g_layout_for_non_integers() {
    // Go's shortest 'g': exponent form when the decimal exponent is < -4 or >= 6
    let got = strings(
        "return tostring(123456.5), tostring(1234567.5), tostring(0.0001), \
         tostring(0.00001), tostring(-2^63), tostring(5e-324), tostring(1.7976931348623157e308), \
         tostring(-1e300 * 10), tostring(2^-10), tostring(1e-7 * 3)",
    );
    let want = [
        "123456.5",
        "1.2345675e+06",
        "0.0001",
        "1e-05",
        "-9223372036854775808",
        "5e-324",
        "1.7976931348623157e+308",
        "-1e+301",
        "0.0009765625",
        "3e-07",
    ];
    assert_eq!(got, want);
}

#[test]
fn tostring_digits_are_shortest_round_trip() {
    // Cross-check the digits against Rust's own shortest formatting ({:e}).
    let lua = state();
    let tostring: mlua::Function = lua.globals().get("tostring").unwrap();
    let mut seed = 0x9e3779b97f4a7c15u64;
    for _ in 0..4000 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let x = f64::from_bits(seed);
        if !x.is_finite() || (x.fract() == 0.0 && x.abs() < 9.2e18) {
            continue;
        }
        let got: String = tostring.call(x).unwrap();
        let rust = format!("{x:e}"); // e.g. -1.2345e-7
        let (mantissa, exp) = rust.split_once('e').unwrap();
        let exp: i32 = exp.parse().unwrap();
        let digits: String = mantissa.chars().filter(|c| c.is_ascii_digit()).collect();
        let (got_mantissa, got_exp) = match got.split_once('e') {
            Some((m, e)) => (m.to_string(), e.parse::<i32>().unwrap()),
            None => (got.clone(), exp),
        };
        let got_digits: String = got_mantissa
            .chars()
            .filter(|c| c.is_ascii_digit())
            .collect::<String>();
        let got_digits = got_digits.trim_start_matches('0');
        assert_eq!(got_digits, digits, "{x:e} printed as {got}");
        assert_eq!(got_exp, exp, "{x:e} printed as {got}");
        assert_eq!(got.parse::<f64>().unwrap(), x, "{got} does not round-trip");
    }
}

#[test]
fn concat_and_string_functions_format_numbers_as_tostring() {
    // vectors num_concat and tbl_concat
    let got = strings(
        "return 1e15 .. '', 0.1 .. '', 2^53 .. '', (1/3) .. '', 10 .. 20, -0 .. '', \
         table.concat({1, 'a', 2.5}, '-'), table.concat({1, 1/3, 2^53}, ','), \
         string.upper(1e15), string.rep(1/3, 2, ',')",
    );
    let want = [
        "1000000000000000",
        "0.1",
        "9007199254740992",
        "0.3333333333333333",
        "1020",
        "0",
        "1-a-2.5",
        "1,0.3333333333333333,9007199254740992",
        "1000000000000000",
        "0.3333333333333333,0.3333333333333333",
    ];
    assert_eq!(&got[..9], &want[..9]);
    // string.rep has no separator argument in 5.1: the third argument is ignored
    assert_eq!(got[9], "0.33333333333333330.3333333333333333");
}

#[test]
fn strings_in_arithmetic_use_go_number_syntax() {
    // vector num_string_arith
    let got: Vec<f64> = eval(
        "return {'0x10' + 0, '010' + 0, '1e2' + 0, ' 5 ' * 2, '1_000' + 0, '0b11' + 0, \
         '2.5' * 2, '0o17' + 0, '08' + 0, '0x1p4' + 0, '-0x10' + 0, '\\t7\\n' + 0, \
         '9223372036854775808' + 0, '.5' + 0, '0x_1F' + 0}",
    );
    let want = [
        16.0,
        8.0,
        100.0,
        10.0,
        1000.0,
        3.0,
        5.0,
        15.0,
        8.0,
        16.0,
        -16.0,
        7.0,
        9.223_372_036_854_776e18,
        0.5,
        31.0,
    ];
    assert_eq!(got, want);
    let (inf, nan): (f64, f64) = eval("return 'inf' + 0, 'NaN' + 0");
    assert!(inf.is_infinite() && inf > 0.0 && nan.is_nan());
    for bad in [
        "'5\\r'", "'1__0'", "'_1'", "'1_'", "'0x'", "'0x1.8'", "'+nan'", "'1e400'", "'1e'",
        "'0b2'", "''", "' '", "'1 2'", "'0x1g'",
    ] {
        let e = run_err(&Limits::default(), &format!("return {bad} + 0"));
        assert_eq!(e.kind, ErrorKind::Runtime, "{bad}");
        assert!(
            e.message
                .ends_with("cannot perform add operation between string and number"),
            "{bad}: {}",
            e.message
        );
    }
}

#[test]
fn arithmetic_never_yields_negative_zero() {
    // vector num_negzero_arith; a literal -0 stays negative (in a function where no
    // 0 constant came first: equal constants are shared)
    let (n, m, inv, md, lit): (f64, f64, String, f64, f64) = eval(
        "local z = 0; local n = -z; local m = z * -1 \
         return n, m, tostring(1 / n), z % -0.5 - -0.5, (function() return -0 end)()",
    );
    assert!(n == 0.0 && n.is_sign_positive());
    assert!(m == 0.0 && m.is_sign_positive());
    assert_eq!(inv, "+Inf");
    assert!(md == 0.0 && md.is_sign_positive());
    assert!(lit == 0.0 && lit.is_sign_negative());
}

#[test]
fn modulo_follows_go_math_mod() {
    // vector num_modulo
    let (got, nan): (Vec<f64>, String) = eval(
        "return {-5 % 3, 5 % -3, 5.5 % 2, -5.5 % 2, math.fmod(-5, 3), math.fmod(5.5, 2), \
         5 % (1/0), -5 % (1/0)}, tostring(5 % 0)",
    );
    assert_eq!(got, [1.0, -1.0, 1.5, 0.5, -2.0, 1.5, 5.0, f64::INFINITY]);
    assert_eq!(nan, "NaN");
}

#[test]
fn length_is_the_highest_non_nil_integer_key() {
    // vectors tbl_length, tbl_insert_beyond_end, od_huge_int_key
    let got: Vec<i64> = eval(
        "local only5 = {}; only5[5] = 'x' \
         local holes = {1, 2, nil, 4} \
         local gap = {}; gap[1] = 1; gap[2] = 2; gap[4] = 4 \
         local hashOnly = {n = 1} \
         local cleared = {1, 2}; cleared[1] = nil; cleared[2] = nil \
         local t = {}; table.insert(t, 5, 'x'); local u = {1, 2}; table.insert(u, 10, 'y') \
         local big = {}; big[2^26] = 'big'; big[1] = 'a' \
         local shrink = {1, 2, 3, 4}; shrink[4] = nil; shrink[3] = nil \
         local regrow = {1, 2}; regrow[2] = nil; local before = #regrow; regrow[2] = 'b' \
         local appended = {}; for i = 1, 100 do appended[#appended + 1] = i end \
         return {#only5, #holes, #gap, #hashOnly, #cleared, #t, #u, #big, #shrink, before, \
                 #regrow, #appended}",
    );
    assert_eq!(got, [5, 4, 4, 0, 0, 5, 10, 1, 2, 1, 2, 100]);
}

#[test]
fn length_honours_len_metamethod_on_tables() {
    // vector tbl_len_metamethod
    let (n, raw, s): (i64, i64, i64) = eval(
        "local t = setmetatable({1, 2}, {__len = function() return 42 end}) \
         local plain = setmetatable({1, 2, 3}, {}) \
         return #t, #plain, #'abc'",
    );
    assert_eq!((n, raw, s), (42, 3, 3));
    let e = run_err(&Limits::default(), "return #5");
    assert_eq!(e.kind, ErrorKind::Runtime);
}

fn keys(body: &str) -> String {
    eval::<String>(&format!(
        "{body}; local ks = {{}}; for k in pairs(t) do ks[#ks + 1] = tostring(k) end; \
         return table.concat(ks, ',')"
    ))
}

#[test]
fn pairs_follows_gopher_order() {
    // order_dependent vectors
    assert_eq!(keys("local t = {}; t.c = 1; t.a = 2; t.b = 3"), "c,a,b");
    assert_eq!(keys("local t = {c = 1, a = 2, b = 3}"), "c,a,b");
    assert_eq!(
        keys("local t = {x = 1, 10, y = 2, 20}; t[3] = 30; t.z = 3"),
        "1,2,3,x,y,z"
    );
    assert_eq!(
        keys("local t = {}; t.a = 1; t.b = 2; t.c = 3; t.a = nil; t.d = 4; t.a = 5"),
        "a,b,c,d"
    );
    assert_eq!(
        keys(
            "local t = {}; t[1.5] = 'f'; t.s = 's'; t[true] = 'b'; t[-1] = 'n'; t[0] = 'z'; t[2] = 'two'"
        ),
        "2,1.5,s,true,-1,0"
    );
    assert_eq!(
        keys("local t = {}; t[2^26] = 'big'; t[1] = 'a'"),
        "1,67108864"
    );
    let first: String =
        eval("local t = {}; t.zeta = 1; t.alpha = 2; for k in pairs(t) do return k end");
    assert_eq!(first, "zeta");
    // integer keys in the hash part come in ascending order, before the others
    assert_eq!(
        keys("local t = {}; t.x = 1; t[10] = 1; t[3] = 1; t[7] = 1; t[1] = 1; t[2^26 - 1] = 1"),
        "1,3,7,10,67108863,x"
    );
    // nil stored under an absent key gives it no place
    assert_eq!(keys("local t = {}; t.a = nil; t.b = 1; t.a = 2"), "b,a");
    assert_eq!(
        keys("local t = {}; rawset(t, 'a', nil); t.b = 1; t.a = 2"),
        "b,a"
    );
}

#[test]
fn deleted_keys_keep_their_place_through_rehash_and_gc() {
    // A model of gopher-lua's order: first insertion wins, deletions keep the place.
    let lua = state();
    let mut order: Vec<String> = Vec::new();
    let mut live = std::collections::BTreeSet::new();
    let mut script = String::from("local t = {}\n");
    let mut seed = 12345u64;
    for step in 0..3000 {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let key = format!("k{}", (seed >> 33) % 400);
        if (seed >> 20).is_multiple_of(3) {
            script.push_str(&format!("t['{key}'] = nil\n"));
            live.remove(&key);
        } else {
            script.push_str(&format!("t['{key}'] = {step}\n"));
            if !order.contains(&key) {
                order.push(key.clone());
            }
            live.insert(key);
        }
        if step % 500 == 0 {
            script.push_str("collectgarbage()\n");
        }
    }
    let expected: Vec<&str> = order
        .iter()
        .filter(|k| live.contains(*k))
        .map(String::as_str)
        .collect();
    let in_lua = format!(
        "{script}collectgarbage()\nlocal ks = {{}}\nfor k in pairs(t) do ks[#ks + 1] = k end\n\
         return table.concat(ks, ',')"
    );
    let got: String = eval(&in_lua);
    assert_eq!(got, expected.join(","));
    // the same order from Rust (mlua iterates with lua_next)
    let values = exec_chunk(
        &lua,
        format!("{script}collectgarbage()\nreturn t").as_bytes(),
    )
    .unwrap();
    let t = mlua::Table::from_lua_multi(values, &lua).unwrap();
    let from_rust: Vec<String> = t.pairs::<String, Value>().map(|kv| kv.unwrap().0).collect();
    assert_eq!(from_rust, expected);
}

#[test]
fn clearing_during_traversal_visits_every_key() {
    let (visited, left): (i64, i64) = eval(
        "local t = {} for i = 1, 50 do t['k' .. i] = i; t[i] = i end \
         t[1000] = 1; t[-3] = 1 \
         local n = 0 for k in pairs(t) do t[k] = nil; n = n + 1 end \
         local left = 0 for _ in pairs(t) do left = left + 1 end \
         return n, left",
    );
    assert_eq!((visited, left), (102, 0));
}

#[test]
fn weak_tables_still_work() {
    let n: i64 = eval(
        "local w = setmetatable({}, {__mode = 'k'}) \
         for i = 1, 200 do w[{}] = i end \
         collectgarbage() collectgarbage() \
         local keep = {} w[keep] = 1 \
         for i = 1, 200 do w[{}] = i end \
         collectgarbage() \
         local n = 0 for k in pairs(w) do n = n + 1 end \
         return n",
    );
    assert_eq!(n, 1);
}

fn depth_result(source: &str) -> Result<f64, ScriptError> {
    let lua = state();
    exec_chunk(&lua, source.as_bytes()).map(|v| f64::from_lua_multi(v, &lua).unwrap())
}

#[test]
fn recursion_is_limited_like_gopher() {
    let f = "local function f(n) if n == 0 then return 0 end return 1 + f(n - 1) end\n";
    // lim_recursion_200; the chunk plus 255 calls of f make gopher-lua's 256 frames
    // (`local v = f(n)`: a `return f(n)` would be a tail call replacing the chunk's frame)
    assert_eq!(
        depth_result(&format!("{f}local v = f(200) return v")).unwrap(),
        200.0
    );
    assert_eq!(
        depth_result(&format!("{f}local v = f(254) return v")).unwrap(),
        254.0
    );
    let e = depth_result(&format!("{f}local v = f(255) return v")).unwrap_err();
    assert_eq!((e.kind, e.line), (ErrorKind::Runtime, Some(1)));
    assert!(e.message.contains("stack overflow"), "{}", e.message);
    // lim_recursion_300, lim_recursion_in_pcall, lim_tail_recursion
    let e = depth_result(&format!("{f}return {{spec = {{v = f(300)}}}}")).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Runtime);
    let ok: bool = eval(&format!("{f}return (pcall(f, 100000))"));
    assert!(!ok);
    let done: String = eval(
        "local function f(n) if n == 0 then return 'done' end return f(n - 1) end return f(100000)",
    );
    assert_eq!(done, "done");
}

#[test]
fn value_stack_is_limited_on_the_main_thread() {
    // lim_registry_overflow: 25 locals per frame exhaust the 5120 slots first
    let f = "local function f(n)\n\
             local a, b, c, d, e, f1, g, h, i, j, k, l, m, o, p, q, r, s, t, u, v, w, x, y, z = \
             1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25\n\
             if n == 0 then return 0 end\n\
             return 1 + f(n - 1) + a\n\
             end\n";
    let e = depth_result(&format!("{f}return f(250)")).unwrap_err();
    assert_eq!((e.kind, e.line), (ErrorKind::Runtime, Some(4)));
    assert!(e.message.contains("registry overflow"), "{}", e.message);
    assert_eq!(
        depth_result(&format!("{f}local v = f(150) return v")).unwrap(),
        150.0 * 2.0
    );
    let ok: bool = eval(&format!("{f}return (pcall(f, 250))"));
    assert!(!ok);
}
