//! Contour HTTPProxy match conditions: merging a route's conditions (with its includes'),
//! validating them, matching a request as Envoy does, and ordering routes as Contour does.
//!
//! Facts from projectcontour/contour: `internal/dag/conditions.go` (`mergePathMatchConditions`,
//! `pathMatchConditionsValid`, `headerMatchConditions`, `headerMatchConditionsValid`,
//! `queryParameterMatchConditions`, `queryParameterMatchConditionsValid`),
//! `internal/dag/dag.go` (`conditionsToString`), `internal/sorter/sorter.go`
//! (`routeSorter.Less`, `compareRoutesByMethodHeaderQueryParams`,
//! `headerMatchConditionSorter`, `queryParamMatchConditionSorter`), `internal/envoy/v3/route.go`
//! (`PathRouteMatch`: HTTPProxy prefixes are plain string prefixes, a regex is anchored with
//! `^`; `headerMatcher`: a missing header is empty only for inverted matches with
//! `treatMissingAsEmpty`), and Envoy's header matching (a missing header fails every matcher
//! but an inverted `present`).

use std::collections::BTreeSet;

use crate::value::JsonValue;

use super::Request;
use super::fields::str_field;
use super::matching::{full_match, re2_problem};
use super::probe::{Cond, Literal, ValueCond};

/// A route's conditions, merged.
#[derive(Debug, Clone, PartialEq)]
pub struct Conditions {
    pub path: PathCond,
    pub headers: Vec<HeaderCond>,
    pub query: Vec<QueryCond>,
}

impl Conditions {
    /// The conditions of a route under its includes' (outermost first), merged as the DAG does.
    pub fn merge(conds: &[JsonValue]) -> Conditions {
        Conditions {
            path: merge_path(conds),
            headers: conds
                .iter()
                .filter_map(|c| c.get("header"))
                .filter_map(header_cond)
                .collect(),
            query: conds
                .iter()
                .filter_map(|c| c.get("queryParameter"))
                .filter_map(query_cond)
                .collect(),
        }
    }

    /// `conditionsToString`: what `AddRoute` keys routes by.
    pub fn key(&self) -> String {
        format!("{:?}|{:?}|{:?}", self.path, self.headers, self.query)
    }

    pub fn matches(&self, request: &Request) -> bool {
        route_matches(self, request)
    }

    /// `routeSorter.Less`: whether a route with these conditions is served before `other`.
    pub fn less(&self, other: &Conditions) -> bool {
        route_less(self, other)
    }

