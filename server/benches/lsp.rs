//! LSP benchmark: starts the real `kruise-lua lsp` binary and drives it over stdio like an
//! editor would, measuring what a user waits for.
//!
//! `cargo bench -p kruise-lua --bench lsp` (optionally `KRUISE_LUA_BENCH_TREE=<lua_configuration>`;
//! by default the repository's `lua_configuration/`, else the LSP test fixtures).
//!
//! 1. initialize → first diagnostics, and → diagnostics for every case of the tree;
//! 2. edit → syntax diagnostics on a 2,000-line script (p50/p95 over 60 edits, 100 ms apart);
//! 3. edit of a script with 50 cases → every case's diagnostics republished (p50/p95);
//! 4. RSS of the idle server after the first run of the tree;
//! 5. with `KRUISE_LUA_BENCH_SCALE=1000,3000,10000` (only this then): startup on generated
//!    workspaces of that many scripts (one 3-step case each) — time until every case has its
//!    diagnostics, peak RSS, peak thread count, and completion latency (p50/p99) in an open
//!    script while the workspace runs;
//! 6. with `KRUISE_LUA_BENCH_BIGCASE=1` (only this then): a 1.9 MB case (just under the 2 MiB
//!    analysis limit) open and edited 29 times — RSS after each edit, peak RSS, edit → case
//!    diagnostics.
//! 7. with `KRUISE_LUA_BENCH_EDITING=1` (only this then): request → answer latency of rename,
//!    formatting (the script re-indented with spaces, so StyLua rewrites every line) and
//!    semantic tokens (full, and delta after a one-line edit) on the 2,000-line script (p50/p95),
//!    and of the structural requests (folding, selection range, document highlight, call
//!    hierarchy prepare/incoming, hover with types, inlay hints with parameter names, code
//!    actions on a lint, document links).
//! 8. with `KRUISE_LUA_BENCH_HOSTILE=1` (only this then): issue 22's pathological scripts, each
//!    request's time, CPU and RSS, and what is kept after close (`lsp/hostile.rs`).
//! 9. with `KRUISE_LUA_BENCH_CHECK=10000` (only this then): `kruise-lua check` over the same
//!    generated workspace (one 3-step case per script), once per `--format`: wall time and peak
//!    RSS (the child's `ru_maxrss`).
//!
//! `KRUISE_LUA_BENCH_BIN=<path>` drives that binary instead of this build's (to measure an
//! earlier commit's release build with the same client).

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

#[path = "lsp/hostile.rs"]
mod hostile;

/// The binary under test: this build's, or `KRUISE_LUA_BENCH_BIN` (to compare two builds, e.g. a
/// release binary of an earlier commit, with the same client).
fn server_binary() -> PathBuf {
    std::env::var_os("KRUISE_LUA_BENCH_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_kruise-lua")))
}

struct Server {
    child: Child,
    stdin: ChildStdin,
    messages: Receiver<(Instant, Value)>,
    next_id: u64,
}

