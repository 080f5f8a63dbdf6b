//! The stdio transport: our own framing reader in front of tower-lsp-server. Every message from
//! the client is framed and checked ([`crate::framing`], [`messages`]); malformed ones are answered with a JSON-RPC
//! error and logged to stderr, requests the service would leave unanswered (`$/` methods) are
//! answered here, valid ones are re-framed into tower-lsp-server over an in-memory pipe. One writer task owns the output, so our answers and the service's messages never
//! interleave inside a frame.

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tower_lsp_server::{LspService, Server};

use super::messages::{self, Verdict};
use super::server::Backend;
use crate::framing::{self, Frame, FrameDecoder};
use crate::message_limits::{Head, MessageLimits, release_after};

/// How the session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// `exit` after `shutdown`.
    Clean,
    /// `exit` without `shutdown` (the LSP spec: exit code 1).
    ExitWithoutShutdown,
    /// The client closed the input.
    InputClosed,
}

/// Bodies waiting for the writer; bounded so a client that stops reading stalls us instead of
/// growing memory.
const OUTPUT_QUEUE: usize = 256;
const PIPE_BYTES: usize = 1 << 20;
/// At most this much queued output is gathered into one write (one frame may be larger).
const WRITE_BATCH_BYTES: usize = 1 << 20;

/// Serves the language server on `input`/`output` until `exit` or the end of the input, with
/// the default message limits.
#[cfg(test)]
pub async fn serve<I, O>(input: I, output: O) -> Ending
where
    I: AsyncRead + Unpin + Send + 'static,
    O: AsyncWrite + Unpin + Send + 'static,
{
    serve_with(input, output, MessageLimits::default()).await
}

/// Serves the language server on `input`/`output` until `exit` or the end of the input; client
/// messages beyond `limits` are answered with an error, unread.
pub async fn serve_with<I, O>(input: I, output: O, limits: MessageLimits) -> Ending
where
    I: AsyncRead + Unpin + Send + 'static,
    O: AsyncWrite + Unpin + Send + 'static,
{
    let (to_service, service_in) = tokio::io::duplex(PIPE_BYTES);
    let (service_out, from_service) = tokio::io::duplex(PIPE_BYTES);
    let (service, socket) = LspService::new(Backend::new);
    let service_task = tokio::spawn(Server::new(service_in, service_out, socket).serve(service));

    let (out_tx, out_rx) = mpsc::channel::<Vec<u8>>(OUTPUT_QUEUE);
    let writer = tokio::spawn(write_frames(output, out_rx));
    let relay = tokio::spawn(relay_service_output(from_service, out_tx.clone()));

    let ending = read_client(input, to_service, out_tx, limits).await;
    // The service ends once its input is closed and its pending requests are answered; the relay
    // and the writer once everything it said is written.
    let _ = service_task.await;
    let _ = relay.await;
    let _ = writer.await;
    ending
}

