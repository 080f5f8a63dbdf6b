//! Building probe requests from route conditions: each model describes a route as
//! conjunctions of [`Cond`]s (one per way the route can match), and [`probes_for`] turns them
//! into requests that satisfy each conjunction plus variants that miss one condition each.

use regex_syntax::hir::{Class, Hir, HirKind};

use super::{NameValues, Request, SmolStr};

/// A value condition on a header, query parameter or cookie.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ValueCond {
    Exact(String),
    /// A regular expression (a sample that matches it is built for the probe).
    Regex(String),
    Contains(String),
    Prefix(String),
    Suffix(String),
    Present,
}

/// One condition of a route, as probes need it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Cond {
    Host(String),
    PathExact(String),
    PathPrefix(String),
    PathRegex(String),
    Method(String),
    Header(String, ValueCond),
    Query(String, ValueCond),
    Cookie(String, ValueCond),
}

/// A condition and whether the route wants it to hold (`false`: negated, e.g. Traefik `!`,
/// Contour `notexact`).
pub type Literal = (Cond, bool);

/// The longest sample built for a pattern; longer ones are skipped (bounded memory).
const SAMPLE_LIMIT: usize = 256;
/// A value no route condition is expected to use.
const MISS: &str = "kruise-probe-miss";

/// A string matching `pattern` (Go/RE2 syntax), when one short enough is easy to build: the
/// first branch of each alternation, the minimum of each repetition, a readable member of
/// each class.
pub fn sample_for(pattern: &str) -> Option<String> {
    // The configurations a case's steps route through hold mostly the same patterns, and
    // parsing one costs more than building the probes around its sample.
    super::matching::kept_regex_sample(pattern, || parsed_sample(pattern))
}

/// [`sample_for`] without the memo.
fn parsed_sample(pattern: &str) -> Option<String> {
    let hir = regex_syntax::ParserBuilder::new()
        .nest_limit(100)
        .build()
        .parse(pattern)
        .ok()?;
    let mut out = String::new();
    write_sample(&hir, &mut out)?;
    (out.len() <= SAMPLE_LIMIT).then_some(out)
}

fn write_sample(hir: &Hir, out: &mut String) -> Option<()> {
    if out.len() > SAMPLE_LIMIT {
        return None;
    }
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => {}
        HirKind::Literal(lit) => out.push_str(std::str::from_utf8(&lit.0).ok()?),
        HirKind::Class(Class::Unicode(class)) => {
            let ranges = class.ranges();
            let readable = ['a', '0', '-', 'A', '_', '.']
                .into_iter()
                .find(|c| ranges.iter().any(|r| r.start() <= *c && *c <= r.end()));
            out.push(readable.or_else(|| ranges.first().map(|r| r.start()))?);
        }
        HirKind::Class(Class::Bytes(class)) => {
            let byte = class.ranges().first()?.start();
            out.push(char::from(byte).is_ascii().then_some(char::from(byte))?);
        }
        HirKind::Repetition(rep) => {
            for _ in 0..rep.min.min(SAMPLE_LIMIT as u32 + 1) {
                write_sample(&rep.sub, out)?;
            }
        }
        HirKind::Capture(cap) => write_sample(&cap.sub, out)?,
        HirKind::Concat(parts) => {
            for part in parts {
                write_sample(part, out)?;
            }
        }
        HirKind::Alternation(branches) => write_sample(branches.first()?, out)?,
    }
    Some(())
}

/// A value satisfying `cond`, if one can be built.
fn value_for(cond: &ValueCond) -> Option<String> {
    match cond {
        ValueCond::Exact(v) | ValueCond::Contains(v) | ValueCond::Prefix(v) => Some(v.clone()),
        ValueCond::Suffix(v) => Some(v.clone()),
        ValueCond::Regex(p) => sample_for(p),
        ValueCond::Present => Some("1".to_owned()),
    }
}

/// A host name a pattern admits: `*.example.com` (a wildcard gateways accept) becomes
/// `probe.example.com`.
fn concrete_host(pattern: &str) -> String {
    match pattern.strip_prefix("*.") {
        Some(rest) => format!("probe.{rest}"),
        None => pattern.to_owned(),
    }
}

