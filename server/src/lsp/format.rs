//! Formatting of Lua files with StyLua (the `stylua` crate), configured by the `stylua.toml` /
//! `.stylua.toml` or `.editorconfig` nearest above the file, always as Lua 5.1. A file with
//! syntax errors is never formatted; the answer is the smallest set of line edits.

use std::ops::Range;
use std::path::Path;

use similar::{Algorithm, DiffOp, capture_diff_slices};

use crate::analysis::ParsedScript;

/// StyLua's own configuration file names, in the order StyLua looks for them.
const STYLUA_FILES: [&str; 2] = ["stylua.toml", ".stylua.toml"];

/// The configuration for a file: the nearest `stylua.toml`/`.stylua.toml` above it, else its
/// `.editorconfig` properties (StyLua's mapping), else StyLua's defaults; the syntax is always
/// Lua 5.1. A configuration file that cannot be read is an error naming it.
pub fn config_for(path: &Path) -> Result<stylua_lib::Config, String> {
    let mut config = None;
    for dir in path.ancestors().skip(1) {
        if let Some(file) = STYLUA_FILES
            .iter()
            .map(|name| dir.join(name))
            .find(|f| f.is_file())
        {
            let text =
                std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
            let parsed: stylua_lib::Config =
                toml::from_str(&text).map_err(|e| format!("{}: {e}", file.display()))?;
            config = Some(parsed);
            break;
        }
    }
    let mut config = match config {
        Some(config) => config,
        // StyLua reads `.editorconfig` only without a stylua.toml (its README, "EditorConfig").
        None => stylua_lib::editorconfig::parse(stylua_lib::Config::default(), path)
            .map_err(|e| format!(".editorconfig for {}: {e}", path.display()))?,
    };
    config.syntax = stylua_lib::LuaVersion::Lua51;
    Ok(config)
}

/// Edits (byte range of `source`, replacement) that format `source`, or only the statements
/// overlapping `range`; none when it is formatted already. Refused when the script has syntax
/// errors (as Kruise's Lua 5.1 parses it): formatting guesses would rewrite broken code.
pub fn format(
    parsed: &ParsedScript,
    config: stylua_lib::Config,
    range: Option<Range<usize>>,
) -> Result<Vec<(Range<usize>, String)>, String> {
    let source = parsed.source();
    if let Some(why) = crate::analysis::shape_limits::formatting_refusal(source) {
        return Err(format!("not formatted: {why}"));
    }
    if let Some(error) = parsed.errors().first() {
        let line = source[..error.range.start.min(source.len())]
            .matches('\n')
            .count()
            + 1;
        return Err(format!(
            "not formatted: syntax error at line {line}: {}",
            error.message
        ));
    }
    let range = range.map(|r| stylua_lib::Range::from_values(Some(r.start), Some(r.end)));
    let formatted =
        stylua_lib::format_code(source, config, range, stylua_lib::OutputVerification::None)
            .map_err(|e| format!("not formatted: {e}"))?;
    Ok(line_edits(source, &formatted))
}

