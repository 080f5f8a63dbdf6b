//! `kruise-lua dap`: a Debug Adapter Protocol server over stdio that debugs one step of a
//! test case in the engine (`kruise_lua_engine::debug`), exactly as `check` runs it.
//!
//! The session loop reads requests on the main thread; the step runs on a thread of its own
//! (never an async runtime's), which reports stops and output and, while stopped, answers
//! the inspection requests the loop forwards to it (see `bridge`).

mod bridge;
mod launch;
mod protocol;

use std::io::Read;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Sender, channel};
use std::thread::JoinHandle;

use kruise_lua_engine::debug::{self, Breakpoint, Control, Resume};
use serde_json::{Value, json};

use crate::framing::{Frame, FrameDecoder};
use crate::message_limits::{Head, MessageLimits, release_after};
use bridge::{Bridge, Command, THREAD_ID};
use launch::Launch;
use protocol::{Request, Writer};

/// Serves one debugging session on stdin/stdout until `disconnect` or the end of input.
pub fn run_stdio(limits: MessageLimits) -> std::io::Result<()> {
    serve(
        std::io::stdin().lock(),
        Writer::new(Box::new(std::io::stdout())),
        limits,
    )
}

fn serve(mut input: impl Read, writer: Writer, limits: MessageLimits) -> std::io::Result<()> {
    let mut session = Session::new(writer.clone());
    let mut decoder = FrameDecoder::with_limit(limits.max_bytes);
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let read = match input.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => read,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => {
                session.end();
                return Err(error);
            }
        };
        decoder.push(&buffer[..read]);
        while let Some(frame) = decoder.next_frame() {
            match frame {
                Frame::Body(body) => {
                    if let Err(reason) = limits.check(&body) {
                        session.refuse(&body, &reason);
                        release_after(body.len());
                        continue;
                    }
                    let flow = session.handle_body(&body);
                    release_after(body.len());
                    if flow == Flow::End {
                        return Ok(());
                    }
                }
                Frame::Bad(error) => {
                    writer.output(
                        "stderr",
                        &format!("kruise-lua dap: malformed message ignored: {error}"),
                        None,
                    );
                }
            }
        }
    }
    session.end();
    Ok(())
}

#[derive(Debug, PartialEq, Eq)]
enum Flow {
    Go,
    End,
}

/// One debugging session: the launch configuration, and the step's run once started.
struct Session {
    writer: Writer,
    launch: Option<Arc<Launch>>,
    control: Arc<Control>,
    stopped: Arc<AtomicBool>,
    commands: Option<Sender<Command>>,
    run: Option<JoinHandle<()>>,
}

impl Session {
    fn new(writer: Writer) -> Session {
        Session {
            writer,
            launch: None,
            control: Arc::new(Control::new(false)),
            stopped: Arc::new(AtomicBool::new(false)),
            commands: None,
            run: None,
        }
    }

    /// Answers a message over the limits without decoding it: a failed response when its
    /// `seq` and `command` can be read, else a line on the console.
    fn refuse(&self, body: &[u8], reason: &str) {
        match Head::read(body) {
            Head {
                seq: Some(seq),
                command: Some(command),
                ..
            } => self.writer.fail(seq, &command, reason),
            _ => self.writer.output(
                "stderr",
                &format!("kruise-lua dap: message ignored: {reason}"),
                None,
            ),
        }
    }

    fn handle_body(&mut self, body: &[u8]) -> Flow {
        match Request::parse(body) {
            Ok(request) => self.handle(request),
            Err((Some((seq, command)), message)) => {
                self.writer.fail(seq, &command, &message);
                Flow::Go
            }
            Err((None, message)) => {
                self.writer.output(
                    "stderr",
                    &format!("kruise-lua dap: message ignored: {message}"),
                    None,
                );
                Flow::Go
            }
        }
    }

