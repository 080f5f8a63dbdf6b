//! The bundled library checked against its bundled CRD schemas (`lua_configuration/crds/`):
//! every CRD file loads, each gateway kind of the library has exactly one schema, and every
//! custom script's case — its `original`, each `expected[i]` and each step's actual result, as
//! Kruise patches them onto the original — is valid, with no field the API server would drop.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use common::{read_case, workspace};
use kruise_lua_engine::runner::{Mode, RunOptions, Script, run_custom};
use kruise_lua_engine::schema::{SchemaSet, Validation, validate_object_as, validate_patched_as};
use kruise_lua_engine::testcase::TestCase;
use kruise_lua_engine::value::JsonValue;
use kruise_lua_engine::yaml::PathSeg;

fn library() -> PathBuf {
    workspace().join("lua_configuration")
}

fn crds_dir() -> PathBuf {
    library().join("crds")
}

/// Sorted entries of a folder.
fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    paths.sort();
    paths
}

/// The library's custom gateway kinds: `(group, Kind)` of every `<group>/<Kind>/trafficRouting.lua`.
fn library_kinds() -> Vec<(String, String)> {
    let mut kinds = Vec::new();
    for group_dir in entries(&library()) {
        if !group_dir.is_dir() {
            continue;
        }
        for kind_dir in entries(&group_dir) {
            if kind_dir.join("trafficRouting.lua").is_file() {
                let name = |p: &Path| p.file_name().unwrap().to_str().unwrap().to_owned();
                kinds.push((name(&group_dir), name(&kind_dir)));
            }
        }
    }
    kinds
}

fn bundled_schemas() -> SchemaSet {
    let mut set = SchemaSet::new();
    set.add_path(&crds_dir())
        .unwrap_or_else(|e| panic!("the bundled CRDs do not load: {e}"));
    set
}

/// The findings of a validation as `severity path: message (rule)` lines (empty when valid).
fn findings(validation: &Validation) -> Vec<String> {
    validation.findings.iter().map(|f| format!("{f}")).collect()
}

/// `original` of a case as the JSON object Kruise reads.
fn original_of(case: &TestCase, file: &Path) -> JsonValue {
    case.root
        .get("original")
        .unwrap_or_else(|| panic!("{}: no original", file.display()))
        .to_json()
}

fn api_version_of(object: &JsonValue) -> Option<&str> {
    match object {
        JsonValue::Object(fields) => match fields.get("apiVersion") {
            Some(JsonValue::String(s)) => Some(s),
            _ => None,
        },
        _ => None,
    }
}

#[test]
fn every_bundled_crd_file_loads_and_holds_one_crd_named_after_it() {
    let mut all = SchemaSet::new();
    for file in entries(&crds_dir()) {
        let name = file.file_name().unwrap().to_str().unwrap().to_owned();
        assert!(name.ends_with(".yaml"), "{name}: CRD files end in .yaml");
        let mut set = SchemaSet::new();
        let added = set
            .add_path(&file)
            .unwrap_or_else(|e| panic!("{name} does not load: {e}"));
        assert_eq!(added, 1, "{name} holds {added} CRDs, not one");
        let crd = &set.crds()[0];
        assert_eq!(
            name,
            format!("{}_{}.yaml", crd.group, crd.kind),
            "file names are <group>_<Kind>.yaml"
        );
        assert!(
            crd.versions.iter().all(|v| v.schema.is_some()),
            "{name}: every version has a schema"
        );
        assert!(
            all.find(&crd.group, &crd.kind).is_none(),
            "{name}: a second schema for {}/{}",
            crd.group,
            crd.kind
        );
        all.insert(crd.clone());
    }
}

#[test]
fn each_gateway_kind_of_the_library_has_exactly_one_bundled_schema() {
    let set = bundled_schemas();
    let kinds: BTreeSet<(String, String)> = library_kinds().into_iter().collect();
    assert!(kinds.len() >= 11, "library kinds found: {kinds:?}");
    let schemas: BTreeSet<(String, String)> = set
        .crds()
        .iter()
        .map(|c| (c.group.clone(), c.kind.clone()))
        .collect();
    assert_eq!(schemas, kinds, "bundled schemas vs library scripts");
    assert_eq!(set.crds().len(), kinds.len(), "one CRD per group and kind");
}

