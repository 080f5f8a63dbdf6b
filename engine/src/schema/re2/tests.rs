//! Go's reading of patterns, case by case: each expectation is what Go's `regexp` does (checked
//! with `regexp.MatchString` and `regexp.Compile`), where the regex crate alone differs.

use super::*;

fn go_matches(pattern: &str, text: &str) -> bool {
    match compile(pattern) {
        Ok(regex) => regex.is_match(text),
        Err(error) => panic!("{pattern}: {error}"),
    }
}

fn go_refuses(pattern: &str) -> String {
    match compile(pattern) {
        Err(PatternError::Invalid(reason)) => reason,
        other => panic!("{pattern}: Go refuses it, but got {other:?}"),
    }
}

#[test]
fn perl_classes_and_word_boundaries_are_ascii_as_in_go() {
    let cases = [
        (r"^\d+$", "123", true),
        (r"^\d+$", "١٢٣", false),
        (r"^\D$", "١", true),
        (r"^\S+$", "a\u{a0}b", true),
        (r"^\s$", "\u{a0}", false),
        (r"^\s+$", "\t\n\x0C\r ", true),
        (r"^\s$", "\x0B", false),
        (r"^[\w-]+$", "é-a", false),
        (r"^[\w-]+$", "a_b-9", true),
        (r"^\W$", "é", true),
        (r"\bb", "éb", true),
        (r"a\b", "aé", true),
        (r"a\B", "aé", false),
        (r"^[^\d]$", "١", true),
        (r"^[\D]$", "5", false),
        (r"(?i)^\w$", "K", true),
        // `.` and `\pL` stay Unicode, as in Go.
        (r"^.$", "é", true),
        (r"^\pL+$", "héllo", true),
    ];
    for (pattern, text, want) in cases {
        assert_eq!(go_matches(pattern, text), want, "{pattern} on {text:?}");
    }
}

#[test]
fn classes_read_brackets_and_doubled_operators_literally() {
    let cases = [
        ("^[a-z0-9--]+$", "a-", true),
        ("^[a&&b]+$", "&a", true),
        ("^[a~~b]+$", "~", true),
        ("^[[]$", "[", true),
        ("^[a[b]$", "[", true),
        ("^[]a]+$", "]a", true),
        ("^[^]a]$", "b", true),
        ("^[a-]$", "-", true),
        ("^[--/]$", ".", true),
        ("^[[:alpha:]]+$", "aZ", true),
        ("^[[:^digit:]x]$", "5", false),
        ("^[^[:space:]]$", "\u{a0}", true),
        (r"^[\x{41}-\x{43}]$", "B", true),
        (r"^[\pN]$", "٣", true),
        (r"^[^\P{Greek}]$", "α", true),
    ];
    for (pattern, text, want) in cases {
        assert_eq!(go_matches(pattern, text), want, "{pattern} on {text:?}");
    }
}

#[test]
fn go_only_syntax_is_read_as_go_reads_it() {
    let cases = [
        (r"^\Q.*+\E$", ".*+", true),
        (r"^\Q.*", "x", false),
        (r"^a\Qbc\E*$", "abccc", true),
        (r"^\0$", "\0", true),
        (r"^\101\12$", "A\n", true),
        (r"^\x{000041}$", "A", true),
        // `\<` and `\>` are literals in Go (word boundaries in the regex crate).
        (r"^\<a\>$", "<a>", true),
        // A `{` that starts no count is a literal.
        ("^a{,2}$", "a{,2}", true),
        ("^a{01}$", "a{01}", true),
        ("^{x}$", "{x}", true),
        ("^a{2}$", "aa", true),
        ("^a{2,}?$", "aaa", true),
        (r"\b{start}", "x{start}", true),
        // Script, not Script_Extensions: U+0342 is Inherited with Greek among its extensions.
        (r"^\p{Greek}$", "\u{342}", false),
        (r"^\p{Greek}$", "α", true),
        // Go's C has no unassigned code points.
        (r"^\pC$", "\u{378}", false),
        (r"^\PC$", "\u{378}", true),
        (r"^\pC$", "\u{7}", true),
        ("(?i)^abc$", "ABC", true),
        ("(?i-i)^a$", "A", false),
        ("(?s:.)", "\n", true),
        ("(?U)^a+", "aaa", true),
        ("(?P<x>a)(?<y1>b)(?P<1>c)", "abc", true),
        (r"\x{D800}|b", "b", true),
        ("^a(?i)b$", "aB", true),
    ];
    for (pattern, text, want) in cases {
        assert_eq!(go_matches(pattern, text), want, "{pattern} on {text:?}");
    }
}

