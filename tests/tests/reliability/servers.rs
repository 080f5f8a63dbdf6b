//! The language server and the debug adapter as hostile clients drive them (issue 22): huge
//! messages, oversized frames that lie about their length, setVariable and hit conditions,
//! pathological but valid Lua. Each runs the binary under `prlimit` and `timeout` and ends by
//! checking that the server still answers a valid request.

use std::io::{BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use serde_json::{Value, json};

use super::bounded_command;

/// Waiting longer than this for an answer means the server hangs (or was killed).
const HANG: Duration = Duration::from_secs(60);

/// `kruise-lua lsp` or `kruise-lua dap` under the suite's bounds, spoken to over its stdio.
pub struct Server {
    child: Child,
    stdin: ChildStdin,
    messages: Receiver<Value>,
    seen: Vec<Value>,
}

impl Server {
    pub fn start(dir: &Path, args: &[&str]) -> Server {
        let mut child = bounded_command(dir, args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the server");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let messages = super::common::frames_of(stdout);
        Server {
            child,
            stdin,
            messages,
            seen: Vec::new(),
        }
    }

    pub fn raw(&mut self, bytes: &[u8]) {
        // A server that died cannot be written to; the wait after says so.
        let _ = self.stdin.write_all(bytes);
        let _ = self.stdin.flush();
    }

    pub fn send(&mut self, body: &[u8]) {
        let mut framed = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
        framed.extend_from_slice(body);
        self.raw(&framed);
    }

    /// The next message `wanted` accepts.
    pub fn wait(&mut self, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
        loop {
            let Ok(message) = self.messages.recv_timeout(HANG) else {
                let status = self.child.try_wait();
                let last: Vec<String> = self
                    .seen
                    .iter()
                    .rev()
                    .take(5)
                    .map(|m| m.to_string().chars().take(300).collect())
                    .collect();
                panic!("no {what} (server: {status:?}); last messages: {last:#?}");
            };
            self.seen.push(message.clone());
            if wanted(&message) {
                return message;
            }
        }
    }

    /// The LSP response to request `id`.
    pub fn lsp_request(&mut self, id: i64, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send(body.to_string().as_bytes());
        self.wait(&format!("answer to {method}"), |m| {
            m["id"] == id && m.get("method").is_none()
        })
    }

    pub fn lsp_notify(&mut self, method: &str, params: Value) {
        let body = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.send(body.to_string().as_bytes());
    }

    pub fn lsp_initialize(&mut self, root: &Path) {
        let answer = self.lsp_request(
            0,
            "initialize",
            json!({"capabilities": {}, "rootUri": format!("file://{}", root.display())}),
        );
        assert!(answer["result"]["capabilities"].is_object(), "{answer}");
        self.lsp_notify("initialized", json!({}));
    }

    /// The DAP response to request `seq`.
    pub fn dap_request(&mut self, seq: i64, command: &str, arguments: Value) -> Value {
        let body =
            json!({"seq": seq, "type": "request", "command": command, "arguments": arguments});
        self.send(body.to_string().as_bytes());
        self.dap_response(seq, command)
    }

    pub fn dap_response(&mut self, seq: i64, command: &str) -> Value {
        self.wait(&format!("response to {command} ({seq})"), |m| {
            m["type"] == "response" && m["request_seq"] == seq
        })
    }

    /// Peak and current resident memory of the server process, in MiB (`timeout` runs
    /// `prlimit`, which execs the server: its one child).
    pub fn memory_mib(&self) -> (u64, u64) {
        let children =
            std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", self.child.id()))
                .unwrap_or_default();
        let pid = children.split_whitespace().next().expect("the server runs");
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let field = |name: &str| -> u64 {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap()
                / 1024
        };
        (field("VmHWM:"), field("VmRSS:"))
    }

    /// Closes the input; the server must then end on its own, without a crash.
    pub fn close(mut self) {
        drop(self.stdin);
        let status = self.child.wait().unwrap();
        assert!(
            matches!(status.code(), Some(0..=1)),
            "the server ended with {status:?}"
        );
        // The reader thread ends with the output.
        while self.messages.recv_timeout(Duration::from_secs(5)).is_ok() {}
        self.seen.clear();
    }
}

/// A JSON body of about `bytes` bytes: `prefix`, a million-ish `{"a":0}` items, `suffix`.
pub fn many_values(prefix: &str, bytes: usize, suffix: &str) -> Vec<u8> {
    let mut body = prefix.as_bytes().to_vec();
    body.push(b'[');
    while body.len() < bytes {
        body.extend_from_slice(br#"{"a":0},"#);
    }
    body.extend_from_slice(br#"{"a":0}]"#);
    body.extend_from_slice(suffix.as_bytes());
    body
}

/// A frame declaring `declared` bytes (over any limit) followed by only a little body.
pub fn lying_frame(declared: u64) -> Vec<u8> {
    format!("Content-Length: {declared}\r\n\r\n{{\"short\":").into_bytes()
}
