//! Tests of accepting, shared by the editor's command and `kruise-lua accept`: byte-exact
//! properties over generated cases (comments, anchors, CRLF kept; only the failing entries
//! change; the result passes), and the compare-and-swap write refusing a changed file.

use super::*;
use proptest::prelude::*;

const SCRIPT: &str =
    "local spec = obj.data.spec\nspec.weight = obj.canaryWeight\nreturn obj.data\n";

/// A case with `weights.len()` steps whose expected weights are `expected`, comments between
/// the parts, an anchor in `original` that `expected[0]` does not use, and `eol` line ends.
fn case_text(weights: &[u32], expected: &[u32], comment: &str, eol: &str) -> String {
    let mut lines = vec![
        format!("# {comment}"),
        "rollout:".to_owned(),
        "  spec:".to_owned(),
        "    strategy:".to_owned(),
        "      canary:".to_owned(),
        "        trafficRoutings:".to_owned(),
        "        - service: web".to_owned(),
        "        steps:".to_owned(),
    ];
    for w in weights {
        lines.push(format!("        - traffic: \"{w}%\""));
    }
    lines.extend([
        "original: &orig".to_owned(),
        "  apiVersion: x/v1".to_owned(),
        "  kind: Route".to_owned(),
        "  metadata: {name: r} # flow style kept".to_owned(),
        "  spec:".to_owned(),
        "    weight: 0".to_owned(),
        "expected:".to_owned(),
    ]);
    for (i, w) in expected.iter().enumerate() {
        lines.push(format!("  # step {} ({comment})", i + 1));
        lines.push("  - apiVersion: x/v1".to_owned());
        lines.push("    kind: Route".to_owned());
        lines.push("    metadata: {name: r}".to_owned());
        lines.push("    spec:".to_owned());
        lines.push(format!("      weight: {w} # {comment}"));
    }
    lines.push("# the end".to_owned());
    let mut text = lines.join(eol);
    text.push_str(eol);
    text
}

fn accept(text: &str, selected: &[usize]) -> Acceptance {
    accept_case(
        text,
        &Script::new(SCRIPT),
        ScriptFlavor::Custom,
        Mode::Harness,
        &RunOptions::default(),
        selected,
    )
    .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn only_failing_entries_change_and_then_every_step_passes(
        weights in prop::collection::vec(0u32..=100, 1..5),
        wrong in prop::collection::vec(any::<bool>(), 5),
        comment in "[a-z ]{0,12}",
        crlf in any::<bool>(),
    ) {
        let eol = if crlf { "\r\n" } else { "\n" };
        let expected: Vec<u32> = weights
            .iter()
            .zip(&wrong)
            .map(|(w, wrong)| if *wrong { (w + 7) % 101 } else { *w })
            .collect();
        let text = case_text(&weights, &expected, comment.trim(), eol);
        let acceptance = accept(&text, &[]);
        // Exactly the lines of the wrong weights changed, comments and line ends kept.
        let right = case_text(&weights, &weights, comment.trim(), eol);
        let want_changes = expected.iter().zip(&weights).filter(|(e, w)| e != w).count();
        let changed = text.split_inclusive(eol).zip(acceptance.new_text.split_inclusive(eol)).filter(|(a, b)| a != b).count();
        prop_assert_eq!(changed, want_changes);
        prop_assert_eq!(text.lines().count(), acceptance.new_text.lines().count());
        if crlf {
            prop_assert!(!acceptance.new_text.replace("\r\n", "").contains('\n'));
        }
        // A wrong weight's line keeps its trailing comment: the result is the right case.
        prop_assert_eq!(&acceptance.new_text, &right);
        let again = accept(&acceptance.new_text, &[]);
        prop_assert!(again.steps.iter().all(|(_, s)| *s == StepAcceptance::Passes));
        prop_assert_eq!(again.new_text, acceptance.new_text);
    }
}

#[test]
fn a_selected_step_is_the_only_one_rewritten() {
    let text = case_text(&[20, 50], &[21, 51], "c", "\n");
    let acceptance = accept(&text, &[1]);
    assert_eq!(acceptance.steps, [(1, StepAcceptance::Accepted)]);
    assert_eq!(
        acceptance.new_text,
        case_text(&[20, 50], &[21, 50], "c", "\n")
    );
    let err = accept_case(
        &text,
        &Script::new(SCRIPT),
        ScriptFlavor::Custom,
        Mode::Harness,
        &RunOptions::default(),
        &[2],
    )
    .unwrap_err();
    assert_eq!(
        err,
        "there is no step 3: the case has 2 step(s), numbered from 1"
    );
}

#[test]
fn a_failing_script_is_refused_not_accepted() {
    let text = case_text(&[20], &[21], "c", "\n");
    let acceptance = accept_case(
        &text,
        &Script::new("error('boom')"),
        ScriptFlavor::Custom,
        Mode::Harness,
        &RunOptions::default(),
        &[],
    )
    .unwrap();
    assert!(
        matches!(&acceptance.steps[0].1, StepAcceptance::Errored(error) if error.message.contains("boom"))
    );
    assert_eq!(acceptance.new_text, text);
}

#[test]
fn a_file_changed_underneath_is_refused_and_left_alone() {
    let dir = std::env::temp_dir().join(format!("kl-accept-cas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("case.yaml");
    let text = case_text(&[20], &[21], "c", "\n");
    let acceptance = accept(&text, &[]);
    // Someone edits the file after accept read it.
    let edited = text.replace("# the end", "# edited meanwhile");
    std::fs::write(&path, &edited).unwrap();
    let err = write_accepted(&path, &text, &acceptance.new_text).unwrap_err();
    assert!(
        err.contains("the file changed while its steps ran"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), edited);
    // Unchanged, it is written.
    std::fs::write(&path, &text).unwrap();
    write_accepted(&path, &text, &acceptance.new_text).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), acceptance.new_text);
    std::fs::remove_dir_all(&dir).unwrap();
}
