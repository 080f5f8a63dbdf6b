//! One HTTP request as the intent check's probes build it, made cheap to copy: the intent
//! check makes thousands of probes per step, each a copy of another with one field changed,
//! so a copy shares every text and name/value list with its original and only the changed
//! field is new.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

pub use smol_str::SmolStr;

/// One HTTP request, as the probes of the intent check build them. Its order (method, host,
/// path, headers, query, cookies, each in turn) is the order the intent check sends probes in.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Request {
    /// `GET`, `POST`, …
    pub method: SmolStr,
    /// The `Host`/`:authority` without port; `None` matches any host-independent route only
    /// where the gateway would (models document what they do with it).
    pub host: Option<SmolStr>,
    /// The path without the query string, starting with `/`.
    pub path: SmolStr,
    /// Header names lower-cased (HTTP header names are case-insensitive); one value each.
    pub headers: NameValues,
    /// Query parameters, one value each.
    pub query: NameValues,
    /// Cookies by name.
    pub cookies: NameValues,
}

impl Request {
    /// A `GET` of `path` with nothing else set.
    pub fn get(path: &str) -> Self {
        Request {
            method: SmolStr::new_static("GET"),
            path: path.into(),
            ..Request::default()
        }
    }

    /// The request as a log line: `GET example.com/static?a=1 with x-canary: 1, cookie c=v`.
    pub fn describe(&self) -> String {
        let mut text = format!("{} ", self.method);
        if let Some(host) = &self.host {
            text.push_str(host);
        }
        text.push_str(&self.path);
        let mut first = true;
        for (name, value) in &self.query {
            text.push(if first { '?' } else { '&' });
            first = false;
            text.push_str(&format!("{name}={value}"));
        }
        let extras: Vec<String> = self
            .headers
            .iter()
            .map(|(n, v)| format!("{n}: {v}"))
            .chain(self.cookies.iter().map(|(n, v)| format!("cookie {n}={v}")))
            .collect();
        if !extras.is_empty() {
            text.push_str(" with ");
            text.push_str(&extras.join(", "));
        }
        text
    }
}

/// The value of the request's header `name` in any case (request header names are held
/// lower-cased).
pub fn header_value<'r>(request: &'r Request, name: &str) -> Option<&'r str> {
    request.headers.get(&ascii_lowercase(name))
}

/// `text` in ASCII lower case, copied only when it has upper-case letters: models compare
/// names and hosts this way for every probe.
pub fn ascii_lowercase(text: &str) -> Cow<'_, str> {
    if text.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(text.to_ascii_lowercase())
    } else {
        Cow::Borrowed(text)
    }
}

/// One name and its value.
pub type Entry = (SmolStr, SmolStr);

/// Names with one value each (a request's headers, query parameters or cookies), in name
/// order, as a map from name to value behaves: it compares, orders and prints as a
/// `BTreeMap<String, String>` with the same entries would. Copies share the entries: a copy
/// costs a count, and changing an entry builds the one new list.
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NameValues(
    /// Sorted by name, names distinct; `None` when empty (never an empty list), so that an
    /// empty one allocates nothing, equal ones are equal as values, and it orders before
    /// any other as an empty map does (lists order entry by entry, as maps do).
    Option<Arc<[Entry]>>,
);

impl NameValues {
    pub fn new() -> Self {
        NameValues(None)
    }

    /// The entries, in name order.
    pub fn entries(&self) -> &[Entry] {
        self.0.as_deref().unwrap_or(&[])
    }

    /// Where `name` is in [`Self::entries`] (`Ok`), or would be inserted (`Err`).
    fn position(&self, name: &str) -> Result<usize, usize> {
        self.entries()
            .binary_search_by(|(held, _)| held.as_str().cmp(name))
    }

    /// The entries before `name` and those after it (its own left out).
    pub fn around(&self, name: &str) -> (&[Entry], &[Entry]) {
        let entries = self.entries();
        match self.position(name) {
            Ok(i) => (&entries[..i], &entries[i + 1..]),
            Err(i) => entries.split_at(i),
        }
    }

