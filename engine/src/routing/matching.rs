//! Matching pieces several gateway models share: RE2 regular expressions matched against a
//! whole value, as Envoy's `safe_regex` (and so Istio, Gloo and Emissary) does.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use regex::Regex;

/// Patterns compiled once and shared: a step's check routes hundreds of probes through the same
/// few patterns, the steps and cases of a script share most of them, and compiling a pattern
/// such as `\p{L}{200}` costs milliseconds each time. Filled while it is active (see
/// [`with_compiled_patterns`], [`with_pattern_memo`]); nothing outside it is kept.
///
/// Bounded: within one call it keeps at most [`COMPILED_LIMIT`] patterns (later ones are
/// compiled on each use), as a step's check needs them all at once (dropping one it still uses
/// would compile it again for every probe). What a memo carries from one call of
/// [`with_pattern_memo`] to the next is bounded tighter: at most [`CARRIED_LIMIT`] patterns
/// and [`CARRIED_BYTES`] of compiled programs, else it starts the next call empty. A program
/// counts [`SMALL_PROGRAM`] when it compiles within that size limit, else the limit it was
/// compiled with (an upper bound: the `regex` crate refuses a program past its limit). So a
/// memo kept for a whole run holds, between cases, no more than that whatever the input.
/// (Each `Regex`'s lazy DFA cache is bounded by the crate itself, 2 MiB by default.)
#[derive(Default)]
pub struct PatternMemo {
    /// By (anchoring, size limit), then by the pattern as written; `None` records a pattern
    /// that failed. Shared (`Rc`), not cloned: a cloned `Regex` gets a cache pool of its own,
    /// whose first search builds a lazy DFA cache again (most of what a match cost before).
    /// Looked up by `&str` (no key built per lookup: a step matches thousands of times against
    /// a few patterns).
    by_form: Vec<((Anchoring, usize), FormMemo)>,
    len: usize,
    /// The compiled size counted so far (see [`PatternMemo`]).
    bytes: usize,
    /// [`sample_match`] of each pattern sampled (the probe sets of a case's steps sample the
    /// same patterns again; sampling tries a dozen candidates, each a match).
    samples: Samples,
    /// [`super::probe::sample_for`] of each route condition's regex (parsed, not compiled).
    regex_samples: Samples,
}

/// Samples by the pattern as written.
type Samples = HashMap<String, Option<String>>;

/// One form's patterns by the pattern as written.
type FormMemo = HashMap<String, Option<Rc<Regex>>>;

/// How a pattern is compiled: as written (a search), or anchored at both ends (`^(?:…)$`, a
/// whole-value match).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Anchoring {
    AsWritten,
    Whole,
    /// The whole-value form of a pattern that also parses as written (what [`re2_problem`]
    /// accepts without compiling the pattern as written); a syntax error otherwise.
    CheckedWhole,
}

thread_local! {
    /// The memo active on this thread, if any: installed by [`with_compiled_patterns`] (for
    /// one call) or lent by [`with_pattern_memo`] (a memo its caller keeps between calls).
    static COMPILED: RefCell<Option<PatternMemo>> =
        const { RefCell::new(None) };
}

/// At most this many patterns (and samples) are kept in one memo.
const COMPILED_LIMIT: usize = 4096;

/// At most this many patterns (and samples) are carried from one call of
/// [`with_pattern_memo`] to the next (see [`PatternMemo`]).
const CARRIED_LIMIT: usize = 1024;

/// At most this many bytes of compiled programs are carried from one call of
/// [`with_pattern_memo`] to the next (see [`PatternMemo`]).
const CARRIED_BYTES: usize = 64 << 20;

/// The size limit a pattern is compiled with first, when its caller's is larger: a program
/// within it counts this much in [`PatternMemo`]'s bound, a larger one the caller's limit. A
/// pattern past it stops compiling as soon as it passes it (1.4 % of the cost of compiling
/// `\p{L}{200}`, measured in instructions); every pattern of the bundled library fits it.
const SMALL_PROGRAM: usize = 64 << 10;

impl PatternMemo {
    fn get(&self, pattern: &str, form: (Anchoring, usize)) -> Option<Option<Rc<Regex>>> {
        self.by_form
            .iter()
            .find(|(f, _)| *f == form)
            .and_then(|(_, patterns)| patterns.get(pattern).cloned())
    }

