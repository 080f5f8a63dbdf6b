//! Inline values of one step's run (`textDocument/inlayHint`): `kruise-lua.showStepValues`
//! runs the chosen case step with the engine's value recorder (`engine::debug::values`) and
//! keeps what each line set; hints show them at the end of each line until
//! `kruise-lua.hideStepValues`. Off until asked for; one script's values at a time.

use std::sync::Arc;

use serde_json::{Value, json};
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::{self as lsp};

use kruise_lua_engine::debug::{LineValue, record_step_values_assigned};
use kruise_lua_engine::runner::{RunOptions, Script};
use kruise_lua_engine::steps::StepToRun;
use kruise_lua_engine::vm::Limits;

use super::documents::uri_path;
use super::project::ScriptId;
use super::session::{Session, ShownSlot, ShownValues};
use super::text::LineIndex;
use crate::analysis::obj_reads::{
    field_write_values_by_line, field_writes_by_line, obj_reads_by_line,
};

pub const SHOW_STEP_VALUES: &str = "kruise-lua.showStepValues";
pub const HIDE_STEP_VALUES: &str = "kruise-lua.hideStepValues";

/// A hint's value text is cut to this many characters.
const MAX_VALUE_CHARS: usize = 60;

/// `{ "uri": <case file>, "step": n }` (0-based), as the case lenses and other commands give it.
fn arguments(arguments: &[Value]) -> Result<(lsp::Uri, usize)> {
    let arg = arguments
        .first()
        .ok_or_else(|| Error::invalid_params("expected one argument {uri, step}"))?;
    let uri: lsp::Uri = arg
        .get("uri")
        .and_then(Value::as_str)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| Error::invalid_params("missing or invalid `uri` (the case file)"))?;
    let step = arg
        .get("step")
        .and_then(Value::as_u64)
        .and_then(|s| usize::try_from(s).ok())
        .ok_or_else(|| Error::invalid_params("`step` must be a step index (0, 1, …)"))?;
    Ok((uri, step))
}

/// `kruise-lua.showStepValues`: records the step's run and shows its values.
pub async fn show(session: &Arc<Session>, args: &[Value]) -> Result<Option<Value>> {
    let (uri, step) = arguments(args)?;
    let case_path = uri_path(&uri);
    let (results, i) = session
        .case_result(&case_path)
        .ok_or_else(|| Error::invalid_params("no results for this case (yet)"))?;
    let ScriptId::File(script) = &results.target.id else {
        return Err(Error::invalid_params(
            "inline values are shown for script files only, not for scripts embedded in a manifest",
        ));
    };
    let script = script.clone();
    let steps = match &results.cases[i].case {
        Ok(case) => case.steps.len(),
        Err(e) => return Err(Error::invalid_params(e.message.clone())),
    };
    if step >= steps {
        return Err(Error::invalid_params(format!(
            "no step {step}: the case has {steps} step(s), numbered from 0"
        )));
    }
    let timeout = session.settings().timeout;
    let worker = results.clone();
    let (parses, parsed_path) = (session.docs.parses.clone(), script.clone());
    // The run is Lua and the parse is CPU work: never on the async threads.
    let recorded = tokio::task::spawn_blocking(move || {
        let case = worker.cases[i].case.as_ref().ok()?;
        // The open script's shared parse when it is of the text that ran.
        let parsed = parses.parsed(&parsed_path, &worker.source);
        let watch = obj_reads_by_line(&parsed);
        let written = field_writes_by_line(&parsed);
        let assigned = field_write_values_by_line(&parsed);
        let options = RunOptions {
            limits: Limits {
                timeout,
                ..Limits::default()
            },
            ..RunOptions::default()
        };
        Some(record_step_values_assigned(
            StepToRun {
                script: &Script::new(worker.source.clone()),
                flavor: worker.target.flavor(),
                case,
                index: step,
                mode: worker.mode,
                options: &options,
            },
            &watch,
            &written,
            &assigned,
        ))
    })
    .await
    .ok()
    .flatten()
    .ok_or_else(Error::internal_error)?;
    let summary = json!({
        "script": script,
        "case": case_path,
        "step": step,
        "values": recorded.values.len(),
        "truncated": recorded.truncated,
    });
    *lock(&session.step_values) = Some(Arc::new(ShownValues {
        script,
        source: results.source.clone(),
        case: case_path,
        step,
        values: recorded.values,
    }));
    refresh(session).await;
    Ok(Some(summary))
}

