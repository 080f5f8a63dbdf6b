//! End-to-end tests of `kruise-lua accept`: the failing steps' actual output written as their
//! `expected` entries in place (every other byte kept: comments, anchors, CRLF), `--step`,
//! `--dry-run`, a step whose script fails, a case outside a testdata folder, and a `|+` block
//! scalar kept in its style.

mod common;

use common::{copy_tree, fixtures, run_in, scratch};

const CASE: &str = "lua_configuration/example.io/Weighted/testdata/rollout_steps.yaml";

/// A copy of the passing fixture tree with step 1's and step 2's expected weights made wrong
/// (a comment on one of them), and `eol` line ends.
fn broken_tree(name: &str, eol: &str) -> (std::path::PathBuf, String, String) {
    let dir = scratch(name);
    copy_tree(
        &fixtures().join("tree/lua_configuration"),
        &dir.join("lua_configuration"),
    );
    let path = dir.join(CASE);
    let good = std::fs::read_to_string(&path).unwrap();
    assert_eq!(good.matches("        weight: 80\n").count(), 1, "{good}");
    assert_eq!(good.matches("        weight: 50\n").count(), 2, "{good}");
    let broken = good
        .replacen("        weight: 80\n", "        weight: 81 # was 80\n", 1)
        .replacen("expected:\n", "expected: # the three steps\n", 1);
    let broken = broken.replace('\n', eol);
    std::fs::write(&path, &broken).unwrap();
    (dir, good.replace('\n', eol), broken)
}

#[test]
fn accept_rewrites_only_the_failing_value_and_the_case_passes() {
    for eol in ["\n", "\r\n"] {
        let (dir, good, broken) = broken_tree(&format!("accept-{}", eol.len()), eol);
        let before = run_in(&dir, &["check", CASE]);
        assert_eq!(before.code, 1, "{before:?}");

        let result = run_in(&dir, &["accept", CASE]);
        assert_eq!(result.code, 0, "{result:?}");
        assert!(
            result.stderr.contains("step 1: expected[0] rewritten"),
            "{result:?}"
        );
        assert!(result.stderr.contains("step 2: passes"), "{result:?}");
        assert!(
            result.stdout.contains("-        weight: 81 # was 80"),
            "{result:?}"
        );
        assert!(
            result.stdout.contains("+        weight: 80 # was 80"),
            "{result:?}"
        );
        let after = std::fs::read_to_string(dir.join(CASE)).unwrap();
        // Byte for byte: the one value changed, its comment, the other comment and the line
        // ends kept.
        assert_eq!(
            after,
            broken.replace("weight: 81 # was 80", "weight: 80 # was 80")
        );
        assert_eq!(
            after
                .replace(" # was 80", "")
                .replace(" # the three steps", ""),
            good
        );
        let check = run_in(&dir, &["check", CASE]);
        assert_eq!(check.code, 0, "{check:?}");
    }
}

#[test]
fn dry_run_prints_the_diff_and_writes_nothing() {
    let (dir, _, broken) = broken_tree("accept-dry", "\n");
    let result = run_in(&dir, &["accept", "--dry-run", CASE]);
    assert_eq!(result.code, 0, "{result:?}");
    assert!(
        result.stderr.contains("expected[0] would be rewritten"),
        "{result:?}"
    );
    assert!(result.stdout.starts_with("--- "), "{result:?}");
    assert_eq!(std::fs::read_to_string(dir.join(CASE)).unwrap(), broken);
}

#[test]
fn step_selects_what_is_accepted() {
    let (dir, _, broken) = broken_tree("accept-step", "\n");
    // Step 2 passes: nothing is written.
    let result = run_in(&dir, &["accept", "--step", "2", CASE]);
    assert_eq!(result.code, 0, "{result:?}");
    assert_eq!(result.stdout, "");
    assert_eq!(std::fs::read_to_string(dir.join(CASE)).unwrap(), broken);
    let result = run_in(&dir, &["accept", "--step", "9", CASE]);
    assert_eq!(result.code, 2, "{result:?}");
    assert!(
        result
            .stderr
            .contains("there is no step 9: the case has 3 step(s)"),
        "{result:?}"
    );
    let result = run_in(&dir, &["accept", "--step", "1", CASE]);
    assert_eq!(result.code, 0, "{result:?}");
    assert_ne!(std::fs::read_to_string(dir.join(CASE)).unwrap(), broken);
}

