//! `kruise-lua lsp` as a process: malformed JSON-RPC is answered and logged on stderr without
//! ending the server, and the exit status follows the LSP spec (`exit` without `shutdown` is 1).

mod common;

use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use serde_json::{Value, json};

/// Waiting longer than this for an answer means the server stopped answering.
const HANG: Duration = Duration::from_secs(60);

struct Server {
    child: Child,
    stdin: ChildStdin,
    messages: Receiver<Value>,
}

impl Server {
    fn start() -> Server {
        let mut child = Command::new(common::binary())
            .arg("lsp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start kruise-lua lsp");
        let stdin = child.stdin.take().unwrap();
        let messages = common::frames_of(BufReader::new(child.stdout.take().unwrap()));
        Server {
            child,
            stdin,
            messages,
        }
    }

    fn raw(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).unwrap();
        self.stdin.flush().unwrap();
    }

    fn send(&mut self, message: Value) {
        self.send_body(&message.to_string());
    }

    fn send_body(&mut self, body: &str) {
        self.raw(format!("Content-Length: {}\r\n\r\n{body}", body.len()).as_bytes());
    }

    /// The next response (server notifications and requests are skipped).
    fn response(&mut self) -> Value {
        self.response_and_notifications().0
    }

    /// The next response, and the server's notifications and requests before it.
    fn response_and_notifications(&mut self) -> (Value, Vec<Value>) {
        let mut notifications = Vec::new();
        loop {
            let message = self
                .messages
                .recv_timeout(HANG)
                .unwrap_or_else(|e| panic!("no answer from the server ({e})"));
            if message.get("method").is_none() {
                return (message, notifications);
            }
            notifications.push(message);
        }
    }

    /// The server still answers a valid request, with `id`.
    fn still_serves(&mut self, id: i64) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "workspace/symbol", "params": {"query": "zz"}}));
        let answer = self.response();
        assert_eq!(answer["id"], id, "{answer}");
        assert!(answer["result"].is_array(), "{answer}");
    }

    fn initialize(&mut self) {
        self.send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"capabilities": {}}}));
        assert_eq!(self.response()["id"], 0);
        self.send(json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}));
    }

    /// Exit status and stderr once the server ended.
    fn finish(self) -> (i32, String) {
        drop(self.stdin);
        let output = self.child.wait_with_output().unwrap();
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }
}

#[test]
fn malformed_messages_are_answered_and_logged_and_the_server_goes_on() {
    let mut server = Server::start();
    server.initialize();
    let malformed = [
        "{bad",
        "{}",
        "null",
        "[]",
        r#"{"jsonrpc":"1.0","id":5,"method":"shutdown"}"#,
        r#"{"jsonrpc":"2.0","id":{"a":1},"method":"x/y"}"#,
    ];
    let codes = [-32700, -32600, -32600, -32600, -32600, -32600];
    for (body, code) in malformed.iter().zip(codes) {
        server.send_body(body);
        let answer = server.response();
        assert_eq!(answer["error"]["code"], code, "{answer}");
    }
    server.send(json!({"jsonrpc": "2.0", "id": 9, "method": "shutdown"}));
    assert_eq!(server.response()["id"], 9);
    server.send(json!({"jsonrpc": "2.0", "method": "exit"}));
    let (status, stderr) = server.finish();
    assert_eq!(status, 0, "{stderr}");
    assert_eq!(stderr.matches("malformed message").count(), 6, "{stderr}");
}

#[test]
fn exit_without_shutdown_exits_one() {
    let mut server = Server::start();
    server.initialize();
    server.send(json!({"jsonrpc": "2.0", "method": "exit"}));
    let (status, stderr) = server.finish();
    assert_eq!(status, 1, "{stderr}");
}

/// Ends the session as a client should, and checks the server saw it through.
fn shut_down(mut server: Server) {
    server.send(json!({"jsonrpc": "2.0", "id": "bye", "method": "shutdown"}));
    assert_eq!(server.response()["id"], "bye");
    server.send(json!({"jsonrpc": "2.0", "method": "exit"}));
    let (status, stderr) = server.finish();
    assert_eq!(status, 0, "{stderr}");
}

