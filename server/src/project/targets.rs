//! PATHs to scripts and cases, one implementation for every command and the language server's
//! `check`-like runs: `lua_configuration` trees, single scripts (their cases found as in a
//! tree), test case files (run alone, with the script Kruise's test pairs them with) and
//! `kruise-rollout-configuration` ConfigMap manifests. A ConfigMap script takes its cases from
//! the first tree among the PATHs that has testdata for its provider, and the scripts that run
//! follow Kruise's lookup order (the engine's [`resolve`]): of several ConfigMap scripts for one
//! provider the first given is taken, the bundled script wins for a custom provider, the
//! ConfigMap one for an ingress class. Scripts Kruise would never read are listed as skipped.

use std::path::{Path, PathBuf};

use kruise_lua_engine::discovery::{
    CONFIGMAP_NAME, CUSTOM_SCRIPT_NAME, ConfigMapScripts, EmbeddedScript, INGRESS_FOLDER,
    Precedence, ScriptEntry, ScriptOrigin, discover, pair_with_testdata, read_configmap,
    read_when_both, resolve, taken_configmap_scripts, testdata_dir,
};
use kruise_lua_engine::runner::Script;
use kruise_lua_engine::script::ScriptFlavor;
use kruise_lua_engine::script::ScriptKind;
use kruise_lua_engine::testcase::CaseError;

use super::embedded::EmbeddedMap;
use super::schema_check::SchemaSubject;
use super::verdict::{Location, Note, ScriptReport, span_line};
use super::{UsageError, paths};

/// A script ready to run: its report header, source, and the cases to run.
pub struct Planned {
    pub header: ScriptReport,
    /// What the script routes (`None` for scripts listed but not run).
    pub kind: Option<ScriptKind>,
    /// Compiled once; every step starts from one of its prepared (rewound) states.
    pub script: Script,
    pub flavor: ScriptFlavor,
    /// What its results are validated as.
    pub subject: SchemaSubject,
    pub jobs: Vec<Job>,
}

/// One case file to run (or a problem found before running it).
pub struct Job {
    pub path: String,
    pub input: Result<String, CaseError>,
}

