//! Tests of the YAML reader: YAML 1.1 scalars, spans, anchors and aliases with their bounds,
//! nesting depth, duplicate keys and documents.

use super::*;

#[test]
fn keys_become_strings_as_sigs_yaml_does() {
    let doc = parse_first_document("on: 1\n1: a\nno: b\n1.5: c\n1e7: d\n0x10: e\n")
        .unwrap()
        .unwrap();
    let json = doc.to_json();
    let JsonValue::Object(map) = json else {
        panic!("not an object")
    };
    let keys: Vec<&str> = map.keys().map(String::as_str).collect();
    assert_eq!(keys, vec!["1", "1.5", "16", "1e+07", "false", "true"]);
    assert_eq!(map["true"], JsonValue::Int(1));
    assert!(
        parse_first_document("~: x\n")
            .unwrap()
            .unwrap()
            .try_to_json()
            .is_err()
    );
    assert!(
        parse_first_document("v: .nan\n")
            .unwrap()
            .unwrap()
            .try_to_json()
            .is_err()
    );
}

#[test]
fn go_float_formatting() {
    assert_eq!(go_format_float_g32(8080.0), "8080");
    assert_eq!(go_format_float_g32(1.5), "1.5");
    assert_eq!(go_format_float_g32(0.1), "0.1");
    assert_eq!(go_format_float_g32(1e6), "1e+06");
    assert_eq!(go_format_float_g32(123456.0), "123456");
    assert_eq!(go_format_float_g32(1234567.0), "1.234567e+06");
    assert_eq!(go_format_float_g32(0.0001), "0.0001");
    assert_eq!(go_format_float_g32(0.00001), "1e-05");
    assert_eq!(go_format_float_g32(std::f64::consts::PI), "3.1415927");
    assert_eq!(go_format_float_g32(-0.0), "-0");
    assert_eq!(go_format_float_g32(f64::INFINITY), ".inf");
}

#[test]
fn spans_of_nested_nodes() {
    let src = "a: 1\nexpected:\n- kind: Echo\n- kind: Echo\n  spec:\n    x: [1, {w: 2, y: 3}]\n";
    let doc = parse_first_document(src).unwrap().unwrap();
    let path = [
        PathSeg::Key("expected".into()),
        PathSeg::Index(1),
        PathSeg::Key("spec".into()),
        PathSeg::Key("x".into()),
    ];
    let x = doc.at_path(&path).unwrap();
    assert_eq!((x.span.start.line, x.span.start.column), (6, 8));
    assert_eq!(
        &src[x.span.start.offset..x.span.end.offset],
        "[1, {w: 2, y: 3}]"
    );
    let key = doc.at_path(&path[..3]).unwrap().get_key("x").unwrap();
    assert_eq!((key.span.start.line, key.span.start.column), (6, 5));
    assert_eq!(&src[key.span.start.offset..key.span.end.offset], "x");
    let entry = doc.at_path(&path[..2]).unwrap();
    assert_eq!((entry.span.start.line, entry.span.start.column), (4, 3));
    assert_eq!(
        &src[entry.span.start.offset..entry.span.end.offset],
        "kind: Echo\n  spec:\n    x: [1, {w: 2, y: 3}]"
    );
    let w = doc
        .at_path(
            &[
                path.to_vec(),
                vec![PathSeg::Index(1), PathSeg::Key("w".into())],
            ]
            .concat(),
        )
        .unwrap();
    assert_eq!(w.value, YamlValue::Int(2));
    assert_eq!((w.span.start.line, w.span.start.column), (6, 16));
    // `y` is a YAML 1.1 boolean, so the key is "true".
    let y = doc
        .at_path(
            &[
                path.to_vec(),
                vec![PathSeg::Index(1), PathSeg::Key("true".into())],
            ]
            .concat(),
        )
        .unwrap();
    assert_eq!(y.value, YamlValue::Int(3));
}

#[test]
fn spans_count_chars_and_bytes() {
    let src = "é: ü\nb: \"x\"\n";
    let doc = parse_first_document(src).unwrap().unwrap();
    let b = doc.get("b").unwrap();
    assert_eq!(b.span.start.line, 2);
    assert_eq!(b.span.start.column, 4);
    assert_eq!(&src[b.span.start.offset..b.span.end.offset], "\"x\"");
    let u = doc.get("é").unwrap();
    assert_eq!(u.span.start.column, 4);
    assert_eq!(&src[u.span.start.offset..u.span.end.offset], "ü");
}