    fn insert(
        &mut self,
        pattern: &str,
        form: (Anchoring, usize),
        regex: Option<Rc<Regex>>,
        bytes: usize,
    ) {
        if self.len >= COMPILED_LIMIT {
            return;
        }
        self.len += 1;
        self.bytes += bytes;
        let at = match self.by_form.iter().position(|(f, _)| *f == form) {
            Some(at) => at,
            None => {
                self.by_form.push((form, HashMap::new()));
                self.by_form.len() - 1
            }
        };
        self.by_form[at].1.insert(pattern.to_owned(), regex);
    }
}

/// Runs `f` with each pattern compiled at most once: the intent check wraps a case's (or a
/// step's) check in it. Inside [`with_pattern_memo`] it shares that memo; otherwise the memo
/// lives only for the call (nested calls share the outer one), so nothing outlives the check
/// that built it.
pub fn with_compiled_patterns<R>(f: impl FnOnce() -> R) -> R {
    super::memo::scoped(&COMPILED, f)
}

/// Runs `f` with `memo` as the memo of compiled patterns, kept by the caller for its next
/// calls: a worker checking many cases compiles the patterns they share once (a script's
/// cases start from the same configuration). Bounded as [`PatternMemo`] says: a memo carrying
/// more than its bound between calls is emptied first. Inside another active memo, `f` shares
/// that one and `memo` is not used.
pub fn with_pattern_memo<R>(memo: &mut PatternMemo, f: impl FnOnce() -> R) -> R {
    if memo.len > CARRIED_LIMIT
        || memo.bytes > CARRIED_BYTES
        || memo.samples.len() > CARRIED_LIMIT
        || memo.regex_samples.len() > CARRIED_LIMIT
    {
        *memo = PatternMemo::default();
    }
    super::memo::lent(&COMPILED, memo, f)
}

/// `pattern` compiled with `size_limit` (the `regex` crate's limit on the compiled program),
/// through the memo of [`with_compiled_patterns`] when one is active.
pub fn compiled(pattern: &str, size_limit: usize) -> Result<Rc<Regex>, regex::Error> {
    compiled_as(pattern, Anchoring::AsWritten, size_limit)
}

fn compiled_as(
    pattern: &str,
    anchoring: Anchoring,
    size_limit: usize,
) -> Result<Rc<Regex>, regex::Error> {
    let form = (anchoring, size_limit);
    let cached = COMPILED.with(|cell| cell.borrow().as_ref().map(|memo| memo.get(pattern, form)));
    match cached {
        Some(Some(Some(regex))) => Ok(regex),
        // A failure is cached as `None`: build again to get its error (rare, and cheap:
        // failures stop early).
        Some(Some(None)) | None => build(pattern, anchoring, size_limit).0,
        Some(None) => {
            let (built, bytes) = build(pattern, anchoring, size_limit);
            COMPILED.with(|cell| {
                if let Some(memo) = cell.borrow_mut().as_mut() {
                    memo.insert(pattern, form, built.as_ref().ok().cloned(), bytes);
                }
            });
            built
        }
    }
}

/// `pattern` compiled in the form `anchoring` says, with the bytes it counts for in a memo
/// (see [`PatternMemo`]).
fn build(
    pattern: &str,
    anchoring: Anchoring,
    size_limit: usize,
) -> (Result<Rc<Regex>, regex::Error>, usize) {
    let anchored;
    let source = match anchoring {
        Anchoring::AsWritten => pattern,
        Anchoring::Whole => {
            anchored = format!("^(?:{pattern})$");
            &anchored
        }
        Anchoring::CheckedWhole => {
            // Its syntax tree alone (no translation, which expands Unicode classes): the
            // whole form holds that tree as written, so it translates and compiles exactly
            // when the whole form does; a pattern that only the wrapping balances (`a)(b`)
            // fails here.
            let parses = regex_syntax::ast::parse::Parser::new()
                .parse(pattern)
                .is_ok();
            if !parses {
                return (Err(regex::Error::Syntax(String::new())), 0);
            }
            // The whole form's own entry counts its size; this one shares it.
            return (compiled_as(pattern, Anchoring::Whole, size_limit), 0);
        }
    };
    if SMALL_PROGRAM < size_limit {
        match regex::RegexBuilder::new(source)
            .size_limit(SMALL_PROGRAM)
            .build()
        {
            Ok(regex) => return (Ok(Rc::new(regex)), SMALL_PROGRAM),
            Err(regex::Error::CompiledTooBig(_)) => {}
            // Any other error does not depend on the limit.
            Err(error) => return (Err(error), 0),
        }
    }
    let built = regex::RegexBuilder::new(source)
        .size_limit(size_limit)
        .build()
        .map(Rc::new);
    let bytes = if built.is_ok() { size_limit } else { 0 };
    (built, bytes)
}

