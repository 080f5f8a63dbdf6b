//! The per-file store of published diagnostics: merges the Lua analysis with each script's run
//! diagnostics, marks a script's as outdated while a newer run is pending, and remembers which
//! files each script reached, so stale ones get cleared.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use tower_lsp_server::ls_types::{Diagnostic, NumberOrString};

use super::project::ScriptId;

/// Diagnostics of a file, by producer: the Lua analysis, and each script's runs.
#[derive(Debug, Default)]
pub struct FileDiagnostics {
    pub analysis: Vec<Diagnostic>,
    /// Whether the Lua analysis has looked at this file. It reports every syntax error (the
    /// compiler's limits included) with its exact range, so a run's "syntax error" is then
    /// the same problem said again, or one of an older text.
    pub analysed: bool,
    pub runs: BTreeMap<ScriptId, Vec<Diagnostic>>,
}

/// Put before what a script's last run said while a newer run of it is pending: those results
/// belong to an older text and must not read as current.
pub const OUTDATED: &str = "(outdated: rerunning after a change) ";

fn outdated(d: &Diagnostic) -> Diagnostic {
    let mut d = d.clone();
    d.message = format!("{OUTDATED}{}", d.message);
    d
}

impl FileDiagnostics {
    fn runs_marked(&self, stale: &HashSet<ScriptId>) -> impl Iterator<Item = Diagnostic> + '_ {
        let stale: Vec<bool> = self.runs.keys().map(|id| stale.contains(id)).collect();
        let analysed = self.analysed;
        self.runs
            .values()
            .zip(stale)
            .flat_map(move |(list, stale)| {
                list.iter()
                    .filter(move |d| !(analysed && is_syntax(d)))
                    .map(move |d| if stale { outdated(d) } else { d.clone() })
            })
    }
}

/// A syntax error, from the analysis, the quick check or a run (`ErrorKind::Syntax`).
pub(super) fn is_syntax(d: &Diagnostic) -> bool {
    d.code == Some(NumberOrString::String("syntax".into()))
}

/// Everything published, per file.
#[derive(Debug, Default)]
pub struct DiagnosticStore {
    files: HashMap<PathBuf, FileDiagnostics>,
    /// The files each script's runs put diagnostics in (so a run touches only those).
    reach: HashMap<ScriptId, Vec<PathBuf>>,
    /// Scripts with a run pending: their stored run diagnostics are from an older text.
    stale: HashSet<ScriptId>,
}

impl DiagnosticStore {
    pub(super) fn all(&self, path: &Path) -> Vec<Diagnostic> {
        let Some(file) = self.files.get(path) else {
            return Vec::new();
        };
        let mut all = file.analysis.clone();
        all.extend(file.runs_marked(&self.stale));
        all
    }

    /// Sets the analysis layer of a file; returns the file's full list to publish.
    pub fn set_analysis(&mut self, path: &Path, diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
        let file = self.files.entry(path.to_path_buf()).or_default();
        file.analysis = diagnostics;
        file.analysed = true;
        self.all(path)
    }

    /// What to publish right after an edit, before the full analysis: the quick syntax
    /// verdict in place of the syntax errors, the previous lints when the lines did not move
    /// (`keep_lints`), and the runs' diagnostics. The store is not changed.
    pub fn quick(
        &self,
        path: &Path,
        syntax: Option<Diagnostic>,
        keep_lints: bool,
    ) -> Vec<Diagnostic> {
        let mut all: Vec<Diagnostic> = syntax.into_iter().collect();
        if let Some(file) = self.files.get(path) {
            if keep_lints {
                all.extend(file.analysis.iter().filter(|d| !is_syntax(d)).cloned());
            }
            all.extend(file.runs_marked(&self.stale));
        }
        all
    }

    /// A file's current list (what its last publish said), for pull diagnostics.
    pub fn current(&self, path: &Path) -> Vec<Diagnostic> {
        self.all(path)
    }

    /// Every file with diagnostics, with its list, for `workspace/diagnostic`.
    pub fn every_file(&self) -> Vec<(PathBuf, Vec<Diagnostic>)> {
        let mut files: Vec<(PathBuf, Vec<Diagnostic>)> = self
            .files
            .keys()
            .map(|p| (p.clone(), self.all(p)))
            .filter(|(_, list)| !list.is_empty())
            .collect();
        files.sort_by(|a, b| a.0.cmp(&b.0));
        files
    }

    /// Drops everything about a file (it was deleted).
    pub fn forget(&mut self, path: &Path) {
        self.files.remove(path);
    }

    /// Drops everything about the files under a folder (it was deleted or moved); returns them.
    pub fn forget_under(&mut self, dir: &Path) -> Vec<PathBuf> {
        let gone: Vec<PathBuf> = self
            .files
            .keys()
            .filter(|p| p.starts_with(dir))
            .cloned()
            .collect();
        for path in &gone {
            self.files.remove(path);
        }
        gone
    }

    /// A run of `script` is pending: what its last run said is marked outdated from now on.
    pub fn mark_stale(&mut self, script: &ScriptId) {
        self.stale.insert(script.clone());
    }

    /// While `script` is marked outdated: the files showing its run diagnostics, with their
    /// lists (to republish them marked).
    pub fn stale_lists(&self, script: &ScriptId) -> Vec<(PathBuf, Vec<Diagnostic>)> {
        if !self.stale.contains(script) {
            return Vec::new();
        }
        let reach = self.reach.get(script).cloned().unwrap_or_default();
        reach
            .into_iter()
            .filter(|p| {
                self.files
                    .get(p)
                    .is_some_and(|f| f.runs.get(script).is_some_and(|l| !l.is_empty()))
            })
            .map(|p| {
                let all = self.all(&p);
                (p, all)
            })
            .collect()
    }

    /// Replaces everything a script's runs said, in every file; returns each touched file's
    /// full list (files the script no longer reaches get their run diagnostics cleared).
    /// Costs the files this script reaches, not every file of the workspace.
    pub fn set_runs(
        &mut self,
        script: &ScriptId,
        per_file: Vec<(PathBuf, Vec<Diagnostic>)>,
    ) -> Vec<(PathBuf, Vec<Diagnostic>)> {
        self.stale.remove(script);
        let mut touched = self.reach.remove(script).unwrap_or_default();
        for path in &touched {
            if let Some(file) = self.files.get_mut(path) {
                file.runs.remove(script);
            }
        }
        let mut reach = Vec::with_capacity(per_file.len());
        for (path, list) in per_file {
            self.files
                .entry(path.clone())
                .or_default()
                .runs
                .insert(script.clone(), list);
            reach.push(path.clone());
            if !touched.contains(&path) {
                touched.push(path);
            }
        }
        if !reach.is_empty() {
            self.reach.insert(script.clone(), reach);
        }
        touched
            .into_iter()
            .map(|p| {
                let all = self.all(&p);
                (p, all)
            })
            .collect()
    }
}