#[test]
fn a_step_whose_script_fails_is_not_accepted() {
    let (dir, _, broken) = broken_tree("accept-error", "\n");
    let script = dir.join("lua_configuration/example.io/Weighted/trafficRouting.lua");
    std::fs::write(&script, "error('no weights today')\n").unwrap();
    let result = run_in(&dir, &["accept", CASE]);
    assert_eq!(result.code, 1, "{result:?}");
    assert!(
        result.stderr.contains("step 1: not accepted:"),
        "{result:?}"
    );
    // At the script's file and line, as `run` and `check` show it (it read "runtime error:
    // <string>:1: no weights today").
    assert!(
        result.stderr.contains(
            "step 1: not accepted: lua_configuration/example.io/Weighted/trafficRouting.lua:1: runtime error: no weights today"
        ),
        "{result:?}"
    );
    assert!(!result.stderr.contains("<string>"), "{result:?}");
    assert_eq!(std::fs::read_to_string(dir.join(CASE)).unwrap(), broken);
}

/// A file that cannot be written is never said to be rewritten: the steps read "would be
/// rewritten" (as with --dry-run), then the error (it said "rewritten", then failed).
#[cfg(unix)]
#[test]
fn a_read_only_case_is_not_said_to_be_rewritten() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, _, broken) = broken_tree("accept-read-only", "\n");
    let path = dir.join(CASE);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
    let result = run_in(&dir, &["accept", CASE]);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_eq!(result.code, 2, "{result:?}");
    assert!(
        result
            .stderr
            .contains("step 1: expected[0] would be rewritten"),
        "{result:?}"
    );
    assert!(!result.stderr.contains("] rewritten"), "{result:?}");
    let error = result.stderr.lines().last().unwrap_or_default();
    assert!(
        error.starts_with("kruise-lua: error: ")
            && error.ends_with("rollout_steps.yaml: the file is read-only"),
        "{result:?}"
    );
    assert!(result.stdout.starts_with("--- "), "{result:?}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), broken);
}

#[test]
fn a_case_outside_testdata_needs_its_script_named() {
    let (dir, _, _) = broken_tree("accept-outside", "\n");
    std::fs::copy(dir.join(CASE), dir.join("loose.yaml")).unwrap();
    let result = run_in(&dir, &["accept", "loose.yaml"]);
    assert_eq!(result.code, 2, "{result:?}");
    assert!(
        result.stderr.contains("name it with --script"),
        "{result:?}"
    );
    let result = run_in(
        &dir,
        &[
            "accept",
            "loose.yaml",
            "--script",
            "lua_configuration/example.io/Weighted/trafficRouting.lua",
        ],
    );
    assert_eq!(result.code, 0, "{result:?}");
    assert!(
        result.stderr.contains("expected[0] rewritten"),
        "{result:?}"
    );
}

/// A `|+` (keep) block in `expected` stays a `|+` block: its changed line is rewritten in
/// place and the empty line after it (the value's second final line break) kept, every other
/// byte as it was (it became a quoted one-line string).
#[test]
fn a_keep_block_scalar_keeps_its_style() {
    let (dir, good, _) = broken_tree("accept-keep-block", "\n");
    let script = dir.join("lua_configuration/example.io/Weighted/trafficRouting.lua");
    let source = std::fs::read_to_string(&script).unwrap();
    let noted = source.replacen(
        "return { spec",
        "annotations[\"example.io/note\"] = \"canary \" .. obj.canaryWeight .. \"%\\n\\n\"\nreturn { spec",
        1,
    );
    assert_ne!(noted, source);
    std::fs::write(&script, noted).unwrap();
    let note = |weight: &str, written: &str| {
        format!(
            "      example.io/canary-weight: \"{weight}\"\n      example.io/note: |+ # as logged\n        canary {written}%\n\n"
        )
    };
    let with_notes = |first: &str| {
        good.replacen(
            "      example.io/canary-weight: \"20\"\n",
            &note("20", first),
            1,
        )
        .replacen(
            "      example.io/canary-weight: \"50\"\n",
            &note("50", "50"),
            1,
        )
    };
    let (broken, fixed) = (with_notes("21"), with_notes("20"));
    assert_ne!(broken, good);
    std::fs::write(dir.join(CASE), &broken).unwrap();

    let result = run_in(&dir, &["accept", CASE]);
    assert_eq!(result.code, 0, "{result:?}");
    assert!(
        result.stderr.contains("step 1: expected[0] rewritten"),
        "{result:?}"
    );
    assert_eq!(std::fs::read_to_string(dir.join(CASE)).unwrap(), fixed);
    let check = run_in(&dir, &["check", CASE]);
    assert_eq!(check.code, 0, "{check:?}");
}