/// Discovers every PATH, pairs ConfigMap scripts with test cases, keeps the scripts Kruise
/// would run (the engine's [`resolve`] order), applies the filters and reads the case files
/// (unreadable files are usage errors, exit 2).
pub fn plan(
    roots: &[PathBuf],
    filters: &[String],
    limit_bytes: u64,
) -> Result<(Vec<Planned>, Vec<Note>), UsageError> {
    let mut bundled: Vec<ScriptEntry> = Vec::new();
    let mut trees: Vec<&Path> = Vec::new();
    let mut manifests: Vec<(&Path, Vec<EmbeddedScript>)> = Vec::new();
    let mut notes = Vec::new();
    let mut total = 0;
    // Entries of `bundled` made for case-file PATHs.
    let mut from_case_files: Vec<usize> = Vec::new();
    for root in roots {
        let metadata = std::fs::metadata(root).map_err(|err| UsageError::io(root, &err))?;
        let found = if metadata.is_dir() {
            trees.push(root);
            let entries = discover(root).map_err(|err| UsageError::io(root, &err))?;
            let found = entries.len();
            bundled.extend(entries);
            found
        } else if root.extension().is_some_and(|ext| ext == "lua") {
            let entries = discover_script(root)?;
            let found = entries.len();
            bundled.extend(entries);
            found
        } else if let Some(script) = script_of_case(root) {
            // A test case file runs alone, with the script Kruise's test pairs it with.
            let entries = discover_script(&script)?;
            let found = entries.len();
            for mut entry in entries {
                // Several case files of one script run under it once.
                match from_case_files
                    .iter()
                    .find(|&&at| bundled[at].origin == entry.origin)
                {
                    Some(&at) => {
                        if let Ok(cases) = &mut bundled[at].cases {
                            cases.push(root.clone());
                        }
                    }
                    None => {
                        entry.cases = Ok(vec![root.clone()]);
                        from_case_files.push(bundled.len());
                        bundled.push(entry);
                    }
                }
            }
            found
        } else {
            let text = super::read_text(root, limit_bytes)?;
            // A test case outside a testdata folder reads as a manifest without a ConfigMap.
            let read = read_manifest(
                root,
                &text,
                &format!(
                    " (a test case file runs with its script from <group>/<Kind>/testdata/ or {INGRESS_FOLDER}/testdata/<class>/)"
                ),
            )?;
            for note in read.notes {
                let location = Location {
                    file: paths::display(root),
                    line: span_line(note.span.as_ref()),
                };
                notes.push(Note {
                    location,
                    message: note.message,
                });
            }
            let found = read.scripts.len();
            manifests.push((root.as_path(), read.scripts));
            found
        };
        total += found;
    }

    // A tree may hold only the testdata of ConfigMap scripts, so only an empty whole counts.
    if total == 0 {
        let names: Vec<String> = roots.iter().map(|root| paths::display(root)).collect();
        return Err(UsageError(format!(
            "{}: no trafficRouting.lua, ingress-class or ConfigMap script found",
            names.join(", ")
        )));
    }

    // ConfigMap scripts take their cases from the first tree that has cases for them.
    let mut from_configmaps = Vec::new();
    for (manifest, scripts) in manifests {
        for script in scripts {
            let paired = trees
                .iter()
                .map(|tree| pair_with_testdata(vec![script.clone()], manifest, Some(tree)))
                .find(|entries| {
                    entries[0]
                        .cases
                        .as_ref()
                        .is_ok_and(|cases| !cases.is_empty())
                })
                .unwrap_or_else(|| pair_with_testdata(vec![script.clone()], manifest, None));
            from_configmaps.extend(paired);
        }
    }
    let ignored = ignored_scripts(&bundled, &from_configmaps);
    let entries = resolve(bundled, from_configmaps);

    let matches = |text: &str| filters.iter().any(|f| text.contains(f.as_str()));
    let mut planned = Vec::new();
    for entry in &entries {
        if let Some(error) = &entry.read_error {
            return Err(UsageError(error.clone()));
        }
        for skipped in &entry.skipped_cases {
            notes.push(Note {
                location: Location {
                    file: paths::display(&skipped.path),
                    line: None,
                },
                message: skipped.reason.clone(),
            });
        }
        let mut header = header(entry);
        let script_matches = filters.is_empty() || matches(&header.id());
        let mut jobs = Vec::new();
        match &entry.cases {
            Ok(case_paths) => {
                for case_path in case_paths {
                    let path = paths::display(case_path);
                    if script_matches || matches(&path) {
                        jobs.push(Job {
                            input: read_case(case_path, limit_bytes)?,
                            path,
                        });
                    }
                }
                if case_paths.is_empty() {
                    header.skipped = no_cases_reason(entry);
                }
            }
            Err(error) => {
                if script_matches {
                    jobs.push(Job {
                        path: missing_testdata_path(entry),
                        input: Err(error.clone()),
                    });
                }
            }
        }
        if !script_matches && jobs.is_empty() {
            continue;
        }
        let flavor = ScriptFlavor::from(&entry.kind);
        let script = Script::new(entry.source.clone());
        header.syntax_error = script.syntax_error().cloned();
        planned.push(Planned {
            header,
            kind: Some(entry.kind.clone()),
            script,
            flavor,
            subject: SchemaSubject::from(&entry.kind),
            jobs,
        });
    }
    for (entry, reason) in ignored {
        let mut header = header(&entry);
        if filters.is_empty() || matches(&header.id()) {
            header.skipped = Some(reason);
            planned.push(Planned {
                header,
                kind: None,
                script: Script::new(String::new()),
                flavor: ScriptFlavor::Custom,
                subject: SchemaSubject::from(&entry.kind),
                jobs: Vec::new(),
            });
        }
    }
    if planned.is_empty() && !filters.is_empty() {
        return Err(UsageError(format!(
            "--filter {} matched no script or case",
            filters.join(",")
        )));
    }
    Ok((planned, notes))
}

/// The script a test case file belongs to, as Kruise's test pairs them: a case under
/// `<group>/<Kind>/testdata/` runs `<group>/<Kind>/trafficRouting.lua`, one under
/// `trafficrouting_ingress/testdata/<class>/` runs `trafficrouting_ingress/<class>.lua`.
/// `None` for a file outside any `testdata` folder (a ConfigMap manifest, then).
pub fn script_of_case(path: &Path) -> Option<PathBuf> {
    let testdata = path
        .ancestors()
        .skip(1)
        .find(|dir| dir.file_name().is_some_and(|name| name == "testdata"))?;
    let folder = testdata.parent().unwrap_or(Path::new(""));
    if folder
        .file_name()
        .is_some_and(|name| name == INGRESS_FOLDER)
    {
        let class = path.strip_prefix(testdata).ok()?.components().next()?;
        let class = class.as_os_str().to_str()?;
        // A case file directly in the ingress testdata folder has no class.
        if path.parent() == Some(testdata) {
            return None;
        }
        Some(folder.join(format!("{class}.lua")))
    } else {
        Some(folder.join(CUSTOM_SCRIPT_NAME))
    }
}

