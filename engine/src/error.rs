//! Error kinds callers can tell apart, named as in the conformance vectors.

use std::fmt;

/// What went wrong in a run or a test case. `as_str` gives the conformance name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The chunk does not compile.
    Syntax,
    /// An error raised while running and not caught by the script.
    Runtime,
    /// The wall-clock deadline passed.
    Timeout,
    /// The memory cap was reached (a limit of ours; Kruise has none).
    Memory,
    /// The returned table cannot be encoded as JSON.
    Encode,
    /// The last returned value is not a table (controller and ingress rules).
    NotTable,
    /// The encoded JSON does not fit the result type.
    Unmarshal,
    /// A test-case file or folder problem.
    Case,
}

impl ErrorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Syntax => "syntax",
            ErrorKind::Runtime => "runtime",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Memory => "memory",
            ErrorKind::Encode => "encode",
            ErrorKind::NotTable => "not_table",
            ErrorKind::Unmarshal => "unmarshal",
            ErrorKind::Case => "case",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error from running a script: its kind, a message, and the script line when known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptError {
    pub kind: ErrorKind,
    pub message: String,
    /// 1-based line in the script where the error was raised, when Lua reports one.
    pub line: Option<u32>,
    /// gopher-lua's `stack traceback:` block of an error the chunk did not catch, which
    /// Kruise's log shows after the message (see [`ScriptError::controller_text`]).
    pub traceback: Option<String>,
}

impl ScriptError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        ScriptError {
            kind,
            message: message.into(),
            line: None,
            traceback: None,
        }
    }

    pub fn at_line(mut self, line: Option<u32>) -> Self {
        self.line = line;
        self
    }

    pub fn with_traceback(mut self, traceback: Option<String>) -> Self {
        self.traceback = traceback;
        self
    }

    /// The error as gopher-lua's `ApiError.Error()` (state.go) writes it, which is what the
    /// controller logs: the message, then the traceback on the next line when there is one.
    pub fn controller_text(&self) -> String {
        match &self.traceback {
            Some(traceback) => format!("{}\n{traceback}", self.message),
            None => self.message.clone(),
        }
    }
}

impl fmt::Display for ScriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{} error at line {}: {}", self.kind, line, self.message),
            None => write!(f, "{} error: {}", self.kind, self.message),
        }
    }
}

impl std::error::Error for ScriptError {}
