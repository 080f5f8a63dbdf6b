//! Where a ConfigMap's embedded script sits in its manifest: script offsets to manifest offsets
//! and back (the language server's positions, `lint`'s findings).

use kruise_lua_engine::discovery::EmbeddedScript;

/// How an embedded script's lines sit in its manifest: a literal block scalar puts script line
/// `n` (0-based) on manifest line `first_line + n`, after `indent` bytes of indentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EmbeddedMap {
    /// 0-based manifest line of the script's first line.
    pub first_line: usize,
    pub indent: usize,
}

impl EmbeddedMap {
    pub fn new(manifest: &str, script: &EmbeddedScript) -> EmbeddedMap {
        let first_line = script.line.saturating_sub(1) as usize;
        let indent = manifest
            .lines()
            .skip(first_line)
            .find(|line| !line.trim().is_empty())
            .map_or(0, |line| line.len() - line.trim_start_matches(' ').len());
        EmbeddedMap { first_line, indent }
    }

    /// The manifest byte offset of a script byte offset.
    pub fn to_host(self, manifest: &str, script: &str, offset: usize) -> usize {
        let offset = offset.min(script.len());
        let line = script[..offset].bytes().filter(|b| *b == b'\n').count();
        let column = offset - script[..offset].rfind('\n').map_or(0, |i| i + 1);
        let host_line_start = line_start(manifest, self.first_line + line);
        let host_line_end = manifest[host_line_start..]
            .find('\n')
            .map_or(manifest.len(), |i| host_line_start + i);
        (host_line_start + self.indent + column).min(host_line_end)
    }

    /// The script byte offset of a manifest byte offset, when it falls inside the script.
    pub fn to_script(self, manifest: &str, script: &str, offset: usize) -> Option<usize> {
        let offset = offset.min(manifest.len());
        let host_line = manifest[..offset].bytes().filter(|b| *b == b'\n').count();
        let line = host_line.checked_sub(self.first_line)?;
        let script_lines = script.lines().count().max(1);
        if line >= script_lines {
            return None;
        }
        let column = offset - line_start(manifest, host_line);
        let start = line_start(script, line);
        let end = script[start..]
            .find('\n')
            .map_or(script.len(), |i| start + i);
        Some((start + column.saturating_sub(self.indent)).min(end))
    }
}

fn line_start(text: &str, line: usize) -> usize {
    if line == 0 {
        return 0;
    }
    text.bytes()
        .enumerate()
        .filter(|(_, b)| *b == b'\n')
        .nth(line - 1)
        .map_or(text.len(), |(i, _)| i + 1)
}
