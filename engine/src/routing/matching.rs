//! Matching pieces several gateway models share: RE2 regular expressions matched against a
//! whole value, as Envoy's `safe_regex` (and so Istio, Gloo and Emissary) does.

use regex::Regex;

/// Why `pattern` is not a valid RE2 expression, or `None` when it is. The `regex` crate
/// follows RE2's syntax (no look-around, no back-references), as the workspace Cargo.toml notes.
pub fn re2_problem(pattern: &str) -> Option<String> {
    Regex::new(pattern).err().map(|error| {
        // The crate's message spans lines with a caret diagram; the last line says why.
        let text = error.to_string();
        let reason = text.lines().last().unwrap_or("invalid").trim();
        format!("invalid RE2 regular expression {pattern:?}: {reason}")
    })
}

/// Whether `pattern` matches all of `text`. Envoy's `safe_regex` matchers match the whole
/// value (envoy/type/matcher/v3/regex.proto: "The regex match must match the full string");
/// an invalid pattern matches nothing (the gateway rejects the configuration, which
/// `config_problems` reports).
pub fn full_match(pattern: &str, text: &str) -> bool {
    Regex::new(&format!("^(?:{pattern})$")).is_ok_and(|re| re.is_match(text))
}

/// A sample string `pattern` matches in full, for probes: tries the literal text of the
/// pattern without its anchors and escapes, then a few common shapes. `None` when none fits.
pub fn sample_match(pattern: &str) -> Option<String> {
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
    fn regexes_match_the_whole_value() {
        assert!(full_match("/api/v[0-9]+", "/api/v2"));
        assert!(!full_match("/api/v[0-9]+", "/api/v2/users"));
        assert!(!full_match("a(", "a("));
    }

    #[test]
    fn re2_rejects_look_around() {
        assert!(re2_problem("^(?!x).*").is_some());
        assert!(re2_problem("^qa-[0-9]+$").is_none());
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