/// tower-lsp-server's decoder fails on a repeated member ("duplicate field") and its read loop
/// then ends: such a message is refused before it, naming the key, and serving goes on.
#[test]
fn a_repeated_key_is_refused_and_the_server_goes_on() {
    let mut server = Server::start();
    server.initialize();
    let repeated = [
        (
            r#"{"jsonrpc":"2.0","id":505,"id":506,"method":"workspace/symbol","params":{"query":""}}"#,
            "id",
            Value::Null,
        ),
        (
            r#"{"jsonrpc":"2.0","id":7,"method":"workspace/symbol","method":"workspace/symbol","params":{"query":""}}"#,
            "method",
            json!(7),
        ),
        (
            r#"{"jsonrpc":"2.0","jsonrpc":"2.0","id":8,"method":"workspace/symbol","params":{"query":""}}"#,
            "jsonrpc",
            json!(8),
        ),
        (
            r#"{"jsonrpc":"2.0","id":9,"method":"workspace/symbol","params":{"query":""},"params":{"query":""}}"#,
            "params",
            json!(9),
        ),
        (
            r#"{"jsonrpc":"2.0","method":"textDocument/didSave","method":"x"}"#,
            "method",
            Value::Null,
        ),
        (
            r#"{"jsonrpc":"2.0","id":3,"result":null,"result":null}"#,
            "result",
            Value::Null,
        ),
        (
            r#"{"jsonrpc":"2.0","id":3,"error":{"code":1,"code":2,"message":"m"}}"#,
            "error.code",
            Value::Null,
        ),
    ];
    for (i, (body, key, id)) in repeated.into_iter().enumerate() {
        server.send_body(body);
        let answer = server.response();
        assert_eq!(answer["error"]["code"], -32600, "{body}: {answer}");
        assert_eq!(answer["id"], id, "{body}: {answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("`{key}` is repeated")),
            "{message}"
        );
        server.still_serves(100 + i as i64);
    }
    // Inside `params` the last of a repeated key counts, as the service reads it.
    server.send_body(r#"{"jsonrpc":"2.0","id":20,"method":"workspace/symbol","params":{"query":"a","query":""}}"#);
    let answer = server.response();
    assert!(answer["result"].is_array(), "{answer}");
    shut_down(server);
}

/// `exit` is a notification: sent with an id it is refused as other notifications sent as
/// requests are, and the server goes on (tower-lsp-server stopped reading at it, unanswered).
#[test]
fn exit_sent_as_a_request_is_refused_and_the_server_goes_on() {
    let mut server = Server::start();
    server.initialize();
    server.send(json!({"jsonrpc": "2.0", "id": 2, "method": "exit"}));
    let answer = server.response();
    assert_eq!(answer["id"], 2, "{answer}");
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    server.still_serves(3);
    // So is another notification sent as a request.
    server.send(json!({"jsonrpc": "2.0", "id": 4, "method": "initialized", "params": {}}));
    assert_eq!(server.response()["error"]["code"], -32600);
    shut_down(server);
}

/// The LSP spec: a `$/` request the server does not implement gets MethodNotFound
/// (tower-lsp-server drops that answer for every `$/` method, so it is given before it).
#[test]
fn dollar_requests_get_method_not_found() {
    let mut server = Server::start();
    server.initialize();
    for (id, method) in ["$/unknown", "$/progress", "$/setTrace", "$/logTrace"]
        .into_iter()
        .enumerate()
    {
        server.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {}}));
        let answer = server.response();
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["error"]["code"], -32601, "{method}: {answer}");
    }
    // `$/cancelRequest` is served: a notification, refused with an id as the others are.
    server.send(
        json!({"jsonrpc": "2.0", "id": 10, "method": "$/cancelRequest", "params": {"id": 1}}),
    );
    assert_eq!(server.response()["error"]["code"], -32600);
    server.still_serves(11);
    shut_down(server);
}

