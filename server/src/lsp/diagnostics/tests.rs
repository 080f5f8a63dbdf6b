//! Tests of `diagnostics` (a sibling file: the block is long).

use super::*;
use crate::lsp::diagnostic_store::*;
use crate::lsp::project::ScriptId;
use crate::lsp::project::lua_target;
use crate::lsp::runs::{RunInput, execute};
use kruise_lua_engine::runner::{Mode, RunOptions};
use std::path::Path;

fn run(script: &str, case: &str) -> ScriptResults {
    let input = RunInput {
        target: lua_target(Path::new("/t/x/Route/trafficRouting.lua")),
        source: script.into(),
        host_text: script.into(),
        embedded: None,
        cases_error: None,
        script_error: None,
        cases: vec![(PathBuf::from("/t/x/Route/testdata/three.yaml"), case.into())],
    };
    execute(input, None, Mode::Harness, &RunOptions::default(), &|| {
        false
    })
    .unwrap()
}

const CASE: &str = crate::lsp::runs::tests::CASE;

/// A VirtualService case whose step 1 asks for /beta requests (which `frontend` serves)
/// and whose script sends them to the canary ahead of every route.
const MISROUTING_CASE: &str = "\
rollout:
  spec:
    strategy:
      canary:
        trafficRoutings:
        - service: web
        steps:
        - matches:
          - path:
              value: /beta
original:
  apiVersion: networking.istio.io/v1
  kind: VirtualService
  metadata:
    name: web
  spec:
    http:
    - match:
      - uri:
          prefix: /api
      route:
      - destination:
          host: web
    - route:
      - destination:
          host: frontend
";

#[test]
fn misrouting_step_gets_a_diagnostic_on_the_step() {
    let script = "table.insert(obj.data.spec.http, 1, {match = {{uri = {prefix = '/beta'}}}, \
            route = {{destination = {host = obj.canaryService}}}})\nreturn obj.data\n";
    let files = files_of(&run(script, MISROUTING_CASE));
    let (_, case_diags) = &files[0];
    let misrouted: Vec<_> = case_diags
        .iter()
        .filter(|d| d.code == Some(NumberOrString::String("step-misrouted".into())))
        .collect();
    assert_eq!(misrouted.len(), 1, "{case_diags:?}");
    // steps[0] is on line 8 (0-based 7).
    assert_eq!(misrouted[0].range.start.line, 7);
    assert!(
        misrouted[0]
            .message
            .contains("GET /beta → web-canary 100 % (by spec.http[0]), expected frontend 100 %"),
        "{}",
        misrouted[0].message
    );
    // The script line that put the route in place, as `check` names it (`written at …:1`).
    let related = misrouted[0]
        .related_information
        .as_ref()
        .expect("the script line that wrote the route");
    assert_eq!(related.len(), 1, "{related:?}");
    assert_eq!(related[0].location.range.start.line, 0);
    assert!(
        related[0].message.starts_with("written here: GET /beta"),
        "{}",
        related[0].message
    );
}

#[test]
fn a_step_without_a_routing_model_gets_a_hint() {
    let case = MISROUTING_CASE
        .replace("networking.istio.io/v1", "example.com/v1")
        .replace("kind: VirtualService", "kind: Route");
    let files = files_of(&run("return obj.data\n", &case));
    let (_, case_diags) = &files[0];
    let hints: Vec<_> = case_diags
        .iter()
        .filter(|d| d.code == Some(NumberOrString::String("step-intent-not-checked".into())))
        .collect();
    assert_eq!(hints.len(), 1, "{case_diags:?}");
    assert_eq!(hints[0].severity, Some(DiagnosticSeverity::HINT));
    assert_eq!(hints[0].range.start.line, 7);
    assert!(
        hints[0]
            .message
            .contains("no routing model for Route (example.com)"),
        "{}",
        hints[0].message
    );
}

