//! The probe requests of a step: the model's probes of the configurations before and after
//! it, and each of the step's matches laid over each of them (a request the match selects,
//! and requests just beside it), bounded, without duplicates, in request order.

use std::borrow::Cow;
use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, Hasher};

use rustc_hash::FxBuildHasher;

use crate::luadata::{HttpRouteMatch, NameValueMatch};
use crate::routing::matching::sample_match;
use crate::routing::{GatewayConfig, NameValues, Request, RoutingModel, SmolStr};

use super::Intent;

/// The values a step match's conditions are probed with: a sample each condition selects
/// (`None` when no sample of a regex was found), computed once per match rather than once per
/// base request (sampling a regex tries several candidates, each a regex match).
struct MatchSamples {
    path: Option<SmolStr>,
    headers: Vec<Option<SmolStr>>,
    query: Vec<Option<SmolStr>>,
}

impl MatchSamples {
    fn of(m: &HttpRouteMatch) -> MatchSamples {
        let sample = |match_type: Option<&str>, value: &str| match match_type {
            Some("RegularExpression") => sample_match(value).map(SmolStr::from),
            _ => Some(SmolStr::from(value)),
        };
        MatchSamples {
            path: m.path.as_ref().and_then(|path| {
                sample(
                    path.match_type.as_deref(),
                    path.value.as_deref().unwrap_or("/"),
                )
            }),
            headers: m
                .headers
                .iter()
                .flatten()
                .map(|h| sample(h.match_type.as_deref(), &h.value))
                .collect(),
            query: m
                .query_params
                .iter()
                .flatten()
                .map(|q| sample(q.match_type.as_deref(), &q.value))
                .collect(),
        }
    }
}

/// `base` with the path, headers and query parameters `m` asks for (its `samples`; `names`
/// its header and query names, [`MatchNames::of`] it): a request `m` selects.
fn selected_request(samples: &MatchSamples, names: &MatchNames, base: &Request) -> Request {
    let mut hit = base.clone();
    if let Some(sampled) = &samples.path {
        hit.path = sampled.clone();
    }
    hit.headers = if base.headers.is_empty() {
        names.headers_alone.clone()
    } else {
        with_samples(&base.headers, &names.headers, &samples.headers)
    };
    hit.query = if base.query.is_empty() {
        names.query_alone.clone()
    } else {
        with_samples(&base.query, &names.query, &samples.query)
    };
    hit
}

/// `values` with each name set to its sample, in turn (a later condition on the same name
/// wins); the same shared list when there is nothing to set.
fn with_samples(values: &NameValues, names: &[SmolStr], samples: &[Option<SmolStr>]) -> NameValues {
    let mut values = values.clone();
    for (name, sampled) in names.iter().zip(samples) {
        if let Some(sampled) = sampled {
            values = values.with(name, Some(sampled));
        }
    }
    values
}

/// A step match's header names lower-cased and its query parameter names, as request texts,
/// and the headers and query of a request that had none once the match's `samples` are set:
/// made once per match (most base requests have none).
struct MatchNames {
    headers: Vec<SmolStr>,
    query: Vec<SmolStr>,
    headers_alone: NameValues,
    query_alone: NameValues,
}

impl MatchNames {
    fn of(m: &HttpRouteMatch, samples: &MatchSamples) -> MatchNames {
        let headers: Vec<SmolStr> = m
            .headers
            .iter()
            .flatten()
            .map(|h| SmolStr::from(h.name.to_ascii_lowercase()))
            .collect();
        let query: Vec<SmolStr> = m
            .query_params
            .iter()
            .flatten()
            .map(|q| SmolStr::from(q.name.as_str()))
            .collect();
        MatchNames {
            headers_alone: with_samples(&NameValues::new(), &headers, &samples.headers),
            query_alone: with_samples(&NameValues::new(), &query, &samples.query),
            headers,
            query,
        }
    }
}

