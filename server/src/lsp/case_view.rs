//! Case files in the editor: hover on a step or `expected[i]` (diff, obj, prints), code lenses
//! with pass/fail, and the "accept actual output as expected" edits.

use std::ops::Range;

use kruise_lua_engine::steps::{StepOutcome, StepStatus};
use kruise_lua_engine::yaml::Span;
use tower_lsp_server::ls_types as lsp;

use super::accept;
use super::diagnostics::failure_message;
use super::markdown::escape;
use super::project::ScriptId;
use super::runs::{CaseResult, ScriptResults};
use super::step_phrases::steps_lens_title;
use super::text::LineIndex;
use crate::chunk_positions::{ScriptPlace, map_positions};
use crate::project::verdict::StepLabel;
use crate::project::yaml_edit::Edit;

fn contains(span: Option<Span>, offset: usize) -> bool {
    span.is_some_and(|s| s.start.offset <= offset && offset <= s.end.offset)
}

fn status_word(step: &StepOutcome) -> &'static str {
    match step.status {
        StepStatus::Pass => "passes",
        StepStatus::Fail => "fails",
        StepStatus::Error => "errors",
    }
}

fn prints_block(step: &StepOutcome) -> String {
    if step.prints.is_empty() {
        return String::new();
    }
    format!(
        "\n\n**print output:**\n```text\n{}\n```",
        step.prints.join("\n")
    )
}

/// Hover inside a case: on a failing `expected[i]`, the diff; on a step, its obj and outcome.
pub fn hover(
    results: &ScriptResults,
    case: &CaseResult,
    text: &str,
    offset: usize,
) -> Option<lsp::Hover> {
    if case.text != text {
        return None; // a newer run is coming
    }
    let index = LineIndex::new(text);
    let range_of = |s: Span| index.range(text, s.start.offset..s.end.offset);
    for step in &case.steps {
        if contains(step.expected_span, offset) {
            let mut value = format!("**step {} {}**", step.index + 1, status_word(step));
            match step.status {
                StepStatus::Fail => {
                    value.push_str(&format!("\n\n```diff\n{}\n```", failure_message(step)));
                }
                StepStatus::Error => {
                    if let Some(error) = &step.error {
                        value.push_str(&format!("\n\n{}", error_text(results, error)));
                    }
                }
                StepStatus::Pass => {}
            }
            value.push_str(&prints_block(step));
            return Some(markdown(value, step.expected_span.map(range_of)));
        }
    }
    for step in &case.steps {
        if contains(step.step_span, offset) {
            let obj = results.target.step_obj(&step.obj);
            let mut fields = Vec::new();
            if let kruise_lua_engine::value::JsonValue::Object(map) = &obj {
                for (key, value) in map {
                    if key != "data" {
                        fields.push(format!(
                            "- `{key}`: `{}`",
                            super::diagnostics::value_text(Some(value))
                        ));
                    }
                }
            }
            let mut value = format!(
                "**step {} {}** — the script gets:\n{}",
                step.index + 1,
                status_word(step),
                fields.join("\n")
            );
            if let Some(error) = &step.error {
                value.push_str(&format!("\n\n{}", error_text(results, error)));
            }
            for warning in &step.warnings {
                value.push_str(&format!("\n\n⚠ {}", escape(warning)));
            }
            value.push_str(&prints_block(step));
            return Some(markdown(value, step.step_span.map(range_of)));
        }
    }
    None
}

/// A step's error for a Markdown hover: `<kind> error: <message>` with Lua's `<string>:LINE:`
/// turned into the script's file and line (the manifest's for an embedded script), escaped.
fn error_text(results: &ScriptResults, error: &kruise_lua_engine::error::ScriptError) -> String {
    let file = results.target.id.host().display().to_string();
    let place = ScriptPlace {
        file: &file,
        lines: results.embedded.as_ref().map_or(&[], |map| map.lines()),
    };
    escape(&format!(
        "{} error: {}",
        error.kind,
        map_positions(&error.message, place)
    ))
}

fn markdown(value: String, range: Option<lsp::Range>) -> lsp::Hover {
    lsp::Hover {
        contents: lsp::HoverContents::Markup(lsp::MarkupContent {
            kind: lsp::MarkupKind::Markdown,
            value,
        }),
        range,
    }
}