/// The `regex` crate's default size limit (its `RegexBuilder::size_limit` documentation).
const DEFAULT_SIZE_LIMIT: usize = 10 * (1 << 20);

/// Why `pattern` is not a valid RE2 expression, or `None` when it is. The `regex` crate
/// follows RE2's syntax (no look-around, no back-references), as the workspace Cargo.toml notes.
pub fn re2_problem(pattern: &str) -> Option<String> {
    if plain_text(pattern) {
        return None;
    }
    // A pattern that parses alone and compiles as a whole-value match (the form `full_match`
    // needs anyway, so it is compiled once for both) is valid; anything else is compiled as
    // written, which gives the exact error. Compiling was most of what this check cost.
    // (Memoised as a form of its own, so that the parse is not repeated either.)
    if compiled_as(pattern, Anchoring::CheckedWhole, DEFAULT_SIZE_LIMIT).is_ok() {
        return None;
    }
    compiled(pattern, DEFAULT_SIZE_LIMIT).err().map(|error| {
        // The crate's message spans lines with a caret diagram; the last line says why.
        let text = error.to_string();
        let reason = text.lines().last().unwrap_or("invalid").trim();
        format!("invalid RE2 regular expression {pattern:?}: {reason}")
    })
}

/// Whether `pattern` is plain text: no character the RE2 syntax reads as an operator outside a
/// class (flags, groups, classes, repetitions, anchors and escapes all need one of these), so
/// that it is valid and matches exactly its own text. Such patterns (paths, methods, header
/// values) are most of what the models match, and compiling one cost more than all its uses.
/// Bounded in length (a few thousand NFA states at most), so that it is far within the size
/// limit it would be compiled with.
fn plain_text(pattern: &str) -> bool {
    pattern.len() <= PLAIN_TEXT_MAX
        && !pattern.bytes().any(|b| {
            matches!(
                b,
                b'\\'
                    | b'.'
                    | b'+'
                    | b'*'
                    | b'?'
                    | b'('
                    | b')'
                    | b'|'
                    | b'['
                    | b']'
                    | b'{'
                    | b'}'
                    | b'^'
                    | b'$'
            )
        })
}

/// The longest pattern [`plain_text`] takes as plain text.
const PLAIN_TEXT_MAX: usize = 1024;

/// Whether `pattern` matches all of `text`. Envoy's `safe_regex` matchers match the whole
/// value (envoy/type/matcher/v3/regex.proto: "The regex match must match the full string");
/// an invalid pattern matches nothing (the gateway rejects the configuration, which
/// `config_problems` reports).
pub fn full_match(pattern: &str, text: &str) -> bool {
    if plain_text(pattern) {
        return text == pattern;
    }
    compiled_as(pattern, Anchoring::Whole, DEFAULT_SIZE_LIMIT).is_ok_and(|re| re.is_match(text))
}

/// [`full_match`] of one pattern, for a table a model keeps per configuration: the pattern is
/// compiled (through the memo) when a value is first matched, and later matches use the
/// compiled pattern without looking it up again (a step matches thousands of probes against
/// the same few patterns).
#[derive(Debug)]
pub struct WholeValueRegex {
    pattern: String,
    /// [`plain_text`] of the pattern.
    plain: bool,
    /// The whole-value form, `None` when the pattern does not compile (it matches nothing).
    compiled: std::cell::OnceCell<Option<Rc<Regex>>>,
}

impl WholeValueRegex {
    pub fn new(pattern: impl Into<String>) -> Self {
        let pattern = pattern.into();
        WholeValueRegex {
            plain: plain_text(&pattern),
            pattern,
            compiled: std::cell::OnceCell::new(),
        }
    }

