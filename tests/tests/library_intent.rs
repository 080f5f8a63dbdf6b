//! The issue-12 regression fixtures (`tests/fixtures/intent`) against the library. Each fixture
//! is a copy of a script as it was before the fix, with a case whose `expected` is what that
//! faulty script produced: the copy must still reproduce it (the fixtures stay a faithful record
//! for the intent check), and the fixed library script, run on the same case, must not (it
//! routes differently, or raises a clear error for a combination the gateway cannot express).

mod common;

use std::fs;
use std::path::Path;

use common::{copy_tree, fixtures, run_in, scratch, workspace};

/// What the fixed library script does with a fixture's case.
enum Fixed {
    /// Another result than the faulty one.
    Differs,
    /// A script error whose message contains this text.
    Errors(&'static str),
    /// The case passes: the defect only showed in production mode (`--mode production`), where
    /// the faulty copy fails it and the fixed script passes it.
    PassesInProduction,
}

struct Fixture {
    name: &'static str,
    /// The script inside the fixture folder, and the library script that replaced it.
    script: &'static str,
    library: &'static str,
    fixed: Fixed,
}

const ISTIO: &str = "networking.istio.io/VirtualService/trafficRouting.lua";
const KUMA: &str = "kuma.io/MeshHTTPRoute/trafficRouting.lua";
const TRAEFIK: &str = "traefik.io/IngressRoute/trafficRouting.lua";

const FIXTURES: &[Fixture] = &[
    Fixture {
        name: "istio-small-weights",
        script: "trafficRouting.lua",
        library: ISTIO,
        fixed: Fixed::Differs,
    },
    Fixture {
        name: "kuma-default-weights",
        script: "trafficRouting.lua",
        library: KUMA,
        fixed: Fixed::Differs,
    },
    Fixture {
        name: "traefik-ingressroute-default-weights",
        script: "trafficRouting.lua",
        library: TRAEFIK,
        fixed: Fixed::Differs,
    },
    Fixture {
        name: "traefikservice-small-weights",
        script: "trafficRouting.lua",
        library: "traefik.io/TraefikService/trafficRouting.lua",
        fixed: Fixed::Differs,
    },
    Fixture {
        name: "istio-path-outside-route",
        script: "trafficRouting.lua",
        library: ISTIO,
        fixed: Fixed::Differs,
    },
    Fixture {
        name: "gloo-path-outside-route",
        script: "trafficRouting.lua",
        library: "gateway.solo.io/VirtualService/trafficRouting.lua",
        fixed: Fixed::Differs,
    },
    Fixture {
        name: "traefik-default-priority",
        script: "trafficRouting.lua",
        library: TRAEFIK,
        fixed: Fixed::Differs,
    },
    Fixture {
        name: "traefik-syntax-v2",
        script: "trafficRouting.lua",
        library: TRAEFIK,
        fixed: Fixed::Differs,
    },
    Fixture {
        name: "kuma-trailing-slash",
        script: "trafficRouting.lua",
        library: KUMA,
        fixed: Fixed::Differs,
    },
    Fixture {
        name: "kuma-regex-order",
        script: "trafficRouting.lua",
        library: KUMA,
        fixed: Fixed::Errors("a regular expression cannot be intersected with another path"),
    },
    Fixture {
        name: "apisix-2x-duplicate-backend",
        script: "trafficRouting.lua",
        library: "apisix.apache.org/ApisixRoute/trafficRouting.lua",
        fixed: Fixed::Errors("duplicate backend services"),
    },
    Fixture {
        name: "nginx-header-and-query",
        script: "trafficrouting_ingress/nginx.lua",
        library: "trafficrouting_ingress/nginx.lua",
        fixed: Fixed::Errors("ingress-nginx canaries cannot test query parameters"),
    },
    Fixture {
        name: "higress-header-lines-pile-up",
        script: "trafficrouting_ingress/higress.lua",
        library: "trafficrouting_ingress/higress.lua",
        fixed: Fixed::PassesInProduction,
    },
    Fixture {
        name: "mse-header-lines-pile-up",
        script: "trafficrouting_ingress/mse.lua",
        library: "trafficrouting_ingress/mse.lua",
        fixed: Fixed::PassesInProduction,
    },
    Fixture {
        name: "nginx-anded-query",
        script: "trafficrouting_ingress/nginx.lua",
        library: "trafficrouting_ingress/nginx.lua",
        fixed: Fixed::Errors("ingress-nginx canaries cannot test query parameters"),
    },
    Fixture {
        name: "higress-weight-beside-header",
        script: "trafficrouting_ingress/higress.lua",
        library: "trafficrouting_ingress/higress.lua",
        fixed: Fixed::Errors("Higress ignores canary-weight once a header match is set"),
    },
    Fixture {
        name: "higress-weight-with-header",
        script: "trafficrouting_ingress/higress.lua",
        library: "trafficrouting_ingress/higress.lua",
        fixed: Fixed::Errors("Higress ignores canary-weight once a header match is set"),
    },
    Fixture {
        name: "higress-exact-value-read-as-regex",
        script: "trafficrouting_ingress/higress.lua",
        library: "trafficrouting_ingress/higress.lua",
        fixed: Fixed::Differs,
    },
    Fixture {
        name: "mse-exact-value-read-as-regex",
        script: "trafficrouting_ingress/mse.lua",
        library: "trafficrouting_ingress/mse.lua",
        fixed: Fixed::Differs,
    },
];

fn check(dir: &Path, mode: &str) -> common::Run {
    run_in(dir, &["check", "--mode", mode, "--format", "json", "."])
}

/// A faulty copy against its recorded output, without the intent check (which flags every one
/// of them: `tests/intent.rs`).
fn check_recorded(dir: &Path, mode: &str) -> common::Run {
    run_in(
        dir,
        &[
            "check",
            "--no-intent",
            "--mode",
            mode,
            "--format",
            "json",
            ".",
        ],
    )
}

#[test]
fn every_fixture_folder_is_listed() {
    let mut names: Vec<String> = fs::read_dir(fixtures().join("intent"))
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| e.file_name().into_string().unwrap())
        .collect();
    names.sort();
    let mut listed: Vec<&str> = FIXTURES.iter().map(|f| f.name).collect();
    listed.sort();
    assert_eq!(names, listed);
}