/// What [`match_probes`] needs of a step match besides its samples, made once per match
/// rather than once per base request: its header names lower-cased, the two paths beside a
/// non-regex path, and each condition's [`near_misses`] around its sample (a condition whose
/// sample the request `m` selects does not hold, e.g. one overwritten by a later header of
/// the same name, gets them made for the value it holds).
struct MatchBeside {
    names: MatchNames,
    /// Below the path, and a longer name sharing its text.
    paths_beside: Vec<SmolStr>,
    path_near: Option<(SmolStr, Vec<SmolStr>)>,
    header_near: Vec<Option<(SmolStr, Vec<SmolStr>)>>,
    query_near: Vec<Option<(SmolStr, Vec<SmolStr>)>>,
}

impl MatchBeside {
    fn of(m: &HttpRouteMatch, samples: &MatchSamples, ignore_case: bool) -> MatchBeside {
        let around = |match_type: Option<&str>, value: &str, sampled: &Option<SmolStr>, ic| {
            sampled.as_ref().map(|sampled| {
                let near = near_misses(match_type, value, sampled, ic);
                (sampled.clone(), near)
            })
        };
        // A header or query condition's near misses, one per condition.
        let each_near = |conditions: &Option<Vec<NameValueMatch>>, sampled: &[Option<SmolStr>]| {
            conditions
                .iter()
                .flatten()
                .zip(sampled)
                .map(|(c, sampled)| around(c.match_type.as_deref(), &c.value, sampled, ignore_case))
                .collect()
        };
        MatchBeside {
            names: MatchNames::of(m, samples),
            paths_beside: m
                .path
                .as_ref()
                .filter(|path| path.match_type.as_deref() != Some("RegularExpression"))
                .map(|path| {
                    let value = path.value.as_deref().unwrap_or("/").trim_end_matches('/');
                    vec![
                        SmolStr::from(format!("{value}/x")),
                        SmolStr::from(format!("{value}x")),
                    ]
                })
                .unwrap_or_default(),
            path_near: m.path.as_ref().and_then(|path| {
                let value = path.value.as_deref().unwrap_or("/");
                around(path.match_type.as_deref(), value, &samples.path, false)
            }),
            header_near: each_near(&m.headers, &samples.headers),
            query_near: each_near(&m.query_params, &samples.query),
        }
    }
}

/// [`near_misses`] of a condition around `sampled`: the ones made in advance when they were
/// made around the same value.
fn near_around<'a>(
    made: Option<&'a (SmolStr, Vec<SmolStr>)>,
    match_type: Option<&str>,
    value: &str,
    sampled: &str,
    ignore_case: bool,
) -> Cow<'a, [SmolStr]> {
    match made {
        Some((around, near)) if around == sampled => Cow::Borrowed(near),
        _ => Cow::Owned(near_misses(match_type, value, sampled, ignore_case)),
    }
}