/// A folder given as a document, opened and closed, is not taken for a folder moved into the
/// workspace: the server does not walk it (`file:///` walked the whole disk, and `runAll`
/// waited for runs of every script found there). Here the folder is outside the workspace and
/// holds a script with a case: nothing of it is run or published.
#[test]
fn a_folder_opened_and_closed_as_a_document_walks_nothing() {
    let workspace = common::scratch("folder-doc-workspace");
    let outside = common::scratch("folder-doc-outside");
    let script = outside.join("x.io/Route");
    std::fs::create_dir_all(script.join("testdata")).unwrap();
    std::fs::write(script.join("trafficRouting.lua"), "return obj.data\n").unwrap();
    std::fs::write(
        script.join("testdata/c.yaml"),
        "rollout:\n  spec:\n    strategy:\n      canary:\n        steps:\n        - traffic: 20%\n\
         original:\n  spec: {a: 1}\nexpected:\n- spec: {a: 2}\n",
    )
    .unwrap();
    let folder = format!("file://{}", outside.display());
    let mut server = Server::start();
    server.send(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "capabilities": {}, "rootUri": format!("file://{}", workspace.display())}}),
    );
    assert_eq!(server.response()["id"], 0);
    server.send(json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}));
    let document = json!({"uri": folder, "languageId": "lua", "version": 1, "text": ""});
    server.send(json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": document}}));
    server.send(json!({"jsonrpc": "2.0", "method": "textDocument/didClose", "params": {"textDocument": {"uri": folder}}}));
    server.send(json!({"jsonrpc": "2.0", "id": 1, "method": "workspace/executeCommand", "params": {"command": "kruise-lua.runAll", "arguments": []}}));
    let (answer, notifications) = server.response_and_notifications();
    assert_eq!(answer["id"], 1, "{answer}");
    let outside_text = outside.display().to_string();
    let about_outside: Vec<&Value> = notifications
        .iter()
        .filter(|n| {
            n["params"]["uri"]
                .as_str()
                .is_some_and(|uri| uri.contains(&outside_text) && uri != folder)
        })
        .collect();
    assert!(about_outside.is_empty(), "{about_outside:?}");
    server.still_serves(2);
    shut_down(server);
}

/// A removed workspace folder's scripts leave the workspace: `runAll` no longer runs or counts
/// them (they were still counted, their results kept, after `didChangeWorkspaceFolders`).
#[test]
fn a_removed_workspace_folder_is_no_longer_run_or_counted() {
    let folders: Vec<std::path::PathBuf> = ["removed-folder-a", "removed-folder-b"]
        .iter()
        .map(|name| {
            let root = common::scratch(name);
            let script = root.join("x.io/Route");
            std::fs::create_dir_all(script.join("testdata")).unwrap();
            std::fs::write(script.join("trafficRouting.lua"), "return obj.data\n").unwrap();
            std::fs::write(
                script.join("testdata/c.yaml"),
                "rollout:\n  spec:\n    strategy:\n      canary:\n        steps:\n        - traffic: 20%\n\
                 original:\n  spec: {a: 1}\nexpected:\n- spec: {a: 1}\n",
            )
            .unwrap();
            root
        })
        .collect();
    let folder = |root: &std::path::PathBuf| json!({"uri": format!("file://{}", root.display()), "name": root.display().to_string()});
    let mut server = Server::start();
    server.send(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "capabilities": {"workspace": {"workspaceFolders": true}},
        "workspaceFolders": [folder(&folders[0]), folder(&folders[1])]}}),
    );
    assert_eq!(server.response()["id"], 0);
    server.send(json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}));
    let run_all = |server: &mut Server, id: i64| -> Value {
        server.send(json!({"jsonrpc": "2.0", "id": id, "method": "workspace/executeCommand", "params": {"command": "kruise-lua.runAll", "arguments": []}}));
        loop {
            let answer = server.response();
            if answer["id"] == id {
                return answer["result"].clone();
            }
        }
    };
    let both = run_all(&mut server, 1);
    assert_eq!(
        (both["scripts"].clone(), both["cases"].clone()),
        (json!(2), json!(2)),
        "{both}"
    );
    server.send(
        json!({"jsonrpc": "2.0", "method": "workspace/didChangeWorkspaceFolders", "params": {
        "event": {"added": [], "removed": [folder(&folders[0])]}}}),
    );
    let one = run_all(&mut server, 2);
    assert_eq!(
        (one["scripts"].clone(), one["cases"].clone()),
        (json!(1), json!(1)),
        "{one}"
    );
    server.still_serves(3);
    shut_down(server);
}