    /// The pattern as written.
    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// [`full_match`]`(self.pattern(), text)`.
    pub fn is_match(&self, text: &str) -> bool {
        if self.plain {
            return text == self.pattern;
        }
        self.compiled
            .get_or_init(|| compiled_as(&self.pattern, Anchoring::Whole, DEFAULT_SIZE_LIMIT).ok())
            .as_ref()
            .is_some_and(|re| re.is_match(text))
    }
}

/// Whether `pattern` matches somewhere in `text` (an unanchored search, as PCRE's
/// `ngx.re.match` in ingress-nginx does); an invalid pattern matches nothing.
pub fn search(pattern: &str, text: &str) -> bool {
    if plain_text(pattern) {
        return text.contains(pattern);
    }
    compiled(pattern, DEFAULT_SIZE_LIMIT).is_ok_and(|re| re.is_match(text))
}

/// A sample string `pattern` matches in full, for probes: tries the literal text of the
/// pattern without its anchors and escapes, then a few common shapes. `None` when none fits.
pub fn sample_match(pattern: &str) -> Option<String> {
    kept_sample(pattern, |memo| &mut memo.samples, || sample_of(pattern))
}

/// `sample()`, the probe's sample of a route condition's regex `pattern`, made once while a
/// memo of compiled patterns is active (it lives as long as the patterns it samples).
pub(crate) fn kept_regex_sample(
    pattern: &str,
    sample: impl FnOnce() -> Option<String>,
) -> Option<String> {
    kept_sample(pattern, |memo| &mut memo.regex_samples, sample)
}

/// `sample()` for `pattern`, kept in the active memo's `samples` (at most [`COMPILED_LIMIT`]);
/// made every time without an active memo.
fn kept_sample(
    pattern: &str,
    samples: fn(&mut PatternMemo) -> &mut Samples,
    sample: impl FnOnce() -> Option<String>,
) -> Option<String> {
    let known = COMPILED.with(|cell| {
        let mut memo = cell.borrow_mut();
        memo.as_mut()
            .map(|memo| samples(memo).get(pattern).cloned())
    });
    match known {
        Some(Some(kept)) => kept,
        Some(None) => {
            let made = sample();
            COMPILED.with(|cell| {
                if let Some(memo) = cell.borrow_mut().as_mut() {
                    let kept = samples(memo);
                    if kept.len() < COMPILED_LIMIT {
                        kept.insert(pattern.to_owned(), made.clone());
                    }
                }
            });
            made
        }
        None => sample(),
    }
}

