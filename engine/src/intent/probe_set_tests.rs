//! Tests of the probe set (`probe_set.rs`): drawn cases compared with a set built from whole
//! requests, within and past its bounds, and variants compared and hashed as the requests they
//! stand for.

use std::collections::BTreeSet;

use super::*;
use crate::luadata::{HttpPathMatch, NameValueMatch};
use crate::routing::{ConfigProblem, Routed};
use crate::script::ScriptKind;
use crate::test_draw::Draw;
use crate::value::JsonValue;

/// A model whose probes are given: `original` for the configuration `"original"`,
/// `after` for any other.
struct GivenProbes {
    original: Vec<Request>,
    after: Vec<Request>,
    ignore_case: bool,
}

impl RoutingModel for GivenProbes {
    fn name(&self) -> &'static str {
        "given probes"
    }
    fn applies_to(&self, _kind: &ScriptKind) -> bool {
        false
    }
    fn config_problems(&self, _config: &GatewayConfig) -> Vec<ConfigProblem> {
        Vec::new()
    }
    fn route(&self, _config: &GatewayConfig, _request: &Request) -> Routed {
        Routed::NoRoute
    }
    fn probes(&self, config: &GatewayConfig) -> Vec<Request> {
        match config {
            GatewayConfig::Resource(JsonValue::String(name)) if name == "original" => {
                self.original.clone()
            }
            _ => self.after.clone(),
        }
    }
    fn values_ignore_case(&self) -> bool {
        self.ignore_case
    }
}

/// The probe set as the intent check first made it (ordered sets of whole requests),
/// which [`probes`] must give exactly.
fn reference(model: &dyn RoutingModel, after: &GatewayConfig, intent: &Intent) -> ProbeSet {
    let original = GatewayConfig::Resource(JsonValue::String("original".into()));
    let mut base: BTreeSet<Request> = model.probes(&original).into_iter().collect();
    base.extend(model.probes(after));
    let mut truncated = base.len() > MAX_BASE_PROBES;
    let base: Vec<Request> = base.into_iter().take(MAX_BASE_PROBES).collect();
    let mut all: BTreeSet<Request> = base.iter().cloned().collect();
    'matches: for (i, m) in intent.matches.iter().enumerate() {
        let samples = MatchSamples::of(m);
        for (j, request) in base.iter().enumerate() {
            all.extend(reference_match_probes(
                m,
                &samples,
                request,
                model.values_ignore_case(),
            ));
            if all.len() >= MAX_PROBES {
                let last = i + 1 == intent.matches.len() && j + 1 == base.len();
                truncated |= !last || all.len() > MAX_PROBES;
                break 'matches;
            }
        }
    }
    ProbeSet {
        requests: all.into_iter().take(MAX_PROBES).collect(),
        truncated,
    }
}

/// `base` with the path, headers and query parameters `m` asks for (its `samples`), set
/// one by one.
fn reference_selected_request(
    m: &HttpRouteMatch,
    samples: &MatchSamples,
    base: &Request,
) -> Request {
    let mut hit = base.clone();
    if let Some(sampled) = &samples.path {
        hit.path = sampled.clone();
    }
    for (header, sampled) in m.headers.iter().flatten().zip(&samples.headers) {
        if let Some(value) = sampled {
            hit.headers
                .insert(header.name.to_ascii_lowercase(), value.clone());
        }
    }
    for (param, sampled) in m.query_params.iter().flatten().zip(&samples.query) {
        if let Some(value) = sampled {
            hit.query.insert(param.name.clone(), value.clone());
        }
    }
    hit
}

