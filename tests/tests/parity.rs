//! One verdict for every front end: the same corpus of cases, one per kind of verdict (pass,
//! fail, error, case error, script syntax error, `invalid` (schema), `misrouted` (intent),
//! order-dependent, warnings only, a step the intent check could not verify), run through `kruise-lua check --format json` and through
//! the language server (summary diagnostics, case lens titles, `runAll` counts and the status
//! counts editors derive from the summaries) must agree case by case; the steps `check` says
//! it could not verify by the intent check (`intent_not_checked`) are those the language server
//! marks with a `step-intent-not-checked` hint.
//!
//! A ConfigMap manifest beside the tree replaces a bundled ingress-class script: `check` runs
//! its case with the ConfigMap's script and lists the bundled one skipped; so must the editor.
//!
//! The language server does not rerun cases in shuffled key order, so the order-dependent case
//! is compared with `check` without `--shuffle` (the settings the editor runs it with).

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const PLAIN_SCRIPT: &str = "return { spec = { weight = obj.canaryWeight } }\n";

/// A case of `example.io/Plain` with one step at 20 % expecting `weight`, plus `extra` lines
/// under the case's top level.
fn plain_case(weight: u32, extra: &str) -> String {
    format!(
        "rollout:\n  spec:\n    strategy:\n      canary:\n        steps:\n        - traffic: 20%\n        trafficRoutings:\n        - service: demo\noriginal:\n  apiVersion: example.io/v1\n  kind: Plain\n  metadata:\n    name: demo\n  spec:\n    weight: 0\nexpected:\n- spec:\n    weight: {weight}\n{extra}"
    )
}

/// The corpus: fixtures of other suites plus a few small scripts written here.
fn corpus(dir: &Path) -> PathBuf {
    let tree = dir.join("lua_configuration");
    let fixtures = common::fixtures();
    // `invalid` (schema errors), pruned-field warnings, a passing and a skipped-step case.
    common::copy_tree(&fixtures.join("schema/lua_configuration"), &tree);
    // A runtime error and a case without steps (a case error).
    common::copy_tree(
        &fixtures.join("errors/lua_configuration/example.io/Broken"),
        &tree.join("example.io/Broken"),
    );
    // A result that depends on pairs() order.
    common::copy_tree(
        &fixtures.join("order/lua_configuration/example.io/Ordered"),
        &tree.join("example.io/Ordered"),
    );
    // A VirtualService step that passes but misroutes (intent check).
    common::copy_tree(
        &fixtures.join("intent/istio-path-outside-route"),
        &tree.join("networking.istio.io/VirtualService"),
    );
    let plain = tree.join("example.io/Plain");
    std::fs::create_dir_all(plain.join("testdata")).unwrap();
    std::fs::write(plain.join("trafficRouting.lua"), PLAIN_SCRIPT).unwrap();
    std::fs::write(plain.join("testdata/pass.yaml"), plain_case(20, "")).unwrap();
    std::fs::write(plain.join("testdata/fail.yaml"), plain_case(30, "")).unwrap();
    // Only a warning (an unknown top-level field); --deny-warnings is off.
    std::fs::write(
        plain.join("testdata/warned.yaml"),
        plain_case(20, "unknownField: 1\n"),
    )
    .unwrap();
    // A case without steps checks nothing: an error.
    std::fs::write(
        plain.join("testdata/no_steps.yaml"),
        plain_case(20, "").replace(
            "        steps:\n        - traffic: 20%\n",
            "        steps: []\n",
        ),
    )
    .unwrap();
    // A case file that is not a case at all.
    std::fs::write(plain.join("testdata/unreadable.yaml"), "rollout: [\n").unwrap();
    let syntax = tree.join("example.io/Syntax");
    std::fs::create_dir_all(syntax.join("testdata")).unwrap();
    std::fs::write(syntax.join("trafficRouting.lua"), "return { spec = \n").unwrap();
    std::fs::write(
        syntax.join("testdata/any.yaml"),
        plain_case(20, "").replace("Plain", "Syntax"),
    )
    .unwrap();
    // A bundled ingress-class script that `cm.yaml` replaces (the case passes with the
    // ConfigMap's script, fails with the bundled one).
    let ingress = tree.join("trafficrouting_ingress");
    std::fs::create_dir_all(ingress.join("testdata/demo")).unwrap();
    std::fs::write(
        ingress.join("demo.lua"),
        "return { [\"x/w\"] = \"bundled\" }\n",
    )
    .unwrap();
    std::fs::write(ingress.join("testdata/demo/replaced.yaml"), INGRESS_CASE).unwrap();
    std::fs::write(dir.join(MANIFEST), INGRESS_CONFIGMAP).unwrap();
    tree
}