    /// The conditions as probe literals.
    pub fn literals(&self) -> Vec<Literal> {
        literals(self)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum PathCond {
    Prefix(String),
    Exact(String),
    Regex(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderKind {
    Exact,
    Regex,
    Contains,
    Present,
}

#[derive(Debug, Clone, PartialEq)]
pub struct HeaderCond {
    pub name: String,
    pub kind: HeaderKind,
    pub value: String,
    pub invert: bool,
    pub ignore_case: bool,
    pub missing_as_empty: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryKind {
    Exact,
    Regex,
    Prefix,
    Suffix,
    Contains,
    Present,
}

#[derive(Debug, Clone, PartialEq)]
pub struct QueryCond {
    pub name: String,
    pub kind: QueryKind,
    pub value: String,
    pub ignore_case: bool,
}

pub fn non_empty(value: &JsonValue, key: &str) -> bool {
    str_field(value, key).is_some_and(|s| !s.is_empty())
}

/// `pathMatchConditionsValid`.
pub fn path_conditions_problem(conds: &[JsonValue]) -> Option<String> {
    let mut count = 0;
    for c in conds {
        for key in ["prefix", "exact", "regex"] {
            let Some(value) = str_field(c, key).filter(|v| !v.is_empty()) else {
                continue;
            };
            count += 1;
            if !value.starts_with('/') {
                return Some(format!(
                    "{key} conditions must start with /, {value} was supplied"
                ));
            }
            if let Some(e) = re2_problem(value).filter(|_| key == "regex") {
                return Some(format!("supplied regex: {value} invalid. error: {e}"));
            }
        }
    }
    (count > 1)
        .then(|| "more than one prefix, exact or regex is not allowed in a condition block".into())
}

/// `headerMatchConditionsValid` (contradictions and duplicate exact matches).
pub fn header_conditions_problem(conds: &[JsonValue]) -> Option<String> {
    let mut seen: BTreeSet<(String, &str, String)> = BTreeSet::new();
    let mut exact = BTreeSet::new();
    for header in conds.iter().filter_map(|c| c.get("header")) {
        let name = str_field(header, "name")
            .unwrap_or_default()
            .to_ascii_lowercase();
        let flag = |k: &str| header.get(k).and_then(JsonValue::as_bool) == Some(true);
        let text = |k: &str| str_field(header, k).unwrap_or_default().to_owned();
        let contradiction =
            |seen: &BTreeSet<(String, &str, String)>, kind: &'static str, value: String| {
                seen.contains(&(name.clone(), kind, value))
            };
        let (kind, value): (&str, String) = if flag("present") {
            if contradiction(&seen, "notpresent", String::new()) {
                return Some("cannot specify contradictory 'present' and 'notpresent' conditions for the same route and header".into());
            }
            ("present", String::new())
        } else if flag("notpresent") {
            if contradiction(&seen, "present", String::new()) {
                return Some("cannot specify contradictory 'present' and 'notpresent' conditions for the same route and header".into());
            }
            ("notpresent", String::new())
        } else if !text("exact").is_empty() {
            if !exact.insert(name.clone()) {
                return Some(
                    "cannot specify duplicate header 'exact match' conditions in the same route"
                        .into(),
                );
            }
            if contradiction(&seen, "notexact", text("exact")) {
                return Some("cannot specify contradictory 'exact' and 'notexact' conditions for the same route and header".into());
            }
            ("exact", text("exact"))
        } else if !text("notexact").is_empty() {
            if contradiction(&seen, "exact", text("notexact")) {
                return Some("cannot specify contradictory 'exact' and 'notexact' conditions for the same route and header".into());
            }
            ("notexact", text("notexact"))
        } else if !text("contains").is_empty() {
            if contradiction(&seen, "notcontains", text("contains")) {
                return Some("cannot specify contradictory 'contains' and 'notcontains' conditions for the same route and header".into());
            }
            ("contains", text("contains"))
        } else if !text("notcontains").is_empty() {
            if contradiction(&seen, "contains", text("notcontains")) {
                return Some("cannot specify contradictory 'contains' and 'notcontains' conditions for the same route and header".into());
            }
            ("notcontains", text("notcontains"))
        } else if !text("regex").is_empty() {
            if re2_problem(&text("regex")).is_some() {
                return Some("invalid regular expression specified for 'regex' condition".into());
            }
            ("regex", text("regex"))
        } else {
            continue;
        };
        seen.insert((name, kind, value));
    }
    None
}

/// `queryParameterMatchConditionsValid`.
pub fn query_conditions_problem(conds: &[JsonValue]) -> Option<String> {
    let mut exact = BTreeSet::new();
    for q in conds.iter().filter_map(|c| c.get("queryParameter")) {
        let set = ["exact", "prefix", "suffix", "regex", "contains"]
            .iter()
            .filter(|k| non_empty(q, k))
            .count()
            + usize::from(q.get("present").and_then(JsonValue::as_bool) == Some(true));
        if set == 0 {
            return Some("must specify at least one query parameter condition".into());
        }
        if set > 1 {
            return Some(
                "cannot specify more than one condition in the same match condition branch".into(),
            );
        }
        let name = str_field(q, "name")
            .unwrap_or_default()
            .to_ascii_lowercase();
        if non_empty(q, "exact") && !exact.insert(name) {
            return Some("cannot specify duplicate query parameter 'exact match' conditions in the same route".into());
        }
        let regex = str_field(q, "regex").unwrap_or_default();
        if !regex.is_empty() && re2_problem(regex).is_some() {
            return Some("invalid regular expression specified for 'regex' condition".into());
        }
    }
    None
}

/// `mergePathMatchConditions`.
fn merge_path(conds: &[JsonValue]) -> PathCond {
    let mut merged = String::new();
    let mut is_regex = false;
    let mut last = "";
    for c in conds {
        for key in ["prefix", "exact", "regex"] {
            if let Some(v) = str_field(c, key).filter(|v| !v.is_empty()) {
                merged.push_str(v);
                is_regex |= key == "regex";
                break;
            }
        }
    }
    if let Some(c) = conds.last() {
        last = ["prefix", "exact", "regex"]
            .into_iter()
            .find(|k| non_empty(c, k))
            .unwrap_or("");
    }
    // `//+` collapses to `/`.
    let mut collapsed = String::with_capacity(merged.len());
    for ch in merged.chars() {
        if !(ch == '/' && collapsed.ends_with('/')) {
            collapsed.push(ch);
        }
    }
    if collapsed.is_empty() {
        return PathCond::Prefix("/".into());
    }
    if is_regex {
        PathCond::Regex(collapsed)
    } else if last == "exact" {
        PathCond::Exact(collapsed)
    } else {
        PathCond::Prefix(collapsed)
    }
}

/// `headerMatchConditions`: the first of present, notpresent, contains, notcontains, exact,
/// notexact, regex that is set.
fn header_cond(h: &JsonValue) -> Option<HeaderCond> {
    let flag = |k: &str| h.get(k).and_then(JsonValue::as_bool) == Some(true);
    let text = |k: &str| str_field(h, k).unwrap_or_default().to_owned();
    let (kind, value, invert) = if flag("present") {
        (HeaderKind::Present, String::new(), false)
    } else if flag("notpresent") {
        (HeaderKind::Present, String::new(), true)
    } else if !text("contains").is_empty() {
        (HeaderKind::Contains, text("contains"), false)
    } else if !text("notcontains").is_empty() {
        (HeaderKind::Contains, text("notcontains"), true)
    } else if !text("exact").is_empty() {
        (HeaderKind::Exact, text("exact"), false)
    } else if !text("notexact").is_empty() {
        (HeaderKind::Exact, text("notexact"), true)
    } else if !text("regex").is_empty() {
        (HeaderKind::Regex, text("regex"), false)
    } else {
        return None;
    };
    Some(HeaderCond {
        name: text("name").to_ascii_lowercase(),
        kind,
        value,
        invert,
        ignore_case: flag("ignoreCase") && kind != HeaderKind::Regex,
        missing_as_empty: invert && flag("treatMissingAsEmpty"),
    })
}

fn query_cond(q: &JsonValue) -> Option<QueryCond> {
    let text = |k: &str| str_field(q, k).unwrap_or_default().to_owned();
    let kinds = [
        ("exact", QueryKind::Exact),
        ("prefix", QueryKind::Prefix),
        ("suffix", QueryKind::Suffix),
        ("regex", QueryKind::Regex),
        ("contains", QueryKind::Contains),
    ];
    let (kind, value) = kinds
        .iter()
        .find(|(k, _)| !text(k).is_empty())
        .map(|(k, kind)| (*kind, text(k)))
        .or_else(|| {
            (q.get("present").and_then(JsonValue::as_bool) == Some(true))
                .then(|| (QueryKind::Present, String::new()))
        })?;
    Some(QueryCond {
        name: text("name"),
        kind,
        value,
        ignore_case: q.get("ignoreCase").and_then(JsonValue::as_bool) == Some(true)
            && kind != QueryKind::Regex,
    })
}

/// `routeSorter.Less`.
fn route_less(a: &Conditions, b: &Conditions) -> bool {
    match (&a.path, &b.path) {
        (PathCond::Prefix(pa), PathCond::Prefix(pb)) => {
            if pa.len() != pb.len() {
                return pa.len() > pb.len();
            }
            match pa.cmp(pb) {
                std::cmp::Ordering::Greater => true,
                std::cmp::Ordering::Less => false,
                // HTTPProxy prefixes are all of the string type.
                std::cmp::Ordering::Equal => compare_conditions(a, b),
            }
        }
        (PathCond::Regex(ra), PathCond::Regex(rb)) => {
            if ra.len() != rb.len() {
                return ra.len() > rb.len();
            }
            match ra.cmp(rb) {
                std::cmp::Ordering::Greater => true,
                std::cmp::Ordering::Less => false,
                std::cmp::Ordering::Equal => compare_conditions(a, b),
            }
        }
        (PathCond::Regex(_), PathCond::Prefix(_)) => true,
        (PathCond::Exact(ea), PathCond::Exact(eb)) => match ea.cmp(eb) {
            std::cmp::Ordering::Greater => true,
            std::cmp::Ordering::Less => false,
            std::cmp::Ordering::Equal => compare_conditions(a, b),
        },
        (PathCond::Exact(_), _) => true,
        _ => false,
    }
}

/// `compareRoutesByMethodHeaderQueryParams`.
fn compare_conditions(a: &Conditions, b: &Conditions) -> bool {
    let (ma, ha) = split_method(a);
    let (mb, hb) = split_method(b);
    if ma != mb {
        return ma;
    }
    if ha.len() != hb.len() {
        return ha.len() > hb.len();
    }
    if a.query.len() != b.query.len() {
        return a.query.len() > b.query.len();
    }
    ha.iter().zip(&hb).any(|(x, y)| header_less(x, y))
        || a.query.iter().zip(&b.query).any(|(x, y)| query_less(x, y))
}

/// Whether a route has a `:method` condition, and its other header conditions.
fn split_method(route: &Conditions) -> (bool, Vec<&HeaderCond>) {
    let method = route.headers.iter().any(|h| h.name == ":method");
    let rest = route
        .headers
        .iter()
        .filter(|h| h.name != ":method")
        .collect();
    (method, rest)
}

/// `headerMatchConditionSorter.Less`.
fn header_less(a: &HeaderCond, b: &HeaderCond) -> bool {
    let value_less = |a: &HeaderCond, b: &HeaderCond| match a.value.cmp(&b.value) {
        std::cmp::Ordering::Less => true,
        std::cmp::Ordering::Greater => false,
        std::cmp::Ordering::Equal => a.invert != b.invert && !a.invert,
    };
    match a.name.cmp(&b.name) {
        std::cmp::Ordering::Less => return true,
        std::cmp::Ordering::Greater => return false,
        std::cmp::Ordering::Equal => {}
    }
    use HeaderKind::*;
    match (a.kind, b.kind) {
        (Exact, Exact) | (Regex, Regex) | (Contains, Contains) => value_less(a, b),
        (Exact, _) => true,
        (Regex, Contains | Present) => true,
        (Contains, Present) => true,
        (Present, Present) => a.invert != b.invert && !a.invert,
        _ => false,
    }
}

/// `queryParamMatchConditionSorter.Less`.
fn query_less(a: &QueryCond, b: &QueryCond) -> bool {
    let value_less = |a: &QueryCond, b: &QueryCond| match a.value.cmp(&b.value) {
        std::cmp::Ordering::Less => true,
        std::cmp::Ordering::Greater => false,
        std::cmp::Ordering::Equal => a.ignore_case != b.ignore_case && !a.ignore_case,
    };
    match a.name.cmp(&b.name) {
        std::cmp::Ordering::Less => return true,
        std::cmp::Ordering::Greater => return false,
        std::cmp::Ordering::Equal => {}
    }
    let rank = |k: QueryKind| match k {
        QueryKind::Exact => 0,
        QueryKind::Regex => 1,
        QueryKind::Prefix => 2,
        QueryKind::Suffix => 3,
        QueryKind::Contains => 4,
        QueryKind::Present => 5,
    };
    if a.kind == b.kind {
        a.kind != QueryKind::Present && value_less(a, b)
    } else {
        rank(a.kind) < rank(b.kind)
    }
}

fn text_matches(
    value: &str,
    expected: &str,
    ignore_case: bool,
    test: fn(&str, &str) -> bool,
) -> bool {
    if ignore_case {
        test(&value.to_lowercase(), &expected.to_lowercase())
    } else {
        test(value, expected)
    }
}

/// Envoy's `HeaderMatcher` as Contour configures it.
fn header_matches(h: &HeaderCond, request: &Request) -> bool {
    let value = match h.name.as_str() {
        ":method" => Some(request.method.as_str()),
        ":authority" | "host" => request.host.as_deref(),
        ":path" => Some(request.path.as_str()),
        name => request.headers.get(name),
    };
    let value = match value {
        Some(v) => v,
        // A missing header: only `notpresent` matches, unless an inverted match treats it
        // as empty.
        None if h.missing_as_empty => "",
        None => return h.kind == HeaderKind::Present && h.invert,
    };
    let hit = match h.kind {
        HeaderKind::Present => true,
        HeaderKind::Exact => text_matches(value, &h.value, h.ignore_case, |a, b| a == b),
        HeaderKind::Contains => text_matches(value, &h.value, h.ignore_case, |a, b| a.contains(b)),
        HeaderKind::Regex => full_match(&h.value, value),
    };
    hit != h.invert
}

fn query_matches(q: &QueryCond, request: &Request) -> bool {
    let Some(value) = request.query.get(&q.name) else {
        return false;
    };
    match q.kind {
        QueryKind::Present => true,
        QueryKind::Exact => text_matches(value, &q.value, q.ignore_case, |a, b| a == b),
        QueryKind::Prefix => text_matches(value, &q.value, q.ignore_case, |a, b| a.starts_with(b)),
        QueryKind::Suffix => text_matches(value, &q.value, q.ignore_case, |a, b| a.ends_with(b)),
        QueryKind::Contains => text_matches(value, &q.value, q.ignore_case, |a, b| a.contains(b)),
        QueryKind::Regex => full_match(&q.value, value),
    }
}

/// Envoy's route match: path, then every header and query condition.
fn route_matches(route: &Conditions, request: &Request) -> bool {
    let path_ok = match &route.path {
        PathCond::Prefix(p) => request.path.starts_with(p.as_str()),
        PathCond::Exact(p) => request.path == *p,
        PathCond::Regex(r) => full_match(&format!("^{r}"), &request.path),
    };
    path_ok
        && route.headers.iter().all(|h| header_matches(h, request))
        && route.query.iter().all(|q| query_matches(q, request))
}

fn literals(route: &Conditions) -> Vec<Literal> {
    let mut out = Vec::new();
    match &route.path {
        PathCond::Prefix(p) if p != "/" => out.push((Cond::PathPrefix(p.clone()), true)),
        PathCond::Exact(p) => out.push((Cond::PathExact(p.clone()), true)),
        PathCond::Regex(r) => out.push((Cond::PathRegex(r.clone()), true)),
        _ => {}
    }
    for h in &route.headers {
        let value = match h.kind {
            HeaderKind::Exact => ValueCond::Exact(h.value.clone()),
            HeaderKind::Regex => ValueCond::Regex(h.value.clone()),
            HeaderKind::Contains => ValueCond::Contains(h.value.clone()),
            HeaderKind::Present => ValueCond::Present,
        };
        if h.name == ":method" {
            out.push((Cond::Method(h.value.clone()), !h.invert));
        } else {
            out.push((Cond::Header(h.name.clone(), value), !h.invert));
        }
    }
    for q in &route.query {
        let value = match q.kind {
            QueryKind::Exact => ValueCond::Exact(q.value.clone()),
            QueryKind::Regex => ValueCond::Regex(q.value.clone()),
            QueryKind::Prefix => ValueCond::Prefix(q.value.clone()),
            QueryKind::Suffix => ValueCond::Suffix(q.value.clone()),
            QueryKind::Contains => ValueCond::Contains(q.value.clone()),
            QueryKind::Present => ValueCond::Present,
        };
        out.push((Cond::Query(q.name.clone(), value), true));
    }
    out
}