#[test]
fn failing_step_marks_expected_entry_and_field() {
    let script = "local spec = obj.data.spec\nspec.weight = obj.canaryWeight\nreturn obj.data\n";
    let files = run(script, CASE);
    let (case_path, case_diags) = &files_of(&files)[0];
    assert!(case_path.ends_with("three.yaml"));
    let fails: Vec<_> = case_diags
        .iter()
        .filter(|d| d.code == Some(NumberOrString::String("step-fails".into())))
        .collect();
    assert_eq!(fails.len(), 1);
    // expected[1] starts on line 24 (0-based 23): `- apiVersion: x/v1`; the error stays on
    // that line, from its `- ` (the differing field has its own).
    assert_eq!(fails[0].range.start.line, 23);
    assert_eq!(fails[0].range.end.line, 23);
    assert_eq!(fails[0].range.start.character, 0);
    assert!(
        fails[0]
            .message
            .contains("spec.weight: expected 60, actual 50"),
        "{}",
        fails[0].message
    );
    assert!(fails[0].message.contains("+++ actual"));
    let field: Vec<_> = case_diags
        .iter()
        .filter(|d| d.code == Some(NumberOrString::String("field-differs".into())))
        .collect();
    assert_eq!(field.len(), 1);
    assert_eq!(field[0].range.start.line, 28, "the `weight: 60` line");
    let (_, script_diags) = files_of(&files).pop().unwrap();
    assert!(
        script_diags
            .iter()
            .any(|d| d.message == "0/1 cases pass (1/2 steps) — three step 2 fails"),
        "{script_diags:?}"
    );
}

/// A CRD of our own for the tests' `x`/`Route`: `spec.weight` is an integer up to 10.
fn route_crd() -> String {
    crate::project::crd_sources::test_crd("x", "Route", "{weight: {type: integer, maximum: 10}}")
}

fn validated(script: &str, case: &str) -> ScriptResults {
    let mut results = run(script, case);
    let mut set = kruise_lua_engine::schema::SchemaSet::new();
    set.add_text("route.yaml", &route_crd()).unwrap();
    results.validate_schemas(Some(std::sync::Arc::new(set)), &[]);
    results
}

fn with_code<'a>(diags: &'a [Diagnostic], code: &str) -> Vec<&'a Diagnostic> {
    diags
        .iter()
        .filter(|d| d.code == Some(NumberOrString::String(code.into())))
        .collect()
}

#[test]
fn schema_errors_mark_the_expected_field_and_the_step_and_count_as_invalid() {
    let script = "local spec = obj.data.spec\nspec.weight = obj.canaryWeight\nreturn obj.data\n";
    // Step 1 passes but 20 is over the CRD's maximum (output and expectation alike);
    // step 2 fails, and its output (50) and expectation (60) are both over it.
    let files = files_of(&validated(script, CASE));
    let (_, case_diags) = &files[0];
    let schema = with_code(case_diags, "schema");
    let shown: Vec<(u32, String)> = schema
        .iter()
        .map(|d| (d.range.start.line, d.message.clone()))
        .collect();
    assert_eq!(
            shown,
            vec![
                (22, "step 1: output and expected[0] spec.weight: 20 must be less than or equal to 10 (maximum) [CRD route.yaml:1, version v1] — the API server would reject it (an expectation the API server rejects is a bug of the test)".to_string()),
                (8, "step 2: output spec.weight: 50 must be less than or equal to 10 (maximum) [CRD route.yaml:1, version v1] — the API server would reject it".to_string()),
                (28, "step 2: expected[1] spec.weight: 60 must be less than or equal to 10 (maximum) [CRD route.yaml:1, version v1] — the API server would reject it (an expectation the API server rejects is a bug of the test)".to_string()),
            ]
        );
    assert!(
        schema
            .iter()
            .all(|d| d.severity == Some(DiagnosticSeverity::ERROR))
    );

    // A case whose only step passes but is invalid: counted apart in the summary.
    let one_step = CASE
            .replace("        - traffic: \"50%\"\n", "")
            .split("- apiVersion: x/v1\n  kind: Route\n  metadata:\n    name: r\n  spec:\n    weight: 60\n")
            .next()
            .unwrap()
            .to_string();
    let results = validated(script, &one_step);
    assert!(results.cases[0].invalid() && !results.cases[0].passed());
    let (_, script_diags) = files_of(&results).pop().unwrap();
    let summary = with_code(&script_diags, "summary");
    assert_eq!(
        summary[0].message,
        "0/1 cases pass (0/1 steps), 1 invalid — three step 1 invalid (schema)"
    );
    // Without schemas the same case passes.
    let unvalidated = run(script, &one_step);
    assert!(unvalidated.cases[0].passed());
}

