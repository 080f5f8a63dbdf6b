//! Builds Lua 5.1.5 with kruise-lua's gopher-lua patches into a static library.
//!
//! The pristine sources come from the `lua-src` crate (a build dependency pinned in
//! Cargo.lock, so they are exactly the ones Cargo verified by checksum): its `lua-5.1.5/`
//! folder is copied to OUT_DIR, `patches/gopher.patch` (a unified diff) is applied there, and
//! the result is compiled together with `csrc/*.c`. Every hunk's old text must occur exactly
//! once in its file, otherwise the build fails: a patch that no longer fits is never applied
//! halfway or in the wrong place.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let pristine = lua_src_dir().join("lua-5.1.5");
    let csrc = PathBuf::from("csrc");
    let patch_file = PathBuf::from("patches/gopher.patch");
    println!("cargo:rerun-if-changed=csrc");
    println!("cargo:rerun-if-changed=patches");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=Cargo.toml");

    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let src = out.join("lua-5.1.5-patched");
    if src.exists() {
        fs::remove_dir_all(&src).expect("clean patched sources");
    }
    fs::create_dir_all(&src).expect("create patched source dir");
    let entries = fs::read_dir(&pristine)
        .unwrap_or_else(|e| panic!("lua-src's Lua 5.1.5 sources at {}: {e}", pristine.display()));
    for entry in entries {
        let path = entry.expect("dir entry").path();
        if path.is_file() {
            fs::copy(&path, src.join(path.file_name().unwrap())).expect("copy source");
        }
    }
    let patch = fs::read_to_string(&patch_file).expect("read patches/gopher.patch");
    apply_unified_diff(&patch, &src);

    let mut build = cc::Build::new();
    build
        .warnings(false)
        .include(&src)
        .include(&csrc)
        .define("LUA_USE_LINUX", None);
    for dir in [&src, &csrc] {
        for entry in fs::read_dir(dir).expect("source dir") {
            let path = entry.expect("dir entry").path();
            if path.extension().is_some_and(|e| e == "c") {
                build.file(path);
            }
        }
    }
    build.cargo_metadata(false).compile("kruiselua51");
    println!("cargo:rustc-link-search=native={}", out.display());
    // whole-archive: mlua's references to the C API come later in the link line
    // than this crate's archive, so every object must be kept.
    println!("cargo:rustc-link-lib=static:+whole-archive=kruiselua51");
    println!("cargo:rustc-link-lib=m");
}

/// The folder of the `lua-src` package this build uses. lua-src exposes no path of its own,
/// so Cargo is asked where it unpacked it: `cargo metadata`, offline, on a scratch manifest
/// that depends on nothing but lua-src at the version Cargo.toml pins (a workspace-wide
/// query would need every member's dependencies downloaded, which `cargo install` does not
/// do). It runs from this crate's folder so the project's Cargo config (a `cargo vendor`
/// source replacement, say) applies.
fn lua_src_dir() -> PathBuf {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("manifest dir"));
    let version = pinned_lua_src_version(&manifest_dir.join("Cargo.toml"));
    let scratch = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("find-lua-src");
    fs::create_dir_all(scratch.join("src")).expect("scratch manifest folder");
    fs::write(scratch.join("src/lib.rs"), "").expect("scratch lib.rs");
    fs::write(
        scratch.join("Cargo.toml"),
        format!(
            "[package]\nname = \"find-lua-src\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n\
             [dependencies]\nlua-src = \"={version}\"\n\n[workspace]\n"
        ),
    )
    .expect("scratch Cargo.toml");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .current_dir(&manifest_dir)
        .args(["metadata", "--format-version", "1", "--offline"])
        .args([
            "--filter-platform",
            &std::env::var("TARGET").expect("TARGET"),
        ])
        .arg("--manifest-path")
        .arg(scratch.join("Cargo.toml"))
        .output()
        .expect("run cargo metadata");
    assert!(
        output.status.success(),
        "cargo metadata (to find lua-src {version}) failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("cargo metadata's JSON");
    let dirs: Vec<PathBuf> = metadata["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .filter(|p| p["name"] == "lua-src" && p["version"] == version.as_str())
        .filter_map(|p| {
            Path::new(p["manifest_path"].as_str()?)
                .parent()
                .map(Path::to_path_buf)
        })
        .collect();
    match dirs.as_slice() {
        [dir] => dir.clone(),
        _ => panic!("expected exactly one lua-src {version} package, found {dirs:?}"),
    }
}

/// The exact version in this crate's `lua-src = "=X"` build dependency (one place to change).
fn pinned_lua_src_version(manifest: &Path) -> String {
    let text = fs::read_to_string(manifest).expect("read lua51-sys/Cargo.toml");
    pinned_version_in(&text)
        .expect("lua51-sys/Cargo.toml pins lua-src as `lua-src = \"=X.Y.Z\"`")
        .to_string()
}

/// The `=X.Y.Z` pin of lua-src in a manifest, as written here (`lua-src = "=X.Y.Z"`) or as
/// `cargo package` rewrites it into the published Cargo.toml (a `[build-dependencies.lua-src]`
/// table with `version = "=X.Y.Z"`).
fn pinned_version_in(manifest: &str) -> Option<&str> {
    let mut in_lua_src_table = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_lua_src_table = line == "[build-dependencies.lua-src]";
            continue;
        }
        let pinned = if in_lua_src_table {
            line.strip_prefix("version = \"=")
        } else {
            line.strip_prefix("lua-src = \"=")
        };
        if let Some(version) = pinned.and_then(|rest| rest.strip_suffix('"')) {
            return Some(version);
        }
    }
    None
}

