//! How a case's failing steps are worded in the editor, from their verdict labels: the case
//! lens's title and the script summary's phrase (`step 1 fails, step 2 errors`).

use super::runs::CaseResult;
use crate::project::verdict::StepLabel;

/// The steps of a case that do not pass, grouped by how they fail, in step order:
/// `[(Fail, [1]), (Error, [2])]` (numbers from 1).
fn failing_by_label(case: &CaseResult) -> Vec<(StepLabel, Vec<usize>)> {
    let facts = case.facts();
    let mut groups: Vec<(StepLabel, Vec<usize>)> = Vec::new();
    for step in &case.steps {
        let label = facts.step_label(step);
        if label == StepLabel::Pass {
            continue;
        }
        match groups.iter_mut().find(|(l, _)| *l == label) {
            Some((_, steps)) => steps.push(step.index + 1),
            None => groups.push((label, vec![step.index + 1])),
        }
    }
    groups
}

/// The case lens's title: `✓ all 2 step(s) pass`, `✗ 1 of 2 step(s) fail`, `✗ 2 of 2 step(s)
/// error`, `✗ 2 of 2 step(s) do not pass: 1 fail, 1 error`.
pub fn steps_lens_title(case: &CaseResult) -> String {
    let total = case.steps.len();
    let groups = failing_by_label(case);
    let failing: usize = groups.iter().map(|(_, steps)| steps.len()).sum();
    match groups.as_slice() {
        [] => format!("✓ all {total} step(s) pass"),
        [(StepLabel::Invalid, _)] => {
            format!("✗ {failing} of {total} step(s) invalid (the API server would reject them)")
        }
        [(label, _)] => format!("✗ {failing} of {total} step(s) {}", label.verb_plural()),
        _ => {
            let parts: Vec<String> = groups
                .iter()
                .map(|(label, steps)| format!("{} {}", steps.len(), label.as_str()))
                .collect();
            format!(
                "✗ {failing} of {total} step(s) do not pass: {}",
                parts.join(", ")
            )
        }
    }
}

/// What a case's failing steps do, for the script's summary: `step 1 fails, step 2 errors`,
/// `steps 1, 2 error`, `step 1 misroutes`, `step 1 invalid (schema)`.
pub fn failing_steps_phrase(case: &CaseResult) -> String {
    failing_by_label(case)
        .iter()
        .map(|(label, steps)| {
            let list = steps
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(", ");
            let (noun, verb) = match (steps.len(), label) {
                (1, StepLabel::Invalid) => ("step", "invalid (schema)"),
                (_, StepLabel::Invalid) => ("steps", "invalid (schema)"),
                (1, label) => ("step", label.verb()),
                (_, label) => ("steps", label.verb_plural()),
            };
            format!("{noun} {list} {verb}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}
