//! Property tests of every analysis pass on generated long and deep shapes of valid Lua (issue
//! 22): index and call chains, operator chains, nested brackets and blocks, elseif ladders.
//! Each pass must finish without a panic or a stack overflow, and a shape past the bounds of
//! `shape_limits` must be refused with its one diagnostic. 24 cases per property by default
//! (`PROPTEST_CASES` sets more for a longer run).

use kruise_lua_engine::script::ScriptFlavor;
use proptest::prelude::*;

use super::shape_limits::{MAX_OPERATOR_CHAIN, MAX_SUFFIX_CHAIN};
use super::{
    LintConfig, ParsedScript, analyze_script, document_symbols, highlight, hover, signature_help,
};

/// One generated script: `shape` repeated `n` times around or after a seed.
fn script(shape: u8, n: usize) -> String {
    match shape % 7 {
        0 => format!("local s = obj{}\nreturn obj.data\n", ".a".repeat(n)),
        1 => format!(
            "local function f() return f end\nlocal x = f{}\nreturn obj.data\n",
            "()".repeat(n)
        ),
        2 => format!("local x = 1{}\nreturn obj.data\n", " + 1".repeat(n)),
        3 => format!(
            "local a = obj.data\nif a then\n{}end\nreturn obj.data\n",
            "elseif a then\n".repeat(n)
        ),
        // Nesting stays within the compiler's 200 levels, as scripts that run must.
        4 => {
            let n = n.min(190);
            format!(
                "local x = {}1{}\nreturn obj.data\n",
                "(".repeat(n),
                ")".repeat(n)
            )
        }
        5 => {
            let n = n.min(190);
            format!(
                "{}local y = obj.data\n{}return obj.data\n",
                "do\n".repeat(n),
                "end\n".repeat(n)
            )
        }
        _ => format!(
            "local t = obj.data\n{}return obj.data\n",
            "t = t:gsub('a', 'b') .. string.upper(t.x or '')\n".repeat(n)
        ),
    }
}

/// Runs every pass on a thread with the language server's request stack.
fn every_pass(source: String, at: usize) -> (bool, Vec<String>) {
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(move || {
            let analysis = analyze_script(
                &source,
                ScriptFlavor::Custom,
                &LintConfig::default(),
                None,
                None,
            );
            let parsed = ParsedScript::new(source.as_str());
            let _ = document_symbols(&parsed);
            let _ = highlight::tokens(&parsed);
            let offset = at % (source.len() + 1);
            let _ = hover(&parsed, offset, ScriptFlavor::Custom, None);
            let _ = signature_help(&parsed, offset);
            let messages = analysis
                .syntax_errors
                .iter()
                .map(|e| e.message.clone())
                .collect();
            (analysis.syntax_errors.is_empty(), messages)
        })
        .unwrap()
        .join()
        .expect("no pass panics or overflows")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn every_pass_finishes_on_long_and_deep_shapes(shape in 0u8..7, n in 0usize..3000, at in any::<usize>()) {
        let (clean, messages) = every_pass(script(shape, n), at);
        let refused = match shape % 7 {
            0 | 1 => n > MAX_SUFFIX_CHAIN,
            2 => n > MAX_OPERATOR_CHAIN,
            _ => false,
        };
        if refused {
            prop_assert!(messages.iter().any(|m| m.contains("to analyse")), "{messages:?}");
        } else {
            prop_assert!(clean, "shape {shape} × {n}: {messages:?}");
        }
    }
}
