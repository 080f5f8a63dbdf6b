//! Tests of `server` (a sibling file: the block is long).

//! The whole service in-process over an in-memory pipe: what the protocol edge does with
//! requests and notifications.

use serde_json::{Value, json};
use tokio::io::{AsyncWriteExt, BufReader};
use tower_lsp_server::{LspService, Server};

/// A workspace `<tmp>/<name>-<pid>` with one Route script and its failing case (the runs
/// module's test pair); returns the workspace and the Kind folder.
fn route_workspace(name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
    let kind = dir.join("example.io/Route");
    std::fs::create_dir_all(kind.join("testdata")).unwrap();
    std::fs::write(
        kind.join("trafficRouting.lua"),
        crate::lsp::runs::tests::SCRIPT,
    )
    .unwrap();
    std::fs::write(kind.join("testdata/c.yaml"), crate::lsp::runs::tests::CASE).unwrap();
    (dir, kind)
}

struct Pipe {
    to_server: tokio::io::DuplexStream,
    from_server: BufReader<tokio::io::DuplexStream>,
}

impl Pipe {
    async fn send(&mut self, message: Value) {
        let framed = crate::framing::frame(message.to_string().as_bytes());
        self.to_server.write_all(&framed).await.unwrap();
    }

    async fn next(&mut self) -> Value {
        crate::framing::read_message(&mut self.from_server).await
    }

    async fn until(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        tokio::time::timeout(std::time::Duration::from_secs(20), async {
            loop {
                let message = self.next().await;
                if pred(&message) {
                    return message;
                }
            }
        })
        .await
        .expect("message in time")
    }
}