/// Validates one case of `group/kind`: original, expectations and the script's actual results.
fn check_case(
    set: &SchemaSet,
    group: &str,
    kind: &str,
    script: &Script,
    file: &Path,
    problems: &mut Vec<String>,
) {
    let case = read_case(file);
    let shown = file.strip_prefix(library()).unwrap().display().to_string();
    let original = original_of(&case, file);
    // A validation, or why there is nothing to validate.
    let mut report = |what: String, validation: Result<Validation, String>| {
        let validation = match validation {
            Ok(validation) => validation,
            Err(e) => return problems.push(format!("{shown}: {what}: {e}")),
        };
        let Some(choice) = &validation.schema else {
            problems.push(format!("{shown}: {what}: no schema chosen"));
            return;
        };
        // The version checked is the one the object names.
        let named = api_version_of(&original).and_then(|v| v.rsplit_once('/'));
        if let Some((_, version)) = named
            && choice.version != version
        {
            problems.push(format!(
                "{shown}: {what}: checked against {} not {version}",
                choice.version
            ));
        }
        for finding in findings(&validation) {
            problems.push(format!("{shown}: {what}: {finding}"));
        }
    };
    report(
        "original".to_owned(),
        Ok(validate_object_as(set, group, kind, &original)),
    );
    for (index, entry) in case.expected.iter().enumerate() {
        report(
            format!("expected[{index}]"),
            Ok(validate_patched_as(
                set,
                group,
                kind,
                &original,
                &entry.data,
            )),
        );
    }
    for (index, step) in case.steps.iter().enumerate() {
        let run = run_custom(script, &step.obj, &RunOptions::default());
        for mode in [Mode::Harness, Mode::Production] {
            let result = run.result(mode).as_ref().map_err(|e| e.to_string());
            report(
                format!("step {index} result ({mode:?})"),
                result.map(|data| validate_patched_as(set, group, kind, &original, data)),
            );
        }
    }
}

