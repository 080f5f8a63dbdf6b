//! Tests of the session loop's handling of malformed and unexpected messages (the
//! end-to-end debugging tests drive the binary: tests/tests/dap.rs).

use std::io::Write;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::protocol::Writer;
use super::serve;
use crate::framing::{Frame, FrameDecoder, frame};

/// Collects what the server writes.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn exchange(input: &[u8]) -> Vec<Value> {
    let captured = Captured::default();
    serve(input, Writer::new(Box::new(captured.clone()))).unwrap();
    let mut decoder = FrameDecoder::default();
    decoder.push(&captured.0.lock().unwrap());
    let mut messages = Vec::new();
    while let Some(Frame::Body(body)) = decoder.next_frame() {
        messages.push(serde_json::from_slice(&body).unwrap());
    }
    messages
}

fn request(seq: i64, command: &str, arguments: Value) -> Vec<u8> {
    frame(
        json!({"seq": seq, "type": "request", "command": command, "arguments": arguments})
            .to_string()
            .as_bytes(),
    )
}

#[test]
fn malformed_messages_are_answered_and_the_session_goes_on() {
    let mut input = Vec::new();
    input.extend(frame(b"{not json"));
    input.extend(frame(b"[1, 2]"));
    input.extend(frame(
        br#"{"seq": 2, "type": "request", "command": "launch", "arguments": [1]}"#,
    ));
    input.extend(b"Content-Length: nope\r\n\r\n");
    input.extend(request(3, "fly", json!({})));
    input.extend(request(4, "launch", json!({"case": "x.yaml"})));
    input.extend(request(5, "stackTrace", json!({"threadId": 1})));
    input.extend(request(6, "initialize", json!({"adapterID": "kruise-lua"})));
    let messages = exchange(&input);
    let response = |seq: i64| {
        messages
            .iter()
            .find(|m| m["type"] == "response" && m["request_seq"] == seq)
            .unwrap_or_else(|| panic!("no response to {seq}: {messages:#?}"))
    };
    assert_eq!(response(2)["success"], false);
    assert!(
        response(3)["message"]
            .as_str()
            .unwrap()
            .contains("does not support `fly`")
    );
    assert!(
        response(4)["message"]
            .as_str()
            .unwrap()
            .contains("needs `script`")
    );
    assert_eq!(response(5)["success"], false);
    assert_eq!(response(6)["success"], true);
    assert_eq!(response(6)["body"]["supportsConditionalBreakpoints"], true);
    let ignored = messages
        .iter()
        .filter(|m| m["event"] == "output" && m["body"]["category"] == "stderr")
        .count();
    assert_eq!(ignored, 3, "{messages:#?}");
}
