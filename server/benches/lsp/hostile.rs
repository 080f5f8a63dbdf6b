//! Pathological but valid scripts (issue 22): per request, the time the server takes, the CPU it
//! spends and its memory, and what it keeps after the file is closed.
//!
//! `KRUISE_LUA_BENCH_HOSTILE=1 cargo bench -p kruise-lua --bench lsp`. Each shape is opened in a
//! fresh server, left to finish its background analysis, then asked each request in turn.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use super::{Server, file_uri, temp_dir};

/// The shapes of issue 22's table, at the sizes it gives, and the densest ones the analysis takes.
fn shapes() -> Vec<(&'static str, String)> {
    let short_lines = |lines: usize| -> String {
        (0..lines)
            .map(|i| {
                if i % 3 == 0 {
                    format!("y = x{}\n", i.max(1) - 1)
                } else {
                    format!("local x{i} = {i}\n")
                }
            })
            .collect()
    };
    vec![
        (
            "100,000 short lines, many names (row 8)",
            short_lines(100_000) + "return obj.data\n",
        ),
        // The densest shapes just under the analysis's token limit (100,000): what a file the
        // server does analyse can cost.
        (
            "26,000 short lines, many names (95,000 tokens)",
            short_lines(26_000) + "return obj.data\n",
        ),
        (
            "`elseif` × 33,000 (99,000 tokens)",
            format!(
                "local a = obj.data\nif a then\n{}end\nreturn obj.data\n",
                "elseif a then\n".repeat(33_000)
            ),
        ),
        (
            "`obj.a.a…`, 500,000 indexes (row 5)",
            format!("local s = obj{}\nreturn obj.data\n", ".a".repeat(500_000)),
        ),
        (
            "`1 + 1 + …`, 200,000 terms (row 6)",
            format!("local x = 1{}\nreturn obj.data\n", " + 1".repeat(200_000)),
        ),
        (
            "`f()()…`, 500,000 calls (row 7)",
            format!(
                "local function f() return f end\nlocal x = f{}\nreturn obj.data\n",
                "()".repeat(500_000)
            ),
        ),
        (
            "`elseif` × 100,000 (row 9)",
            format!(
                "local a = obj.data\nif a then\n{}end\nreturn obj.data\n",
                "elseif a then\n".repeat(100_000)
            ),
        ),
    ]
}

/// User plus system CPU time of the server so far.
fn cpu(server: &Server) -> Duration {
    let stat =
        std::fs::read_to_string(format!("/proc/{}/stat", server.child.id())).unwrap_or_default();
    // Fields after the command name (which may hold spaces) : utime and stime are the 12th and
    // 13th (proc(5)), in clock ticks of 100 Hz on Linux.
    let fields: Vec<u64> = stat
        .rsplit_once(')')
        .map(|(_, rest)| {
            rest.split_whitespace()
                .filter_map(|f| f.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    let ticks = fields.get(10).copied().unwrap_or(0) + fields.get(11).copied().unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

pub fn bench_hostile() {
    let dir = temp_dir("hostile");
    let folder = dir.join("lua_configuration/networking.istio.io/VirtualService");
    std::fs::create_dir_all(&folder).unwrap();
    let script = folder.join("trafficRouting.lua");
    std::fs::write(&script, "return obj.data\n").unwrap();
    let uri = file_uri(&script);
    let document = json!({"textDocument": {"uri": uri}});
    let position = json!({"textDocument": {"uri": uri}, "position": {"line": 1, "character": 8}});
    let requests = [
        ("documentSymbol", document.clone()),
        ("semanticTokens/full", document.clone()),
        ("hover", position.clone()),
        ("signatureHelp", position.clone()),
        (
            "inlayHint",
            json!({"textDocument": {"uri": uri}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 3, "character": 0}}}),
        ),
        (
            "formatting",
            json!({"textDocument": {"uri": uri}, "options": {"tabSize": 2, "insertSpaces": true}}),
        ),
        ("foldingRange", document.clone()),
        ("documentHighlight", position.clone()),
        (
            "references",
            json!({"textDocument": {"uri": uri}, "position": {"line": 1, "character": 8}, "context": {"includeDeclaration": true}}),
        ),
        ("definition", position.clone()),
        ("completion", position.clone()),
        ("codeLens", document.clone()),
        (
            "selectionRange",
            json!({"textDocument": {"uri": uri}, "positions": [{"line": 1, "character": 8}]}),
        ),
    ];
    for (shape, text) in shapes() {
        let mut server = Server::start();
        server.initialize(&dir, json!({}));
        let before = server.rss_kib();
        server.open(&script, &text);
        // The background analysis and runs of the opened file, so requests are measured alone.
        std::thread::sleep(Duration::from_secs(20));
        println!(
            "\n{shape} ({} KiB): RSS {} MiB before open, {} MiB after its analysis",
            text.len() >> 10,
            before >> 10,
            server.rss_kib() >> 10
        );
        println!("| request | answered in | CPU | RSS after | answer |\n|---|---|---|---|---|");
        for (method, params) in &requests {
            let (cpu_before, started) = (cpu(&server), Instant::now());
            let id = server.request(&format!("textDocument/{method}"), params.clone());
            let (_, answer) = server.wait(method, |m| m["id"] == id);
            let outcome = match answer["error"]["message"].as_str() {
                Some(message) => format!("error: {}", message.chars().take(60).collect::<String>()),
                None => "result".to_string(),
            };
            println!(
                "| {method} | {:.2} s | {:.2} s | {} MiB | {outcome} |",
                started.elapsed().as_secs_f64(),
                (cpu(&server) - cpu_before).as_secs_f64(),
                server.rss_kib() >> 10
            );
        }
        server.notify("textDocument/didClose", document.clone());
        std::thread::sleep(Duration::from_secs(2));
        let (peak, _) = server.peak_and_threads();
        println!(
            "peak RSS {} MiB ({}× the file); {} MiB kept after close",
            peak >> 10,
            (peak << 10) / text.len().max(1) as u64,
            server.rss_kib() >> 10
        );
        server.stop();
    }
    let _ = std::fs::remove_dir_all(Path::new(&dir));
}