/// Adds to `set` a request `m` selects, built on `base`, and variants that each lack one of its
/// conditions (`samples` is [`MatchSamples::of`] `m`, `beside` [`MatchBeside::of`] it). A
/// variant is the request `m` selects with one field changed; it is built only when the set
/// does not hold it yet. `expanded`: where in `set` the requests `m` selected so far are whose
/// variants are in `set` too. Base requests that differ only in what the match sets (their
/// paths, for a match on the path) give the same selected request, whose variants but one are
/// then in the set already.
fn match_probes(
    m: &HttpRouteMatch,
    samples: &MatchSamples,
    beside: &MatchBeside,
    base: &Request,
    values_ignore_case: bool,
    set: &mut RequestSet,
    expanded: &mut HashSet<usize, FxBuildHasher>,
) {
    let hit = selected_request(samples, &beside.names, base);
    let parts = HashParts::of(&hit);
    if m.path.is_some() {
        // The one variant made of `base` rather than of `hit`.
        set.insert_variant(&hit, parts, Change::Path(&base.path));
    }
    // A copy of a request shares its texts and lists: cheap.
    if !expanded.insert(set.insert(hit.clone(), parts)) {
        return;
    }
    let mut add = |change: Change| set.insert_variant(&hit, parts, change);
    if let Some(path) = &m.path {
        for beside_path in &beside.paths_beside {
            add(Change::Path(beside_path));
        }
        let value = path.value.as_deref().unwrap_or("/");
        let near = near_around(
            beside.path_near.as_ref(),
            path.match_type.as_deref(),
            value,
            &hit.path,
            false,
        );
        for near in near.iter() {
            if near.starts_with('/') {
                add(Change::Path(near));
            }
        }
    }
    for (i, header) in m.headers.iter().flatten().enumerate() {
        let name = &beside.names.headers[i];
        add(Change::Header(name, None));
        add(Change::Header(name, Some(&OTHER_VALUE)));
        let sampled = hit.headers.get(name).unwrap_or("");
        let near = near_around(
            beside.header_near[i].as_ref(),
            header.match_type.as_deref(),
            &header.value,
            sampled,
            values_ignore_case,
        );
        for near in near.iter() {
            add(Change::Header(name, Some(near)));
        }
    }
    for (i, param) in m.query_params.iter().flatten().enumerate() {
        let name = &beside.names.query[i];
        add(Change::Query(name, None));
        let sampled = hit.query.get(name).unwrap_or("");
        let near = near_around(
            beside.query_near[i].as_ref(),
            param.match_type.as_deref(),
            &param.value,
            sampled,
            values_ignore_case,
        );
        for near in near.iter() {
            add(Change::Query(name, Some(near)));
        }
    }
}

/// Values just beside a condition, which the step's match must not select unless its type
/// says so (the probe's expectation comes from [`Intent::selects`], so a value the match does
/// select is simply one more hit): the value with a suffix and a prefix of it (an `Exact`
/// read as a prefix, or an unanchored regex: Istio `regex`, Kuma `RegularExpression`, Traefik
/// `HeaderRegexp` search the value unanchored in some versions), the value in the other case
/// (Gateway API `HTTPHeaderMatch` values match case-sensitively), and for a regex the sample
/// with characters around it; a value with a dot, with another character in its place (the
/// value read as a regex). `ignore_case`: the gateway cannot match this value
/// case-sensitively (see [`RoutingModel::values_ignore_case`]), so no other-case probe.
fn near_misses(
    match_type: Option<&str>,
    value: &str,
    sampled: &str,
    ignore_case: bool,
) -> Vec<SmolStr> {
    let mut out: Vec<SmolStr> = Vec::new();
    if match_type == Some("RegularExpression") {
        if !sampled.is_empty() {
            out.push(format!("{sampled}x").into());
            out.push(format!("x{sampled}").into());
        }
        return out;
    }
    if value.is_empty() {
        return out;
    }
    out.push(format!("{value}x").into());
    let mut shorter = value.to_owned();
    shorter.pop();
    if !shorter.is_empty() {
        out.push(shorter.into());
    }
    // A dot read as a regex (an exact value written into a pattern unquoted: Higress matches
    // `canary-by-header-value` as the regex `always|<value>`) also takes any character there.
    if let Some(dot) = value.find('.') {
        out.push(format!("{}x{}", &value[..dot], &value[dot + 1..]).into());
    }
    let upper = value.to_uppercase();
    let swapped = if upper == value {
        value.to_lowercase()
    } else {
        upper
    };
    if swapped != value && !ignore_case {
        out.push(swapped.into());
    }
    out
}

/// At most this many probes come from the resources' routes, and this many in all per step
/// (the first ones in request order), so a resource with thousands of routes is checked in
/// bounded time and memory.
pub const MAX_BASE_PROBES: usize = 500;
pub const MAX_PROBES: usize = 2000;

