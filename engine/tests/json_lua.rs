//! The JSON layer against a live Lua state: Kruise's encoder rules (2.4), input conversion
//! (2.2), the `json` module, and result decoding for controller, harness and ingress (2.5–2.8).

use kruise_lua_engine::JsonValue;
use kruise_lua_engine::json::{
    EmptyTable, KeyOrder, annotations_to_canonical_json, decode_custom_result,
    decode_ingress_result, encode_lua, encode_lua_into, install_module, install_module_with_order,
    json_to_lua,
};
use mlua::{Lua, Value};

fn lua() -> Lua {
    // Keeps the patched Lua library in the test binary (vm::new_state does this in the crate).
    kruise_lua51_sys::link();
    let lua = Lua::new();
    install_module(&lua).unwrap();
    lua
}

fn eval(lua: &Lua, source: &str) -> Value {
    lua.load(source)
        .set_name("=<string>")
        .eval::<Value>()
        .unwrap_or_else(|e| panic!("{source}: {e}"))
}

fn encode(source: &str, empty: EmptyTable) -> Result<String, String> {
    let lua = lua();
    let value = eval(&lua, source);
    encode_lua(&value, empty).map(|raw| String::from_utf8(raw).unwrap())
}

fn encoded(source: &str) -> String {
    encode(source, EmptyTable::Null).unwrap_or_else(|e| panic!("{source}: {e}"))
}

fn encode_error(source: &str) -> String {
    let err = encode(source, EmptyTable::Null).expect_err(source);
    assert_eq!(
        encode(source, EmptyTable::EmptyArray).map_err(|_| ()),
        Err(()),
        "{source} in harness mode"
    );
    err
}

#[test]
fn arrays_and_objects() {
    assert_eq!(
        encoded("return {1, 'a', true, false}"),
        r#"[1,"a",true,false]"#
    );
    assert_eq!(
        encoded("local t = {}; t[3] = 'c'; t[2] = 'b'; t[1] = 'a'; return t"),
        r#"["a","b","c"]"#
    );
    assert_eq!(
        encoded("return {['9'] = 1, ['10'] = 2, B = 3, _ = 4, a = 5, ['\\195\\169'] = 6}"),
        r#"{"10":2,"9":1,"B":3,"_":4,"a":5,"é":6}"#
    );
    assert_eq!(
        encoded("return {x = {y = {1, {z = 'w'}}}}"),
        r#"{"x":{"y":[1,{"z":"w"}]}}"#
    );
    // A big array whose keys sit in the hash part still comes out in index order.
    assert_eq!(
        encoded("local t = {}; for i = 300, 1, -1 do t[i] = i end; return t"),
        format!(
            "[{}]",
            (1..=300)
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(",")
        )
    );
}

