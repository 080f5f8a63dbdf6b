//! `workspace/executeCommand`: run everything, a step's `obj` as Lua source, and accepting
//! actual output as expected (applied through the client when it can, else written atomically
//! over the exact text it was computed from).

use std::sync::Arc;

use serde_json::{Value, json};
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::{self as lsp, Uri};

use kruise_lua_engine::steps::StepStatus;

use super::accept::accept_case_edits;
use super::documents::{read_disk_file, uri_path};
use super::lua::obj_as_lua;
use super::runs::ScriptResults;
use super::session::Session;
use super::step_values;
use super::text::LineIndex;
use crate::atomic_write::{ReplaceError, replace_file};
use crate::project::yaml_edit::apply_edits;
use kruise_lua_engine::runner::{Mode, RunOptions, Script};
use kruise_lua_engine::script::ScriptFlavor;
use kruise_lua_engine::steps::{NOT_CALLED_NO_TRAFFIC, ingress_step_obj};
use kruise_lua_engine::testcase::TestCase;
use kruise_lua_engine::vm::Limits;

pub const RUN_ALL: &str = "kruise-lua.runAll";
pub const OBJ_AS_LUA: &str = "kruise-lua.objAsLua";
pub const ACCEPT_EXPECTED: &str = "kruise-lua.acceptExpected";

pub const ALL: &[&str] = &[
    RUN_ALL,
    OBJ_AS_LUA,
    ACCEPT_EXPECTED,
    step_values::SHOW_STEP_VALUES,
    step_values::HIDE_STEP_VALUES,
];

/// The "▶ debug step N" lens's command. Editors bind it themselves (it starts a debug session
/// with `kruise-lua dap`), so the server does not advertise or execute it. Its one argument is
/// the launch configuration's part: `{script, case, step (from 1), mode}`.
pub const DEBUG_STEP: &str = "kruise-lua.debugStep";

/// The [`DEBUG_STEP`] command for step `number` (from 1) of `case`.
pub fn debug_step_command(
    script: &std::path::Path,
    case: &std::path::Path,
    number: usize,
    mode: Mode,
) -> lsp::Command {
    let mode = match mode {
        Mode::Harness => "harness",
        Mode::Production => "production",
    };
    lsp::Command::new(
        format!("▶ debug step {number}"),
        DEBUG_STEP.into(),
        Some(vec![json!({
            "script": script,
            "case": case,
            "step": number,
            "mode": mode,
        })]),
    )
}

/// Step `index`'s `obj` as Lua source, as the run's mode has it: in production mode a step
/// the controller does not run the script for is a comment saying so, and an ingress step's
/// annotations are the canary Ingress's as the earlier steps left them (which runs the script;
/// the same as `kruise-lua obj --mode production`).
fn step_obj_lua(
    results: &ScriptResults,
    case: &TestCase,
    index: usize,
    options: &RunOptions,
) -> String {
    let step = &case.steps[index];
    match (results.mode, results.target.flavor()) {
        (Mode::Production, ScriptFlavor::Ingress) => {
            let script = Script::new(results.source.clone());
            match ingress_step_obj(&script, case, index, options) {
                Ok(Some(obj)) => obj_as_lua(&obj.to_json()),
                Ok(None) => "-- no obj: the script fails before this step's run\n".to_string(),
                Err(reason) => format!("-- {reason}\n"),
            }
        }
        (Mode::Production, _) if !step.reaches_provider() => {
            format!("-- {NOT_CALLED_NO_TRAFFIC}\n")
        }
        _ => obj_as_lua(&results.target.step_obj(&step.obj)),
    }
}

/// `{ "uri": ..., "step": n }` (step 0-based; absent or null = all steps where that makes sense).
/// A step that is not a non-negative integer (`"1"`, `-1`, `1.0`) is invalid, never "all".
fn case_argument(arguments: &[Value]) -> Result<(Uri, Option<usize>)> {
    let arg = arguments
        .first()
        .ok_or_else(|| Error::invalid_params("expected one argument {uri, step}"))?;
    let uri: Uri = arg
        .get("uri")
        .and_then(Value::as_str)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| Error::invalid_params("missing or invalid `uri`"))?;
    let step = match arg.get("step") {
        None | Some(Value::Null) => None,
        Some(value) => Some(
            value
                .as_u64()
                .and_then(|s| usize::try_from(s).ok())
                .ok_or_else(|| {
                    Error::invalid_params(format!(
                        "`step` must be a step index (0, 1, …) or null, not {value}"
                    ))
                })?,
        ),
    };
    Ok((uri, step))
}

