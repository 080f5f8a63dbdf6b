//! The two engines under comparison: gopher-lua through our Go runner (a child process), and
//! kruise-lua's engine through its public API, each given the same `obj`.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Duration;

use kruise_lua_engine::runner::{RunOptions, Script, run_custom_json};
use kruise_lua_engine::{ErrorKind, JsonValue};

use crate::outcome::{Outcome, Status};

/// How long gopher-lua may take for one script. Its own 1 s deadline is checked only between
/// VM instructions, so a slow Go builtin (a huge `string.rep`, a backtracking pattern) could
/// otherwise block the whole run.
const GOPHER_WALL_CLOCK: Duration = Duration::from_secs(10);
/// Address space for the runner (KiB), so a generated script cannot exhaust the machine.
const GOPHER_ADDRESS_SPACE_KIB: u64 = 4 * 1024 * 1024;

/// The `obj` both engines get; the Go runner builds the same table (gopher-runner/main.go).
pub fn obj() -> JsonValue {
    let fields = [
        ("canaryWeight", JsonValue::Float(20.0)),
        ("stableWeight", JsonValue::Float(80.0)),
        ("canaryService", JsonValue::String("web-canary".into())),
        ("stableService", JsonValue::String("web".into())),
    ];
    JsonValue::Object(
        fields
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    )
}

/// Runs `source` through kruise-lua's engine under the controller's rules.
pub fn run_ours(source: &str, obj: &JsonValue) -> Outcome {
    let run = run_custom_json(&Script::new(source), obj, &RunOptions::default());
    match run.production {
        Ok(data) => match data.spec {
            Some(JsonValue::String(out)) => Outcome::new(Status::Ok, "", &out),
            other => Outcome::new(Status::Other(format!("unexpected spec {other:?}")), "", ""),
        },
        Err(error) => {
            let status = match error.kind {
                ErrorKind::Syntax => Status::Syntax,
                ErrorKind::Runtime => Status::Runtime,
                ErrorKind::Timeout => Status::Timeout,
                ErrorKind::NotTable => Status::NotTable(
                    error
                        .message
                        .rsplit(' ')
                        .next()
                        .unwrap_or_default()
                        .to_string(),
                ),
                ErrorKind::Memory => Status::Other("memory cap (ours only)".into()),
                kind => Status::Other(format!("{kind:?}")),
            };
            Outcome::new(status, error.message, "")
        }
    }
}

/// What the comparison runs a script through besides our engine: gopher-lua (or a stand-in in
/// the tests of the comparison itself).
pub trait Reference {
    fn run(&mut self, source: &str) -> Outcome;
}

/// The Go runner as a long-lived child process, restarted when it hangs or dies.
pub struct Gopher {
    path: PathBuf,
    process: Option<Running>,
}

struct Running {
    child: Child,
    stdin: ChildStdin,
    answers: Receiver<String>,
}

impl Gopher {
    pub fn new(path: &Path) -> Gopher {
        Gopher {
            path: path.to_path_buf(),
            process: None,
        }
    }

    fn start(&self) -> std::io::Result<Running> {
        // `ulimit -v` through the shell: the portable way to cap a child's memory without libc.
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "ulimit -v {GOPHER_ADDRESS_SPACE_KIB} 2>/dev/null; exec \"$0\""
            ))
            .arg(&self.path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let (send, answers) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Running {
            child,
            stdin,
            answers,
        })
    }

    fn stop(&mut self) {
        if let Some(mut running) = self.process.take() {
            let _ = running.child.kill();
            let _ = running.child.wait();
        }
    }
}

impl Reference for Gopher {
    /// Runs `source` through gopher-lua.
    fn run(&mut self, source: &str) -> Outcome {
        if self.process.is_none() {
            match self.start() {
                Ok(running) => self.process = Some(running),
                Err(error) => {
                    return Outcome::new(
                        Status::Other(format!("cannot start {}: {error}", self.path.display())),
                        "",
                        "",
                    );
                }
            }
        }
        let running = self.process.as_mut().expect("started above");
        let sent = write!(running.stdin, "{}\n{source}", source.len())
            .and_then(|()| running.stdin.flush());
        let answer = match sent {
            Ok(()) => running.answers.recv_timeout(GOPHER_WALL_CLOCK),
            Err(_) => Err(RecvTimeoutError::Disconnected),
        };
        match answer {
            Ok(line) => parse_answer(&line),
            Err(RecvTimeoutError::Timeout) => {
                self.stop();
                Outcome::new(Status::Other("gopher-lua hung".into()), "", "")
            }
            Err(RecvTimeoutError::Disconnected) => {
                self.stop();
                Outcome::new(
                    Status::Other("gopher-runner died (out of memory?)".into()),
                    "",
                    "",
                )
            }
        }
    }
}

impl Drop for Gopher {
    fn drop(&mut self) {
        self.stop();
    }
}

fn parse_answer(line: &str) -> Outcome {
    let Ok(answer) = serde_json::from_str::<serde_json::Value>(line) else {
        return Outcome::new(Status::Other(format!("bad answer {line:?}")), "", "");
    };
    let text = |key: &str| answer[key].as_str().unwrap_or_default().to_string();
    let msg = text("msg");
    let status = match text("status").as_str() {
        "ok" => Status::Ok,
        "syntax" => Status::Syntax,
        "runtime" => Status::Runtime,
        "timeout" => Status::Timeout,
        "not_table" => Status::NotTable(msg.clone()),
        "panic" => Status::Other("Go panic in gopher-lua".into()),
        other => Status::Other(format!("unknown status {other}")),
    };
    Outcome::new(status, msg, &text("out"))
}
