//! Snippets for the shapes traffic-routing scripts take (written for this project from what
//! the scripts do: set the weights of a stable and a canary destination, add header matches,
//! return the object or an ingress's annotations). Offered where a statement starts.

use std::ops::Range;

use super::completion::{in_comment_or_string, word_at};
use kruise_lua_engine::script::ScriptFlavor as Flavor;

/// One snippet: LSP snippet syntax (`${1:name}`, `$0`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snippet {
    pub label: &'static str,
    pub detail: &'static str,
    pub body: &'static str,
}

const CUSTOM: &[Snippet] = &[
    Snippet {
        label: "script",
        detail: "a whole script: read the spec, change it, return obj.data",
        body: "local spec = obj.data.spec\n${0}\nreturn obj.data",
    },
    Snippet {
        label: "forroutes",
        detail: "for each route of a list in the spec",
        // One placeholder for the list, not `${2:spec.${3:http}}`: Neovim's snippet parser
        // (vim.snippet, 0.11 and 0.12) rejects a placeholder inside another one's default.
        body: "for _, ${1:route} in ipairs(${2:spec.http} or {}) do\n\t${0}\nend",
    },
    Snippet {
        label: "weights",
        detail: "stable and canary destinations with obj's weights",
        body: "${1:route}.${2:destinations} = {\n\t{ ${3:host} = obj.stableService, weight = obj.stableWeight },\n\t{ ${3:host} = obj.canaryService, weight = obj.canaryWeight },\n}${0}",
    },
    Snippet {
        label: "formatches",
        detail: "for each header match of the step (obj.matches)",
        body: "for _, match in ipairs(obj.matches or {}) do\n\tfor _, header in ipairs(match.headers or {}) do\n\t\t${0:-- header.name, header.value, header.type}\n\tend\nend",
    },
    Snippet {
        label: "lfunction",
        detail: "local function",
        body: "local function ${1:name}(${2})\n\t${0}\nend",
    },
];

const INGRESS: &[Snippet] = &[
    Snippet {
        label: "script",
        detail: "a whole ingress script: return the annotations to set",
        body: "local annotations = {}\n${0}\nreturn annotations",
    },
    Snippet {
        label: "weightannotation",
        detail: "the canary weight as an annotation (-1: not set this step)",
        body: "if obj.weight ~= \"-1\" then\n\tannotations[\"${1:example.io/canary-weight}\"] = obj.weight\nend${0}",
    },
    Snippet {
        label: "lfunction",
        detail: "local function",
        body: "local function ${1:name}(${2})\n\t${0}\nend",
    },
];

/// The snippets to offer at `offset`, with the range they replace (the word typed so far);
/// none unless only whitespace precedes that word on its line.
pub fn snippets_at(
    source: &str,
    offset: usize,
    flavor: Flavor,
) -> Option<(Range<usize>, &'static [Snippet])> {
    let offset = offset.min(source.len());
    if !source.is_char_boundary(offset) || in_comment_or_string(source, offset) {
        return None;
    }
    let word = word_at(source, offset);
    let word = if word.is_empty() {
        offset..offset
    } else {
        word.start..offset.max(word.start)
    };
    let line_start = source[..word.start].rfind('\n').map_or(0, |i| i + 1);
    if !source[line_start..word.start].trim().is_empty() {
        return None;
    }
    Some((
        word,
        match flavor {
            Flavor::Ingress => INGRESS,
            _ => CUSTOM,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offered_where_a_statement_starts() {
        let source = "local x = 1\n  for\nlocal y = fo\n";
        let at = source.find("for").unwrap() + 3;
        let (range, found) = snippets_at(source, at, Flavor::Custom).unwrap();
        assert_eq!(&source[range], "for");
        assert!(found.iter().any(|s| s.label == "forroutes"));
        assert!(snippets_at(source, source.find("fo\n").unwrap() + 2, Flavor::Custom).is_none());
        assert!(snippets_at("-- sc", 5, Flavor::Custom).is_none());
        let (_, ingress) = snippets_at("", 0, Flavor::Ingress).unwrap();
        assert!(ingress.iter().any(|s| s.body.contains("annotations")));
    }

    #[test]
    fn no_placeholder_nests_in_another() {
        // Neovim's vim.snippet parser fails on `${2:a${3:b}}` ("snippet parsing failed"), so the
        // snippet would not expand there (the Neovim e2e test expands `forroutes`).
        for snippet in CUSTOM.iter().chain(INGRESS) {
            let mut depth = 0;
            let bytes = snippet.body.as_bytes();
            for (i, &b) in bytes.iter().enumerate() {
                if b == b'$' && bytes.get(i + 1) == Some(&b'{') {
                    assert_eq!(depth, 0, "{}: a placeholder inside another", snippet.label);
                    depth = 1;
                } else if b == b'}' && depth > 0 {
                    depth -= 1;
                }
            }
        }
    }

    #[test]
    fn every_snippet_is_valid_lua_with_its_placeholders_filled() {
        for snippet in CUSTOM.iter().chain(INGRESS) {
            // `${n:default}` → default, `${n}`/`$0` → nothing.
            let mut text = String::new();
            let mut rest = snippet.body;
            while let Some(i) = rest.find('$') {
                text.push_str(&rest[..i]);
                rest = &rest[i + 1..];
                if let Some(inner) = rest.strip_prefix('{') {
                    // Nested placeholders: take up to the matching brace.
                    let mut depth = 1;
                    let end = inner
                        .char_indices()
                        .find(|(_, c)| {
                            match c {
                                '{' => depth += 1,
                                '}' => depth -= 1,
                                _ => {}
                            }
                            depth == 0
                        })
                        .unwrap()
                        .0;
                    let body = &inner[..end];
                    let default = body.split_once(':').map_or("", |(_, d)| d);
                    // Defaults may hold placeholders themselves.
                    let default = default.replace("${3:http}", "http");
                    text.push_str(&default);
                    rest = &inner[end + 1..];
                } else {
                    rest = rest.trim_start_matches(|c: char| c.is_ascii_digit());
                }
            }
            text.push_str(rest);
            let wrapped = match snippet.label {
                "forroutes" => format!("local spec = obj.data.spec\n{text}\nreturn obj.data"),
                "weights" => format!("local route = {{}}\n{text}\nreturn obj.data"),
                "weightannotation" => {
                    format!("local annotations = {{}}\n{text}\nreturn annotations")
                }
                _ => format!("{text}\nreturn obj.data"),
            };
            let parsed = crate::analysis::parse::parse(&wrapped);
            assert!(
                parsed.errors.is_empty(),
                "{}: {:?}\n{wrapped}",
                snippet.label,
                parsed.errors
            );
        }
    }
}