/// Code actions in a case at `range`: accept one failing step under the cursor, or all.
pub fn code_actions(
    results: &ScriptResults,
    case: &CaseResult,
    uri: &lsp::Uri,
    text: &str,
    range: Range<usize>,
) -> Vec<lsp::CodeActionOrCommand> {
    if case.text != text {
        return Vec::new();
    }
    let index = LineIndex::new(text);
    let to_edit = |edits: Vec<Edit>| {
        let edits = edits
            .into_iter()
            .map(|(r, t)| lsp::TextEdit::new(index.range(text, r), t))
            .collect();
        lsp::WorkspaceEdit {
            changes: Some([(uri.clone(), edits)].into_iter().collect()),
            ..lsp::WorkspaceEdit::default()
        }
    };
    let failing: Vec<&StepOutcome> = case
        .steps
        .iter()
        .filter(|s| s.status == StepStatus::Fail)
        .collect();
    let mut actions = Vec::new();
    for step in &failing {
        let Some(span) = step.expected_span else {
            continue;
        };
        // The entry's lines, from the start of its `- ` line.
        let line_start = text[..span.start.offset.min(text.len())]
            .rfind('\n')
            .map_or(0, |i| i + 1);
        let touches = range.start <= span.end.offset && line_start <= range.end;
        if !touches {
            continue;
        }
        let title = format!(
            "Accept actual output as expected[{}] (step {})",
            step.index,
            step.index + 1
        );
        let action = match accept::accept_case_edits(results, case, Some(step.index)) {
            Ok(edits) if edits.is_empty() => continue,
            Ok(edits) => lsp::CodeAction {
                title,
                kind: Some(lsp::CodeActionKind::QUICKFIX),
                edit: Some(to_edit(edits)),
                is_preferred: Some(true),
                ..lsp::CodeAction::default()
            },
            // Shown greyed out with the reason (e.g. an anchor another entry repeats).
            Err(reason) => lsp::CodeAction {
                title,
                kind: Some(lsp::CodeActionKind::QUICKFIX),
                disabled: Some(lsp::CodeActionDisabled { reason }),
                ..lsp::CodeAction::default()
            },
        };
        actions.push(lsp::CodeActionOrCommand::CodeAction(action));
    }
    if !failing.is_empty()
        && let Ok(edits) = accept::accept_case_edits(results, case, None)
        && !edits.is_empty()
    {
        actions.push(lsp::CodeActionOrCommand::CodeAction(lsp::CodeAction {
            title: format!(
                "Accept actual output as expected for all {} failing step(s)",
                failing.len()
            ),
            kind: Some(lsp::CodeActionKind::QUICKFIX),
            edit: Some(to_edit(edits)),
            ..lsp::CodeAction::default()
        }));
    }
    actions
}

/// Lenses of case `case_index` of `results`: a summary on the first line, and on every step
/// its verdict, "show values of step N" (inline values in the script) and "▶ debug step N"
/// (for a script in a file of its own: the debugger
/// launches a file).
pub fn code_lenses(
    results: &ScriptResults,
    case_index: usize,
    uri: &lsp::Uri,
    text: &str,
) -> Vec<lsp::CodeLens> {
    let case = &results.cases[case_index];
    let index = LineIndex::new(text);
    let mut lenses = Vec::new();
    let summary = match &case.case {
        Err(e) => format!("✗ case cannot be read: {}", e.message),
        Ok(parsed) if parsed.steps.is_empty() => {
            "✗ the case yields no step, so it checks nothing".to_string()
        }
        Ok(_) => steps_lens_title(case),
    };
    lenses.push(lsp::CodeLens {
        range: lsp::Range::default(),
        command: Some(lsp::Command::new(
            summary,
            super::commands::RUN_ALL.into(),
            None,
        )),
        data: None,
    });
    if case.text != text {
        return lenses;
    }
    let facts = case.facts();
    for step in &case.steps {
        let Some(span) = step.step_span else { continue };
        let position = index.position(text, span.start.offset);
        // The step's verdict as `check` decides it (schema errors, the intent check).
        let label = facts.step_label(step);
        let mark = if label == StepLabel::Pass {
            "✓"
        } else {
            "✗"
        };
        let word = label.verb();
        lenses.push(lsp::CodeLens {
            range: lsp::Range::new(position, position),
            command: Some(lsp::Command::new(
                format!("{mark} step {} {word} — show obj as Lua", step.index + 1),
                super::commands::OBJ_AS_LUA.into(),
                Some(vec![serde_json::json!({ "uri": uri, "step": step.index })]),
            )),
            data: None,
        });
        if let ScriptId::File(script) = &results.target.id {
            lenses.push(lsp::CodeLens {
                range: lsp::Range::new(position, position),
                command: Some(super::commands::debug_step_command(
                    script,
                    &case.path,
                    step.index + 1,
                    results.mode,
                )),
                data: None,
            });
            lenses.push(lsp::CodeLens {
                range: lsp::Range::new(position, position),
                command: Some(lsp::Command::new(
                    format!("show values of step {}", step.index + 1),
                    super::step_values::SHOW_STEP_VALUES.into(),
                    Some(vec![serde_json::json!({ "uri": uri, "step": step.index })]),
                )),
                data: None,
            });
        }
    }
    lenses
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use kruise_lua_engine::runner::{Mode, RunOptions};

    use super::*;
    use crate::lsp::project::lua_target;
    use crate::lsp::runs::tests::CASE;
    use crate::lsp::runs::{RunInput, execute};

    /// Defect 1 of issue 23: the raw `<string>:2: '<name>' expected` lost its angle brackets in
    /// VS Code's Markdown hover, and named Lua's chunk instead of the script.
    #[test]
    fn a_step_error_in_a_hover_names_the_script_and_keeps_its_angle_brackets() {
        let script = "local spec = obj.data.spec\nspec. = 1\nreturn obj.data\n";
        let input = RunInput {
            target: lua_target(Path::new("/t/x/Route/trafficRouting.lua")),
            source: script.into(),
            host_text: script.into(),
            embedded: None,
            cases_error: None,
            script_error: None,
            cases: vec![(PathBuf::from("/t/x/Route/testdata/c.yaml"), CASE.into())],
        };
        let results = execute(input, None, Mode::Harness, &RunOptions::default(), &|| {
            false
        })
        .unwrap();
        let case = &results.cases[0];
        let at = CASE.find("traffic: \"20%\"").unwrap();
        let lsp::HoverContents::Markup(content) = hover(&results, case, CASE, at).unwrap().contents
        else {
            panic!("markdown expected")
        };
        assert!(!content.value.contains("<string>"), "{}", content.value);
        assert!(
            content.value.contains("/t/x/Route/trafficRouting.lua:2:"),
            "{}",
            content.value
        );
        assert!(
            content.value.contains("'&lt;name&gt;' expected"),
            "{}",
            content.value
        );
    }
}