#[test]
fn pruned_fields_are_warnings() {
    let script =
        "local spec = obj.data.spec\nspec.weight = 5\nspec.extra = true\nreturn obj.data\n";
    let case = CASE
            .replace("        - traffic: \"50%\"\n", "")
            .split("- apiVersion: x/v1\n  kind: Route\n  metadata:\n    name: r\n  spec:\n    weight: 60\n")
            .next()
            .unwrap()
            .replace("    weight: 20\n", "    weight: 5\n    extra: true\n");
    let results = validated(script, &case);
    assert!(
        results.cases[0].passed(),
        "warnings do not make a case invalid"
    );
    let files = files_of(&results);
    let schema = with_code(&files[0].1, "schema");
    assert_eq!(schema.len(), 1);
    assert_eq!(schema[0].severity, Some(DiagnosticSeverity::WARNING));
    assert_eq!(schema[0].range.start.line, 22, "the `extra: true` line");
    assert!(
        schema[0].message.contains("would drop `spec.extra`"),
        "{}",
        schema[0].message
    );
}

#[test]
fn runtime_error_lands_on_its_script_line() {
    let script =
        "local x = obj.canaryWeight\nif x > 30 then error('too much') end\nreturn obj.data\n";
    let files = files_of(&run(script, CASE));
    let (_, script_diags) = files.last().unwrap();
    let runtime: Vec<_> = script_diags
        .iter()
        .filter(|d| d.code == Some(NumberOrString::String("runtime".into())))
        .collect();
    assert_eq!(runtime.len(), 1, "{script_diags:?}");
    assert_eq!(runtime[0].range.start.line, 1);
    assert!(
        runtime[0]
            .message
            .starts_with("case three step 2: runtime error"),
        "{}",
        runtime[0].message
    );
}

#[test]
fn error_messages_name_the_manifest_and_its_yaml_line_not_lua_chunk_positions() {
    // The script's line 1 is the manifest's line 6 (0-based 5): its error on script line
    // 2 is on manifest line 7.
    let script =
        "local x = obj.canaryWeight\nif x > 30 then error('too much') end\nreturn obj.data\n";
    let manifest = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: kruise-rollout-configuration}}\ndata:\n  lua.traffic.routing.Route.x: |\n{}",
        script
            .lines()
            .map(|l| format!("    {l}\n"))
            .collect::<String>()
    );
    let mut target = lua_target(Path::new("/t/x/Route/trafficRouting.lua"));
    target.id = ScriptId::Embedded {
        manifest: PathBuf::from("/t/cm.yaml"),
        key: "lua.traffic.routing.Route.x".into(),
    };
    let input = RunInput {
        target,
        source: script.into(),
        host_text: manifest.clone(),
        embedded: Some(crate::lsp::project::EmbeddedMap::new(
            &kruise_lua_engine::discovery::read_configmap(&manifest)
                .unwrap()
                .scripts[0],
        )),
        cases_error: None,
        script_error: None,
        cases: vec![(PathBuf::from("/t/x/Route/testdata/three.yaml"), CASE.into())],
    };
    let results = execute(input, None, Mode::Harness, &RunOptions::default(), &|| {
        false
    })
    .unwrap();
    let files = files_of(&results);
    let messages: Vec<&str> = files
        .iter()
        .flat_map(|(_, diags)| diags.iter().map(|d| d.message.as_str()))
        .collect();
    assert!(
        messages.iter().all(|m| !m.contains("<string>")),
        "{messages:#?}"
    );
    let case_error = messages
        .iter()
        .find(|m| m.starts_with("step 2: runtime error"))
        .expect("the step's error on the case");
    assert!(
        case_error.contains("/t/cm.yaml:7: too much"),
        "{case_error}"
    );
    let (host, script_diags) = files.last().unwrap();
    assert_eq!(host, Path::new("/t/cm.yaml"));
    let runtime = script_diags
        .iter()
        .find(|d| d.code == Some(NumberOrString::String("runtime".into())))
        .expect("the error on the script");
    assert_eq!(runtime.range.start.line, 6, "0-based manifest line 6");
    assert_eq!(
        runtime.message,
        "case three step 2: runtime error: too much"
    );
}

