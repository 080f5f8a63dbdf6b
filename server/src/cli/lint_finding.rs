//! What `lint` reports: a finding at a place in a file, with its fix, and the output formats
//! (shared by `lint`, `lint --fix` and the lint part of `check --lint`).

use std::ops::Range;

use clap::ValueEnum;

use crate::analysis::Severity;

/// Output formats of `lint`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum LintFormat {
    /// code, message, file:line:col, the source line with a caret, the fix
    #[default]
    Human,
    /// JSON Lines, one object per finding
    Json,
    /// GitHub Actions workflow annotations
    Github,
    /// SARIF 2.1.0 (GitHub code scanning)
    Sarif,
}

/// A 1-based position; the column counts characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Pos {
    pub line: u32,
    pub column: u32,
}

/// A fix, in the coordinates of the file that holds the script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileFix {
    pub title: String,
    /// Byte range in the file.
    pub range: Range<usize>,
    pub replacement: String,
    pub start: Pos,
    pub end: Pos,
}

/// One finding, at a place in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Display path of the file (a script, or the manifest holding it).
    pub file: String,
    /// The ConfigMap key of an embedded script.
    pub key: Option<String>,
    /// The lint code (`KL001`), `syntax`, or `configmap` for a remark about a manifest.
    pub code: &'static str,
    pub severity: Severity,
    pub message: String,
    pub start: Pos,
    pub end: Pos,
    /// The text of the start line, for the human report.
    pub source_line: String,
    pub fix: Option<FileFix>,
    /// Why the lint's fix is not offered here (it cannot be written into the manifest's YAML
    /// string exactly), so the reader knows to fix it by hand.
    pub fix_refused: Option<String>,
}

/// The code of syntax errors (not a lint: they cannot be turned off).
pub const SYNTAX: &str = "syntax";
/// The code of remarks about a ConfigMap manifest Kruise would not read as written.
pub const CONFIGMAP: &str = "configmap";
/// The code of a file too large to analyse (the language server's limit).
pub const TOO_LARGE: &str = "too-large";

/// How many fixes went into how many files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FixCount {
    pub edits: usize,
    pub files: usize,
}

impl FixCount {
    pub fn line(&self) -> String {
        format!(
            "fixed {} in {} {}",
            match self.edits {
                1 => "1 problem".to_string(),
                n => format!("{n} problems"),
            },
            self.files,
            if self.files == 1 { "file" } else { "files" }
        )
    }
}