/// The probe requests for a step: the model's probes of both configurations, and each step
/// match laid over each of them (see [`MAX_PROBES`]).
pub fn probes(
    model: &dyn RoutingModel,
    original: &GatewayConfig,
    after: &GatewayConfig,
    intent: &Intent,
) -> ProbeSet {
    probes_beside(
        model,
        &sorted_probes(model.probes(original)),
        &sorted_probes(model.probes(after)),
        intent,
    )
}

/// A model's probes in request order, without duplicates (what [`probes_beside`] takes).
pub(super) fn sorted_probes(mut probes: Vec<Request>) -> Vec<Request> {
    // Models mostly return their probes sorted already: a stable sort finds the run.
    probes.sort();
    probes.dedup();
    probes
}

/// [`probes`] from the model's probes of the original configuration and of the step's, each
/// [`sorted_probes`].
pub(super) fn probes_beside(
    model: &dyn RoutingModel,
    original_probes: &[Request],
    after_probes: &[Request],
    intent: &Intent,
) -> ProbeSet {
    let mut base: Vec<Request> = sorted_union(original_probes, after_probes, MAX_BASE_PROBES + 1)
        .into_iter()
        .cloned()
        .collect();
    let mut truncated = base.len() > MAX_BASE_PROBES;
    base.truncate(MAX_BASE_PROBES);
    let mut all = RequestSet::beside(&base);
    let ignore_case = model.values_ignore_case();
    'matches: for (i, m) in intent.matches.iter().enumerate() {
        let samples = MatchSamples::of(m);
        let beside = MatchBeside::of(m, &samples, ignore_case);
        let mut expanded = HashSet::default();
        for (j, request) in base.iter().enumerate() {
            match_probes(
                m,
                &samples,
                &beside,
                request,
                ignore_case,
                &mut all,
                &mut expanded,
            );
            if all.len() >= MAX_PROBES {
                let last = i + 1 == intent.matches.len() && j + 1 == base.len();
                truncated |= !last || all.len() > MAX_PROBES;
                break 'matches;
            }
        }
    }
    let mut added = all.added;
    // No two are equal: either sort gives the one order, and the stable one (which merges
    // the ascending runs it finds) made 13 % fewer comparisons on the library's steps.
    // `base` is in order already, so only the added ones are sorted, and the two merged.
    added.sort();
    let requests = sorted_union(base, added, MAX_PROBES);
    ProbeSet {
        requests,
        truncated,
    }
}

/// The first `limit` items of the union of `a` and `b` (each sorted, without duplicates), in
/// order and without duplicates (an item in both is taken from `a`).
fn sorted_union<T: Ord>(
    a: impl IntoIterator<Item = T>,
    b: impl IntoIterator<Item = T>,
    limit: usize,
) -> Vec<T> {
    use std::cmp::Ordering;
    let (mut a, mut b) = (a.into_iter().peekable(), b.into_iter().peekable());
    let mut out = Vec::with_capacity((a.size_hint().0 + b.size_hint().0).min(limit));
    while out.len() < limit {
        let next = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) => match x.cmp(y) {
                Ordering::Less => a.next(),
                Ordering::Greater => b.next(),
                Ordering::Equal => {
                    b.next();
                    a.next()
                }
            },
            (Some(_), None) => a.next(),
            (None, Some(_)) => b.next(),
            (None, None) => break,
        };
        out.extend(next);
    }
    out
}

/// Requests without duplicates: `base` (none equal) and those added beside it. A request is
/// looked up by its hash (one pass over its text) rather than by comparisons down a tree of
/// requests, and the order the check needs is made once, by sorting the distinct ones.
struct RequestSet<'a> {
    base: &'a [Request],
    added: Vec<Request>,
    /// The index (into `base`, then `added`) of the first request with each hash.
    by_hash: HashMap<u64, usize, FxBuildHasher>,
    /// Indices of requests whose hash an earlier, different request has.
    collided: Vec<usize>,
}

