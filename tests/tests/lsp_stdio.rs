//! `kruise-lua lsp` as a process: malformed JSON-RPC is answered and logged on stderr without
//! ending the server, and the exit status follows the LSP spec (`exit` without `shutdown` is 1).

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
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
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Server {
            child,
            stdin,
            stdout,
        }
    }

    fn raw(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).unwrap();
        self.stdin.flush().unwrap();
    }

    fn send(&mut self, message: Value) {
        let body = message.to_string();
        self.raw(format!("Content-Length: {}\r\n\r\n{body}", body.len()).as_bytes());
    }

    /// The next response (server notifications are skipped).
    fn response(&mut self) -> Value {
        loop {
            let mut length = 0;
            loop {
                let mut line = String::new();
                assert!(
                    self.stdout.read_line(&mut line).unwrap() > 0,
                    "server ended"
                );
                let line = line.trim_end();
                if line.is_empty() {
                    break;
                }
                if let Some(n) = line.strip_prefix("Content-Length: ") {
                    length = n.parse().unwrap();
                }
            }
            let mut body = vec![0; length];
            self.stdout.read_exact(&mut body).unwrap();
            let message: Value = serde_json::from_slice(&body).unwrap();
            if message.get("method").is_none() {
                return message;
            }
        }
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
        server.raw(format!("Content-Length: {}\r\n\r\n{body}", body.len()).as_bytes());
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