/// A single script PATH, discovered from its folder (from the ingress folder's parent for an
/// ingress-class script) so its kind and cases follow the same rules as in a tree.
pub fn discover_script(path: &Path) -> Result<Vec<ScriptEntry>, UsageError> {
    let non_empty = |dir: Option<&Path>| match dir {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let parent = non_empty(path.parent());
    let root = if parent
        .file_name()
        .is_some_and(|name| name == INGRESS_FOLDER)
    {
        non_empty(parent.parent())
    } else {
        parent.clone()
    };
    let wanted = parent.join(path.file_name().unwrap_or_default());
    // The walk from `.` names files `./x/…`: compared without `.` components, as written.
    let plain = |path: &Path| -> PathBuf {
        path.components()
            .filter(|c| !matches!(c, std::path::Component::CurDir))
            .collect()
    };
    let entries = discover(&root).map_err(|err| UsageError::io(&root, &err))?;
    let entries: Vec<ScriptEntry> = entries
        .into_iter()
        .filter(
            |entry| matches!(&entry.origin, ScriptOrigin::File(file) if plain(file) == plain(&wanted)),
        )
        .collect();
    if entries.is_empty() {
        return Err(UsageError(format!(
            "{}: not a script Kruise would find (a path containing trafficRouting.lua, or {INGRESS_FOLDER}/<class>.lua)",
            paths::display(path)
        )));
    }
    Ok(entries)
}

/// Scripts Kruise never runs once ConfigMaps are taken into account, and why: a ConfigMap
/// custom-provider script whose provider has a bundled script (the bundled one wins), a
/// bundled ingress-class script replaced by a ConfigMap one (listed once, naming the one
/// taken), and a ConfigMap script for a provider another ConfigMap script given before it
/// already has (the engine's [`taken_configmap_scripts`]).
fn ignored_scripts(
    bundled: &[ScriptEntry],
    from_configmaps: &[ScriptEntry],
) -> Vec<(ScriptEntry, String)> {
    let taken = taken_configmap_scripts(from_configmaps.iter().map(|entry| &entry.kind));
    let mut ignored = Vec::new();
    for (at, entry) in from_configmaps.iter().enumerate() {
        let taken_id = || header(&from_configmaps[taken[at]]).id();
        let bundled_entry = bundled.iter().find(|b| b.kind == entry.kind);
        let read = bundled_entry.map(|_| read_when_both(&entry.kind));
        match (bundled_entry, read) {
            // Every ConfigMap script for the provider: the bundled one is read.
            (Some(bundled_entry), Some(Precedence::Bundled)) => {
                let bundled_id = header(bundled_entry).id();
                let (_, reason) = unread_script(&entry.kind, &bundled_id, &taken_id());
                ignored.push((entry.clone(), reason));
            }
            _ if taken[at] != at => {
                ignored.push((
                    entry.clone(),
                    another_configmap_taken(&entry.kind, &taken_id()),
                ));
            }
            (Some(bundled_entry), Some(Precedence::ConfigMap)) => {
                let bundled_id = header(bundled_entry).id();
                let (_, reason) = unread_script(&entry.kind, &bundled_id, &taken_id());
                ignored.push((bundled_entry.clone(), reason));
            }
            _ => {}
        }
    }
    ignored
}

/// A provider as the skip reasons name it: ``ingress class `nginx` ``, `example.io/Split`.
fn provider_name(kind: &ScriptKind) -> String {
    match kind {
        ScriptKind::Ingress { class } => format!("ingress class `{class}`"),
        ScriptKind::Custom { group, kind } => format!("{group}/{kind}"),
    }
}

/// Why a ConfigMap script for `kind` is never read when another one (`taken`, named by its id
/// `path#key`) is taken, as `check` and the language server word it.
pub fn another_configmap_taken(kind: &ScriptKind, taken: &str) -> String {
    format!(
        "another ConfigMap script for {} ({taken}) is taken: Kruise reads one {CONFIGMAP_NAME} ConfigMap",
        provider_name(kind)
    )
}

/// Of a bundled script and a ConfigMap script for the same provider `kind` (named by their
/// ids, `path` and `path#key`), the one Kruise reads (the engine's [`read_when_both`]) and why
/// the other is never read, as `check` and the language server word it.
pub fn unread_script(kind: &ScriptKind, bundled: &str, configmap: &str) -> (Precedence, String) {
    let read = read_when_both(kind);
    let provider = provider_name(kind);
    let reason = match read {
        Precedence::Bundled => format!(
            "Kruise runs the bundled script for {provider} ({bundled}); this ConfigMap script is never read"
        ),
        Precedence::ConfigMap => {
            format!("the ConfigMap script for {provider} ({configmap}) replaces it")
        }
    };
    (read, reason)
}

/// Why a script with no case files is not run (`None`: it is shown, with nothing to run).
fn no_cases_reason(entry: &ScriptEntry) -> Option<String> {
    match (&entry.origin, &entry.kind) {
        (ScriptOrigin::ConfigMap { .. }, ScriptKind::Custom { group, kind }) => Some(format!(
            "no test cases: also pass the lua_configuration tree that holds {group}/{kind}/testdata"
        )),
        (ScriptOrigin::ConfigMap { .. }, ScriptKind::Ingress { class }) => Some(format!(
            "no test cases: also pass the lua_configuration tree that holds {INGRESS_FOLDER}/testdata/{class}"
        )),
        (ScriptOrigin::File(_), ScriptKind::Ingress { class }) => Some(format!(
            "no test cases in {INGRESS_FOLDER}/testdata/{class}"
        )),
        // Kruise's test passes a custom provider whose testdata folder holds no case.
        (ScriptOrigin::File(_), ScriptKind::Custom { .. }) => None,
    }
}

/// The report header of a discovered script (discovery keeps PATHs as given).
fn header(entry: &ScriptEntry) -> ScriptReport {
    let (path, key, lines) = match &entry.origin {
        ScriptOrigin::File(path) => (path.clone(), None, Vec::new()),
        ScriptOrigin::ConfigMap { path, key, lines } => {
            (path.clone(), Some(key.clone()), lines.clone())
        }
    };
    let case_base = match (&entry.origin, &entry.cases) {
        (ScriptOrigin::File(_), _) => path.parent().map(paths::display).unwrap_or_default(),
        // A ConfigMap script's cases live in a tree: name them from their testdata folder on.
        (ScriptOrigin::ConfigMap { .. }, Ok(cases)) => cases
            .first()
            .and_then(|case| {
                case.ancestors()
                    .find(|dir| dir.file_name().is_some_and(|n| n == "testdata"))
            })
            .and_then(Path::parent)
            .map(paths::display)
            .unwrap_or_default(),
        (ScriptOrigin::ConfigMap { .. }, Err(_)) => String::new(),
    };
    ScriptReport {
        path: paths::display(&path),
        key,
        lines,
        case_base,
        cases: Vec::new(),
        skipped: None,
        syntax_error: None,
    }
}

/// Where a script's `testdata` folder should be, for reporting its absence.
fn missing_testdata_path(entry: &ScriptEntry) -> String {
    match &entry.origin {
        ScriptOrigin::File(path) => paths::display(&testdata_dir(
            path.parent().unwrap_or(Path::new("")),
            &entry.kind,
        )),
        ScriptOrigin::ConfigMap { path, .. } => paths::display(path),
    }
}

/// Reads a case file. I/O failures are usage errors; a folder, non-UTF-8 text or a file
/// over `--max-input-size` is a case error (Kruise's test fails on the first two too).
fn read_case(path: &Path, limit_bytes: u64) -> Result<Result<String, CaseError>, UsageError> {
    use kruise_lua_engine::input::{self, ReadError};
    match input::read_text(path, limit_bytes) {
        Ok(text) => Ok(Ok(text)),
        Err(ReadError::Io(err)) => Err(UsageError::io(path, &err)),
        Err(other) => Ok(Err(unreadable_case(&other))),
    }
}

/// The case error of a case file that was read but cannot be a case (a folder, non-UTF-8
/// text, too large), as `check` and the language server both say it.
pub fn unreadable_case(error: &kruise_lua_engine::input::ReadError) -> CaseError {
    use kruise_lua_engine::input::ReadError;
    match error {
        ReadError::NotRegular {
            what: "a directory",
        } => CaseError {
            message: "is a directory, not a test case file".to_string(),
            span: None,
        },
        ReadError::NotUtf8 { line, column } => {
            let at = kruise_lua_engine::yaml::Pos {
                line: *line,
                column: *column,
                offset: 0,
            };
            CaseError {
                message: format!(
                    "byte {column} is not valid UTF-8 (kruise-lua reads UTF-8 text only)"
                ),
                span: Some(kruise_lua_engine::yaml::Span { start: at, end: at }),
            }
        }
        other => CaseError {
            message: other.to_string(),
            span: None,
        },
    }
}

/// A file to lint (`lint`, `check --lint`) and its scripts.
pub struct Target {
    pub path: PathBuf,
    pub display: String,
    pub text: String,
    pub scripts: Vec<TargetScript>,
    /// A manifest's scripts as read (empty for a `.lua` file): what the manifest with a fix
    /// written into it must read back as ([`super::embedded::fix_edit`]).
    pub embedded: Vec<EmbeddedScript>,
    /// Remarks on a manifest (line, message).
    pub notes: Vec<(Option<u32>, String)>,
}

pub struct TargetScript {
    pub key: Option<String>,
    pub kind: ScriptKind,
    pub source: String,
    /// Where an embedded script sits in its manifest.
    pub map: Option<EmbeddedMap>,
    /// Case files, for the shape of `obj.data.spec`.
    pub cases: Vec<PathBuf>,
}

/// The scripts of the manifest `text` read from `root`; one that does not read is an error at
/// its line, with `no_configmap_hint` added when it holds no ConfigMap.
fn read_manifest(
    root: &Path,
    text: &str,
    no_configmap_hint: &str,
) -> Result<ConfigMapScripts, UsageError> {
    read_configmap(text).map_err(|error| {
        let location = Location {
            file: paths::display(root),
            line: span_line(error.span.as_ref()),
        };
        let hint = if error.message.contains("no ConfigMap") {
            no_configmap_hint
        } else {
            ""
        };
        UsageError(format!("{location}: {}{hint}", error.message))
    })
}

/// Reads every file PATH names (as `check` finds them): each script file, and each manifest
/// with its embedded scripts. Files are listed once, in the order first found.
pub fn collect(roots: &[PathBuf], limit_bytes: u64) -> Result<Vec<Target>, UsageError> {
    let mut targets: Vec<Target> = Vec::new();
    let trees: Vec<&Path> = roots
        .iter()
        .filter(|r| r.is_dir())
        .map(|r| r.as_path())
        .collect();
    let mut total = 0;
    for root in roots {
        let metadata = std::fs::metadata(root).map_err(|err| UsageError::io(root, &err))?;
        let entries = if metadata.is_dir() {
            discover(root).map_err(|err| UsageError::io(root, &err))?
        } else if root.extension().is_some_and(|ext| ext == "lua") {
            discover_script(root)?
        } else {
            let text = super::read_text(root, limit_bytes)?;
            let read = read_manifest(root, &text, "")?;
            total += read.scripts.len();
            let scripts = read
                .scripts
                .iter()
                .map(|script| embedded(root, &trees, script))
                .collect();
            let notes = read
                .notes
                .into_iter()
                .map(|note| (span_line(note.span.as_ref()), note.message))
                .collect();
            let target = Target {
                display: paths::display(root),
                path: root.clone(),
                text,
                scripts,
                embedded: read.scripts,
                notes,
            };
            push_target(&mut targets, target);
            continue;
        };
        for entry in entries {
            // A script that could not be read (a FIFO, a device, non-UTF-8 text) has no
            // source to lint: the same usage error `check` gives, not an empty script.
            if let Some(error) = &entry.read_error {
                return Err(UsageError(error.clone()));
            }
            let ScriptOrigin::File(path) = entry.origin else {
                continue;
            };
            total += 1;
            let script = TargetScript {
                key: None,
                kind: entry.kind,
                source: entry.source.clone(),
                map: None,
                cases: entry.cases.unwrap_or_default(),
            };
            let target = Target {
                display: paths::display(&path),
                path,
                text: entry.source,
                scripts: vec![script],
                embedded: Vec::new(),
                notes: Vec::new(),
            };
            push_target(&mut targets, target);
        }
    }
    if total == 0 {
        let names: Vec<String> = roots.iter().map(|root| paths::display(root)).collect();
        return Err(UsageError(format!(
            "{}: no trafficRouting.lua, ingress-class or ConfigMap script found",
            names.join(", ")
        )));
    }
    Ok(targets)
}

/// Adds `target` unless its file is listed already.
fn push_target(targets: &mut Vec<Target>, target: Target) {
    let same = |a: &Path, b: &Path| match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    };
    if !targets.iter().any(|t| same(&t.path, &target.path)) {
        targets.push(target);
    }
}

/// An embedded script, with its cases from the first tree among the PATHs that has some.
fn embedded(manifest: &Path, trees: &[&Path], script: &EmbeddedScript) -> TargetScript {
    let cases = trees
        .iter()
        .filter_map(|tree| {
            let entry = pair_with_testdata(vec![script.clone()], manifest, Some(tree)).remove(0);
            entry.cases.ok().filter(|cases| !cases.is_empty())
        })
        .next()
        .unwrap_or_default();
    TargetScript {
        map: Some(EmbeddedMap::new(script)),
        key: Some(script.key.clone()),
        kind: script.kind.clone(),
        source: script.source.clone(),
        cases,
    }
}