/// The value of `key` in `doc` as JSON.
fn json_at(doc: &YamlNode, key: &str) -> JsonValue {
    doc.get(key).unwrap().to_json()
}

/// `text`, a one-document YAML text, as JSON.
fn json_of(text: &str) -> JsonValue {
    parse_first_document(text).unwrap().unwrap().to_json()
}

#[test]
fn aliases_find_their_anchored_node_wherever_the_builder_put_it() {
    // Nested anchors, in frames still open and in finished nodes; the copy keeps the spans of
    // the anchored node's children.
    let src = "a: &x {k: [1, &y {m: 2}]}\nb: *y\nc: *x\nd:\n  list:\n    - &z {p: [1, {q: 2}]}\n    - *z\n";
    let doc = parse_first_document(src).unwrap().unwrap();
    assert_eq!(json_at(&doc, "b"), json_of(r#"{"m":2}"#));
    assert_eq!(json_at(&doc, "c"), json_at(&doc, "a"));
    assert_eq!(
        doc.get("c").unwrap().get("k").unwrap().span,
        doc.get("a").unwrap().get("k").unwrap().span
    );
    let YamlValue::Seq(list) = &doc.get("d").unwrap().get("list").unwrap().value else {
        panic!("a list")
    };
    assert_eq!(list[0].to_json(), list[1].to_json());
    // A value replaced by a later one of the same key: what was anchored in it stays.
    let src = "m:\n  k: &x {v: [1, &w 2]}\n  k: 3\n  r: *x\n  s: *w\nt: *x\n";
    let doc = parse_first_document(src).unwrap().unwrap();
    let m = doc.get("m").unwrap();
    assert_eq!(json_at(m, "k"), json_of("3"));
    assert_eq!(json_at(m, "r"), json_of(r#"{"v":[1,2]}"#));
    assert_eq!(json_at(m, "s"), json_of("2"));
    assert_eq!(json_at(&doc, "t"), json_of(r#"{"v":[1,2]}"#));
    // Replaced by a merge (go-yaml v2 merges in place, over the earlier `w`).
    let src = "base: &b {w: 1}\nm:\n  w: &x [5]\n  <<: *b\n  r: *x\n";
    let doc = parse_first_document(src).unwrap().unwrap();
    let m = doc.get("m").unwrap();
    assert_eq!(
        (json_at(m, "w"), json_at(m, "r")),
        (json_of("1"), json_of("[5]"))
    );
    // Anchored in a merge value, or the merge value itself.
    let src = "m:\n  <<: &all {a: &x [7]}\n  b: *x\nwhole: *all\nl:\n  <<: [{c: &y 8}]\n  d: *y\n";
    let doc = parse_first_document(src).unwrap().unwrap();
    let m = doc.get("m").unwrap();
    assert_eq!(
        (json_at(m, "a"), json_at(m, "b")),
        (json_of("[7]"), json_of("[7]"))
    );
    assert_eq!(json_at(&doc, "whole"), json_of(r#"{"a":[7]}"#));
    assert_eq!(json_at(doc.get("l").unwrap(), "d"), json_of("8"));
    // An anchored key, an anchor written again (an alias takes the latest), a sequence.
    let src = "&k key: v\nother: *k\nx: &n 1\nfirst: *n\nz: &n 2\nlatest: *n\n";
    let doc = parse_first_document(src).unwrap().unwrap();
    assert_eq!(json_at(&doc, "other"), json_of(r#""key""#));
    assert_eq!(
        (json_at(&doc, "first"), json_at(&doc, "latest")),
        (json_of("1"), json_of("2"))
    );
    let doc = parse_first_document("- &a {x: [1]}\n- *a\n")
        .unwrap()
        .unwrap();
    assert_eq!(doc.to_json(), json_of(r#"[{"x":[1]},{"x":[1]}]"#));
    // A document does not see the anchors of the one before.
    assert!(parse_documents("a: &x {b: 1}\n---\nc: *x\n").is_err());
    assert_eq!(
        parse_documents("a: &x {b: 1}\nc: *x\n---\nd: &x [2]\ne: *x\n").unwrap()[1].to_json(),
        json_of(r#"{"d":[2],"e":[2]}"#)
    );
}

#[test]
fn anchors_aliases_and_merges() {
    let src = "base: &b {x: 1, w: 2}\nother: *b\nmerged:\n  w: 0\n  <<: *b\n  z: 3\nlist:\n  <<: [{p: 1}, {p: 2, q: 2}]\n";
    let doc = parse_first_document(src).unwrap().unwrap();
    assert_eq!(
        doc.get("other").unwrap().to_json(),
        doc.get("base").unwrap().to_json()
    );
    let other = doc.get("other").unwrap();
    assert_eq!(&src[other.span.start.offset..other.span.end.offset], "*b");
    let merged = doc.get("merged").unwrap();
    assert_eq!(merged.get("x").unwrap().value, YamlValue::Int(1));
    // go-yaml v2 applies the merge in place: it overwrites the earlier `w`.
    assert_eq!(merged.get("w").unwrap().value, YamlValue::Int(2));
    assert_eq!(merged.get("z").unwrap().value, YamlValue::Int(3));
    let list = doc.get("list").unwrap();
    assert_eq!(list.get("p").unwrap().value, YamlValue::Int(1));
    assert_eq!(list.get("q").unwrap().value, YamlValue::Int(2));
    assert!(parse_first_document("a: *nope\n").is_err());
    assert!(parse_first_document("a:\n  <<: 3\n").is_err());
    // A quoted "<<" is an ordinary key.
    let quoted = parse_first_document("'<<': {a: 1}\n").unwrap().unwrap();
    assert!(quoted.get("<<").is_some());
}

/// A "billion laughs" document: each level aliases the one below nine times.
fn alias_bomb(levels: usize) -> String {
    let mut out = String::from("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for level in 1..=levels {
        let items = vec![format!("*a{}", level - 1); 9].join(", ");
        out.push_str(&format!("a{level}: &a{level} [{items}]\n"));
    }
    out
}

/// `levels` mappings or sequences nested in each other, in flow or block style.
fn nested(levels: usize, style: &str) -> String {
    match style {
        "flow map" => format!("{}1{}", "{a: ".repeat(levels), "}".repeat(levels)),
        "flow seq" => format!("{}1{}", "[".repeat(levels), "]".repeat(levels)),
        "block seq" => format!("{}1", "- ".repeat(levels)),
        _ => {
            (0..levels)
                .map(|level| format!("{}a:\n", " ".repeat(level)))
                .collect::<String>()
                .trim_end_matches(":\n")
                .to_string()
                + ": 1"
        }
    }
}

fn depth_of(node: &YamlNode) -> usize {
    let mut depth = 0;
    let mut node = node;
    loop {
        node = match &node.value {
            YamlValue::Seq(items) => &items[0],
            YamlValue::Map(entries) => &entries[0].1,
            _ => return depth,
        };
        depth += 1;
    }
}

#[test]
fn nesting_is_bounded_at_the_line_that_crosses_it() {
    for style in ["flow map", "flow seq", "block seq", "block map"] {
        let at_limit = parse_first_document(&nested(MAX_NESTING_DEPTH, style))
            .unwrap_or_else(|e| panic!("{style}: {e}"))
            .unwrap();
        assert_eq!(depth_of(&at_limit), MAX_NESTING_DEPTH, "{style}");
        for levels in [MAX_NESTING_DEPTH + 1, 10_000] {
            let e = parse_first_document(&nested(levels, style)).unwrap_err();
            // Block mappings put one level on each line; the others are on line 1.
            let line = if style == "block map" {
                MAX_NESTING_DEPTH + 1
            } else {
                1
            };
            assert_eq!(e.pos.line as usize, line, "{style} {levels}: {e}");
            assert!(
                e.message.starts_with("exceeded max depth of 255"),
                "{style} {levels}: {e}"
            );
        }
    }
    // Inside a document, the bound is counted from its root.
    let inside = format!("a:\n  b: {}\n", nested(MAX_NESTING_DEPTH - 1, "flow seq"));
    let e = parse_first_document(&inside).unwrap_err();
    assert_eq!((e.pos.line, e.pos.column), (2, 6 + 253), "{e}");
    assert!(e.message.starts_with("exceeded max depth of 255"), "{e}");
}

#[test]
fn an_alias_counts_with_the_depth_of_its_anchor() {
    let deep = nested(200, "flow seq");
    let fits = format!("a: &x {deep}\nb: *x\n");
    assert!(parse_first_document(&fits).is_ok());
    let fits_one_level_up = format!("a: &x {deep}\nb:\n  c: *x\n");
    assert!(parse_first_document(&fits_one_level_up).is_ok());
    // b, c, 60 sequences and the alias's 200 levels: past 255, at the alias's line.
    let too_deep = format!("a: &x {deep}\nb:\n  c:\n  {}*x\n", "- ".repeat(60));
    let e = parse_first_document(&too_deep).unwrap_err();
    assert_eq!(e.pos.line, 4, "{e}");
    assert!(e.message.starts_with("exceeded max depth of 255"), "{e}");
}

/// The deepest tree the reader builds, converted, cloned, compared and dropped on a
/// 2 MiB thread (the default size of spawned threads, and of the language server's) in
/// whatever build runs the tests.
#[test]
fn the_deepest_tree_is_walked_and_dropped_on_a_small_stack() {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(|| {
            for style in ["flow map", "block seq", "block map"] {
                let node = parse_first_document(&nested(MAX_NESTING_DEPTH, style))
                    .unwrap()
                    .unwrap();
                let json = node.try_to_json().unwrap();
                assert_eq!(json, node.to_json());
                assert!(node.clone() == node);
                drop((node, json));
            }
        })
        .unwrap()
        .join()
        .expect("no stack overflow");
}

#[test]
fn alias_bombs_fail_at_the_alias_without_being_expanded() {
    // Thousands of aliased nodes for about 50 written ones: past go-yaml v2's 99% ratio.
    for levels in [3, 9, 30] {
        let err = parse_first_document(&alias_bomb(levels)).unwrap_err();
        assert!(
            err.message.contains("document contains excessive aliasing"),
            "{err:?}"
        );
        // The alias that crosses the bound, on the line of level 3 (line 4) at every depth.
        assert_eq!(err.pos.line, 4, "{levels} levels: {err:?}");
    }
    // Moderate aliasing, as go-yaml accepts it, still works.
    let doc = parse_first_document(&alias_bomb(2)).unwrap().unwrap();
    let YamlValue::Seq(level2) = &doc.get("a2").unwrap().value else {
        panic!("a2 is a sequence")
    };
    assert!(
        level2
            .iter()
            .all(|l1| matches!(&l1.value, YamlValue::Seq(l0) if l0.len() == 9))
    );
}

#[test]
fn aliased_text_has_a_byte_bound() {
    // 100 aliases of a 1 MiB string: few nodes (go-yaml's ratio allows it) but 100 MiB copied.
    let big = "x".repeat(1 << 20);
    let mut src = format!("s: &s {big}\nl:\n");
    for _ in 0..100 {
        src.push_str("- *s\n");
    }
    let err = parse_first_document(&src).unwrap_err();
    assert!(
        err.message.contains("bytes (the limit is 16 MiB)"),
        "{err:?}"
    );
    // The 17th alias (line 19) passes 16 MiB.
    assert_eq!(err.pos.line, 19, "{err:?}");
}

#[test]
fn nested_anchors_around_a_large_value_are_bounded() {
    // 200 anchors (the parser nests no deeper) around one 200 KB string: each anchor
    // keeps a copy (40 MB in all).
    let mut src = String::from("v: ");
    for i in 0..200 {
        src.push_str(&format!("&a{i} ["));
    }
    src.push_str(&"x".repeat(200_000));
    src.push_str(&"]".repeat(200));
    src.push('\n');
    let err = parse_first_document(&src).unwrap_err();
    assert!(
        err.message
            .contains("document contains excessive anchoring"),
        "{err:?}"
    );
    // One anchor on a large value, aliased once, is fine.
    let big = "x".repeat(1 << 20);
    let ok = format!("a: &a {{s: {big}}}\nb: *a\n");
    assert!(parse_first_document(&ok).is_ok());
}

#[test]
fn duplicate_keys_and_later_documents_are_noted() {
    let parsed = parse_case_document("a: 1\nb:\n  c: 2\n  c: 3\na: 4\n---\nz: 1\n").unwrap();
    let notes: Vec<(u32, &str)> = parsed
        .notes
        .iter()
        .map(|n| (n.pos.line, n.message.as_str()))
        .collect();
    assert_eq!(notes.len(), 3, "{notes:?}");
    assert_eq!(notes[0].0, 4);
    assert!(
        notes[0]
            .1
            .contains("`c` is written twice in this mapping (first on line 3)")
    );
    assert_eq!(notes[1].0, 5);
    assert!(
        notes[2].1.contains("more than one YAML document"),
        "{notes:?}"
    );
    // Merges override without a note; a trailing `---` alone is not a document.
    let quiet = parse_case_document("base: &b {x: 1}\nm:\n  x: 0\n  <<: *b\n---\n").unwrap();
    assert_eq!(quiet.notes, vec![]);
}

#[test]
fn an_error_at_the_end_of_the_text_is_on_its_last_line() {
    // Found by tests/fuzz.rs: the parser put this error on line 3 of a 2-line text.
    let err = parse_first_document("b: |\n~spec:&x ").unwrap_err();
    assert_eq!(err.pos.line, 2, "{err:?}");
}

#[test]
fn byte_offsets_of_non_ascii_text_far_from_a_checkpoint() {
    let filler = "é".repeat(200);
    let src = format!("a: {filler}\nb: ü{filler}\nc: x\n");
    let doc = parse_first_document(&src).unwrap().unwrap();
    let c = doc.get("c").unwrap();
    assert_eq!(&src[c.span.start.offset..c.span.end.offset], "x");
    let b = doc.get("b").unwrap();
    assert!(src[b.span.start.offset..b.span.end.offset].starts_with("üé"));
}

#[test]
fn duplicate_keys_take_the_later_value() {
    let doc = parse_first_document("a: 1\nb: 2\na: 3\n").unwrap().unwrap();
    let YamlValue::Map(entries) = &doc.value else {
        panic!()
    };
    assert_eq!(entries.len(), 2);
    assert_eq!(doc.get("a").unwrap().value, YamlValue::Int(3));
}

#[test]
fn only_the_first_document_counts() {
    let doc = parse_first_document("a: 1\n---\nb: 2\n").unwrap().unwrap();
    assert!(doc.get("b").is_none());
    assert_eq!(parse_documents("a: 1\n---\nb: 2\n").unwrap().len(), 2);
    assert_eq!(parse_first_document("").unwrap(), None);
    assert_eq!(parse_first_document("# only a comment\n").unwrap(), None);
}

#[test]
fn syntax_errors_have_positions() {
    let err = parse_first_document("a: 1\nb: [1, 2\n").unwrap_err();
    assert!(err.pos.line >= 2, "{err:?}");
    let err = parse_first_document("a: b: c\n").unwrap_err();
    assert_eq!(err.pos.line, 1, "{err:?}");
}

#[test]
fn block_scalars() {
    let src = "script: |\n  local x = 1\n  return x\nfolded: >-\n  a\n  b\n";
    let doc = parse_first_document(src).unwrap().unwrap();
    assert_eq!(
        doc.get("script").unwrap().value,
        YamlValue::String("local x = 1\nreturn x\n".into())
    );
    assert_eq!(
        doc.get("folded").unwrap().value,
        YamlValue::String("a b".into())
    );
    // The parser puts a block scalar's span at its content.
    assert_eq!(doc.get("script").unwrap().span.start.line, 2);
}

#[test]
fn duplicate_keys_in_large_mappings_are_found_as_in_small_ones() {
    // Past INDEX_FROM keys the duplicate check uses an index: same answers as the scan.
    let mut src: String = (0..40).map(|i| format!("k{i}: {i}\n")).collect();
    src.push_str("1: int\n1.0: float\n0.0: zero\n-0.0: negative zero\n.nan: a\n.nan: b\n");
    src.push_str("k3: later\n1: int again\n-0.0: zero again\n");
    let parsed = parse_case_document(&src).unwrap();
    let YamlValue::Map(entries) = &parsed.root.as_ref().unwrap().value else {
        panic!()
    };
    // 40 + {1, 1.0, 0.0 (= -0.0), NaN, NaN}: NaN keys never equal each other.
    assert_eq!(entries.len(), 45);
    let lines: Vec<u32> = parsed.notes.iter().map(|n| n.pos.line).collect();
    assert_eq!(lines, vec![44, 47, 48, 49], "{:?}", parsed.notes);
    assert_eq!(entries[3].1.value, YamlValue::String("later".into()));
    assert_eq!(
        entries[3].0.span.start.line, 47,
        "the later key node is kept, in place"
    );
}

/// go-yaml v2's flow-context rules for `:` and `?` (see `flow.rs`): each row is a one-line
/// document and what gopkg.in/yaml.v2 v2.4.0 (`Unmarshal` into `interface{}`, then JSON as
/// sigs.k8s.io/yaml converts it) gives for it, or `error: <message>`.
#[test]
#[rustfmt::skip]
fn flow_scalars_with_colons_read_as_go_yaml_v2() {
    let rows = [
        // IPv6 addresses and colons before `,` `]` `}` stay in the scalar.
        ("addresses: [1.2.3.4, 001:db8::]", r#"{"addresses":["1.2.3.4","001:db8::"]}"#),
        ("a: {x: [1.2.3.4, 001:db8::], z: 1}", r#"{"a":{"x":["1.2.3.4","001:db8::"],"z":1}}"#),
        ("a: [{k: 001:db8::}]", r#"{"a":[{"k":"001:db8::"}]}"#),
        ("a: [a:, b]", r#"{"a":["a:","b"]}"#),
        ("a: [a:]", r#"{"a":["a:"]}"#),
        ("a: [a:,]", r#"{"a":["a:"]}"#),
        ("a: {a:}", r#"{"a":{"a:":null}}"#),
        ("a: {a:,b: 1}", r#"{"a":{"a:":null,"b":1}}"#),
        ("a: [ab:c:, x]", r#"{"a":["ab:c:","x"]}"#),
        ("a: {fe80::1: x}", r#"{"a":{"fe80::1":"x"}}"#),
        ("a: [fe80::1%eth0, a::b]", r#"{"a":["fe80::1%eth0","a::b"]}"#),
        // `a:b` is one scalar, `a: b` a pair; a colon before a blank ends a key.
        ("a: [a:b, c]", r#"{"a":["a:b","c"]}"#),
        ("a: [a: b, c]", r#"{"a":[{"a":"b"},"c"]}"#),
        ("a: {a:b: c}", r#"{"a":{"a:b":"c"}}"#),
        ("a: {a: b:c}", r#"{"a":{"a":"b:c"}}"#),
        ("a: {a :x}", r#"{"a":{"a :x":null}}"#),
        ("a: [x:#y, -:x]", r#"{"a":["x:#y","-:x"]}"#),
        // URLs and times.
        ("a: {url: http://example.com:8080/path}", r#"{"a":{"url":"http://example.com:8080/path"}}"#),
        ("a: [http://example.com:8080/path, https://x.io/]", r#"{"a":["http://example.com:8080/path","https://x.io/"]}"#),
        ("a: [12:30:00, 2001-12-14t21:59:43.10-05:00, 1:20]", r#"{"a":["12:30:00","2001-12-14t21:59:43.10-05:00","1:20"]}"#),
        ("a: [\"::1\", '::1']", r#"{"a":["::1","::1"]}"#),
        // A node cannot start with `:` in a flow collection (it is the value indicator).
        ("a: [::]", "error: did not find expected node content"),
        ("a: [::1]", "error: did not find expected node content"),
        ("a: [2001:db8::1, ::ffff:1.2.3.4]", "error: did not find expected node content"),
        ("a: [:x]", "error: did not find expected node content"),
        ("a: {:x}", "error: did not find expected node content"),
        ("a: {a: :x}", "error: did not find expected node content"),
        ("a: {a: ::}", "error: did not find expected node content"),
        // `?` ends a plain scalar in a flow collection.
        ("a: [http://x/?a=b]", "error: did not find expected ',' or ']'"),
        ("a: {url: http://x/?a=b}", "error: did not find expected ',' or '}'"),
        ("a: {a?b: c}", "error: did not find expected ',' or '}'"),
        ("a: [a ?b]", "error: did not find expected ',' or ']'"),
        ("a: {a: b ?c}", "error: did not find expected ',' or '}'"),
        // Block context is untouched.
        ("a: b:c\nd: http://x/?a=b\ne: ::1\n", r#"{"a":"b:c","d":"http://x/?a=b","e":"::1"}"#),
    ];
    let failures: Vec<String> = rows
        .iter()
        .filter_map(|(source, want)| {
            let got = match parse_first_document(source) {
                Ok(Some(doc)) => doc.to_json().to_canonical_json(),
                Ok(None) => "empty".into(),
                Err(e) => format!("error: {}", e.message),
            };
            (got != *want).then(|| format!("{source}\n    got  {got}\n    want {want}"))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The error is where go-yaml's scanner stops: the `:` that starts a node.
    let error = parse_first_document("a: 1\nb: [x, ::1]\n").unwrap_err();
    assert_eq!((error.pos.line, error.pos.column, error.pos.offset), (2, 8, 12));
}

/// Byte offsets of non-ASCII text are found from the last lookup when it lies before the char
/// looked up, from a checkpoint otherwise: the same offsets in any order of lookups.
#[test]
fn byte_offsets_are_the_same_whatever_the_order_of_lookups() {
    let source = "ä-b€c\n".repeat(100);
    let positions = Positions::new(&source);
    let truth: Vec<usize> = source
        .char_indices()
        .map(|(byte, _)| byte)
        .chain([source.len()])
        .collect();
    let chars = truth.len() - 1;
    let order = (0..=chars)
        .chain((0..=chars).rev())
        .chain((0..=chars).map(|i| (i * 37) % (chars + 1)));
    for index in order {
        assert_eq!(positions.byte_offset(index), truth[index], "char {index}");
    }
}

/// Lines end at `\n`, `\r\n` and a lone `\r`, as the parser counts them.
#[test]
fn line_breaks_count_every_kind_of_line_end_once() {
    assert_eq!(positions::line_breaks(b"a: 1\nb: 2\n"), 2);
    assert_eq!(positions::line_breaks(b"a: 1\r\nb: 2\rc: 3\n\r"), 4);
    assert_eq!(positions::line_breaks(b""), 0);
    // Texts longer than a counting block, with breaks of each kind in and after the blocks.
    for (text, breaks) in [
        ("a\n".repeat(100), 100),
        (format!("{}\r", "a".repeat(63)), 1),
        (format!("{}\r{}", "\n".repeat(64), "a\r\nb".repeat(30)), 95),
        (format!("{}\r\n", "x".repeat(127)), 1),
        ("\n".repeat(300), 300),
    ] {
        assert_eq!(positions::line_breaks(text.as_bytes()), breaks, "{text:?}");
    }
    let error = parse_first_document("a: 1\r\nb: 2\rc: [\n").unwrap_err();
    assert_eq!(error.pos.line, 4);
}

/// Every char's byte offset is found, in texts whose non-ASCII chars sit anywhere between the
/// checkpoints (a stretch of ASCII is skipped at once, others are walked).
#[test]
fn byte_offsets_of_chars_in_mixed_texts() {
    use super::positions::Positions;
    let mut texts = vec![
        String::new(),
        "é".to_owned(),
        "a".repeat(64),
        "a".repeat(200),
    ];
    for at in [0, 1, 62, 63, 64, 65, 127, 128, 130] {
        let mut text: String = "ab".repeat(100);
        text.insert_str(at, "“ü”");
        texts.push(text.clone());
        texts.push(format!("{}😀", &text[..at]));
    }
    texts.push("ü".repeat(300));
    for text in &texts {
        let positions = Positions::new(text);
        let offsets: Vec<usize> = text.char_indices().map(|(byte, _)| byte).collect();
        for (index, offset) in offsets.iter().enumerate() {
            assert_eq!(
                positions.byte_offset(index),
                *offset,
                "{text:?} char {index}"
            );
        }
        // Past the last char: the end of the text.
        assert_eq!(positions.byte_offset(offsets.len()), text.len());
        assert_eq!(positions.byte_offset(offsets.len() + 5), text.len());
    }
}