#[test]
fn production_mode_marks_steps_the_controller_skips() {
    let script = "local spec = obj.data.spec\nspec.weight = obj.canaryWeight\nreturn obj.data\n";
    let case = CASE
        .replace("        - traffic: \"50%\"\n", "        - replicas: 2\n")
        .replace("weight: 60", "weight: -1");
    let input = |mode| {
        let input = RunInput {
            target: lua_target(Path::new("/t/x/Route/trafficRouting.lua")),
            source: script.into(),
            host_text: script.into(),
            embedded: None,
            cases_error: None,
            script_error: None,
            cases: vec![(
                PathBuf::from("/t/x/Route/testdata/c.yaml"),
                case.clone().into(),
            )],
        };
        let results = execute(input, None, mode, &RunOptions::default(), &|| false).unwrap();
        files_of(&results).remove(0).1
    };
    let skipped = |diags: &[Diagnostic]| {
        diags
            .iter()
            .filter(|d| d.code == Some(NumberOrString::String("step-skipped".into())))
            .map(|d| (d.range.start.line, d.message.clone()))
            .collect::<Vec<_>>()
    };
    assert!(skipped(&input(Mode::Harness)).is_empty());
    let production = input(Mode::Production);
    assert_eq!(
            skipped(&production),
            vec![(
                8,
                "step 2 skipped: the controller does not call the script for a step with neither traffic nor matches".to_string()
            )],
            "{production:?}"
        );
    assert!(
        production
            .iter()
            .any(|d| d.message.contains("the resource keeps step 1's result")),
        "{production:?}"
    );
}

#[test]
fn timeout_lands_on_top_level_return() {
    let script = "local function f()\n  return 1\nend\nwhile true do end\nreturn obj.data\n";
    let options = RunOptions {
        limits: kruise_lua_engine::vm::Limits {
            timeout: std::time::Duration::from_millis(50),
            ..Default::default()
        },
        ..Default::default()
    };
    let input = RunInput {
        target: lua_target(Path::new("/t/x/Route/trafficRouting.lua")),
        source: script.into(),
        host_text: script.into(),
        embedded: None,
        cases_error: None,
        script_error: None,
        cases: vec![(PathBuf::from("/t/c.yaml"), CASE.into())],
    };
    let results = execute(input, None, Mode::Harness, &options, &|| false).unwrap();
    let files = run_diagnostics(&results);
    let (_, script_diags) = files.last().unwrap();
    let timeouts: Vec<_> = script_diags
        .iter()
        .filter(|d| d.message.contains("timeout"))
        .collect();
    assert!(!timeouts.is_empty(), "{script_diags:?}");
    assert!(
        timeouts.iter().all(|d| d.range.start.line == 4),
        "{timeouts:?}"
    );
}

#[test]
fn store_clears_what_no_longer_holds() {
    let mut store = DiagnosticStore::default();
    let id = ScriptId::File("/s.lua".into());
    let d = diagnostic(Range::default(), DiagnosticSeverity::ERROR, "x", "m".into());
    store.set_runs(
        &id,
        vec![
            ("/a.yaml".into(), vec![d.clone()]),
            ("/b.yaml".into(), vec![d]),
        ],
    );
    let touched = store.set_runs(&id, vec![("/a.yaml".into(), vec![])]);
    let b = touched
        .iter()
        .find(|(p, _)| p == Path::new("/b.yaml"))
        .unwrap();
    assert!(b.1.is_empty(), "a deleted case's diagnostics are cleared");
}

#[test]
fn pending_runs_mark_their_old_results_outdated() {
    let mut store = DiagnosticStore::default();
    let id = ScriptId::File("/s.lua".into());
    let d = diagnostic(
        Range::default(),
        DiagnosticSeverity::HINT,
        "summary",
        "4/4 cases pass".into(),
    );
    store.set_runs(&id, vec![("/s.lua".into(), vec![d])]);
    assert!(store.stale_lists(&id).is_empty(), "not pending yet");
    store.mark_stale(&id);
    let touched = store.stale_lists(&id);
    assert_eq!(touched.len(), 1);
    assert!(touched[0].1[0].message.starts_with(OUTDATED), "{touched:?}");
    // Every publish of the file says so until a run of the new text lands.
    let quick = store.quick(Path::new("/s.lua"), None, true);
    assert!(quick[0].message.starts_with(OUTDATED));
    let touched = store.set_runs(&id, vec![("/s.lua".into(), vec![])]);
    assert!(touched[0].1.is_empty());
}