/// The ConfigMap manifest of the corpus, beside its tree.
const MANIFEST: &str = "cm.yaml";

const INGRESS_CONFIGMAP: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kruise-rollout-configuration\ndata:\n  lua.traffic.routing.ingress.demo: |\n    return { [\"x/w\"] = \"configmap\" }\n";

const INGRESS_CASE: &str = "rollout:\n  spec:\n    strategy:\n      canary:\n        trafficRoutings:\n        - service: shop\n        steps:\n        - traffic: 30%\noriginal:\n  apiVersion: networking.k8s.io/v1\n  kind: Ingress\n  metadata:\n    name: shop\nexpected:\n- apiVersion: networking.k8s.io/v1\n  kind: Ingress\n  metadata:\n    name: shop\n    annotations:\n      x/w: configmap\n";

/// Per case file, whether `check --format json` says it passes, and per script its cases.
struct CheckVerdicts {
    cases: BTreeMap<PathBuf, bool>,
    /// Per case file, whether each step (numbered from 1) passes.
    steps: BTreeMap<PathBuf, BTreeMap<u64, bool>>,
    scripts: BTreeMap<PathBuf, Vec<PathBuf>>,
    statuses: BTreeMap<PathBuf, Vec<String>>,
    /// Per case file, the steps the intent check could not verify.
    intent_not_checked: BTreeMap<PathBuf, BTreeSet<u64>>,
    /// Per case file, the script lines (file, 1-based line) that wrote misrouting routes.
    written_at: BTreeMap<PathBuf, BTreeSet<(PathBuf, u64)>>,
}

fn check_verdicts(dir: &Path) -> CheckVerdicts {
    let run = common::run_in(
        dir,
        &["check", "--format", "json", "lua_configuration", MANIFEST],
    );
    assert_eq!(run.code, 1, "{run:?}");
    let mut verdicts = CheckVerdicts {
        cases: BTreeMap::new(),
        steps: BTreeMap::new(),
        scripts: BTreeMap::new(),
        statuses: BTreeMap::new(),
        intent_not_checked: BTreeMap::new(),
        written_at: BTreeMap::new(),
    };
    // The step objects (a skipped script is a `"type": "skipped"` object of its own).
    for line in common::json_objects_of(&run.stdout, None) {
        let case = dir.join(line["case"].as_str().unwrap());
        // A ConfigMap script (`cm.yaml#key`) is shown in its manifest.
        let script = line["script"].as_str().unwrap();
        let script = dir.join(script.split_once('#').map_or(script, |(host, _)| host));
        let status = line["status"].as_str().unwrap().to_string();
        let passes = status == "pass";
        let entry = verdicts.cases.entry(case.clone()).or_insert(true);
        *entry &= passes;
        if let (Some(step), Some(_)) = (line["step"].as_u64(), line["intent_not_checked"].as_str())
        {
            verdicts
                .intent_not_checked
                .entry(case.clone())
                .or_default()
                .insert(step);
        }
        for at in line["misrouted_written_at"]
            .as_array()
            .into_iter()
            .flatten()
        {
            if let (Some(file), Some(line)) = (at["file"].as_str(), at["line"].as_u64()) {
                verdicts
                    .written_at
                    .entry(case.clone())
                    .or_default()
                    .insert((dir.join(file), line));
            }
        }
        if let Some(step) = line["step"].as_u64() {
            verdicts
                .steps
                .entry(case.clone())
                .or_default()
                .insert(step, passes);
        }
        verdicts
            .statuses
            .entry(case.clone())
            .or_default()
            .push(status);
        let cases = verdicts.scripts.entry(script).or_default();
        if !cases.contains(&case) {
            cases.push(case);
        }
    }
    verdicts
}

/// A language server over stdio whose messages a thread reads into a channel.
struct Client {
    child: Child,
    stdin: ChildStdin,
    messages: Receiver<Value>,
    next_id: u64,
    /// The latest diagnostics published per file.
    diagnostics: HashMap<PathBuf, Vec<Value>>,
}

impl Client {
    fn start(root: &Path) -> Client {
        let mut child = Command::new(common::binary())
            .arg("lsp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start kruise-lua lsp");
        let stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let (sender, messages) = channel();
        std::thread::spawn(move || {
            loop {
                let mut length = 0;
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
                        length = n.parse().unwrap();
                    }
                }
                let mut body = vec![0; length];
                if stdout.read_exact(&mut body).is_err() {
                    return;
                }
                if sender.send(serde_json::from_slice(&body).unwrap()).is_err() {
                    return;
                }
            }
        });
        let mut client = Client {
            child,
            stdin,
            messages,
            next_id: 1,
            diagnostics: HashMap::new(),
        };
        let uri = uri(root);
        client.request(
            "initialize",
            json!({"capabilities": {}, "rootUri": uri, "workspaceFolders": [{"uri": uri, "name": "w"}]}),
        );
        client.notify("initialized", json!({}));
        client
    }

    fn send(&mut self, message: Value) {
        let body = message.to_string();
        write!(self.stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).unwrap();
        self.stdin.flush().unwrap();
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Handles one message from the server: keeps diagnostics, answers its requests.
    fn handle(&mut self, message: &Value) {
        match message.get("method").and_then(Value::as_str) {
            Some("textDocument/publishDiagnostics") => {
                let params = &message["params"];
                let path = path_of(params["uri"].as_str().unwrap());
                let list = params["diagnostics"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                self.diagnostics.insert(path, list);
            }
            Some(_) if message.get("id").is_some() => {
                let id = message["id"].clone();
                self.send(json!({"jsonrpc": "2.0", "id": id, "result": null}));
            }
            _ => {}
        }
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = self
                .messages
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("no answer to {method}: {e}"));
            if message.get("method").is_none() && message["id"] == json!(id) {
                assert!(message.get("error").is_none(), "{method}: {message}");
                return message["result"].clone();
            }
            self.handle(&message);
        }
    }

    /// Reads messages until none came for `quiet`.
    fn settle(&mut self, quiet: Duration) {
        loop {
            match self.messages.recv_timeout(quiet) {
                Ok(message) => self.handle(&message),
                Err(RecvTimeoutError::Timeout) => return,
                Err(RecvTimeoutError::Disconnected) => panic!("server ended"),
            }
        }
    }

    /// The summary diagnostic's message on a script (`P/T cases pass…`).
    fn summary(&self, script: &Path) -> Option<String> {
        self.diagnostics.get(script)?.iter().find_map(|d| {
            (d["code"] == json!("summary")).then(|| d["message"].as_str().unwrap().to_string())
        })
    }

    /// The steps of a case file the server's hints say the intent check could not verify
    /// (`step N: intent check not done: …`).
    fn intent_not_checked(&self, case: &Path) -> BTreeSet<u64> {
        self.diagnostics
            .get(case)
            .into_iter()
            .flatten()
            .filter(|d| d["code"] == json!("step-intent-not-checked"))
            .filter_map(|d| {
                let message = d["message"].as_str()?;
                let (number, _) = message.strip_prefix("step ")?.split_once(':')?;
                number.parse().ok()
            })
            .collect()
    }

    /// The script places (file, 1-based line) the related information of a case file's
    /// `step-misrouted` diagnostics points at.
    fn misrouted_related(&self, case: &Path) -> BTreeSet<(PathBuf, u64)> {
        self.diagnostics
            .get(case)
            .into_iter()
            .flatten()
            .filter(|d| d["code"] == json!("step-misrouted"))
            .flat_map(|d| {
                d["relatedInformation"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .filter_map(|related| {
                let location = &related["location"];
                Some((
                    path_of(location["uri"].as_str()?),
                    location["range"]["start"]["line"].as_u64()? + 1,
                ))
            })
            .collect()
    }

    /// The titles of a case file's lenses: the case summary first, then the steps'.
    fn case_lenses(&mut self, case: &Path) -> Vec<String> {
        let lenses = self.request(
            "textDocument/codeLens",
            json!({"textDocument": {"uri": uri(case)}}),
        );
        let titles: Vec<String> = lenses
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|lens| lens["command"]["title"].as_str())
            .map(String::from)
            .collect();
        assert!(!titles.is_empty(), "no lens on {}", case.display());
        titles
    }

    fn finish(mut self) {
        let _ = self.request("shutdown", Value::Null);
        self.notify("exit", Value::Null);
        let _ = self.child.wait();
    }
}

fn uri(path: &Path) -> String {
    format!("file://{}", path.display())
}

fn path_of(uri: &str) -> PathBuf {
    PathBuf::from(uri.strip_prefix("file://").unwrap())
}

/// `P/T` of a summary message `P/T cases pass…`, as editors' status bars read it.
fn summary_counts(message: &str) -> (usize, usize) {
    let (counts, _) = message.split_once(" case").unwrap();
    let (passed, total) = counts.split_once('/').unwrap();
    (passed.parse().unwrap(), total.parse().unwrap())
}

/// `N` of `N script(s) skipped` in the last line of `check`'s human report (0 when absent).
fn skipped_scripts(report: &str) -> usize {
    let last = report.lines().last().unwrap_or_default();
    last.split(", ")
        .find_map(|part| {
            let (n, what) = part.split_once(' ')?;
            what.starts_with("script").then(|| n.parse().ok())?
        })
        .unwrap_or(0)
}

#[test]
fn check_and_the_language_server_agree_on_every_case() {
    let dir = common::scratch("parity");
    let dir = dir.canonicalize().unwrap();
    corpus(&dir);
    let check = check_verdicts(&dir);
    // The corpus holds every kind of verdict.
    let statuses: Vec<&String> = check.statuses.values().flatten().collect();
    for status in ["pass", "fail", "error", "invalid", "misrouted"] {
        assert!(
            statuses.iter().any(|s| *s == status),
            "no `{status}` in the corpus: {:?}",
            check.statuses
        );
    }

    assert!(
        !check.intent_not_checked.is_empty(),
        "no step the intent check could not verify in the corpus"
    );
    assert!(
        !check.written_at.is_empty(),
        "no misrouted step with the script line that wrote its route in the corpus"
    );

    let mut client = Client::start(&dir);
    let counts = client.request(
        "workspace/executeCommand",
        json!({"command": "kruise-lua.runAll", "arguments": []}),
    );
    client.settle(Duration::from_millis(1500));

    let mut disagreements = Vec::new();
    let (mut passed, mut cases) = (0, 0);
    for (script, script_cases) in &check.scripts {
        let check_passed = script_cases.iter().filter(|c| check.cases[*c]).count();
        passed += check_passed;
        cases += script_cases.len();
        match client.summary(script) {
            Some(summary) => {
                if summary_counts(&summary) != (check_passed, script_cases.len()) {
                    disagreements.push(format!(
                        "{}: summary `{summary}`, check: {check_passed}/{} pass",
                        script.display(),
                        script_cases.len()
                    ));
                }
            }
            None => disagreements.push(format!("{}: no summary diagnostic", script.display())),
        }
        for case in script_cases {
            let not_checked = check
                .intent_not_checked
                .get(case)
                .cloned()
                .unwrap_or_default();
            let hinted = client.intent_not_checked(case);
            if hinted != not_checked {
                disagreements.push(format!(
                    "{}: intent not checked at steps {hinted:?} (hints), check: {not_checked:?}",
                    case.display()
                ));
            }
            // The script lines that wrote misrouting routes: `check` and the editor name the same.
            let written = check.written_at.get(case).cloned().unwrap_or_default();
            let related = client.misrouted_related(case);
            if related != written {
                disagreements.push(format!(
                    "{}: misrouting routes written at {related:?} (related information), check: {written:?}",
                    case.display()
                ));
            }
            let lenses = client.case_lenses(case);
            let lens = &lenses[0];
            if lens.starts_with('✓') != check.cases[case] {
                disagreements.push(format!(
                    "{}: lens `{lens}`, check: {:?}",
                    case.display(),
                    check.statuses[case]
                ));
            }
            // Each step's verdict lens (`✓ step N passes — …`, `✗ step N misroutes — …`).
            for title in &lenses[1..] {
                let Some((mark, rest)) = title.split_once(" step ") else {
                    continue;
                };
                if mark != "✓" && mark != "✗" {
                    continue;
                }
                let Some(number) = rest.split(' ').next().and_then(|n| n.parse::<u64>().ok())
                else {
                    continue;
                };
                let check_passes = check.steps.get(case).and_then(|steps| steps.get(&number));
                if check_passes != Some(&(mark == "✓")) {
                    disagreements.push(format!(
                        "{} step {number}: lens `{title}`, check: {:?}",
                        case.display(),
                        check.statuses[case]
                    ));
                }
            }
        }
    }
    if counts["passed"] != json!(passed) || counts["cases"] != json!(cases) {
        disagreements.push(format!(
            "runAll {counts}, check: {passed}/{cases} cases pass"
        ));
    }
    // Steps, as `check` counts them (the status bar says cases and steps, defect 12).
    let (steps, steps_passed) = check
        .steps
        .values()
        .flat_map(|steps| steps.values())
        .fold((0, 0), |(all, passing), &passes| {
            (all + 1, passing + usize::from(passes))
        });
    if counts["steps"] != json!(steps) || counts["stepsPassed"] != json!(steps_passed) {
        disagreements.push(format!(
            "runAll {counts}, check: {steps_passed}/{steps} steps pass"
        ));
    }
    // Scripts Kruise never reads (the bundled ingress script `cm.yaml` replaces): `check`
    // lists them skipped, runAll counts them apart.
    let human = common::run_in(&dir, &["check", "lua_configuration", MANIFEST]);
    let skipped = skipped_scripts(&human.stdout);
    assert!(skipped > 0, "no skipped script in the corpus: {human:?}");
    if counts["skipped"] != json!(skipped) {
        disagreements.push(format!(
            "runAll {counts}, check: {skipped} script(s) skipped"
        ));
    }
    // JSON says so too, one object a skipped script.
    let json = common::run_in(
        &dir,
        &["check", "--format", "json", "lua_configuration", MANIFEST],
    );
    let json_skipped = common::json_objects_of(&json.stdout, Some("skipped")).len();
    if json_skipped != skipped {
        disagreements.push(format!(
            "check --format json: {json_skipped} skipped object(s), human: {skipped}"
        ));
    }
    // The status bar's counts: the sum of the summaries.
    let status: (usize, usize) = client
        .diagnostics
        .keys()
        .filter_map(|file| client.summary(file))
        .map(|summary| summary_counts(&summary))
        .fold((0, 0), |(p, t), (sp, st)| (p + sp, t + st));
    if status != (passed, cases) {
        disagreements.push(format!(
            "status counts {status:?}, check: {passed}/{cases} cases pass"
        ));
    }
    client.finish();
    assert!(
        disagreements.is_empty(),
        "check and the language server disagree:\n{}",
        disagreements.join("\n")
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