/// [`sample_match`] without the memo.
fn sample_of(pattern: &str) -> Option<String> {
    let stripped = pattern
        .trim_start_matches('^')
        .trim_end_matches('$')
        .replace("\\.", ".")
        .replace("\\-", "-")
        .replace("\\/", "/");
    // `.*` / `.+` / character classes: replace them with plain text (tried first: a pattern
    // such as `.*Android.*` also matches its own text, which reads oddly in reports).
    let simplified = stripped
        .replace(".*", "")
        .replace(".+", "x")
        .replace("[0-9]+", "1")
        .replace("[0-9]*", "1")
        .replace("\\d+", "1")
        .replace("[0-9]", "1")
        .replace("[a-z]+", "a")
        .replace("(.*)", "")
        .replace("(.+)", "x");
    let mut candidates = vec![simplified.clone(), stripped.clone()];
    // An alternation: its first branch.
    if let Some(first) = simplified.split('|').next() {
        candidates.push(first.trim_matches(|c| c == '(' || c == ')').to_owned());
    }
    candidates.push(format!("{simplified}/x"));
    candidates.push(format!("/{simplified}"));
    candidates.extend(["x", "1", "/", "/x", "true", "a"].map(str::to_owned));
    candidates.into_iter().find(|c| full_match(pattern, c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_whole_value_regex_matches_as_full_match_does() {
        for pattern in ["web", "v[0-9]+", "a|b", "(", ".*canary.*", "always|1"] {
            let kept = WholeValueRegex::new(pattern);
            for text in [
                "web",
                "v12",
                "xv1",
                "a",
                "b",
                "ab",
                "(",
                "my-canary-x",
                "always",
                "1",
                "",
            ] {
                assert_eq!(
                    kept.is_match(text),
                    full_match(pattern, text),
                    "{pattern} {text}"
                );
            }
        }
    }

    #[test]
    fn regexes_match_the_whole_value() {
        assert!(full_match("/api/v[0-9]+", "/api/v2"));
        assert!(!full_match("/api/v[0-9]+", "/api/v2/users"));
        assert!(!full_match("a(", "a("));
    }

    /// Plain-text patterns are answered without compiling them: exactly as the compiled
    /// pattern answers.
    #[test]
    fn plain_text_patterns_match_as_compiled() {
        let texts = [
            "", "/api", "/api/v2", "x/api", "GET", "get", "a b", "é-x", "beta=1",
        ];
        for pattern in [
            "",
            "/api",
            "GET",
            "a b",
            "é-x",
            "beta=1",
            "x-canary#1",
            "&~-",
        ] {
            assert!(plain_text(pattern), "{pattern}");
            assert!(re2_problem(pattern).is_none());
            let whole = build(pattern, Anchoring::Whole, DEFAULT_SIZE_LIMIT)
                .0
                .unwrap();
            let written = build(pattern, Anchoring::AsWritten, DEFAULT_SIZE_LIMIT)
                .0
                .unwrap();
            for text in texts.into_iter().chain([pattern]) {
                assert_eq!(
                    full_match(pattern, text),
                    whole.is_match(text),
                    "{pattern} {text}"
                );
                assert_eq!(
                    search(pattern, text),
                    written.is_match(text),
                    "{pattern} {text}"
                );
            }
        }
        for pattern in [
            "a.b", "a+", "(a)", "[a]", "a{2}", "^a", "a$", "a|b", "\\d", "a?",
        ] {
            assert!(!plain_text(pattern), "{pattern}");
        }
        assert!(!plain_text(&"a".repeat(PLAIN_TEXT_MAX + 1)));
    }

    #[test]
    fn re2_rejects_look_around() {
        assert!(re2_problem("^(?!x).*").is_some());
        assert!(re2_problem("^qa-[0-9]+$").is_none());
    }

    #[test]
    fn a_pattern_valid_only_inside_the_whole_value_form_is_still_invalid() {
        // `^(?:a)(b)$` compiles, `a)(b` does not: the check must not take one for the other.
        let problem = re2_problem("a)(b").expect("an unopened group");
        assert!(
            problem.starts_with("invalid RE2 regular expression"),
            "{problem}"
        );
    }

    #[test]
    fn a_lent_memo_keeps_patterns_and_carries_a_bounded_amount() {
        let mut memo = PatternMemo::default();
        with_pattern_memo(&mut memo, || assert!(full_match("a+", "aa")));
        assert!(
            memo.get("a+", (Anchoring::Whole, DEFAULT_SIZE_LIMIT))
                .is_some()
        );
        assert_eq!(memo.bytes, SMALL_PROGRAM, "a small program counts as small");
        // `\p{L}{200}` compiles past the small size (200 copies of the class's UTF-8
        // automaton), so each counts the caller's limit. One call keeps them all (its step may
        // use each for every probe); the next call starts empty.
        let big = |n: usize| format!("\\p{{L}}{{{}}}", 200 + n);
        let count = CARRIED_BYTES / DEFAULT_SIZE_LIMIT + 1;
        with_pattern_memo(&mut memo, || {
            for n in 0..count {
                assert!(re2_problem(&big(n)).is_none());
            }
        });
        assert!(memo.bytes > CARRIED_BYTES);
        for n in 0..count {
            assert!(
                memo.get(&big(n), (Anchoring::Whole, DEFAULT_SIZE_LIMIT))
                    .is_some()
            );
        }
        with_pattern_memo(&mut memo, || assert!(full_match("b+", "b")));
        assert_eq!(memo.bytes, SMALL_PROGRAM, "started empty");
        assert!(
            memo.get("a+", (Anchoring::Whole, DEFAULT_SIZE_LIMIT))
                .is_none()
        );
    }

    #[test]
    fn samples_match_their_pattern() {
        for pattern in [
            "^qa-[0-9]+$",
            ".*Android.*",
            "^b[0-9]+$",
            "/api/.*",
            "v1|v2",
        ] {
            let sample = sample_match(pattern).unwrap();
            assert!(full_match(pattern, &sample), "{pattern} {sample}");
        }
    }
}