/// A request that was valid but could not be carried out (LSP's RequestFailed).
fn request_failed(message: impl Into<String>) -> Error {
    Error {
        code: tower_lsp_server::jsonrpc::ErrorCode::ServerError(-32803),
        message: message.into().into(),
        data: None,
    }
}

pub async fn execute(
    session: &Arc<Session>,
    params: lsp::ExecuteCommandParams,
) -> Result<Option<Value>> {
    match params.command.as_str() {
        RUN_ALL => {
            session.run_all().await;
            // A script Kruise never reads is counted apart, as `check` lists it skipped.
            let (skipped, results): (Vec<_>, Vec<_>) = session
                .all_results()
                .into_iter()
                .partition(|r| r.target.skipped.is_some());
            let cases: usize = results.iter().map(|r| r.cases.len()).sum();
            let passed: usize = results.iter().map(|r| r.passed_count()).sum();
            let (steps, steps_passed) = results
                .iter()
                .map(|r| r.step_counts())
                .fold((0, 0), |(a, b), (c, d)| (a + c, b + d));
            Ok(Some(json!({
                "scripts": results.len(),
                "cases": cases,
                "passed": passed,
                "steps": steps,
                "stepsPassed": steps_passed,
                "skipped": skipped.len(),
            })))
        }
        OBJ_AS_LUA => {
            let (uri, step) = case_argument(&params.arguments)?;
            let path = uri_path(&uri);
            let (results, i) = session
                .case_result(&path)
                .ok_or_else(|| Error::invalid_params("no results for this case (yet)"))?;
            let case = &results.cases[i];
            let parsed = case
                .case
                .as_ref()
                .map_err(|e| Error::invalid_params(e.message.clone()))?;
            let index = step.unwrap_or(0);
            if index >= parsed.steps.len() {
                return Err(Error::invalid_params(format!(
                    "no such step: the case has {}",
                    parsed.steps.len()
                )));
            }
            // Production mode may run the script (ingress steps chain): not on this thread.
            let timeout = session.settings().timeout;
            let results = results.clone();
            let lua = tokio::task::spawn_blocking(move || {
                let options = RunOptions {
                    limits: Limits {
                        timeout,
                        ..Limits::default()
                    },
                    ..RunOptions::default()
                };
                let parsed = results.cases[i].case.as_ref().ok()?;
                Some(step_obj_lua(&results, parsed, index, &options))
            })
            .await
            .ok()
            .flatten()
            .ok_or_else(Error::internal_error)?;
            Ok(Some(Value::String(lua)))
        }
        ACCEPT_EXPECTED => accept_expected(session, &params.arguments).await,
        step_values::SHOW_STEP_VALUES => step_values::show(session, &params.arguments).await,
        step_values::HIDE_STEP_VALUES => step_values::hide(session).await,
        other => Err(Error::invalid_params(format!("unknown command `{other}`"))),
    }
}

