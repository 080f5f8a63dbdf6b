//! The documentation agrees with the binary: every `kruise-lua <command> [--flag…]` shown in
//! README.md, CONTRIBUTING.md and docs/*.md (fenced code blocks and inline code) names a
//! subcommand that `kruise-lua --help` lists and only flags that `kruise-lua <command> --help`
//! prints; and the other way round, every option `kruise-lua <command> --help` lists is
//! described in docs/CLI.md under a heading that names `kruise-lua <command>`. The help is
//! read from the built binary, so a command or option added or renamed by anyone keeps this
//! test true without editing it.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One command line the docs show: where, and its words after `kruise-lua`.
#[derive(Debug)]
struct Shown {
    place: String,
    words: Vec<String>,
}

/// The Markdown files whose commands must exist.
fn doc_files() -> Vec<PathBuf> {
    let root = common::workspace();
    let mut files = vec![root.join("README.md"), root.join("CONTRIBUTING.md")];
    let mut docs: Vec<PathBuf> = fs::read_dir(root.join("docs"))
        .expect("docs/")
        .map(|e| e.expect("docs entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files.into_iter().filter(|p| p.exists()).collect()
}

/// The code of a Markdown text: each line of a fenced block, and each inline code span, with
/// its line number.
fn code_of(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fenced = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            // A shell comment is prose.
            let code = line.split(" #").next().unwrap_or(line);
            if !code.trim_start().starts_with('#') {
                out.push((i + 1, code.to_string()));
            }
            continue;
        }
        let mut parts = line.split('`');
        parts.next();
        while let (Some(span), Some(_)) = (parts.next(), parts.next()) {
            out.push((i + 1, span.to_string()));
        }
    }
    out
}

/// The `kruise-lua …` command lines in a piece of code: the words after `kruise-lua`, up to
/// the end of that shell command.
fn commands_in(code: &str) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let words: Vec<&str> = code.split_whitespace().collect();
    for (i, w) in words.iter().enumerate() {
        if *w != "kruise-lua" {
            continue;
        }
        // A command starts a line or follows a shell operator or a runner (`uvx kruise-lua …`);
        // elsewhere `kruise-lua` is prose ("using kruise-lua bundled with …").
        let starts_command = i == 0
            || matches!(
                words[i - 1],
                "&&" | "||"
                    | ";"
                    | "|"
                    | "$"
                    | "("
                    | "uvx"
                    | "exec"
                    | "then"
                    | "do"
                    | "time"
                    | "run:"
            );
        if !starts_command {
            continue;
        }
        let rest: Vec<String> = words[i + 1..]
            .iter()
            .take_while(|w| !matches!(**w, "|" | "||" | "&&" | ";" | ">" | "2>&1" | "\\"))
            .map(|w| w.trim_end_matches([';', ')', ',']).to_string())
            .collect();
        found.push(rest);
    }
    found
}

fn help(args: &[&str]) -> String {
    let out = Command::new(common::binary())
        .args(args)
        .output()
        .expect("run kruise-lua --help");
    assert!(out.status.success(), "kruise-lua {args:?} failed");
    String::from_utf8(out.stdout).expect("help is UTF-8")
}

/// The subcommands `kruise-lua --help` lists (two-space-indented names under "Commands:").
fn subcommands() -> BTreeSet<String> {
    let text = help(&["--help"]);
    let mut names = BTreeSet::new();
    let mut in_commands = false;
    for line in text.lines() {
        if line.starts_with("Commands:") {
            in_commands = true;
            continue;
        }
        if in_commands {
            if line.trim().is_empty() {
                break;
            }
            if let Some(name) = line.strip_prefix("  ").filter(|l| !l.starts_with(' ')) {
                names.insert(name.split_whitespace().next().unwrap_or("").to_string());
            }
        }
    }
    names
}

/// The flags a help text mentions (`--long` and `-s`).
fn flags_in(text: &str) -> BTreeSet<String> {
    let mut flags = BTreeSet::new();
    for word in
        text.split(|c: char| c.is_whitespace() || matches!(c, ',' | '[' | ']' | '`' | '(' | ')'))
    {
        let flag: String = word
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        let long = flag.len() > 2 && flag.starts_with("--");
        let short = flag.len() == 2 && flag.starts_with('-') && flag != "--";
        if long || short {
            flags.insert(flag);
        }
    }
    flags
}

