//! Runs of one script reuse the sandboxes prepared for it (rewound to a snapshot after every
//! run, see `runner::prepared`): every run must still start from a state equal to a freshly
//! made one, whatever the runs before it did, and give what a brand-new script would.

use std::time::Duration;

use kruise_lua_engine::ErrorKind;
use kruise_lua_engine::json::KeyOrder;
use kruise_lua_engine::runner::{Mode, RunOptions, Script, ScriptRun, run_custom_json};
use kruise_lua_engine::value::JsonValue;
use kruise_lua_engine::vm::Limits;

fn options() -> RunOptions {
    RunOptions {
        limits: Limits {
            timeout: Duration::from_millis(300),
            memory_bytes: 16 * 1024 * 1024,
        },
        ..RunOptions::default()
    }
}

fn obj(spec: &str) -> JsonValue {
    let text = format!(r#"{{"data": {{"spec": {spec}}}, "canaryWeight": 20, "stableWeight": 80}}"#);
    JsonValue::parse_go_interface(text.as_bytes()).expect("test obj is JSON")
}

/// The result's canonical JSON under the controller's rules, or the error kind.
fn outcome(run: &ScriptRun) -> Result<String, ErrorKind> {
    run.result(Mode::Production)
        .as_ref()
        .map(|data| data.to_canonical_json())
        .map_err(|error| error.kind)
}

/// Reports what it sees of earlier runs, then changes everything a script can reach: globals,
/// library tables, metatables, `obj`, and enough strings, globals and memory to make the
/// VM move the blocks the snapshot holds (string table, globals' node array).
const POLLUTER: &str = r#"
local seen = {}
local function saw(what) seen[#seen + 1] = what end
if leaked then saw("global") end
if string.leaked or ("").leaked then saw("string library") end
if table.leaked or math.leaked then saw("table/math library") end
if json.leaked then saw("json module") end
if getmetatable(_G) ~= nil then saw("_G metatable") end
if getmetatable("").__index ~= string then saw("string metatable") end
if obj.data.leaked then saw("obj") end
if type(print) ~= "function" or type(pairs) ~= "function" then saw("base library") end
local globals = 0
for _ in pairs(_G) do globals = globals + 1 end

leaked = true
string.leaked, table.leaked, math.leaked, json.leaked = true, true, true, true
obj.data.leaked = true
getmetatable("").__index = setmetatable({}, { __index = string })
for i = 1, 3000 do
  _G["global" .. i] = string.rep("x", i % 40) .. i
end
local big = string.rep("y", 200000)
print("ran")
setmetatable(_G, { __index = function() return "leaked" end })
return { spec = { seen = table.concat(seen, ","), globals = globals, size = #big } }
"#;

#[test]
fn a_run_sees_nothing_of_the_runs_before_it() {
    // Nothing here loops: a deadline far off keeps slow machines (and valgrind) green.
    let options = RunOptions {
        limits: Limits {
            timeout: Duration::from_secs(30),
            ..options().limits
        },
        ..options()
    };
    let script = Script::new(POLLUTER);
    let fresh = run_custom_json(&Script::new(POLLUTER), &obj("{}"), &options);
    let first = match fresh.result(Mode::Production) {
        Ok(data) => data.to_canonical_json(),
        Err(error) => panic!("the polluter fails: {error:?}"),
    };
    assert!(first.contains(r#""seen":"""#), "{first}");
    assert_eq!(fresh.prints, ["ran"]);
    for round in 0..5 {
        let run = run_custom_json(&script, &obj("{}"), &options);
        assert_eq!(
            run, fresh,
            "run {round} of one script differs from a new script's run"
        );
    }
}

/// Ends as its obj asks: a timeout, the memory cap, a runtime error, or a result.
const BEHAVES_AS_ASKED: &str = r#"
local ask = obj.data.spec.ask
if ask == "loop" then while true do end end
if ask == "loop-in-pcall" then while true do pcall(function() while true do end end) end end
if ask == "memory" then
  local t = {}
  for i = 1, 1e8 do t[i] = string.rep("z", 100000) .. i end
end
if ask == "memory-probe" then
  local t = {}
  for i = 1, 1e8 do t[i] = string.rep("z", 65536) .. i print(i) end
end
if ask == "memory-in-pcall" then
  pcall(function() local t = {} for i = 1, 1e8 do t[i] = string.rep("z", 100000) .. i end end)
end
if ask == "error" then error("asked to fail") end
counter = (counter or 0) + 1
return { spec = { counter = counter, ask = ask } }
"#;

#[test]
fn a_spent_budget_or_an_error_does_not_carry_over() {
    let script = Script::new(BEHAVES_AS_ASKED);
    let normal = obj(r#"{"ask": "nothing"}"#);
    let expected = outcome(&run_custom_json(
        &Script::new(BEHAVES_AS_ASKED),
        &normal,
        &options(),
    ));
    assert_eq!(
        expected.as_deref(),
        Ok(r#"{"spec":{"ask":"nothing","counter":1}}"#)
    );
    let asks = [
        ("loop", Err(ErrorKind::Timeout)),
        ("loop-in-pcall", Err(ErrorKind::Timeout)),
        ("memory", Err(ErrorKind::Memory)),
        ("memory-in-pcall", Err(ErrorKind::Memory)),
        ("error", Err(ErrorKind::Runtime)),
    ];
    for (ask, ends) in asks {
        let run = run_custom_json(&script, &obj(&format!(r#"{{"ask": "{ask}"}}"#)), &options());
        assert_eq!(outcome(&run).map(drop), ends, "{ask}");
        let after = run_custom_json(&script, &normal, &options());
        assert_eq!(outcome(&after), expected, "the run after {ask:?}");
    }
}

#[test]
fn runs_under_other_options_get_sandboxes_of_their_own() {
    let script = Script::new(BEHAVES_AS_ASKED);
    let normal = obj(r#"{"ask": "nothing", "b": 1, "a": 2, "c": {"z": 1, "y": 2}}"#);
    let variants = [
        options(),
        RunOptions {
            key_order: KeyOrder::Shuffled(7),
            ..options()
        },
        RunOptions {
            limits: Limits {
                memory_bytes: 2 * 1024 * 1024,
                ..options().limits
            },
            ..options()
        },
    ];
    for round in 0..3 {
        for variant in &variants {
            let fresh = run_custom_json(&Script::new(BEHAVES_AS_ASKED), &normal, variant);
            let reused = run_custom_json(&script, &normal, variant);
            assert_eq!(reused, fresh, "round {round}, {variant:?}");
        }
    }
    // The memory cap of the sandbox is the one asked for, not that of an earlier run: the
    // probe prints how many 64 KiB blocks it holds before the cap stops it, so a reused
    // sandbox must stop where a new script's does, under each cap in turn.
    let tight = RunOptions {
        limits: Limits {
            memory_bytes: 2 * 1024 * 1024,
            ..options().limits
        },
        ..options()
    };
    let probe = obj(r#"{"ask": "memory-probe"}"#);
    let mut blocks_held = Vec::new();
    for caps in [&options(), &tight, &options()] {
        let fresh = run_custom_json(&Script::new(BEHAVES_AS_ASKED), &probe, caps);
        let reused = run_custom_json(&script, &probe, caps);
        assert_eq!(outcome(&reused), Err(ErrorKind::Memory));
        assert_eq!(reused, fresh, "{caps:?}");
        blocks_held.push(reused.prints.len());
    }
    // 2 MiB holds fewer than 32 blocks of 64 KiB; 16 MiB holds several times more.
    assert!(blocks_held[1] < 32, "{blocks_held:?}");
    assert!(blocks_held[0] > 4 * blocks_held[1], "{blocks_held:?}");
    assert_eq!(blocks_held[0], blocks_held[2], "{blocks_held:?}");
}

#[test]
fn one_script_runs_on_many_threads_at_once() {
    let script = Script::new(BEHAVES_AS_ASKED);
    let asks = ["nothing", "error", "other", "loop"];
    let expected: Vec<_> = asks
        .iter()
        .map(|ask| {
            let obj = obj(&format!(r#"{{"ask": "{ask}"}}"#));
            outcome(&run_custom_json(
                &Script::new(BEHAVES_AS_ASKED),
                &obj,
                &options(),
            ))
        })
        .collect();
    std::thread::scope(|scope| {
        for thread in 0..4 {
            let (script, expected) = (&script, &expected);
            scope.spawn(move || {
                for round in 0..12 {
                    // Each thread goes through the asks in its own order.
                    let index = (thread + round) % asks.len();
                    let obj = obj(&format!(r#"{{"ask": "{}"}}"#, asks[index]));
                    let run = run_custom_json(script, &obj, &options());
                    assert_eq!(outcome(&run), expected[index], "{}", asks[index]);
                }
            });
        }
    });
}