/// `kruise-lua.acceptExpected`: through the client (`workspace/applyEdit`, versioned) when the
/// case is open and the client can apply edits; otherwise written to disk, but only over the
/// very text the edits were computed from (see [`replace_file`]).
async fn accept_expected(session: &Arc<Session>, arguments: &[Value]) -> Result<Option<Value>> {
    let (uri, step) = case_argument(arguments)?;
    let path = uri_path(&uri);
    let (results, i) = session
        .case_result(&path)
        .ok_or_else(|| Error::invalid_params("no results for this case (yet)"))?;
    let case = &results.cases[i];
    if let Some(step) = step
        && step >= case.steps.len()
    {
        return Err(Error::invalid_params(format!(
            "no step {step}: the case has {} step(s), numbered from 0",
            case.steps.len()
        )));
    }
    // The buffer and its version, read together; for a closed file, the bytes on disk.
    let open = session.docs.get(&path);
    let (current, on_disk) = match &open {
        Some(doc) => (doc.text.clone(), None),
        None => {
            let bytes = read_disk_file(&path)
                .map_err(|e| request_failed(format!("cannot read {}: {e}", path.display())))?;
            let text = String::from_utf8(bytes.clone()).map_err(|_| {
                request_failed(format!(
                    "{}: not valid UTF-8; cases are read as UTF-8 (as `kruise-lua check` \
                     does), so it is left as it is",
                    path.display()
                ))
            })?;
            (text, Some(bytes))
        }
    };
    if current != case.text {
        return Err(request_failed(
            "the case changed since its last run; try again",
        ));
    }
    // Reading and re-reading the case is CPU work: off the async threads.
    let worker = results.clone();
    let edits =
        tokio::task::spawn_blocking(move || accept_case_edits(&worker, &worker.cases[i], step))
            .await
            .map_err(|e| request_failed(format!("accept-expected failed: {e}")))?
            .map_err(|why| {
                request_failed(format!("cannot accept into {}: {why}", path.display()))
            })?;
    if edits.is_empty() {
        return Ok(Some(json!({ "applied": false, "steps": 0 })));
    }
    let count = match step {
        Some(_) => 1,
        None => case
            .steps
            .iter()
            .filter(|s| s.status == StepStatus::Fail)
            .count(),
    };
    let caps = session.caps();
    if let (Some(doc), true) = (&open, caps.apply_edit) {
        let index = LineIndex::new(&current);
        let text_edits: Vec<lsp::TextEdit> = edits
            .into_iter()
            .map(|(r, t)| lsp::TextEdit::new(index.range(&current, r), t))
            .collect();
        let edit = if caps.document_changes {
            // Versioned: the client refuses it if the buffer moved on since.
            lsp::WorkspaceEdit {
                document_changes: Some(lsp::DocumentChanges::Edits(vec![lsp::TextDocumentEdit {
                    text_document: lsp::OptionalVersionedTextDocumentIdentifier {
                        uri: doc.uri.clone(),
                        version: Some(doc.version),
                    },
                    edits: text_edits.into_iter().map(lsp::OneOf::Left).collect(),
                }])),
                ..lsp::WorkspaceEdit::default()
            }
        } else {
            lsp::WorkspaceEdit {
                changes: Some([(doc.uri.clone(), text_edits)].into_iter().collect()),
                ..lsp::WorkspaceEdit::default()
            }
        };
        let response = session
            .client
            .apply_edit(edit)
            .await
            .map_err(|e| request_failed(format!("the editor did not apply the edit: {e}")))?;
        if !response.applied {
            return Err(request_failed(format!(
                "the editor did not apply the edit{}",
                response
                    .failure_reason
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default()
            )));
        }
        return Ok(Some(json!({ "applied": true, "steps": count })));
    }
    // Written to disk: over the bytes read (closed file), or only when the disk holds exactly
    // the open buffer (a client that cannot apply edits; its unsaved changes or a change made
    // outside the editor must not be overwritten).
    let new_text = apply_edits(&current, edits);
    let expected = on_disk.unwrap_or_else(|| current.clone().into_bytes());
    replace_file(&path, &expected, new_text.as_bytes()).map_err(|e| match e {
        ReplaceError::Changed { .. } if open.is_some() => request_failed(format!(
            "{}: not written, the file on disk differs from the open buffer (unsaved changes \
             or a change outside the editor); save or reload it and accept again",
            path.display()
        )),
        other => request_failed(format!("not written: {other}")),
    })?;
    session.on_disk_change(&path, false);
    Ok(Some(
        json!({ "applied": true, "steps": count, "written": true }),
    ))
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::*;
    use crate::lsp::project::lua_target;
    use crate::lsp::runs::{RunInput, execute};

    const SCRIPT: &str = "local a = obj.annotations or {}\na[\"w\"] = obj.weight\nreturn a\n";
    const CASE: &str = "rollout:
  apiVersion: rollouts.kruise.io/v1beta1
  kind: Rollout
  spec:
    strategy:
      canary:
        trafficRoutings:
        - service: shop
        steps:
        - traffic: 30%
        - replicas: 2
original:
  apiVersion: networking.k8s.io/v1
  kind: Ingress
  metadata:
    annotations: {team: shop}
expected:
- apiVersion: networking.k8s.io/v1
  kind: Ingress
- apiVersion: networking.k8s.io/v1
  kind: Ingress
";

    fn results(mode: Mode) -> ScriptResults {
        let input = RunInput {
            target: lua_target(Path::new("/t/trafficrouting_ingress/demo.lua")),
            source: SCRIPT.into(),
            host_text: SCRIPT.into(),
            embedded: None,
            cases_error: None,
            script_error: None,
            cases: vec![(
                PathBuf::from("/t/trafficrouting_ingress/testdata/demo/c.yaml"),
                CASE.into(),
            )],
        };
        execute(input, None, mode, &RunOptions::default(), &|| false).unwrap()
    }

    #[test]
    fn obj_as_lua_of_an_ingress_step_follows_the_mode() {
        let harness = results(Mode::Harness);
        let case = harness.cases[0].case.as_ref().unwrap();
        let lua = step_obj_lua(&harness, case, 0, &RunOptions::default());
        assert!(lua.contains("weight = \"30\""), "{lua}");
        assert!(lua.contains("team = \"shop\""), "{lua}");
        assert!(!lua.contains("canaryWeight"), "the ingress obj: {lua}");

        let production = results(Mode::Production);
        let case = production.cases[0].case.as_ref().unwrap();
        // The creation run (weight "0") left its annotation on the canary Ingress.
        let lua = step_obj_lua(&production, case, 0, &RunOptions::default());
        assert!(lua.contains("w = \"0\""), "{lua}");
        assert!(lua.contains("weight = \"30\""), "{lua}");
        let lua = step_obj_lua(&production, case, 1, &RunOptions::default());
        assert_eq!(lua, format!("-- {NOT_CALLED_NO_TRAFFIC}\n"));
    }

    #[test]
    fn step_is_an_index_or_null_and_nothing_else() {
        let uri = "file:///w/c.yaml";
        let step = |value: Value| case_argument(&[json!({"uri": uri, "step": value})]);
        assert_eq!(step(json!(1)).unwrap().1, Some(1));
        assert_eq!(step(Value::Null).unwrap().1, None);
        assert_eq!(case_argument(&[json!({"uri": uri})]).unwrap().1, None);
        for bad in [json!("1"), json!(-1), json!(1.0), json!(true), json!([1])] {
            let err = step(bad.clone()).unwrap_err();
            assert_eq!(
                err.code,
                tower_lsp_server::jsonrpc::ErrorCode::InvalidParams,
                "{bad}"
            );
            assert!(
                err.message.contains("must be a step index"),
                "{bad}: {err:?}"
            );
        }
    }

    #[test]
    fn every_step_of_a_case_has_a_debug_lens_with_its_launch_arguments() {
        let results = results(Mode::Production);
        let case = &results.cases[0];
        let uri: Uri = "file:///t/trafficrouting_ingress/testdata/demo/c.yaml"
            .parse()
            .unwrap();
        let lenses = super::super::case_view::code_lenses(&results, 0, &uri, &case.text);
        let debug: Vec<&lsp::Command> = lenses
            .iter()
            .filter_map(|lens| lens.command.as_ref())
            .filter(|command| command.command == DEBUG_STEP)
            .collect();
        assert_eq!(debug.len(), 2);
        assert_eq!(debug[1].title, "▶ debug step 2");
        assert_eq!(
            debug[1].arguments.as_ref().unwrap()[0],
            json!({
                "script": "/t/trafficrouting_ingress/demo.lua",
                "case": "/t/trafficrouting_ingress/testdata/demo/c.yaml",
                "step": 2,
                "mode": "production",
            })
        );
        assert!(
            !ALL.contains(&DEBUG_STEP),
            "editors bind it, not the server"
        );
    }
}
