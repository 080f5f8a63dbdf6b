//! Tests of the debugging hooks: stops, stepping, breakpoints, evaluation, pause, errors.

use std::time::Duration;

use super::*;
use crate::runner::{Mode, RunOptions, Script};
use crate::script::ScriptFlavor;
use crate::steps::StepStatus;
use crate::testcase::parse_case;

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

/// What the scripted debugger does at one stop.
type Action = Box<dyn FnMut(&Stop, &mut Paused<'_>) -> Resume>;

/// A step by step plan: what to do at each stop, in order; records stops and output.
struct Scripted {
    plan: Vec<Action>,
    stops: Vec<(StopReason, u32)>,
    outputs: Vec<Output>,
    /// Assertions that failed inside an action (the engine keeps panics from unwinding
    /// through Lua, so they are carried out here and checked after the run).
    failures: Vec<String>,
}

impl Scripted {
    fn new(plan: Vec<Action>) -> Scripted {
        Scripted {
            plan,
            stops: Vec::new(),
            outputs: Vec::new(),
            failures: Vec::new(),
        }
    }
}

impl Debugger for Scripted {
    fn stopped(&mut self, stop: &Stop, paused: &mut Paused<'_>) -> Resume {
        self.stops.push((stop.reason, stop.line));
        if self.plan.is_empty() {
            return Resume::Continue;
        }
        let mut action = self.plan.remove(0);
        let acted = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| action(stop, paused)));
        acted.unwrap_or_else(|panic| {
            let text = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            self.failures.push(text);
            Resume::Terminate
        })
    }

    fn output(&mut self, output: Output) {
        self.outputs.push(output);
    }
}

