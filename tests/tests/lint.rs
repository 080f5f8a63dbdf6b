//! End-to-end tests of `kruise-lua lint` and `check --lint`: exit codes, every format (SARIF
//! validated against the official 2.1.0 schema), `kruise-lua.toml`, positions inside ConfigMap
//! manifests, `--fix`, and `--watch` (a real process, a file touched, its output read).

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::{binary, copy_tree, fixtures, json_lines, run_in, scratch};
use serde_json::Value;

const SCRIPT: &str = "example.io/Weighted/trafficRouting.lua";

/// A copy of the passing fixture tree (plus a ConfigMap) in a scratch folder.
fn tree(name: &str) -> PathBuf {
    let dir = scratch(name);
    copy_tree(
        &fixtures().join("tree/lua_configuration"),
        &dir.join("lua_configuration"),
    );
    dir
}

fn write(dir: &Path, relative: &str, text: &str) {
    let path = dir.join(relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Puts a misspelt obj field (KL001, an error with a fix) into the Weighted script.
fn misspell(dir: &Path) -> String {
    let path = dir.join("lua_configuration").join(SCRIPT);
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("weight = obj.canaryWeight }", "weight = obj.canaryweight }");
    std::fs::write(&path, &text).unwrap();
    text
}

const MANIFEST: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kruise-rollout-configuration\ndata:\n  lua.traffic.routing.Route.example.io: |\n    local spec = obj.data.spec\n    spec.weight = obj.canaryweight\n    return obj.data\n";

#[test]
fn a_clean_tree_exits_0() {
    let dir = tree("lint-clean");
    let result = run_in(&dir, &["lint", "lua_configuration"]);
    assert_eq!(result.code, 0, "{result:?}");
    assert_eq!(result.stdout, "no problems in 2 files\n", "{result:?}");
    // The bundled library is lint-clean too.
    let result = run_in(&common::workspace(), &["lint", "lua_configuration"]);
    assert_eq!(result.code, 0, "{result:?}");
}

#[test]
fn errors_exit_1_with_code_position_source_line_and_fix() {
    let dir = tree("lint-human");
    misspell(&dir);
    let result = run_in(&dir, &["lint"]);
    assert_eq!(result.code, 1, "{result:?}");
    let expected = "error[KL001]: `obj` has no field `canaryweight`; did you mean `canaryWeight`?\n --> lua_configuration/example.io/Weighted/trafficRouting.lua:9:46\n  |\n9 |     { host = obj.canaryService, weight = obj.canaryweight },\n  |                                              ^^^^^^^^^^^^\n  = fix: Change to `canaryWeight`\n\n";
    assert!(result.stdout.starts_with(expected), "{result:?}");
    assert_eq!(
        result.lines().last().unwrap(),
        &"1 problem (1 error) in 2 files, 1 fixable with --fix"
    );
}

#[test]
fn warnings_fail_only_with_deny_warnings_and_config_applies() {
    let dir = tree("lint-warnings");
    write(
        &dir,
        "lua_configuration/example.io/Labels/trafficRouting.lua",
        "obj.data.labels[\"canary\"] = \"true\"\nreturn obj.data\n",
    );
    write(
        &dir,
        "lua_configuration/example.io/Labels/testdata/.keep",
        "",
    );
    let result = run_in(&dir, &["lint", "lua_configuration"]);
    assert_eq!(result.code, 0, "{result:?}");
    assert!(result.stdout.contains("warning[KL009]"), "{result:?}");
    let result = run_in(&dir, &["lint", "--deny-warnings", "lua_configuration"]);
    assert_eq!(result.code, 1, "{result:?}");

    // kruise-lua.toml at the tree's root: by name or code, as the language server reads it.
    write(
        &dir,
        "lua_configuration/kruise-lua.toml",
        "[lints]\noptional-obj-field = \"error\"\n",
    );
    let result = run_in(&dir, &["lint", "lua_configuration"]);
    assert_eq!(result.code, 1, "{result:?}");
    assert!(result.stdout.contains("error[KL009]"), "{result:?}");
    write(
        &dir,
        "lua_configuration/kruise-lua.toml",
        "[lints]\nKL009 = \"off\"\n",
    );
    let result = run_in(&dir, &["lint", "--deny-warnings", "lua_configuration"]);
    assert_eq!(result.code, 0, "{result:?}");
    write(
        &dir,
        "lua_configuration/kruise-lua.toml",
        "[lints]\nKL999 = \"off\"\n",
    );
    let result = run_in(&dir, &["lint", "lua_configuration"]);
    assert_eq!(result.code, 2, "{result:?}");
    assert!(
        result
            .stderr
            .contains("kruise-lua.toml: unknown lint `KL999`"),
        "{result:?}"
    );
}

#[test]
fn configmap_findings_are_at_manifest_positions() {
    let dir = scratch("lint-configmap");
    write(&dir, "cm.yaml", MANIFEST);
    let result = run_in(&dir, &["lint", "--format", "json", "cm.yaml"]);
    assert_eq!(result.code, 1, "{result:?}");
    let lines = json_lines(&result.stdout);
    assert_eq!(lines.len(), 1, "{result:?}");
    let finding = &lines[0];
    assert_eq!(finding["type"], "lint");
    assert_eq!(finding["file"], "cm.yaml");
    assert_eq!(finding["key"], "lua.traffic.routing.Route.example.io");
    assert_eq!(finding["code"], "KL001");
    assert_eq!(finding["severity"], "error");
    assert_eq!(
        (finding["line"].as_u64(), finding["column"].as_u64()),
        (Some(8), Some(23))
    );
    assert_eq!(finding["end_column"], 35);
    assert_eq!(finding["fix"]["replacement"], "canaryWeight");

    let result = run_in(&dir, &["lint", "--format", "github", "cm.yaml"]);
    assert_eq!(
        result.lines()[0],
        "::error file=cm.yaml,line=8,col=23,endLine=8,endColumn=35,title=KL001 unknown-obj-field::`obj` has no field `canaryweight`; did you mean `canaryWeight`? (fix: Change to `canaryWeight`)"
    );
}

/// A script that is not a regular file is read as `check` reads it: an error naming it
/// (exit 2), never linted as an empty script (it got a bogus KL003 "the script does not return a
/// table", exit 1) nor touched by --fix.
#[cfg(unix)]
#[test]
fn a_fifo_script_is_an_error_as_in_check() {
    let dir = tree("lint-fifo");
    let script = dir.join("lua_configuration/example.io/Fifo/trafficRouting.lua");
    std::fs::create_dir_all(script.parent().unwrap().join("testdata")).unwrap();
    common::mkfifo(&script);
    let wanted = "fail to read script lua_configuration/example.io/Fifo/trafficRouting.lua: is a FIFO, not a regular file";
    for args in [
        &["lint", "lua_configuration"][..],
        &["lint", "--fix", "lua_configuration"],
        &["check", "lua_configuration"],
    ] {
        let result = common::run_in_within(&dir, 60, args);
        assert_eq!(result.code, 2, "{args:?}: {result:?}");
        assert!(result.stderr.contains(wanted), "{args:?}: {result:?}");
        assert!(!result.stdout.contains("KL003"), "{args:?}: {result:?}");
    }
    use std::os::unix::fs::FileTypeExt;
    assert!(
        std::fs::symlink_metadata(&script)
            .unwrap()
            .file_type()
            .is_fifo()
    );
}

#[test]
fn fix_rewrites_only_the_fixed_bytes_in_scripts_and_manifests() {
    let dir = tree("lint-fix");
    let broken = misspell(&dir);
    write(&dir, "cm.yaml", MANIFEST);
    let result = run_in(&dir, &["lint", "--fix", "lua_configuration", "cm.yaml"]);
    assert_eq!(result.code, 0, "{result:?}");
    assert!(
        result
            .stdout
            .ends_with("no problems in 3 files; fixed 2 problems in 2 files\n"),
        "{result:?}"
    );
    let fixed = std::fs::read_to_string(dir.join("lua_configuration").join(SCRIPT)).unwrap();
    assert_eq!(
        fixed,
        broken.replace("obj.canaryweight", "obj.canaryWeight")
    );
    let manifest = std::fs::read_to_string(dir.join("cm.yaml")).unwrap();
    assert_eq!(manifest, MANIFEST.replace("canaryweight", "canaryWeight"));
    // Nothing left behind, and a second run has nothing to do.
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    let result = run_in(&dir, &["lint", "--fix", "lua_configuration", "cm.yaml"]);
    assert!(
        result.stdout.ends_with("fixed 0 problems in 0 files\n"),
        "{result:?}"
    );
}

/// QA's manifest: the Route script is a double-quoted YAML string (two leading empty lines
/// as `\n` escapes), the Other script a block scalar that holds the same misspelling-looking
/// text in a string literal.
const QUOTED_MANIFEST: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kruise-rollout-configuration\n  namespace: kruise-rollout\ndata:\n  lua.traffic.routing.Route.example.io: \"\\n\\n  local w = obj.canaryweight\\nreturn {spec = {w = w}}\\n\"\n  lua.traffic.routing.Other.example.io: |\n    local s =\"obj.canaryweight\"\n    return {spec = {s = s}}\n";

#[test]
fn findings_and_fixes_in_a_double_quoted_script_stay_in_its_string() {
    let dir = scratch("lint-quoted-configmap");
    write(&dir, "cm.yaml", QUOTED_MANIFEST);
    let result = run_in(&dir, &["lint", "--format", "json", "cm.yaml"]);
    let lines = json_lines(&result.stdout);
    let kl001: Vec<&Value> = lines.iter().filter(|l| l["code"] == "KL001").collect();
    assert_eq!(kl001.len(), 1, "{result:?}");
    assert_eq!(kl001[0]["key"], "lua.traffic.routing.Route.example.io");
    // Line 7, on the `canaryweight` after the escapes (it was 9:19, in the Other script).
    let column = QUOTED_MANIFEST
        .lines()
        .nth(6)
        .unwrap()
        .find("canaryweight")
        .unwrap()
        + 1;
    assert_eq!(
        (kl001[0]["line"].as_u64(), kl001[0]["column"].as_u64()),
        (Some(7), Some(column as u64)),
        "{result:?}"
    );
    assert_eq!(kl001[0]["end_column"].as_u64(), Some(column as u64 + 12));

    let result = run_in(&dir, &["lint", "--fix", "cm.yaml"]);
    assert!(
        result.stdout.contains("fixed 1 problem in 1 file"),
        "{result:?}"
    );
    let fixed = std::fs::read_to_string(dir.join("cm.yaml")).unwrap();
    // The Route script is fixed; the Other script's bytes are untouched.
    assert_eq!(
        fixed,
        QUOTED_MANIFEST.replacen(
            "local w = obj.canaryweight",
            "local w = obj.canaryWeight",
            1
        )
    );
    assert!(fixed.contains("local s =\"obj.canaryweight\""));
}

#[test]
fn hints_in_a_double_quoted_script_sit_on_its_own_line() {
    let dir = scratch("lint-quoted-hint");
    let manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kruise-rollout-configuration\n  namespace: kruise-rollout\ndata:\n  lua.traffic.routing.Route.example.io: \"local a = 1\\nlocal b = 2\\nerror('boom on script line 3')\\nreturn obj.data\\n\"\n  lua.traffic.routing.Other.example.io: |\n    local unused = 1\n    return obj.data\n";
    write(&dir, "cm.yaml", manifest);
    let result = run_in(&dir, &["lint", "--format", "json", "cm.yaml"]);
    let lines = json_lines(&result.stdout);
    let b = lines
        .iter()
        .find(|l| l["code"] == "KL007" && l["message"].as_str().unwrap().contains("`b`"))
        .unwrap_or_else(|| panic!("{result:?}"));
    assert_eq!(b["key"], "lua.traffic.routing.Route.example.io");
    let column = manifest.lines().nth(6).unwrap().find("b = 2").unwrap() + 1;
    assert_eq!(
        (b["line"].as_u64(), b["column"].as_u64()),
        (Some(7), Some(column as u64)),
        "{result:?}"
    );
}

#[test]
fn a_fix_next_to_an_escape_is_written_between_them() {
    let dir = scratch("lint-quoted-escape");
    let manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kruise-rollout-configuration\ndata:\n  lua.traffic.routing.Route.example.io: \"local w =\\u0020obj.canaryweight\\nreturn {spec = {w = w}}\"\n";
    write(&dir, "cm.yaml", manifest);
    let result = run_in(&dir, &["lint", "--fix", "cm.yaml"]);
    let fixed = std::fs::read_to_string(dir.join("cm.yaml")).unwrap();
    assert_eq!(
        fixed,
        manifest.replace("canaryweight", "canaryWeight"),
        "{result:?}"
    );
}

#[test]
fn a_fix_that_cannot_be_written_into_the_yaml_string_is_refused_with_its_reason() {
    let dir = scratch("lint-binary-refused");
    // A `!!binary` script: its text is base64 in the manifest, no fix can be spelled there.
    let manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kruise-rollout-configuration\ndata:\n  lua.traffic.routing.Route.example.io: !!binary bG9jYWwgdyA9IG9iai5jYW5hcnl3ZWlnaHQKcmV0dXJuIHtzcGVjID0ge3cgPSB3fX0K\n";
    write(&dir, "cm.yaml", manifest);
    let result = run_in(&dir, &["lint", "--fix", "cm.yaml"]);
    assert_eq!(
        std::fs::read_to_string(dir.join("cm.yaml")).unwrap(),
        manifest
    );
    assert!(result.stdout.contains("fixed 0 problems"), "{result:?}");
    assert!(
        result.stdout.contains("cm.yaml:6:")
            && result.stdout.contains("= no automatic fix here: kruise-lua could not place this YAML string's text in the file"),
        "{result:?}"
    );
}

/// The official SARIF 2.1.0 schema (tests/fixtures/sarif, see its README).
fn sarif_validator() -> jsonschema::Validator {
    let text = std::fs::read_to_string(fixtures().join("sarif/sarif-schema-2.1.0.json")).unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    jsonschema::draft4::new(&schema).expect("the SARIF schema compiles")
}

fn assert_valid_sarif(stdout: &str) -> Value {
    let log: Value = serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let validator = sarif_validator();
    let errors: Vec<String> = validator
        .iter_errors(&log)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{}\n{stdout}", errors.join("\n"));
    log
}

#[test]
fn sarif_of_lint_and_check_is_valid_against_the_schema() {
    let dir = tree("lint-sarif");
    misspell(&dir);
    write(&dir, "cm.yaml", MANIFEST);
    let result = run_in(
        &dir,
        &["lint", "--format", "sarif", "lua_configuration", "cm.yaml"],
    );
    assert_eq!(result.code, 1, "{result:?}");
    let log = assert_valid_sarif(&result.stdout);
    let results = log["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "{results:#?}");
    let fix = &results[0]["fixes"][0]["artifactChanges"][0]["replacements"][0];
    assert_eq!(fix["insertedContent"]["text"], "canaryWeight");
    assert_eq!(fix["deletedRegion"]["startLine"], 9);

    // check: failures of every kind (the errors fixture), and the combined --lint report.
    let result = run_in(
        &fixtures(),
        &["check", "--format", "sarif", "errors/lua_configuration"],
    );
    assert_eq!(result.code, 1, "{result:?}");
    let log = assert_valid_sarif(&result.stdout);
    let rules: Vec<&str> = log["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["ruleId"].as_str().unwrap())
        .collect();
    assert!(
        rules.contains(&"check/error") || rules.contains(&"check/fail"),
        "{rules:?}"
    );
    let result = run_in(
        &dir,
        &["check", "--lint", "--format", "sarif", "lua_configuration"],
    );
    let log = assert_valid_sarif(&result.stdout);
    let rules: Vec<&str> = log["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["ruleId"].as_str().unwrap())
        .collect();
    assert!(rules.contains(&"KL001"), "{rules:?}");
    assert!(rules.contains(&"check/fail"), "{rules:?}");

    // The validator does reject what the schema forbids.
    let mut broken = log.clone();
    broken["runs"][0]["results"][0]["level"] = Value::from("fatal");
    assert!(!sarif_validator().is_valid(&broken));
}

#[test]
fn check_with_lint_reports_both_and_fails_on_either() {
    let dir = tree("lint-check");
    let result = run_in(&dir, &["check", "--lint", "lua_configuration"]);
    assert_eq!(result.code, 0, "{result:?}");
    assert!(
        result.stdout.starts_with("lint: no problems in 2 files\n"),
        "{result:?}"
    );
    // A lint error alone (the misspelt field is in a step the cases never reach) fails the run.
    write(
        &dir,
        "lua_configuration/example.io/Weighted/trafficRouting.lua",
        &std::fs::read_to_string(dir.join("lua_configuration").join(SCRIPT))
            .unwrap()
            .replacen(
                "return obj.data\n",
                "return obj.data, obj.canaryweight and nil\n",
                1,
            ),
    );
    let plain = run_in(&dir, &["check", "lua_configuration"]);
    let result = run_in(&dir, &["check", "--lint", "lua_configuration"]);
    assert_eq!(result.code, 1, "{result:?}");
    assert!(result.stdout.contains("error[KL001]"), "{result:?}");
    assert!(
        result.stdout.ends_with(&plain.stdout),
        "the check report follows the lint findings\n{result:?}\n{plain:?}"
    );
    let json = run_in(
        &dir,
        &["check", "--lint", "--format", "json", "lua_configuration"],
    );
    let lines = json_lines(&json.stdout);
    assert!(
        lines
            .iter()
            .any(|l| l["type"] == "lint" && l["code"] == "KL001")
    );
    assert!(lines.iter().any(|l| l["status"] == "pass"));
    let junit = run_in(
        &dir,
        &["check", "--lint", "--format", "junit", "lua_configuration"],
    );
    assert_eq!(junit.code, 2, "{junit:?}");
}

/// A `--watch` process whose stdout lines arrive on a channel; killed when dropped.
struct Watching {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Watching {
    fn start(dir: &Path, args: &[&str]) -> Watching {
        let mut child = Command::new(binary())
            .current_dir(dir)
            .args(args)
            .env("NO_COLOR", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start kruise-lua --watch");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Watching { child, lines }
    }

    /// Reads lines until one satisfies `wanted` (a generous bound: it fails only if nothing
    /// comes for a minute).
    fn wait_for(&self, wanted: impl Fn(&str) -> bool) -> Vec<String> {
        let mut seen = Vec::new();
        loop {
            match self.lines.recv_timeout(Duration::from_secs(60)) {
                Ok(line) => {
                    let done = wanted(&line);
                    seen.push(line);
                    if done {
                        return seen;
                    }
                }
                Err(_) => panic!("no matching line; output so far:\n{}", seen.join("\n")),
            }
        }
    }

    /// The summary line of the next run (each run prints `----`, then its summary, when
    /// stdout is not a terminal).
    fn next_summary(&self) -> String {
        self.wait_for(|line| line == "----");
        self.wait_for(|_| true).pop().unwrap()
    }

    /// Summaries until one satisfies `wanted`, all of them returned (one save can reach the
    /// watcher as more than one burst of events, e.g. the truncation and then the write).
    fn summaries_until(&self, wanted: impl Fn(&str) -> bool) -> Vec<String> {
        let mut seen = Vec::new();
        loop {
            let summary = self.next_summary();
            let done = wanted(&summary);
            seen.push(summary);
            if done {
                return seen;
            }
        }
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn lint_watch_reruns_on_save() {
    let dir = tree("lint-watch");
    let watching = Watching::start(&dir, &["lint", "--watch", "lua_configuration"]);
    assert_eq!(watching.next_summary(), "no problems in 2 files");
    misspell(&dir);
    watching.summaries_until(|s| s == "1 problem (1 error) in 2 files, 1 fixable with --fix");
    let seen = watching.wait_for(|line| line.starts_with("error[KL001]"));
    assert_eq!(seen.len(), 1, "the failures follow the summary: {seen:?}");
    let path = dir.join("lua_configuration").join(SCRIPT);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("canaryweight", "canaryWeight")).unwrap();
    watching.summaries_until(|s| s == "no problems in 2 files");
}

#[test]
fn check_watch_reruns_the_changed_script() {
    let dir = tree("check-watch");
    let watching = Watching::start(&dir, &["check", "--watch", "lua_configuration"]);
    let first = watching.next_summary();
    assert!(first.starts_with("7 passed, 0 failed"), "{first}");
    let case = dir.join("lua_configuration/example.io/Weighted/testdata/rollout_steps.yaml");
    let text = std::fs::read_to_string(&case).unwrap();
    std::fs::write(&case, format!("{text}\n")).unwrap();
    // Only the Weighted script runs again (the HeaderRoute one has 2 of the 7 steps).
    let seen = watching.summaries_until(|s| s.starts_with("5 passed, 0 failed"));
    assert!(!seen.iter().any(|s| s.starts_with("7 passed")), "{seen:?}");
    // A change that belongs to no one script (the lint configuration) reruns everything.
    write(&dir, "lua_configuration/kruise-lua.toml", "[lints]\n");
    watching.summaries_until(|s| s.starts_with("7 passed, 0 failed"));
}

#[test]
fn deeply_nested_scripts_are_an_error_not_a_crash() {
    let dir = scratch("lint-deep");
    let nested = format!(
        "local x = {}1{}\nreturn obj.data\n",
        "(".repeat(50_000),
        ")".repeat(50_000)
    );
    write(&dir, "lc/example.io/Deep/trafficRouting.lua", &nested);
    write(&dir, "lc/example.io/Deep/testdata/.keep", "");
    let result = run_in(&dir, &["lint", "--format", "json", "lc"]);
    assert_eq!(result.code, 1, "{}", result.stderr);
    let lines = json_lines(&result.stdout);
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["code"], "syntax");
    assert_eq!(lines[0]["message"], "chunk has too many syntax levels");
}

#[test]
fn files_too_large_to_analyse_are_reported() {
    let dir = scratch("lint-large");
    let mut big = String::from("local t = {}\n");
    while big.len() <= 3 << 20 {
        big.push_str("t[#t + 1] = \"0123456789012345678901234567890123456789\"\n");
    }
    big.push_str("return obj.data\n");
    write(&dir, "lc/example.io/Big/trafficRouting.lua", &big);
    write(&dir, "lc/example.io/Big/testdata/.keep", "");
    let result = run_in(&dir, &["lint", "--format", "json", "--deny-warnings", "lc"]);
    assert_eq!(result.code, 1, "{}", result.stderr);
    let lines = json_lines(&result.stdout);
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["code"], "too-large");
    assert_eq!(lines[0]["severity"], "warning");
}

/// KL014 (issue 11): a field the script writes under `spec` that the CRD does not declare,
/// with the CRDs found as `check` finds them (`crds/` folder, `--crd`), and `--no-schema`.
#[test]
fn fields_the_crd_does_not_declare_are_kl014_with_the_crd_at_hand() {
    let dir = scratch("lint-kl014");
    copy_tree(
        &fixtures().join("schema/lua_configuration"),
        &dir.join("lc"),
    );
    let script = dir.join("lc/example.io/Weighted/trafficRouting.lua");
    let text = std::fs::read_to_string(&script)
        .unwrap()
        .replace("weight = obj.canaryWeight }", "wieght = obj.canaryWeight }");
    std::fs::write(&script, text).unwrap();

    let result = run_in(&dir, &["lint", "--format", "json", "lc"]);
    assert_eq!(result.code, 0, "a warning: {result:?}");
    let lines = json_lines(&result.stdout);
    let kl014: Vec<&Value> = lines.iter().filter(|l| l["code"] == "KL014").collect();
    assert_eq!(kl014.len(), 1, "{lines:#?}");
    assert_eq!(kl014[0]["severity"], "warning");
    assert_eq!(
        kl014[0]["message"],
        "the API server would drop `spec.routes[].destinations[].wieght`: the CRD schema of \
         Weighted example.io/v1 does not declare `wieght`; did you mean `weight`?"
    );
    let denied = run_in(&dir, &["lint", "--deny-warnings", "lc"]);
    assert_eq!(denied.code, 1, "{denied:?}");

    // Without schemas there is nothing to check against.
    let result = run_in(&dir, &["lint", "--format", "json", "--no-schema", "lc"]);
    assert!(
        json_lines(&result.stdout)
            .iter()
            .all(|l| l["code"] != "KL014"),
        "{result:?}"
    );

    // `--crd` wins over the crds/ folder: a CRD that keeps unknown destination fields.
    let loose = dir.join("loose.yaml");
    let crd = std::fs::read_to_string(dir.join("lc/crds/weighted.yaml"))
        .unwrap()
        .replace(
            "                          required: [host]\n",
            "                          required: [host]\n                          x-kubernetes-preserve-unknown-fields: true\n",
        );
    std::fs::write(&loose, crd).unwrap();
    let result = run_in(
        &dir,
        &["lint", "--format", "json", "--crd", "loose.yaml", "lc"],
    );
    assert!(
        json_lines(&result.stdout)
            .iter()
            .all(|l| l["code"] != "KL014"),
        "{result:?}"
    );
    let missing = run_in(&dir, &["lint", "--crd", "nowhere.yaml", "lc"]);
    assert_eq!(missing.code, 2, "{missing:?}");
}

/// QA: a watched folder deleted and made again (a branch switch, a generator) is watched
/// again: at once (removed and copied back before the watcher looks) and after a while
/// (a run in between says it is missing); a later edit in it reruns.
#[test]
fn check_watch_follows_a_folder_deleted_and_made_again() {
    let dir = tree("check-watch-recreated");
    let lc = dir.join("lua_configuration");
    let fixture = fixtures().join("tree/lua_configuration");
    let case = lc.join("example.io/Weighted/testdata/rollout_steps.yaml");
    let watching = Watching::start(&dir, &["check", "--watch", "lua_configuration"]);
    let first = watching.next_summary();
    assert!(first.starts_with("7 passed, 0 failed"), "{first}");

    // Removed and copied back at once, then a step's expectation broken.
    std::fs::remove_dir_all(&lc).unwrap();
    copy_tree(&fixture, &lc);
    let text = std::fs::read_to_string(&case).unwrap();
    assert!(text.contains("weight: 80"), "{text}");
    std::fs::write(&case, text.replacen("weight: 80", "weight: 81", 1)).unwrap();
    watching.summaries_until(|s| s.contains(", 1 failed"));

    // Removed, reported missing, then copied back (passing again).
    std::fs::remove_dir_all(&lc).unwrap();
    watching.summaries_until(|s| s.starts_with("kruise-lua: error:"));
    copy_tree(&fixture, &lc);
    watching.summaries_until(|s| s.starts_with("7 passed, 0 failed"));
    let text = std::fs::read_to_string(&case).unwrap();
    std::fs::write(&case, text.replacen("weight: 80", "weight: 81", 1)).unwrap();
    watching.summaries_until(|s| s.contains(", 1 failed"));
}

/// `lint --watch` shares the watch: a deleted folder is reported, then linted again when it
/// comes back, and a later edit in it reruns.
#[test]
fn lint_watch_follows_a_folder_deleted_and_made_again() {
    let dir = tree("lint-watch-recreated");
    let lc = dir.join("lua_configuration");
    let watching = Watching::start(&dir, &["lint", "--watch", "lua_configuration"]);
    assert_eq!(watching.next_summary(), "no problems in 2 files");
    std::fs::remove_dir_all(&lc).unwrap();
    watching.summaries_until(|s| s.starts_with("kruise-lua: error:"));
    copy_tree(&fixtures().join("tree/lua_configuration"), &lc);
    watching.summaries_until(|s| s == "no problems in 2 files");
    misspell(&dir);
    watching.summaries_until(|s| s == "1 problem (1 error) in 2 files, 1 fixable with --fix");
}