impl Server {
    fn start() -> Server {
        let mut child = Command::new(server_binary())
            .arg("lsp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start kruise-lua lsp");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, messages) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            loop {
                let mut length = 0usize;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let line = line.trim_end();
                    if line.is_empty() {
                        break;
                    }
                    if let Some(n) = line.strip_prefix("Content-Length: ") {
                        length = n.parse().unwrap();
                    }
                }
                let mut body = vec![0; length];
                if reader.read_exact(&mut body).is_err() {
                    return;
                }
                let value: Value = serde_json::from_slice(&body).unwrap();
                if tx.send((Instant::now(), value)).is_err() {
                    return;
                }
            }
        });
        Server {
            child,
            stdin,
            messages,
            next_id: 1,
        }
    }

    fn send(&mut self, message: Value) {
        let body = message.to_string();
        write!(self.stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).unwrap();
        self.stdin.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Next message satisfying `pred`, answering server requests on the way.
    fn wait(&mut self, what: &str, mut pred: impl FnMut(&Value) -> bool) -> (Instant, Value) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let (at, message) = self
                .messages
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("timed out waiting for {what}"));
            if message.get("method").is_some() && message.get("id").is_some() {
                let id = message["id"].clone();
                self.send(json!({"jsonrpc": "2.0", "id": id, "result": null}));
                continue;
            }
            if pred(&message) {
                return (at, message);
            }
        }
    }

    fn initialize(&mut self, root: &Path, options: Value) -> Instant {
        let start = Instant::now();
        let uri = file_uri(root);
        let id = self.request(
            "initialize",
            json!({
                "processId": null,
                "rootUri": uri,
                "workspaceFolders": [{"uri": uri, "name": "bench"}],
                "capabilities": {"workspace": {"applyEdit": true}},
                "initializationOptions": options,
            }),
        );
        self.wait("initialize", |m| m["id"] == id);
        self.notify("initialized", json!({}));
        start
    }

    fn open(&mut self, path: &Path, text: &str) {
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": file_uri(path), "languageId": "lua", "version": 1, "text": text}}),
        );
    }

    fn change_line(&mut self, path: &Path, version: i32, line: usize, old_len: usize, text: &str) {
        self.notify(
            "textDocument/didChange",
            json!({
                "textDocument": {"uri": file_uri(path), "version": version},
                "contentChanges": [{
                    "range": {"start": {"line": line, "character": 0}, "end": {"line": line, "character": old_len}},
                    "text": text,
                }],
            }),
        );
    }

    fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    }

    /// (`VmHWM` peak RSS in KiB, `Threads`) of the server process now.
    fn peak_and_threads(&self) -> (u64, u64) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
                .unwrap_or(0)
        };
        (field("VmHWM:"), field("Threads:"))
    }

    fn stop(mut self) {
        let id = self.request("shutdown", Value::Null);
        self.wait("shutdown", |m| m["id"] == id);
        self.notify("exit", Value::Null);
        let _ = self.child.wait();
    }
}

fn file_uri(path: &Path) -> String {
    format!("file://{}", path.display())
}

fn is_publish(m: &Value) -> bool {
    m["method"] == "textDocument/publishDiagnostics"
}

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort();
    samples[((samples.len() - 1) as f64 * p).round() as usize]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn case_files(root: &Path) -> usize {
    let mut count = 0;
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.components().any(|c| c.as_os_str() == "testdata")
                && path.extension().is_some_and(|e| e == "yaml" || e == "yml")
            {
                count += 1;
            }
        }
    }
    count
}

fn bench_startup(tree: &Path) {
    let expected = case_files(tree);
    let mut server = Server::start();
    let start = server.initialize(tree, json!({}));
    let mut seen = HashSet::new();
    let mut first = None;
    let mut last = start;
    while seen.len() < expected {
        let (at, m) = server.wait("case diagnostics", is_publish);
        first.get_or_insert(at);
        let uri = m["params"]["uri"].as_str().unwrap_or_default().to_string();
        if uri.ends_with(".yaml") || uri.ends_with(".yml") {
            seen.insert(uri);
        }
        last = at;
    }
    println!("tree: {} ({expected} case files)", tree.display());
    println!(
        "initialize -> first diagnostics: {}",
        ms(first.unwrap_or(last) - start)
    );
    println!(
        "initialize -> diagnostics for every case: {}",
        ms(last - start)
    );
    std::thread::sleep(Duration::from_secs(2));
    println!(
        "idle RSS after the first run: {:.1} MiB",
        server.rss_kib() as f64 / 1024.0
    );
    server.stop();
}

/// A realistic 2,000-line script: helpers and loops over the spec.
fn big_script() -> String {
    let mut source = String::from("local spec = obj.data.spec\n");
    let mut i = 0;
    while source.lines().count() < 1999 {
        source.push_str(&format!(
            "local function route_{i}(rule, weight)\n  local out = {{}}\n  for _, r in ipairs(rule.route or {{}}) do\n    if r.destination.host == obj.stableService then\n      r.weight = obj.stableWeight - weight\n    else\n      table.insert(out, {{host = obj.canaryService, weight = obj.canaryWeight}})\n    end\n  end\n  return out\nend\nspec[\"r{i}\"] = route_{i}(spec.http[1], {i})\n"
        ));
        i += 1;
    }
    source.push_str("return obj.data\n");
    source
}