/// Per file URI, the last diagnostics the server published.
type Published = std::collections::HashMap<String, Vec<Value>>;

/// Keeps a published list; answers a request from the server with null.
fn take_notification(server: &mut Server, published: &mut Published, message: &Value) {
    if message["method"] == "textDocument/publishDiagnostics" {
        let params = &message["params"];
        let list = params["diagnostics"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        published.insert(params["uri"].as_str().unwrap().to_string(), list);
    } else if message.get("id").is_some() {
        let id = message["id"].clone();
        server.send(json!({"jsonrpc": "2.0", "id": id, "result": null}));
    }
}

/// Reads messages until none came for a second.
fn settle(server: &mut Server, published: &mut Published) {
    while let Ok(message) = server.messages.recv_timeout(Duration::from_secs(1)) {
        if message.get("method").is_some() {
            take_notification(server, published, &message);
        }
    }
}

/// Request `id`'s result, keeping what is published meanwhile.
fn call(
    server: &mut Server,
    published: &mut Published,
    id: i64,
    method: &str,
    params: Value,
) -> Value {
    server.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    loop {
        let (answer, notifications) = server.response_and_notifications();
        for message in &notifications {
            take_notification(server, published, message);
        }
        if answer["id"] == id {
            return answer["result"].clone();
        }
    }
}

fn file_uri(path: &std::path::Path) -> String {
    format!("file://{}", path.display())
}

/// The titles of a file's code lenses.
fn lens_titles(
    server: &mut Server,
    published: &mut Published,
    id: i64,
    path: &std::path::Path,
) -> Vec<String> {
    let params = json!({"textDocument": {"uri": file_uri(path)}});
    call(server, published, id, "textDocument/codeLens", params)
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|lens| lens["command"]["title"].as_str().map(String::from))
        .collect()
}

/// A tree's bundled ingress-class script `demo` (its annotation says `bundled`) and one case
/// whose expected annotation is a ConfigMap script's (`configmap`): the script and the case.
fn demo_ingress_tree(tree: &Path) -> (PathBuf, PathBuf) {
    let ingress = tree.join("trafficrouting_ingress");
    std::fs::create_dir_all(ingress.join("testdata/demo")).unwrap();
    let bundled = ingress.join("demo.lua");
    std::fs::write(&bundled, "return { [\"x/w\"] = \"bundled\" }\n").unwrap();
    let case = ingress.join("testdata/demo/c.yaml");
    std::fs::write(
        &case,
        "rollout:\n  spec:\n    strategy:\n      canary:\n        trafficRoutings:\n        - service: shop\n        steps:\n        - traffic: 30%\n\
         original:\n  apiVersion: networking.k8s.io/v1\n  kind: Ingress\n  metadata:\n    name: shop\n\
         expected:\n- apiVersion: networking.k8s.io/v1\n  kind: Ingress\n  metadata:\n    name: shop\n    annotations:\n      x/w: configmap\n",
    )
    .unwrap();
    (bundled, case)
}

