//! End-to-end tests of the intent check (`check --intent`, the default): the regression
//! fixtures in `tests/fixtures/intent` keep copies of library scripts with the Istio, Gloo and
//! ingress-class defects of issue 12; their cases pass (they encode what the faulty script
//! does), and the intent check must flag each one, in every report format.

mod common;

use common::{json_lines, run};

/// (fixture, a violation the intent check must report for its step 1)
const DEFECTS: &[(&str, &str)] = &[
    (
        "intent/istio-small-weights/trafficRouting.lua",
        "GET / → legacy 50 %, web 50 % (by spec.http[0]), expected legacy 50 %, web 25 %, web-canary 25 % (written at intent/istio-small-weights/trafficRouting.lua:205)",
    ),
    (
        "intent/istio-path-outside-route/trafficRouting.lua",
        "GET /beta → web-canary 100 % (by spec.http[0]), expected frontend 100 % (written at intent/istio-path-outside-route/trafficRouting.lua:183)",
    ),
    (
        "intent/gloo-path-outside-route/trafficRouting.lua",
        "GET /beta → web-canary:80 100 % (by spec.virtualHost.routes[0]), expected frontend:80 100 % (written at intent/gloo-path-outside-route/trafficRouting.lua:188)",
    ),
];

/// Each fixture's one step gets its expected result but misroutes (so it is not counted as
/// passed), with `violation` in the report.
fn assert_each_flagged(defects: &[(&str, &str)]) {
    for (fixture, violation) in defects {
        assert_flagged(fixture, violation, run(&["check", fixture]));
    }
}

/// `result`, the check of `fixture`'s one step, passes its expectation but misroutes, with
/// `violation` in the report.
fn assert_flagged(fixture: &str, violation: &str, result: common::Run) {
    assert_eq!(result.code, 1, "{fixture}: {result:?}");
    assert!(
        result.stdout.contains(violation),
        "{fixture}: {}",
        result.stdout
    );
    assert!(
        result
            .lines()
            .last()
            .unwrap()
            .starts_with("0 passed, 0 failed, 0 errors, 1 misrouted"),
        "{fixture}: {result:?}"
    );
}

#[test]
fn each_istio_and_gloo_defect_is_flagged() {
    assert_each_flagged(DEFECTS);
}

#[test]
fn no_intent_skips_the_check() {
    for (fixture, _) in DEFECTS {
        let result = run(&["check", "--no-intent", fixture]);
        assert_eq!(result.code, 0, "{fixture}: {result:?}");
        assert!(!result.stdout.contains("misrouted"), "{result:?}");
        // The last of --intent/--no-intent wins.
        let result = run(&["check", "--no-intent", "--intent", fixture]);
        assert_eq!(result.code, 1, "{fixture}: {result:?}");
    }
}

