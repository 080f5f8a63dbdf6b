//! The intent check on hostile steps (issue 20), run through the built binary under `prlimit`
//! (CPU time bounded) and `timeout`: a step with eight `RegularExpression` headers of
//! `\p{L}{200}` took 23 s, and 200 such matches of five headers each ran past 120 s, because
//! every pattern was compiled again for every probe. Nothing here measures speed (the figures
//! are in docs/BENCHMARKS.md); the bounds only turn a blow-up back into a failure.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::{binary, scratch};

/// CPU seconds and wall-clock seconds for one run: generous for a debug build on a busy host,
/// far below what the per-probe compilation cost.
const CPU_SECONDS: &str = "--cpu=30";
const WALL_SECONDS: &str = "240";

/// A script that puts one route per step match (its headers as Istio `regex`/`exact`) ahead of
/// the VirtualService's routes, sending it to the canary: what the step asks.
const SCRIPT: &str = r#"local spec = obj.data.spec
local routes = {}
for _, m in ipairs(obj.matches or {}) do
  local headers = {}
  for _, h in ipairs(m.headers or {}) do
    if h.type == "RegularExpression" then headers[h.name] = {regex = h.value}
    else headers[h.name] = {exact = h.value} end
  end
  table.insert(routes, {match = {{headers = headers}}, route = {{destination = {host = obj.canaryService}}}})
end
for _, r in ipairs(spec.http) do table.insert(routes, r) end
spec.http = routes
return obj.data
"#;

/// A case with one step of `matches` matches, each of `headers` `\p{L}{200}` regex headers
/// (distinct names per match, so no two routes are alike).
fn case(matches: usize, headers: usize) -> String {
    let mut text = String::from(
        "rollout:\n  spec:\n    strategy:\n      canary:\n        trafficRoutings:\n        - service: web\n        steps:\n        - matches:\n",
    );
    for m in 0..matches {
        text.push_str("          - headers:\n");
        for h in 0..headers {
            text.push_str(&format!(
                "            - {{type: RegularExpression, name: x-m{m}-h{h}, value: \"\\\\p{{L}}{{200}}\"}}\n"
            ));
        }
    }
    text.push_str(
        "original:\n  apiVersion: networking.istio.io/v1\n  kind: VirtualService\n  metadata: {name: web}\n  spec:\n    hosts: [web]\n    http:\n    - route:\n      - destination: {host: web}\n",
    );
    text
}

fn bounded(dir: &Path, args: &[&str]) -> (i32, String) {
    let output = Command::new("timeout")
        .current_dir(dir)
        .args(["-k", "5", WALL_SECONDS, "prlimit", CPU_SECONDS, "--"])
        .arg(binary())
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("run timeout/prlimit");
    let code = output.status.code().unwrap_or(-1);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_ne!(code, 124, "hung (killed by timeout): {args:?}\n{stdout}");
    assert!(
        matches!(code, 0..=2),
        "crashed or killed (CPU bound?): {args:?}\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    (code, stdout)
}

/// Writes the script and the case (its `expected` from `kruise-lua run`) and checks it.
fn check_hostile(name: &str, matches: usize, headers: usize) {
    let dir = scratch(name);
    let folder = dir.join("lua/networking.istio.io/VirtualService");
    std::fs::create_dir_all(folder.join("testdata")).unwrap();
    std::fs::write(folder.join("trafficRouting.lua"), SCRIPT).unwrap();
    let case_path = folder.join("testdata/case.yaml");
    std::fs::write(&case_path, case(matches, headers)).unwrap();
    let (code, output) = bounded(
        &dir,
        &[
            "run",
            "--case",
            case_path.to_str().unwrap(),
            folder.join("trafficRouting.lua").to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{output}");
    let mut expected = String::from("expected:\n");
    let mut first = true;
    for line in output
        .lines()
        .filter(|l| !l.starts_with('#') && *l != "---")
    {
        expected.push_str(if first { "- " } else { "  " });
        first = false;
        expected.push_str(line);
        expected.push('\n');
    }
    let mut text = case(matches, headers);
    text.push_str(&expected);
    std::fs::write(&case_path, text).unwrap();
    let (code, report) = bounded(&dir, &["check", "lua"]);
    assert_eq!(code, 0, "{report}");
    assert!(report.contains("1 passed, 0 failed, 0 errors"), "{report}");
}

#[test]
fn eight_unicode_regex_headers_are_checked_within_bounds() {
    check_hostile("intent-hostile-eight", 1, 8);
}

#[test]
fn two_hundred_matches_of_five_regex_headers_are_checked_within_bounds() {
    check_hostile("intent-hostile-many", 200, 5);
}