#[test]
fn faulty_copies_reproduce_and_library_scripts_fix_each_defect() {
    for fixture in FIXTURES {
        let original = fixtures().join("intent").join(fixture.name);
        let mode = match fixture.fixed {
            Fixed::PassesInProduction => "production",
            _ => "harness",
        };
        let faulty = check_recorded(&original, "harness");
        assert_eq!(
            faulty.code, 0,
            "{}: the faulty copy no longer passes its case\n{faulty:?}",
            fixture.name
        );

        let dir = scratch(&format!("intent-{}", fixture.name));
        copy_tree(&original, &dir);
        fs::copy(
            workspace().join("lua_configuration").join(fixture.library),
            dir.join(fixture.script),
        )
        .unwrap();
        let fixed = check(&dir, mode);
        match fixture.fixed {
            Fixed::Differs => {
                assert_eq!(
                    fixed.code, 1,
                    "{}: the library script still misroutes\n{fixed:?}",
                    fixture.name
                );
                assert!(
                    fixed.stdout.contains(r#""status":"fail""#),
                    "{}\n{fixed:?}",
                    fixture.name
                );
                assert!(
                    !fixed.stdout.contains(r#""status":"error""#),
                    "{}\n{fixed:?}",
                    fixture.name
                );
            }
            Fixed::Errors(message) => {
                assert_eq!(fixed.code, 1, "{}\n{fixed:?}", fixture.name);
                assert!(
                    fixed.stdout.contains(r#""status":"error""#),
                    "{}\n{fixed:?}",
                    fixture.name
                );
                assert!(
                    fixed.stdout.contains(message),
                    "{}: no {message:?}\n{fixed:?}",
                    fixture.name
                );
            }
            Fixed::PassesInProduction => {
                let faulty = check_recorded(&original, "production");
                assert_eq!(
                    faulty.code, 1,
                    "{}: the faulty copy passes production\n{faulty:?}",
                    fixture.name
                );
                assert_eq!(
                    fixed.code, 0,
                    "{}: the library script piles lines up\n{fixed:?}",
                    fixture.name
                );
            }
        }
        let _ = fs::remove_dir_all(&dir);
    }
}

/// A case the library used to serve by silently dropping part of the step (the intent check
/// flagged it as misrouted): the library script must now refuse it with a clear error. Each
/// folder of `tests/fixtures/library_errors` holds the case where the library keeps its own
/// (`testdata/case.yaml`, or `trafficrouting_ingress/testdata/<class>/case.yaml`); the library
/// script is copied in beside it.
struct Refused {
    name: &'static str,
    /// Where the script goes inside the folder, and the library script (under lua_configuration).
    script: &'static str,
    library: &'static str,
    message: &'static str,
}

const SMI: &str = "split.smi-spec.io/TrafficSplit/trafficRouting.lua";
const TRAEFIK_SERVICE: &str = "traefik.io/TraefikService/trafficRouting.lua";
const CANARY_PODS_BY_LABEL: &str = "cannot select canary pods by label";

const REFUSED: &[Refused] = &[
    Refused {
        name: "emissary-traffic-routing-cr",
        script: "trafficRouting.lua",
        library: "getambassador.io/Mapping/trafficRouting.lua",
        message: CANARY_PODS_BY_LABEL,
    },
    Refused {
        name: "contour-traffic-routing-cr",
        script: "trafficRouting.lua",
        library: "projectcontour.io/HTTPProxy/trafficRouting.lua",
        message: CANARY_PODS_BY_LABEL,
    },
    Refused {
        name: "smi-traffic-routing-cr",
        script: "trafficRouting.lua",
        library: SMI,
        message: CANARY_PODS_BY_LABEL,
    },
    Refused {
        name: "smi-header-matches",
        script: "trafficRouting.lua",
        library: SMI,
        message: "a TrafficSplit cannot match requests",
    },
    Refused {
        name: "traefik-ingressroute-traffic-routing-cr",
        script: "trafficRouting.lua",
        library: TRAEFIK,
        message: CANARY_PODS_BY_LABEL,
    },
    Refused {
        name: "traefik-ingressroute-header-changes",
        script: "trafficRouting.lua",
        library: TRAEFIK,
        message: "requestHeaderModifier is not supported",
    },
    Refused {
        name: "traefikservice-traffic-routing-cr",
        script: "trafficRouting.lua",
        library: TRAEFIK_SERVICE,
        message: CANARY_PODS_BY_LABEL,
    },
    Refused {
        name: "traefikservice-header-matches",
        script: "trafficRouting.lua",
        library: TRAEFIK_SERVICE,
        message: "a TraefikService cannot match requests",
    },
    Refused {
        name: "traefikservice-mirroring",
        script: "trafficRouting.lua",
        library: TRAEFIK_SERVICE,
        message: "a mirroring TraefikService copies requests and cannot split them",
    },
    Refused {
        name: "apisix-weight-header-changes",
        script: "trafficRouting.lua",
        library: "apisix.apache.org/ApisixRoute/trafficRouting.lua",
        message: "cannot change request headers of a weighted canary share",
    },
    Refused {
        name: "kuma-weight-header-changes",
        script: "trafficRouting.lua",
        library: KUMA,
        message: "cannot change request headers of a weighted canary share",
    },
    Refused {
        name: "kuma-fallback-overtakes-another-service",
        script: "trafficRouting.lua",
        library: KUMA,
        message: "before the rule with path (none) of another service",
    },
    Refused {
        name: "kuma-header-overtakes-query-rule",
        script: "trafficRouting.lua",
        library: KUMA,
        message: "would overtake another rule's match (path /api, 1 query parameter(s))",
    },
    Refused {
        name: "mse-weight-beside-header",
        script: "trafficrouting_ingress/mse.lua",
        library: "trafficrouting_ingress/mse.lua",
        message: "MSE ignores canary-weight once a header or query match is set",
    },
];

#[test]
fn every_refused_folder_is_listed() {
    let mut names: Vec<String> = fs::read_dir(fixtures().join("library_errors"))
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| e.file_name().into_string().unwrap())
        .collect();
    names.sort();
    let mut listed: Vec<&str> = REFUSED.iter().map(|f| f.name).collect();
    listed.sort();
    assert_eq!(names, listed);
}

#[test]
fn library_scripts_refuse_what_their_gateway_cannot_express() {
    for refused in REFUSED {
        let dir = scratch(&format!("refused-{}", refused.name));
        copy_tree(&fixtures().join("library_errors").join(refused.name), &dir);
        fs::copy(
            workspace().join("lua_configuration").join(refused.library),
            dir.join(refused.script),
        )
        .unwrap();
        for mode in ["harness", "production"] {
            let run = check(&dir, mode);
            assert_eq!(run.code, 1, "{} ({mode})\n{run:?}", refused.name);
            assert!(
                run.stdout.contains(r#""status":"error""#),
                "{} ({mode}): no error\n{run:?}",
                refused.name
            );
            assert!(
                run.stdout.contains(refused.message),
                "{} ({mode}): no {:?}\n{run:?}",
                refused.name,
                refused.message
            );
        }
        let _ = fs::remove_dir_all(&dir);
    }
}