#[test]
fn empty_tables_follow_the_mode() {
    let cases = [
        ("return {}", "null", "[]"),
        ("return {spec = {}}", r#"{"spec":null}"#, r#"{"spec":[]}"#),
        (
            "return {{}, {a = {}}}",
            r#"[null,{"a":null}]"#,
            r#"[[],{"a":[]}]"#,
        ),
    ];
    for (source, controller, harness) in cases {
        assert_eq!(
            encode(source, EmptyTable::Null).unwrap(),
            controller,
            "{source}"
        );
        assert_eq!(
            encode(source, EmptyTable::EmptyArray).unwrap(),
            harness,
            "{source}"
        );
    }
}

#[test]
fn numbers_use_go_float_formatting() {
    assert_eq!(
        encoded(
            "return {1e21, 1e-7, 5e-324, 1e100, 1.7976931348623157e308, 1e20, 0.000001, 12345678901234567000, 2^63, -0, 50.0, 1/3, -1.5, 2^53 + 1}"
        ),
        "[1e+21,1e-7,5e-324,1e+100,1.7976931348623157e+308,100000000000000000000,0.000001,\
         12345678901234567000,9223372036854776000,-0,50,0.3333333333333333,-1.5,9007199254740992]"
    );
}

#[test]
fn strings_use_go_escaping() {
    assert_eq!(
        encoded(
            r#"return {'"\\', '\n\r\t\b\f\0\1\31', '\127', '<a>&', '\226\128\168\226\128\169', 'é€', 'a\255b', '\226\130'}"#
        ),
        "[\"\\\"\\\\\",\"\\n\\r\\t\\u0008\\u000c\\u0000\\u0001\\u001f\",\"\x7f\",\"\\u003ca\\u003e\\u0026\",\
         \"\\u2028\\u2029\",\"é€\",\"a\\ufffdb\",\"\\ufffd\\ufffd\"]"
    );
    // Keys are escaped the same way (and sorted on their raw bytes).
    assert_eq!(
        encoded(r#"return {['<k>'] = 1, ['a\255'] = 2}"#),
        r#"{"\u003ck\u003e":1,"a\ufffd":2}"#
    );
}

#[test]
fn metatables_are_ignored() {
    assert_eq!(
        encoded(
            "local t = setmetatable({a = 1}, {__index = {b = 2}, __newindex = error}); return t"
        ),
        r#"{"a":1}"#
    );
    assert_eq!(
        encoded("return setmetatable({}, {__index = {1, 2}})"),
        "null"
    );
}

#[test]
fn encode_errors() {
    let cases = [
        ("return {spec = {list = {1, nil, 3}}}", "spec.list", "hole"),
        ("return {spec = {list = {nil, 2}}}", "spec.list", "hole"),
        (
            "local t = {}; t[0] = 'z'; t[1] = 'a'; return {spec = t}",
            "spec",
            "key 0",
        ),
        (
            "local t = {1, 2}; t[-1] = 'n'; return {spec = t}",
            "spec",
            "negative",
        ),
        (
            "local t = {}; t[1] = 'a'; t[1.5] = 'b'; return {spec = t}",
            "spec",
            "non-integer",
        ),
        (
            "return {spec = {list = {1, 2, x = 3}}}",
            "spec.list",
            "mixes",
        ),
        (
            "return {spec = {m = {[1] = 'a', ['2'] = 'b'}}}",
            "spec.m",
            "mixes",
        ),
        ("return {spec = {[true] = 'a'}}", "spec", "boolean key"),
        ("return {spec = {[{}] = 'a'}}", "spec", "table key"),
        ("return {spec = {f = print}}", "spec.f", "function"),
        ("return {spec = {u = newproxy()}}", "spec.u", "userdata"),
        (
            "return {spec = {c = coroutine.create(function() end)}}",
            "spec.c",
            "thread",
        ),
        ("return {spec = {v = 0/0}}", "spec.v", "NaN"),
        ("return {spec = {v = 1/0}}", "spec.v", "+Inf"),
        ("return {spec = {list = {1, -1/0}}}", "spec.list[2]", "-Inf"),
        (
            "local d = {host = 'echo'}; return {spec = {a = d, b = d}}",
            "spec.b",
            "twice",
        ),
        (
            "local r = {weight = 50}; return {spec = {routes = {r, r}}}",
            "spec.routes[2]",
            "twice",
        ),
        (
            "local t = {x = 1}; t.self = t; return {spec = t}",
            "spec.self",
            "twice",
        ),
        // Shared empty tables count too: the check comes before the emptiness test.
        (
            "local e = {}; return {spec = {a = e, b = e}}",
            "spec.b",
            "twice",
        ),
        ("return {['a b'] = {print}}", "[\"a b\"][1]", "function"),
    ];
    for (source, path, what) in cases {
        let message = encode_error(source);
        assert!(
            message.contains(path) && message.contains(what),
            "{source}: {message}"
        );
    }
    // A copy is fine.
    assert_eq!(
        encoded("local function d() return {host = 'echo'} end; return {a = d(), b = d()}"),
        r#"{"a":{"host":"echo"},"b":{"host":"echo"}}"#
    );
}

fn nested(depth: usize, innermost: &str) -> String {
    format!("local t = {innermost}; for i = 2, {depth} do t = {{t}} end; return t")
}

#[test]
fn nesting_is_limited_as_go_rescans_the_output() {
    // 10000 levels are fine, 10001 are not (Go's scanner limit on the marshalled text).
    assert_eq!(
        encoded(&nested(10000, "{1}")),
        format!("{}1{}", "[".repeat(10000), "]".repeat(10000))
    );
    assert!(encode_error(&nested(10001, "{1}")).contains("nested"));
    // An empty innermost table is `null` (no level) for the controller, `[]` for the harness.
    assert!(encode(&nested(10001, "{}"), EmptyTable::Null).is_ok());
    assert!(encode(&nested(10001, "{}"), EmptyTable::EmptyArray).is_err());
    // Far deeper tables fail cleanly instead of overflowing the stack.
    assert!(encode_error(&nested(200_000, "{1}")).contains("nested"));
}

#[test]
fn encode_into_reuses_a_buffer() {
    let lua = lua();
    let value = eval(&lua, "return {a = 1}");
    let mut buffer = b"x".to_vec();
    encode_lua_into(&value, EmptyTable::Null, &mut buffer).unwrap();
    assert_eq!(buffer, br#"x{"a":1}"#);
}

#[test]
fn input_conversion_follows_go() {
    let lua = lua();
    let input = JsonValue::parse_go_interface(
        br#"{"a": [1, null, 3], "b": null, "c": {"d": null, "e": "x"}, "n": 9007199254740993, "f": false, "z": []}"#,
    )
    .unwrap();
    let value = json_to_lua(&lua, &input, KeyOrder::Sorted).unwrap();
    lua.globals().set("obj", value).unwrap();
    let summary: String = lua
        .load(
            "return table.concat({#obj.a, obj.a[1], obj.a[2], tostring(obj.b), tostring(obj.c.d), obj.c.e, \
             string.format('%.0f', obj.n), tostring(obj.f), tostring(next(obj.z))}, ' ')",
        )
        .eval()
        .unwrap();
    assert_eq!(summary, "2 1 3 nil nil x 9007199254740992 false nil");
    // Exact 64-bit integers round to the nearest double on the way in.
    let value = json_to_lua(&lua, &JsonValue::Int(9007199254740993), KeyOrder::Sorted).unwrap();
    assert_eq!(value.as_f64(), Some(9007199254740992.0));
    assert!(
        json_to_lua(&lua, &JsonValue::Null, KeyOrder::Sorted)
            .unwrap()
            .is_nil()
    );
}

fn pairs_order(lua: &Lua, order: KeyOrder) -> Vec<String> {
    let members = (0..40)
        .map(|i| (format!("k{i}"), JsonValue::Int(i)))
        .collect();
    let table = json_to_lua(lua, &JsonValue::Object(members), order).unwrap();
    let Value::Table(table) = table else { panic!() };
    table.pairs::<String, f64>().map(|p| p.unwrap().0).collect()
}

#[test]
fn shuffled_key_order_is_seeded() {
    let lua = lua();
    let sorted = pairs_order(&lua, KeyOrder::Sorted);
    assert_eq!(sorted.len(), 40);
    assert_eq!(
        pairs_order(&lua, KeyOrder::Shuffled(7)),
        pairs_order(&lua, KeyOrder::Shuffled(7))
    );
    // Insertion order shows through `next` (collision chains in PUC, insertion order when
    // patched like gopher-lua), so some seed must change the visiting order.
    assert!((0..20).any(|seed| pairs_order(&lua, KeyOrder::Shuffled(seed)) != sorted));
}

fn run(lua: &Lua, source: &str) -> String {
    let value = eval(lua, source);
    String::from_utf8(encode_lua(&value, EmptyTable::Null).unwrap()).unwrap()
}

#[test]
fn json_module_behaves_like_kruise() {
    let lua = lua();
    assert_eq!(
        run(
            &lua,
            "return {json.encode({b = 1, a = {}}), json.encode(nil), json.encode('<'), json.encode(1e21), select('#', json.encode(1))}"
        ),
        r#"["{\"a\":null,\"b\":1}","null","\"\\u003c\"","1e+21",1]"#
    );
    // Failures return nil and a message (two values); a missing argument raises a string.
    assert_eq!(
        run(
            &lua,
            "local s, e = json.encode(print); local ok, m = pcall(json.encode); \
                   return {tostring(s), type(e), select('#', json.encode(0/0)), ok, type(m)}"
        ),
        r#"["nil","string",2,false,"string"]"#
    );
    assert_eq!(
        run(
            &lua,
            "local v = json.decode('{\"a\": [1, null, 3], \"b\": null, \"c\": 1.5e2}'); \
                   return {v.a, #v.a, v.b == nil, v.c, json.decode(42), json.decode('12345678901234567890'), \
                           select('#', json.decode('null')), json.decode(' \"\\\\ud800\\\\ufffd\" ')}"
        ),
        "[[1,3],2,true,150,42,12345678901234567000,1,\"\u{fffd}\u{fffd}\"]"
    );
    assert_eq!(
        run(
            &lua,
            "local v, e = json.decode('{bad'); local v2, e2 = json.decode(''); local v3, e3 = json.decode(0/0); \
                   local ok, m = pcall(json.decode, {}); local ok2 = pcall(json.decode); \
                   return {tostring(v), type(e), tostring(v2), e2, tostring(v3), type(e3), ok, type(m), ok2}"
        ),
        r#"["nil","string","nil","unexpected end of JSON input","nil","string",false,"string",false]"#
    );
    // Invalid UTF-8 inside a decoded string becomes U+FFFD.
    assert_eq!(
        run(&lua, "return {json.decode('\"a\\255b\"')}"),
        "[\"a\u{fffd}b\"]"
    );
    assert_eq!(
        run(
            &lua,
            "return json.decode(json.encode({list = {1, 2, {k = 'v'}}, s = '\\195\\169\\n\\t\"', n = -0.5}))"
        ),
        r#"{"list":[1,2,{"k":"v"}],"n":-0.5,"s":"é\n\t\""}"#
    );
}

#[test]
fn json_module_with_shuffled_decode_order() {
    kruise_lua51_sys::link();
    let lua = Lua::new();
    install_module_with_order(&lua, KeyOrder::Shuffled(3)).unwrap();
    assert_eq!(
        run(&lua, "return json.decode('{\"b\": 1, \"a\": [2]}')"),
        r#"{"a":[2],"b":1}"#
    );
}

fn custom(source: &str, empty: EmptyTable) -> Result<String, String> {
    let raw = encode(source, empty)?;
    decode_custom_result(raw.as_bytes()).map(|data| data.to_canonical_json())
}

fn both(source: &str) -> (Result<String, String>, Result<String, String>) {
    (
        custom(source, EmptyTable::Null),
        custom(source, EmptyTable::EmptyArray),
    )
}

#[test]
fn custom_results_decode_as_go_does() {
    let ok = |source: &str, controller: &str, harness: Option<&str>| {
        let (c, h) = both(source);
        assert_eq!(c.as_deref(), Ok(controller), "controller: {source}");
        match harness {
            Some(h_out) => assert_eq!(h.as_deref(), Ok(h_out), "harness: {source}"),
            None => assert!(h.is_err(), "harness should fail: {source} gave {h:?}"),
        }
    };
    ok("return {}", "{}", None);
    ok("return {spec = {}}", "{}", Some(r#"{"spec":[]}"#));
    ok(
        "return {spec = {a = 1}, labels = {}}",
        r#"{"spec":{"a":1}}"#,
        None,
    );
    ok(
        "return {spec = {hosts = {}, http = {{}}}}",
        r#"{"spec":{"hosts":null,"http":[null]}}"#,
        Some(r#"{"spec":{"hosts":[],"http":[[]]}}"#),
    );
    for (value, text) in [
        ("false", "false"),
        ("0", "0"),
        ("''", "\"\""),
        ("{1}", "[1]"),
    ] {
        ok(
            &format!("return {{spec = {value}}}"),
            &format!(r#"{{"spec":{text}}}"#),
            Some(&format!(r#"{{"spec":{text}}}"#)),
        );
    }
    // Case-insensitive keys in sorted order: `spec` replaces `Spec`, label maps merge.
    ok(
        "return {Spec = 1, spec = 2, SPEC = 3, Labels = {a = 'L', b = 'L'}, labels = {b = 'l'}, ANNOTATIONS = {x = 'y'}, metadata = {n = 1}}",
        r#"{"spec":2,"labels":{"a":"L","b":"l"},"annotations":{"x":"y"}}"#,
        Some(r#"{"spec":2,"labels":{"a":"L","b":"l"},"annotations":{"x":"y"}}"#),
    );
    // Go's folding also matches U+017F for s.
    ok(
        "return {['\\197\\191pec'] = 'x'}",
        r#"{"spec":"x"}"#,
        Some(r#"{"spec":"x"}"#),
    );
    // A later empty (null) labels member clears the merged map.
    ok("return {Labels = {a = 'b'}, labels = {}}", "{}", None);
    // An empty-table label value is null for the controller: Go stores "".
    ok("return {labels = {a = {}}}", r#"{"labels":{"a":""}}"#, None);
    // HTML characters and invalid UTF-8: the \ufffd escape of the raw text becomes U+FFFD.
    ok(
        "return {spec = {s = 'a<b\\255'}, annotations = {k = '&'}}",
        "{\"spec\":{\"s\":\"a\\u003cb\u{fffd}\"},\"annotations\":{\"k\":\"\\u0026\"}}",
        Some("{\"spec\":{\"s\":\"a\\u003cb\u{fffd}\"},\"annotations\":{\"k\":\"\\u0026\"}}"),
    );
    ok("return {status = {1}}", "{}", Some("{}"));

    for source in [
        "return {labels = {a = 5}}",
        "return {labels = {a = true}}",
        "return {labels = {a = {b = 'c'}}}",
        "return {labels = 'app=echo'}",
        "return {annotations = {'a', 'b'}}",
        "return {1, 2}",
    ] {
        let (c, h) = both(source);
        assert!(c.is_err() && h.is_err(), "{source}: {c:?} {h:?}");
    }
}

#[test]
fn raw_text_decoding_edge_cases() {
    assert_eq!(
        decode_custom_result(b"null").unwrap().to_canonical_json(),
        "{}"
    );
    assert!(decode_custom_result(b"[]").is_err());
    assert!(decode_custom_result(b"\"x\"").is_err());
    assert!(decode_custom_result(b"{\"spec\":1").is_err());
    let data = decode_custom_result(br#"{"spec":{"b":[1e21,-0]},"Spec":null}"#).unwrap();
    assert_eq!(data.spec, None);
    let data =
        decode_custom_result(br#"{"spec":{"b":[1e21,-0,1e-7]},"labels":{"x":null}}"#).unwrap();
    assert_eq!(
        data.to_canonical_json(),
        r#"{"spec":{"b":[1e+21,-0,1e-7]},"labels":{"x":""}}"#
    );
}

#[test]
fn ingress_results() {
    let decode = |source: &str| {
        let raw = encode(source, EmptyTable::Null).unwrap();
        decode_ingress_result(raw.as_bytes()).map(|m| annotations_to_canonical_json(m.as_ref()))
    };
    assert_eq!(decode("return {}").as_deref(), Ok("null"));
    assert_eq!(
        decode("return {expr = 'a<b && c>d', ['b/x'] = '1'}").as_deref(),
        Ok(r#"{"b/x":"1","expr":"a\u003cb \u0026\u0026 c\u003ed"}"#)
    );
    assert!(decode("return {'a', 'b'}").is_err());
    assert!(decode("return {weight = 20}").is_err());
    assert!(decode("return {a = {b = 'c'}}").is_err());
    assert_eq!(
        decode_ingress_result(b"{}").unwrap(),
        Some(Default::default())
    );
}