    /// The value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        let entries = self.entries();
        self.position(name).ok().map(|i| entries[i].1.as_str())
    }

    pub fn contains_key(&self, name: &str) -> bool {
        self.position(name).is_ok()
    }

    pub fn len(&self) -> usize {
        self.entries().len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// `(name, value)` in name order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&str, &str)> + ExactSizeIterator {
        self.into_iter()
    }

    /// The values, in name order.
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &str> + ExactSizeIterator {
        self.entries().iter().map(|(_, value)| value.as_str())
    }

    /// A copy with `name` set to `value` (`Some`) or absent (`None`); the entries it keeps are
    /// shared texts, so this costs the one new list.
    pub fn with(&self, name: &SmolStr, value: Option<&SmolStr>) -> NameValues {
        let (before, after) = self.around(name);
        let new = value.map(|value| (name.clone(), value.clone()));
        if before.len() + usize::from(new.is_some()) + after.len() == 0 {
            return NameValues(None);
        }
        // Collected straight into the shared list: one allocation.
        NameValues(Some(
            before
                .iter()
                .cloned()
                .chain(new)
                .chain(after.iter().cloned())
                .collect(),
        ))
    }

    /// Sets `name` to `value`.
    pub fn insert(&mut self, name: impl Into<SmolStr>, value: impl Into<SmolStr>) {
        *self = self.with(&name.into(), Some(&value.into()));
    }

    /// Removes `name`, if it is there.
    pub fn remove(&mut self, name: &str) {
        if self.contains_key(name) {
            *self = self.with(&SmolStr::new(name), None);
        }
    }

    pub fn clear(&mut self) {
        self.0 = None;
    }
}

impl fmt::Debug for NameValues {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<'a> IntoIterator for &'a NameValues {
    type Item = (&'a str, &'a str);
    type IntoIter =
        std::iter::Map<std::slice::Iter<'a, Entry>, fn(&'a Entry) -> (&'a str, &'a str)>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries()
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str()))
    }
}

/// Later entries win over earlier ones of the same name, as inserting them in turn would.
impl<N: Into<SmolStr>, V: Into<SmolStr>> FromIterator<(N, V)> for NameValues {
    fn from_iter<I: IntoIterator<Item = (N, V)>>(entries: I) -> Self {
        let mut all = NameValues::new();
        all.extend(entries);
        all
    }
}

