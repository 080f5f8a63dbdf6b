//! Recording what a step's run held, line by line, for inline hints: a small client of the
//! debug hook that steps through every script line and notes, per line, the locals that line
//! set or changed and the values of chosen expressions (the `obj` reads on that line).
//!
//! A local's value after line L is read at the next stop in the same frame, so a line is
//! credited with the locals that appeared or changed between its stop and the next one there.
//! Lines run in a loop keep the last value and how many times it was recorded.

use std::collections::{BTreeMap, HashMap};

use super::{Control, Debugger, Output, Paused, Resume, Stop, run_step};
use crate::steps::{StepOutcome, StepToRun};

/// Stops recorded at most; past it the run goes on without stopping (a long loop would
/// otherwise take one stop per line per iteration, and stopped time is not charged to the
/// run's deadline).
pub const MAX_RECORDED_STOPS: usize = 20_000;

/// What one name or expression held on one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineValue {
    /// 1-based script line.
    pub line: u32,
    /// A local's name, or the watched expression's text.
    pub name: String,
    /// The last value, as the debugger shows it (`50`, `"web"`, `{…} (2 entries)`).
    pub value: String,
    /// How many times it was recorded on this line (more than 1 in loops).
    pub count: u32,
}

/// The values of one step's run.
#[derive(Debug, Clone)]
pub struct StepValues {
    /// In line order; on one line, in the order first recorded.
    pub values: Vec<LineValue>,
    /// Whether the run went past [`MAX_RECORDED_STOPS`] (later lines are not recorded).
    pub truncated: bool,
    /// The step's outcome, as [`run_step`] gives it.
    pub outcome: StepOutcome,
}

/// Runs `step` with the recorder attached. `watch` maps a line to
/// the expressions to evaluate there (before the line runs; evaluation changes nothing).
pub fn record_step_values(step: StepToRun<'_>, watch: &BTreeMap<u32, Vec<String>>) -> StepValues {
    record_step_values_after(step, watch, &BTreeMap::new())
}

/// [`record_step_values`], and `after` maps a line to expressions evaluated once it has run
/// (at the next stop in its frame): the targets of the field assignments on it (`d.weight`),
/// whose value is what the line wrote. A local whose field such a line wrote is not credited
/// to it as well (its `{…}` says nothing the field's value does not).
pub fn record_step_values_after(
    step: StepToRun<'_>,
    watch: &BTreeMap<u32, Vec<String>>,
    after: &BTreeMap<u32, Vec<String>>,
) -> StepValues {
    record_step_values_assigned(step, watch, after, &BTreeMap::new())
}

/// [`record_step_values_after`], and `assigned` maps a line to (target, assigned expression)
/// pairs of its single assignments (`route.weight = obj.canaryWeight`): the expression is
/// evaluated before the line runs and stands for the target's value when the target cannot be
/// read at the next stop (the write ends a loop body: the next stop is the `for` line, where
/// the loop's locals are out of scope).
pub fn record_step_values_assigned(
    step: StepToRun<'_>,
    watch: &BTreeMap<u32, Vec<String>>,
    after: &BTreeMap<u32, Vec<String>>,
    assigned: &BTreeMap<u32, Vec<(String, String)>>,
) -> StepValues {
    let control = Control::new(true);
    let mut recorder = Recorder {
        watch,
        after,
        assigned,
        stops: 0,
        truncated: false,
        frames: HashMap::new(),
        values: BTreeMap::new(),
        order: 0,
    };
    let outcome = run_step(step, &control, &mut recorder);
    let mut values: Vec<(u32, usize, LineValue)> = recorder
        .values
        .into_iter()
        .map(|((line, _), (order, value))| (line, order, value))
        .collect();
    values.sort_by_key(|(line, order, _)| (*line, *order));
    StepValues {
        values: values.into_iter().map(|(_, _, v)| v).collect(),
        truncated: recorder.truncated,
        outcome,
    }
}