/// One hunk: the lines it expects (context and removed) and the lines it leaves.
struct Hunk {
    header: String,
    old: Vec<String>,
    new: Vec<String>,
}

/// Applies a unified diff (`--- a/F`, `+++ b/F`, `@@` hunks) to the files in `dir`.
/// Line numbers are ignored; each hunk is located by its old text, which must match
/// exactly once.
fn apply_unified_diff(patch: &str, dir: &Path) {
    let mut files: BTreeMap<String, Vec<Hunk>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in patch.lines() {
        if let Some(name) = line.strip_prefix("+++ ") {
            let name = name.split('\t').next().unwrap().trim();
            let name = name.strip_prefix("b/").unwrap_or(name).to_string();
            files.entry(name.clone()).or_default();
            current = Some(name);
        } else if line.starts_with("--- ") {
            current = None;
        } else if line.starts_with("@@") {
            let file = current
                .as_ref()
                .unwrap_or_else(|| panic!("hunk outside a file: {line}"));
            files.get_mut(file).unwrap().push(Hunk {
                header: line.to_string(),
                old: Vec::new(),
                new: Vec::new(),
            });
        } else if let Some(file) = &current {
            let Some(hunk) = files.get_mut(file).unwrap().last_mut() else {
                continue;
            };
            if let Some(rest) = line.strip_prefix(' ') {
                hunk.old.push(rest.to_string());
                hunk.new.push(rest.to_string());
            } else if let Some(rest) = line.strip_prefix('-') {
                hunk.old.push(rest.to_string());
            } else if let Some(rest) = line.strip_prefix('+') {
                hunk.new.push(rest.to_string());
            } else if line.is_empty() {
                // an empty context line whose leading space was stripped by an editor
                hunk.old.push(String::new());
                hunk.new.push(String::new());
            } else if !line.starts_with('\\') {
                panic!("gopher.patch: unexpected line in {file}: {line:?}");
            }
        }
    }
    assert!(!files.is_empty(), "gopher.patch holds no file");
    for (file, hunks) in files {
        let path = dir.join(&file);
        let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        for hunk in hunks {
            let starts: Vec<usize> = (0..=lines.len().saturating_sub(hunk.old.len()))
                .filter(|&i| lines[i..i + hunk.old.len()] == hunk.old[..])
                .collect();
            if starts.len() != 1 {
                panic!(
                    "gopher.patch: hunk {} of {file} matches {} times (must match exactly once)",
                    hunk.header,
                    starts.len()
                );
            }
            lines.splice(starts[0]..starts[0] + hunk.old.len(), hunk.new);
        }
        let mut patched = lines.join("\n");
        patched.push('\n');
        fs::write(&path, patched).unwrap_or_else(|e| panic!("{file}: {e}"));
    }
}
