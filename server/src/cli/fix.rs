//! `lint --fix`: applies the lints' fixes to the files that hold the scripts. Only the bytes of
//! each fix change; overlapping fixes keep the first; a file is replaced as a whole, atomically
//! ([`replace_file`]), and only if nobody changed it since it was read.

use std::io::{self, Write};
use std::ops::Range;
use std::path::Path;

use super::lint::{Finding, Target};
use super::{UsageError, paths};

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

/// Applies every finding's fix to its file.
pub fn apply(targets: &[Target], findings: &[Finding]) -> Result<FixCount, UsageError> {
    let mut count = FixCount::default();
    for target in targets {
        let edits: Vec<(Range<usize>, &str)> = findings
            .iter()
            .filter(|f| f.file == target.display)
            .filter_map(|f| f.fix.as_ref())
            .map(|fix| (fix.range.clone(), fix.replacement.as_str()))
            .collect();
        let (text, applied) = apply_edits(&target.text, edits);
        if applied == 0 {
            continue;
        }
        replace_file(&target.path, target.text.as_bytes(), text.as_bytes())
            .map_err(|err| UsageError(format!("{}: --fix: {err}", paths::display(&target.path))))?;
        count.edits += applied;
        count.files += 1;
    }
    Ok(count)
}

/// `text` with the non-overlapping `edits` applied (an edit overlapping an earlier one is
/// dropped), and how many were applied.
fn apply_edits(text: &str, mut edits: Vec<(Range<usize>, &str)>) -> (String, usize) {
    edits.sort_by_key(|(range, _)| (range.start, range.end));
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    let mut applied = 0;
    for (range, replacement) in edits {
        if range.start < at || range.end > text.len() || range.start > range.end {
            continue;
        }
        if &text[range.clone()] == replacement {
            continue;
        }
        out.push_str(&text[at..range.start]);
        out.push_str(replacement);
        at = range.end;
        applied += 1;
    }
    out.push_str(&text[at..]);
    (out, applied)
}

/// Replaces the contents of the file at `path` (a symlink's target, not the link) with
/// `contents`, atomically: a temporary file in the same folder, written and synced, with the
/// file's permissions, renamed over it; the folder is synced after. Fails, leaving the file
/// alone, when its bytes are no longer `expected` (someone saved it since it was read); the
/// check is made just before the rename, so only a write in between can be lost.
pub fn replace_file(path: &Path, expected: &[u8], contents: &[u8]) -> io::Result<()> {
    let target = std::fs::canonicalize(path)?;
    let dir = target.parent().unwrap_or(Path::new("."));
    let permissions = std::fs::metadata(&target)?.permissions();
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut temp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".kruise-lua.tmp")
        .tempfile_in(dir)?;
    temp.write_all(contents)?;
    temp.as_file().set_permissions(permissions)?;
    temp.as_file().sync_all()?;
    if std::fs::read(&target)? != expected {
        return Err(io::Error::other(
            "the file changed since it was read; nothing written (run again)",
        ));
    }
    temp.persist(&target).map_err(|err| err.error)?;
    // The rename itself is durable once the folder is synced (not possible on every platform).
    if let Ok(folder) = std::fs::File::open(dir) {
        let _ = folder.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("kruise-lua-fix-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn edits_change_only_their_bytes_and_skip_overlaps() {
        let text = "local a = obj.canaryweight\nreturn x\n";
        let edits = vec![
            (14..26, "canaryWeight"),
            (16..20, "zzzz"),
            (27..33, "return"),
            (34..35, "obj.data"),
        ];
        let (out, applied) = apply_edits(text, edits);
        assert_eq!(out, "local a = obj.canaryWeight\nreturn obj.data\n");
        assert_eq!(applied, 2);
    }

    #[test]
    fn replace_keeps_permissions_follows_symlinks_and_refuses_changed_files() {
        let dir = scratch("replace");
        let file = dir.join("trafficRouting.lua");
        std::fs::write(&file, "old").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
            let link = dir.join("link.lua");
            std::os::unix::fs::symlink(&file, &link).unwrap();
            replace_file(&link, b"old", b"new").unwrap();
            assert!(
                std::fs::symlink_metadata(&link)
                    .unwrap()
                    .file_type()
                    .is_symlink()
            );
            assert_eq!(std::fs::read_to_string(&file).unwrap(), "new");
            let mode = std::fs::metadata(&file).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o640);
        }
        #[cfg(not(unix))]
        replace_file(&file, b"old", b"new").unwrap();
        let error = replace_file(&file, b"old", b"newer").unwrap_err();
        assert!(
            error.to_string().contains("changed since it was read"),
            "{error}"
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "new");
        let leftovers: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
