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
use super::session::Session;
use super::text::LineIndex;

pub const RUN_ALL: &str = "kruise-lua.runAll";
pub const OBJ_AS_LUA: &str = "kruise-lua.objAsLua";
pub const ACCEPT_EXPECTED: &str = "kruise-lua.acceptExpected";

pub const ALL: &[&str] = &[RUN_ALL, OBJ_AS_LUA, ACCEPT_EXPECTED];

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
            let step = parsed
                .steps
                .get(step.unwrap_or(0))
                .ok_or_else(|| Error::invalid_params("no such step"))?;
            let obj = results.target.step_obj(&step.obj);
            Ok(Some(Value::String(obj_as_lua(&obj))))
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