/// The flag a doc word names, if it is one (`--mode=production` → `--mode`).
fn flag_of(word: &str) -> Option<String> {
    if !word.starts_with('-') || word == "-" || word == "--" {
        return None;
    }
    let name: String = word
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect();
    (name.len() >= 2).then_some(name)
}

fn shown_in(file: &Path) -> Vec<Shown> {
    let text = fs::read_to_string(file).expect("read doc");
    let name = file
        .strip_prefix(common::workspace())
        .unwrap_or(file)
        .display()
        .to_string();
    let mut shown = Vec::new();
    for (line, code) in code_of(&text) {
        for words in commands_in(&code) {
            shown.push(Shown {
                place: format!("{name}:{line}"),
                words,
            });
        }
    }
    shown
}

/// What is wrong with the commands shown, given the subcommands and each one's flags.
fn problems(
    shown: &[Shown],
    commands: &BTreeSet<String>,
    flags_of: &mut dyn FnMut(&str) -> BTreeSet<String>,
) -> Vec<String> {
    let top_flags = ["--help", "-h", "--version", "-V"];
    let mut problems = Vec::new();
    for s in shown {
        let Some(first) = s.words.first() else {
            continue; // `pipx install kruise-lua`: the package, not a command line
        };
        if top_flags.contains(&first.as_str()) {
            continue;
        }
        // Placeholders (`<command>`, `[PATH...]`, `…`) stand for any command; a Rust path
        // (`kruise-lua lsp::framing`) or other non-word is not a command line.
        let is_word = first.chars().next().is_some_and(|c| c.is_ascii_lowercase())
            && first
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !is_word {
            continue;
        }
        if !commands.contains(first) {
            problems.push(format!(
                "{}: `kruise-lua {}`: no such subcommand in `kruise-lua --help`",
                s.place,
                s.words.join(" ")
            ));
            continue;
        }
        let known = flags_of(first);
        for word in &s.words[1..] {
            if let Some(flag) = flag_of(word.trim_start_matches('['))
                && !known.contains(&flag)
            {
                problems.push(format!(
                    "{}: `kruise-lua {}`: `{flag}` is not in `kruise-lua {first} --help`",
                    s.place,
                    s.words.join(" ")
                ));
            }
        }
    }
    problems
}

#[test]
fn every_command_and_flag_in_the_docs_exists() {
    let commands = subcommands();
    assert!(
        commands.contains("check") && commands.contains("lsp"),
        "could not read the subcommands from `kruise-lua --help`: {commands:?}"
    );
    let mut cache: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut flags_of = |sub: &str| {
        cache
            .entry(sub.to_string())
            .or_insert_with(|| flags_in(&help(&[sub, "--help"])))
            .clone()
    };
    let mut shown = Vec::new();
    for file in doc_files() {
        shown.extend(shown_in(&file));
    }
    assert!(
        shown
            .iter()
            .any(|s| s.words.first().is_some_and(|w| w == "check")),
        "found no `kruise-lua check` in the docs: the extraction is broken"
    );
    let problems = problems(&shown, &commands, &mut flags_of);
    assert!(
        problems.is_empty(),
        "commands or flags shown in the docs that `--help` does not have:\n{}",
        problems.join("\n")
    );
}