#[test]
fn a_run_syntax_error_is_not_repeated_beside_the_analysis() {
    let script = "local x = = 1\nreturn obj.data\n";
    let results = run(script, CASE);
    let path = PathBuf::from("/t/x/Route/trafficRouting.lua");
    let runs = files_of(&results);
    let on_script = &runs.iter().find(|(p, _)| *p == path).unwrap().1;
    assert!(on_script.iter().any(is_syntax), "{on_script:?}");
    let mut store = DiagnosticStore::default();
    // A script no editor has open: the run is the only one to say it.
    store.set_runs(&results.target.id, runs);
    assert_eq!(store.all(&path).iter().filter(|d| is_syntax(d)).count(), 1);
    let analysis = crate::lsp::lua::diagnostics(
        &path,
        script,
        &[],
        &Default::default(),
        &crate::analysis::LintConfig::default(),
        &|_| None,
    );
    let all = store.set_analysis(&path, analysis);
    let syntax: Vec<&Diagnostic> = all.iter().filter(|d| is_syntax(d)).collect();
    assert_eq!(syntax.len(), 1, "one problem, one diagnostic: {syntax:?}");
    assert_eq!(syntax[0].range.start, Position::new(0, 8));
    // Right after an edit too.
    let quick = store.quick(
        &path,
        crate::lsp::lua::quick_syntax_diagnostic(script),
        true,
    );
    assert_eq!(
        quick.iter().filter(|d| is_syntax(d)).count(),
        1,
        "{quick:?}"
    );
}

fn files_of(results: &ScriptResults) -> Vec<(PathBuf, Vec<Diagnostic>)> {
    run_diagnostics(results)
}

/// The summary and the case lens word each failing step by its verdict, as `check` counts it
/// (`1 failed, 1 error`): a step that errors is not said to fail (it said `steps 1, 2 fail`
/// and `✗ 2 of 2 step(s) fail`). A script that does not compile still says, on each step, what
/// was not checked, as `check` attaches those notes to every step (they were dropped).
#[test]
fn failing_steps_are_worded_by_verdict_and_keep_their_notes() {
    let script = "if obj.canaryWeight == 50 then error('boom') end\n\
                  obj.data.spec.weight = obj.canaryWeight + 1\nreturn obj.data\n";
    let results = run(script, CASE);
    let summary = |results: &ScriptResults| {
        run_diagnostics(results)
            .into_iter()
            .flat_map(|(_, diags)| diags)
            .find(|d| d.code == Some(NumberOrString::String("summary".into())))
            .unwrap()
            .message
    };
    assert_eq!(
        summary(&results),
        "0/1 cases pass (0/2 steps) — three step 1 fails, step 2 errors"
    );
    let lenses = crate::lsp::case_view::code_lenses(
        &results,
        0,
        &"file:///t/x/Route/testdata/three.yaml".parse().unwrap(),
        CASE,
    );
    let title = lenses[0].command.as_ref().unwrap().title.clone();
    assert_eq!(title, "✗ 2 of 2 step(s) do not pass: 1 fail, 1 error");

    let broken = run("return {\n", CASE);
    assert_eq!(
        summary(&broken),
        "0/1 cases pass (0/2 steps) — three steps 1, 2 error"
    );
    let case_codes: Vec<String> = run_diagnostics(&broken)
        .into_iter()
        .filter(|(path, _)| path.ends_with("three.yaml"))
        .flat_map(|(_, diags)| diags)
        .filter_map(|d| match d.code {
            Some(NumberOrString::String(code)) => Some(code),
            _ => None,
        })
        .collect();
    let notes = case_codes
        .iter()
        .filter(|code| code.ends_with("-not-checked"))
        .count();
    let facts_notes: usize = broken.cases[0]
        .steps
        .iter()
        .map(|step| broken.cases[0].facts().step_notes(step.index).len())
        .sum();
    assert!(facts_notes > 0, "the case has notes to show");
    assert_eq!(notes, facts_notes, "{case_codes:?}");
}