#[test]
fn every_case_of_the_library_is_valid_against_the_bundled_schemas() {
    let set = bundled_schemas();
    let mut problems = Vec::new();
    let mut cases = 0;
    for (group, kind) in library_kinds() {
        let dir = library().join(&group).join(&kind);
        let source = std::fs::read_to_string(dir.join("trafficRouting.lua")).unwrap();
        let script = Script::new(source);
        for file in entries(&dir.join("testdata")) {
            if file.extension().is_some_and(|e| e == "yaml") {
                check_case(&set, &group, &kind, &script, &file, &mut problems);
                cases += 1;
            }
        }
    }
    assert!(cases >= 50, "only {cases} cases found");
    assert!(
        problems.is_empty(),
        "{} schema problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// Every path below `value` whose last key is `key` and whose value is `wanted`.
fn paths_named(key: &str, value: &JsonValue, wanted: fn(&JsonValue) -> bool) -> Vec<Vec<PathSeg>> {
    fn walk(
        key: &str,
        value: &JsonValue,
        wanted: fn(&JsonValue) -> bool,
        path: &mut Vec<PathSeg>,
        out: &mut Vec<Vec<PathSeg>>,
    ) {
        match value {
            JsonValue::Object(fields) => {
                for (name, field) in fields {
                    path.push(PathSeg::Key(name.clone()));
                    if name == key && wanted(field) {
                        out.push(path.clone());
                    }
                    walk(key, field, wanted, path, out);
                    path.pop();
                }
            }
            JsonValue::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    path.push(PathSeg::Index(index));
                    walk(key, item, wanted, path, out);
                    path.pop();
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(key, value, wanted, &mut Vec::new(), &mut out);
    out
}

fn set_at(value: &mut JsonValue, path: &[PathSeg], new: JsonValue) {
    let Some((first, rest)) = path.split_first() else {
        *value = new;
        return;
    };
    let next = match (value, first) {
        (JsonValue::Object(fields), PathSeg::Key(key)) => fields.get_mut(key).unwrap(),
        (JsonValue::Array(items), PathSeg::Index(index)) => &mut items[*index],
        (other, seg) => panic!("no {seg:?} in {}", other.to_canonical_json()),
    };
    set_at(next, rest, new);
}

/// The bundled schemas have teeth: in every case's `original`, a fractional weight (a script
/// computing `w * 1/3`) is a `type` error at its path, and a field the gateway does not have is
/// a `pruned` warning, for every gateway kind.
#[test]
fn the_bundled_schemas_reject_fractional_weights_but_smis_and_report_unknown_fields() {
    let set = bundled_schemas();
    let mut weighted_kinds = BTreeSet::new();
    let mut problems = Vec::new();
    for (group, kind) in library_kinds() {
        for file in entries(&library().join(&group).join(&kind).join("testdata")) {
            let case = read_case(&file);
            let original = original_of(&case, &file);
            let shown = file.strip_prefix(library()).unwrap().display().to_string();

            let is_number = |v: &JsonValue| matches!(v, JsonValue::Int(_) | JsonValue::Float(_));
            for path in paths_named("weight", &original, is_number) {
                let mut broken = original.clone();
                set_at(&mut broken, &path, JsonValue::Float(33.5));
                let v = validate_object_as(&set, &group, &kind, &broken);
                let found = v.errors().any(|f| f.path == path && f.rule == "type");
                // smi-sdk-go's CRD (v0.5.0 crds/split.yaml) types `weight` as a number: the API
                // server accepts 33.5 there.
                if kind == "TrafficSplit" {
                    if found || v.errors().next().is_some() {
                        problems.push(format!(
                            "{shown}: SMI weight 33.5 refused: {:?}",
                            findings(&v)
                        ));
                    }
                } else if !found {
                    problems.push(format!(
                        "{shown}: weight 33.5 at {path:?} accepted: {:?}",
                        findings(&v)
                    ));
                }
                weighted_kinds.insert((group.clone(), kind.clone()));
            }

            let mut extra = original.clone();
            let spec = [PathSeg::Key("spec".to_owned())];
            let JsonValue::Object(mut fields) = original_spec(&original) else {
                panic!("{shown}: spec is not an object");
            };
            fields.insert("notAGatewayField".to_owned(), JsonValue::Bool(true));
            set_at(&mut extra, &spec, JsonValue::Object(fields));
            let v = validate_object_as(&set, &group, &kind, &extra);
            let expected = "warning spec.notAGatewayField: the API server would drop \
                            `spec.notAGatewayField`: the schema does not declare it (pruned)";
            if findings(&v) != [expected] {
                problems.push(format!("{shown}: unknown field: {:?}", findings(&v)));
            }
        }
    }
    // Every kind but the two subset-only ones (DestinationRule, ApisixUpstream) has weights.
    assert!(
        weighted_kinds.len() >= 9,
        "weights seen in {weighted_kinds:?}"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

fn original_spec(original: &JsonValue) -> JsonValue {
    match original {
        JsonValue::Object(fields) => fields.get("spec").cloned().unwrap_or(JsonValue::Null),
        _ => JsonValue::Null,
    }
}

/// The CEL rules and one-ofs of the bundled schemas are evaluated, not skipped: Istio's
/// `timeout` must be a duration of at least 1ms, and a string match has one of exact, prefix
/// or regex.
#[test]
fn the_bundled_istio_schema_checks_its_duration_rule_and_string_match_one_of() {
    let set = bundled_schemas();
    let file = library().join("networking.istio.io/VirtualService/testdata/header_matches.yaml");
    let original = original_of(&read_case(&file), &file);
    let timeouts = paths_named("timeout", &original, |v| matches!(v, JsonValue::String(_)));
    assert!(!timeouts.is_empty(), "the case has a route timeout");
    let timeout = &timeouts[0];
    let mut broken = original.clone();
    set_at(&mut broken, timeout, JsonValue::String("0s".to_owned()));
    let v = validate_object_as(&set, "networking.istio.io", "VirtualService", &broken);
    let cel: Vec<_> = v.errors().filter(|f| f.rule == "cel").collect();
    assert_eq!(cel.len(), 1, "{:?}", findings(&v));
    assert_eq!(&cel[0].path, timeout);
    assert!(
        cel[0]
            .message
            .contains("must be a valid duration greater than 1ms")
    );

    let mut uri = timeout.clone();
    uri.pop();
    uri.extend([
        PathSeg::Key("match".to_owned()),
        PathSeg::Index(0),
        PathSeg::Key("uri".to_owned()),
    ]);
    let mut two_matches = original.clone();
    set_at(
        &mut two_matches,
        &uri,
        JsonValue::Object(
            [
                ("exact".to_owned(), JsonValue::String("/a".to_owned())),
                ("prefix".to_owned(), JsonValue::String("/b".to_owned())),
            ]
            .into(),
        ),
    );
    let v = validate_object_as(&set, "networking.istio.io", "VirtualService", &two_matches);
    assert!(
        v.errors().any(|f| f.path == uri && f.rule == "oneOf"),
        "{:?}",
        findings(&v)
    );
}

/// Istio resources using the fields the bundled schemas model beyond the library's own (mirrors,
/// faults, CORS, direct responses, connection pools, outlier detection) are valid as written.
#[test]
fn the_bundled_istio_schemas_accept_the_other_modelled_fields() {
    let set = bundled_schemas();
    let parse = |text: &str| {
        kruise_lua_engine::yaml::parse_first_document(text)
            .unwrap()
            .unwrap()
            .to_json()
    };
    let virtual_service = parse(
        "apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: web}
spec:
  hosts: [web]
  http:
  - match:
    - uri: {prefix: /api}
      withoutHeaders:
        x-skip: {exact: '1'}
    fault:
      delay: {fixedDelay: 2s, percentage: {value: 0.5}}
      abort: {httpStatus: 503, percentage: {value: 1.5}}
    mirror: {host: web-shadow, port: {number: 80}}
    mirrorPercentage: {value: 10.0}
    corsPolicy:
      allowOrigins:
      - regex: https://.*\\.example\\.com
      allowMethods: [GET]
      maxAge: 24h
      allowCredentials: true
    route:
    - destination: {host: web}
  - directResponse:
      status: 404
      body: {string: not here}
",
    );
    let v = validate_object_as(
        &set,
        "networking.istio.io",
        "VirtualService",
        &virtual_service,
    );
    assert_eq!(findings(&v), Vec::<String>::new());

    let destination_rule = parse(
        "apiVersion: networking.istio.io/v1beta1
kind: DestinationRule
metadata: {name: web}
spec:
  host: web
  trafficPolicy:
    connectionPool:
      tcp: {maxConnections: 100, connectTimeout: 30ms}
      http: {http2MaxRequests: 1000, maxRequestsPerConnection: 10, h2UpgradePolicy: UPGRADE}
    outlierDetection:
      consecutive5xxErrors: 7
      interval: 5m
      baseEjectionTime: 15m
  subsets:
  - name: v1
    labels: {version: v1}
    trafficPolicy:
      loadBalancer: {simple: ROUND_ROBIN}
",
    );
    let v = validate_object_as(
        &set,
        "networking.istio.io",
        "DestinationRule",
        &destination_rule,
    );
    assert_eq!(findings(&v), Vec::<String>::new());
}

/// A realistic HTTPProxy (Contour's API reference, projectcontour.io/docs/main/config/api/)
/// using the Route and Service fields beside the ones the scripts write: none is pruned (the
/// compact CRD used to lack `retryPolicy` and its siblings, so `check` warned that the API server
/// would drop them from a correct resource). Values the reference refuses still are errors.
#[test]
fn the_bundled_contour_schema_keeps_every_route_and_service_field() {
    let set = bundled_schemas();
    let parse = |text: &str| {
        kruise_lua_engine::yaml::parse_first_document(text)
            .unwrap()
            .unwrap()
            .to_json()
    };
    let proxy = "apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: shop}
spec:
  virtualhost:
    fqdn: shop.example.com
    tls: {secretName: shop-tls, clientValidation: {caSecret: ca}}
    corsPolicy: {allowOrigin: ['*'], allowMethods: [GET]}
    rateLimitPolicy: {local: {requests: 100, unit: minute}}
    authorization: {extensionRef: {name: authz}}
    jwtProviders: [{name: main, remoteJWKS: {uri: 'https://auth.example.com/jwks'}}]
    ipAllowPolicy: [{source: Peer, cidr: 10.0.0.0/8}]
  routes:
  - conditions: [{prefix: /api}]
    services:
    - name: web
      port: 8080
      weight: 90
      protocol: h2c
      validation: {caSecret: ca, subjectName: web.shop, subjectNames: [web.shop]}
      cookieRewritePolicies: [{name: session, pathRewrite: {value: /}}]
      slowStartPolicy: {window: 5s, aggression: '1.0'}
    - {name: web-mirror, port: 8080, mirror: true}
    enableWebsockets: true
    permitInsecure: false
    authPolicy: {disabled: true, context: {tier: api}}
    timeoutPolicy: {response: 5s, idle: 1m, idleConnection: 1h}
    retryPolicy:
      count: 3
      perTryTimeout: 150ms
      retryOn: [5xx, gateway-error, retriable-status-codes]
      retriableStatusCodes: [503]
    healthCheckPolicy:
      path: /healthz
      intervalSeconds: 5
      timeoutSeconds: 2
      unhealthyThresholdCount: 3
      healthyThresholdCount: 5
      expectedStatuses: [{start: 200, end: 300}]
    loadBalancerPolicy:
      strategy: RequestHash
      requestHashPolicies: [{headerHashOptions: {headerName: x-user}}]
    pathRewritePolicy: {replacePrefix: [{prefix: /api, replacement: /}]}
    requestHeadersPolicy: {set: [{name: x-shop, value: '1'}], remove: [x-debug]}
    responseHeadersPolicy: {remove: [server]}
    cookieRewritePolicies: [{name: session, secure: true}]
    rateLimitPolicy: {global: {descriptors: [{entries: [{genericKey: {value: shop}}]}]}}
    internalRedirectPolicy: {maxInternalRedirects: 2}
    jwtVerificationPolicy: {require: main}
    ipDenyPolicy: [{source: Remote, cidr: 192.0.2.1}]
  - conditions: [{prefix: /old}]
    requestRedirectPolicy: {scheme: https, statusCode: 301}
  - conditions: [{prefix: /gone}]
    directResponsePolicy: {statusCode: 410, body: gone}
  tcpproxy:
    loadBalancerPolicy: {strategy: Random}
    healthCheckPolicy: {intervalSeconds: 10}
    services: [{name: db, port: 5432}]
status: {currentStatus: valid, description: Valid HTTPProxy}
";
    let v = validate_object_as(&set, "projectcontour.io", "HTTPProxy", &parse(proxy));
    assert_eq!(findings(&v), Vec::<String>::new());

    // The modelled fields still check their values.
    let wrong = proxy
        .replace("count: 3", "count: -2")
        .replace("retryOn: [5xx,", "retryOn: [6xx,")
        .replace("source: Peer", "source: Anyone")
        .replace("statusCode: 410", "statusCode: 100");
    let found = findings(&validate_object_as(
        &set,
        "projectcontour.io",
        "HTTPProxy",
        &parse(&wrong),
    ));
    for field in [
        "spec.routes[0].retryPolicy.count",
        "spec.routes[0].retryPolicy.retryOn[0]",
        "spec.virtualhost.ipAllowPolicy[0].source",
        "spec.routes[2].directResponsePolicy.statusCode",
    ] {
        assert!(
            found.iter().any(|f| f.contains(field)),
            "{field} not in {found:#?}"
        );
    }
}

/// The differences from Istio's published CRD (istio/api
/// kubernetes/customresourcedefinitions.gen.yaml at the commit the headers name): a load
/// balancer is simple or consistentHash, not both, and a consistent hash has one key and one
/// algorithm; VirtualService has the deprecated mirrorPercent and rewrite.uriRegexRewrite.
#[test]
fn the_bundled_istio_schemas_follow_the_published_load_balancer_and_rewrite_fields() {
    let set = bundled_schemas();
    let parse = |text: &str| {
        kruise_lua_engine::yaml::parse_first_document(text)
            .unwrap()
            .unwrap()
            .to_json()
    };
    let rule_with = |load_balancer: &str| {
        let object = parse(&format!(
            "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {{name: web}}\nspec:\n  host: web\n  trafficPolicy:\n    loadBalancer: {load_balancer}\n"
        ));
        let v = validate_object_as(&set, "networking.istio.io", "DestinationRule", &object);
        v.findings
            .iter()
            .map(|f| format!("{} {}", f.path_text(), f.rule))
            .collect::<Vec<_>>()
    };
    let at = "spec.trafficPolicy.loadBalancer";
    assert_eq!(
        rule_with("{simple: ROUND_ROBIN, consistentHash: {httpHeaderName: x-user}}"),
        [format!("{at} oneOf")]
    );
    assert_eq!(
        rule_with("{consistentHash: {httpHeaderName: x-user, useSourceIp: true}}"),
        [format!("{at}.consistentHash oneOf")]
    );
    assert_eq!(
        rule_with("{consistentHash: {httpCookie: {ttl: 0s}}}"),
        [format!("{at}.consistentHash.httpCookie.name required")]
    );
    for valid in [
        "{simple: LEAST_REQUEST, warmup: {duration: 30s, minimumPercent: 10}}",
        "{consistentHash: {httpCookie: {name: user, ttl: 0s}, ringHash: {minimumRingSize: 1024}}}",
        "{consistentHash: {useSourceIp: true, maglev: {tableSize: 65537}}}",
        "{}",
    ] {
        assert_eq!(rule_with(valid), Vec::<String>::new(), "{valid}");
    }

    let virtual_service = parse(
        "apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: web}
spec:
  hosts: [web]
  http:
  - rewrite: {uriRegexRewrite: {match: ^/v1/(.*), rewrite: /v2/\\1}}
    mirror: {host: web-shadow}
    mirrorPercent: 5
    route:
    - destination: {host: web}
",
    );
    let v = validate_object_as(
        &set,
        "networking.istio.io",
        "VirtualService",
        &virtual_service,
    );
    assert_eq!(findings(&v), Vec::<String>::new());
}

/// Each bundled CRD's header records what it follows (issue 21): the release it describes, by
/// commit or tag, the files its facts come from, and what it leaves out.
#[test]
fn every_bundled_crd_names_its_release_sources_and_omissions() {
    let commit_or_tag = names_commit_or_tag;
    for file in entries(&crds_dir()) {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&file).unwrap();
        let header: String = text
            .lines()
            .take_while(|line| line.starts_with('#'))
            .collect::<Vec<_>>()
            .join("\n");
        let describes = header
            .split("# Describes:")
            .nth(1)
            .unwrap_or_else(|| panic!("{name}: no `Describes:` line"));
        assert!(
            commit_or_tag(describes),
            "{name}: `Describes:` names no commit or tag"
        );
        assert!(header.contains("# Facts from:"), "{name}: no `Facts from:`");
        assert!(
            header.contains("not modelled")
                || header.contains("reported as pruned")
                || header.contains("Compact:"),
            "{name}: the header does not say what is left out"
        );
    }
}

/// A 40-digit commit, or a version tag (`v0.5.0`, `2.9.19`).
fn names_commit_or_tag(text: &str) -> bool {
    text.split(|c: char| !c.is_ascii_alphanumeric() && c != '.')
        .any(|word| {
            (word.len() == 40 && word.chars().all(|c| c.is_ascii_hexdigit()))
                || (word.trim_start_matches('v').split('.').count() >= 3
                    && word
                        .trim_start_matches('v')
                        .split('.')
                        .all(|part| !part.is_empty() && part.chars().all(|c| c.is_ascii_digit())))
        })
}