/// A request `m` selects, built on `base`, and variants that each lack one of its conditions
/// (`samples` is [`MatchSamples::of`] `m`).
fn reference_match_probes(
    m: &HttpRouteMatch,
    samples: &MatchSamples,
    base: &Request,
    values_ignore_case: bool,
) -> Vec<Request> {
    let hit = reference_selected_request(m, samples, base);
    let mut variants = vec![hit.clone()];
    let with_path = |path: String| {
        let mut variant = hit.clone();
        variant.path = path.into();
        variant
    };
    if let Some(path) = &m.path {
        variants.push(with_path(base.path.to_string()));
        if path.match_type.as_deref() != Some("RegularExpression") {
            // Below the path, and a longer name sharing its text (neither an exact nor a
            // segment-prefix match).
            let value = path.value.as_deref().unwrap_or("/").trim_end_matches('/');
            variants.push(with_path(format!("{value}/x")));
            variants.push(with_path(format!("{value}x")));
        }
    }
    if let Some(path) = &m.path {
        let value = path.value.as_deref().unwrap_or("/");
        for near in near_misses(path.match_type.as_deref(), value, &hit.path, false) {
            if near.starts_with('/') {
                variants.push(with_path(near.to_string()));
            }
        }
    }
    for header in m.headers.iter().flatten() {
        let name = header.name.to_ascii_lowercase();
        let mut miss = hit.clone();
        miss.headers.remove(&name);
        variants.push(miss);
        let mut other = hit.clone();
        other.headers.insert(name.clone(), "__other");
        variants.push(other);
        let sampled = hit.headers.get(&name).unwrap_or_default();
        for near in near_misses(
            header.match_type.as_deref(),
            &header.value,
            sampled,
            values_ignore_case,
        ) {
            let mut variant = hit.clone();
            variant.headers.insert(name.clone(), near);
            variants.push(variant);
        }
    }
    for param in m.query_params.iter().flatten() {
        let mut miss = hit.clone();
        miss.query.remove(&param.name);
        variants.push(miss);
        let sampled = hit.query.get(&param.name).unwrap_or_default();
        for near in near_misses(
            param.match_type.as_deref(),
            &param.value,
            sampled,
            values_ignore_case,
        ) {
            let mut variant = hit.clone();
            variant.query.insert(param.name.clone(), near);
            variants.push(variant);
        }
    }
    variants
}

const PATHS: &[&str] = &["/", "/api", "/api/v1", "/static/", "/a.b", "/API"];
const NAMES: &[&str] = &["x-canary", "X-User", "env", "beta"];
const VALUES: &[&str] = &[
    "1",
    "true",
    "prod.eu",
    "Gold",
    "^b[0-9]+$",
    ".*Safari.*",
    "",
];
const TYPES: &[Option<&str>] = &[
    None,
    Some("Exact"),
    Some("PathPrefix"),
    Some("Prefix"),
    Some("RegularExpression"),
];

fn request(draw: &mut Draw, unique: usize) -> Request {
    let mut request = Request::get(draw.pick(PATHS));
    if draw.below(4) == 0 {
        request.path = format!("/r{unique}").into();
    }
    if draw.below(3) == 0 {
        request.method = "POST".into();
    }
    if draw.below(2) == 0 {
        request.host = Some(draw.pick(&["a.example.com", "b.example.com"]).into());
    }
    for _ in 0..draw.below(3) {
        request
            .headers
            .insert(draw.pick(NAMES).to_ascii_lowercase(), draw.pick(VALUES));
    }
    if draw.below(3) == 0 {
        request.query.insert(draw.pick(NAMES), draw.pick(VALUES));
    }
    if draw.below(5) == 0 {
        request.cookies.insert("c", draw.pick(VALUES));
    }
    request
}

fn value_match(draw: &mut Draw) -> NameValueMatch {
    let match_type = TYPES[draw.below(TYPES.len())].filter(|t| *t != "PathPrefix");
    NameValueMatch {
        match_type: match_type.map(str::to_owned),
        name: draw.pick(NAMES).into(),
        value: draw.pick(VALUES).into(),
    }
}