fn bench_syntax(dir: &Path) {
    let path = dir.join("big.lua");
    let source = big_script();
    let lines = source.lines().count();
    let mut server = Server::start();
    server.initialize(dir, json!({}));
    let uri = file_uri(&path);
    server.open(&path, &source);
    server.wait("first analysis", |m| {
        is_publish(m) && m["params"]["uri"] == uri
    });
    let line = 1000;
    let original = source.lines().nth(line).unwrap().to_string();
    let broken = format!("{original} = =");
    let mut samples = Vec::new();
    for version in 2..62 {
        let (old_len, text) = if version % 2 == 0 {
            (original.len(), broken.as_str())
        } else {
            (broken.len(), original.as_str())
        };
        let sent = Instant::now();
        server.change_line(&path, version, line, old_len, text);
        let want_error = version % 2 == 0;
        let (at, _) = server.wait("syntax diagnostics", |m| {
            is_publish(m)
                && m["params"]["uri"] == uri
                && m["params"]["diagnostics"]
                    .as_array()
                    .is_some_and(|d| d.iter().any(|d| d["code"] == "syntax") == want_error)
        });
        samples.push(at - sent);
        // Typing pace (10 keys/s): the full analysis of this edit finishes before the next.
        std::thread::sleep(Duration::from_millis(100));
        while server.messages.try_recv().is_ok() {}
    }
    println!(
        "edit -> syntax diagnostics ({lines}-line script, {} edits): p50 {}, p95 {}",
        samples.len(),
        ms(percentile(&mut samples, 0.5)),
        ms(percentile(&mut samples, 0.95))
    );
    server.stop();
}

const CASE: &str = include_str!(
    "../../tests/lsp/fixtures/workspace/lua_configuration/example.io/Route/testdata/weights.yaml"
);
const SCRIPT: &str = include_str!(
    "../../tests/lsp/fixtures/workspace/lua_configuration/example.io/Route/trafficRouting.lua"
);