fn start() -> Pipe {
    let (client_out, server_in) = tokio::io::duplex(1 << 20);
    let (server_out, client_in) = tokio::io::duplex(1 << 20);
    let (service, socket) = LspService::new(super::Backend::new);
    tokio::spawn(Server::new(server_in, server_out, socket).serve(service));
    Pipe {
        to_server: client_out,
        from_server: BufReader::new(client_in),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_edit_complete_and_bad_requests() {
    let dir = std::env::temp_dir().join(format!("kl-server-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let uri = format!("file://{}/scratch.lua", dir.display());
    let mut pipe = start();
    pipe.send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}, "rootUri": format!("file://{}", dir.display())}})).await;
    let init = pipe.until(|m| m["id"] == 1).await;
    assert_eq!(
        init["result"]["capabilities"]["textDocumentSync"]["change"], 2,
        "incremental"
    );
    assert!(
        init["result"]["capabilities"]
            .get("diagnosticProvider")
            .is_none(),
        "pull diagnostics only when asked for"
    );
    pipe.send(json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        .await;
    pipe.send(json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {"uri": uri, "languageId": "lua", "version": 1, "text": "local a = = 1\nreturn obj.data\n"}}})).await;
    // (The run of this script without cases may publish first, before the analysis.)
    let published = pipe
        .until(|m| {
            m["method"] == "textDocument/publishDiagnostics"
                && m["params"]["uri"] == uri
                && !m["params"]["diagnostics"].as_array().unwrap().is_empty()
        })
        .await;
    let diagnostics = published["params"]["diagnostics"].as_array().unwrap();
    assert!(
        diagnostics
            .iter()
            .any(|d| d["code"] == "syntax" && d["range"]["start"]["line"] == 0),
        "{diagnostics:?}"
    );
    // Fix it with an incremental edit: the syntax error goes away.
    pipe.send(json!({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": 2},
            "contentChanges": [{"range": {"start": {"line": 0, "character": 8}, "end": {"line": 0, "character": 10}}, "text": ""}]
        }})).await;
    pipe.until(|m| {
        m["method"] == "textDocument/publishDiagnostics"
            && m["params"]["uri"] == uri
            && !m["params"]["diagnostics"]
                .as_array()
                .unwrap()
                .iter()
                .any(|d| d["code"] == "syntax")
    })
    .await;
    // A malformed edit and out-of-range positions are survived.
    pipe.send(json!({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": 3},
            "contentChanges": [{"range": {"start": {"line": 90, "character": 8}, "end": {"line": 1, "character": 0}}, "text": "x"}]
        }})).await;
    pipe.send(json!({"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover", "params": {"textDocument": {"uri": uri}, "position": {"line": 500, "character": 500}}})).await;
    let hover = pipe.until(|m| m["id"] == 2).await;
    assert!(hover.get("error").is_none(), "{hover}");
    pipe.send(
        json!({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": 4},
            "contentChanges": [{"text": "local w = obj.\nreturn obj.data\n"}]
        }}),
    )
    .await;
    pipe.send(json!({"jsonrpc": "2.0", "id": 3, "method": "textDocument/completion", "params": {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 14}}})).await;
    let completion = pipe.until(|m| m["id"] == 3).await;
    let labels: Vec<&str> = completion["result"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["label"].as_str())
        .collect();
    assert!(labels.contains(&"canaryWeight"), "{labels:?}");
    // Unknown commands are errors, not crashes.
    pipe.send(json!({"jsonrpc": "2.0", "id": 4, "method": "workspace/executeCommand", "params": {"command": "nope", "arguments": []}})).await;
    let reply = pipe.until(|m| m["id"] == 4).await;
    assert!(reply.get("error").is_some());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_editing_surface_over_the_protocol() {
    let (dir, kind) = route_workspace("kl-editing");
    let script = kind.join("trafficRouting.lua");
    let uri = format!("file://{}", script.display());
    // A second workspace folder, added later, with a ConfigMap-embedded script.
    let other = dir.with_file_name(format!("kl-editing-cm-{}", std::process::id()));
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("cm.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kruise-rollout-configuration\ndata:\n  lua.traffic.routing.Gate.example.io: |\n    local function gate_weight(w) return w end\n    return obj.data\n").unwrap();
    let mut pipe = start();
    pipe.send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "capabilities": {"workspace": {"diagnostics": {"refreshSupport": true}}, "textDocument": {"diagnostic": {}}},
            "initializationOptions": {"pullDiagnostics": true},
            "workspaceFolders": [{"uri": format!("file://{}", dir.display()), "name": "w"}]}}),
    )
    .await;
    let init = pipe.until(|m| m["id"] == 1).await;
    let caps = &init["result"]["capabilities"];
    assert_eq!(caps["renameProvider"]["prepareProvider"], true);
    assert_eq!(caps["documentFormattingProvider"], true);
    assert_eq!(caps["documentRangeFormattingProvider"], true);
    assert_eq!(caps["semanticTokensProvider"]["full"]["delta"], true);
    assert_eq!(caps["signatureHelpProvider"]["triggerCharacters"][0], "(");
    assert_eq!(caps["workspaceSymbolProvider"], true);
    assert_eq!(caps["positionEncoding"], "utf-16");
    assert_eq!(caps["diagnosticProvider"]["workspaceDiagnostics"], true);
    assert_eq!(
        caps["workspace"]["workspaceFolders"]["changeNotifications"],
        true
    );
    pipe.send(json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        .await;
    let text =
        "local   total = obj.canaryWeight\nlocal s = string.format('%d', total)\nreturn obj.data\n";
    pipe.send(json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {"uri": uri, "languageId": "lua", "version": 1, "text": text}}})).await;
    let request = |id: u64, method: &str, params: Value| json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let at = |line: u32, character: u32| json!({"textDocument": {"uri": uri}, "position": {"line": line, "character": character}});
    // Rename: refused on `obj`, done on a local.
    pipe.send(request(2, "textDocument/prepareRename", at(0, 17)))
        .await;
    let refused = pipe.until(|m| m["id"] == 2).await;
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("obj"),
        "{refused}"
    );
    let mut params = at(1, 30);
    params["newName"] = json!("weight");
    pipe.send(request(3, "textDocument/rename", params)).await;
    let renamed = pipe.until(|m| m["id"] == 3).await;
    let edits = renamed["result"]["changes"][&uri].as_array().unwrap();
    assert_eq!(edits.len(), 2, "{renamed}");
    // Formatting: the extra spaces on line 1 only.
    pipe.send(request(
        4,
        "textDocument/formatting",
        json!({"textDocument": {"uri": uri}, "options": {"tabSize": 4, "insertSpaces": true}}),
    ))
    .await;
    let formatted = pipe.until(|m| m["id"] == 4).await;
    let edits = formatted["result"].as_array().unwrap();
    assert_eq!(edits.len(), 1, "{formatted}");
    assert_eq!(
        edits[0]["range"]["end"]["line"], 2,
        "`return` is left alone: {formatted}"
    );
    assert!(
        edits[0]["newText"]
            .as_str()
            .unwrap()
            .starts_with("local total = obj.canaryWeight\n"),
        "{formatted}"
    );
    // Semantic tokens, then a delta after an edit.
    pipe.send(request(
        5,
        "textDocument/semanticTokens/full",
        json!({"textDocument": {"uri": uri}}),
    ))
    .await;
    let full = pipe.until(|m| m["id"] == 5).await;
    let data = full["result"]["data"].as_array().unwrap();
    assert_eq!(data.len() % 5, 0);
    assert_eq!(&data[..2], &[json!(0), json!(8)], "`total` first: {full}");
    let result_id = full["result"]["resultId"].clone();
    pipe.send(json!({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": 2},
            "contentChanges": [{"range": {"start": {"line": 2, "character": 0}, "end": {"line": 2, "character": 0}}, "text": "local extra = total\n"}]}})).await;
    pipe.send(request(
        6,
        "textDocument/semanticTokens/full/delta",
        json!({"textDocument": {"uri": uri}, "previousResultId": result_id}),
    ))
    .await;
    let delta = pipe.until(|m| m["id"] == 6).await;
    assert_eq!(
        delta["result"]["edits"].as_array().unwrap().len(),
        1,
        "{delta}"
    );
    // Signature help inside `string.format(`.
    pipe.send(request(7, "textDocument/signatureHelp", at(1, 32)))
        .await;
    let help = pipe.until(|m| m["id"] == 7).await;
    assert!(
        help["result"]["signatures"][0]["label"]
            .as_str()
            .unwrap()
            .starts_with("string.format("),
        "{help}"
    );
    assert_eq!(help["result"]["activeParameter"], 1);
    // Pull diagnostics: what the publishes say; after a change the client is asked to pull.
    pipe.send(json!({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": 3},
            "contentChanges": [{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "text": "local unused = 1\n"}]}})).await;
    pipe.until(|m| m["method"] == "workspace/diagnostic/refresh")
        .await;
    // The analysis comes first and the run's summary after it: pull until both are in
    // (nothing is pushed to a client that pulls).
    let mut id = 100;
    let pulled = loop {
        id += 1;
        pipe.send(request(
            id,
            "textDocument/diagnostic",
            json!({"textDocument": {"uri": uri}}),
        ))
        .await;
        let pulled = pipe
            .until(|m| {
                assert_ne!(
                    m["method"], "textDocument/publishDiagnostics",
                    "pushed: {m}"
                );
                m["id"] == id
            })
            .await;
        let items = pulled["result"]["items"].as_array().unwrap();
        if items.iter().any(|d| d["code"] == "summary")
            && items.iter().any(|d| d["code"] == "KL007")
        {
            break pulled;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert_eq!(pulled["result"]["kind"], "full", "{pulled}");
    let items = pulled["result"]["items"].as_array().unwrap();
    assert!(items.iter().any(|d| d["code"] == "summary"), "{pulled}");
    pipe.send(request(
        9,
        "workspace/diagnostic",
        json!({"previousResultIds": []}),
    ))
    .await;
    let workspace = pipe.until(|m| m["id"] == 9).await;
    assert!(workspace["result"]["items"].is_array(), "{workspace}");
    // Workspace folders: a folder added later is searched by workspace symbols.
    pipe.send(json!({"jsonrpc": "2.0", "method": "workspace/didChangeWorkspaceFolders", "params": {"event": {
            "added": [{"uri": format!("file://{}", other.display()), "name": "cm"}], "removed": []}}})).await;
    pipe.send(request(10, "workspace/symbol", json!({"query": "gatew"})))
        .await;
    let symbols = pipe.until(|m| m["id"] == 10).await;
    let found = symbols["result"].as_array().unwrap();
    assert_eq!(found.len(), 1, "{symbols}");
    assert_eq!(found[0]["name"], "gate_weight");
    assert_eq!(
        found[0]["containerName"],
        "lua.traffic.routing.Gate.example.io"
    );
    assert_eq!(found[0]["location"]["range"]["start"]["line"], 6);
    pipe.send(request(11, "workspace/symbol", json!({"query": "extra"})))
        .await;
    let symbols = pipe.until(|m| m["id"] == 11).await;
    assert_eq!(
        symbols["result"][0]["location"]["uri"],
        uri.as_str(),
        "{symbols}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&other).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pull_diagnostics_are_answered_only_when_announced_and_then_not_pushed() {
    let (dir, kind) = route_workspace("kl-pull");
    let case_uri = format!("file://{}/testdata/c.yaml", kind.display());
    for pull in [false, true] {
        let mut pipe = start();
        pipe.send(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "capabilities": {"textDocument": {"diagnostic": {}}},
            "initializationOptions": {"pullDiagnostics": pull},
            "rootUri": format!("file://{}", dir.display())}}),
        )
        .await;
        let init = pipe.until(|m| m["id"] == 1).await;
        assert_eq!(
            init["result"]["capabilities"]
                .get("diagnosticProvider")
                .is_some(),
            pull,
            "{init}"
        );
        pipe.send(json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
            .await;
        // `runAll` answers once the first run's lists are computed (and pushed, if pushing).
        let run_all = json!({"jsonrpc": "2.0", "id": 2, "method": "workspace/executeCommand", "params": {"command": super::commands::RUN_ALL, "arguments": []}});
        pipe.send(run_all).await;
        let pushed = std::sync::Mutex::new(false);
        pipe.until(|m| {
            if m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == case_uri {
                *pushed.lock().unwrap() = true;
            }
            m["id"] == 2
        })
        .await;
        assert_eq!(
            *pushed.lock().unwrap(),
            !pull,
            "pushed to a client that pulls, or not pushed at all (pull: {pull})"
        );
        pipe.send(json!({"jsonrpc": "2.0", "id": 3, "method": "textDocument/diagnostic", "params": {"textDocument": {"uri": case_uri}}})).await;
        let answer = pipe.until(|m| m["id"] == 3).await;
        if pull {
            assert!(
                !answer["result"]["items"].as_array().unwrap().is_empty(),
                "{answer}"
            );
        } else {
            assert_eq!(answer["error"]["code"], -32601, "{answer}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The script's diagnostics of each publish for `uri` until `done` holds for one of them.
async fn script_publishes(
    pipe: &mut Pipe,
    uri: &str,
    done: impl Fn(&[Value]) -> bool,
) -> Vec<Vec<Value>> {
    let mut seen = Vec::new();
    loop {
        let m = pipe
            .until(|m| {
                m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == uri
            })
            .await;
        let list = m["params"]["diagnostics"].as_array().unwrap().clone();
        let finished = done(&list);
        seen.push(list);
        if finished {
            return seen;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_of_an_older_text_are_marked_outdated_while_a_run_is_pending() {
    use crate::lsp::diagnostic_store::OUTDATED;
    let (dir, kind) = route_workspace("kl-stale");
    let script = kind.join("trafficRouting.lua");
    let uri = format!("file://{}", script.display());
    let mut pipe = start();
    pipe.send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "capabilities": {}, "rootUri": format!("file://{}", dir.display()),
            "initializationOptions": {"timeoutMs": 1500, "debounceMs": 0}}}),
    )
    .await;
    pipe.until(|m| m["id"] == 1).await;
    pipe.send(json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        .await;
    pipe.send(json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {"uri": uri, "languageId": "lua", "version": 1, "text": crate::lsp::runs::tests::SCRIPT}}})).await;
    let is_summary = |d: &Value| d["code"] == "summary";
    let current = |d: &Value| !d["message"].as_str().unwrap().starts_with(OUTDATED);
    script_publishes(&mut pipe, &uri, |l| {
        l.iter().any(|d| is_summary(d) && current(d))
    })
    .await;
    // A runaway script: until its run ends, the old summary may only appear marked.
    let looping = "local unused = 1\nwhile true do end\nreturn obj.data\n";
    pipe.send(
        json!({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": looping}]}}),
    )
    .await;
    let is_timeout = |d: &Value| d["code"] == "timeout";
    let seen = script_publishes(&mut pipe, &uri, |l| {
        l.iter().any(|d| is_timeout(d) && current(d))
    })
    .await;
    for list in &seen {
        assert!(
            !list
                .iter()
                .any(|d| is_summary(d) && current(d) && !list.iter().any(is_timeout)),
            "an older run's summary re-published as current: {list:?}"
        );
    }
    // Another edit of the runaway script: its timeout stays, marked, until a run says more.
    pipe.send(json!({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": 3}, "contentChanges": [{"text": format!("-- x\n{looping}")}]}}))
            .await;
    let seen = script_publishes(&mut pipe, &uri, |l| {
        l.iter().any(|d| is_timeout(d) && current(d))
    })
    .await;
    for list in &seen[..seen.len() - 1] {
        assert!(
            list.iter().any(|d| is_timeout(d) && !current(d)),
            "the timeout is kept, marked outdated: {list:?}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renamed_kind_and_testdata_folders_are_followed() {
    // The case fails (step 2), so it always has diagnostics while it is run.
    let (dir, kind) = route_workspace("kl-rename");
    let case_uri = |kind: &str, testdata: &str| {
        format!(
            "file://{}/example.io/{kind}/{testdata}/c.yaml",
            dir.display()
        )
    };
    let mut pipe = start();
    pipe.send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "capabilities": {}, "rootUri": format!("file://{}", dir.display())}}),
    )
    .await;
    pipe.until(|m| m["id"] == 1).await;
    pipe.send(json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        .await;
    let publish_for = |uri: String, empty: bool| {
        move |m: &Value| {
            m["method"] == "textDocument/publishDiagnostics"
                && m["params"]["uri"] == uri
                && m["params"]["diagnostics"].as_array().unwrap().is_empty() == empty
        }
    };
    pipe.until(publish_for(case_uri("Route", "testdata"), false))
        .await;
    // The watcher is started after the first run is scheduled; give it a moment.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let moved = dir.join("example.io/Moved");
    std::fs::rename(&kind, &moved).unwrap();
    pipe.until(publish_for(case_uri("Route", "testdata"), true))
        .await;
    pipe.until(publish_for(case_uri("Moved", "testdata"), false))
        .await;
    std::fs::rename(moved.join("testdata"), moved.join("cases")).unwrap();
    pipe.until(publish_for(case_uri("Moved", "testdata"), true))
        .await;
    std::fs::rename(moved.join("cases"), moved.join("testdata")).unwrap();
    pipe.until(publish_for(case_uri("Moved", "testdata"), false))
        .await;
    std::fs::rename(&moved, &kind).unwrap();
    pipe.until(publish_for(case_uri("Moved", "testdata"), true))
        .await;
    pipe.until(publish_for(case_uri("Route", "testdata"), false))
        .await;
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_script_does_not_wait_behind_runaway_scripts() {
    let dir = std::env::temp_dir().join(format!("kl-lanes-{}", std::process::id()));
    let write_script = |kind: &str, script: &str| {
        let kind = dir.join("example.io").join(kind);
        std::fs::create_dir_all(kind.join("testdata")).unwrap();
        std::fs::write(kind.join("trafficRouting.lua"), script).unwrap();
        std::fs::write(kind.join("testdata/c.yaml"), crate::lsp::runs::tests::CASE).unwrap();
        kind.join("trafficRouting.lua")
    };
    for i in 0..6 {
        // One step of two runs into the timeout: each run ends with its first timeout.
        write_script(
            &format!("Loop{i}"),
            "if obj.canaryWeight == 20 then while true do end end\nreturn obj.data\n",
        );
    }
    // Sorted last, so the first run of the workspace reaches it last.
    let healthy = write_script("Zzz", crate::lsp::runs::tests::SCRIPT);
    let uri = format!("file://{}", healthy.display());
    let mut pipe = start();
    pipe.send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "capabilities": {}, "rootUri": format!("file://{}", dir.display()),
            "initializationOptions": {"timeoutMs": 2000}}}),
    )
    .await;
    pipe.until(|m| m["id"] == 1).await;
    pipe.send(json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        .await;
    pipe.send(json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {"uri": uri, "languageId": "lua", "version": 1, "text": crate::lsp::runs::tests::SCRIPT}}})).await;
    let first = pipe
        .until(|m| {
            let diagnostics = m["params"]["diagnostics"].as_array();
            let is_timeout = diagnostics.is_some_and(|l| l.iter().any(|d| d["code"] == "timeout"));
            let is_verdict = m["params"]["uri"] == uri
                && diagnostics.is_some_and(|l| l.iter().any(|d| d["code"] == "summary"));
            m["method"] == "textDocument/publishDiagnostics" && (is_timeout || is_verdict)
        })
        .await;
    assert_eq!(
        first["params"]["uri"], uri,
        "the open script's verdict came after a runaway script's timeout: {first}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_script_does_not_wait_behind_runaway_scripts() {
    let dir = std::env::temp_dir().join(format!("kl-background-{}", std::process::id()));
    let write_script = |kind: &str, script: &str| {
        let kind = dir.join("example.io").join(kind);
        std::fs::create_dir_all(kind.join("testdata")).unwrap();
        std::fs::write(kind.join("testdata/c.yaml"), crate::lsp::runs::tests::CASE).unwrap();
        std::fs::write(kind.join("trafficRouting.lua"), script).unwrap();
        format!("file://{}/testdata/c.yaml", kind.display())
    };
    for i in 0..8 {
        write_script(&format!("Loop{i}"), "while true do end\n");
    }
    let mut pipe = start();
    pipe.send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "capabilities": {}, "rootUri": format!("file://{}", dir.display()),
            "initializationOptions": {"timeoutMs": 1500, "debounceMs": 0}}}),
    )
    .await;
    pipe.until(|m| m["id"] == 1).await;
    pipe.send(json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        .await;
    // A script that appears while the looping ones are queued (nobody has anything open:
    // every run is a background run), announced by the client so that its run is
    // requested after theirs. Its case fails at step 2, which gives a diagnostic.
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    let healthy = write_script("Healthy", crate::lsp::runs::tests::SCRIPT);
    let script_uri = healthy.replace("testdata/c.yaml", "trafficRouting.lua");
    pipe.send(json!({"jsonrpc": "2.0", "method": "workspace/didChangeWatchedFiles", "params": {"changes": [{"uri": script_uri, "type": 1}]}}))
            .await;
    let first = pipe
        .until(|m| {
            let diagnostics = m["params"]["diagnostics"].as_array();
            m["method"] == "textDocument/publishDiagnostics"
                && (diagnostics.is_some_and(|l| l.iter().any(|d| d["code"] == "timeout"))
                    || (m["params"]["uri"] == healthy
                        && diagnostics.is_some_and(|l| !l.is_empty())))
        })
        .await;
    assert_eq!(
        first["params"]["uri"], healthy,
        "the healthy script's verdict came after a runaway script's timeout: {first}"
    );
    // The looping scripts still get their verdict, from a run with the full timeout.
    let timeout = pipe
        .until(|m| {
            m["method"] == "textDocument/publishDiagnostics"
                && m["params"]["diagnostics"]
                    .as_array()
                    .is_some_and(|l| l.iter().any(|d| d["code"] == "timeout"))
        })
        .await;
    assert!(timeout["params"]["uri"].as_str().unwrap().contains("/Loop"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unchanged_diagnostics_are_not_published_again() {
    let (dir, kind) = route_workspace("kl-republish");
    let mut pipe = start();
    pipe.send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "capabilities": {}, "rootUri": format!("file://{}", dir.display())}}),
    )
    .await;
    pipe.until(|m| m["id"] == 1).await;
    pipe.send(json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        .await;
    // After the first run has published, `runAll` answers once its runs have published.
    let run_all = |id: u64| json!({"jsonrpc": "2.0", "id": id, "method": "workspace/executeCommand", "params": {"command": super::commands::RUN_ALL, "arguments": []}});
    let case_uri = format!("file://{}/testdata/c.yaml", kind.display());
    pipe.until(|m| {
        m["method"] == "textDocument/publishDiagnostics"
            && m["params"]["uri"] == case_uri
            && !m["params"]["diagnostics"].as_array().unwrap().is_empty()
    })
    .await;
    pipe.send(run_all(2)).await;
    pipe.until(|m| m["id"] == 2).await;
    let publishes = std::sync::Mutex::new(Vec::new());
    pipe.send(run_all(3)).await;
    pipe.until(|m| {
        if m["method"] == "textDocument/publishDiagnostics" {
            publishes.lock().unwrap().push(m.clone());
        }
        m["id"] == 3
    })
    .await;
    let publishes = publishes.into_inner().unwrap();
    assert!(
        publishes.is_empty(),
        "identical lists sent again: {publishes:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