/// The checker itself finds a missing subcommand and a missing flag (so the test above can fail).
#[test]
fn a_wrong_subcommand_or_flag_is_reported() {
    let text = "Run `kruise-lua chek lua_configuration`, then\n\n```sh\nkruise-lua check --modes production lua_configuration | less\nkruise-lua check --mode=production\n```\n";
    let dir = std::env::temp_dir().join(format!("kruise-lua-docs-help-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    let file = dir.join("doc.md");
    fs::write(&file, text).unwrap();
    let shown = shown_in(&file);
    fs::remove_dir_all(&dir).unwrap();
    let commands: BTreeSet<String> = ["check".to_string()].into();
    let mut flags_of = |_: &str| flags_in("      --mode <MODE>\n  -h, --help\n");
    let found = problems(&shown, &commands, &mut flags_of);
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(found[0].ends_with("doc.md:1: `kruise-lua chek lua_configuration`: no such subcommand in `kruise-lua --help`"), "{}", found[0]);
    assert!(
        found[1].contains(
            "doc.md:4: `kruise-lua check --modes production lua_configuration`: `--modes` is not in"
        ),
        "{}",
        found[1]
    );
}

/// The options a `--help` text lists: the flags of its option lines (`  -h, --help`,
/// `      --tree <DIR>`), not those its prose mentions (plan's help once listed check's exit
/// codes, whose `--shuffle` then counted as one of plan's flags).
fn options_of_help(text: &str) -> BTreeSet<String> {
    let mut options = BTreeSet::new();
    for line in text.lines() {
        let line = line.trim_start();
        if !line.starts_with('-') {
            continue;
        }
        for word in line.split_whitespace() {
            let word = word.trim_end_matches(',');
            if word.starts_with('<') || word.starts_with('[') {
                continue;
            }
            match flag_of(word) {
                Some(flag) => options.insert(flag),
                None => break,
            };
        }
    }
    for builtin in ["--help", "-h", "--version", "-V"] {
        options.remove(builtin);
    }
    options
}

/// The text of the sections of a Markdown document whose heading names `kruise-lua
/// <command>` (`### \`kruise-lua plan --rollout …\``), each up to the next heading of its level
/// or above.
fn sections_on(text: &str, command: &str) -> String {
    let named = |heading: &str| {
        let wanted = format!("kruise-lua {command}");
        heading.match_indices(&wanted).any(|(at, _)| {
            let after = &heading[at + wanted.len()..];
            after.is_empty() || after.starts_with([' ', '`'])
        })
    };
    let level = |line: &str| {
        let hashes = line.chars().take_while(|c| *c == '#').count();
        (hashes > 0 && line[hashes..].starts_with(' ')).then_some(hashes)
    };
    let mut out = String::new();
    let mut inside: Option<usize> = None;
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        if let Some(depth) = level(line).filter(|_| !fenced) {
            if inside.is_some_and(|open| depth <= open) {
                inside = None;
            }
            if inside.is_none() && named(line) {
                inside = Some(depth);
            }
        }
        if inside.is_some() {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The options of `command` (from its `--help` text) that docs/CLI.md's sections on it do
/// not mention.
fn undocumented(doc: &str, command: &str, help_text: &str) -> Vec<String> {
    let sections = sections_on(doc, command);
    if sections.is_empty() {
        return vec![format!(
            "`kruise-lua {command}`: no section of docs/CLI.md has a heading naming it"
        )];
    }
    let documented = flags_in(&sections);
    options_of_help(help_text)
        .into_iter()
        .filter(|option| !documented.contains(option))
        .map(|option| {
            format!("`kruise-lua {command} {option}`: in --help, not in docs/CLI.md's sections on {command}")
        })
        .collect()
}

#[test]
fn every_option_in_the_help_is_in_cli_md() {
    let doc = fs::read_to_string(common::workspace().join("docs/CLI.md")).expect("docs/CLI.md");
    let mut missing = Vec::new();
    let commands = subcommands();
    assert!(commands.contains("plan"), "{commands:?}");
    for command in commands.iter().filter(|c| *c != "help") {
        missing.extend(undocumented(&doc, command, &help(&[command, "--help"])));
    }
    assert!(
        missing.is_empty(),
        "options `--help` lists that docs/CLI.md does not describe:\n{}",
        missing.join("\n")
    );
}

/// The reverse check finds an option missing from a command's sections, and reads neither
/// prose flags in the help nor another command's section.
#[test]
fn an_option_missing_from_the_docs_is_reported() {
    let doc = "## Overview\n\n### `kruise-lua check`\n\n`--mode`, `--format json`.\n\n#### Formats\n\n`--color`\n\n### `kruise-lua checker`\n\n`--tree`\n\n## Other\n\n`--filter`\n";
    let help_text = "Usage: kruise-lua check\n\nOptions:\n      --mode <MODE>\n          Rules\n      --format <FORMAT>\n      --color <WHEN>\n      --tree <DIR>\n      --filter <SUBSTR>\n  -h, --help\n          Print help\n\nExit codes:\n  1  --shuffle finds one\n";
    assert_eq!(
        undocumented(doc, "check", help_text),
        [
            "`kruise-lua check --filter`: in --help, not in docs/CLI.md's sections on check",
            "`kruise-lua check --tree`: in --help, not in docs/CLI.md's sections on check",
        ]
    );
    assert_eq!(
        undocumented(doc, "lsp", help_text),
        ["`kruise-lua lsp`: no section of docs/CLI.md has a heading naming it"]
    );
}
