//! JSON-RPC over LSP's base protocol, checked before tower-lsp-server sees it: the
//! shape of each message (the `Content-Length` framing is [`crate::framing`]'s),
//! so that every malformed message gets the error response the JSON-RPC 2.0 spec prescribes
//! instead of ending the server.
//!
//! Why in front of tower-lsp-server 0.23: its read loop (`transport.rs`, `Server::serve`) stops at
//! the first message its codec cannot decode (tokio-util's `FramedRead` ends the stream after a
//! decode error), so one bad message used to end the server with exit code 0. Only messages that
//! its `jsonrpc::Message` (untagged `Request` | `Response`, `Error` with `deny_unknown_fields`,
//! `Id` = i64 | string | null) decodes are forwarded; a key repeated where those types decode it
//! (the message's own members, a response's `error`) fails their derived `Deserialize` ("duplicate
//! field"), so such a message is refused here too.
//!
//! Some valid messages are answered here because the service would never answer them: `exit` sent
//! with an id (tower-lsp-server stops reading at any `exit`), and `$/` requests (it drops their
//! MethodNotFound, which the LSP spec allows for `$/` notifications only).

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value, json};

/// JSON-RPC 2.0 error codes (jsonrpc.org/specification, "Error object").
pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;

/// What to do with one message body.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    /// Valid: hand it to the service. `method` is set for requests and notifications.
    Forward {
        method: Option<String>,
        is_request: bool,
    },
    /// Invalid: answer with `response` (a JSON-RPC error) when there is one, and log `reason`.
    Reject {
        response: Option<Value>,
        reason: String,
    },
    /// A valid request the service would leave unanswered: answer with `response` instead.
    Unserved { method: String, response: Value },
}