/// One field of a request changed: a variant of a probe, compared with the requests of a
/// [`RequestSet`] and hashed without building it.
#[derive(Clone, Copy)]
enum Change<'a> {
    Nothing,
    Path(&'a SmolStr),
    /// A header set to a value (`Some`) or removed (`None`).
    Header(&'a SmolStr, Option<&'a SmolStr>),
    /// A query parameter set or removed.
    Query(&'a SmolStr, Option<&'a SmolStr>),
}

/// The value of a header probe that no condition of the step asks for.
static OTHER_VALUE: SmolStr = SmolStr::new_static("__other");

impl<'a> RequestSet<'a> {
    fn beside(base: &'a [Request]) -> RequestSet<'a> {
        let mut set = RequestSet {
            base,
            added: Vec::with_capacity(base.len() * 4),
            by_hash: HashMap::with_capacity_and_hasher(base.len() * 5, FxBuildHasher),
            collided: Vec::new(),
        };
        // No two base requests are equal: only their hashes may be.
        for (index, request) in base.iter().enumerate() {
            match set.by_hash.entry(HashParts::of(request).finish()) {
                Entry::Vacant(slot) => {
                    slot.insert(index);
                }
                Entry::Occupied(_) => set.collided.push(index),
            }
        }
        set
    }

    fn len(&self) -> usize {
        self.base.len() + self.added.len()
    }

    fn get(&self, index: usize) -> &Request {
        match index.checked_sub(self.base.len()) {
            None => &self.base[index],
            Some(added) => &self.added[added],
        }
    }

    /// Where the set holds `of` with `change`, as its hash `hash`; when it does not, `None`,
    /// and the next index is recorded for that hash.
    fn held_at(&mut self, hash: u64, of: &Request, change: Change) -> Option<usize> {
        let next = self.len();
        match self.by_hash.entry(hash) {
            Entry::Vacant(slot) => {
                slot.insert(next);
                None
            }
            Entry::Occupied(first) => {
                let first = *first.get();
                let held = std::iter::once(first)
                    .chain(self.collided.iter().copied())
                    .find(|&k| same_as(self.get(k), of, change));
                if held.is_none() {
                    self.collided.push(next);
                }
                held
            }
        }
    }

    /// Adds `request` (whose [`HashParts`] are `parts`) unless an equal one is there; where
    /// the set holds it.
    fn insert(&mut self, request: Request, parts: HashParts) -> usize {
        let next = self.len();
        self.held_at(parts.finish(), &request, Change::Nothing)
            .unwrap_or_else(|| {
                self.added.push(request);
                next
            })
    }

    /// Adds `of` (whose [`HashParts`] are `parts`) with `change` unless an equal request is
    /// there (built only then).
    fn insert_variant(&mut self, of: &Request, parts: HashParts, change: Change) {
        let hash = parts.changed(of, change).finish();
        if self.held_at(hash, of, change).is_none() {
            self.added.push(changed(of, change));
        }
    }
}

/// `of` with `change` made: a copy that shares every text and list of `of` but the changed one.
fn changed(of: &Request, change: Change) -> Request {
    match change {
        Change::Nothing => of.clone(),
        Change::Path(path) => Request {
            path: path.clone(),
            ..of.clone()
        },
        Change::Header(name, value) => Request {
            headers: of.headers.with(name, value),
            ..of.clone()
        },
        Change::Query(name, value) => Request {
            query: of.query.with(name, value),
            ..of.clone()
        },
    }
}

/// Whether `map` is `of` with the entry `change` names set to its value (`Some`) or removed
/// (`None`); with no change, whether they are equal.
fn same_map(
    map: &NameValues,
    of: &NameValues,
    change: Option<(&SmolStr, Option<&SmolStr>)>,
) -> bool {
    let Some((name, value)) = change else {
        return map == of;
    };
    // `of`'s entries before and after `name`, and `map`'s: those with `name`'s in between.
    let entries = map.entries();
    let (before, after) = of.around(name);
    let middle = usize::from(value.is_some());
    entries.len() == before.len() + middle + after.len()
        && entries[..before.len()] == *before
        && entries[before.len() + middle..] == *after
        && value.is_none_or(|value| {
            let (held_name, held) = &entries[before.len()];
            held_name == name && held == value
        })
}

/// Whether `request` is `of` with `change` made.
fn same_as(request: &Request, of: &Request, change: Change) -> bool {
    let (path, headers, query) = match change {
        Change::Nothing => (&of.path, None, None),
        Change::Path(path) => (path, None, None),
        Change::Header(name, value) => (&of.path, Some((name, value)), None),
        Change::Query(name, value) => (&of.path, None, Some((name, value))),
    };
    request.path == *path
        && request.method == of.method
        && request.host == of.host
        && request.cookies == of.cookies
        && same_map(&request.headers, &of.headers, headers)
        && same_map(&request.query, &of.query, query)
}

/// The hash of a request in parts, so that the hash of the request with one field changed
/// takes no second pass over the rest: each map's part is the sum of its entries' hashes (a
/// map holds a name once), which changing an entry adjusts.
#[derive(Debug, Clone, Copy, PartialEq)]
struct HashParts {
    method_host: u64,
    path: u64,
    headers: u64,
    query: u64,
    cookies: u64,
}

fn text_hash(texts: &[&str]) -> u64 {
    let mut hasher = FxBuildHasher.build_hasher();
    for text in texts {
        hasher.write(text.as_bytes());
        hasher.write_u8(0xff);
    }
    hasher.finish()
}

fn map_hash(map: &NameValues) -> u64 {
    map.iter()
        .fold(0, |sum, (k, v)| sum.wrapping_add(text_hash(&[k, v])))
}

/// `sum` (a [`map_hash`]) with the entry `name` changed from `old` to `new` (`None`: absent).
fn map_hash_changed(sum: u64, name: &str, old: Option<&str>, new: Option<&SmolStr>) -> u64 {
    let removed = old.map_or(0, |old| text_hash(&[name, old]));
    let added = new.map_or(0, |new| text_hash(&[name, new]));
    sum.wrapping_sub(removed).wrapping_add(added)
}

impl HashParts {
    fn of(request: &Request) -> HashParts {
        HashParts {
            method_host: match &request.host {
                Some(host) => text_hash(&[&request.method, host]),
                None => text_hash(&[&request.method]),
            },
            path: text_hash(&[&request.path]),
            headers: map_hash(&request.headers),
            query: map_hash(&request.query),
            cookies: map_hash(&request.cookies),
        }
    }

    /// The parts of `of` (whose parts these are) with `change` made.
    fn changed(self, of: &Request, change: Change) -> HashParts {
        match change {
            Change::Nothing => self,
            Change::Path(path) => HashParts {
                path: text_hash(&[path]),
                ..self
            },
            Change::Header(name, value) => HashParts {
                headers: map_hash_changed(self.headers, name, of.headers.get(name), value),
                ..self
            },
            Change::Query(name, value) => HashParts {
                query: map_hash_changed(self.query, name, of.query.get(name), value),
                ..self
            },
        }
    }

    fn finish(self) -> u64 {
        let mut hasher = FxBuildHasher.build_hasher();
        for part in [
            self.method_host,
            self.path,
            self.headers,
            self.query,
            self.cookies,
        ] {
            hasher.write_u64(part);
        }
        hasher.finish()
    }
}

/// The probes of a step, and whether the bounds cut some off.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ProbeSet {
    pub requests: Vec<Request>,
    pub truncated: bool,
}

#[cfg(test)]
#[path = "probe_set_tests.rs"]
mod tests;
