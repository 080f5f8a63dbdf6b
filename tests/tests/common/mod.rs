//! Shared helpers of the end-to-end tests: building and running the `kruise-lua` binary,
//! fixture paths, scratch folders, and reading what the tests compare.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use kruise_lua_engine::testcase::{TestCase, parse_case};
use serde_json::Value;

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// `tests/fixtures`.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// The `kruise-lua` binary of this build profile, built once per test process (a test crate
/// cannot depend on another package's binary, so ask cargo for it).
pub fn binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        let test_exe = std::env::current_exe().unwrap();
        // target/<profile dir>/deps/<test binary>
        let profile_dir = test_exe
            .parent()
            .and_then(Path::parent)
            .unwrap()
            .to_path_buf();
        let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") | None => "dev".to_string(),
            Some(other) => other.to_string(),
        };
        let status = Command::new(env!("CARGO"))
            .current_dir(workspace())
            .args([
                "build",
                "--quiet",
                "-p",
                "kruise-lua",
                "--bin",
                "kruise-lua",
                "--profile",
                &profile,
            ])
            .status()
            .expect("run cargo build");
        assert!(status.success(), "building kruise-lua failed");
        let binary = profile_dir.join(format!("kruise-lua{}", std::env::consts::EXE_SUFFIX));
        assert!(binary.exists(), "{} missing after build", binary.display());
        binary
    })
}

/// The result of one run of the binary.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn lines(&self) -> Vec<&str> {
        self.stdout.lines().collect()
    }
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {}\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// Runs `kruise-lua ARGS` in `dir` with colour off by environment.
pub fn run_in(dir: &Path, args: &[&str]) -> Run {
    let output: Output = Command::new(binary())
        .current_dir(dir)
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("run kruise-lua");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8(output.stdout).expect("UTF-8 stdout"),
        stderr: String::from_utf8(output.stderr).expect("UTF-8 stderr"),
    }
}

/// Runs `kruise-lua ARGS` in `tests/fixtures`.
pub fn run(args: &[&str]) -> Run {
    run_in(&fixtures(), args)
}

/// A fresh scratch folder for one test: `<temp>/kruise-lua-e2e-<checkout>/<test binary>/<name>`,
/// emptied when the test runs again, so runs do not pile up folders (the process id used to be
/// in the name: every run left a hundred). Named by the checkout so that two checkouts' suites
/// can run at once; not under `target/`, whose `.gitignore` and project files would be found
/// by the walks the tests exercise.
pub fn scratch(name: &str) -> PathBuf {
    use std::hash::{Hash, Hasher};
    let mut checkout = std::collections::hash_map::DefaultHasher::new();
    env!("CARGO_MANIFEST_DIR").hash(&mut checkout);
    let root =
        std::env::temp_dir().join(format!("kruise-lua-e2e-{:08x}", checkout.finish() as u32));
    // A repository root marker: the searches for a tree's `crds/` and kruise-lua.toml stop at
    // a folder holding `.git`, so that a `crds/` folder anyone leaves in the temp folder above
    // is not read by every test (it once made the language server keep 100 MiB more).
    std::fs::create_dir_all(root.join(".git")).unwrap();
    let dir = root.join(env!("CARGO_CRATE_NAME")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Copies a folder tree.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A test case file, parsed (a case that does not parse fails the test).
pub fn read_case(path: &Path) -> TestCase {
    let text = std::fs::read_to_string(path).unwrap();
    parse_case(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The objects of a JSON Lines report.
pub fn json_lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

/// The objects of a JSON Lines report of a `"type"` (`None`: the step objects, which have none).
pub fn json_objects_of(stdout: &str, kind: Option<&str>) -> Vec<Value> {
    json_lines(stdout)
        .into_iter()
        .filter(|line| line.get("type").and_then(Value::as_str) == kind)
        .collect()
}

/// Reads a server's Content-Length frames (LSP, DAP) on a thread of its own: each JSON message
/// arrives on the returned channel, which closes when the stream ends or breaks.
pub fn frames_of(
    mut stdout: impl std::io::BufRead + Send + 'static,
) -> std::sync::mpsc::Receiver<Value> {
    let (sender, messages) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        loop {
            let mut length = None;
            loop {
                let mut line = String::new();
                if stdout.read_line(&mut line).unwrap_or(0) == 0 {
                    return;
                }
                let line = line.trim_end();
                if line.is_empty() {
                    break;
                }
                if let Some(n) = line.strip_prefix("Content-Length: ") {
                    length = n.parse().ok();
                }
            }
            let mut body = vec![0; length.expect("a Content-Length header")];
            if stdout.read_exact(&mut body).is_err() {
                return;
            }
            if sender.send(serde_json::from_slice(&body).unwrap()).is_err() {
                return;
            }
        }
    });
    messages
}

/// Runs `kruise-lua ARGS` in `dir` as [`run_in`] does, killed after `seconds`: a hang fails
/// the test (exit 124 from `timeout`) instead of blocking the suite.
pub fn run_in_within(dir: &Path, seconds: u32, args: &[&str]) -> Run {
    let output: Output = Command::new("timeout")
        .current_dir(dir)
        .args(["-k", "5", &seconds.to_string()])
        .arg(binary())
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run timeout kruise-lua");
    let run = Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    };
    assert_ne!(
        run.code, 124,
        "hung (killed after {seconds} s): {args:?}\n{run:?}"
    );
    run
}

/// Makes a FIFO at `path` (`mkfifo`).
#[cfg(unix)]
pub fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success(), "mkfifo {}", path.display());
}