impl<N: Into<SmolStr>, V: Into<SmolStr>> Extend<(N, V)> for NameValues {
    fn extend<I: IntoIterator<Item = (N, V)>>(&mut self, entries: I) {
        let new: Vec<Entry> = entries
            .into_iter()
            .map(|(n, v)| (n.into(), v.into()))
            .collect();
        if new.is_empty() {
            return;
        }
        let mut all: Vec<Entry> = self.entries().to_vec();
        all.extend(new);
        // The last of same-named entries wins, as inserting them in turn would.
        crate::value::sort_keeping_last(&mut all);
        *self = NameValues(Some(all.into()));
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// Random edits of a map, in step with a `BTreeMap` doing the same.
    #[test]
    fn name_values_behave_as_a_sorted_map() {
        let names = [
            "b",
            "a",
            "x-canary",
            "a-long-header-name-past-inline-size",
            "c",
        ];
        let values = [
            "1",
            "",
            "true",
            "a value long enough to be kept on the heap",
        ];
        let mut draw = crate::test_draw::Draw(17);
        let mut next = |n: usize| draw.below(n);
        let mut maps: Vec<(NameValues, BTreeMap<String, String>)> =
            vec![(NameValues::new(), BTreeMap::new())];
        for _ in 0..3000 {
            let (mut ours, mut theirs) = maps[next(maps.len())].clone();
            let name = names[next(names.len())];
            match next(4) {
                0 => {
                    ours.remove(name);
                    theirs.remove(name);
                }
                1 => {
                    let more: Vec<(&str, &str)> = (0..next(3))
                        .map(|_| (names[next(names.len())], values[next(values.len())]))
                        .collect();
                    ours.extend(more.iter().copied());
                    theirs.extend(more.iter().map(|(n, v)| (n.to_string(), v.to_string())));
                }
                _ => {
                    let value = values[next(values.len())];
                    ours.insert(name, value);
                    theirs.insert(name.to_owned(), value.to_owned());
                }
            }
            assert!(
                ours.iter()
                    .eq(theirs.iter().map(|(n, v)| (n.as_str(), v.as_str())))
            );
            assert_eq!(ours.len(), theirs.len());
            assert_eq!(ours.is_empty(), theirs.is_empty());
            assert_eq!(ours.get(name), theirs.get(name).map(String::as_str));
            assert_eq!(format!("{ours:?}"), format!("{theirs:?}"));
            maps.push((ours, theirs));
        }
        // Equal and ordered as the maps are.
        for _ in 0..3000 {
            let (a, b) = (&maps[next(maps.len())], &maps[next(maps.len())]);
            assert_eq!(a.0.cmp(&b.0), a.1.cmp(&b.1));
            assert_eq!(a.0 == b.0, a.1 == b.1);
        }
    }

    /// A request as plain owned data, ordered as `Request` was when it held these types.
    type Plain = (
        String,
        Option<String>,
        String,
        BTreeMap<String, String>,
        BTreeMap<String, String>,
        BTreeMap<String, String>,
    );

    fn plain(r: &Request) -> Plain {
        let map = |m: &NameValues| -> BTreeMap<String, String> {
            m.iter()
                .map(|(n, v)| (n.to_owned(), v.to_owned()))
                .collect()
        };
        (
            r.method.to_string(),
            r.host.as_ref().map(SmolStr::to_string),
            r.path.to_string(),
            map(&r.headers),
            map(&r.query),
            map(&r.cookies),
        )
    }

    /// The probes' order (the order findings are reported in) is the order of their fields.
    #[test]
    fn requests_order_and_compare_field_by_field() {
        // Texts past 32 bytes too (compared otherwise), one a prefix of the other.
        let long = "/a/path/long/enough/to/be/compared/by/the/library";
        let texts = [
            "",
            "GET",
            "POST",
            "/",
            "/a",
            long,
            "a.example.com",
            "x",
            &long[..40],
        ];
        let mut draw = crate::test_draw::Draw(5);
        let mut next = |n: usize| draw.below(n);
        let mut requests: Vec<Request> = Vec::new();
        for _ in 0..400 {
            let mut r = Request::get(texts[3 + next(3)]);
            if next(3) == 0 {
                r.method = texts[next(3)].into();
            }
            if next(2) == 0 {
                r.host = Some(texts[6 + next(3)].into());
            }
            for map in [&mut r.headers, &mut r.query, &mut r.cookies] {
                for _ in 0..next(3) {
                    map.insert(texts[7 + next(2)], texts[next(texts.len())]);
                }
            }
            // Sometimes a copy sharing the lists of an earlier request.
            if !requests.is_empty() && next(4) == 0 {
                r.headers = requests[next(requests.len())].headers.clone();
            }
            requests.push(r);
        }
        for a in &requests {
            for b in requests.iter().step_by(7) {
                assert_eq!(a.cmp(b), plain(a).cmp(&plain(b)), "{a:?} {b:?}");
                assert_eq!(a == b, plain(a) == plain(b));
            }
        }
    }

    #[test]
    fn a_copy_with_one_change_is_the_map_with_that_change() {
        let base: NameValues = [("b", "2"), ("a", "1"), ("b", "3")].into_iter().collect();
        assert_eq!(format!("{base:?}"), r#"{"a": "1", "b": "3"}"#);
        let set = base.with(&"c".into(), Some(&"4".into()));
        assert_eq!(format!("{set:?}"), r#"{"a": "1", "b": "3", "c": "4"}"#);
        let removed = set.with(&"a".into(), None);
        assert_eq!(format!("{removed:?}"), r#"{"b": "3", "c": "4"}"#);
        let emptied = NameValues::from_iter([("a", "1")]).with(&"a".into(), None);
        assert_eq!(emptied, NameValues::new());
        assert!(emptied.is_empty());
    }
}