/// What applying `cond` so that it holds writes (a host, path, method or value), built once
/// per conjunction for the request meeting it and each variant missing another literal: a
/// pattern is sampled once, not once per request. `None` when it cannot be built (a pattern
/// too complex to sample). A shared text: each request holding it costs no copy.
fn held_value(cond: &Cond) -> Option<SmolStr> {
    Some(match cond {
        Cond::Host(h) => concrete_host(h).into(),
        Cond::PathExact(p) | Cond::PathPrefix(p) => p.as_str().into(),
        Cond::PathRegex(p) => {
            let sample = sample_for(p)?;
            if sample.starts_with('/') {
                sample.into()
            } else {
                smol_str::format_smolstr!("/{sample}")
            }
        }
        Cond::Method(m) => m.to_ascii_uppercase().into(),
        Cond::Header(_, v) | Cond::Query(_, v) | Cond::Cookie(_, v) => value_for(v)?.into(),
    })
}

/// Applies `cond` to `request` so that it holds (writing `held`, its [`held_value`]) or, for
/// `holds == false`, fails.
fn apply(request: &mut Request, cond: &Cond, holds: bool, held: &Option<SmolStr>) -> Option<()> {
    if holds {
        let value = held.clone()?;
        match cond {
            Cond::Host(_) => request.host = Some(value),
            Cond::PathExact(_) | Cond::PathPrefix(_) | Cond::PathRegex(_) => request.path = value,
            Cond::Method(_) => request.method = value,
            Cond::Header(name, _) => {
                request.headers.insert(name.to_ascii_lowercase(), value);
            }
            Cond::Query(name, _) => {
                request.query.insert(name.clone(), value);
            }
            Cond::Cookie(name, _) => {
                request.cookies.insert(name.clone(), value);
            }
        }
        return Some(());
    }
    match cond {
        Cond::Host(_) => request.host = Some(format!("{MISS}.invalid").into()),
        Cond::PathExact(p) => request.path = format!("{}/{MISS}", p.trim_end_matches('/')).into(),
        Cond::PathPrefix(_) | Cond::PathRegex(_) => request.path = format!("/{MISS}").into(),
        Cond::Method(m) => {
            request.method = SmolStr::new_static(if m.eq_ignore_ascii_case("POST") {
                "GET"
            } else {
                "POST"
            })
        }
        Cond::Header(name, v) => miss_value(&mut request.headers, &name.to_ascii_lowercase(), v),
        Cond::Query(name, v) => miss_value(&mut request.query, name, v),
        Cond::Cookie(name, v) => miss_value(&mut request.cookies, name, v),
    }
    Some(())
}

/// Makes the value condition `cond` on `name` fail in `map`.
fn miss_value(map: &mut NameValues, name: &str, cond: &ValueCond) {
    if matches!(cond, ValueCond::Present) {
        map.remove(name);
    } else {
        map.insert(name, MISS);
    }
}

/// The order literals are applied in: path conditions from the least to the most specific,
/// so that an exact path wins over a prefix when a route has both.
fn application_order(conjunction: &[Literal]) -> Vec<usize> {
    let rank = |c: &Cond| match c {
        Cond::PathPrefix(_) => 1,
        Cond::PathRegex(_) => 2,
        Cond::PathExact(_) => 3,
        _ => 0,
    };
    let mut order: Vec<usize> = (0..conjunction.len()).collect();
    order.sort_by_key(|&i| rank(&conjunction[i].0));
    order
}

/// A request meeting every literal of `conjunction`, with literal `flip` (if any) negated
/// (`None` when one cannot be built, e.g. a pattern too complex to sample); `held` and `order`
/// are its literals' [`held_value`]s and [`application_order`]. Unconstrained fields: `GET /`,
/// no host, nothing else.
fn request_flipping(
    conjunction: &[Literal],
    held: &[Option<SmolStr>],
    order: &[usize],
    host: Option<&str>,
    flip: Option<usize>,
) -> Option<Request> {
    let mut request = Request::get("/");
    request.host = host.map(|host| concrete_host(host).into());
    for &i in order {
        let (cond, holds) = &conjunction[i];
        apply(&mut request, cond, *holds != (flip == Some(i)), &held[i])?;
    }
    Some(request)
}

