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

/// A resource written in a test, as the JSON object validation reads.
fn parse_resource(text: &str) -> JsonValue {
    kruise_lua_engine::yaml::parse_first_document(text)
        .unwrap()
        .unwrap()
        .to_json()
}

/// A correct, realistic resource has no schema finding against its bundled CRD: no field the
/// API server would prune, no false error.
fn assert_clean(set: &SchemaSet, group: &str, kind: &str, resource: &str) {
    let v = validate_object_as(set, group, kind, &parse_resource(resource));
    assert_eq!(findings(&v), Vec::<String>::new(), "{kind}:\n{resource}");
}

/// Each of `fields` is an error (not a warning) of `resource` against its bundled CRD.
fn assert_errors_at(set: &SchemaSet, group: &str, kind: &str, resource: &str, fields: &[&str]) {
    let v = validate_object_as(set, group, kind, &parse_resource(resource));
    let errors: Vec<String> = v.errors().map(|f| f.path_text()).collect();
    for field in fields {
        assert!(
            errors.iter().any(|path| path == field),
            "{kind}: {field} is not an error in {:#?}",
            findings(&v)
        );
    }
}

/// A realistic Mapping (Emissary's Mapping reference, getambassador.io/docs/emissary/latest/
/// topics/using/) using CORS, retries, circuit breakers, health checks, rate-limit labels, load
/// balancing, keepalive, regex rewrites and error-response overrides beside the fields the
/// scripts write: none is pruned (the compact CRD used to lack them all). Values the CRD refuses
/// still are errors.
#[test]
fn the_bundled_emissary_schema_keeps_every_mapping_field() {
    let set = bundled_schemas();
    let mapping = "apiVersion: getambassador.io/v3alpha1
kind: Mapping
metadata: {name: shop, namespace: shop}
spec:
  hostname: shop.example.com
  prefix: /api/
  service: shop:8080
  weight: 90
  timeout_ms: 5000
  connect_timeout_ms: 3000
  regex_rewrite: {pattern: '/api/(.*)', substitution: '/\\1'}
  cors:
    origins: [https://shop.example.com]
    methods: [GET, POST]
    headers: [Content-Type]
    credentials: true
    exposed_headers: [x-request-id]
    max_age: '86400'
  retry_policy: {retry_on: 5xx, num_retries: 3, per_try_timeout: 0.5s}
  circuit_breakers:
  - {priority: default, max_connections: 2048, max_pending_requests: 1024, max_requests: 4096, max_retries: 3}
  load_balancer:
    policy: ring_hash
    cookie: {name: sticky, ttl: 600s}
  keepalive: {probes: 3, idle_time: 60, interval: 10}
  health_checks:
  - health_check:
      http:
        path: /healthz
        expected_statuses: [{min: 200, max: 299}]
    interval: 5s
    timeout: 1s
    healthy_threshold: 2
    unhealthy_threshold: 3
  labels:
    ambassador:
    - request_label_group:
      - request_headers: {key: user, header_name: x-user}
      - remote_address: {key: remote_address}
  auth_context_extensions: {tier: api}
  bypass_error_response_overrides: false
  error_response_overrides:
  - on_status_code: 503
    body: {text_format: shop is unavailable, content_type: text/plain}
  outlier_detection: '{}'
  docs: {path: /docs/openapi.json}
  envoy_override: {per_filter_config: {}}
status: {state: Running}
";
    assert_clean(&set, "getambassador.io", "Mapping", mapping);
    let wrong = mapping
        .replace("retry_on: 5xx", "retry_on: 6xx")
        .replace("priority: default", "priority: urgent")
        .replace("policy: ring_hash", "policy: random")
        .replace("on_status_code: 503", "on_status_code: 200");
    assert_errors_at(
        &set,
        "getambassador.io",
        "Mapping",
        &wrong,
        &[
            "spec.retry_policy.retry_on",
            "spec.circuit_breakers[0].priority",
            "spec.load_balancer.policy",
            "spec.error_response_overrides[0].on_status_code",
        ],
    );
}

/// A realistic ApisixRoute and ApisixUpstream (APISIX ingress controller's API reference,
/// apisix.apache.org/docs/ingress-controller/reference/api-reference/) with authentication,
/// upstream references, health checks, TLS, port-level settings and external nodes: none is
/// pruned (the compact CRDs used to lack them and `status`). Values the CRDs refuse still are
/// errors.
#[test]
fn the_bundled_apisix_schemas_keep_every_route_and_upstream_field() {
    let set = bundled_schemas();
    let route = "apiVersion: apisix.apache.org/v2
kind: ApisixRoute
metadata: {name: shop, namespace: shop}
spec:
  ingressClassName: apisix
  http:
  - name: api
    priority: 10
    match:
      hosts: [shop.example.com]
      paths: [/api/*]
      methods: [GET, POST]
      exprs:
      - subject: {scope: Header, name: x-canary}
        op: Equal
        value: 'true'
    backends:
    - {serviceName: shop, servicePort: 80, weight: 90}
    - {serviceName: shop-canary, servicePort: http, weight: 10}
    timeout: {connect: 5s, read: 10s, send: 10s}
    websocket: false
    authentication:
      enable: true
      type: keyAuth
      keyAuth: {header: apikey}
    plugins:
    - name: cors
      enable: true
      config: {allow_origins: '*'}
  - name: legacy
    match: {paths: [/legacy/*]}
    upstreams:
    - {name: legacy-upstream, weight: 100}
    authentication:
      enable: true
      type: jwtAuth
      jwtAuth: {header: Authorization, query: token, cookie: jwt}
status:
  conditions:
  - {type: Accepted, status: 'True', reason: Accepted, message: '', lastTransitionTime: '2026-01-01T00:00:00Z'}
";
    assert_clean(&set, "apisix.apache.org", "ApisixRoute", route);
    let wrong = route.replace("      type: keyAuth\n", "").replace(
        "{name: legacy-upstream, weight: 100}",
        "{name: legacy-upstream, weight: all}",
    );
    assert_errors_at(
        &set,
        "apisix.apache.org",
        "ApisixRoute",
        &wrong,
        &[
            "spec.http[0].authentication.type",
            "spec.http[1].upstreams[0].weight",
        ],
    );

    let upstream = "apiVersion: apisix.apache.org/v2
kind: ApisixUpstream
metadata: {name: shop, namespace: shop}
spec:
  ingressClassName: apisix
  scheme: https
  loadbalancer: {type: chash, hashOn: header, key: x-user}
  retries: 3
  timeout: {connect: 5s, read: 10s, send: 10s}
  tlsSecret: {name: shop-client-cert, namespace: shop}
  healthCheck:
    active:
      type: http
      httpPath: /healthz
      timeout: 5
      healthy: {interval: 2s, successes: 2, httpCodes: [200]}
      unhealthy: {interval: 1s, httpFailures: 2, timeout: 3}
    passive:
      healthy: {httpCodes: [200, 201]}
      unhealthy: {httpCodes: [502, 503], httpFailures: 3}
  subsets:
  - name: canary
    labels: {version: v2}
  portLevelSettings:
  - port: 9090
    scheme: grpc
    loadbalancer: {type: ewma}
    retries: 1
status:
  conditions: []
";
    assert_clean(&set, "apisix.apache.org", "ApisixUpstream", upstream);
    let external = "apiVersion: apisix.apache.org/v2
kind: ApisixUpstream
metadata: {name: httpbin, namespace: shop}
spec:
  externalNodes:
  - {type: Domain, name: httpbin.org, weight: 1, port: 443}
  passHost: node
  discovery: {type: dns, serviceName: httpbin.default.svc.cluster.local, args: {ttl: '30'}}
";
    assert_clean(&set, "apisix.apache.org", "ApisixUpstream", external);
    let wrong = upstream
        .replace("namespace: shop}\n  healthCheck", "}\n  healthCheck")
        .replace("port: 9090", "port: 70000")
        .replace(
            "loadbalancer: {type: ewma}",
            "loadbalancer: {type: fastest}",
        );
    assert_errors_at(
        &set,
        "apisix.apache.org",
        "ApisixUpstream",
        &wrong,
        &[
            "spec.tlsSecret.namespace",
            "spec.portLevelSettings[0].port",
            "spec.portLevelSettings[0].loadbalancer.type",
        ],
    );
    let wrong = external.replace("port: 443", "port: 0");
    assert_errors_at(
        &set,
        "apisix.apache.org",
        "ApisixUpstream",
        &wrong,
        &["spec.externalNodes[0].port"],
    );
}

/// A realistic MeshHTTPRoute (Kuma 2.9's MeshHTTPRoute policy page,
/// kuma.io/docs/2.9.x/policies/meshhttproute/) with redirects, URL rewrites and mirrors: none
/// is pruned (the compact CRD used to lack those three filters). Values the CRD refuses still
/// are errors.
#[test]
fn the_bundled_kuma_schema_keeps_redirect_rewrite_and_mirror_filters() {
    let set = bundled_schemas();
    let route = "apiVersion: kuma.io/v1alpha1
kind: MeshHTTPRoute
metadata:
  name: shop
  namespace: kuma-system
  labels: {kuma.io/mesh: default}
spec:
  targetRef: {kind: Mesh}
  to:
  - targetRef: {kind: MeshService, name: shop_shop_svc_80}
    rules:
    - matches:
      - path: {type: PathPrefix, value: /old}
      default:
        filters:
        - type: RequestRedirect
          requestRedirect:
            scheme: https
            hostname: shop.example.com
            port: 443
            statusCode: 301
            path: {type: ReplacePrefixMatch, replacePrefixMatch: /new}
    - matches:
      - path: {type: PathPrefix, value: /api}
        method: GET
      default:
        filters:
        - type: URLRewrite
          urlRewrite:
            hostToBackendHostname: true
            path: {type: ReplacePrefixMatch, replacePrefixMatch: /}
        - type: RequestMirror
          requestMirror:
            percentage: 10
            backendRef: {kind: MeshServiceSubset, name: shop_shop_svc_80, tags: {version: v2}}
        - type: RequestHeaderModifier
          requestHeaderModifier:
            set: [{name: x-shop, value: api}]
        backendRefs:
        - {kind: MeshService, name: shop_shop_svc_80, weight: 90}
        - {kind: MeshServiceSubset, name: shop_shop_svc_80, tags: {version: v2}, weight: 10}
";
    assert_clean(&set, "kuma.io", "MeshHTTPRoute", route);
    let wrong = route
        .replace("statusCode: 301", "statusCode: 305")
        .replace(
            "path: {type: ReplacePrefixMatch, replacePrefixMatch: /}",
            "path: {type: Replace, replacePrefixMatch: /}",
        )
        .replace("hostname: shop.example.com", "hostname: Shop_Example");
    assert_errors_at(
        &set,
        "kuma.io",
        "MeshHTTPRoute",
        &wrong,
        &[
            "spec.to[0].rules[0].default.filters[0].requestRedirect.statusCode",
            "spec.to[0].rules[0].default.filters[0].requestRedirect.hostname",
            "spec.to[0].rules[1].default.filters[0].urlRewrite.path.type",
        ],
    );
}

/// A realistic IngressRoute and TraefikService (Traefik's CRD routing reference,
/// doc.traefik.io/traefik/reference/routing-configuration/kubernetes/crd/http/) with health
/// checks, sticky cookies, per-service middlewares, observability, TLS domains, parent routes,
/// and the highestRandomWeight, failover and mirroring kinds: none is pruned (the compact CRDs
/// used to lack them). Values the CRDs refuse still are errors.
#[test]
fn the_bundled_traefik_schemas_keep_every_route_and_service_field() {
    let set = bundled_schemas();
    let route = "apiVersion: traefik.io/v1alpha1
kind: IngressRoute
metadata: {name: shop, namespace: shop}
spec:
  entryPoints: [websecure]
  routes:
  - match: Host(`shop.example.com`) && PathPrefix(`/api`)
    kind: Rule
    priority: 10
    observability: {accessLogs: true, tracing: false, metrics: true, traceVerbosity: detailed}
    middlewares: [{name: strip-api}]
    services:
    - name: shop
      port: 80
      weight: 90
      strategy: wrr
      passHostHeader: true
      responseForwarding: {flushInterval: 100ms}
      healthCheck: {path: /healthz, interval: 10s, timeout: 3s, port: 8080, headers: {x-probe: traefik}}
      passiveHealthCheck: {failureWindow: 10s, maxFailedAttempts: 3}
      sticky:
        cookie: {name: shop_affinity, secure: true, httpOnly: true, sameSite: lax, maxAge: 3600}
      middlewares: [{name: retry, namespace: shop}]
    - {name: shop-canary, port: http, weight: 10}
  tls:
    secretName: shop-tls
    domains:
    - {main: shop.example.com, sans: [www.shop.example.com]}
";
    assert_clean(&set, "traefik.io", "IngressRoute", route);
    let child = "apiVersion: traefik.io/v1alpha1
kind: IngressRoute
metadata: {name: shop-api, namespace: shop}
spec:
  parentRefs: [{name: shop, namespace: shop}]
  routes:
  - match: PathPrefix(`/api/v2`)
    services: [{name: shop-v2, port: 80}]
";
    assert_clean(&set, "traefik.io", "IngressRoute", child);
    let wrong = route
        .replace("sameSite: lax", "sameSite: always")
        .replace("traceVerbosity: detailed", "traceVerbosity: verbose")
        .replace("port: 8080, headers", "port: http, headers")
        .replace("{name: retry, namespace: shop}", "{namespace: shop}");
    assert_errors_at(
        &set,
        "traefik.io",
        "IngressRoute",
        &wrong,
        &[
            "spec.routes[0].services[0].sticky.cookie.sameSite",
            "spec.routes[0].observability.traceVerbosity",
            "spec.routes[0].services[0].healthCheck.port",
            "spec.routes[0].services[0].middlewares[0].name",
        ],
    );

    let weighted = "apiVersion: traefik.io/v1alpha1
kind: TraefikService
metadata: {name: shop-wrr, namespace: shop}
spec:
  weighted:
    services:
    - name: shop
      port: 80
      weight: 3
      healthCheck: {path: /healthz, interval: 10s, timeout: 3s}
      sticky: {cookie: {name: shop_lvl2}}
    - {name: shop-canary, port: 80, weight: 1, strategy: p2c}
    sticky: {cookie: {name: shop_lvl1, secure: true}}
";
    assert_clean(&set, "traefik.io", "TraefikService", weighted);
    let others = [
        "apiVersion: traefik.io/v1alpha1
kind: TraefikService
metadata: {name: shop-hrw, namespace: shop}
spec:
  highestRandomWeight:
    services:
    - {name: shop, port: 80, weight: 2}
    - {name: shop-canary, port: 80, weight: 1}
",
        "apiVersion: traefik.io/v1alpha1
kind: TraefikService
metadata: {name: shop-failover, namespace: shop}
spec:
  failover:
    service: {name: shop, port: 80, healthCheck: {path: /healthz, interval: 10s}}
    fallback: {name: shop-backup, port: 80}
    errors: {status: ['500-599'], maxRequestBodyBytes: 1024}
",
        "apiVersion: traefik.io/v1alpha1
kind: TraefikService
metadata: {name: shop-mirror, namespace: shop}
spec:
  mirroring:
    name: shop
    port: 80
    mirrorBody: true
    maxBodySize: 1048576
    healthCheck: {path: /healthz}
    mirrors:
    - {name: shop-shadow, port: 80, percent: 20, healthCheck: {path: /healthz}}
",
    ];
    for service in others {
        assert_clean(&set, "traefik.io", "TraefikService", service);
    }
    let wrong = others[1].replace(
        "    errors: {status: ['500-599'], maxRequestBodyBytes: 1024}\n",
        "",
    );
    assert_errors_at(
        &set,
        "traefik.io",
        "TraefikService",
        &wrong,
        &["spec.failover.errors"],
    );
    let wrong = weighted
        .replace("strategy: p2c", "strategy: random")
        .replace("weight: 3", "weight: -3");
    assert_errors_at(
        &set,
        "traefik.io",
        "TraefikService",
        &wrong,
        &[
            "spec.weighted.services[1].strategy",
            "spec.weighted.services[0].weight",
        ],
    );
}

/// A realistic Gloo Edge VirtualService (Gloo's VirtualService, Route, RouteOptions and
/// VirtualHostOptions references, docs.solo.io/gloo-edge/latest/reference/api/) with redirects,
/// direct responses, consul destinations, delegation, TLS, and route options for retries,
/// rewrites, faults, shadowing, upgrades, hashing, auth and rate limits: none is pruned (the
/// compact CRD used to lack them). Values the CRD refuses still are errors.
#[test]
fn the_bundled_gloo_schema_keeps_every_route_and_option_field() {
    let set = bundled_schemas();
    let service = "apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: {name: shop, namespace: gloo-system}
spec:
  sslConfig:
    secretRef: {name: shop-tls, namespace: gloo-system}
    sniDomains: [shop.example.com]
  virtualHost:
    domains: [shop.example.com]
    options:
      cors: {allowOrigin: ['https://shop.example.com'], allowMethods: [GET, POST]}
      retries: {retryOn: 5xx, numRetries: 2}
      headerManipulation: {responseHeadersToRemove: [server]}
      includeRequestAttemptCount: true
    routes:
    - matchers: [{prefix: /old}]
      redirectAction: {hostRedirect: shop.example.com, pathRedirect: /new, responseCode: MOVED_PERMANENTLY}
    - matchers: [{exact: /gone}]
      directResponseAction: {status: 410, body: gone}
    - name: api
      matchers:
      - prefix: /api
        headers: [{name: x-canary, value: 'true'}]
        methods: [GET, POST]
      routeAction:
        multi:
          destinations:
          - weight: 90
            destination: {upstream: {name: shop-shop-80, namespace: gloo-system}}
          - weight: 10
            destination: {kube: {ref: {name: shop-canary, namespace: shop}, port: 80}}
            options:
              headerManipulation:
                requestHeadersToAdd:
                - header: {key: x-canary, value: 'true'}
                - headerSecretRef: {name: canary-token, namespace: gloo-system}
                  append: false
      options:
        timeout: 10s
        prefixRewrite: /
        retries: {retryOn: connect-failure, numRetries: 3, perTryTimeout: 2s, retriableStatusCodes: [503]}
        faults: {abort: {percentage: 1.5, httpStatus: 503}, delay: {percentage: 5, fixedDelay: 1s}}
        shadowing: {upstream: {name: shop-shadow-80, namespace: gloo-system}, percentage: 10}
        upgrades: [{websocket: {enabled: true}}]
        lbHash: {hashPolicies: [{header: x-user, terminal: true}]}
        maxStreamDuration: {maxStreamDuration: 60s}
        extauth: {configRef: {name: basic-auth, namespace: gloo-system}}
        ratelimitBasic: {anonymousLimits: {requestsPerUnit: 100, unit: MINUTE}}
        cors: {disableForRoute: true}
        appendXForwardedHost: true
    - matchers: [{regex: '/v[0-9]+/.*'}]
      routeAction:
        single: {upstream: {name: shop-shop-80, namespace: gloo-system}}
      options:
        regexRewrite: {pattern: {regex: '^/v[0-9]+/(.*)$'}, substitution: '/\\1'}
    - matchers: [{prefix: /consul}]
      routeAction:
        single:
          consul: {serviceName: shop, tags: [v2], dataCenters: [dc1]}
    - matchers: [{prefix: /team}]
      inheritableMatchers: true
      delegateAction: {selector: {labels: {team: shop}, namespaces: [shop]}}
status:
  statuses:
    gloo-system: {state: Accepted, reportedBy: gateway}
";
    assert_clean(&set, "gateway.solo.io", "VirtualService", service);
    let wrong = service
        .replace("status: 410", "status: -410")
        .replace("httpStatus: 503", "httpStatus: unavailable")
        .replace("numRetries: 3", "numRetries: -3")
        .replace(
            "{websocket: {enabled: true}}",
            "{websocket: {enabled: sometimes}}",
        );
    assert_errors_at(
        &set,
        "gateway.solo.io",
        "VirtualService",
        &wrong,
        &[
            "spec.virtualHost.routes[1].directResponseAction.status",
            "spec.virtualHost.routes[2].options.faults.abort.httpStatus",
            "spec.virtualHost.routes[2].options.retries.numRetries",
            "spec.virtualHost.routes[2].options.upgrades[0].websocket.enabled",
        ],
    );
}

/// The Istio fields the compact CRDs used to lack (istio/api at the commit the headers name): a
/// redirect's prefixRewrite; a DestinationRule's port-level settings, tunnel, proxy protocol,
/// retry budget, locality and zone-aware load balancing and workload selector. None is pruned;
/// values the published CRD refuses still are errors.
#[test]
fn the_bundled_istio_schemas_keep_port_level_settings_and_redirect_rewrites() {
    let set = bundled_schemas();
    let virtual_service = "apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: shop}
spec:
  hosts: [shop.example.com]
  gateways: [shop-gateway]
  http:
  - match: [{uri: {prefix: /old}}]
    redirect: {prefixRewrite: /new, authority: shop.example.com, redirectCode: 301}
  - route: [{destination: {host: shop}}]
";
    assert_clean(
        &set,
        "networking.istio.io",
        "VirtualService",
        virtual_service,
    );
    let wrong = virtual_service.replace("prefixRewrite: /new", "prefixRewrite: 5");
    assert_errors_at(
        &set,
        "networking.istio.io",
        "VirtualService",
        &wrong,
        &["spec.http[0].redirect.prefixRewrite"],
    );

    let rule = "apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: shop}
spec:
  host: shop
  workloadSelector:
    matchLabels: {app: shop-gateway}
  trafficPolicy:
    loadBalancer:
      simple: ROUND_ROBIN
      localityLbSetting:
        enabled: true
        failover: [{from: us-east, to: us-west}]
    portLevelSettings:
    - port: {number: 80}
      loadBalancer: {simple: LEAST_REQUEST}
      connectionPool: {http: {http1MaxPendingRequests: 100}}
    - port: {number: 9443}
      tls: {mode: SIMPLE, sni: shop.example.com}
    tunnel: {protocol: CONNECT, targetHost: shop.internal, targetPort: 8080}
    proxyProtocol: {version: V2}
    retryBudget: {percent: 20, minRetryConcurrency: 3}
  subsets:
  - name: canary
    labels: {version: v2}
    trafficPolicy:
      loadBalancer:
        simple: ROUND_ROBIN
        zoneAwareLbSetting: {enabled: true, minClusterSize: 2}
      portLevelSettings:
      - port: {number: 80}
        outlierDetection: {consecutive5xxErrors: 5, interval: 10s}
";
    assert_clean(&set, "networking.istio.io", "DestinationRule", rule);
    let wrong = rule
        .replace(", targetPort: 8080", "")
        .replace("version: V2", "version: V3")
        .replace("minClusterSize: 2", "minClusterSize: 0")
        .replace(
            "loadBalancer: {simple: LEAST_REQUEST}",
            "loadBalancer: {simple: LEAST_REQUEST, consistentHash: {useSourceIp: true}}",
        );
    assert_errors_at(
        &set,
        "networking.istio.io",
        "DestinationRule",
        &wrong,
        &[
            "spec.trafficPolicy.tunnel.targetPort",
            "spec.trafficPolicy.proxyProtocol.version",
            "spec.subsets[0].trafficPolicy.loadBalancer.zoneAwareLbSetting.minClusterSize",
            "spec.trafficPolicy.portLevelSettings[0].loadBalancer",
        ],
    );
}

/// SMI's TrafficSplit CRD (smi-sdk-go v0.5.0 crds/split.yaml) has only service, backends and
/// matches, and no status: the bundled one declares all of them, so a realistic split is clean,
/// and what that CRD refuses still is an error.
#[test]
fn the_bundled_smi_schema_keeps_every_traffic_split_field() {
    let set = bundled_schemas();
    let split = "apiVersion: split.smi-spec.io/v1alpha4
kind: TrafficSplit
metadata: {name: shop, namespace: shop}
spec:
  service: shop
  matches:
  - {kind: HTTPRouteGroup, name: shop-api}
  backends:
  - {service: shop-stable, weight: 90}
  - {service: shop-canary, weight: 10}
";
    assert_clean(&set, "split.smi-spec.io", "TrafficSplit", split);
    let wrong = split
        .replace("kind: HTTPRouteGroup", "kind: TCPRoute")
        .replace(
            "{service: shop-canary, weight: 10}",
            "{service: shop-canary}",
        );
    assert_errors_at(
        &set,
        "split.smi-spec.io",
        "TrafficSplit",
        &wrong,
        &["spec.matches[0].kind", "spec.backends[1].weight"],
    );
}