/// `kruise-lua.hideStepValues`.
pub async fn hide(session: &Arc<Session>) -> Result<Option<Value>> {
    let was_shown = lock(&session.step_values).take().is_some();
    refresh(session).await;
    Ok(Some(json!({ "hidden": was_shown })))
}

fn lock(slot: &ShownSlot) -> std::sync::MutexGuard<'_, Option<Arc<ShownValues>>> {
    slot.lock().unwrap_or_else(|e| e.into_inner())
}

pub(super) async fn refresh(session: &Session) {
    if session.caps().inlay_hint_refresh {
        let _ = session.client.inlay_hint_refresh().await;
    }
}

/// The hints of `path` (holding `text`) within `range`: one per line that set something.
pub fn inlay_hints(
    session: &Session,
    path: &std::path::Path,
    text: &str,
    range: lsp::Range,
) -> Vec<lsp::InlayHint> {
    let Some(shown) = lock(&session.step_values).clone() else {
        return Vec::new();
    };
    if shown.script != path || shown.source != text {
        return Vec::new();
    }
    hints(&shown, text, range)
}

fn hints(shown: &ShownValues, text: &str, range: lsp::Range) -> Vec<lsp::InlayHint> {
    let index = LineIndex::new(text);
    let lines: Vec<&str> = text.split('\n').collect();
    let mut hints = Vec::new();
    let mut by_line: std::collections::BTreeMap<u32, Vec<&LineValue>> = Default::default();
    for value in &shown.values {
        by_line.entry(value.line).or_default().push(value);
    }
    for (line, line_values) in by_line {
        let Some(zero_based) = line.checked_sub(1) else {
            continue;
        };
        if zero_based < range.start.line || zero_based > range.end.line {
            continue;
        }
        let Some(content) = lines.get(zero_based as usize) else {
            continue;
        };
        let end =
            index.line_start(zero_based as usize, text) + content.trim_end_matches('\r').len();
        hints.push(lsp::InlayHint {
            position: index.position(text, end),
            label: lsp::InlayHintLabel::String(label(&line_values)),
            kind: None,
            text_edits: None,
            tooltip: Some(lsp::InlayHintTooltip::String(format!(
                "step {} of {}",
                shown.step + 1,
                shown.case.display()
            ))),
            padding_left: Some(true),
            padding_right: None,
            data: None,
        });
    }
    hints
}

/// `weight = 50, total = 6 (×3)`.
fn label(values: &[&LineValue]) -> String {
    values
        .iter()
        .map(|v| {
            let mut value: String = v.value.chars().take(MAX_VALUE_CHARS).collect();
            if value.len() < v.value.len() {
                value.push('…');
            }
            if v.count > 1 {
                format!("{} = {value} (×{})", v.name, v.count)
            } else {
                format!("{} = {value}", v.name)
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn value(line: u32, name: &str, value: &str, count: u32) -> LineValue {
        LineValue {
            line,
            name: name.into(),
            value: value.into(),
            count,
        }
    }

    #[test]
    fn one_hint_at_the_end_of_each_line_within_the_range() {
        let text = "local w = obj.canaryWeight\r\nlocal t = 0\nfor i = 1, 3 do\n  t = t + w\nend\n";
        let shown = ShownValues {
            script: PathBuf::from("/s.lua"),
            source: text.into(),
            case: PathBuf::from("/c.yaml"),
            step: 1,
            values: vec![
                value(1, "obj.canaryWeight", "50", 1),
                value(1, "w", "50", 1),
                value(4, "t", "150", 3),
                value(9, "ghost", "1", 1),
                value(4, "long", &"x".repeat(100), 1),
            ],
        };
        let all = lsp::Range::new(lsp::Position::new(0, 0), lsp::Position::new(99, 0));
        let found = hints(&shown, text, all);
        let simple: Vec<(u32, u32, String)> = found
            .iter()
            .map(|h| match &h.label {
                lsp::InlayHintLabel::String(s) => {
                    (h.position.line, h.position.character, s.clone())
                }
                _ => unreachable!("string labels"),
            })
            .collect();
        assert_eq!(
            simple,
            vec![
                (0, 26, "obj.canaryWeight = 50, w = 50".to_string()),
                (
                    3,
                    11,
                    format!("t = 150 (×3), long = {}…", "x".repeat(MAX_VALUE_CHARS))
                ),
            ]
        );
        let first_line = lsp::Range::new(lsp::Position::new(0, 0), lsp::Position::new(0, 5));
        assert_eq!(hints(&shown, text, first_line).len(), 1);
    }
}
