//! Property-based fuzzing of the engine's readers (proptest, on stable Rust): the YAML case
//! reader and the Lua syntax check take any text, built from the tokens that matter to them
//! (anchors, aliases, merges, flow and block collections, tags, quotes, Lua's long brackets
//! and comments) mixed with arbitrary characters and, for YAML, deep nesting. Whatever the input, they end in a value or
//! a positioned error: never a panic, and an error's line lies within the text.
//!
//! A default run (`cargo test -p kruise-lua-engine --test fuzz`) tries 256 inputs per target
//! in seconds; a longer run sets `PROPTEST_CASES`, e.g. `PROPTEST_CASES=200000 cargo test
//! --release -p kruise-lua-engine --test fuzz` (see README "Fuzzing").

use kruise_lua_engine::runner::Script;
use kruise_lua_engine::testcase::parse_case;
use kruise_lua_engine::yaml::parse_documents;
use proptest::prelude::*;

/// Pieces of YAML that steer the reader into its interesting paths.
const YAML_TOKENS: &[&str] = &[
    "a:",
    "b: ",
    "spec:",
    "original:",
    "expected:",
    "trafficRouting:",
    "rollout:",
    "kind: K",
    "steps:",
    "- ",
    "  ",
    "\n",
    "\t",
    "&x ",
    "*x",
    "&y ",
    "*y",
    "<<: ",
    "[",
    "]",
    "{",
    "}",
    ", ",
    ": ",
    "'",
    "\"",
    "|",
    ">-",
    "#",
    "---",
    "...",
    "!!str ",
    "!!int ",
    "!!binary ",
    "!x ",
    "~",
    "yes",
    "0x1F",
    "1e400",
    ".nan",
    "-",
    "?",
    "%YAML 1.1\n",
    "é",
    "\u{feff}",
    "\r\n",
    "\\",
];

/// Pieces of Lua that steer the compiler into its interesting paths.
const LUA_TOKENS: &[&str] = &[
    "local ", "x", " = ", "function", "(", ")", "end", "return ", "{", "}", "[[", "]]", "[==[",
    "]==]", "--", "--[[", "'", "\"", "\\", "\n", " ", "if ", "then ", "else", "for ", "do ",
    "while ", "..", "...", "#", "0x", "1e", ".5", ";", ":", ",", "goto ", "::l::", "\0", "é",
    "obj.data", "=",
];

fn text_from(tokens: &'static [&'static str]) -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => proptest::sample::select(tokens).prop_map(str::to_string),
        1 => any::<char>().prop_map(|c| c.to_string()),
    ];
    proptest::collection::vec(piece, 0..120).prop_map(|pieces| pieces.concat())
}

/// Deep nesting, which token soup almost never reaches: up to 20,000 flow mappings or
/// sequences (closed or not) or compact block sequences, or a staircase of up to 600 block
/// mappings (one level a line; deeper ones would be quadratic in size). The reader's depth
/// bound is 255: both sides of it are drawn.
fn deep_nesting() -> impl Strategy<Value = String> {
    (0..4u8, 1..20_000usize, any::<bool>()).prop_map(|(kind, levels, closed)| match kind {
        0 | 1 => {
            let (open, close) = if kind == 0 { ("{a: ", "}") } else { ("[", "]") };
            let mut text = open.repeat(levels);
            if closed {
                text.push('1');
                text.push_str(&close.repeat(levels));
            }
            text
        }
        2 => "- ".repeat(levels) + "1",
        _ => (0..levels.min(600))
            .map(|level| format!("{}a:\n", " ".repeat(level)))
            .collect(),
    })
}

/// YAML text: token soup, sometimes with deep nesting spliced in.
fn yaml_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        8 => proptest::sample::select(YAML_TOKENS).prop_map(str::to_string),
        2 => any::<char>().prop_map(|c| c.to_string()),
        1 => deep_nesting(),
    ];
    proptest::collection::vec(piece, 0..120).prop_map(|pieces| pieces.concat())
}

/// An upper bound of the lines in `text` as YAML and Lua count them (`\r` alone breaks a line
/// for both; `\r\n` counts once, which this counts twice).
fn line_count(text: &str) -> u32 {
    text.bytes().filter(|b| matches!(b, b'\n' | b'\r')).count() as u32 + 1
}

proptest! {
    #[test]
    fn the_case_reader_never_panics_and_points_inside_the_text(text in yaml_text()) {
        match parse_case(&text) {
            Ok(case) => {
                for warning in &case.warnings {
                    if let Some(span) = warning.span {
                        prop_assert!(span.start.line <= line_count(&text), "{warning:?}");
                        prop_assert!(span.start.offset <= text.len());
                    }
                }
            }
            Err(error) => {
                if let Some(span) = error.span {
                    prop_assert!(span.start.line <= line_count(&text), "{error:?}");
                    prop_assert!(span.start.offset <= text.len());
                }
            }
        }
        // Manifests go through the same tree builder, every document at once.
        let _ = parse_documents(&text);
    }

    #[test]
    fn the_lua_syntax_check_never_panics(text in text_from(LUA_TOKENS)) {
        let script = Script::new(text.clone());
        if let Some(line) = script.syntax_error().and_then(|error| error.line) {
            prop_assert!(line <= line_count(&text), "{:?}", script.syntax_error());
        }
    }
}