fn bench_rerun(dir: &Path, debounce_ms: u64) {
    let route = dir.join("example.io").join("Route");
    let testdata = route.join("testdata");
    std::fs::create_dir_all(&testdata).unwrap();
    for i in 0..50 {
        std::fs::write(testdata.join(format!("case_{i:02}.yaml")), CASE).unwrap();
    }
    let script = route.join("trafficRouting.lua");
    std::fs::write(&script, SCRIPT).unwrap();
    let mut server = Server::start();
    server.initialize(dir, json!({"debounceMs": debounce_ms}));
    let mut seen = HashSet::new();
    while seen.len() < 51 {
        let (_, m) = server.wait("first run", is_publish);
        seen.insert(m["params"]["uri"].as_str().unwrap_or_default().to_string());
    }
    server.open(&script, SCRIPT);
    let line = SCRIPT
        .lines()
        .position(|l| l.contains("canary.weight = obj.canaryWeight"))
        .unwrap();
    let original = SCRIPT.lines().nth(line).unwrap().to_string();
    let changed = original.replace("obj.canaryWeight", "obj.canaryWeight + 1");
    // Let the open's own run settle.
    std::thread::sleep(Duration::from_millis(300));
    while server.messages.try_recv().is_ok() {}
    let mut samples = Vec::new();
    for version in 2..22 {
        let (old_len, text) = if version % 2 == 0 {
            (original.len(), changed.as_str())
        } else {
            (changed.len(), original.as_str())
        };
        let sent = Instant::now();
        server.change_line(&script, version, line, old_len, text);
        let mut cases = HashSet::new();
        let mut last = sent;
        while cases.len() < 50 {
            let (at, m) = server.wait("rerun diagnostics", is_publish);
            let uri = m["params"]["uri"].as_str().unwrap_or_default().to_string();
            if uri.ends_with(".yaml") {
                cases.insert(uri);
                last = at;
            }
        }
        samples.push(last - sent);
        // An isolated edit (a burst of edits is coalesced by the debounce).
        std::thread::sleep(Duration::from_millis(200));
        while server.messages.try_recv().is_ok() {}
    }
    println!(
        "edit -> rerun diagnostics for 50 cases (100 steps), debounce {debounce_ms} ms: p50 {}, p95 {}",
        ms(percentile(&mut samples, 0.5)),
        ms(percentile(&mut samples, 0.95))
    );
    server.stop();
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kruise-lua-bench-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The fixture case with a third step (100 %), as issue 19's scale target has it.
fn three_step_case() -> String {
    let last = CASE.rfind("- apiVersion: example.io/v1").unwrap();
    let third = CASE[last..].replace("weight: 50", "weight: 100");
    let mut case = CASE.replace(
        "        - traffic: \"50%\"\n",
        "        - traffic: \"50%\"\n        - traffic: \"100%\"\n",
    );
    case.push_str(&third);
    case
}

/// A workspace of `scripts` Kind folders, each with the fixture script and one 3-step case.
fn generate_workspace(dir: &Path, scripts: usize) {
    let case = three_step_case();
    for i in 0..scripts {
        let kind = dir
            .join(format!("group{}.io", i / 100))
            .join(format!("Kind{i}"));
        std::fs::create_dir_all(kind.join("testdata")).unwrap();
        std::fs::write(kind.join("trafficRouting.lua"), SCRIPT).unwrap();
        std::fs::write(kind.join("testdata/weights.yaml"), &case).unwrap();
    }
}

/// `kruise-lua check` over a generated workspace of `scripts` scripts, once per format: wall
/// time, peak RSS and the summary line.
fn bench_check(scripts: usize) {
    let dir = temp_dir(&format!("check{scripts}"));
    generate_workspace(&dir, scripts);
    for format in ["json", "human", "github", "junit", "sarif"] {
        let start = Instant::now();
        let child = Command::new(server_binary())
            .args(["check", "--color", "never", "--format", format])
            .arg(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start kruise-lua check");
        let (code, peak_kib) = wait_with_peak_rss(child);
        println!(
            "check --format {format}, {scripts} scripts x 3 steps: {:.2} s, peak RSS {:.0} MiB, exit {code}",
            start.elapsed().as_secs_f64(),
            peak_kib as f64 / 1024.0,
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Waits for `child`; its exit code and peak resident set (KiB, `ru_maxrss` from `wait4`, so
/// the peak is exact whenever it happened).
fn wait_with_peak_rss(child: Child) -> (i32, i64) {
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: `rusage` is plain data; `wait4` fills it for the child we spawned and did not
    // wait for yet.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4 failed");
    std::mem::forget(child);
    (libc::WEXITSTATUS(status), usage.ru_maxrss)
}

fn bench_scale(scripts: usize) {
    let dir = temp_dir(&format!("scale{scripts}"));
    generate_workspace(&dir, scripts);
    let mut server = Server::start();
    let start = server.initialize(&dir, json!({}));
    // An open script the user types in while the workspace runs.
    let scratch = dir.join("scratch.lua");
    let scratch_text = "local spec = obj.data.spec\nlocal w = obj.\nreturn obj.data\n";
    server.open(&scratch, scratch_text);
    let mut seen = HashSet::new();
    let mut completion = Vec::new();
    let (mut peak_threads, mut last) = (0, start);
    let mut pending: Option<(u64, Instant)> = None;
    while seen.len() < scripts {
        if pending.is_none() {
            let id = server.request(
                "textDocument/completion",
                json!({"textDocument": {"uri": file_uri(&scratch)}, "position": {"line": 1, "character": 14}}),
            );
            pending = Some((id, Instant::now()));
        }
        let (at, m) = server.wait("startup", |_| true);
        if let Some((id, sent)) = pending
            && m["id"] == id
        {
            completion.push(at - sent);
            pending = None;
            peak_threads = peak_threads.max(server.peak_and_threads().1);
            continue;
        }
        if is_publish(&m) {
            let uri = m["params"]["uri"].as_str().unwrap_or_default().to_string();
            if uri.ends_with(".yaml") {
                seen.insert(uri);
                last = at;
            }
        }
    }
    let (peak_kib, threads) = server.peak_and_threads();
    println!(
        "{scripts} scripts: every case's diagnostics after {:.2} s; peak RSS {:.0} MiB; peak threads {}; completion during startup ({} requests) p50 {}, p99 {}, max {}",
        (last - start).as_secs_f64(),
        peak_kib as f64 / 1024.0,
        peak_threads.max(threads),
        completion.len(),
        ms(percentile(&mut completion, 0.5)),
        ms(percentile(&mut completion, 0.99)),
        ms(percentile(&mut completion, 1.0)),
    );
    server.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

fn bench_big_case() {
    let dir = temp_dir("bigcase");
    let kind = dir.join("example.io/Route");
    std::fs::create_dir_all(kind.join("testdata")).unwrap();
    std::fs::write(
        kind.join("trafficRouting.lua"),
        "local spec = obj.data.spec\nspec.weight = obj.canaryWeight\nreturn obj.data\n",
    )
    .unwrap();
    let mut text = String::from(
        "rollout:\n  spec:\n    strategy:\n      canary:\n        trafficRoutings:\n        - service: web\n        steps:\n        - traffic: \"20%\"\noriginal:\n  apiVersion: x/v1\n  kind: Route\n  metadata:\n    name: r\n  spec:\n    weight: 0\n    items:\n",
    );
    for i in 0..23_000 {
        text.push_str(&format!(
            "      - name: item{i}\n        value: \"{}\"\n",
            "x".repeat(40)
        ));
    }
    text.push_str("expected:\n- apiVersion: x/v1\n  kind: Route\n  metadata:\n    name: r\n  spec:\n    weight: 21\n");
    let case = kind.join("testdata/big.yaml");
    std::fs::write(&case, &text).unwrap();
    let uri = file_uri(&case);
    let mut server = Server::start();
    server.initialize(&dir, json!({}));
    server.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "yaml", "version": 1, "text": text}}),
    );
    server.wait("case diagnostics", |m| {
        is_publish(m) && m["params"]["uri"] == uri
    });
    let weight_line = text.lines().count() - 1;
    let mut samples = Vec::new();
    let mut rss = Vec::new();
    for version in 2..31 {
        let sent = Instant::now();
        server.change_line(
            &case,
            version,
            weight_line,
            100,
            &format!("    weight: {version}"),
        );
        let (at, _) = server.wait("case diagnostics", |m| {
            is_publish(m) && m["params"]["uri"] == uri
        });
        samples.push(at - sent);
        rss.push(server.rss_kib() / 1024);
    }
    println!(
        "1.9 MB case ({} bytes), 29 edits: RSS after each edit (MiB) {rss:?}; peak RSS {} MiB; edit -> case diagnostics p50 {}, max {}",
        text.len(),
        server.peak_and_threads().0 / 1024,
        ms(percentile(&mut samples, 0.5)),
        ms(percentile(&mut samples, 1.0)),
    );
    server.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

/// p50 / p95 of `rounds` request → answer times of `method`; `params(round)` builds each.
fn time_requests(
    server: &mut Server,
    method: &str,
    rounds: usize,
    mut before: impl FnMut(&mut Server, usize),
    mut params: impl FnMut(usize) -> Value,
    check: impl Fn(&Value),
) -> (Duration, Duration) {
    let mut samples = Vec::with_capacity(rounds);
    for round in 0..rounds {
        before(server, round);
        let sent = Instant::now();
        let id = server.request(method, params(round));
        let (at, answer) = server.wait(method, |m| m["id"] == id);
        assert!(answer.get("error").is_none(), "{method}: {answer}");
        check(&answer["result"]);
        samples.push(at - sent);
        // Let the analysis of an edit settle, as between two user actions.
        std::thread::sleep(Duration::from_millis(50));
        while server.messages.try_recv().is_ok() {}
    }
    (
        percentile(&mut samples, 0.5),
        percentile(&mut samples, 0.95),
    )
}

fn bench_editing(dir: &Path) {
    let path = dir.join("big.lua");
    // Two-space indentation: StyLua's default (tabs) rewrites every indented line.
    let source = big_script();
    let lines = source.lines().count();
    let mut server = Server::start();
    server.initialize(dir, json!({}));
    let uri = file_uri(&path);
    server.open(&path, &source);
    server.wait("first analysis", |m| {
        is_publish(m) && m["params"]["uri"] == uri
    });
    let rounds = 30;
    let report = |what: &str, (p50, p95): (Duration, Duration)| {
        println!(
            "{what} ({lines}-line script, {rounds} requests): p50 {}, p95 {}",
            ms(p50),
            ms(p95)
        );
    };
    // `rule`, the parameter of a helper in the middle of the script (line 1000 or so).
    let line = source
        .lines()
        .enumerate()
        .skip(1000)
        .find(|(_, l)| l.starts_with("local function route_"))
        .map(|(i, _)| i)
        .unwrap();
    let column = source.lines().nth(line).unwrap().find("(rule").unwrap() + 1;
    let position = json!({"line": line, "character": column});
    report(
        "rename of a parameter",
        time_requests(
            &mut server,
            "textDocument/rename",
            rounds,
            |_, _| {},
            |round| json!({"textDocument": {"uri": uri}, "position": position, "newName": format!("r{round}")}),
            |result| assert!(result["changes"].is_object()),
        ),
    );
    report(
        "formatting, every indented line rewritten",
        time_requests(
            &mut server,
            "textDocument/formatting",
            rounds,
            |_, _| {},
            |_| json!({"textDocument": {"uri": uri}, "options": {"tabSize": 2, "insertSpaces": true}}),
            |result| assert!(!result.as_array().unwrap().is_empty()),
        ),
    );
    report(
        "semantic tokens, full",
        time_requests(
            &mut server,
            "textDocument/semanticTokens/full",
            rounds,
            |_, _| {},
            |_| json!({"textDocument": {"uri": uri}}),
            |result| assert!(result["data"].as_array().unwrap().len() > 10_000),
        ),
    );
    let doc = json!({"textDocument": {"uri": uri}});
    let at = json!({"textDocument": {"uri": uri}, "position": position});
    let whole =
        json!({"start": {"line": 0, "character": 0}, "end": {"line": lines, "character": 0}});
    report(
        "folding ranges",
        time_requests(
            &mut server,
            "textDocument/foldingRange",
            rounds,
            |_, _| {},
            |_| doc.clone(),
            |r| assert!(r.as_array().unwrap().len() > 100),
        ),
    );
    report(
        "selection range",
        time_requests(
            &mut server,
            "textDocument/selectionRange",
            rounds,
            |_, _| {},
            |_| json!({"textDocument": {"uri": uri}, "positions": [position]}),
            |r| assert!(r[0]["parent"].is_object()),
        ),
    );
    report(
        "document highlight",
        time_requests(
            &mut server,
            "textDocument/documentHighlight",
            rounds,
            |_, _| {},
            |_| at.clone(),
            |r| assert!(!r.as_array().unwrap().is_empty()),
        ),
    );
    // The helper's own name, on the line above the parameter's.
    let function_at =
        json!({"textDocument": {"uri": uri}, "position": {"line": line, "character": 16}});
    report(
        "call hierarchy, prepare",
        time_requests(
            &mut server,
            "textDocument/prepareCallHierarchy",
            rounds,
            |_, _| {},
            |_| function_at.clone(),
            |r| assert_eq!(r.as_array().unwrap().len(), 1),
        ),
    );
    let id = server.request("textDocument/prepareCallHierarchy", function_at.clone());
    let (_, item) = server.wait("call hierarchy item", |m| m["id"] == id);
    let item = item["result"][0].clone();
    report(
        "call hierarchy, incoming calls",
        time_requests(
            &mut server,
            "callHierarchy/incomingCalls",
            rounds,
            |_, _| {},
            |_| json!({"item": item}),
            |r| assert!(!r.as_array().unwrap().is_empty()),
        ),
    );
    report(
        "hover on a local function (with its result type)",
        time_requests(
            &mut server,
            "textDocument/hover",
            rounds,
            |_, _| {},
            |_| function_at.clone(),
            |r| {
                assert!(
                    r["contents"]["value"]
                        .as_str()
                        .unwrap()
                        .contains("function")
                )
            },
        ),
    );
    server.notify(
        "workspace/didChangeConfiguration",
        json!({"settings": {"kruiseLua": {"inlayHints": {"parameterNames": true}}}}),
    );
    report(
        "inlay hints with parameter names, whole script",
        time_requests(
            &mut server,
            "textDocument/inlayHint",
            rounds,
            |_, _| {},
            |_| json!({"textDocument": {"uri": uri}, "range": whole}),
            |r| assert!(!r.as_array().unwrap().is_empty()),
        ),
    );
    let lint = json!({"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 5}},
        "code": "KL007", "source": "kruise-lua", "message": "unused"});
    report(
        "code actions on a lint finding",
        time_requests(
            &mut server,
            "textDocument/codeAction",
            rounds,
            |_, _| {},
            |_| json!({"textDocument": {"uri": uri}, "range": lint["range"], "context": {"diagnostics": [lint]}}),
            |r| assert!(!r.as_array().unwrap().is_empty()),
        ),
    );
    report(
        "document links",
        time_requests(
            &mut server,
            "textDocument/documentLink",
            rounds,
            |_, _| {},
            |_| doc.clone(),
            |r| assert!(r.is_array()),
        ),
    );
    let id = server.request(
        "textDocument/semanticTokens/full",
        json!({"textDocument": {"uri": uri}}),
    );
    let (_, full) = server.wait("tokens", |m| m["id"] == id);
    let previous = std::cell::RefCell::new(full["result"]["resultId"].clone());
    let original = source.lines().nth(line + 1).unwrap().to_string();
    report(
        "semantic tokens, delta after a one-line edit",
        time_requests(
            &mut server,
            "textDocument/semanticTokens/full/delta",
            rounds,
            |server, round| {
                let (old, new) = if round % 2 == 0 {
                    (original.clone(), format!("{original} local x{round} = 1"))
                } else {
                    (
                        format!("{original} local x{} = 1", round - 1),
                        original.clone(),
                    )
                };
                server.change_line(&path, round as i32 + 2, line + 1, old.len(), &new);
            },
            |_| json!({"textDocument": {"uri": uri}, "previousResultId": previous.borrow().clone()}),
            |result| {
                assert!(result["edits"].is_array(), "a delta: {result}");
                *previous.borrow_mut() = result["resultId"].clone();
            },
        ),
    );
    server.stop();
    bench_type_definition(dir, &source, rounds);
}

/// `textDocument/typeDefinition` on `obj.data.spec` in the 2,000-line script as a
/// `trafficRouting.lua` with one case (the places are looked up in the cases' parsed YAML).
fn bench_type_definition(dir: &Path, source: &str, rounds: usize) {
    let kind = dir.join("typedef/lua_configuration/example.io/Route");
    std::fs::create_dir_all(kind.join("testdata")).unwrap();
    let path = kind.join("trafficRouting.lua");
    std::fs::write(&path, source).unwrap();
    std::fs::write(kind.join("testdata/weights.yaml"), CASE).unwrap();
    let mut server = Server::start();
    server.initialize(&dir.join("typedef"), json!({}));
    let uri = file_uri(&path);
    server.open(&path, source);
    let case_uri = file_uri(&kind.join("testdata/weights.yaml"));
    server.wait("the case's run", |m| {
        is_publish(m) && m["params"]["uri"] == case_uri
    });
    // `spec` of `local spec = obj.data.spec` on line 1.
    let at = json!({"textDocument": {"uri": uri}, "position": {"line": 0, "character": 23}});
    let (p50, p95) = time_requests(
        &mut server,
        "textDocument/typeDefinition",
        rounds,
        |_, _| {},
        |_| at.clone(),
        |r| assert_eq!(r.as_array().map(Vec::len), Some(1), "{r}"),
    );
    println!(
        "type definition of obj.data.spec ({}-line script, {rounds} requests): p50 {}, p95 {}",
        source.lines().count(),
        ms(p50),
        ms(p95)
    );
    server.stop();
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is understood.
    if std::env::var_os("KRUISE_LUA_BENCH_HOSTILE").is_some() {
        hostile::bench_hostile();
        return;
    }
    if std::env::var_os("KRUISE_LUA_BENCH_EDITING").is_some() {
        let dir = temp_dir("editing");
        bench_editing(&dir);
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    if std::env::var_os("KRUISE_LUA_BENCH_BIGCASE").is_some() {
        bench_big_case();
        return;
    }
    if let Ok(sizes) = std::env::var("KRUISE_LUA_BENCH_CHECK") {
        for size in sizes.split(',').filter_map(|s| s.trim().parse().ok()) {
            bench_check(size);
        }
        return;
    }
    if let Ok(sizes) = std::env::var("KRUISE_LUA_BENCH_SCALE") {
        for size in sizes.split(',').filter_map(|s| s.trim().parse().ok()) {
            bench_scale(size);
        }
        return;
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let tree = std::env::var_os("KRUISE_LUA_BENCH_TREE")
        .map(PathBuf::from)
        .or_else(|| Some(repo.join("lua_configuration")).filter(|p| p.is_dir()))
        .unwrap_or_else(|| repo.join("tests/lsp/fixtures/workspace"));
    bench_startup(&tree);
    let dir = temp_dir("syntax");
    bench_syntax(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    for debounce in [0, 80] {
        let dir = temp_dir("rerun");
        bench_rerun(&dir, debounce);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