fn route_match(draw: &mut Draw) -> HttpRouteMatch {
    let path = (draw.below(2) == 0).then(|| HttpPathMatch {
        match_type: TYPES[draw.below(TYPES.len())].map(str::to_owned),
        value: Some(
            draw.pick(&["/api", "/api/", "^/items/[0-9]+$", "/a.b"])
                .into(),
        ),
    });
    let headers: Vec<NameValueMatch> = (0..draw.below(3)).map(|_| value_match(draw)).collect();
    let query: Vec<NameValueMatch> = (0..draw.below(2)).map(|_| value_match(draw)).collect();
    HttpRouteMatch {
        path,
        headers: Some(headers).filter(|h| !h.is_empty()),
        query_params: Some(query).filter(|q| !q.is_empty()),
    }
}

/// Case `seed`: `base` probes a side (duplicates and unsorted included) and `matches`
/// step matches at most.
fn case(seed: u64, base: usize, matches: usize) -> (GivenProbes, Intent) {
    let mut draw = Draw(seed);
    let side = |draw: &mut Draw| -> Vec<Request> {
        let count = draw.below(base + 1);
        (0..count).map(|i| request(draw, i)).collect()
    };
    let model = GivenProbes {
        original: side(&mut draw),
        after: side(&mut draw),
        ignore_case: draw.below(2) == 0,
    };
    let count = draw.below(matches + 1);
    let intent = Intent {
        matches: (0..count).map(|_| route_match(&mut draw)).collect(),
        ..Intent::default()
    };
    (model, intent)
}

#[test]
fn the_probe_set_is_the_ordered_set_of_every_probe_within_the_bounds() {
    let after = GatewayConfig::Resource(JsonValue::String("after".into()));
    let original = GatewayConfig::Resource(JsonValue::String("original".into()));
    // Small sets, and sets past each bound (MAX_BASE_PROBES, MAX_PROBES), in every mix.
    let (mut whole, mut truncated, mut full) = (0, 0, 0);
    for (seeds, base, matches) in [(0..300, 12, 4), (300..320, 700, 3), (320..360, 150, 40)] {
        for seed in seeds {
            let (model, intent) = case(seed, base, matches);
            let expected = reference(&model, &after, &intent);
            let found = probes(&model, &original, &after, &intent);
            assert_eq!(found.truncated, expected.truncated, "seed {seed}");
            assert!(found.requests == expected.requests, "seed {seed}");
            if found.truncated {
                truncated += 1;
            } else {
                whole += 1;
            }
            full += usize::from(found.requests.len() == MAX_PROBES);
        }
    }
    // Both kinds, and some cut at MAX_PROBES.
    assert!(
        whole > 100 && truncated > 10 && full > 5,
        "{whole} {truncated} {full}"
    );
}

/// A variant compared and hashed without building it is equal, and hashes alike, to the
/// request built from it, and to no other.
#[test]
fn variants_compare_and_hash_as_the_requests_they_stand_for() {
    let mut draw = Draw(7);
    let texts = |from: &[&str]| -> Vec<SmolStr> { from.iter().map(|&t| t.into()).collect() };
    let (paths, values) = (texts(PATHS), texts(VALUES));
    for i in 0..2000 {
        let of = request(&mut draw, i);
        let other = request(&mut draw, i);
        let names = [
            SmolStr::from(draw.pick(NAMES).to_ascii_lowercase()),
            SmolStr::from(draw.pick(NAMES).to_ascii_lowercase()),
        ];
        let mut change = |name| {
            let set = (draw.below(2) == 0).then(|| &values[draw.below(values.len())]);
            match draw.below(4) {
                0 => Change::Nothing,
                1 => Change::Path(&paths[draw.below(paths.len())]),
                2 => Change::Header(name, set),
                _ => Change::Query(name, set),
            }
        };
        let (change, near) = (change(&names[0]), change(&names[1]));
        let built = changed(&of, change);
        assert!(same_as(&built, &of, change), "{built:?}");
        // Another change of the same request: equal only when it makes the same request.
        let beside = changed(&of, near);
        assert_eq!(same_as(&beside, &of, change), beside == built);
        assert_eq!(
            HashParts::of(&built),
            HashParts::of(&of).changed(&of, change)
        );
        assert_eq!(same_as(&other, &of, change), other == built);
    }
}
