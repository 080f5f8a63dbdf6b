//! The Debug Adapter Protocol messages we use, as JSON (microsoft.github.io/debug-adapter-protocol,
//! "Base Protocol": `seq`, `type` request/response/event, `request_seq`, `success`, `body`),
//! framed with `Content-Length` as LSP is (the framing is `crate::framing`'s).
//!
//! The `dap` crate on crates.io is an alpha (0.4.x-alpha) that brings its own server loop;
//! the handful of message shapes used here are written with serde_json instead.

use std::io::Write;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};

use crate::framing;

/// A request read from the client.
#[derive(Debug, Clone)]
pub struct Request {
    pub seq: i64,
    pub command: String,
    pub arguments: Value,
}

impl Request {
    /// Reads a message body: a request, or why it is not one (with the `seq` and `command`
    /// to answer, when they could be read).
    pub fn parse(body: &[u8]) -> Result<Request, (Option<(i64, String)>, String)> {
        let mut value: Value = serde_json::from_slice(body)
            .map_err(|error| (None, format!("the message is not JSON: {error}")))?;
        let Some(object) = value.as_object_mut() else {
            return Err((None, "the message is not a JSON object".to_owned()));
        };
        let seq = object.get("seq").and_then(Value::as_i64);
        let command = object.get("command").and_then(Value::as_str);
        let answerable = seq.zip(command.map(str::to_owned));
        if object.get("type").and_then(Value::as_str) != Some("request") {
            return Err((
                None,
                "only requests are expected from the client".to_owned(),
            ));
        }
        let (seq, command) = answerable.clone().ok_or_else(|| {
            (
                None,
                "a request needs a numeric `seq` and a `command`".to_owned(),
            )
        })?;
        // Taken, not copied: a message's memory is paid once.
        let arguments = object.remove("arguments").unwrap_or(Value::Null);
        if !(arguments.is_object() || arguments.is_null()) {
            return Err((answerable, "`arguments` must be an object".to_owned()));
        }
        Ok(Request {
            seq,
            command,
            arguments,
        })
    }

    pub fn str_arg(&self, name: &str) -> Option<&str> {
        self.arguments.get(name).and_then(Value::as_str)
    }

    pub fn int_arg(&self, name: &str) -> Option<i64> {
        self.arguments.get(name).and_then(Value::as_i64)
    }
}

/// Writes messages to the client, numbering them; shared by the threads of a session.
#[derive(Clone)]
pub struct Writer {
    inner: Arc<Mutex<WriterState>>,
}

struct WriterState {
    seq: i64,
    out: Box<dyn Write + Send>,
}

impl Writer {
    pub fn new(out: Box<dyn Write + Send>) -> Writer {
        Writer {
            inner: Arc::new(Mutex::new(WriterState { seq: 0, out })),
        }
    }

    fn send(&self, mut message: Map<String, Value>) {
        let mut state = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        state.seq += 1;
        message.insert("seq".into(), json!(state.seq));
        let body = Value::Object(message).to_string();
        // A client that went away cannot be told anything: the read loop ends on its own.
        let _ = state.out.write_all(&framing::frame(body.as_bytes()));
        let _ = state.out.flush();
    }

    /// A successful response to request `seq`.
    pub fn respond(&self, seq: i64, command: &str, body: Value) {
        let mut message = Map::new();
        message.insert("type".into(), json!("response"));
        message.insert("request_seq".into(), json!(seq));
        message.insert("success".into(), json!(true));
        message.insert("command".into(), json!(command));
        if !body.is_null() {
            message.insert("body".into(), body);
        }
        self.send(message);
    }

    /// A failed response, with `message` shown to the user.
    pub fn fail(&self, seq: i64, command: &str, text: &str) {
        let mut message = Map::new();
        message.insert("type".into(), json!("response"));
        message.insert("request_seq".into(), json!(seq));
        message.insert("success".into(), json!(false));
        message.insert("command".into(), json!(command));
        message.insert("message".into(), json!(text));
        message.insert(
            "body".into(),
            json!({"error": {"id": 1, "format": text, "showUser": true}}),
        );
        self.send(message);
    }

    pub fn event(&self, event: &str, body: Value) {
        let mut message = Map::new();
        message.insert("type".into(), json!("event"));
        message.insert("event".into(), json!(event));
        if !body.is_null() {
            message.insert("body".into(), body);
        }
        self.send(message);
    }

    /// An `output` event in `category` (`console`, `stdout`, `stderr`), with the script line
    /// it comes from when known.
    pub fn output(&self, category: &str, text: &str, source: Option<(&str, u32)>) {
        let mut body = json!({"category": category, "output": format!("{text}\n")});
        if let Some((path, line)) = source {
            body["source"] = json!({"path": path});
            body["line"] = json!(line);
        }
        self.event("output", body);
    }
}
