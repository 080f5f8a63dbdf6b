//! Tests of the minimal rewrite: one per reported defect, and a property test over generated
//! case files (longer runs: `PROPTEST_CASES=20000 cargo test -p kruise-lua yaml_edit`).

use super::*;
use proptest::prelude::*;

fn json(text: &str) -> JsonValue {
    JsonValue::parse_go_interface(text.as_bytes()).unwrap()
}

fn rewrite(text: &str, index: usize, target: &str) -> Result<String, String> {
    let edits = rewrite_expected(text, &[(index, json(target))])?;
    Ok(apply_edits(text, edits))
}

#[test]
fn one_changed_value_changes_one_line_and_keeps_the_key_order() {
    let text = "expected:\n- kind: Route\n  apiVersion: x/v1\n  spec:\n    weight: 50\n    host: a\n  metadata:\n    name: r\n";
    let new = rewrite(
        text,
        0,
        r#"{"apiVersion":"x/v1","kind":"Route","metadata":{"name":"r"},"spec":{"host":"a","weight":51}}"#,
    )
    .unwrap();
    assert_eq!(new, text.replace("weight: 50", "weight: 51"));
}

#[test]
fn an_anchored_entry_keeps_its_anchor() {
    let text = "expected:\n- &e0\n  a: 1\n  b: 2\n- c: 3\n";
    let new = rewrite(text, 0, r#"{"a":1,"b":5}"#).unwrap();
    assert_eq!(new, "expected:\n- &e0\n  a: 1\n  b: 5\n- c: 3\n");
    // Replaced whole (a scalar where a map was), the anchor stays too.
    let new = rewrite(text, 0, r#""x""#).unwrap();
    assert_eq!(new, "expected:\n- &e0 x\n- c: 3\n");
}

#[test]
fn an_anchor_another_entry_repeats_is_refused() {
    let text = "expected:\n- &e0\n  a: 1\n- *e0\n";
    let err = rewrite(text, 0, r#"{"a":2}"#).unwrap_err();
    assert!(err.contains("`*e0` at line 4"), "{err}");
    // Rewriting both: the alias is written out and the anchor kept.
    let edits =
        rewrite_expected(text, &[(0, json(r#"{"a":2}"#)), (1, json(r#"{"a":3}"#))]).unwrap();
    let new = apply_edits(text, edits);
    assert_eq!(new, "expected:\n- &e0\n  a: 2\n- a: 3\n");
    // Removing a key whose value carries an anchor repeated elsewhere would leave the alias
    // dangling.
    let err = rewrite(
        "expected:\n- a: 1\n  b: &k {w: 1}\nafter: *k\n",
        0,
        r#"{"a":1}"#,
    )
    .unwrap_err();
    assert!(err.contains("`*k` at line 4"), "{err}");
    // Only the alias: the anchored entry is untouched.
    assert_eq!(
        rewrite(text, 1, r#"{"a":3}"#).unwrap(),
        "expected:\n- &e0\n  a: 1\n- a: 3\n"
    );
}

#[test]
fn a_flow_entry_keeps_its_comment() {
    let text = "expected:\n  - {kind: R, spec: {weight: 1}} # the canary\n  - {kind: R}\n";
    let new = rewrite(text, 0, r#"{"kind":"R","spec":{"weight":20,"x":"50"}}"#).unwrap();
    assert_eq!(
        new,
        "expected:\n  - {kind: R, spec: {weight: 20, x: \"50\"}} # the canary\n  - {kind: R}\n"
    );
}

#[test]
fn crlf_files_get_crlf() {
    let text = "expected:\r\n- kind: R\r\n  spec:\r\n    weight: 1\r\n";
    let new = rewrite(
        text,
        0,
        r#"{"kind":"R","metadata":{"labels":{"a":"b"}},"spec":{"weight":1,"w":[1,2]}}"#,
    )
    .unwrap();
    assert_eq!(
        new,
        "expected:\r\n- kind: R\r\n  spec:\r\n    weight: 1\r\n    w:\r\n    - 1\r\n    - 2\r\n  metadata:\r\n    labels:\r\n      a: b\r\n"
    );
}

#[test]
fn keys_and_items_come_and_go_in_place() {
    let text =
        "expected:\n- a: 1 # one\n  b: 2\n  # about c\n  c: [1, 2, 3]\n  d:\n  - x\n  - y\n  - z\n";
    let new = rewrite(text, 0, r#"{"b":2,"c":[1],"d":["x","q"]}"#).unwrap();
    assert_eq!(
        new,
        "expected:\n- b: 2\n  # about c\n  c: [1]\n  d:\n  - x\n  - q\n"
    );
    let new = rewrite(text, 0, r#"{"a":1,"b":{"k":"v"},"c":[1,2,3,4],"d":"s"}"#).unwrap();
    assert_eq!(
        new,
        "expected:\n- a: 1 # one\n  b:\n    k: v\n  # about c\n  c: [1, 2, 3, 4]\n  d: s\n"
    );
}

#[test]
fn block_scalars_tags_and_aliases_from_elsewhere() {
    let text = "base: &b {w: 1}\nexpected:\n- s: |\n    line\n  t: !!str 12\n  u: *b\n  v: *b\n";
    let new = rewrite(text, 0, r#"{"s":"other","t":"13","u":{"w":2},"v":{"w":1}}"#).unwrap();
    assert_eq!(
        new,
        "base: &b {w: 1}\nexpected:\n- s: other\n  t: \"13\"\n  u:\n    w: 2\n  v: *b\n"
    );
}

/// A map with a `<<` merge is edited around the merge: only the value that differs changes,
/// a merged key whose value must change is written out, and the merge line stays.
#[test]
fn maps_with_merge_keys_change_only_what_differs() {
    let text = "original:\n  spec: &base\n    canary: 0\n    keep: anchored\nexpected:\n- spec:\n    <<: *base\n    canary: 51\n    note: x\n";
    let new = rewrite(
        text,
        0,
        r#"{"spec":{"canary":50,"keep":"anchored","note":"x"}}"#,
    )
    .unwrap();
    assert_eq!(new, text.replace("canary: 51", "canary: 50"));
    let new = rewrite(
        text,
        0,
        r#"{"spec":{"canary":51,"keep":"moved","note":"x"}}"#,
    )
    .unwrap();
    assert_eq!(new, text.replace("note: x", "note: x\n    keep: moved"));
    // A written entry removed before or after the merge leaves the merge line, in block and
    // flow style.
    let block = "base: &b {w: 1}\nexpected:\n- a: 1\n  <<: *b\n  c: 2\n";
    let new = rewrite(block, 0, r#"{"w":1,"c":2}"#).unwrap();
    assert_eq!(new, "base: &b {w: 1}\nexpected:\n- <<: *b\n  c: 2\n");
    let flow = "base: &b {w: 1}\nexpected:\n- {x: 1, <<: *b, z: 2}\n";
    let new = rewrite(flow, 0, r#"{"w":1,"z":2}"#).unwrap();
    assert_eq!(new, "base: &b {w: 1}\nexpected:\n- {<<: *b, z: 2}\n");
    // A merged key to drop cannot be edited away: the entry is written anew.
    let new = rewrite(text, 0, r#"{"spec":{"canary":51,"note":"x"}}"#).unwrap();
    assert!(!new.contains("<<"), "{new}");
    // Dropping the written `canary` would uncover the merged 0: written anew too.
    let new = rewrite(text, 0, r#"{"spec":{"keep":"anchored","note":"x"}}"#).unwrap();
    let doc = parse_first_document(&new).unwrap().unwrap();
    assert_eq!(
        doc.get("expected").unwrap().to_json().to_canonical_json(),
        r#"[{"spec":{"keep":"anchored","note":"x"}}]"#
    );
}

// ---------------------------------------------------------------------------------------------
// The property: for generated case files and outputs, the rewritten file parses, its
// `expected[i]` is the output, and no byte outside the entry's lines changed.

/// A generated YAML node with its style.
#[derive(Debug, Clone)]
enum Gen {
    Scalar(JsonValue, Quote),
    Map(Vec<(String, Gen)>, Style),
    Seq(Vec<Gen>, Style),
    /// `*base`, the root's anchored `{w: 1}`.
    Alias,
    /// The value of a `<<` key (the map's entry `"<<"`).
    Merge(Merge),
}

/// What a `<<` merges: the root's anchored maps, one of which merges another.
#[derive(Debug, Clone, Copy)]
enum Merge {
    /// `*base`: `{w: 1}`.
    Base,
    /// `*more`: `{<<: *base, v: 2}`, a merge of a merge.
    More,
    /// `[*more, *other]`: a list of merges (`other` is `{u: 3}`).
    List,
}

impl Merge {
    fn text(self) -> &'static str {
        match self {
            Merge::Base => "*base",
            Merge::More => "*more",
            Merge::List => "[*more, *other]",
        }
    }

    /// The keys it gives.
    fn keys(self) -> &'static [&'static str] {
        match self {
            Merge::Base => &["w"],
            Merge::More => &["w", "v"],
            Merge::List => &["w", "v", "u"],
        }
    }
}

fn merge() -> impl Strategy<Value = Merge> {
    prop::sample::select(vec![Merge::Base, Merge::More, Merge::List])
}

/// `entries` with a `<<` merge at `at` (0: first), when there is one.
fn with_merge(mut entries: Vec<(String, Gen)>, merge: Option<(Merge, u8)>) -> Vec<(String, Gen)> {
    if let Some((merge, at)) = merge {
        let at = usize::from(at) % (entries.len() + 1);
        entries.insert(at, ("<<".into(), Gen::Merge(merge)));
    }
    entries
}

#[derive(Debug, Clone, Copy)]
enum Quote {
    Plain,
    Single,
    Double,
    /// `|-` block scalar (in block context; double-quoted in flow context).
    Literal,
    /// `>` block scalar (as `Literal`; its value ends with a line break).
    Folded,
}

#[derive(Debug, Clone, Copy)]
struct Style {
    flow: bool,
    anchor: bool,
    comment: bool,
}

const KEYS: &[&str] = &["a", "b", "kind", "spec", "weight", "x y", "on", "10"];

fn scalar() -> impl Strategy<Value = Gen> {
    let value = prop_oneof![
        (-3i64..100).prop_map(JsonValue::Int),
        prop::sample::select(vec!["web", "50%", "yes", "", "a: b", "x#y", "é"])
            .prop_map(|s| JsonValue::String(s.to_string())),
        any::<bool>().prop_map(JsonValue::Bool),
        Just(JsonValue::Null),
    ];
    let quote = prop::sample::select(vec![
        Quote::Plain,
        Quote::Single,
        Quote::Double,
        Quote::Literal,
        Quote::Folded,
    ]);
    (value, quote).prop_map(|(v, q)| Gen::Scalar(v, q))
}

fn style() -> impl Strategy<Value = Style> {
    (any::<bool>(), prop::bool::weighted(0.2), any::<bool>()).prop_map(|(flow, anchor, comment)| {
        Style {
            flow,
            anchor,
            comment,
        }
    })
}

fn node() -> impl Strategy<Value = Gen> {
    let leaf = prop_oneof![8 => scalar(), 1 => Just(Gen::Alias)];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            (
                prop::collection::btree_map(prop::sample::select(KEYS), inner.clone(), 1..4),
                style(),
                prop::option::weighted(0.2, (merge(), any::<u8>())),
            )
                .prop_map(|(m, s, merge)| Gen::Map(
                    with_merge(
                        m.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
                        merge
                    ),
                    s
                )),
            (prop::collection::vec(inner, 1..4), style()).prop_map(|(v, s)| Gen::Seq(v, s)),
        ]
    })
}

/// An entry: a non-empty map whose keys come in a shuffled order, a `<<` merge among them
/// (first, last, or alone) in about a third of them.
fn entry() -> impl Strategy<Value = Gen> {
    (
        prop::collection::vec((prop::sample::select(KEYS), node()), 0..5),
        style(),
        prop::option::weighted(0.35, (merge(), any::<u8>())),
        merge(),
    )
        .prop_map(|(mut entries, style, merged, fallback)| {
            let mut seen = std::collections::HashSet::new();
            entries.retain(|(k, _)| seen.insert(*k));
            let entries = entries
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect::<Vec<_>>();
            // No key: the entry is one merge.
            let merged = match merged {
                None if entries.is_empty() => Some((fallback, 0)),
                other => other,
            };
            Gen::Map(with_merge(entries, merged), style)
        })
}

struct Emitter {
    out: String,
    eol: &'static str,
    step: usize,
    anchors: usize,
}

impl Emitter {
    fn scalar(&self, value: &JsonValue, quote: Quote) -> String {
        let text = match value {
            JsonValue::String(s) => s.clone(),
            other => other.to_canonical_json(),
        };
        let plain_ok = matches!(value, JsonValue::String(s) if !s.is_empty() && !s.contains([':', '#', '%']) && s != "yes")
            || !matches!(value, JsonValue::String(_));
        match quote {
            Quote::Single if matches!(value, JsonValue::String(_)) => format!("'{text}'"),
            Quote::Double | Quote::Literal | Quote::Folded
                if matches!(value, JsonValue::String(_)) =>
            {
                format!("\"{text}\"")
            }
            _ if plain_ok => text,
            _ => format!("\"{text}\""),
        }
    }

    fn key(&self, key: &str) -> String {
        if key == "<<" || key.chars().all(|c| c.is_ascii_alphabetic()) && key != "on" {
            key.to_string()
        } else {
            format!("\"{key}\"")
        }
    }

    fn anchor(&mut self, style: &Style) -> String {
        if style.anchor {
            self.anchors += 1;
            format!("&g{} ", self.anchors)
        } else {
            String::new()
        }
    }

    fn flow(&mut self, node: &Gen) -> String {
        match node {
            Gen::Scalar(v, q) => self.scalar(v, *q),
            Gen::Alias => "*base".into(),
            Gen::Merge(merge) => merge.text().into(),
            Gen::Map(entries, style) => {
                let anchor = self.anchor(style);
                let body: Vec<String> = entries
                    .iter()
                    .map(|(k, v)| format!("{}: {}", self.key(k), self.flow(v)))
                    .collect();
                format!("{anchor}{{{}}}", body.join(", "))
            }
            Gen::Seq(items, style) => {
                let anchor = self.anchor(style);
                let body: Vec<String> = items.iter().map(|v| self.flow(v)).collect();
                format!("{anchor}[{}]", body.join(", "))
            }
        }
    }

    fn newline(&mut self, column: usize) {
        self.out.push_str(self.eol);
        self.out.push_str(&" ".repeat(column));
    }

    /// Writes `node` where the cursor is: after `key:` (`column` = the key's) or after `- `
    /// (`column` = where the item's content starts).
    fn block(&mut self, node: &Gen, column: usize, after_key: bool) {
        let style = match node {
            Gen::Map(_, s) | Gen::Seq(_, s) => *s,
            Gen::Scalar(JsonValue::String(text), quote @ (Quote::Literal | Quote::Folded))
                if !text.is_empty() =>
            {
                let indicator = if matches!(quote, Quote::Literal) {
                    "|-"
                } else {
                    ">"
                };
                self.out
                    .push_str(&format!("{}{indicator}", if after_key { " " } else { "" }));
                let inner = if after_key {
                    column + self.step
                } else {
                    column
                };
                self.newline(inner);
                self.out.push_str(text);
                return;
            }
            other => {
                let text = self.flow(other);
                self.out
                    .push_str(&format!("{}{text}", if after_key { " " } else { "" }));
                return;
            }
        };
        if style.flow {
            let text = self.flow(node);
            self.out
                .push_str(&format!("{}{text}", if after_key { " " } else { "" }));
            if style.comment {
                self.out.push_str(" # flow");
            }
            return;
        }
        let anchor = self.anchor(&style);
        let inner = if after_key {
            column + self.step
        } else {
            column
        };
        if after_key || !anchor.is_empty() {
            if !anchor.is_empty() {
                self.out.push_str(&format!(
                    "{}{}",
                    if after_key { " " } else { "" },
                    anchor.trim_end()
                ));
            }
            self.newline(inner);
        }
        match node {
            Gen::Map(entries, _) => {
                for (n, (k, v)) in entries.iter().enumerate() {
                    if n > 0 {
                        if style.comment && n == 1 {
                            self.out.push_str(" # note");
                            self.newline(inner);
                            self.out.push_str("# between");
                        }
                        self.newline(inner);
                    }
                    self.out.push_str(&format!("{}:", self.key(k)));
                    self.block(v, inner, true);
                }
            }
            Gen::Seq(items, _) => {
                for (n, item) in items.iter().enumerate() {
                    if n > 0 {
                        self.newline(inner);
                    }
                    self.out.push_str("- ");
                    self.block(item, inner + 2, false);
                }
            }
            _ => unreachable!(),
        }
    }
}

/// A case file with `entries` under `expected` (a block list indented by `list_indent`, or a
/// flow list), nested blocks indented by `step`; with `alias_tail`, a later key repeats every
/// anchor.
fn emit(
    entries: &[Gen],
    crlf: bool,
    list_indent: usize,
    step: usize,
    flow_list: bool,
    alias_tail: bool,
) -> String {
    let mut e = Emitter {
        out: String::new(),
        eol: if crlf { "\r\n" } else { "\n" },
        step,
        anchors: 0,
    };
    e.out.push_str("# a case");
    e.newline(0);
    e.out.push_str("base: &base {w: 1}");
    e.newline(0);
    e.out.push_str("more: &more {<<: *base, v: 2}");
    e.newline(0);
    e.out.push_str("other: &other {u: 3}");
    e.newline(0);
    e.out.push_str("expected:");
    if flow_list {
        let items: Vec<String> = entries.iter().map(|g| e.flow(g)).collect();
        e.out.push_str(&format!(" [{}]", items.join(", ")));
    } else {
        for entry in entries {
            e.newline(list_indent);
            e.out.push_str("# entry");
            e.newline(list_indent);
            e.out.push_str("- ");
            e.block(entry, list_indent + 2, false);
        }
    }
    if alias_tail && e.anchors > 0 {
        // Nodes after the list that repeat the entries' anchors.
        let aliases: Vec<String> = (1..=e.anchors).map(|n| format!("*g{n}")).collect();
        e.newline(0);
        e.out
            .push_str(&format!("repeats: [{}]", aliases.join(", ")));
    }
    e.newline(0);
    e.out.push_str("# the end");
    e.out.push_str(e.eol);
    e.out
}

/// A changed copy of `value`: scalars changed, keys and items added and removed, at random.
fn mutate(value: &JsonValue, rng: &mut u64) -> JsonValue {
    // xorshift64: the mutation follows from proptest's seed.
    fn next(rng: &mut u64, n: u64) -> u64 {
        *rng ^= *rng << 13;
        *rng ^= *rng >> 7;
        *rng ^= *rng << 17;
        *rng % n
    }
    match value {
        JsonValue::Object(map) => {
            let mut out = kruise_lua_engine::value::JsonMap::new();
            for (k, v) in map {
                match next(rng, 6) {
                    0 => {}
                    1 => {
                        out.insert(k.clone(), JsonValue::Int(next(rng, 1000) as i64));
                    }
                    _ => {
                        out.insert(k.clone(), mutate(v, rng));
                    }
                }
            }
            if next(rng, 3) == 0 {
                out.insert(
                    format!("new{}", next(rng, 3)),
                    json(r#"{"p":[1,"two",{"q":null}]}"#),
                );
            }
            JsonValue::Object(out)
        }
        JsonValue::Array(items) => {
            let mut out: Vec<JsonValue> = items.iter().map(|v| mutate(v, rng)).collect();
            match next(rng, 4) {
                0 => out.truncate(next(rng, out.len() as u64 + 1) as usize),
                1 => out.push(JsonValue::String("added".into())),
                _ => {}
            }
            JsonValue::Array(out)
        }
        scalar => match next(rng, 6) {
            0 => JsonValue::String("changed: yes".into()),
            1 => JsonValue::Float(2.5),
            // Lines, which a block scalar may hold.
            2 => JsonValue::String("two\nlines".into()),
            3 => JsonValue::String("a\n\nb c\n".into()),
            _ => scalar.clone(),
        },
    }
}

fn line_end(text: &str, at: usize) -> usize {
    text[at..].find(['\r', '\n']).map_or(text.len(), |i| at + i)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn rewriting_changes_only_the_entry(
        entries in prop::collection::vec(entry(), 1..4),
        crlf in any::<bool>(),
        list_indent in prop::sample::select(vec![0usize, 2]),
        step in prop::sample::select(vec![2usize, 4]),
        flow_list in prop::bool::weighted(0.15),
        alias_tail in prop::bool::weighted(0.3),
        pick in any::<prop::sample::Index>(),
        seed in 1u64..u64::MAX,
    ) {
        let text = emit(&entries, crlf, list_indent, step, flow_list, alias_tail);
        let doc = parse_first_document(&text)
            .map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?
            .unwrap();
        let list = doc.get("expected").unwrap();
        let YamlValue::Seq(items) = &list.value else { panic!("{text}") };
        let index = pick.index(items.len());
        let entry = &items[index];
        let mut rng = seed;
        let target = mutate(&entry.to_json(), &mut rng);
        let rewritten = rewrite_expected(&text, &[(index, target.clone())]);
        if let Err(e) = &rewritten
            && alias_tail
            && text.contains("repeats: [")
        {
            // Refused only because a repeated anchor would change.
            prop_assert!(e.contains("is repeated by the alias `*g"), "{}\n{}", e, text);
            return Ok(());
        }
        let edits = rewritten.map_err(|e| {
            let unverified = plan(&text, &[(index, target.clone())], false)
                .map(|(_, edits)| apply_edits(&text, edits));
            TestCaseError::fail(format!("{e}\n{text}\n--- to {} ---\n{unverified:?}", target.to_canonical_json()))
        })?;
        let new = apply_edits(&text, edits);
        let reread = parse_first_document(&new)
            .map_err(|e| TestCaseError::fail(format!("{e}\n{new}")))?
            .unwrap();
        let YamlValue::Seq(new_items) = &reread.get("expected").unwrap().value else {
            panic!("{new}")
        };
        prop_assert_eq!(new_items.len(), items.len());
        prop_assert_eq!(
            new_items[index].to_json().to_canonical_json(),
            target.to_canonical_json(),
            "{}\n---\n{}", text, new
        );
        // Every byte outside the entry's lines is the same. (Its extent as written: the
        // reader's span of a map leaves out a last `<<` line, which gives no entry of its own.)
        let (written_start, written_end) = entry_extent(&text, index);
        let start = entry.span.start.offset.min(written_start);
        let end = line_end(&text, entry.span.end.offset.max(written_end).max(start));
        prop_assert_eq!(&new[..start], &text[..start]);
        let tail = &text[end..];
        prop_assert!(new.ends_with(tail), "{}\n---\n{}", text, new);
        prop_assert!(new.len() >= start + tail.len());
        if crlf {
            prop_assert!(!new.replace("\r\n", "").contains('\n'), "{:?}", new);
        }
        // An entry's merge stays unless a key it gives must go.
        if let Gen::Map(written, _) = &entries[index]
            && let Some(merge) = written.iter().find_map(|(_, v)| match v {
                Gen::Merge(m) => Some(*m),
                _ => None,
            })
            && let JsonValue::Object(wanted) = &target
            && merge.keys().iter().all(|k| wanted.contains_key(k))
        {
            prop_assert_eq!(
                entry_merges(&new, index),
                vec![merge.text().to_string()],
                "{}\n---\n{}", text, new
            );
        }
    }
}

/// `f` of the layout of `expected[index]` as written.
fn with_entry<T>(text: &str, index: usize, f: impl FnOnce(&Layout) -> T) -> T {
    let scan = scan(text).unwrap();
    let doc = parse_first_document(text).unwrap().unwrap();
    let (list, _) = expected_sequence(&scan.root, &doc).unwrap();
    let Kind::Seq { items, .. } = &list.kind else {
        panic!("{text}")
    };
    f(&items[index])
}

/// Where `expected[index]` starts and ends as written.
fn entry_extent(text: &str, index: usize) -> (usize, usize) {
    with_entry(text, index, |entry| (entry.start, entry.end))
}

/// The value texts of the `<<` merges of the map `expected[index]`.
fn entry_merges(text: &str, index: usize) -> Vec<String> {
    with_entry(text, index, |entry| match &entry.kind {
        Kind::Map { entries, .. } => entries
            .iter()
            .filter(|(k, _)| is_merge_key(k))
            .map(|(_, v)| text[v.start..v.end].to_string())
            .collect(),
        _ => Vec::new(),
    })
}

#[test]
fn unusual_layouts_are_edited_in_place() {
    let cases = [
        (
            "expected:\n- ? a\n  : 1\n  b: 2\n",
            r#"{"a":1,"b":3,"c":4}"#,
            "expected:\n- ? a\n  : 1\n  b: 3\n  c: 4\n",
        ),
        (
            "expected:\n- - a\n  - b\n",
            r#"["b"]"#,
            "expected:\n- - b\n",
        ),
        (
            "expected:\n- a:\n  b: 2\n",
            r#"{"a":{"k":[1,2]},"b":2}"#,
            "expected:\n- a:\n    k:\n    - 1\n    - 2\n  b: 2\n",
        ),
        (
            "expected:\n-\n  a: 1\n",
            r#"{"a":2,"z":1}"#,
            "expected:\n-\n  a: 2\n  z: 1\n",
        ),
        (
            "expected:\n- {a: 1,\n   b: 2}\n",
            r#"{"b":2,"c":[]}"#,
            "expected:\n- {b: 2, c: []}\n",
        ),
        (
            "expected:\n- a: >\n    folded\n    text\n\n  b: 1\n",
            r#"{"a":"x","b":1}"#,
            "expected:\n- a: x\n\n  b: 1\n",
        ),
        (
            "expected:\n- a: 1\n---\nother: doc\n",
            r#"{"a":2}"#,
            "expected:\n- a: 2\n---\nother: doc\n",
        ),
    ];
    for (text, target, want) in cases {
        assert_eq!(rewrite(text, 0, target).as_deref(), Ok(want), "{text:?}");
    }
    // An anchor inside the entry that the entry itself repeats.
    let err = rewrite("expected:\n- a: &x 1\n  b: *x\n", 0, r#"{"a":2,"b":1}"#).unwrap_err();
    assert!(err.contains("`*x` at line 3"), "{err}");
}

#[test]
fn the_fallback_writes_the_entry_anew_keeping_its_anchor() {
    let text = "expected:\n- &e0 # first\n  b: 2\n  a: 1\n- x: 1\n";
    let target = json(r#"{"a":1,"b":3}"#);
    let (_, edits) = plan(text, &[(0, target)], true).unwrap();
    assert_eq!(
        apply_edits(text, edits),
        "expected:\n- &e0\n  a: 1\n  b: 3\n- x: 1\n"
    );
}

/// QA: maps made only of merges (a sequence item whose first key is `<<`, a whole entry that
/// is one merge), nested merges, merges of merges and `<<: [*a, *b]` lists keep their merge
/// lines; only the keys whose values differ from the merged ones are written below them.
#[test]
fn merge_only_maps_keep_the_merge_and_add_what_differs() {
    let anchors = "a: &a {port: 80, service: web}\nb: &b {<<: *a, zone: x}\nc: &c {tier: 1}\n";
    let cases = [
        // A sequence item that is one merge, a key added.
        (
            "expected:\n- <<: *a\n",
            r#"{"port":80,"service":"web","weight":80}"#,
            "expected:\n- <<: *a\n  weight: 80\n",
        ),
        // A merged key whose value changes is written out below the merge.
        (
            "expected:\n- <<: *a\n",
            r#"{"port":81,"service":"web"}"#,
            "expected:\n- <<: *a\n  port: 81\n",
        ),
        // The first key of an item is the merge, a written key follows.
        (
            "expected:\n- <<: *a\n  weight: 1\n",
            r#"{"port":80,"service":"web","weight":2}"#,
            "expected:\n- <<: *a\n  weight: 2\n",
        ),
        // Nested: a merge-only map inside a merge-only entry's written key.
        (
            "expected:\n- <<: *c\n  spec:\n    <<: *a\n",
            r#"{"tier":1,"spec":{"port":80,"service":"web","weight":5}}"#,
            "expected:\n- <<: *c\n  spec:\n    <<: *a\n    weight: 5\n",
        ),
        // A merge of a map that itself merges.
        (
            "expected:\n- <<: *b\n",
            r#"{"port":80,"service":"web","zone":"q"}"#,
            "expected:\n- <<: *b\n  zone: q\n",
        ),
        // A list of merges.
        (
            "expected:\n- <<: [*a, *c]\n",
            r#"{"port":80,"service":"web","tier":2}"#,
            "expected:\n- <<: [*a, *c]\n  tier: 2\n",
        ),
        // Flow style.
        (
            "expected:\n- {<<: *a}\n",
            r#"{"port":80,"service":"web","weight":80}"#,
            "expected:\n- {<<: *a, weight: 80}\n",
        ),
        // Deeper in the entry.
        (
            "expected:\n- spec:\n    backends:\n    - <<: *a\n",
            r#"{"spec":{"backends":[{"port":80,"service":"web","weight":80}]}}"#,
            "expected:\n- spec:\n    backends:\n    - <<: *a\n      weight: 80\n",
        ),
    ];
    for (entry, target, want) in cases {
        let text = format!("{anchors}{entry}");
        assert_eq!(
            rewrite(&text, 0, target).as_deref(),
            Ok(format!("{anchors}{want}").as_str()),
            "{entry:?}"
        );
    }
    // A whole entry that is one merge of the case's `original`: only the part that differs
    // is written out below it.
    let text = "original: &orig\n  kind: R\n  spec:\n    weight: 0\nexpected:\n- <<: *orig\n";
    assert_eq!(
        rewrite(text, 0, r#"{"kind":"R","spec":{"weight":80}}"#).as_deref(),
        Ok(
            "original: &orig\n  kind: R\n  spec:\n    weight: 0\nexpected:\n- <<: *orig\n  spec:\n    weight: 80\n"
        )
    );
    // A merged key to drop still makes the map written anew.
    let text = format!("{anchors}expected:\n- <<: *a\n");
    let new = rewrite(&text, 0, r#"{"port":80}"#).unwrap();
    assert_eq!(new, format!("{anchors}expected:\n- port: 80\n"));
}

/// QA: a changed block scalar keeps its style (indicator, chomping, indentation, the comment
/// on its header line) when the new value can be written in it; else it is quoted.
#[test]
fn block_scalars_keep_their_style() {
    let cases = [
        // Literal, clip: the changed line only.
        (
            "expected:\n- s: |  # lines\n    line1\n    line2\n  t: 1\n",
            r#"{"s":"line1\nline2 changed\n","t":1}"#,
            "expected:\n- s: |  # lines\n    line1\n    line2 changed\n  t: 1\n",
        ),
        // Literal, strip, deeper indentation, lines added and an empty one.
        (
            "expected:\n- s: |-\n      a\n  t: 1\n",
            r#"{"s":"a\n\nb  c","t":1}"#,
            "expected:\n- s: |-\n      a\n\n      b  c\n  t: 1\n",
        ),
        // Folded: a line break is written as an empty line.
        (
            "expected:\n- s: >\n    some\n    words\n",
            r#"{"s":"other words\nnext\n"}"#,
            "expected:\n- s: >\n    other words\n\n    next\n",
        ),
        // A sequence item, with an anchor and a tag.
        (
            "expected:\n- - &x !!str |-\n    one\n",
            r#"["two"]"#,
            "expected:\n- - &x !!str |-\n    two\n",
        ),
        // A value the style cannot hold is quoted: clip needs one final line break.
        (
            "expected:\n- s: |\n    a\n",
            r#"{"s":"flat"}"#,
            "expected:\n- s: flat\n",
        ),
        // Written anew, it keeps its anchor (its tag was for the old value).
        (
            "expected:\n- s: &x !!str |\n    a\n",
            r#"{"s":"flat"}"#,
            "expected:\n- s: &x flat\n",
        ),
        // Strip cannot end with one.
        (
            "expected:\n- s: |-\n    a\n",
            r#"{"s":"a\n"}"#,
            "expected:\n- s: \"a\\n\"\n",
        ),
        // A first line starting with spaces needs an indentation indicator: the one for the
        // indentation written (4, under a key at 2) is added.
        (
            "expected:\n- s: |-\n    a\n",
            r#"{"s":"  a"}"#,
            "expected:\n- s: |2-\n      a\n",
        ),
    ];
    for (text, target, want) in cases {
        assert_eq!(rewrite(text, 0, target).as_deref(), Ok(want), "{text:?}");
    }
}

/// Keep chomping (`+`) and indentation indicators (`|2`): the block keeps its header and
/// indentation, its final line breaks written as the empty lines keep reads (YAML 1.2 §8.1.1),
/// and what follows it stays.
#[test]
fn keep_chomping_and_indentation_indicators_keep_the_block() {
    let cases = [
        // `|+` before another key: the empty lines after it are the value's final breaks.
        (
            "expected:\n- s: |+  # kept\n    a\n\n  t: 1\n",
            r#"{"s":"b\n\n\n","t":1}"#,
            "expected:\n- s: |+  # kept\n    b\n\n\n  t: 1\n",
        ),
        // The same count of final breaks: only the content line changes.
        (
            "expected:\n- s: |+\n    a\n\n  t: 1\n",
            r#"{"s":"a\nb\n\n","t":1}"#,
            "expected:\n- s: |+\n    a\n    b\n\n  t: 1\n",
        ),
        // Fewer, before a comment line that ends the block (and stays).
        (
            "expected:\n- s: |+\n    a\n\n\n# next\n  t: 1\n",
            r#"{"s":"a\n","t":1}"#,
            "expected:\n- s: |+\n    a\n# next\n  t: 1\n",
        ),
        // `|+` at the end of the file: the file ends with the value's final breaks.
        (
            "expected:\n- s: |+\n    a\n",
            r#"{"s":"a\nb\n\n"}"#,
            "expected:\n- s: |+\n    a\n    b\n\n",
        ),
        // `>+`: folded, a line break written as an empty line, at the end of the file.
        (
            "expected:\n- s: >+\n    a\n\n",
            r#"{"s":"x y\nz\n"}"#,
            "expected:\n- s: >+\n    x y\n\n    z\n",
        ),
        // `|2` under a key at column 2: content at column 4, a first line starting with spaces.
        (
            "expected:\n- s: |2\n      a\n  t: 1\n",
            r#"{"s":"   b\nc\n","t":1}"#,
            "expected:\n- s: |2\n       b\n    c\n  t: 1\n",
        ),
        // `|-2` as a sequence item: counted from the `-` at column 0.
        (
            "expected:\n- |-2\n    x\n",
            r#"" y\nz""#,
            "expected:\n- |-2\n   y\n  z\n",
        ),
        // `|+2` with a comment, its trailing empty line dropped for a value with one break.
        (
            "expected:\n- s: |+2 # kept\n     a\n\n  t: 1\n",
            r#"{"s":" b\n","t":1}"#,
            "expected:\n- s: |+2 # kept\n     b\n  t: 1\n",
        ),
        // A sequence item without an indicator gets the one for its indentation.
        (
            "expected:\n- |\n  a\n",
            r#"" b\n""#,
            "expected:\n- |2\n   b\n",
        ),
        // The parent's indentation is the `?`'s for an explicit key, the key's properties',
        // and the key's when the header is on a line of its own.
        (
            "expected:\n- ? s\n  : |2\n      a\n",
            r#"{"s":"  b\n"}"#,
            "expected:\n- ? s\n  : |2\n      b\n",
        ),
        (
            "expected:\n- &k s: |2\n      a\n",
            r#"{"s":"  b\n"}"#,
            "expected:\n- &k s: |2\n      b\n",
        ),
        (
            "expected:\n- s:\n    |2\n      a\n",
            r#"{"s":"  b\n"}"#,
            "expected:\n- s:\n    |2\n      b\n",
        ),
        // A compact nested sequence item, at the end of the file.
        (
            "expected:\n- - |+\n    a\n\n",
            r#"["x\n"]"#,
            "expected:\n- - |+\n    x\n",
        ),
        // CRLF: the empty lines get the file's line ending.
        (
            "expected:\r\n- s: |+\r\n    a\r\n  t: 1\r\n",
            r#"{"s":"b\n\n","t":1}"#,
            "expected:\r\n- s: |+\r\n    b\r\n\r\n  t: 1\r\n",
        ),
        // Blank lines holding more spaces than the indentation (content, for literal) after
        // the last one are written as empty lines.
        (
            "expected:\n- s: |\n    a\n      \n  t: 1\n",
            r#"{"s":"b\n","t":1}"#,
            "expected:\n- s: |\n    b\n\n  t: 1\n",
        ),
    ];
    for (text, target, want) in cases {
        assert_eq!(rewrite(text, 0, target).as_deref(), Ok(want), "{text:?}");
    }
}

/// A value a keep or indentation-indicator block cannot hold is quoted, as before.
#[test]
fn values_those_blocks_cannot_hold_are_quoted() {
    let cases = [
        // Keep reads the line break that ends the block: a value without one.
        (
            "expected:\n- s: |+\n    a\n  t: 1\n",
            r#"{"s":"flat","t":1}"#,
            "expected:\n- s: flat\n  t: 1\n",
        ),
        // At the end of the file too (the reader gives the last line a break).
        (
            "expected:\n- s: >+\n    a\n",
            r#"{"s":"x"}"#,
            "expected:\n- s: x\n",
        ),
        // An indentation indicator past 9 would be needed.
        (
            "expected:\n- s: |\n              a\n",
            r#"{"s":" b\n"}"#,
            "expected:\n- s: \" b\\n\"\n",
        ),
        // Nothing but line breaks.
        (
            "expected:\n- s: |+2\n     a\n",
            r#"{"s":"\n\n"}"#,
            "expected:\n- s: \"\\n\\n\"\n",
        ),
    ];
    for (text, target, want) in cases {
        assert_eq!(rewrite(text, 0, target).as_deref(), Ok(want), "{text:?}");
    }
}