fn then(action: impl FnMut(&Stop, &mut Paused<'_>) -> Resume + 'static) -> Action {
    Box::new(action)
}

fn debug(
    script: &str,
    index: usize,
    control: &Control,
    debugger: &mut Scripted,
    options: &RunOptions,
) -> StepOutcome {
    let case = parse_case(CASE).unwrap();
    let step = StepToRun {
        script: &Script::new(script),
        flavor: ScriptFlavor::Custom,
        case: &case,
        index,
        mode: Mode::Harness,
        options,
    };
    let outcome = run_step(step, control, debugger);
    assert!(debugger.failures.is_empty(), "{:?}", debugger.failures);
    outcome
}

fn breakpoint(line: u32) -> Breakpoint {
    Breakpoint {
        line,
        ..Breakpoint::default()
    }
}

fn value(paused: &mut Paused<'_>, expression: &str) -> String {
    paused.evaluate(Some(0), expression).unwrap().value
}

#[test]
fn a_breakpoint_stops_with_the_chosen_steps_obj() {
    for (index, weight) in [(0, "20"), (1, "50")] {
        let control = Control::new(false);
        control.set_breakpoints(vec![breakpoint(7)]);
        let mut debugger = Scripted::new(vec![then(move |_, paused| {
            assert_eq!(value(paused, "obj.canaryWeight"), weight);
            let frames = paused.frames();
            assert_eq!(frames[0].line, Some(7));
            assert_eq!(frames[0].name, "main chunk");
            let scopes = paused.scopes(0).unwrap();
            let names: Vec<&str> = scopes.iter().map(|s| s.name.as_str()).collect();
            assert_eq!(names, ["Locals", "obj", "Globals"]);
            let locals = paused.variables(scopes[0].reference).unwrap();
            let weight_local = locals.iter().find(|v| v.name == "weight").unwrap();
            assert_eq!(
                (weight_local.value.as_str(), weight_local.type_name.as_str()),
                (weight, "number")
            );
            // Tables expand lazily: obj → data → spec → port.
            let obj = paused.variables(scopes[1].reference).unwrap();
            let data = obj.iter().find(|v| v.name == "data").unwrap();
            assert_ne!(data.reference, 0);
            let data = paused.variables(data.reference).unwrap();
            let spec = data.iter().find(|v| v.name == "spec").unwrap();
            let spec = paused.variables(spec.reference).unwrap();
            assert_eq!(spec[0].name, "port");
            assert_eq!(spec[0].value, "8080");
            Resume::Continue
        })]);
        let outcome = debug(
            SCRIPT,
            index,
            &control,
            &mut debugger,
            &RunOptions::default(),
        );
        assert_eq!(debugger.stops, [(StopReason::Breakpoint, 7)]);
        assert_eq!(outcome.status, StepStatus::Pass, "{outcome:?}");
        assert_eq!(
            debugger.outputs,
            [Output::Print(format!("weight\t{weight}"))]
        );
    }
}

#[test]
fn steps_go_over_into_and_out_of_functions() {
    let control = Control::new(true);
    let mut debugger = Scripted::new(vec![
        then(|_, _| Resume::StepOver), // 1 → 2
        then(|_, _| Resume::StepOver), // 2 → 6 (a function's closure is made on its `end` line)
        then(|_, _| Resume::StepOver), // 6 → 7
        then(|_, _| Resume::StepIn),   // 7 → 4, in double
        then(|_, paused| {
            assert_eq!(paused.frames()[0].name, "double");
            assert_eq!(paused.frames()[1].line, Some(7));
            assert_eq!(value(paused, "n"), "20");
            Resume::StepOut
        }),
        then(|_, _| Resume::StepOver), // out on the caller's next line, 8 → 9
        then(|_, _| Resume::Continue),
    ]);
    let outcome = debug(SCRIPT, 0, &control, &mut debugger, &RunOptions::default());
    let lines: Vec<u32> = debugger.stops.iter().map(|(_, line)| *line).collect();
    assert_eq!(lines, [1, 2, 6, 7, 4, 8, 9]);
    assert_eq!(debugger.stops[0].0, StopReason::Entry);
    assert_eq!(debugger.stops[1].0, StopReason::Step);
    assert_eq!(outcome.status, StepStatus::Pass);
}

#[test]
fn evaluation_changes_nothing_and_set_variable_does() {
    let control = Control::new(false);
    control.set_breakpoints(vec![breakpoint(7)]);
    let mut debugger = Scripted::new(vec![then(|_, paused| {
        // Statements and library calls with side effects are undone.
        paused.evaluate(Some(0), "weight = 99").unwrap();
        paused
            .evaluate(Some(0), "spec.port = 1; print('x')")
            .unwrap();
        paused
            .evaluate(Some(0), "table.insert(obj.data.spec, 5)")
            .unwrap();
        assert_eq!(value(paused, "weight"), "20");
        assert_eq!(value(paused, "spec.port"), "8080");
        assert_eq!(value(paused, "#obj.data.spec"), "0");
        let error = paused.evaluate(Some(0), "nothing.here").unwrap_err();
        assert!(error.contains("attempt to index"), "{error}");
        // An evaluated table expands from its copy.
        let spec = paused.evaluate(Some(0), "obj.data.spec").unwrap();
        let entries = paused.variables(spec.reference).unwrap();
        assert_eq!(
            (entries[0].name.as_str(), entries[0].value.as_str()),
            ("port", "8080")
        );
        // setVariable changes the run.
        let locals = paused.scopes(0).unwrap()[0].reference;
        let set = paused.set_variable(locals, "weight", "30").unwrap();
        assert_eq!(set.value, "30");
        assert!(paused.set_variable(locals, "weight", "thirty").is_err());
        Resume::Continue
    })]);
    let outcome = debug(SCRIPT, 0, &control, &mut debugger, &RunOptions::default());
    assert_eq!(debugger.outputs, [Output::Print("weight\t30".to_owned())]);
    assert_eq!(outcome.status, StepStatus::Fail);
    assert_eq!(
        crate::path_text::format_path(&outcome.diff[0].path),
        "spec.port"
    );
    assert!(outcome.actual.unwrap().contains(r#""port":60"#));
}

const LOOP: &str = "local total = 0
for i = 1, 5 do
  total = total + i * obj.canaryWeight
end
return {spec = {total = total}}
";

#[test]
fn conditions_hit_counts_and_logpoints() {
    let control = Control::new(false);
    control.set_breakpoints(vec![
        Breakpoint {
            line: 3,
            condition: Some("i == 3".into()),
            ..Breakpoint::default()
        },
        Breakpoint {
            line: 5,
            log_message: Some("total={total} {{braces}}".into()),
            ..Breakpoint::default()
        },
    ]);
    let mut debugger = Scripted::new(vec![then(|_, paused| {
        assert_eq!(value(paused, "i"), "3");
        assert_eq!(value(paused, "total"), "60");
        Resume::Continue
    })]);
    debug(LOOP, 0, &control, &mut debugger, &RunOptions::default());
    assert_eq!(debugger.stops, [(StopReason::Breakpoint, 3)]);
    assert_eq!(
        debugger.outputs,
        [Output::Log {
            line: 5,
            text: "total=300 {braces}".into()
        }]
    );

    let control = Control::new(false);
    control.set_breakpoints(vec![Breakpoint {
        line: 3,
        hit_condition: Some(">=4".into()),
        ..Breakpoint::default()
    }]);
    let mut debugger = Scripted::new(Vec::new());
    debug(LOOP, 0, &control, &mut debugger, &RunOptions::default());
    assert_eq!(
        debugger.stops,
        [(StopReason::Breakpoint, 3), (StopReason::Breakpoint, 3)]
    );
}

#[test]
fn a_runtime_error_stops_at_the_raising_frame() {
    let script = "local function check(x)\n  error('bad weight ' .. x)\nend\ncheck(obj.canaryWeight)\nreturn {}\n";
    let control = Control::new(false);
    let mut debugger = Scripted::new(vec![then(|stop, paused| {
        assert_eq!(stop.message.as_deref(), Some("<string>:2: bad weight 20"));
        let frames = paused.frames();
        assert_eq!(
            (frames[0].name.as_str(), frames[0].line),
            ("check", Some(2))
        );
        assert_eq!(frames[1].line, Some(4));
        assert_eq!(value(paused, "x"), "20");
        Resume::Continue
    })]);
    let outcome = debug(script, 0, &control, &mut debugger, &RunOptions::default());
    assert_eq!(debugger.stops, [(StopReason::Exception, 2)]);
    assert_eq!(outcome.status, StepStatus::Error);
    assert!(outcome.error.unwrap().message.contains("bad weight 20"));
}

#[test]
fn pause_stops_a_running_loop_and_terminate_ends_it() {
    let script = "local n = 0\nwhile true do\n  n = n + 1\nend\n";
    let control = Control::new(false);
    let mut debugger = Scripted::new(vec![then(|_, paused| {
        assert_ne!(value(paused, "n"), "0");
        Resume::Terminate
    })]);
    let options = RunOptions {
        limits: crate::vm::Limits {
            timeout: Duration::from_secs(60),
            ..crate::vm::Limits::default()
        },
        ..RunOptions::default()
    };
    let outcome = std::thread::scope(|scope| {
        scope.spawn(|| {
            std::thread::sleep(Duration::from_millis(50));
            control.request_pause();
        });
        debug(script, 0, &control, &mut debugger, &options)
    });
    assert_eq!(debugger.stops.len(), 1);
    assert_eq!(debugger.stops[0].0, StopReason::Pause);
    assert!(
        [2, 3].contains(&debugger.stops[0].1),
        "{:?}",
        debugger.stops
    );
    assert_eq!(outcome.status, StepStatus::Error);
}

#[test]
fn time_stopped_does_not_count_toward_the_timeout() {
    let control = Control::new(false);
    control.set_breakpoints(vec![breakpoint(2)]);
    let mut debugger = Scripted::new(vec![then(|_, _| {
        std::thread::sleep(Duration::from_millis(300));
        Resume::Continue
    })]);
    let options = RunOptions {
        limits: crate::vm::Limits {
            timeout: Duration::from_millis(200),
            ..crate::vm::Limits::default()
        },
        ..RunOptions::default()
    };
    let outcome = debug(SCRIPT, 0, &control, &mut debugger, &options);
    assert_eq!(outcome.status, StepStatus::Pass, "{:?}", outcome.error);
}

#[test]
fn table_fields_are_set_through_their_scope_and_bad_references_are_errors() {
    let control = Control::new(false);
    control.set_breakpoints(vec![breakpoint(2)]);
    let mut debugger = Scripted::new(vec![then(|_, paused| {
        let obj = paused.scopes(0).unwrap()[1].reference;
        let data = paused.variables(obj).unwrap();
        let data = data.iter().find(|v| v.name == "data").unwrap().reference;
        let spec = paused.variables(data).unwrap()[0].reference;
        assert_eq!(
            paused.set_variable(spec, "port", "'x'").unwrap().value,
            "\"x\""
        );
        assert!(paused.set_variable(spec, "nothing", "1").is_err());
        assert!(
            paused
                .variables(999)
                .unwrap_err()
                .contains("no variable reference 999")
        );
        assert!(paused.scopes(99).is_err());
        Resume::Continue
    })]);
    let outcome = debug(
        "local spec = obj.data.spec\nreturn obj.data\n",
        0,
        &control,
        &mut debugger,
        &RunOptions::default(),
    );
    assert!(outcome.actual.unwrap().contains(r#""port":"x""#));
}

#[test]
fn an_ingress_step_in_production_is_debugged_on_the_controllers_first_run_only() {
    let script = "local a = obj.annotations or {}\na['w'] = obj.weight\nreturn a\n";
    let control = Control::new(false);
    control.set_breakpoints(vec![breakpoint(2)]);
    let mut debugger = Scripted::new(vec![then(|_, paused| {
        assert_eq!(value(paused, "obj.weight"), "\"20\"");
        Resume::Continue
    })]);
    let case = parse_case(CASE).unwrap();
    let step = StepToRun {
        script: &Script::new(script),
        flavor: ScriptFlavor::Ingress,
        case: &case,
        index: 0,
        mode: Mode::Production,
        options: &RunOptions::default(),
    };
    run_step(step, &control, &mut debugger);
    assert!(debugger.failures.is_empty(), "{:?}", debugger.failures);
    assert_eq!(debugger.stops, [(StopReason::Breakpoint, 2)]);
}