/// The last stop seen in a frame (by stack depth): its function, line and locals then.
struct FrameState {
    function: String,
    line: u32,
    locals: HashMap<String, String>,
    /// What the line's single assignments assign, evaluated before it ran: (target, value).
    assigning: Vec<(String, String)>,
}

struct Recorder<'w> {
    watch: &'w BTreeMap<u32, Vec<String>>,
    after: &'w BTreeMap<u32, Vec<String>>,
    assigned: &'w BTreeMap<u32, Vec<(String, String)>>,
    stops: usize,
    truncated: bool,
    frames: HashMap<usize, FrameState>,
    /// (line, name) → (first-recorded order, value).
    values: BTreeMap<(u32, String), (usize, LineValue)>,
    order: usize,
}

impl Recorder<'_> {
    fn record(&mut self, line: u32, name: &str, value: String) {
        let order = self.order;
        let entry = self
            .values
            .entry((line, name.to_owned()))
            .or_insert_with(|| {
                (
                    order,
                    LineValue {
                        line,
                        name: name.to_owned(),
                        value: String::new(),
                        count: 0,
                    },
                )
            });
        entry.1.value = value;
        entry.1.count = entry.1.count.saturating_add(1);
        self.order += 1;
    }

    /// The innermost frame's locals (Lua's internal `(for …)` slots left out).
    fn locals(paused: &mut Paused<'_>) -> HashMap<String, String> {
        let Ok(scopes) = paused.scopes(0) else {
            return HashMap::new();
        };
        let Some(scope) = scopes.iter().find(|s| s.name == "Locals") else {
            return HashMap::new();
        };
        paused
            .variables(scope.reference)
            .unwrap_or_default()
            .into_iter()
            .filter(|v| !v.name.starts_with('('))
            .map(|v| (v.name, v.value))
            .collect()
    }
}

impl Debugger for Recorder<'_> {
    fn stopped(&mut self, stop: &Stop, paused: &mut Paused<'_>) -> Resume {
        self.stops += 1;
        if self.stops > MAX_RECORDED_STOPS {
            self.truncated = true;
            return Resume::Continue;
        }
        let frames = paused.frames();
        let depth = frames.len();
        let function = frames.first().map(|f| f.name.clone()).unwrap_or_default();
        // Frames deeper than this one have returned.
        self.frames.retain(|d, _| *d <= depth);
        let locals = Self::locals(paused);
        // Another call at the same depth starts afresh.
        if let Some(previous) = self
            .frames
            .remove(&depth)
            .filter(|previous| previous.function == function)
        {
            let written: &[String] = self.after.get(&previous.line).map_or(&[], Vec::as_slice);
            // `d` in `d.weight = …`: the field's value is recorded instead.
            let is_written_table = |name: &str| {
                written.iter().any(|w| {
                    w.strip_prefix(name)
                        .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('['))
                })
            };
            let mut changed: Vec<(&String, &String)> = locals
                .iter()
                .filter(|(name, value)| previous.locals.get(*name) != Some(*value))
                .filter(|(name, _)| !is_written_table(name))
                .collect();
            changed.sort();
            let line = previous.line;
            let mut after_values = Vec::new();
            for expression in written {
                if let Ok(variable) = paused.evaluate(Some(0), expression) {
                    after_values.push((expression.clone(), variable.value));
                } else if let Some((_, value)) = previous
                    .assigning
                    .iter()
                    .find(|(target, _)| target == expression)
                {
                    after_values.push((expression.clone(), value.clone()));
                }
            }
            let changed: Vec<(String, String)> = changed
                .into_iter()
                .map(|(n, v)| (n.clone(), v.clone()))
                .collect();
            for (name, value) in changed.into_iter().chain(after_values) {
                self.record(line, &name, value);
            }
        }
        if let Some(expressions) = self.watch.get(&stop.line) {
            for expression in expressions {
                if let Ok(variable) = paused.evaluate(Some(0), expression) {
                    self.record(stop.line, expression, variable.value);
                }
            }
        }
        let mut assigning = Vec::new();
        for (target, expression) in self.assigned.get(&stop.line).map_or(&[][..], Vec::as_slice) {
            if let Ok(variable) = paused.evaluate(Some(0), expression) {
                assigning.push((target.clone(), variable.value));
            }
        }
        self.frames.insert(
            depth,
            FrameState {
                function,
                line: stop.line,
                locals,
                assigning,
            },
        );
        Resume::StepIn
    }

    fn output(&mut self, _output: Output) {}
}

