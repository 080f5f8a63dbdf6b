//! The debugger the engine calls on the step's own thread: it reports stops and output as
//! DAP events, and while the run is stopped answers the inspection requests the session
//! loop forwards to it (stackTrace, scopes, variables, evaluate, setVariable) until a
//! resume command arrives.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;

use kruise_lua_engine::debug::{Debugger, Output, Paused, Resume, Stop, StopReason, Variable};
use kruise_lua_engine::vm::LimitHit;
use serde_json::{Value, json};

use super::protocol::{Request, Writer};

/// The one thread of a session (DAP wants an id).
pub const THREAD_ID: i64 = 1;

/// What the session loop sends the stopped run.
pub enum Command {
    /// An inspection request, answered by the step's thread.
    Inspect(Request),
    Resume(Resume),
}

pub struct Bridge {
    pub writer: Writer,
    pub commands: Receiver<Command>,
    /// Set while the run is stopped (the session loop forwards inspection requests then).
    pub stopped: Arc<AtomicBool>,
    /// The script's path, for sources in frames and output.
    pub script_path: String,
}

impl Debugger for Bridge {
    fn stopped(&mut self, stop: &Stop, paused: &mut Paused<'_>) -> Resume {
        let reason = match stop.reason {
            StopReason::Entry => "entry",
            StopReason::Breakpoint => "breakpoint",
            StopReason::Step => "step",
            StopReason::Pause => "pause",
            StopReason::Exception => "exception",
        };
        self.stopped.store(true, Ordering::SeqCst);
        let mut body = json!({
            "reason": reason,
            "threadId": THREAD_ID,
            "allThreadsStopped": true,
        });
        if let Some(message) = &stop.message {
            // Named as the verdict and `check` name it (error_kind timeout, memory).
            let what = match stop.limit {
                Some(LimitHit::Timeout) => "timeout",
                Some(LimitHit::Memory) => "out of memory",
                None => "runtime error",
            };
            let mut described = what.to_string();
            described[..1].make_ascii_uppercase();
            body["description"] = json!(format!("{described}: {message}"));
            body["text"] = json!(message);
            self.writer.output(
                "stderr",
                &format!("{what}: {message}"),
                Some((&self.script_path, stop.line)),
            );
        }
        self.writer.event("stopped", body);
        loop {
            match self.commands.recv() {
                Ok(Command::Inspect(request)) => self.answer(&request, paused),
                Ok(Command::Resume(resume)) => {
                    self.stopped.store(false, Ordering::SeqCst);
                    return resume;
                }
                // The session ended.
                Err(_) => {
                    self.stopped.store(false, Ordering::SeqCst);
                    return Resume::Terminate;
                }
            }
        }
    }

    fn output(&mut self, output: Output) {
        match output {
            Output::Print(text) => self.writer.output("stdout", &text, None),
            Output::Log { line, text } => {
                self.writer
                    .output("console", &text, Some((&self.script_path, line)))
            }
            Output::Notice(text) => self.writer.output("console", &text, None),
        }
    }
}

impl Bridge {
    fn answer(&self, request: &Request, paused: &mut Paused<'_>) {
        let answered = match request.command.as_str() {
            "stackTrace" => Ok(self.stack_trace(request, paused)),
            "scopes" => scopes(request, paused),
            "variables" => variables(request, paused),
            "evaluate" => evaluate(request, paused),
            "setVariable" => set_variable(request, paused),
            other => Err(format!("`{other}` is not answered while stopped")),
        };
        match answered {
            Ok(body) => self.writer.respond(request.seq, &request.command, body),
            Err(message) => self.writer.fail(request.seq, &request.command, &message),
        }
    }

    fn stack_trace(&self, request: &Request, paused: &mut Paused<'_>) -> Value {
        let frames = paused.frames();
        let total = frames.len();
        let start = request.int_arg("startFrame").unwrap_or(0).max(0) as usize;
        let levels = match request.int_arg("levels").unwrap_or(0) {
            n if n > 0 => n as usize,
            _ => total,
        };
        let listed: Vec<Value> = frames
            .into_iter()
            .enumerate()
            .skip(start)
            .take(levels)
            .map(|(index, frame)| {
                let mut value = json!({
                    "id": index + 1,
                    "name": frame.name,
                    "line": frame.line.unwrap_or(0),
                    "column": if frame.line.is_some() { 1 } else { 0 },
                });
                match frame.line {
                    Some(_) => value["source"] = json!({"path": self.script_path}),
                    None => value["presentationHint"] = json!("subtle"),
                }
                value
            })
            .collect();
        json!({"stackFrames": listed, "totalFrames": total})
    }
}

/// A frame id of ours (index + 1) as the engine's frame index, when the stopped run has that
/// frame: an unknown id is named as the client sent it (the engine counts frames from 0).
fn frame_index(id: Option<i64>, paused: &Paused<'_>) -> Result<Option<usize>, String> {
    let Some(id) = id else { return Ok(None) };
    match usize::try_from(id) {
        Ok(index @ 1..) if index <= paused.frames().len() => Ok(Some(index - 1)),
        _ => Err(format!("no frame {id}")),
    }
}

fn scopes(request: &Request, paused: &mut Paused<'_>) -> Result<Value, String> {
    let frame =
        frame_index(request.int_arg("frameId"), paused)?.ok_or("scopes needs a `frameId`")?;
    let scopes: Vec<Value> = paused
        .scopes(frame)?
        .into_iter()
        .map(|scope| {
            let mut value = json!({
                "name": scope.name,
                "variablesReference": scope.reference,
                "expensive": false,
            });
            if scope.name == "Locals" {
                value["presentationHint"] = json!("locals");
            }
            value
        })
        .collect();
    Ok(json!({"scopes": scopes}))
}

fn variable_json(variable: Variable) -> Value {
    json!({
        "name": variable.name,
        "value": variable.value,
        "type": variable.type_name,
        "variablesReference": variable.reference,
    })
}

fn reference(request: &Request) -> Result<u32, String> {
    request
        .int_arg("variablesReference")
        .and_then(|r| u32::try_from(r).ok())
        .ok_or_else(|| "a `variablesReference` is needed".to_owned())
}

fn variables(request: &Request, paused: &mut Paused<'_>) -> Result<Value, String> {
    let variables: Vec<Value> = paused
        .variables(reference(request)?)?
        .into_iter()
        .map(variable_json)
        .collect();
    Ok(json!({"variables": variables}))
}

fn evaluate(request: &Request, paused: &mut Paused<'_>) -> Result<Value, String> {
    let expression = request
        .str_arg("expression")
        .ok_or("evaluate needs an `expression`")?;
    // Without a frame (a watch before any frame is picked) the innermost one is meant.
    let frame = frame_index(request.int_arg("frameId"), paused)?.or(Some(0));
    let variable = paused.evaluate(frame, expression)?;
    Ok(json!({
        "result": variable.value,
        "type": variable.type_name,
        "variablesReference": variable.reference,
    }))
}

fn set_variable(request: &Request, paused: &mut Paused<'_>) -> Result<Value, String> {
    let name = request
        .str_arg("name")
        .ok_or("setVariable needs a `name`")?;
    let value = request
        .str_arg("value")
        .ok_or("setVariable needs a `value`")?;
    let variable = paused.set_variable(reference(request)?, name, value)?;
    Ok(json!({
        "value": variable.value,
        "type": variable.type_name,
        "variablesReference": variable.reference,
    }))
}
