//! Tests of the session loop's handling of malformed and unexpected messages (the
//! end-to-end debugging tests drive the binary: tests/tests/dap.rs).

use std::io::Write;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::protocol::Writer;
use super::serve;
use crate::framing::{Frame, FrameDecoder, frame};
use crate::message_limits::MessageLimits;

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
    serve(
        input,
        Writer::new(Box::new(captured.clone())),
        MessageLimits::default(),
    )
    .unwrap();
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

mod decoder {
    //! The adapter's read loop on arbitrary input (issue 22): it never panics, and a valid
    //! `initialize` after the input (behind a blank line, so a header cut in two cannot eat it)
    //! is answered unless the garbage declared a body that swallows it.

    use super::*;
    use proptest::prelude::*;

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<i64>().prop_map(Value::from),
            "[a-z]{0,6}".prop_map(Value::from),
            Just(Value::from("request")),
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                prop::collection::vec(
                    (
                        prop_oneof![
                            Just("seq".to_string()),
                            Just("type".to_string()),
                            Just("command".to_string()),
                            Just("arguments".to_string()),
                            Just("breakpoints".to_string()),
                            "[a-z]{1,3}",
                        ],
                        inner
                    ),
                    0..5
                )
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn arbitrary_frames_then_a_valid_request(
            bodies in prop::collection::vec(json_value(), 0..4),
            garbage in prop::collection::vec(any::<u8>(), 0..300),
        ) {
            let mut input = Vec::new();
            for body in &bodies {
                input.extend(frame(body.to_string().as_bytes()));
            }
            input.extend(&garbage);
            input.extend(b"\r\n\r\n");
            input.extend(request(99, "initialize", json!({"adapterID": "kruise-lua"})));
            let messages = exchange(&input);
            let swallowed = String::from_utf8_lossy(&garbage)
                .to_ascii_lowercase()
                .contains("content-length");
            let ended = bodies.iter().any(|b| b["command"] == "disconnect");
            if !swallowed && !ended {
                prop_assert!(
                    messages.iter().any(|m| m["request_seq"] == 99 && m["success"] == true),
                    "{messages:#?}"
                );
            }
        }
    }
}