/// Two manifests of the workspace with a script for the same provider (a dev and a prod
/// variant; an ingress class with a bundled script, a custom provider without one): Kruise
/// reads one ConfigMap, so the editor takes the first by path, as `check` takes the first
/// given (the walk order): it runs the cases, the other shows `skipped` naming it (diagnostic
/// and lens), the bundled script's `skipped` names it, and runAll counts as `check` does
/// (defect: both ConfigMap scripts ran the cases, where `check` ran only the last given).
#[test]
fn of_two_manifests_with_a_script_for_one_provider_the_editor_takes_the_first_as_check_does() {
    let root = common::scratch("two-configmaps");
    let tree = root.join("lua_configuration");
    let (bundled, ingress_case) = demo_ingress_tree(&tree);
    let split_cases = tree.join("example.io/Split/testdata");
    std::fs::create_dir_all(&split_cases).unwrap();
    let weighted = common::fixtures().join("tree/lua_configuration/example.io/Weighted");
    std::fs::copy(
        weighted.join("testdata/traffic_routing.yaml"),
        split_cases.join("traffic_routing.yaml"),
    )
    .unwrap();
    let split = std::fs::read_to_string(weighted.join("trafficRouting.lua")).unwrap();
    let indented: String = split.lines().map(|l| format!("    {l}\n")).collect();
    let manifest = |ingress_value: &str, split_script: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kruise-rollout-configuration\ndata:\n  lua.traffic.routing.ingress.demo: |\n    return {{ [\"x/w\"] = \"{ingress_value}\" }}\n  lua.traffic.routing.Split.example.io: |\n{split_script}"
        )
    };
    let (a, b) = (root.join("a-config.yaml"), root.join("b-config.yaml"));
    std::fs::write(&a, manifest("configmap", &indented)).unwrap();
    std::fs::write(&b, manifest("b", "    return obj.data\n")).unwrap();

    // What `check` says, the manifests given in walk order.
    let check = common::run_in(
        &root,
        &[
            "check",
            "lua_configuration",
            "a-config.yaml",
            "b-config.yaml",
        ],
    );
    assert_eq!(check.code, 0, "{check:?}");
    assert!(
        check
            .stdout
            .contains("2 passed, 0 failed, 0 errors, 3 scripts skipped"),
        "{check:?}"
    );

    let mut server = Server::start();
    let mut published = Published::new();
    let params = json!({"capabilities": {}, "rootUri": file_uri(&root)});
    call(&mut server, &mut published, 0, "initialize", params);
    server.send(json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}));
    let run_all = json!({"command": "kruise-lua.runAll", "arguments": []});
    let counts = call(
        &mut server,
        &mut published,
        1,
        "workspace/executeCommand",
        run_all,
    );
    assert_eq!(
        counts,
        json!({"scripts": 2, "cases": 2, "passed": 2, "steps": 2, "stepsPassed": 2, "skipped": 3}),
        "as check counts: 2 passed, 3 scripts skipped"
    );
    settle(&mut server, &mut published);
    let messages = |published: &Published, path: &std::path::Path| -> Vec<String> {
        let mut messages: Vec<String> = published[&file_uri(path)]
            .iter()
            .filter(|d| d["code"] == "skipped")
            .map(|d| d["message"].as_str().unwrap().to_string())
            .collect();
        messages.sort();
        messages
    };
    let taken = |provider: &str, key: &str| {
        format!(
            "skipped: another ConfigMap script for {provider} ({}#{key}) is taken: Kruise reads one kruise-rollout-configuration ConfigMap",
            a.display()
        )
    };
    assert_eq!(
        messages(&published, &b),
        vec![
            taken("example.io/Split", "lua.traffic.routing.Split.example.io"),
            taken("ingress class `demo`", "lua.traffic.routing.ingress.demo"),
        ]
    );
    assert_eq!(messages(&published, &a), Vec::<String>::new());
    assert_eq!(
        messages(&published, &bundled),
        vec![format!(
            "skipped: the ConfigMap script for ingress class `demo` ({}#lua.traffic.routing.ingress.demo) replaces it",
            a.display()
        )]
    );
    assert_eq!(
        lens_titles(&mut server, &mut published, 2, &b),
        vec!["skipped: Kruise never reads this script"; 2]
    );
    assert_eq!(
        lens_titles(&mut server, &mut published, 3, &a),
        vec!["✓ 1/1 cases pass"; 2]
    );
    let on_case = lens_titles(&mut server, &mut published, 4, &ingress_case);
    assert_eq!(on_case[0], "✓ all 1 step(s) pass", "a's verdict");
    server.still_serves(99);
    shut_down(server);
}