/// An error response (`id` null when the request's id could not be read).
pub fn error_response(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

fn reject(id: Value, code: i64, reason: String) -> Verdict {
    Verdict::Reject {
        response: Some(error_response(id, code, &reason)),
        reason,
    }
}

/// A JSON-RPC id tower-lsp-server can hold (`Id`: i64, string or null).
fn valid_id(id: &Value) -> bool {
    match id {
        Value::Null | Value::String(_) => true,
        Value::Number(n) => n.as_i64().is_some(),
        _ => false,
    }
}

/// Checks one message body against JSON-RPC 2.0 and the shapes tower-lsp-server decodes.
pub fn check_message(body: &[u8]) -> Verdict {
    let Envelope { value, repeated } = match Envelope::read(body) {
        Ok(envelope) => envelope,
        Err(e) => return reject(Value::Null, PARSE_ERROR, format!("parse error: {e}")),
    };
    let Value::Object(message) = value else {
        let what = match value {
            Value::Array(_) => "a batch (LSP has none)",
            Value::Null => "null",
            _ => "not an object",
        };
        return reject(
            Value::Null,
            INVALID_REQUEST,
            format!("invalid request: {what}"),
        );
    };
    let id = message.get("id");
    // The id to answer with: the request's own when it is a valid one, and it is not itself the
    // repeated key (which of two ids would be a guess).
    let answer_id = id
        .filter(|id| valid_id(id) && repeated.as_deref() != Some("id"))
        .cloned()
        .unwrap_or(Value::Null);
    if let Some(key) = repeated {
        // A response is never answered with its own id: the client would take the error for
        // the answer to its request of that id.
        let is_response = !message.contains_key("method");
        return reject(
            if is_response { Value::Null } else { answer_id },
            INVALID_REQUEST,
            format!("invalid request: the key `{key}` is repeated"),
        );
    }
    if let Some(id) = id
        && !valid_id(id)
    {
        return reject(
            Value::Null,
            INVALID_REQUEST,
            format!("invalid request: id must be an integer, a string or null, not {id}"),
        );
    }
    if message.get("jsonrpc") != Some(&Value::from("2.0")) {
        return reject(
            answer_id,
            INVALID_REQUEST,
            "invalid request: `jsonrpc` must be \"2.0\"".into(),
        );
    }
    match message.get("method") {
        Some(Value::String(method)) => {
            if let Some(params) = message.get("params")
                && !matches!(params, Value::Object(_) | Value::Array(_) | Value::Null)
            {
                return reject(
                    answer_id,
                    INVALID_REQUEST,
                    "invalid request: `params` must be an object or an array".into(),
                );
            }
            if let Some(params) = message.get("params")
                && let Some(bad) = out_of_range_position(params, 0)
            {
                let reason = format!("invalid params: position {bad} is out of range (u32)");
                return match id {
                    Some(_) => reject(answer_id, INVALID_PARAMS, reason),
                    // Notifications get no response (JSON-RPC 2.0): logged only.
                    None => Verdict::Reject {
                        response: None,
                        reason: format!("{method}: {reason}"),
                    },
                };
            }
            if id.is_some() {
                if method == "exit" {
                    return reject(
                        answer_id,
                        INVALID_REQUEST,
                        "invalid request: `exit` is a notification (sent with an id it is refused; the server keeps serving)".into(),
                    );
                }
                // `$/cancelRequest` is the one `$/` method served (a notification: the service
                // answers it sent with an id, as other notifications, with -32600).
                if method.starts_with("$/") && method != "$/cancelRequest" {
                    let mut response = error_response(
                        answer_id,
                        METHOD_NOT_FOUND,
                        &format!("method not found: {method}"),
                    );
                    response["error"]["data"] = Value::from(method.as_str());
                    return Verdict::Unserved {
                        method: method.clone(),
                        response,
                    };
                }
            }
            Verdict::Forward {
                method: Some(method.clone()),
                is_request: id.is_some(),
            }
        }
        Some(_) => reject(
            answer_id,
            INVALID_REQUEST,
            "invalid request: `method` must be a string".into(),
        ),
        None => check_response(&message, id),
    }
}

/// A message as serde_json reads it, and the first key its top-level object or that object's
/// `error` member repeats (serde_json's `Map` keeps the last value silently).
#[derive(Debug)]
struct Envelope {
    value: Value,
    repeated: Option<String>,
}

impl Envelope {
    fn read(body: &[u8]) -> serde_json::Result<Envelope> {
        let mut deserializer = serde_json::Deserializer::from_slice(body);
        let envelope = EnvelopeSeed { depth: 0 }.deserialize(&mut deserializer)?;
        deserializer.end()?;
        Ok(envelope)
    }
}

/// Reads one value, noting repeated keys at `depth` 0 (the message) and 1 (its `error`); deeper
/// members (`params`, `result`, `error.data`) go to serde_json as they are, where the last of a
/// repeated key counts, as it does when the service decodes them.
struct EnvelopeSeed {
    depth: u8,
}

impl<'de> DeserializeSeed<'de> for EnvelopeSeed {
    type Value = Envelope;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Envelope, D::Error> {
        deserializer.deserialize_any(self)
    }
}

fn plain(value: Value) -> Envelope {
    Envelope {
        value,
        repeated: None,
    }
}

impl<'de> Visitor<'de> for EnvelopeSeed {
    type Value = Envelope;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<Envelope, A::Error> {
        let mut map = Map::new();
        let mut repeated = None;
        while let Some(key) = members.next_key::<String>()? {
            let value = if self.depth == 0 && key == "error" {
                let error = members.next_value_seed(EnvelopeSeed { depth: 1 })?;
                if let Some(inner) = error.repeated {
                    repeated.get_or_insert(format!("error.{inner}"));
                }
                error.value
            } else {
                members.next_value::<Value>()?
            };
            if map.contains_key(&key) {
                repeated.get_or_insert(key.clone());
            }
            map.insert(key, value);
        }
        Ok(Envelope {
            value: Value::Object(map),
            repeated,
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Envelope, A::Error> {
        let mut array = Vec::new();
        while let Some(item) = items.next_element::<Value>()? {
            array.push(item);
        }
        Ok(plain(Value::Array(array)))
    }

    fn visit_bool<E>(self, v: bool) -> Result<Envelope, E> {
        Ok(plain(Value::Bool(v)))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Envelope, E> {
        Ok(plain(Value::from(v)))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Envelope, E> {
        Ok(plain(Value::from(v)))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Envelope, E> {
        Ok(plain(Value::from(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Envelope, E> {
        Ok(plain(Value::from(v)))
    }

    fn visit_string<E>(self, v: String) -> Result<Envelope, E> {
        Ok(plain(Value::String(v)))
    }

    fn visit_unit<E>(self) -> Result<Envelope, E> {
        Ok(plain(Value::Null))
    }
}

/// A message without `method` must be a response: an id, and exactly one of `result` and a
/// well-formed `error`.
fn check_response(message: &Map<String, Value>, id: Option<&Value>) -> Verdict {
    let invalid = |why: &str| {
        reject(
            Value::Null,
            INVALID_REQUEST,
            format!("invalid request: {why}"),
        )
    };
    if id.is_none() {
        return invalid("no `method` and no `id`");
    }
    match (message.get("result"), message.get("error")) {
        (Some(_), None) => {}
        (None, Some(Value::Object(error))) => {
            let fields_ok = error
                .keys()
                .all(|k| matches!(k.as_str(), "code" | "message" | "data"));
            let code_ok = error.get("code").and_then(Value::as_i64).is_some();
            let message_ok = error.get("message").is_some_and(Value::is_string);
            if !(fields_ok && code_ok && message_ok) {
                return invalid("malformed `error` object in a response");
            }
        }
        _ => return invalid("a response needs exactly one of `result` and `error`"),
    }
    Verdict::Forward {
        method: None,
        is_request: false,
    }
}

/// A `{line, character}` position (anywhere in `params`) whose numbers do not fit LSP's
/// `uinteger` (u32), as text.
fn out_of_range_position(value: &Value, depth: usize) -> Option<String> {
    // serde_json already bounds nesting (128 levels); this only keeps the walk cheap.
    if depth > 64 {
        return None;
    }
    match value {
        Value::Object(map) => {
            if let (Some(line), Some(character)) = (map.get("line"), map.get("character")) {
                let fits = |v: &Value| v.as_u64().is_some_and(|n| n <= u32::MAX as u64);
                if (line.is_number() || character.is_number()) && !(fits(line) && fits(character)) {
                    return Some(format!("{line}:{character}"));
                }
            }
            map.values()
                .find_map(|v| out_of_range_position(v, depth + 1))
        }
        Value::Array(items) => items
            .iter()
            .find_map(|v| out_of_range_position(v, depth + 1)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn code_and_id(verdict: Verdict) -> (i64, Value) {
        let Verdict::Reject {
            response: Some(response),
            ..
        } = verdict
        else {
            panic!("expected an error response, got {verdict:?}")
        };
        (
            response["error"]["code"].as_i64().unwrap(),
            response["id"].clone(),
        )
    }

    #[test]
    fn malformed_messages_get_the_prescribed_errors() {
        let cases: &[(&str, i64, Value)] = &[
            ("{bad", PARSE_ERROR, Value::Null),
            ("", PARSE_ERROR, Value::Null),
            ("{}", INVALID_REQUEST, Value::Null),
            ("null", INVALID_REQUEST, Value::Null),
            (
                "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"shutdown\"}]",
                INVALID_REQUEST,
                Value::Null,
            ),
            (
                "{\"jsonrpc\":\"1.0\",\"id\":7,\"method\":\"shutdown\"}",
                INVALID_REQUEST,
                json!(7),
            ),
            (
                "{\"jsonrpc\":\"2.0\",\"id\":{\"a\":1},\"method\":\"shutdown\"}",
                INVALID_REQUEST,
                Value::Null,
            ),
            (
                "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"shutdown\"}",
                INVALID_REQUEST,
                Value::Null,
            ),
            (
                "{\"jsonrpc\":\"2.0\",\"id\":18446744073709551615,\"method\":\"x\"}",
                INVALID_REQUEST,
                Value::Null,
            ),
            (
                "{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"method\":3}",
                INVALID_REQUEST,
                json!("s"),
            ),
            (
                "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"x\",\"params\":5}",
                INVALID_REQUEST,
                json!(2),
            ),
            (
                "{\"jsonrpc\":\"2.0\",\"id\":2,\"error\":{\"code\":\"x\",\"message\":\"m\"}}",
                INVALID_REQUEST,
                Value::Null,
            ),
            (
                "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":1,\"error\":{\"code\":1,\"message\":\"m\"}}",
                INVALID_REQUEST,
                Value::Null,
            ),
            (
                "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"textDocument/hover\",\"params\":{\"textDocument\":{\"uri\":\"file:///a.lua\"},\"position\":{\"line\":4294967296,\"character\":0}}}",
                INVALID_PARAMS,
                json!(3),
            ),
        ];
        for (body, code, id) in cases {
            assert_eq!(
                code_and_id(check_message(body.as_bytes())),
                (*code, id.clone()),
                "{body}"
            );
        }
    }

    #[test]
    fn a_repeated_key_is_refused_naming_it() {
        let cases: &[(&str, &str, Value)] = &[
            (
                r#"{"jsonrpc":"2.0","id":5,"id":6,"method":"x"}"#,
                "id",
                Value::Null,
            ),
            (
                r#"{"jsonrpc":"2.0","id":5,"method":"x","method":"y"}"#,
                "method",
                json!(5),
            ),
            (
                r#"{"jsonrpc":"2.0","method":"x","params":{},"params":[]}"#,
                "params",
                Value::Null,
            ),
            (
                r#"{"jsonrpc":"2.0","id":5,"result":1,"result":1}"#,
                "result",
                Value::Null,
            ),
            (
                r#"{"jsonrpc":"2.0","id":5,"error":{"code":1,"message":"m","message":"n"}}"#,
                "error.message",
                Value::Null,
            ),
            // An escape spells the same key.
            (
                r#"{"jsonrpc":"2.0","\u0069d":1,"id":2,"method":"x"}"#,
                "id",
                Value::Null,
            ),
        ];
        for (body, key, id) in cases {
            let verdict = check_message(body.as_bytes());
            let Verdict::Reject {
                response: Some(response),
                reason,
            } = verdict
            else {
                panic!("{body}: {verdict:?}")
            };
            assert!(reason.contains(&format!("`{key}` is repeated")), "{reason}");
            assert_eq!(response["error"]["code"], INVALID_REQUEST, "{body}");
            assert_eq!(&response["id"], id, "{body}");
        }
        // Deeper down the last one counts, as the service decodes it.
        let body = r#"{"jsonrpc":"2.0","id":5,"method":"x","params":{"a":1,"a":2}}"#;
        assert!(matches!(
            check_message(body.as_bytes()),
            Verdict::Forward { .. }
        ));
    }

    #[test]
    fn requests_the_service_would_leave_unanswered_are_answered() {
        let exit = r#"{"jsonrpc":"2.0","id":2,"method":"exit"}"#;
        assert_eq!(
            code_and_id(check_message(exit.as_bytes())),
            (INVALID_REQUEST, json!(2))
        );
        for method in ["$/unknown", "$/progress", "$/setTrace", "$/logTrace"] {
            let body = json!({"jsonrpc": "2.0", "id": "d", "method": method, "params": {}});
            let Verdict::Unserved { response, .. } = check_message(body.to_string().as_bytes())
            else {
                panic!("{method} was not answered")
            };
            assert_eq!(response["error"]["code"], METHOD_NOT_FOUND, "{response}");
            assert_eq!(response["id"], "d", "{response}");
        }
        // Served by the service: the notifications, and `$/cancelRequest` whatever its form.
        for body in [
            r#"{"jsonrpc":"2.0","method":"$/setTrace","params":{"value":"off"}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"$/cancelRequest","params":{"id":1}}"#,
        ] {
            assert!(
                matches!(check_message(body.as_bytes()), Verdict::Forward { .. }),
                "{body}"
            );
        }
    }

    #[test]
    fn valid_messages_pass_and_bad_notifications_are_only_logged() {
        for body in [
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}"#,
            r#"{"jsonrpc":"2.0","method":"exit"}"#,
            r#"{"jsonrpc":"2.0","id":"a","method":"shutdown","params":null}"#,
            r#"{"jsonrpc":"2.0","id":4,"result":null}"#,
            r#"{"jsonrpc":"2.0","id":4,"error":{"code":-1,"message":"no"}}"#,
        ] {
            assert!(
                matches!(check_message(body.as_bytes()), Verdict::Forward { .. }),
                "{body}"
            );
        }
        let notification = r#"{"jsonrpc":"2.0","method":"textDocument/didChange","params":{"contentChanges":[{"range":{"start":{"line":-1,"character":0},"end":{"line":0,"character":0}},"text":""}]}}"#;
        assert!(matches!(
            check_message(notification.as_bytes()),
            Verdict::Reject { response: None, .. }
        ));
    }

    /// Whatever tower-lsp-server would fail to decode must never be forwarded: a forwarded body
    /// decodes as its `Request` or `Response` (its `Message` is the untagged union of both).
    fn forwarded_decodes(body: &[u8]) {
        use tower_lsp_server::jsonrpc::{Request, Response};
        if let Verdict::Forward { .. } = check_message(body) {
            let decodes = serde_json::from_slice::<Response>(body).is_ok()
                || serde_json::from_slice::<Request>(body).is_ok();
            assert!(
                decodes,
                "forwarded but undecodable: {}",
                String::from_utf8_lossy(body)
            );
        }
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            (-1e9f64..1e9).prop_map(Value::from),
            "[a-z/0-9.]{0,8}".prop_map(Value::from),
            Just(Value::from("2.0")),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                prop::collection::vec(
                    (
                        prop_oneof![
                            Just("jsonrpc".to_string()),
                            Just("id".to_string()),
                            Just("method".to_string()),
                            Just("params".to_string()),
                            Just("result".to_string()),
                            Just("error".to_string()),
                            Just("line".to_string()),
                            Just("character".to_string()),
                            "[a-z]{1,3}",
                        ],
                        inner
                    ),
                    0..6
                )
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
            ]
        })
    }

    // 256 cases each by default; `PROPTEST_CASES` sets more for a longer run (docs/LSP.md).
    proptest! {
        /// The checker never panics, and forwards only what the service can decode.
        #[test]
        fn checker_is_total(value in json_value()) {
            let body = serde_json::to_vec(&value).unwrap();
            forwarded_decodes(&body);
        }

        /// A valid message with members added as text, so a key may be repeated (a `Value`
        /// cannot hold that).
        #[test]
        fn checker_is_total_on_repeated_keys(
            valid in prop_oneof![
                Just(r#""jsonrpc":"2.0","id":1,"method":"m""#),
                Just(r#""jsonrpc":"2.0","method":"m""#),
                Just(r#""jsonrpc":"2.0","id":1,"result":null"#),
                Just(r#""jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}"#),
            ],
            members in prop::collection::vec(
                (prop_oneof![Just("jsonrpc"), Just("id"), Just("method"), Just("params"),
                             Just("result"), Just("error")],
                 json_value()),
                0..3,
            )
        ) {
            let mut written = vec![valid.to_string()];
            written.extend(members.iter().map(|(key, value)| format!("\"{key}\":{value}")));
            forwarded_decodes(format!("{{{}}}", written.join(",")).as_bytes());
        }

        #[test]
        fn checker_survives_bytes(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
            forwarded_decodes(&bytes);
        }
    }
}
