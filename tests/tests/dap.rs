//! `kruise-lua dap` as a process, driven over stdio by a scripted DAP client: breakpoints
//! with the chosen step's obj, stepping, evaluation, conditional breakpoints and logpoints,
//! setVariable, pause in an infinite loop, runtime errors, the verdict, and time stopped
//! not counting toward the timeout.

mod common;

use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use serde_json::{Value, json};

/// Waiting longer than this for a message means the adapter hangs.
const HANG: Duration = Duration::from_secs(60);

const CASE: &str = "rollout:
  apiVersion: rollouts.kruise.io/v1beta1
  kind: Rollout
  spec:
    strategy:
      canary:
        trafficRoutings:
        - service: web
        steps:
        - traffic: 20%
        - traffic: 50%
original:
  apiVersion: example.io/v1
  kind: Route
  spec: {port: 8080}
expected:
- apiVersion: example.io/v1
  kind: Route
  spec: {port: 40}
- apiVersion: example.io/v1
  kind: Route
  spec: {port: 100}
";

const SCRIPT: &str = "local spec = obj.data.spec
local weight = obj.canaryWeight
local function double(n)
  local twice = n * 2
  return twice
end
spec.port = double(weight)
print(\"weight\", weight)
return obj.data
";

struct Client {
    child: Child,
    stdin: ChildStdin,
    messages: Receiver<Value>,
    /// Every message received so far, in order.
    seen: Vec<Value>,
    seq: i64,
}

impl Client {
    fn start() -> Client {
        let mut child = Command::new(common::binary())
            .arg("dap")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start kruise-lua dap");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let messages = common::frames_of(stdout);
        Client {
            child,
            stdin,
            messages,
            seen: Vec::new(),
            seq: 0,
        }
    }

    fn send(&mut self, command: &str, arguments: Value) -> i64 {
        self.seq += 1;
        let body =
            json!({"seq": self.seq, "type": "request", "command": command, "arguments": arguments})
                .to_string();
        self.stdin
            .write_all(format!("Content-Length: {}\r\n\r\n{body}", body.len()).as_bytes())
            .unwrap();
        self.stdin.flush().unwrap();
        self.seq
    }

    /// The next message (received after the ones already looked at) that `wanted` accepts.
    fn wait(&mut self, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
        loop {
            let message = self
                .messages
                .recv_timeout(HANG)
                .unwrap_or_else(|_| panic!("no {what} within {HANG:?}; got {:#?}", self.seen));
            self.seen.push(message.clone());
            if wanted(&message) {
                return message;
            }
        }
    }

    /// Sends a request and returns its successful response's body.
    fn request(&mut self, command: &str, arguments: Value) -> Value {
        let seq = self.send(command, arguments);
        let response = self.wait(&format!("response to {command}"), |m| {
            m["type"] == "response" && m["request_seq"] == seq
        });
        assert_eq!(response["success"], true, "{command}: {response:#}");
        response["body"].clone()
    }

    fn event(&mut self, event: &str) -> Value {
        self.wait(&format!("{event} event"), |m| m["event"] == event)["body"].clone()
    }

    /// initialize, launch, the initialized event, breakpoints, configurationDone.
    fn launch(&mut self, launch: Value, script: &Path, breakpoints: Value) {
        let capabilities = self.request("initialize", json!({"adapterID": "kruise-lua"}));
        assert_eq!(capabilities["supportsLogPoints"], true);
        self.request("launch", launch);
        self.event("initialized");
        let set = self.request(
            "setBreakpoints",
            json!({"source": {"path": script}, "breakpoints": breakpoints}),
        );
        assert!(
            set["breakpoints"]
                .as_array()
                .unwrap()
                .iter()
                .all(|b| b["verified"] == true)
        );
        self.request("configurationDone", json!({}));
    }

    fn stopped(&mut self, reason: &str) -> Value {
        let body = self.event("stopped");
        assert_eq!(body["reason"], reason, "{body:#}");
        body
    }

    fn top_frame(&mut self) -> Value {
        self.request("stackTrace", json!({"threadId": 1}))["stackFrames"][0].clone()
    }

    fn evaluate(&mut self, expression: &str, context: &str) -> String {
        self.request(
            "evaluate",
            json!({"expression": expression, "frameId": 1, "context": context}),
        )["result"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// The variables of a scope of the top frame.
    fn scope(&mut self, name: &str) -> Vec<Value> {
        let scopes = self.request("scopes", json!({"frameId": 1}))["scopes"].clone();
        let reference = scopes
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("no scope {name}: {scopes:#}"))["variablesReference"]
            .clone();
        self.request("variables", json!({"variablesReference": reference}))["variables"]
            .as_array()
            .unwrap()
            .clone()
    }

    /// The debug console's output (category console) until the session terminated, and
    /// the exit code reported.
    fn finish(&mut self) -> (String, i64) {
        let exited = self.event("exited");
        self.event("terminated");
        let console: String = self
            .seen
            .iter()
            .filter(|m| m["event"] == "output")
            .map(|m| m["body"]["output"].as_str().unwrap().to_owned())
            .collect();
        (console, exited["exitCode"].as_i64().unwrap())
    }

    fn disconnect(mut self) {
        self.request("disconnect", json!({}));
        let status = self.child.wait().unwrap();
        assert!(status.success());
    }
}

/// A scratch folder with the script and the case; returns (script, case) paths.
fn files(name: &str, script: &str, case: &str) -> (PathBuf, PathBuf) {
    let dir = common::scratch(name);
    let script_path = dir.join("trafficRouting.lua");
    let case_path = dir.join("case.yaml");
    std::fs::write(&script_path, script).unwrap();
    std::fs::write(&case_path, case).unwrap();
    (script_path, case_path)
}

#[test]
fn breakpoint_scopes_steps_evaluation_and_a_passing_verdict() {
    let (script, case) = files("dap-steps", SCRIPT, CASE);
    let mut client = Client::start();
    client.launch(
        json!({"script": script, "case": case, "step": 2}),
        &script,
        json!([{"line": 7}]),
    );
    client.stopped("breakpoint");
    let frame = client.top_frame();
    assert_eq!(frame["line"], 7);
    assert_eq!(frame["source"]["path"], json!(script));
    // Step 2's obj: canaryWeight 50.
    let obj = client.scope("obj");
    let weight = obj.iter().find(|v| v["name"] == "canaryWeight").unwrap();
    assert_eq!(weight["value"], "50");
    let locals = client.scope("Locals");
    assert!(
        locals
            .iter()
            .any(|v| v["name"] == "weight" && v["value"] == "50")
    );
    assert_eq!(client.evaluate("obj.canaryWeight", "watch"), "50");
    // Evaluation is read-only: an assignment in the console is undone.
    client.evaluate("weight = 1", "repl");
    assert_eq!(client.evaluate("weight", "hover"), "50");

    client.request("stepIn", json!({"threadId": 1}));
    client.stopped("step");
    let frame = client.top_frame();
    assert_eq!(
        (frame["name"].as_str(), frame["line"].as_i64()),
        (Some("double"), Some(4))
    );
    assert_eq!(client.evaluate("n * 2", "watch"), "100");
    client.request("stepOut", json!({"threadId": 1}));
    client.stopped("step");
    assert_eq!(client.top_frame()["line"], 8);
    client.request("next", json!({"threadId": 1}));
    client.stopped("step");
    assert_eq!(client.top_frame()["line"], 9);
    client.request("continue", json!({"threadId": 1}));
    let (console, exit_code) = client.finish();
    assert!(console.contains("weight\t50\n"), "{console}");
    assert!(console.contains("case.yaml: step 2: PASS"), "{console}");
    assert_eq!(exit_code, 0);
    client.disconnect();
}

const LOOP_CASE: &str = "rollout:
  apiVersion: rollouts.kruise.io/v1beta1
  kind: Rollout
  spec:
    strategy:
      canary:
        trafficRoutings:
        - service: web
        steps:
        - traffic: 20%
original:
  apiVersion: example.io/v1
  kind: Route
  spec: {total: 0}
expected:
- apiVersion: example.io/v1
  kind: Route
  spec: {total: 300}
";

const LOOP: &str = "local total = 0
for i = 1, 5 do
  total = total + i * obj.canaryWeight
end
obj.data.spec.total = total
return obj.data
";

#[test]
fn conditional_breakpoint_logpoint_set_variable_and_a_failing_verdict() {
    let (script, case) = files("dap-loop", LOOP, LOOP_CASE);
    let mut client = Client::start();
    client.launch(
        json!({"script": script, "case": case, "step": 1, "mode": "production"}),
        &script,
        json!([
            {"line": 3, "condition": "i == 2"},
            {"line": 5, "logMessage": "total is {total}"}
        ]),
    );
    client.stopped("breakpoint");
    assert_eq!(client.evaluate("i", "watch"), "2");
    assert_eq!(client.evaluate("total", "watch"), "20");
    let scopes = client.request("scopes", json!({"frameId": 1}))["scopes"].clone();
    let locals = scopes[0]["variablesReference"].clone();
    let set = client.request(
        "setVariable",
        json!({"variablesReference": locals, "name": "total", "value": "1000"}),
    );
    assert_eq!(set["value"], "1000");
    client.request("continue", json!({"threadId": 1}));
    let (console, exit_code) = client.finish();
    assert!(console.contains("total is 1280\n"), "{console}");
    assert!(console.contains("step 1: FAIL"), "{console}");
    assert!(
        console.contains("spec.total: expected 300, got 1280"),
        "{console}"
    );
    assert_eq!(exit_code, 1);
    client.disconnect();
}

#[test]
fn pause_stops_an_infinite_loop_where_it_runs() {
    let (script, case) = files(
        "dap-pause",
        "local n = 0\nwhile true do\n  n = n + 1\nend\n",
        LOOP_CASE,
    );
    let mut client = Client::start();
    // A long budget: the loop must still be running when the pause arrives.
    client.launch(
        json!({"script": script, "case": case, "timeout": 600000}),
        &script,
        json!([]),
    );
    std::thread::sleep(Duration::from_millis(200));
    client.request("pause", json!({"threadId": 1}));
    client.stopped("pause");
    let line = client.top_frame()["line"].as_i64().unwrap();
    assert!([2, 3].contains(&line), "{line}");
    assert_ne!(client.evaluate("n", "watch"), "0");
    client.request("terminate", json!({}));
    let (console, _) = client.finish();
    assert!(console.contains("ended by the debugger"), "{console}");
    client.disconnect();
}

#[test]
fn a_runtime_error_stops_with_its_message_then_ends_in_an_error_verdict() {
    let (script, case) = files(
        "dap-error",
        "local function check(x)\n  error('bad weight ' .. x)\nend\ncheck(obj.canaryWeight)\nreturn {}\n",
        CASE,
    );
    let mut client = Client::start();
    client.launch(json!({"script": script, "case": case}), &script, json!([]));
    let stop = client.stopped("exception");
    assert_eq!(stop["text"], "<string>:2: bad weight 20");
    let frame = client.top_frame();
    assert_eq!(
        (frame["name"].as_str(), frame["line"].as_i64()),
        (Some("check"), Some(2))
    );
    client.request("continue", json!({"threadId": 1}));
    let (console, exit_code) = client.finish();
    assert!(
        console.contains("step 1: ERROR: runtime error: <string>:2: bad weight 20"),
        "{console}"
    );
    assert_eq!(exit_code, 1);
    client.disconnect();
}

#[test]
fn time_stopped_at_a_breakpoint_does_not_count_toward_the_timeout() {
    let (script, case) = files("dap-timeout", SCRIPT, CASE);
    let mut client = Client::start();
    client.launch(
        json!({"script": script, "case": case, "timeout": 300}),
        &script,
        json!([{"line": 2}]),
    );
    client.stopped("breakpoint");
    std::thread::sleep(Duration::from_millis(600));
    client.request("continue", json!({"threadId": 1}));
    let (console, exit_code) = client.finish();
    assert!(console.contains("step 1: PASS"), "{console}");
    assert_eq!(exit_code, 0);
    client.disconnect();
}

#[test]
fn a_bad_launch_configuration_is_refused_with_its_cause() {
    let (script, _) = files("dap-bad-launch", SCRIPT, CASE);
    let mut client = Client::start();
    client.request("initialize", json!({"adapterID": "kruise-lua"}));
    let seq = client.send(
        "launch",
        json!({"script": script, "case": "/nonexistent/case.yaml"}),
    );
    let response = client.wait("launch response", |m| m["request_seq"] == seq);
    assert_eq!(response["success"], false);
    assert!(
        response["message"]
            .as_str()
            .unwrap()
            .contains("/nonexistent/case.yaml")
    );
    client.disconnect();
}

/// The end-of-run verdict is the one `check` and the editor show: a step whose result matches
/// but that misroutes (the intent check) fails, as `check` says `misrouted`.
#[test]
fn a_step_that_misroutes_ends_in_a_failing_verdict() {
    let dir = common::scratch("dap-misrouted");
    let folder = dir.join("lua_configuration/networking.istio.io/VirtualService");
    common::copy_tree(
        &common::fixtures().join("intent/istio-path-outside-route"),
        &folder,
    );
    let script = folder.join("trafficRouting.lua");
    let case = folder.join("testdata/case.yaml");
    let mut client = Client::start();
    client.launch(json!({"script": script, "case": case}), &script, json!([]));
    let (console, exit_code) = client.finish();
    assert!(
        console.contains(
            "case.yaml: step 1: FAIL (the result matches expected[0], but the step misroutes)"
        ),
        "{console}"
    );
    assert!(console.contains("misrouted (intent check"), "{console}");
    assert_eq!(exit_code, 1);
    client.disconnect();
}

/// A CRD of our own for [`a_later_steps_schema_verdict_is_checks`]: a weight that may only grow
/// (a transition rule).
const GROWING_CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: growings.example.io
spec:
  group: example.io
  scope: Namespaced
  names: {kind: Growing, plural: growings}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              weight:
                type: integer
                x-kubernetes-validations:
                - rule: self >= oldSelf
                  message: the weight may only grow
";

const GROWING_CASE: &str = "rollout:
  apiVersion: rollouts.kruise.io/v1beta1
  kind: Rollout
  spec:
    strategy:
      canary:
        trafficRoutings:
        - service: web
          customNetworkRefs:
          - {apiVersion: example.io/v1, kind: Growing, name: web}
        steps:
        - traffic: 20%
        - traffic: 30%
original:
  apiVersion: example.io/v1
  kind: Growing
  metadata: {name: web}
  spec: {weight: 50}
expected:
- apiVersion: example.io/v1
  kind: Growing
  metadata: {name: web}
  spec: {weight: 20}
- apiVersion: example.io/v1
  kind: Growing
  metadata: {name: web}
  spec: {weight: 30}
";

/// The debugger's verdict on a later step is `check`'s: Kruise updates the object the step
/// before left, so step 2 (30 after 20) keeps the weight growing, though 30 is below the
/// `original`'s 50 (which step 1 broke, and is invalid for).
#[test]
fn a_later_steps_schema_verdict_is_checks() {
    let dir = common::scratch("dap-later-step-schema");
    let root = dir.join("lua_configuration");
    let folder = root.join("example.io/Growing");
    std::fs::create_dir_all(folder.join("testdata")).unwrap();
    std::fs::create_dir_all(root.join("crds")).unwrap();
    std::fs::write(root.join("crds/growing.yaml"), GROWING_CRD).unwrap();
    let script = folder.join("trafficRouting.lua");
    std::fs::write(&script, "return { spec = { weight = obj.canaryWeight } }\n").unwrap();
    let case = folder.join("testdata/case.yaml");
    std::fs::write(&case, GROWING_CASE).unwrap();
    let checked = common::run_in(&dir, &["check", "--format", "json", "lua_configuration"]);
    let statuses: Vec<Value> = common::json_lines(&checked.stdout)
        .iter()
        .map(|line| line["status"].clone())
        .collect();
    assert_eq!(statuses, [json!("invalid"), json!("pass")], "{checked:?}");
    for (step, verdict) in [(1, "step 1: INVALID"), (2, "step 2: PASS")] {
        let mut client = Client::start();
        client.launch(
            json!({"script": script, "case": case, "step": step}),
            &script,
            json!([]),
        );
        let (console, _) = client.finish();
        assert!(console.contains(verdict), "{console}");
        client.disconnect();
    }
}

/// A step that runs into its time budget stops as a timeout, as its verdict and `check` call
/// it (error_kind timeout), not as a runtime error; and a request on a frame the run does not
/// have names the id the client sent (it said `no frame N-1`).
#[test]
fn a_timeout_stops_as_a_timeout_and_unknown_frames_are_named_as_sent() {
    let (script, case) = files("dap-runs-out", "while true do end\nreturn obj.data\n", CASE);
    let mut client = Client::start();
    client.launch(
        json!({"script": script, "case": case, "timeout": 200}),
        &script,
        json!([]),
    );
    let stop = client.stopped("exception");
    assert!(
        stop["description"]
            .as_str()
            .is_some_and(|text| text.starts_with("Timeout: ")),
        "{stop}"
    );
    for (command, arguments) in [
        ("evaluate", json!({"expression": "1", "frameId": 999})),
        ("scopes", json!({"frameId": 999})),
    ] {
        let id = client.send(command, arguments);
        let answer = client.wait(command, |m| {
            m["type"] == "response" && m["request_seq"] == id
        });
        assert_eq!(answer["success"], false, "{answer}");
        assert_eq!(answer["message"], "no frame 999", "{answer}");
    }
    client.request("continue", json!({"threadId": 1}));
    let (console, _) = client.finish();
    assert!(
        console.contains("timeout: <string>:1: context deadline exceeded"),
        "{console}"
    );
    assert!(!console.contains("runtime error"), "{console}");
    client.disconnect();
}
