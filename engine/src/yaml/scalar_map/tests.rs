//! The scalar map against the parser: every style, hand-picked shapes and generated ones.

use proptest::prelude::*;

use super::*;
use crate::yaml::{YamlValue, parse_first_document};

/// The value of `data.k` in `manifest`, its map, and the line (1-based) of each value offset.
fn read(manifest: &str) -> (String, ScalarMap) {
    let doc = parse_first_document(manifest).unwrap().unwrap();
    let data = doc.get("data").unwrap();
    let YamlValue::Map(entries) = &data.value else {
        panic!("data is not a map")
    };
    let (key, value) = &entries[0];
    let YamlValue::String(text) = &value.value else {
        panic!("not a string: {:?}", value.value)
    };
    let map = ScalarMap::read(
        manifest,
        key.span.end.offset,
        key.span.start.column as usize - 1,
        value.span.start.offset..value.span.end.offset,
        text,
    );
    (text.clone(), map)
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset].matches('\n').count() + 1
}

/// Every value byte maps into the content, in order, onto the manifest bytes that make it:
/// the same byte when verbatim, else the escape or the blanks and breaks of a fold; and each
/// run's start maps back to itself.
fn assert_round_trip(manifest: &str, value: &str, map: &ScalarMap) {
    assert!(map.is_exact(), "not exact: {manifest:?} → {value:?}");
    let content = map.content();
    let mut last = content.start;
    for o in 0..value.len() {
        let s = map.to_source(o);
        assert!(
            s >= last && s <= content.end,
            "offset {o} → {s} out of order"
        );
        last = s;
        let piece = &map.pieces[map.piece_at(o)];
        if piece.verbatim {
            assert_eq!(
                manifest.as_bytes()[s],
                value.as_bytes()[o],
                "byte {o} of {value:?}"
            );
            assert_eq!(map.to_value(s), Some(o));
            continue;
        }
        assert_eq!(
            map.to_value(s)
                .filter(|_| !piece.source.is_empty())
                .unwrap_or(piece.value),
            piece.value
        );
        if o != piece.value {
            continue;
        }
        let made = &value[o..map.value_end(map.piece_at(o))];
        let written = &manifest[piece.source.clone()];
        match written.as_bytes().first() {
            Some(b'\\') => {
                let (c, n) = escape(manifest, s).expect("an escape");
                assert_eq!(made, c.to_string());
                assert_eq!(n, written.len());
            }
            Some(b'\'') => assert_eq!((made, written), ("'", "''")),
            // A fold or a line break: blanks and breaks only, making spaces or line feeds.
            _ => {
                assert!(
                    written
                        .bytes()
                        .all(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r')),
                    "{written:?}"
                );
                assert!(made == " " || made.bytes().all(|c| c == b'\n'), "{made:?}");
            }
        }
    }
    assert!(map.to_source(value.len()) <= content.end);
}

/// The manifest line holding each value line's start.
fn value_lines(manifest: &str, value: &str, map: &ScalarMap) -> Vec<usize> {
    std::iter::once(0)
        .chain(value.match_indices('\n').map(|(i, _)| i + 1))
        .map(|o| line_of(manifest, map.to_source(o)))
        .collect()
}

const HEAD: &str = "kind: ConfigMap\ndata:\n  k: ";

#[test]
fn double_quoted_lines_and_columns() {
    let manifest = format!(
        "{HEAD}\"local a = 1\\nlocal b = \\\"x\\\\y\\\"\\n\\terror('é \\u00e9')\\n\"\n  other: |\n    x\n"
    );
    let (value, map) = read(&manifest);
    assert_eq!(value, "local a = 1\nlocal b = \"x\\y\"\n\terror('é é')\n");
    assert_round_trip(&manifest, &value, &map);
    assert_eq!(value_lines(&manifest, &value, &map), vec![3, 3, 3, 3]);
    // `error` sits after the `\t` escape, on the manifest's own bytes.
    let at = map.to_source(value.find("error").unwrap());
    assert_eq!(&manifest[at..at + 5], "error");
    assert_eq!(map.to_value(at), value.find("error"));
}

#[test]
fn double_quoted_folded_over_lines() {
    let manifest = format!("{HEAD}\"local a = 1\\n\\\n    local b\n    = 2\\n\n\n    return\"\n");
    let (value, map) = read(&manifest);
    assert_eq!(value, "local a = 1\nlocal b = 2\n\nreturn");
    assert_round_trip(&manifest, &value, &map);
    assert_eq!(value_lines(&manifest, &value, &map), vec![3, 4, 6, 7]);
}

#[test]
fn single_quoted_and_plain_fold() {
    let manifest = format!("{HEAD}'it''s\n   here\n\n   return'\n");
    let (value, map) = read(&manifest);
    assert_eq!(value, "it's here\nreturn");
    assert_round_trip(&manifest, &value, &map);
    assert_eq!(value_lines(&manifest, &value, &map), vec![3, 6]);

    let manifest = format!("{HEAD}return\n    obj.data\n\n    -- x\n  next: 1\n");
    let (value, map) = read(&manifest);
    assert_eq!(value, "return obj.data\n-- x");
    assert_round_trip(&manifest, &value, &map);
    assert_eq!(value_lines(&manifest, &value, &map), vec![3, 6]);
}

#[test]
fn block_scalars_with_indicators() {
    for (header, body, expected) in [
        ("|", "    a\n      b\n\n    c\n", "a\n  b\n\nc\n"),
        ("|-", "    a\n    b\n\n\n", "a\nb"),
        ("|+", "    a\n\n", "a\n\n"),
        ("|2", "      a\n    b\n", "  a\nb\n"),
        ("|1-", "     a\n    b\n", "  a\n b"),
        (
            ">",
            "    a\n    b\n\n    c\n      d\n    e\n",
            "a b\nc\n  d\ne\n",
        ),
        (">-", "    a\n\n\n    b\n", "a\n\nb"),
        ("| # note", "    x\r\n    y\r\n", "x\ny\n"),
    ] {
        let manifest = format!("{HEAD}{header}\n{body}  other: 1\n");
        let (value, map) = read(&manifest);
        assert_eq!(value, expected, "{header} {body:?}");
        assert_round_trip(&manifest, &value, &map);
    }
    // Without a final line break.
    let manifest = format!("{HEAD}|\n    a\n    b");
    let (value, map) = read(&manifest);
    assert_eq!(value, "a\nb\n");
    assert_round_trip(&manifest, &value, &map);
}

#[test]
fn a_value_the_scanner_cannot_read_is_opaque() {
    let manifest = format!("{HEAD}!!binary aGVsbG8=\n");
    let (value, map) = read(&manifest);
    assert_eq!(value, "hello");
    assert!(!map.is_exact());
    let start = manifest.find("!!binary").unwrap();
    assert_eq!(map.to_source(3), start);
    assert_eq!(map.to_value(start), None);
    assert!(map.source_edit(0..1, "j").is_err());
}

#[test]
fn edits_are_written_in_the_scalars_style() {
    let apply = |manifest: &str, range: Range<usize>, replacement: &str| {
        let (_, map) = read(manifest);
        let (at, text) = map.source_edit(range, replacement)?;
        let mut out = manifest.to_string();
        out.replace_range(at, &text);
        Ok::<_, String>(read(&out).0)
    };
    let manifest = format!("{HEAD}\"a = \\\"w\\\"\\nb\"\n");
    assert_eq!(
        apply(&manifest, 4..7, "\"x\\\"\n\t").unwrap(),
        "a = \"x\\\"\n\t\nb"
    );
    let manifest = format!("{HEAD}'a = ''w'''\n");
    assert_eq!(apply(&manifest, 4..7, "'it's'").unwrap(), "a = 'it's'");
    let manifest = format!("{HEAD}|\n    a = 1\n    b = 2\n");
    assert_eq!(
        apply(&manifest, 4..5, "1\nc = 3").unwrap(),
        "a = 1\nc = 3\nb = 2\n"
    );
    // Inside an escape, or a line break where folding would eat it: refused.
    let manifest = format!("{HEAD}\"a\\u00e9b\"\n");
    assert!(apply(&manifest, 1..2, "x").is_err());
    assert_eq!(apply(&manifest, 1..3, "e").unwrap(), "aeb");
    let manifest = format!("{HEAD}>\n    a\n    b\n");
    assert!(apply(&manifest, 0..1, "x\ny").is_err());
}

// Generated scalars: whatever the parser reads, the map decodes the same and round-trips.

fn line_text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            "a", "b", " ", "  ", "\t", "é", "=", "\"", "'", "\\", "-", "#", "x:", "(", "0",
        ]),
        0..6,
    )
    .prop_map(|parts| parts.concat())
}