#[cfg(test)]
mod tests {
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
  spec:
    routes: [{name: a, weight: 1}, {name: b, weight: 2}, {name: c, weight: 3}]
expected:
- apiVersion: example.io/v1
  kind: Route
  spec:
    routes: [{name: a, weight: 1}, {name: b, weight: 2}, {name: c, weight: 3}]
- apiVersion: example.io/v1
  kind: Route
  spec:
    routes: [{name: a, weight: 1}, {name: b, weight: 2}, {name: c, weight: 3}]
";

    const SCRIPT: &str = "local spec = obj.data.spec
local weight = obj.canaryWeight
local total = 0
for _, route in ipairs(spec.routes) do
  total = total + route.weight
end
local function half(n)
  local h = n / 2
  return h
end
local name = \"w\" .. half(weight)
return obj.data
";

    fn record(index: usize, watch: &[(u32, &str)]) -> StepValues {
        let case = parse_case(CASE).unwrap();
        let mut lines: BTreeMap<u32, Vec<String>> = BTreeMap::new();
        for (line, expression) in watch {
            lines.entry(*line).or_default().push(expression.to_string());
        }
        record_step_values(
            StepToRun {
                script: &Script::new(SCRIPT),
                flavor: ScriptFlavor::Custom,
                case: &case,
                index,
                mode: Mode::Harness,
                options: &RunOptions::default(),
            },
            &lines,
        )
    }

    fn at(values: &StepValues, line: u32, name: &str) -> Option<(String, u32)> {
        values
            .values
            .iter()
            .find(|v| v.line == line && v.name == name)
            .map(|v| (v.value.clone(), v.count))
    }

    #[test]
    fn each_line_gets_the_locals_it_set_with_loop_counts() {
        let values = record(1, &[(2, "obj.canaryWeight")]);
        assert_eq!(
            values.outcome.status,
            StepStatus::Pass,
            "{:?}",
            values.outcome
        );
        assert!(!values.truncated);
        assert_eq!(at(&values, 2, "weight"), Some(("50".into(), 1)));
        assert_eq!(at(&values, 2, "obj.canaryWeight"), Some(("50".into(), 1)));
        assert_eq!(at(&values, 3, "total"), Some(("0".into(), 1)));
        // The body line ran three times; the last value is kept.
        assert_eq!(at(&values, 5, "total"), Some(("6".into(), 3)));
        // The loop variable changes on the `for` line.
        let route = at(&values, 4, "route").unwrap();
        assert_eq!(route.1, 3, "{values:?}");
        // Inside the function, in its own frame; the caller's line after the call returns.
        assert_eq!(at(&values, 8, "h"), Some(("25".into(), 1)));
        assert_eq!(at(&values, 11, "name"), Some(("\"w25\"".into(), 1)));
        // Nothing is credited to a line that set nothing.
        assert!(values.values.iter().all(|v| v.line != 12), "{values:?}");
        // In line order.
        let lines: Vec<u32> = values.values.iter().map(|v| v.line).collect();
        let mut sorted = lines.clone();
        sorted.sort();
        assert_eq!(lines, sorted);
        // The other step sees its own weight.
        assert_eq!(at(&record(0, &[]), 2, "weight"), Some(("20".into(), 1)));
    }