/// The changed lines of `old` → `new` as replacements of whole lines of `old`.
fn line_edits(old: &str, new: &str) -> Vec<(Range<usize>, String)> {
    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
    let mut starts = Vec::with_capacity(old_lines.len() + 1);
    let mut at = 0;
    for line in &old_lines {
        starts.push(at);
        at += line.len();
    }
    starts.push(at);
    capture_diff_slices(Algorithm::Myers, &old_lines, &new_lines)
        .into_iter()
        .filter(|op| !matches!(op, DiffOp::Equal { .. }))
        .map(|op| {
            let (_, old_range, new_range) = op.as_tag_tuple();
            (
                starts[old_range.start]..starts[old_range.end],
                new_lines[new_range].concat(),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`super::format`] on a script parsed here.
    fn format(
        source: &str,
        config: stylua_lib::Config,
        range: Option<Range<usize>>,
    ) -> Result<Vec<(Range<usize>, String)>, String> {
        super::format(&ParsedScript::new(source), config, range)
    }

    fn apply(source: &str, edits: &[(Range<usize>, String)]) -> String {
        let mut out = source.to_string();
        for (range, text) in edits.iter().rev() {
            out.replace_range(range.clone(), text);
        }
        out
    }

    fn dir(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("kl-format-{name}-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("Kind")).unwrap();
        dir
    }

    #[test]
    fn formats_with_minimal_edits() {
        let source =
            "local a = 1\nlocal   b={1,2}\nlocal c = 3\nif a then b[1]=2 end\nreturn obj.data\n";
        let edits = format(source, stylua_lib::Config::default(), None).unwrap();
        assert_eq!(edits.len(), 2, "only the changed lines: {edits:?}");
        let formatted = apply(source, &edits);
        assert_eq!(
            formatted,
            "local a = 1\nlocal b = { 1, 2 }\nlocal c = 3\nif a then\n\tb[1] = 2\nend\nreturn obj.data\n"
        );
        assert!(
            format(&formatted, stylua_lib::Config::default(), None)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn never_formats_broken_or_newer_lua() {
        for source in [
            "local x = = 1\n",
            "local y = 7 // 2\n",
            "goto done\n::done::\n",
        ] {
            let error = format(source, stylua_lib::Config::default(), None).unwrap_err();
            assert!(error.contains("line 1"), "{source}: {error}");
        }
    }

    #[test]
    fn range_formatting_leaves_the_rest() {
        let source = "local   a=1\nlocal   b=2\n";
        let start = source.find("local   b").unwrap();
        let edits = format(
            source,
            stylua_lib::Config::default(),
            Some(start..source.len()),
        )
        .unwrap();
        assert_eq!(apply(source, &edits), "local   a=1\nlocal b = 2\n");
    }

    #[test]
    fn stylua_toml_then_editorconfig() {
        let source = "if x then y = 'a' end\n";
        let root = dir("config");
        let script = root.join("Kind/trafficRouting.lua");
        std::fs::write(
            root.join(".editorconfig"),
            "root = true\n[*.lua]\nindent_style = space\nindent_size = 2\n",
        )
        .unwrap();
        let config = config_for(&script).unwrap();
        let edits = format(source, config, None).unwrap();
        assert_eq!(apply(source, &edits), "if x then\n  y = \"a\"\nend\n");
        std::fs::write(
            root.join("stylua.toml"),
            "indent_type = \"Spaces\"\nindent_width = 3\nquote_style = \"ForceSingle\"\n",
        )
        .unwrap();
        let config = config_for(&script).unwrap();
        assert_eq!(config.syntax, stylua_lib::LuaVersion::Lua51);
        let edits = format(source, config, None).unwrap();
        assert_eq!(apply(source, &edits), "if x then\n   y = 'a'\nend\n");
        std::fs::write(root.join("stylua.toml"), "indent_widht = 3\n").unwrap();
        let error = config_for(&script).unwrap_err();
        assert!(error.contains("stylua.toml"), "{error}");
        std::fs::remove_dir_all(&root).unwrap();
    }
}

#[cfg(test)]
mod library_style {
    //! Issue 23, defect 13: the library ships the StyLua configuration it is written in, so
    //! formatting one of its scripts in an editor is a no-op.

    use std::path::{Path, PathBuf};

    fn scripts(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                scripts(&path, out);
            } else if path.extension().is_some_and(|e| e == "lua") {
                out.push(path);
            }
        }
    }

    /// `KRUISE_LUA_BLESS=1` rewrites the scripts formatted.
    #[test]
    fn formatting_a_library_script_changes_nothing() {
        let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../lua_configuration"));
        assert!(root.join("stylua.toml").is_file());
        let mut found = Vec::new();
        scripts(root, &mut found);
        assert!(found.len() > 10, "{found:?}");
        let bless = std::env::var_os("KRUISE_LUA_BLESS").is_some();
        let mut unformatted = Vec::new();
        for path in found {
            let source = std::fs::read_to_string(&path).unwrap();
            let config = super::config_for(&path).unwrap();
            let edits =
                super::format(&super::ParsedScript::new(source.as_str()), config, None).unwrap();
            if edits.is_empty() {
                continue;
            }
            if bless {
                let mut text = source.clone();
                for (range, replacement) in edits.into_iter().rev() {
                    text.replace_range(range, &replacement);
                }
                std::fs::write(&path, text).unwrap();
            } else {
                unformatted.push(format!("{} ({} edits)", path.display(), edits.len()));
            }
        }
        assert!(
            unformatted.is_empty(),
            "not formatted by lua_configuration/stylua.toml:\n{}",
            unformatted.join("\n")
        );
    }
}
