//! Where a ConfigMap's embedded script sits in its manifest: script offsets to manifest offsets
//! and back, script lines to manifest lines, and an edit of the script written into the
//! manifest. One implementation for `lint` (findings, `--fix`), `check`'s error lines and the
//! language server (diagnostics, code actions and every other range); the YAML side is the
//! engine's [`ScalarMap`], which knows every scalar style.

use std::ops::Range;

use kruise_lua_engine::discovery::{EmbeddedScript, read_configmap};
use kruise_lua_engine::yaml::scalar_map::{ScalarMap, ScalarStyle};

use crate::analysis::Fix;

/// How an embedded script's bytes and lines sit in its manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddedMap {
    scalar: ScalarMap,
    /// The 1-based manifest line where each script line starts.
    lines: Vec<u32>,
}

impl EmbeddedMap {
    pub fn new(script: &EmbeddedScript) -> EmbeddedMap {
        EmbeddedMap {
            scalar: script.map.clone(),
            lines: script.lines.clone(),
        }
    }

    /// The manifest byte offset of a script byte offset.
    pub fn to_host(&self, offset: usize) -> usize {
        self.scalar.to_source(offset)
    }

    /// The script byte offset of a manifest byte offset, when it falls inside the script.
    pub fn to_script(&self, offset: usize) -> Option<usize> {
        self.scalar.to_value(offset)
    }

    /// The 1-based manifest line where script line `lua_line` (1-based, as Lua counts)
    /// starts; a line past the script's last (Lua's `<eof>`) is its last.
    pub fn host_line(&self, lua_line: u32) -> u32 {
        let index = (lua_line.max(1) - 1) as usize;
        self.lines
            .get(index)
            .or(self.lines.last())
            .copied()
            .unwrap_or(1)
    }

    /// Script range `range` replaced by `text`, as the manifest spells it: the manifest range
    /// and `text` in the YAML string's style, or why that style cannot hold it. Unlike
    /// [`fix_edit`], nothing is read back: for an edit the user reviews as it lands (a
    /// completion), not one written unseen.
    pub fn source_edit(
        &self,
        range: Range<usize>,
        text: &str,
    ) -> Result<(Range<usize>, String), String> {
        self.scalar.source_edit(range, text)
    }

    /// Whether the script is a literal (`|`) block: its lines are the manifest's lines
    /// indented.
    pub fn is_literal_block(&self) -> bool {
        self.scalar.style() == ScalarStyle::Literal
    }

    /// The 1-based manifest line of each script line (for [`crate::chunk_positions`]).
    pub fn lines(&self) -> &[u32] {
        &self.lines
    }

    /// Script range `range` of `script` replaced by `replacement`, written into `manifest`
    /// (whose scripts, as read, are `before`): the manifest range to replace and its new text.
    /// Refused (with the reason) unless the range spells exactly that script text in the
    /// manifest and the edited manifest reads back as this script edited and every other
    /// script as it was: a fix never lands in another key's bytes, nor changes the script
    /// otherwise than asked.
    pub fn edit(
        &self,
        manifest: &str,
        before: &[EmbeddedScript],
        script: &str,
        range: Range<usize>,
        replacement: &str,
    ) -> Result<(Range<usize>, String), String> {
        let (at, text) = self.scalar.source_edit(range.clone(), replacement)?;
        let content = self.scalar.content();
        if at.start < content.start || at.end > content.end {
            return Err("the edit would reach outside the script's YAML string".into());
        }
        let mut edited_manifest = manifest.to_string();
        edited_manifest.replace_range(at.clone(), &text);
        let mut edited_script = script.to_string();
        edited_script.replace_range(range, replacement);
        let unchanged = "the edit cannot be written into this YAML string exactly (its folding \
                         or indentation would change the script); edit the manifest by hand";
        let after = read_configmap(&edited_manifest)
            .map_err(|_| unchanged.to_string())?
            .scripts;
        let this = before
            .iter()
            .position(|s| s.map == self.scalar && s.source == script)
            .ok_or("the script is no longer in the manifest")?;
        let reads_back = before.len() == after.len()
            && before
                .iter()
                .zip(&after)
                .enumerate()
                .all(|(i, (old, new))| {
                    old.key == new.key
                        && if i == this {
                            new.source == edited_script
                        } else {
                            new.source == old.source
                        }
                });
        if reads_back {
            Ok((at, text))
        } else {
            Err(unchanged.into())
        }
    }
}

/// A lint fix of `script` as the file holding it must spell it: as it is in a `.lua` file
/// (`embedded` is `None`); in a manifest, written into the script's YAML string by
/// [`EmbeddedMap::edit`] (`embedded`: the script's map and the manifest's scripts as read).
/// One rule for `lint --fix` and the editor's code action.
pub fn fix_edit(
    file: &str,
    embedded: Option<(&EmbeddedMap, &[EmbeddedScript])>,
    script: &str,
    fix: &Fix,
) -> Result<(Range<usize>, String), String> {
    match embedded {
        Some((map, before)) => map.edit(file, before, script, fix.range.clone(), &fix.replacement),
        None => Ok((fix.range.clone(), fix.replacement.clone())),
    }
}