/// A bundled ingress-class script that a ConfigMap script of the workspace replaces is never
/// read by Kruise: the editor runs the case with the ConfigMap's script and shows its verdict,
/// the bundled script gets `skipped` and runAll counts as `check <tree> <manifest>` does
/// (defect: the bundled script ran the case too, and the case could show its verdict). With
/// the manifest's script gone, the bundled script runs the case again, as `check <tree>` does.
#[test]
fn a_bundled_ingress_script_a_configmap_replaces_is_skipped_as_check_skips_it() {
    let root = common::scratch("ingress-configmap");
    let (bundled, case) = demo_ingress_tree(&root.join("lua_configuration"));
    let manifest = root.join("cm.yaml");
    let configmap = |data: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kruise-rollout-configuration\ndata:{data}"
        )
    };
    let with_script = configmap(
        "\n  lua.traffic.routing.ingress.demo: |\n    return { [\"x/w\"] = \"configmap\" }\n",
    );
    std::fs::write(&manifest, with_script).unwrap();

    // What `check` says, with the manifest and without.
    let check = common::run_in(&root, &["check", "lua_configuration", "cm.yaml"]);
    assert_eq!(check.code, 0, "{check:?}");
    assert!(
        check
            .stdout
            .contains("1 passed, 0 failed, 0 errors, 1 script skipped"),
        "{check:?}"
    );
    let alone = common::run_in(&root, &["check", "lua_configuration"]);
    assert!(alone.stdout.contains("0 passed, 1 failed"), "{alone:?}");

    let mut server = Server::start();
    let mut published = Published::new();
    let params = json!({"capabilities": {}, "rootUri": file_uri(&root)});
    call(&mut server, &mut published, 0, "initialize", params);
    server.send(json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}));
    // Opened at once, as an editor restoring its tabs does: before the workspace is walked.
    let text = std::fs::read_to_string(&bundled).unwrap();
    let document =
        json!({"uri": file_uri(&bundled), "languageId": "lua", "version": 1, "text": text});
    server.send(json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": document}}));
    let run_all = json!({"command": "kruise-lua.runAll", "arguments": []});
    let counts = call(
        &mut server,
        &mut published,
        1,
        "workspace/executeCommand",
        run_all.clone(),
    );
    assert_eq!(
        counts,
        json!({"scripts": 1, "cases": 1, "passed": 1, "steps": 1, "stepsPassed": 1, "skipped": 1}),
        "as check counts: 1 passed, 1 script skipped"
    );
    settle(&mut server, &mut published);
    let on_bundled: Vec<(&str, &str)> = published[&file_uri(&bundled)]
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap_or_default(),
                d["message"].as_str().unwrap(),
            )
        })
        .collect();
    let reason = format!(
        "skipped: the ConfigMap script for ingress class `demo` ({}#lua.traffic.routing.ingress.demo) replaces it",
        manifest.display()
    );
    assert_eq!(on_bundled, vec![("skipped", reason.as_str())]);
    let on_case = lens_titles(&mut server, &mut published, 2, &case);
    assert_eq!(
        on_case[0], "✓ all 1 step(s) pass",
        "the ConfigMap script's verdict"
    );
    let on_script = lens_titles(&mut server, &mut published, 3, &bundled);
    assert_eq!(on_script, vec!["skipped: Kruise never reads this script"]);

    // The manifest's script removed (in the editor): the bundled script is read again.
    let document = json!({"uri": file_uri(&manifest), "languageId": "yaml", "version": 1, "text": configmap(" {}\n")});
    server.send(json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": document}}));
    settle(&mut server, &mut published);
    let counts = call(
        &mut server,
        &mut published,
        4,
        "workspace/executeCommand",
        run_all,
    );
    assert_eq!(
        counts,
        json!({"scripts": 1, "cases": 1, "passed": 0, "steps": 1, "stepsPassed": 0, "skipped": 0}),
        "as check counts the tree alone"
    );
    let on_case = lens_titles(&mut server, &mut published, 5, &case);
    assert!(on_case[0].starts_with('✗'), "{on_case:?}");
    server.still_serves(99);
    shut_down(server);
}