    fn handle(&mut self, request: Request) -> Flow {
        let seq = request.seq;
        let command = request.command.clone();
        let writer = self.writer.clone();
        match command.as_str() {
            "initialize" => writer.respond(seq, &command, capabilities()),
            "launch" => match Launch::from_arguments(&request.arguments) {
                Ok(launch) => {
                    self.control = Arc::new(Control::new(launch.stop_on_entry));
                    self.launch = Some(Arc::new(launch));
                    writer.respond(seq, &command, Value::Null);
                    // Ready for breakpoints and configurationDone.
                    writer.event("initialized", Value::Null);
                }
                Err(message) => writer.fail(seq, &command, &message),
            },
            "attach" => writer.fail(
                seq,
                &command,
                "kruise-lua debugs by launching a step: use a `launch` configuration",
            ),
            "setBreakpoints" => self.set_breakpoints(&request),
            "setExceptionBreakpoints" => writer.respond(seq, &command, json!({"breakpoints": []})),
            "configurationDone" => {
                writer.respond(seq, &command, Value::Null);
                self.start();
            }
            "threads" => {
                let name = self
                    .launch
                    .as_ref()
                    .map_or("step".to_owned(), |l| l.title());
                writer.respond(
                    seq,
                    &command,
                    json!({"threads": [{"id": THREAD_ID, "name": name}]}),
                );
            }
            "stackTrace" | "scopes" | "variables" | "evaluate" | "setVariable" => {
                if !self.send_if_stopped(Command::Inspect(request)) {
                    writer.fail(seq, &command, "the step is running: this needs it stopped (at a breakpoint, a step or a pause)");
                }
            }
            "continue" | "next" | "stepIn" | "stepOut" => {
                let resume = match command.as_str() {
                    "continue" => Resume::Continue,
                    "next" => Resume::StepOver,
                    "stepIn" => Resume::StepIn,
                    _ => Resume::StepOut,
                };
                if self.stopped.swap(false, Ordering::SeqCst) {
                    let body = if resume == Resume::Continue {
                        json!({"allThreadsContinued": true})
                    } else {
                        Value::Null
                    };
                    // The response goes out before the run goes on: the events it sends next
                    // (stopped, output, exited) must follow it (a client waiting for the
                    // response would otherwise miss them).
                    writer.respond(seq, &command, body);
                    self.send_resume(resume);
                } else {
                    writer.fail(seq, &command, "the step is not stopped");
                }
            }
            // As for `continue`: the response goes out before the run is told, so the events
            // that follow from it (stopped; output, exited, terminated) come after it.
            "pause" => {
                writer.respond(seq, &command, Value::Null);
                self.control.request_pause();
            }
            "terminate" => {
                writer.respond(seq, &command, Value::Null);
                self.terminate();
            }
            "disconnect" => {
                self.end();
                writer.respond(seq, &command, Value::Null);
                return Flow::End;
            }
            other => writer.fail(
                seq,
                other,
                &format!("kruise-lua dap does not support `{other}`"),
            ),
        }
        Flow::Go
    }

    fn set_breakpoints(&mut self, request: &Request) {
        let Some(launch) = &self.launch else {
            self.writer.fail(
                request.seq,
                &request.command,
                "launch a step before setting breakpoints",
            );
            return;
        };
        let path = request
            .arguments
            .pointer("/source/path")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let listed: Vec<&Value> = request
            .arguments
            .get("breakpoints")
            .and_then(Value::as_array)
            .map(|list| list.iter().collect())
            .unwrap_or_default();
        let ours = launch.is_script(path);
        let mut breakpoints = Vec::new();
        let mut answered = Vec::new();
        for item in listed {
            let line = item
                .get("line")
                .and_then(Value::as_u64)
                .and_then(|l| u32::try_from(l).ok());
            let text = |name: &str| {
                item.get(name)
                    .and_then(Value::as_str)
                    .filter(|s| !s.trim().is_empty())
                    .map(str::to_owned)
            };
            match line {
                Some(line) if ours => {
                    let hit_condition = text("hitCondition");
                    let mut answer = json!({"verified": true, "line": line});
                    if let Some(Err(message)) =
                        hit_condition.as_deref().map(debug::check_hit_condition)
                    {
                        let message = format!("line {line}: {message}");
                        self.writer
                            .output("console", &format!("kruise-lua dap: {message}"), None);
                        answer["message"] = Value::from(message);
                    }
                    breakpoints.push(Breakpoint {
                        line,
                        condition: text("condition"),
                        hit_condition,
                        log_message: text("logMessage"),
                    });
                    answered.push(answer);
                }
                _ => answered.push(json!({
                    "verified": false,
                    "message": "not in the launched script",
                })),
            }
        }
        if ours {
            self.control.set_breakpoints(breakpoints);
        }
        self.writer.respond(
            request.seq,
            &request.command,
            json!({"breakpoints": answered}),
        );
    }

