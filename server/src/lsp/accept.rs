//! "Accept actual output as expected" in the editor: the edits for one failing step or all
//! of a case's. The computation (what `expected[i]` becomes, written by minimal edits that
//! keep every other byte of the file) is the project layer's [`crate::project::accept`],
//! which `kruise-lua accept` uses too.

use super::runs::{CaseResult, ScriptResults};
// The computation is the project layer's, shared with `kruise-lua accept`.
pub use crate::project::accept::accept_edits;
use crate::project::yaml_edit::Edit;

/// The edits accepting the actual output of one failing step (`Some(i)`) or all (`None`);
/// an error says why the case cannot be rewritten safely.
pub fn accept_case_edits(
    results: &ScriptResults,
    case: &CaseResult,
    step: Option<usize>,
) -> Result<Vec<Edit>, String> {
    let parsed = case.case.as_ref().map_err(|e| e.message.clone())?;
    let steps = case
        .steps
        .iter()
        .filter(|s| step.is_none_or(|i| s.index == i));
    accept_edits(&case.text, parsed, steps, results.target.flavor())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lsp::project::lua_target;
    use crate::lsp::runs::{RunInput, execute};
    use kruise_lua_engine::runner::{Mode, RunOptions};
    use kruise_lua_engine::script::ScriptFlavor;
    use kruise_lua_engine::testcase::parse_case;
    use std::path::{Path, PathBuf};

    const SCRIPT: &str = "local spec = obj.data.spec\nspec.weight = obj.canaryWeight\nobj.data.labels = {step = tostring(obj.canaryWeight)}\nreturn obj.data\n";

    const CASE: &str = "# header comment\nrollout:\n  spec:\n    strategy:\n      canary:\n        trafficRoutings:\n        - service: web\n        steps:\n        - traffic: \"20%\"\n        - traffic: \"50%\"\noriginal:\n  apiVersion: x/v1\n  kind: Route\n  metadata:\n    name: r\n  spec:\n    weight: 0\nexpected:\n  # first step\n  - apiVersion: x/v1\n    kind: Route\n    metadata:\n      name: r\n      labels:\n        step: \"20\"\n    spec:\n      weight: 20\n  # second step, wrong on purpose\n  - apiVersion: x/v1\n    kind: Route\n    metadata:\n      name: r\n      namespace: prod # kept\n      labels:\n        step: \"60\"\n    spec:\n      weight: 60\n\n# trailing comment\n";

    fn results(case: &str) -> crate::lsp::runs::ScriptResults {
        let input = RunInput {
            target: lua_target(Path::new("/t/x/Route/trafficRouting.lua")),
            source: SCRIPT.into(),
            host_text: SCRIPT.into(),
            embedded: None,
            cases_error: None,
            script_error: None,
            cases: vec![(PathBuf::from("/t/c.yaml"), case.into())],
        };
        execute(input, None, Mode::Harness, &RunOptions::default(), &|| {
            false
        })
        .unwrap()
    }

    /// The case after accepting `step` (all failing steps for `None`), and that it passes.
    fn accept(case_text: &str, step: Option<usize>) -> Result<String, String> {
        let run = results(case_text);
        let case = &run.cases[0];
        let parsed = case.case.as_ref().unwrap();
        let steps = case
            .steps
            .iter()
            .filter(|s| step.is_none_or(|i| s.index == i));
        let edits = accept_edits(case_text, parsed, steps, ScriptFlavor::Custom)?;
        Ok(crate::project::yaml_edit::apply_edits(case_text, edits))
    }

    fn passes(case_text: &str) -> bool {
        let run = results(case_text);
        parse_case(case_text).is_ok() && run.cases[0].passed()
    }

    #[test]
    fn accepting_changes_only_the_differing_values_and_then_passes() {
        let before = results(CASE);
        let parsed = before.cases[0].case.as_ref().unwrap();
        let none = accept_edits(
            CASE,
            parsed,
            [&before.cases[0].steps[0]],
            ScriptFlavor::Custom,
        );
        assert_eq!(none, Ok(Vec::new()), "step 1 passes");
        let new_text = accept(CASE, Some(1)).unwrap();
        assert_eq!(
            new_text,
            CASE.replace("step: \"60\"", "step: \"50\"")
                .replace("weight: 60", "weight: 50"),
        );
        assert!(passes(&new_text), "{new_text}");
    }

    #[test]
    fn the_authors_key_order_is_kept() {
        // spec before metadata, kind before apiVersion: one value changes, one line does.
        let case_text = CASE.replace(
            "  - apiVersion: x/v1\n    kind: Route\n    metadata:\n      name: r\n      namespace: prod # kept\n      labels:\n        step: \"60\"\n    spec:\n      weight: 60\n",
            "  - spec:\n      weight: 51\n    kind: Route\n    apiVersion: x/v1\n    metadata:\n      labels:\n        step: \"50\"\n      name: r\n",
        );
        let new_text = accept(&case_text, Some(1)).unwrap();
        assert_eq!(new_text, case_text.replace("weight: 51", "weight: 50"));
        assert!(passes(&new_text));
    }

    #[test]
    fn anchored_entries_keep_their_anchor_or_are_refused() {
        // The second entry is anchored and the third step's entry repeats it.
        let three_steps = CASE.replace(
            "        - traffic: \"50%\"\n",
            "        - traffic: \"50%\"\n        - traffic: \"50%\"\n",
        );
        let case_text = three_steps
            .replace("  - apiVersion: x/v1\n    kind: Route\n    metadata:\n      name: r\n      namespace", "  - &e0\n    apiVersion: x/v1\n    kind: Route\n    metadata:\n      name: r\n      namespace")
            .replace("\n\n# trailing comment", "\n  - *e0\n\n# trailing comment");
        let err = accept(&case_text, Some(1)).unwrap_err();
        assert!(err.contains("alias `*e0` at line 40"), "{err}");
        // The quick fix for that step is offered disabled, with the reason.
        let run = results(&case_text);
        let uri: tower_lsp_server::ls_types::Uri = "file:///t/c.yaml".parse().unwrap();
        let at = case_text.find("&e0").unwrap();
        let actions =
            crate::lsp::case_view::code_actions(&run, &run.cases[0], &uri, &case_text, at..at);
        let disabled: Vec<String> = actions
            .iter()
            .filter_map(|a| match a {
                tower_lsp_server::ls_types::CodeActionOrCommand::CodeAction(a) => {
                    Some(a.disabled.as_ref()?.reason.clone())
                }
                _ => None,
            })
            .collect();
        assert_eq!(disabled, [err]);
        // Accepting both: the anchor stays, the alias is written out, and the case passes.
        let new_text = accept(&case_text, None).unwrap();
        assert!(
            new_text.contains("  - &e0\n    apiVersion: x/v1\n"),
            "{new_text}"
        );
        assert!(!new_text.contains("*e0"), "{new_text}");
        assert!(passes(&new_text), "{new_text}");
    }

    #[test]
    fn a_flow_entry_keeps_its_trailing_comment() {
        let case_text = CASE.replace(
            "  # second step, wrong on purpose\n  - apiVersion: x/v1\n    kind: Route\n    metadata:\n      name: r\n      namespace: prod # kept\n      labels:\n        step: \"60\"\n    spec:\n      weight: 60\n",
            "  - {apiVersion: x/v1, kind: Route, metadata: {name: r}, spec: {weight: 1}} # flow\n",
        );
        let new_text = accept(&case_text, Some(1)).unwrap();
        assert!(
            new_text.contains("  - {apiVersion: x/v1, kind: Route, metadata: {name: r, labels: {step: \"50\"}}, spec: {weight: 50}} # flow\n"),
            "{new_text}"
        );
        assert!(passes(&new_text), "{new_text}");
    }

    #[test]
    fn crlf_cases_stay_crlf() {
        let case_text = CASE
            .replace("      labels:\n        step: \"60\"\n", "")
            .replace('\n', "\r\n");
        let new_text = accept(&case_text, Some(1)).unwrap();
        assert!(new_text.contains("labels:\r\n"), "{new_text:?}");
        assert!(!new_text.replace("\r\n", "").contains('\n'), "{new_text:?}");
        assert!(passes(&new_text));
    }
}
