//! `workspace/executeCommand`: run everything, a step's `obj` as Lua source, and accepting
//! actual output as expected (applied through the client when it can, else written atomically).

use std::sync::Arc;

use serde_json::{Value, json};
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::{self as lsp, Uri};

use super::accept::{apply_edits, write_atomically};
use super::case_view::accept_edits;
use super::documents::uri_path;
use super::lua::obj_as_lua;
use super::runs::ScriptResults;
use super::session::Session;
use super::text::LineIndex;
use kruise_lua_engine::runner::{
    Mode, NOT_CALLED_NO_TRAFFIC, RunOptions, Script, ScriptFlavor, ingress_step_obj,
};
use kruise_lua_engine::testcase::TestCase;
use kruise_lua_engine::vm::Limits;

pub const RUN_ALL: &str = "kruise-lua.runAll";
pub const OBJ_AS_LUA: &str = "kruise-lua.objAsLua";
pub const ACCEPT_EXPECTED: &str = "kruise-lua.acceptExpected";

pub const ALL: &[&str] = &[RUN_ALL, OBJ_AS_LUA, ACCEPT_EXPECTED];

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
fn case_argument(arguments: &[Value]) -> Result<(Uri, Option<usize>)> {
    let arg = arguments
        .first()
        .ok_or_else(|| Error::invalid_params("expected one argument {uri, step}"))?;
    let uri: Uri = arg
        .get("uri")
        .and_then(Value::as_str)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| Error::invalid_params("missing or invalid `uri`"))?;
    let step = arg.get("step").and_then(Value::as_u64).map(|s| s as usize);
    Ok((uri, step))
}

pub async fn execute(
    session: &Arc<Session>,
    params: lsp::ExecuteCommandParams,
) -> Result<Option<Value>> {
    match params.command.as_str() {
        RUN_ALL => {
            session.run_all().await;
            let results = session.all_results();
            let cases: usize = results.iter().map(|r| r.cases.len()).sum();
            let passed: usize = results.iter().map(|r| r.passed_count()).sum();
            Ok(Some(
                json!({ "scripts": results.len(), "cases": cases, "passed": passed }),
            ))
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
                return Err(Error::invalid_params("no such step"));
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
        ACCEPT_EXPECTED => {
            let (uri, step) = case_argument(&params.arguments)?;
            let path = uri_path(&uri);
            let (results, i) = session
                .case_result(&path)
                .ok_or_else(|| Error::invalid_params("no results for this case (yet)"))?;
            let case = &results.cases[i];
            let current = session.docs.text(&path).unwrap_or_default();
            if current != case.text {
                return Err(Error::invalid_params(
                    "the case changed since its last run; try again",
                ));
            }
            let edits = accept_edits(&results, case, step);
            if edits.is_empty() {
                return Ok(Some(json!({ "applied": false, "steps": 0 })));
            }
            let count = edits.len();
            let open = session.docs.get(&path);
            if let (Some(doc), true) = (&open, session.caps().apply_edit) {
                let index = LineIndex::new(&current);
                let text_edits = edits
                    .into_iter()
                    .map(|(r, t)| lsp::TextEdit::new(index.range(&current, r), t))
                    .collect();
                let edit = lsp::WorkspaceEdit {
                    changes: Some([(doc.uri.clone(), text_edits)].into_iter().collect()),
                    ..lsp::WorkspaceEdit::default()
                };
                let applied = session
                    .client
                    .apply_edit(edit)
                    .await
                    .map(|r| r.applied)
                    .unwrap_or(false);
                return Ok(Some(json!({ "applied": applied, "steps": count })));
            }
            // Not open in the editor (or the client cannot apply edits): write the file.
            let new_text = apply_edits(&current, edits);
            write_atomically(&path, &new_text).map_err(|e| Error {
                code: tower_lsp_server::jsonrpc::ErrorCode::InternalError,
                message: format!("cannot write {}: {e}", path.display()).into(),
                data: None,
            })?;
            session.on_disk_change(&path, false);
            Ok(Some(
                json!({ "applied": true, "steps": count, "written": true }),
            ))
        }
        other => Err(Error::invalid_params(format!("unknown command `{other}`"))),
    }
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
}