    /// Starts the step's run, once.
    fn start(&mut self) {
        if self.run.is_some() {
            return;
        }
        let Some(launch) = self.launch.clone() else {
            self.writer.output(
                "stderr",
                "kruise-lua dap: configurationDone before launch: nothing to run",
                None,
            );
            return;
        };
        let (sender, receiver) = channel();
        self.commands = Some(sender);
        let mut bridge = Bridge {
            writer: self.writer.clone(),
            commands: receiver,
            stopped: self.stopped.clone(),
            script_path: launch.script_path.display().to_string(),
        };
        let control = self.control.clone();
        let writer = self.writer.clone();
        let spawned = std::thread::Builder::new()
            .name("kruise-lua-dap-step".into())
            .stack_size(crate::project::WORKER_STACK)
            .spawn(move || {
                // A bug in the engine must still end the session in the client.
                let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    debug::run_step(launch.step(launch.index), &control, &mut bridge)
                }));
                let passed = match ran {
                    Ok(outcome) => {
                        // A run the client ended has no verdict to check.
                        let terminated = control.terminating();
                        let checks = (!terminated)
                            .then(|| launch::StepChecks::of(&launch, &outcome))
                            .flatten();
                        let (text, passed) =
                            launch::verdict(&launch, &outcome, checks.as_ref(), terminated);
                        writer.output("console", &text, None);
                        passed
                    }
                    Err(_) => {
                        writer.output(
                            "stderr",
                            "kruise-lua dap: internal error: the step's run panicked",
                            None,
                        );
                        false
                    }
                };
                writer.event("exited", json!({"exitCode": if passed { 0 } else { 1 }}));
                writer.event("terminated", Value::Null);
            });
        match spawned {
            Ok(handle) => self.run = Some(handle),
            Err(error) => {
                self.writer.output(
                    "stderr",
                    &format!("kruise-lua dap: cannot start the step's thread: {error}"),
                    None,
                );
                self.writer.event("terminated", Value::Null);
            }
        }
    }

    /// Hands `command` to the stopped run; false when it is not stopped.
    fn send_if_stopped(&self, command: Command) -> bool {
        if !self.stopped.load(Ordering::SeqCst) {
            return false;
        }
        self.commands
            .as_ref()
            .is_some_and(|sender| sender.send(command).is_ok())
    }

    fn resume(&self, resume: Resume) -> bool {
        self.stopped.swap(false, Ordering::SeqCst) && self.send_resume(resume)
    }

    /// Tells the stopped run to go on; false when it is gone.
    fn send_resume(&self, resume: Resume) -> bool {
        self.commands
            .as_ref()
            .is_some_and(|sender| sender.send(Command::Resume(resume)).is_ok())
    }

    fn terminate(&mut self) {
        self.control.request_terminate();
        self.resume(Resume::Terminate);
    }

    /// Ends the run (if any) and waits for its thread.
    fn end(&mut self) {
        self.terminate();
        // Dropping the sender also releases a run that stops again before it ends.
        self.commands = None;
        if let Some(run) = self.run.take() {
            let _ = run.join();
        }
    }
}

/// What the adapter supports (the `initialize` response).
fn capabilities() -> Value {
    json!({
        "supportsConfigurationDoneRequest": true,
        "supportsConditionalBreakpoints": true,
        "supportsHitConditionalBreakpoints": true,
        "supportsLogPoints": true,
        "supportsEvaluateForHovers": true,
        "supportsSetVariable": true,
        "supportsTerminateRequest": true,
        "exceptionBreakpointFilters": [],
    })
}

#[cfg(test)]
mod tests;