#[test]
fn what_go_refuses_is_invalid_with_gos_message() {
    let cases = [
        (
            "(?x)a",
            "error parsing regexp: invalid or unsupported Perl syntax: `(?x`",
        ),
        (
            "(?u)a",
            "error parsing regexp: invalid or unsupported Perl syntax: `(?u`",
        ),
        (
            "(?i-)a",
            "error parsing regexp: invalid or unsupported Perl syntax: `(?i-)`",
        ),
        (
            "(?=a)",
            "error parsing regexp: invalid or unsupported Perl syntax: `(?=`",
        ),
        (
            "(?<=a)",
            "error parsing regexp: invalid named capture: `(?<=a)`",
        ),
        (
            r"\u0041",
            "error parsing regexp: invalid escape sequence: `\\u`",
        ),
        // The message quotes what Go consumed: up to and with a character of any width, or
        // the digit that passed U+10FFFF (slicing by characters counted as bytes panicked).
        (
            "\\x{é}",
            "error parsing regexp: invalid escape sequence: `\\x{é`",
        ),
        (
            "\\x{12é",
            "error parsing regexp: invalid escape sequence: `\\x{12é`",
        ),
        (
            r"\x{110000}",
            "error parsing regexp: invalid escape sequence: `\\x{110000`",
        ),
        (
            r"\x{12",
            "error parsing regexp: invalid escape sequence: `\\x{12`",
        ),
        (
            r"\1",
            "error parsing regexp: invalid escape sequence: `\\1`",
        ),
        (
            r"\C",
            "error parsing regexp: invalid escape sequence: `\\C`",
        ),
        (
            r"[\b]",
            "error parsing regexp: invalid escape sequence: `\\b`",
        ),
        (
            "a{1001}",
            "error parsing regexp: invalid repeat count: `{1001}`",
        ),
        (
            "a{2,1}",
            "error parsing regexp: invalid repeat count: `{2,1}`",
        ),
        (
            "(a{100}){11}",
            "error parsing regexp: invalid repeat count: `{11}`",
        ),
        (
            "a**",
            "error parsing regexp: invalid nested repetition operator: `**`",
        ),
        (
            "a*??",
            "error parsing regexp: invalid nested repetition operator: `*??`",
        ),
        (
            "a{2}{3}",
            "error parsing regexp: invalid nested repetition operator: `{2}{3}`",
        ),
        (
            "*a",
            "error parsing regexp: missing argument to repetition operator: `*`",
        ),
        (
            "(|+)",
            "error parsing regexp: missing argument to repetition operator: `+`",
        ),
        (
            r"\p{Foo}",
            "error parsing regexp: invalid character class range: `\\p{Foo}`",
        ),
        (
            r"\pX",
            "error parsing regexp: invalid character class range: `\\pX`",
        ),
        (
            "[[:foo:]]",
            "error parsing regexp: invalid character class range: `[:foo:]`",
        ),
        (
            "[z-a]",
            "error parsing regexp: invalid character class range: `z-a`",
        ),
        ("[a", "error parsing regexp: missing closing ]: `[a`"),
        ("(a", "error parsing regexp: missing closing ): `(a`"),
        ("a)", "error parsing regexp: unexpected ): `a)`"),
        (
            "a\\",
            "error parsing regexp: trailing backslash at end of expression: ``",
        ),
    ];
    for (pattern, want) in cases {
        assert_eq!(go_refuses(pattern), want, "{pattern}");
    }
}

#[test]
fn nested_counts_within_goes_limit_compile() {
    assert!(go_matches("^(a{10}){100}$", &"a".repeat(1000)));
    // A zero count ends the product (`repeatIsValid`).
    assert!(go_matches("^((a{500}){0}){3}b$", "b"));
}

#[test]
fn what_only_newer_go_reads_is_not_checked() {
    for pattern in [r"\p{Letter}", r"\p{latin}", r"\p{Assigned}"] {
        assert!(
            matches!(compile(pattern), Err(PatternError::Unsupported(_))),
            "{pattern}"
        );
    }
}

/// CEL's patterns are compiled once inside `with_shared_patterns` (nested scopes share it), and
/// nothing is kept once the outermost scope returns: the language server validates for days.
#[test]
fn shared_patterns_live_only_as_long_as_their_scope() {
    let kept = || SHARED.with_borrow(|shared| shared.as_ref().map(|memo| memo.len()));
    assert_eq!(kept(), None);
    let outside = compile_shared("^a+$").unwrap();
    assert!(!Rc::ptr_eq(&outside, &compile_shared("^a+$").unwrap()));
    assert_eq!(kept(), None);
    with_shared_patterns(|| {
        let first = compile_shared("^a+$").unwrap();
        with_shared_patterns(|| {
            assert!(Rc::ptr_eq(&first, &compile_shared("^a+$").unwrap()));
        });
        assert!(compile_shared("a{1001}").is_err());
        assert_eq!(kept(), Some(2));
    });
    assert_eq!(kept(), None);
}