    /// Issue 23, defect 4: `d.weight = …` showed `d = {…} (2 entries)`, not what was assigned.
    #[test]
    fn a_field_assignment_shows_the_assigned_value() {
        let case = parse_case(CASE).unwrap();
        let script = Script::new(
            "local d = {}\nd.weight = obj.canaryWeight\nd.name = \"x\"\nreturn obj.data\n",
        );
        let after: BTreeMap<u32, Vec<String>> = [
            (2, vec!["d.weight".to_string()]),
            (3, vec!["d.name".to_string()]),
        ]
        .into_iter()
        .collect();
        let values = record_step_values_after(
            StepToRun {
                script: &script,
                flavor: ScriptFlavor::Custom,
                case: &case,
                index: 1,
                mode: Mode::Harness,
                options: &RunOptions::default(),
            },
            &BTreeMap::new(),
            &after,
        );
        assert_eq!(
            at(&values, 2, "d.weight"),
            Some(("50".into(), 1)),
            "{values:?}"
        );
        assert_eq!(
            at(&values, 3, "d.name"),
            Some(("\"x\"".into(), 1)),
            "{values:?}"
        );
        assert_eq!(at(&values, 2, "d"), None, "{values:?}");
    }

    /// Issue 23, defect 4 in a loop: the write is the body's last line, so the next stop is
    /// the `for` line, where the loop variable is out of scope (`route.weight` read there is a
    /// global's field) and nothing was shown for the line.
    #[test]
    fn a_field_assignment_ending_a_loop_body_shows_the_assigned_value() {
        let case = parse_case(CASE).unwrap();
        let script = Script::new(
            "local spec = obj.data.spec\nfor _, route in ipairs(spec.routes) do\n  if route.name == \"a\" then\n    route.weight = obj.canaryWeight\n  elseif route.name == \"b\" then\n    route.weight = 100 - obj.canaryWeight\n  end\nend\nreturn obj.data\n",
        );
        let after: BTreeMap<u32, Vec<String>> = [
            (4, vec!["route.weight".to_string()]),
            (6, vec!["route.weight".to_string()]),
        ]
        .into_iter()
        .collect();
        let assigned: BTreeMap<u32, Vec<(String, String)>> =
            [(4, "obj.canaryWeight"), (6, "100 - obj.canaryWeight")]
                .into_iter()
                .map(|(line, value)| (line, vec![("route.weight".to_string(), value.to_string())]))
                .collect();
        let values = record_step_values_assigned(
            StepToRun {
                script: &script,
                flavor: ScriptFlavor::Custom,
                case: &case,
                index: 1,
                mode: Mode::Harness,
                options: &RunOptions::default(),
            },
            &BTreeMap::new(),
            &after,
            &assigned,
        );
        assert_eq!(
            at(&values, 4, "route.weight"),
            Some(("50".into(), 1)),
            "{values:?}"
        );
        assert_eq!(
            at(&values, 6, "route.weight"),
            Some(("50".into(), 1)),
            "{values:?}"
        );
    }

    #[test]
    fn a_long_loop_stops_recording_and_still_finishes() {
        let case = parse_case(CASE).unwrap();
        let script = "local n = 0\nfor i = 1, 100000 do\n  n = n + 1\nend\nobj.data.spec.n = n\nreturn obj.data\n";
        // The recorded stops are slow in a debug build on a loaded machine: the run's 1 s
        // default would make this a timed test; truncation, not the time limit, is under test.
        let mut options = RunOptions::default();
        options.limits.timeout = std::time::Duration::from_secs(600);
        let step = StepToRun {
            script: &Script::new(script),
            flavor: ScriptFlavor::Custom,
            case: &case,
            index: 0,
            mode: Mode::Harness,
            options: &options,
        };
        let values = record_step_values(step, &BTreeMap::new());
        assert!(values.truncated);
        // The run went on to the end: its result differs from expected by the new field only.
        assert_eq!(
            values.outcome.status,
            StepStatus::Fail,
            "{:?}",
            values.outcome
        );
        assert!(values.outcome.error.is_none(), "{:?}", values.outcome.error);
        let (_, count) = at(&values, 3, "n").unwrap();
        assert!(count as usize <= MAX_RECORDED_STOPS, "{count}");
    }
}