#[test]
fn every_format_reports_the_violation() {
    let (fixture, violation) = DEFECTS[1];
    let json = run(&["check", "--format", "json", fixture]);
    assert_eq!(json.code, 1, "{json:?}");
    let lines = json_lines(&json.stdout);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["status"], "misrouted");
    let listed: Vec<&str> = lines[0]["misrouted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    // json keeps the violation's text as the engine wrote it; the line is a field of its own.
    let (text, _) = violation.split_once(" (written at ").unwrap();
    assert!(listed.contains(&text), "{listed:?}");
    let at = &lines[0]["misrouted_written_at"];
    assert_eq!(at.as_array().unwrap().len(), listed.len(), "{at}");
    assert_eq!(
        at[listed.iter().position(|v| *v == text).unwrap()],
        serde_json::json!({
            "file": "intent/istio-path-outside-route/trafficRouting.lua",
            "line": 183,
            "script_line": 183,
        })
    );
    let sarif = run(&["check", "--format", "sarif", fixture]);
    let log: serde_json::Value = serde_json::from_str(&sarif.stdout).unwrap();
    let result = log["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["ruleId"] == "check/misrouted")
        .expect("a misrouted result");
    let related = &result["relatedLocations"][0]["physicalLocation"];
    assert_eq!(
        related["artifactLocation"]["uri"],
        "intent/istio-path-outside-route/trafficRouting.lua"
    );
    assert_eq!(related["region"]["startLine"], 183);
    for format in ["junit", "github", "sarif"] {
        let result = run(&["check", "--format", format, fixture]);
        assert!(
            result.stdout.contains("trafficRouting.lua:183"),
            "{format}: {}",
            result.stdout
        );
    }
    for format in ["junit", "github", "sarif"] {
        let result = run(&["check", "--format", format, fixture]);
        assert_eq!(result.code, 1, "{format}: {result:?}");
        assert!(
            result.stdout.contains("misrouted") && result.stdout.contains("/beta"),
            "{format}: {}",
            result.stdout
        );
    }
    // JUnit counts the misrouted step once, as a failure (not a pass beside the failure).
    let junit = run(&["check", "--format", "junit", fixture]).stdout;
    assert!(
        junit.contains(r#"<testsuites name="kruise-lua" tests="1" failures="1" errors="0""#),
        "{junit}"
    );
    let github = run(&["check", "--format", "github", fixture]);
    assert!(
        github.stdout.contains(
            "::error file=intent/istio-path-outside-route/testdata/case.yaml,line=24,title=testdata/case.yaml step 1%3A misrouted::misrouted (intent check"
        ),
        "{}",
        github.stdout
    );
}

/// (ingress fixture, a violation the intent check must report for its step 1): copies of the
/// ingress-class scripts with issue 12's defects, checked through the ingress routing models.
const INGRESS_DEFECTS: &[(&str, &str)] = &[
    (
        "intent/nginx-anded-query/trafficrouting_ingress/nginx.lua",
        "GET shop.example.com/ with x-canary: true → web-canary:80 100 % (by Ingress web spec.rules[0].http.paths[0] and the canary Ingress web-canary's annotations), expected web:80 100 % (written at intent/nginx-anded-query/trafficrouting_ingress/nginx.lua:57)",
    ),
    (
        "intent/higress-weight-beside-header/trafficrouting_ingress/higress.lua",
        "canary-weight is ignored: a header or cookie canary takes no weight",
    ),
];

#[test]
fn each_ingress_defect_is_flagged() {
    for (fixture, violation) in INGRESS_DEFECTS {
        let result = run(&["check", fixture]);
        assert_eq!(result.code, 1, "{fixture}: {result:?}");
        assert!(
            result.stdout.contains(violation),
            "{fixture}: {}",
            result.stdout
        );
        assert!(
            result
                .lines()
                .last()
                .unwrap()
                .starts_with("0 passed, 0 failed, 0 errors, 1 misrouted"),
            "{fixture}: {result:?}"
        );
    }
}

/// (fixture, a violation the intent check must report) for the rules of issue 20.
const ISSUE_20_DEFECTS: &[(&str, &str)] = &[
    (
        "intent-rules/istio-matched-keeps-other-backends/trafficRouting.lua",
        "GET / with x-canary: 1 → web-canary 90 %, web-legacy 10 % (by spec.http[0]), expected web-canary 100 % (written at intent-rules/istio-matched-keeps-other-backends/trafficRouting.lua:13)",
    ),
    (
        "intent-rules/istio-unreduced-stable-weight/trafficRouting.lua",
        "GET / → web 95.24 %, web-canary 4.76 % (by spec.http[0]), expected web 95 %, web-canary 5 % (written at intent-rules/istio-unreduced-stable-weight/trafficRouting.lua:4)",
    ),
    (
        "intent-rules/apisix-equal-priority/trafficRouting.lua",
        "rules 0 and 1 have the same uri /*, the same priority 0 and both match GET / with x-canary: 1: which one serves is undefined",
    ),
    (
        "intent-rules/nginx-weight-total-below-100/trafficrouting_ingress/nginx.lua",
        "GET shop.example.com/ → web:80 98 %, web-canary:80 2 % (by Ingress web spec.rules[0].http.paths[0] and the canary Ingress web-canary's annotations), expected web:80 80 %, web-canary:80 20 % (written at intent-rules/nginx-weight-total-below-100/trafficrouting_ingress/nginx.lua:6)",
    ),
    (
        "intent-rules/smi-canary-beside-full-stable/trafficRouting.lua",
        "GET web-apex/ → web 83.33 %, web-canary 16.67 % (by spec.backends), expected web 80 %, web-canary 20 % (written at intent-rules/smi-canary-beside-full-stable/trafficRouting.lua:13)",
    ),
    (
        "intent-rules/emissary-query-dropped/trafficRouting.lua",
        "GET /shop/ with x-canary: true → web-canary.shop:8080 100 % (by Mapping web-canary), expected web.shop:8080 100 %",
    ),
    (
        "intent-rules/aliyun-alb-canary-ordered-after-stable/trafficrouting_ingress/aliyun-alb.lua",
        "GET shop.example.com/ → web:80 100 % (by Ingress web spec.rules[0].http.paths[0]), expected web:80 80 %, web-canary:80 20 % (written at intent-rules/aliyun-alb-canary-ordered-after-stable/trafficrouting_ingress/aliyun-alb.lua:8)",
    ),
    (
        "intent/higress-exact-value-read-as-regex/trafficrouting_ingress/higress.lua",
        "GET shop.example.com/ with x-user: alicexsmith → web-canary:80 100 % (by Ingress web spec.rules[0].http.paths[0] and the canary Ingress web-canary's annotations), expected web:80 100 % (written at intent/higress-exact-value-read-as-regex/trafficrouting_ingress/higress.lua:88)",
    ),
    (
        "intent/mse-exact-value-read-as-regex/trafficrouting_ingress/mse.lua",
        "GET shop.example.com/ with x-user: alicexsmith → web-canary:80 100 % (by Ingress web spec.rules[0].http.paths[0] and the canary Ingress web-canary's annotations), expected web:80 100 % (written at intent/mse-exact-value-read-as-regex/trafficrouting_ingress/mse.lua:92)",
    ),
];

#[test]
fn each_issue_20_defect_is_flagged() {
    assert_each_flagged(ISSUE_20_DEFECTS);
}

/// A TrafficSplit whose root (`spec.service`) the step moves: the original root's clients are
/// no longer split, they reach the root service itself (SMI probes address the root).
#[test]
fn a_moved_smi_root_is_flagged() {
    assert_each_flagged(&[(
        "intent-rules/smi-root-moved-to-canary/trafficRouting.lua",
        "GET web-apex/ → web-apex 100 % (by spec.service), expected web 80 %, web-canary 20 % (written at intent-rules/smi-root-moved-to-canary/trafficRouting.lua:5)",
    )]);
}

/// (fixture, the library script it runs, a violation the intent check must report): limits of
/// the library's own scripts, so the fixture holds only the case and the script is the
/// library's, put beside it at test time (a copy would drift from what it documents).
const LIBRARY_DEFECTS: &[(&str, &str, &str)] = &[
    (
        "intent-rules/contour-header-route-overtaken",
        "projectcontour.io/HTTPProxy/trafficRouting.lua",
        "GET shop.example.com/ with x-canary: true, x-tester: yes → web-canary:8080 100 % (by spec.routes[1]), expected web-preview:8080 100 %",
    ),
    (
        "intent-rules/istio-other-namespace",
        "networking.istio.io/VirtualService/trafficRouting.lua",
        "GET /pay → web-canary.payments.svc.cluster.local 20 %, web.payments.svc.cluster.local 80 % (by spec.http[0]), expected web.payments.svc.cluster.local 100 %",
    ),
    (
        "intent-rules/aws-alb-canary-shadows-other-paths",
        "trafficrouting_ingress/aws-alb.lua",
        "GET shop.example.com/static → web:http 80 %, web-canary:http 20 % (by Ingress web-canary spec.rules[0].http.paths[0]), expected static:80 100 %",
    ),
];

#[test]
fn each_library_script_limit_is_flagged() {
    for (fixture, script, violation) in LIBRARY_DEFECTS {
        let dir = common::scratch(&fixture.replace('/', "-"));
        common::copy_tree(&common::fixtures().join(fixture), &dir);
        // The script sits in the fixture as in a tree: `trafficRouting.lua` beside `testdata/`
        // for a custom provider, `trafficrouting_ingress/<class>.lua` for an ingress class.
        let placed = match script.strip_prefix("trafficrouting_ingress/") {
            Some(_) => dir.join(script),
            None => dir.join("trafficRouting.lua"),
        };
        let library = common::workspace().join("lua_configuration").join(script);
        std::fs::copy(library, &placed).unwrap();
        let result = common::run_in(&dir, &["check", placed.to_str().unwrap()]);
        assert_flagged(fixture, violation, result);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// (fixture, the violation that the routes after a condition the model did not evaluate
/// show, the partly-checked note or `None` when the condition is now modelled): the QA repros
/// where such a route took every probe and a 50/50 split of a 5 % step passed in silence.
const UNEVALUATED: &[(&str, &str, Option<&str>)] = &[
    (
        "intent-rules/istio-port-route-not-evaluated/trafficRouting.lua",
        "GET / → web 50 %, web-canary 50 % (by spec.http[1]), expected web 95 %, web-canary 5 %",
        Some(
            "partly checked: spec.http[0].match[0].port is not evaluated (probes are taken as not meeting it)",
        ),
    ),
    (
        "intent-rules/apisix-remote-addrs-not-evaluated/trafficRouting.lua",
        "GET shop.example.com/ → web:8080 50 %, web-canary:8080 50 % (by spec.http[1]), expected web:8080 95 %, web-canary:8080 5 %",
        Some(
            "partly checked: spec.http[0].match.remoteAddrs is not evaluated (probes are taken as not meeting it)",
        ),
    ),
    (
        "intent-rules/gloo-methods-ignored/trafficRouting.lua",
        "GET / → default-web-8080 50 %, default-web-canary-8080 50 % (by spec.virtualHost.routes[1]), expected default-web-8080 95 %, default-web-canary-8080 5 %",
        None,
    ),
];

/// A condition the model does not evaluate no longer hides the routes after it: they are
/// probed (the split is flagged), and the step says what was not evaluated, in every format.
#[test]
fn a_condition_the_model_does_not_evaluate_is_passed_over_and_noted() {
    for (fixture, violation, note) in UNEVALUATED {
        let result = run(&["check", fixture]);
        match note {
            Some(note) => assert!(
                result.stdout.contains(&format!(
                    "intent check partly done: {}",
                    note.strip_prefix("partly checked: ").unwrap()
                )),
                "{fixture}: {}",
                result.stdout
            ),
            None => assert!(
                !result.stdout.contains("intent check not done")
                    && !result.stdout.contains("intent check partly done"),
                "{result:?}"
            ),
        }
        assert_flagged(fixture, violation, result);
    }
    let (fixture, _, note) = UNEVALUATED[0];
    let note = note.unwrap();
    let json = run(&["check", "--format", "json", fixture]);
    let lines = json_lines(&json.stdout);
    assert_eq!(lines[0]["intent_not_checked"], note, "{lines:?}");
    for (format, mark) in [
        ("junit", "note: intent check partly done"),
        ("github", "::notice file="),
        ("sarif", "intent check partly done"),
    ] {
        let result = run(&["check", "--format", format, fixture]);
        assert_eq!(result.code, 1, "{format}: {result:?}");
        let note = note.strip_prefix("partly checked: ").unwrap();
        assert!(
            result.stdout.contains(mark) && result.stdout.contains(note),
            "{format}: {}",
            result.stdout
        );
    }
}

/// A Traefik rule past the model's bounds (nested deeper than it evaluates) is neither
/// Traefik's rejection nor skipped in silence: the step, whose 50/50 split no probe can judge,
/// passes with a partly-checked note.
#[test]
fn a_rule_past_the_models_bounds_is_noted_not_rejected() {
    let fixture = "intent-rules/traefik-rule-past-model-bounds/trafficRouting.lua";
    let result = run(&["check", fixture]);
    assert_eq!(result.code, 0, "{result:?}");
    assert!(!result.stdout.contains("the gateway rejects"), "{result:?}");
    assert!(
        result.stdout.contains(
            "intent check partly done: spec.routes[0].match is not evaluated: the \
             rule nests parentheses or `!` more than 64 deep, deeper than the model evaluates, so \
             where requests go is not known and no probe is judged"
        ),
        "{}",
        result.stdout
    );
}

/// A step the intent check cannot verify (no routing model for the resource) says so in every
/// format; a step that asks nothing says nothing.
#[test]
fn a_step_not_checked_says_why_in_every_format() {
    let fixture = "intent-not-checked";
    let why = "the engine has no routing model for Route (example.com)";
    let human = run(&["check", fixture]);
    assert_eq!(human.code, 0, "{human:?}");
    assert!(
        human
            .stdout
            .contains(&format!("case.yaml:12: intent check not done: {why}")),
        "{}",
        human.stdout
    );
    let json = run(&["check", "--format", "json", fixture]);
    let lines = json_lines(&json.stdout);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0]["status"], "pass");
    assert_eq!(lines[0]["intent_not_checked"], why);
    assert!(lines[1]["intent_not_checked"].is_null(), "{lines:?}");
    for (format, mark) in [
        ("junit", "note: intent check not done"),
        ("github", "::notice file="),
        ("sarif", "check/intent-not-checked"),
    ] {
        let result = run(&["check", "--format", format, fixture]);
        assert_eq!(result.code, 0, "{format}: {result:?}");
        assert!(
            result.stdout.contains(mark) && result.stdout.contains(why),
            "{format}: {}",
            result.stdout
        );
    }
}

/// The library's steps the intent check cannot verify are exactly the ones
/// docs/ROUTING_MODELS.md lists as undecidable ("What stays unchecked in the library"): objects
/// that do not route alone (DestinationRule subsets, ApisixUpstream), Emissary cases without
/// the canary Mapping, and a header modifier ingress-nginx cannot apply. The ingress-class cases
/// whose `original` has no rules are checked (issue 20).
#[test]
fn the_librarys_unchecked_steps_are_the_documented_ones() {
    let library = common::workspace().join("lua_configuration");
    let result = common::run_in(
        &common::workspace(),
        &["check", "--format", "json", library.to_str().unwrap()],
    );
    assert_eq!(result.code, 0, "{result:?}");
    let mut reasons: std::collections::BTreeMap<String, usize> = Default::default();
    for line in json_lines(&result.stdout) {
        if let Some(why) = line["intent_not_checked"].as_str() {
            *reasons.entry(why.to_owned()).or_default() += 1;
        }
    }
    let expected = [
        (
            "partly checked: requestHeaderModifier is not checked: ingress-nginx canary annotations (controller v1.x) cannot change request headers, so canary-bound requests go without it",
            1,
        ),
        (
            "the Mapping routes to the stable service web; Emissary splits traffic between Mappings, so the check needs the canary Mapping the script edits",
            2,
        ),
        (
            "the engine has no routing model for ApisixUpstream (apisix.apache.org)",
            7,
        ),
        (
            "the engine has no routing model for DestinationRule (networking.istio.io)",
            9,
        ),
    ];
    let expected: std::collections::BTreeMap<String, usize> = expected
        .iter()
        .map(|(why, n)| (why.to_string(), *n))
        .collect();
    assert_eq!(reasons, expected);
}

/// Every model names the route that took a misrouted probe (issue 20: not only Istio). The
/// defect tables above show Istio, Gloo, Contour, SMI, Emissary and the ingress classes.
#[test]
fn every_model_names_the_route_that_took_the_probe() {
    for (fixture, via) in [
        (
            "intent/kuma-default-weights/trafficRouting.lua",
            "(by spec.to[0].rules[0].matches[0])",
        ),
        (
            "intent/traefik-default-priority/trafficRouting.lua",
            "(by spec.routes[1])",
        ),
        (
            "intent/traefikservice-small-weights/trafficRouting.lua",
            "(by spec.weighted)",
        ),
    ] {
        let result = run(&["check", fixture]);
        assert_eq!(result.code, 1, "{fixture}: {result:?}");
        assert!(result.stdout.contains(via), "{fixture}: {}", result.stdout);
    }
}

/// A ConfigMap script's misrouted step names the manifest's line of the script line that wrote
/// the route (every format maps it the same way; json also gives the script's own line).
#[test]
fn a_configmap_scripts_violation_names_the_manifests_line() {
    let dir = common::scratch("intent-configmap");
    let fixture = common::fixtures().join("intent-rules/istio-matched-keeps-other-backends");
    let script = std::fs::read_to_string(fixture.join("trafficRouting.lua")).unwrap();
    let mut manifest = String::from(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kruise-rollout-configuration\n  namespace: kruise-rollout\ndata:\n  lua.traffic.routing.VirtualService.networking.istio.io: |\n",
    );
    for line in script.lines() {
        manifest.push_str(&format!("    {line}\n"));
    }
    std::fs::write(dir.join("config.yaml"), manifest).unwrap();
    common::copy_tree(
        &fixture.join("testdata"),
        &dir.join("lua_configuration/networking.istio.io/VirtualService/testdata"),
    );
    // Script line 13 (`table.insert(spec.http, 1, {match = …, route = route})`) is manifest line
    // 20: the script starts on line 8.
    let human = common::run_in(&dir, &["check", "lua_configuration", "config.yaml"]);
    assert_eq!(human.code, 1, "{human:?}");
    assert!(
        human
            .stdout
            .contains("expected web-canary 100 % (written at config.yaml:20)"),
        "{}",
        human.stdout
    );
    let json = common::run_in(
        &dir,
        &[
            "check",
            "--format",
            "json",
            "lua_configuration",
            "config.yaml",
        ],
    );
    let lines = json_lines(&json.stdout);
    let misrouted = lines
        .iter()
        .find(|line| line["status"] == "misrouted")
        .expect("a misrouted step");
    assert_eq!(
        misrouted["misrouted_written_at"][0],
        serde_json::json!({"file": "config.yaml", "line": 20, "script_line": 13})
    );
}

/// A violation names each backend one way on both sides (issue 20: `web-canary:8080` and
/// `web-canary` read as two backends): across every intent fixture (all the gateway models),
/// no service appears in one violation with two different port or subset suffixes.
#[test]
fn every_violation_names_a_backend_one_way() {
    let mut checked = 0;
    for dir in ["intent", "intent-rules"] {
        let result = run(&["check", "--format", "json", dir]);
        for line in json_lines(&result.stdout) {
            for violation in line["misrouted"].as_array().into_iter().flatten() {
                let violation = violation.as_str().unwrap();
                checked += 1;
                // Backends are written `NAME[/SUBSET][:PORT] SHARE %`.
                let words: Vec<&str> = violation.split([' ', ',']).collect();
                let mut names: std::collections::BTreeMap<&str, std::collections::BTreeSet<&str>> =
                    Default::default();
                for pair in words.windows(3) {
                    if pair[2] == "%" && pair[1].parse::<f64>().is_ok() {
                        let backend = pair[0];
                        let service = backend.split([':', '/']).next().unwrap();
                        names.entry(service).or_default().insert(backend);
                    }
                }
                for (service, forms) in names {
                    assert_eq!(
                        forms.len(),
                        1,
                        "{service} is named {forms:?} in `{violation}`"
                    );
                }
            }
        }
    }
    assert!(checked > 20, "only {checked} violations");
}