/// Reads the client's frames, answers malformed ones and forwards the rest.
async fn read_client<I: AsyncRead + Unpin>(
    mut input: I,
    mut to_service: tokio::io::DuplexStream,
    out: mpsc::Sender<Vec<u8>>,
    limits: MessageLimits,
) -> Ending {
    let mut decoder = FrameDecoder::with_limit(limits.max_bytes);
    let mut buf = vec![0u8; 64 * 1024];
    let mut shutdown_requested = false;
    loop {
        let n = match input.read(&mut buf).await {
            Ok(0) => 0,
            Ok(n) => n,
            Err(e) => {
                eprintln!("kruise-lua lsp: reading stdin failed: {e}");
                0
            }
        };
        if n == 0 {
            if let Some(e) = decoder.finish() {
                eprintln!("kruise-lua lsp: {e}");
                let answer = messages::error_response(
                    Value::Null,
                    messages::PARSE_ERROR,
                    &format!("parse error: {e}"),
                );
                let _ = out.send(answer.to_string().into_bytes()).await;
            }
            return Ending::InputClosed;
        }
        decoder.push(&buf[..n]);
        while let Some(frame) = decoder.next_frame() {
            let body = match frame {
                Frame::Body(body) => body,
                Frame::Bad(e) => {
                    eprintln!("kruise-lua lsp: malformed message: {e}");
                    let code = match e {
                        framing::FramingError::TooLarge(..) => messages::INVALID_REQUEST,
                        _ => messages::PARSE_ERROR,
                    };
                    let answer = messages::error_response(Value::Null, code, &e.to_string());
                    let _ = out.send(answer.to_string().into_bytes()).await;
                    continue;
                }
            };
            if let Err(reason) = limits.check(&body) {
                eprintln!("kruise-lua lsp: message refused: {reason}");
                let id = Head::read(&body).id.unwrap_or(Value::Null);
                let answer = messages::error_response(id, messages::INVALID_REQUEST, &reason);
                release_after(body.len());
                let _ = out.send(answer.to_string().into_bytes()).await;
                continue;
            }
            let verdict = messages::check_message(&body);
            release_after(body.len());
            match verdict {
                Verdict::Forward { method, is_request } => {
                    let method = method.as_deref();
                    if is_request && method == Some("shutdown") {
                        shutdown_requested = true;
                    }
                    if to_service.write_all(&framing::frame(&body)).await.is_err() {
                        return Ending::InputClosed; // the service is gone
                    }
                    if method == Some("exit") && !is_request {
                        return if shutdown_requested {
                            Ending::Clean
                        } else {
                            Ending::ExitWithoutShutdown
                        };
                    }
                }
                Verdict::Unserved { method, response } => {
                    eprintln!("kruise-lua lsp: request `{method}` is not served (MethodNotFound)");
                    let _ = out.send(response.to_string().into_bytes()).await;
                }
                Verdict::Reject { response, reason } => {
                    eprintln!("kruise-lua lsp: malformed message: {reason}");
                    let message = response.unwrap_or_else(|| {
                        // A notification gets no response: the client's log hears of it.
                        json!({"jsonrpc": "2.0", "method": "window/logMessage",
                               "params": {"type": 1, "message": format!("kruise-lua: ignored {reason}")}})
                    });
                    let _ = out.send(message.to_string().into_bytes()).await;
                }
            }
        }
    }
}

/// Passes the service's framed output on to the writer, message by message.
async fn relay_service_output(
    mut from_service: tokio::io::DuplexStream,
    out: mpsc::Sender<Vec<u8>>,
) {
    let mut decoder = FrameDecoder::default();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = from_service.read(&mut buf).await.unwrap_or(0);
        if n == 0 {
            return;
        }
        decoder.push(&buf[..n]);
        while let Some(frame) = decoder.next_frame() {
            if let Frame::Body(body) = frame
                && out.send(body).await.is_err()
            {
                return;
            }
        }
    }
}