/// For each conjunction: a request meeting it, and for each literal one request meeting all
/// the others and missing that one. Duplicates are dropped; the order is stable. Built once
/// per case for equal conditions (see [`super::memo::derived_from_value`]): the steps of a
/// case mostly keep the original's routes and their conditions.
pub fn probes_for(conjunctions: Vec<Vec<Literal>>, host: Option<&str>) -> Vec<Request> {
    let key = (conjunctions, host.map(SmolStr::from));
    let probes = super::memo::derived_from_value(key, |(conjunctions, host)| {
        built_probes(conjunctions, host.as_deref())
    });
    Vec::clone(&probes)
}

/// [`probes_for`] without the memo.
fn built_probes(conjunctions: &[Vec<Literal>], host: Option<&str>) -> Vec<Request> {
    let mut out = vec![Request::get("/")];
    for conjunction in conjunctions {
        let held: Vec<Option<SmolStr>> = conjunction.iter().map(|(c, _)| held_value(c)).collect();
        let order = application_order(conjunction);
        for flip in std::iter::once(None).chain((0..conjunction.len()).map(Some)) {
            out.extend(request_flipping(conjunction, &held, &order, host, flip));
        }
    }
    without_later_duplicates(out)
}

/// `requests` without the requests equal to an earlier one, in order.
fn without_later_duplicates(requests: Vec<Request>) -> Vec<Request> {
    // Sorted by request, then position: the first of each run of equal ones is the earliest.
    let mut by_request: Vec<usize> = (0..requests.len()).collect();
    by_request.sort_by(|&a, &b| requests[a].cmp(&requests[b]).then(a.cmp(&b)));
    let mut keep = vec![true; requests.len()];
    for pair in by_request.windows(2) {
        if requests[pair[0]] == requests[pair[1]] {
            keep[pair[1]] = false;
        }
    }
    requests
        .into_iter()
        .zip(keep)
        .filter_map(|(request, keep)| keep.then_some(request))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_match_their_patterns() {
        for pattern in [
            ".*Safari.*",
            "canary=(yes|1)",
            "^b[0-9]+$",
            "^/items/[0-9]+$",
            "[^/]+",
            "(?i)abc",
        ] {
            let sample = sample_for(pattern).unwrap();
            assert!(
                regex::Regex::new(pattern).unwrap().is_match(&sample),
                "{pattern} {sample}"
            );
        }
        assert_eq!(sample_for("a{100000}"), None);
        assert_eq!(concrete_host("*.example.com"), "probe.example.com");
        assert_eq!(sample_for("("), None);
    }

    #[test]
    fn probes_meet_and_miss_each_condition() {
        let conj = vec![
            (Cond::PathPrefix("/api".into()), true),
            (
                Cond::Header("X-Canary".into(), ValueCond::Exact("1".into())),
                true,
            ),
        ];
        let probes = probes_for(vec![conj], Some("a.example.com"));
        let describe: Vec<String> = probes.iter().map(Request::describe).collect();
        assert_eq!(
            describe,
            [
                "GET /",
                "GET a.example.com/api with x-canary: 1",
                "GET a.example.com/kruise-probe-miss with x-canary: 1",
                "GET a.example.com/api with x-canary: kruise-probe-miss",
            ]
        );
    }

    /// Applies `literal` to `request` so that it holds (or, for `holds == false`, fails).
    fn old_apply(request: &mut Request, cond: &Cond, holds: bool) -> Option<()> {
        match (cond, holds) {
            (Cond::Host(h), true) => request.host = Some(concrete_host(h).into()),
            (Cond::Host(_), false) => request.host = Some(format!("{MISS}.invalid").into()),
            (Cond::PathExact(p), true) | (Cond::PathPrefix(p), true) => request.path = p.into(),
            (Cond::PathRegex(p), true) => {
                let sample = sample_for(p)?;
                request.path = if sample.starts_with('/') {
                    sample.into()
                } else {
                    format!("/{sample}").into()
                };
            }
            (Cond::PathExact(p), false) => {
                request.path = format!("{}/{MISS}", p.trim_end_matches('/')).into()
            }
            (Cond::PathPrefix(_), false) | (Cond::PathRegex(_), false) => {
                request.path = format!("/{MISS}").into()
            }
            (Cond::Method(m), true) => request.method = m.to_ascii_uppercase().into(),
            (Cond::Method(m), false) => {
                request.method = if m.eq_ignore_ascii_case("POST") {
                    "GET".into()
                } else {
                    "POST".into()
                }
            }
            (Cond::Header(name, v), holds) => {
                old_apply_value(&mut request.headers, &name.to_ascii_lowercase(), v, holds)?
            }
            (Cond::Query(name, v), holds) => old_apply_value(&mut request.query, name, v, holds)?,
            (Cond::Cookie(name, v), holds) => {
                old_apply_value(&mut request.cookies, name, v, holds)?
            }
        }
        Some(())
    }

    fn old_apply_value(
        map: &mut NameValues,
        name: &str,
        cond: &ValueCond,
        holds: bool,
    ) -> Option<()> {
        if holds {
            map.insert(name, value_for(cond)?);
        } else if matches!(cond, ValueCond::Present) {
            map.remove(name);
        } else {
            map.insert(name, MISS);
        }
        Some(())
    }

    /// The requests as first built (each variant a copy of the conjunction with one literal
    /// negated, every pattern sampled per request, an ordered set of requests to drop
    /// duplicates), which [`probes_for`] must give exactly.
    fn reference(conjunctions: &[Vec<Literal>], host: Option<&str>) -> Vec<Request> {
        fn single(conjunction: &[Literal], host: Option<&str>) -> Option<Request> {
            let mut request = Request::get("/");
            request.host = host.map(|host| concrete_host(host).into());
            let rank = |c: &Cond| match c {
                Cond::PathPrefix(_) => 1,
                Cond::PathRegex(_) => 2,
                Cond::PathExact(_) => 3,
                _ => 0,
            };
            let mut ordered: Vec<&Literal> = conjunction.iter().collect();
            ordered.sort_by_key(|(c, _)| rank(c));
            for (cond, holds) in ordered {
                old_apply(&mut request, cond, *holds)?;
            }
            Some(request)
        }
        let mut seen = std::collections::BTreeSet::new();
        let mut out = Vec::new();
        let mut push = |request: Request| {
            if seen.insert(request.clone()) {
                out.push(request);
            }
        };
        push(Request::get("/"));
        for conjunction in conjunctions {
            if let Some(request) = single(conjunction, host) {
                push(request);
            }
            for i in 0..conjunction.len() {
                let mut flipped = conjunction.clone();
                flipped[i].1 = !flipped[i].1;
                if let Some(request) = single(&flipped, host) {
                    push(request);
                }
            }
        }
        out
    }

    #[test]
    fn variants_are_the_conjunctions_with_one_literal_negated_without_duplicates() {
        let mut draw = crate::test_draw::Draw(11);
        let mut below = |n: usize| draw.below(n);
        let values = ["1", "a.b", "^x[0-9]+$", "(", "Gold"];
        for _ in 0..300 {
            let mut conjunctions = Vec::new();
            for _ in 0..below(4) {
                let mut conjunction = Vec::new();
                for _ in 0..below(4) {
                    let v = values[below(values.len())].to_owned();
                    let value = match below(6) {
                        0 => ValueCond::Exact(v),
                        1 => ValueCond::Regex(v),
                        2 => ValueCond::Prefix(v),
                        3 => ValueCond::Suffix(v),
                        4 => ValueCond::Contains(v),
                        _ => ValueCond::Present,
                    };
                    let name = ["x-a", "X-B"][below(2)].to_owned();
                    let cond = match below(8) {
                        0 => Cond::Host(["*.a.com", "b.com"][below(2)].into()),
                        1 => Cond::PathExact(["/api", "/api/"][below(2)].into()),
                        2 => Cond::PathPrefix("/api".into()),
                        3 => Cond::PathRegex(["^/v[0-9]+", "("][below(2)].into()),
                        4 => Cond::Method(["post", "GET"][below(2)].into()),
                        5 => Cond::Header(name, value),
                        6 => Cond::Query(name, value),
                        _ => Cond::Cookie(name, value),
                    };
                    conjunction.push((cond, below(3) != 0));
                }
                conjunctions.push(conjunction);
            }
            let host = [None, Some("*.example.com")][below(2)];
            assert_eq!(
                probes_for(conjunctions.clone(), host),
                reference(&conjunctions, host),
                "{conjunctions:?}"
            );
        }
    }
}