fn escape_text() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "\\n",
        "\\t",
        "\\\"",
        "\\\\",
        "\\u00e9",
        "\\x41",
        "\\ ",
        "\\/",
        "\\U0001F600",
        "\\0",
    ])
    .prop_map(str::to_string)
}

/// Lines of a scalar body and how each following line is indented.
fn body() -> impl Strategy<Value = Vec<(String, usize)>> {
    prop::collection::vec((line_text(), 0usize..4), 1..6)
}

fn check_generated(manifest: &str) -> Result<(), TestCaseError> {
    let Ok(Some(doc)) = parse_first_document(manifest) else {
        return Ok(());
    };
    let Some(YamlValue::Map(entries)) = doc.get("data").map(|d| &d.value) else {
        return Ok(());
    };
    if !matches!(entries.first(), Some((_, v)) if matches!(v.value, YamlValue::String(_))) {
        return Ok(());
    }
    let (value, map) = read(manifest);
    assert_round_trip(manifest, &value, &map);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn double_quoted_scalars_round_trip(lines in body(), escapes in prop::collection::vec(escape_text(), 6), continued in prop::collection::vec(any::<bool>(), 6)) {
        let mut text = String::from("\"");
        for (i, (line, indent)) in lines.iter().enumerate() {
            if i > 0 {
                if continued[i] { text.push('\\'); }
                text.push('\n');
                text.push_str(&" ".repeat(4 + indent));
            }
            text.push_str(&line.replace('\\', "\\\\").replace('"', "\\\""));
            text.push_str(&escapes[i]);
        }
        text.push('"');
        check_generated(&format!("{HEAD}{text}\n  other: x\n"))?;
    }

    #[test]
    fn single_quoted_and_plain_scalars_round_trip(lines in body(), quoted in any::<bool>()) {
        let mut text = String::new();
        for (i, (line, indent)) in lines.iter().enumerate() {
            if i > 0 {
                text.push('\n');
                text.push_str(&" ".repeat(4 + indent));
            }
            text.push_str(&if quoted { line.replace('\'', "''") } else { line.clone() });
        }
        let text = if quoted { format!("'{text}'") } else { format!("z{text}") };
        check_generated(&format!("{HEAD}{text}\n  other: x\n"))?;
    }

    #[test]
    fn block_scalars_round_trip(
        lines in body(),
        folded in any::<bool>(),
        chomping in prop::sample::select(vec!["", "-", "+"]),
        explicit in any::<bool>(),
        crlf in any::<bool>(),
        last_break in any::<bool>(),
    ) {
        let newline = if crlf { "\r\n" } else { "\n" };
        let mut text = format!("{}{}{}{newline}", if folded { ">" } else { "|" }, if explicit { "2" } else { "" }, chomping);
        for (i, (line, indent)) in lines.iter().enumerate() {
            if !line.trim().is_empty() || *indent > 1 {
                text.push_str(&" ".repeat(4 + if explicit || i > 0 { *indent } else { 0 }));
            }
            text.push_str(line.trim_start_matches([' ', '\t']));
            if i + 1 < lines.len() || last_break {
                text.push_str(newline);
            }
        }
        check_generated(&format!("{HEAD}{text}"))?;
        check_generated(&format!("{HEAD}{text}{newline}  other: x{newline}"))?;
    }
}