async fn write_frames<O: AsyncWrite + Unpin>(mut output: O, mut bodies: mpsc::Receiver<Vec<u8>>) {
    while let Some(body) = bodies.recv().await {
        // The frames already queued go out in one write: each write and flush of tokio's
        // stdout is a hand-over to a blocking thread, and a cold start of a large workspace
        // queues thousands of diagnostics at once (most of the server's time went to those
        // thread wake-ups). Bounded, so a huge burst still goes out in pieces.
        let mut frames = framing::frame(&body);
        while frames.len() < WRITE_BATCH_BYTES
            && let Ok(next) = bodies.try_recv()
        {
            frames.extend_from_slice(&framing::frame(&next));
        }
        let written = async {
            output.write_all(&frames).await?;
            output.flush().await
        };
        if let Err(e) = written.await {
            eprintln!("kruise-lua lsp: writing stdout failed: {e}");
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    //! The real transport and service over in-memory pipes.

    use super::*;
    use tokio::io::BufReader;

    struct Client {
        to_server: tokio::io::DuplexStream,
        from_server: BufReader<tokio::io::DuplexStream>,
        server: tokio::task::JoinHandle<Ending>,
    }

    impl Client {
        fn start() -> Client {
            let (to_server, server_in) = tokio::io::duplex(1 << 20);
            let (server_out, from_server) = tokio::io::duplex(1 << 20);
            Client {
                to_server,
                from_server: BufReader::new(from_server),
                server: tokio::spawn(serve(server_in, server_out)),
            }
        }

        async fn raw(&mut self, bytes: &[u8]) {
            self.to_server.write_all(bytes).await.unwrap();
        }

        async fn send(&mut self, message: Value) {
            self.raw(&framing::frame(message.to_string().as_bytes()))
                .await;
        }

        async fn next(&mut self) -> Value {
            let read = framing::read_message(&mut self.from_server);
            tokio::time::timeout(std::time::Duration::from_secs(30), read)
                .await
                .expect("an answer in time")
        }

        /// The next response (server notifications and requests are skipped).
        async fn response(&mut self) -> Value {
            loop {
                let message = self.next().await;
                if message.get("method").is_none() {
                    return message;
                }
            }
        }

        async fn initialize(&mut self) {
            self.send(json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {"capabilities": {}}}))
                .await;
            assert!(self.response().await["result"]["capabilities"].is_object());
            self.send(json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
                .await;
        }

        async fn ending(self) -> Ending {
            drop(self.to_server);
            tokio::time::timeout(std::time::Duration::from_secs(30), self.server)
                .await
                .expect("the server ends")
                .unwrap()
        }
    }

    /// Malformed messages of every kind, with the error code each must get.
    fn malformed(i: usize) -> (Vec<u8>, i64) {
        let body = |text: &str| framing::frame(text.as_bytes());
        match i % 9 {
            0 => (body("{not json"), messages::PARSE_ERROR),
            1 => (body("{}"), messages::INVALID_REQUEST),
            2 => (body("null"), messages::INVALID_REQUEST),
            3 => (
                body(r#"[{"jsonrpc":"2.0","id":1,"method":"shutdown"}]"#),
                messages::INVALID_REQUEST,
            ),
            4 => (
                body(r#"{"jsonrpc":"1.0","id":99,"method":"shutdown"}"#),
                messages::INVALID_REQUEST,
            ),
            5 => (
                body(r#"{"jsonrpc":"2.0","id":{"x":1},"method":"shutdown"}"#),
                messages::INVALID_REQUEST,
            ),
            6 => (
                b"Content-Type: application/json\r\n\r\n{\"jsonrpc\":\"2.0\"}".to_vec(),
                messages::PARSE_ERROR,
            ),
            7 => (body("\u{fffd}\u{0}"), messages::PARSE_ERROR),
            _ => (
                body(
                    r#"{"jsonrpc":"2.0","id":"pos","method":"textDocument/hover","params":{"textDocument":{"uri":"file:///nowhere/a.lua"},"position":{"line":4294967296,"character":0}}}"#,
                ),
                messages::INVALID_PARAMS,
            ),
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn survives_a_thousand_malformed_messages_and_answers_the_valid_ones() {
        let mut client = Client::start();
        client.initialize().await;
        for i in 0..1000 {
            let (bytes, code) = malformed(i);
            client.raw(&bytes).await;
            let answer = client.response().await;
            assert_eq!(answer["error"]["code"], code, "message {i}: {answer}");
            client
                .send(
                    json!({"jsonrpc": "2.0", "id": i, "method": "textDocument/documentSymbol",
                             "params": {"textDocument": {"uri": "file:///nowhere/a.lua"}}}),
                )
                .await;
            let answer = client.response().await;
            assert_eq!(answer["id"], i, "{answer}");
            assert!(answer.get("result").is_some(), "{answer}");
        }
        client
            .send(json!({"jsonrpc": "2.0", "id": "bye", "method": "shutdown"}))
            .await;
        assert_eq!(client.response().await["id"], "bye");
        client
            .send(json!({"jsonrpc": "2.0", "method": "exit"}))
            .await;
        assert_eq!(client.ending().await, Ending::Clean);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn exit_without_shutdown_is_an_error_ending() {
        let mut client = Client::start();
        client.initialize().await;
        client
            .send(json!({"jsonrpc": "2.0", "method": "exit"}))
            .await;
        assert_eq!(client.ending().await, Ending::ExitWithoutShutdown);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn huge_length_and_truncated_body_are_answered() {
        let mut client = Client::start();
        client.initialize().await;
        client.raw(b"Content-Length: 99999999999\r\n\r\n").await;
        let answer = client.response().await;
        assert_eq!(
            answer["error"]["code"],
            messages::INVALID_REQUEST,
            "{answer}"
        );
        assert!(answer["id"].is_null());
        // The declared bytes are skipped, not buffered; the input then ends inside it.
        client.raw(&vec![b' '; 1 << 16]).await;
        let Client {
            to_server,
            from_server,
            server,
        } = client;
        drop(to_server);
        assert_eq!(server.await.unwrap(), Ending::InputClosed);
        drop(from_server);

        let mut client = Client::start();
        client.initialize().await;
        client.raw(b"Content-Length: 50\r\n\r\n{\"jsonrpc\"").await;
        let Client {
            to_server,
            mut from_server,
            server,
        } = client;
        drop(to_server);
        let mut rest = String::new();
        from_server.read_to_string(&mut rest).await.unwrap();
        assert!(
            rest.contains("-32700") && rest.contains("input ended inside a message"),
            "{rest}"
        );
        assert_eq!(server.await.unwrap(), Ending::InputClosed);
    }
}
