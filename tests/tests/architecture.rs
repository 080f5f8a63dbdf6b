//! The house's layering, checked from the code's own `use` and path expressions: no import
//! cycle between the files of `engine` or of `server`, the front ends (`cli`, `lsp`, `dap`)
//! never import each other (except the CLI starting the language server and the debug adapter
//! from `cli/mod.rs`), and the shared `project` layer imports no front end.
//!
//! A plain scanner, no parser dependency: comments and literals are blanked, then every `use`
//! tree (`use a::{b, c::{d, e as f}, self}`) and every path expression starting with `crate`,
//! `super`, `self`, a child module or a name a `use` brought in is resolved to the file that
//! defines the module it names (`foo.rs` or `foo/mod.rs`; the longest prefix that is a file, so
//! `crate::a::b::Item` is `a/b.rs` when it exists, else `a.rs`). Inline modules (`mod x { }`)
//! shift what `super` means. Test-only code (`#[cfg(test)]` items and files declared under
//! it) is left out: tests may reach across layers to build their inputs.
//!
//! What counts as a cycle. An import names the file that *defines* what it uses: a `pub use`
//! is followed to the file behind it, so a face that only re-exports ties nothing. And an
//! import between a module's file and the file of one of its own submodules (`json/mod.rs` and
//! `json/encode.rs`, `vm.rs` and `vm/hooks.rs`, at any depth) is not an edge: a `mod child;`
//! makes the child part of its parent's body — the child sees the parent's private items, the
//! parent decides what of the child the outside sees (`pub use child::X`) — so a parent and
//! its descendants are one room, read, moved and reviewed together (as `farm-studio look`
//! draws a folder). A cycle is a loop between rooms that can be read apart: two sibling files
//! of one folder (`json/encode.rs` <-> `json/convert.rs`), or files of different branches
//! (`lsp/runs.rs` <-> `cli/check.rs`). A descendant still counts against every file outside its
//! own line of ancestors.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// A module path below the crate root (`[]` is the root).
type ModPath = Vec<String>;

/// One crate's files, by module path, and the file-to-file imports between them.
#[derive(Debug, Default)]
struct Graph {
    files: BTreeMap<ModPath, String>,
    /// (from file, to file) -> the paths that tie them, re-exports followed to the file that
    /// defines the item (what the cycle check reads).
    edges: BTreeMap<(String, String), BTreeSet<String>>,
    /// The same, to the file the path names as written (`crate::lsp::Ending` is `lsp/mod.rs`
    /// even when it re-exports it): what the layer rules read, since a front end may use
    /// another's face.
    written: BTreeMap<(String, String), BTreeSet<String>>,
}

/// Source text with comments, string and char literals blanked (kept as `""`/`' '`), so that
/// paths in docs (`[`crate::x`]`) or messages are not read as imports.
fn blank(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if (c == 'r' || (c == 'b' && next == Some('r')))
            && !prev_is_ident(&chars, i)
            && raw_string_start(&chars, if c == 'b' { i + 1 } else { i }).is_some()
        {
            let start = if c == 'b' { i + 1 } else { i };
            let hashes = raw_string_start(&chars, start).unwrap();
            // r, hashes, quote
            i = start + 1 + hashes + 1;
            loop {
                if i >= chars.len() {
                    break;
                }
                if chars[i] == '"' && (0..hashes).all(|h| chars.get(i + 1 + h) == Some(&'#')) {
                    i += 1 + hashes;
                    break;
                }
                i += 1;
            }
            out.push_str("\"\"");
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' {
            // A char literal ('a', '\n', '\u{1F600}') or a lifetime ('a, 'static).
            if next == Some('\\') {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
                out.push_str("' '");
            } else if chars.get(i + 2) == Some(&'\'') {
                i += 3;
                out.push_str("' '");
            } else {
                out.push(c);
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn prev_is_ident(chars: &[char], i: usize) -> bool {
    i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_')
}

/// The number of `#`s of a raw string starting at `i` (`r#"`), if one starts there.
fn raw_string_start(chars: &[char], i: usize) -> Option<usize> {
    if chars.get(i) != Some(&'r') {
        return None;
    }
    let mut hashes = 0;
    while chars.get(i + 1 + hashes) == Some(&'#') {
        hashes += 1;
    }
    (chars.get(i + 1 + hashes) == Some(&'"')).then_some(hashes)
}

/// Identifiers, `::` and single punctuation characters.
fn tokens(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(chars[start..i].iter().collect());
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            out.push("::".to_string());
            i += 2;
        } else if c.is_whitespace() {
            i += 1;
        } else {
            out.push(c.to_string());
            i += 1;
        }
    }
    out
}

/// What one file says: the paths it uses (as written, with the module scope they are written
/// in), and its child modules (`mod x;`), test-only ones apart.
#[derive(Debug, Default, PartialEq)]
struct FileScan {
    /// (scope inside the file: inline module names, path as written).
    paths: Vec<(Vec<String>, Vec<String>)>,
    /// (scope, alias) -> path it stands for, from `use` (for paths starting with an alias).
    aliases: Vec<(Vec<String>, String, Vec<String>)>,
    /// Inline modules and `mod x;` children: (scope, name).
    modules: Vec<(Vec<String>, String)>,
    /// Children declared under `#[cfg(test)]` (`mod tests;`).
    test_children: Vec<String>,
}

/// The paths a `use` tree names, each whole (`a::{b, c::d}` → `a::b`, `a::c::d`; `self` in a
/// list is the prefix itself), with the alias each is known by.
fn use_tree(
    tokens: &[String],
    at: &mut usize,
    prefix: &[String],
    out: &mut Vec<(Vec<String>, String)>,
) {
    let mut path = prefix.to_vec();
    loop {
        let Some(token) = tokens.get(*at) else { return };
        match token.as_str() {
            "::" => *at += 1,
            "{" => {
                *at += 1;
                loop {
                    match tokens.get(*at).map(String::as_str) {
                        None => return,
                        Some("}") => {
                            *at += 1;
                            return;
                        }
                        Some(",") => *at += 1,
                        _ => use_tree(tokens, at, &path, out),
                    }
                }
            }
            "*" => {
                *at += 1;
                out.push((path, "*".to_string()));
                return;
            }
            "as" => {
                let alias = tokens.get(*at + 1).cloned().unwrap_or_default();
                *at += 2;
                out.push((path, alias));
                return;
            }
            "," | "}" | ";" => {
                let alias = path.last().cloned().unwrap_or_default();
                if path.last().is_some_and(|last| last == "self") {
                    path.pop();
                    let alias = path.last().cloned().unwrap_or_default();
                    out.push((path, alias));
                } else {
                    out.push((path, alias));
                }
                return;
            }
            ident => {
                path.push(ident.to_string());
                *at += 1;
            }
        }
    }
}

fn is_ident(token: &str) -> bool {
    token
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
}

/// Skips one item starting at `at` (through its `;` or its matched `{ }`).
fn skip_item(tokens: &[String], at: &mut usize) {
    let mut nesting = 0i32;
    while let Some(token) = tokens.get(*at) {
        *at += 1;
        match token.as_str() {
            "(" | "[" => nesting += 1,
            ")" | "]" => nesting -= 1,
            ";" if nesting == 0 => return,
            "{" => {
                let mut depth = 1;
                while let Some(token) = tokens.get(*at) {
                    *at += 1;
                    match token.as_str() {
                        "{" => depth += 1,
                        "}" => {
                            depth -= 1;
                            if depth == 0 {
                                return;
                            }
                        }
                        _ => {}
                    }
                }
                return;
            }
            _ => {}
        }
    }
}

fn scan(source: &str) -> FileScan {
    let tokens = tokens(&blank(source));
    let mut scan = FileScan::default();
    // Inline modules open, with the brace depth at which each closes.
    let mut scope: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut at = 0;
    let names =
        |scope: &[(String, usize)]| scope.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    while at < tokens.len() {
        let token = tokens[at].as_str();
        match token {
            "#" if tokens.get(at + 1).is_some_and(|t| t == "[")
                && tokens[at + 2..].starts_with(&[
                    "cfg".to_string(),
                    "(".to_string(),
                    "test".to_string(),
                    ")".to_string(),
                    "]".to_string(),
                ]) =>
            {
                at += 7;
                // Further attributes, then visibility, then the item.
                let mut look = at;
                while tokens.get(look).is_some_and(|t| t == "#") {
                    skip_attribute(&tokens, &mut look);
                }
                let mut item = look;
                if tokens.get(item).is_some_and(|t| t == "pub") {
                    item += 1;
                    if tokens.get(item).is_some_and(|t| t == "(") {
                        while tokens.get(item).is_some_and(|t| t != ")") {
                            item += 1;
                        }
                        item += 1;
                    }
                }
                if tokens.get(item).is_some_and(|t| t == "mod")
                    && tokens.get(item + 2).is_some_and(|t| t == ";")
                    && scope.is_empty()
                {
                    scan.test_children.push(tokens[item + 1].clone());
                }
                at = look;
                skip_item(&tokens, &mut at);
            }
            "#" if tokens.get(at + 1).is_some_and(|t| t == "[") => skip_attribute(&tokens, &mut at),
            "mod" if tokens.get(at + 1).is_some_and(|t| is_ident(t)) => {
                let name = tokens[at + 1].clone();
                scan.modules.push((names(&scope), name.clone()));
                if tokens.get(at + 2).is_some_and(|t| t == "{") {
                    depth += 1;
                    scope.push((name, depth));
                    at += 3;
                } else {
                    at += 2;
                }
            }
            "use" if tokens.get(at + 1).is_some_and(|t| t != "<") => {
                at += 1;
                let mut trees = Vec::new();
                if tokens.get(at).is_some_and(|t| t == "::") {
                    // `use ::extern_crate::…`
                    skip_item(&tokens, &mut at);
                    continue;
                }
                use_tree(&tokens, &mut at, &[], &mut trees);
                for (path, alias) in trees {
                    if alias != "*" && alias != "_" {
                        scan.aliases.push((names(&scope), alias, path.clone()));
                    }
                    scan.paths.push((names(&scope), path));
                }
            }
            "{" => {
                depth += 1;
                at += 1;
            }
            "}" => {
                if scope.last().is_some_and(|(_, d)| *d == depth) {
                    scope.pop();
                }
                depth = depth.saturating_sub(1);
                at += 1;
            }
            ident
                if is_ident(ident)
                    && tokens.get(at + 1).is_some_and(|t| t == "::")
                    && (at == 0 || (tokens[at - 1] != "::" && tokens[at - 1] != "'")) =>
            {
                let mut path = vec![ident.to_string()];
                at += 1;
                while tokens.get(at).is_some_and(|t| t == "::")
                    && tokens.get(at + 1).is_some_and(|t| is_ident(t))
                {
                    path.push(tokens[at + 1].clone());
                    at += 2;
                }
                scan.paths.push((names(&scope), path));
            }
            _ => at += 1,
        }
    }
    scan
}

fn skip_attribute(tokens: &[String], at: &mut usize) {
    // `#`, then a bracketed group.
    *at += 1;
    let mut nesting = 0;
    while let Some(token) = tokens.get(*at) {
        *at += 1;
        match token.as_str() {
            "[" => nesting += 1,
            "]" => {
                nesting -= 1;
                if nesting == 0 {
                    return;
                }
            }
            _ => {}
        }
    }
}

/// The module path of a file below `src` (`main.rs`/`lib.rs` → root, `a/mod.rs` → `a`).
fn module_of(src: &Path, file: &Path) -> ModPath {
    let relative = file.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if !(stem == "mod" || (parts.is_empty() && (stem == "main" || stem == "lib"))) {
        parts.push(stem.to_string());
    }
    parts
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Resolves a written path from `module` (the scope it is written in) to an absolute module
/// path, or `None` for paths into other crates.
fn resolve(
    module: &[String],
    path: &[String],
    children: &BTreeSet<ModPath>,
    aliases: &HashMap<(ModPath, String), Vec<String>>,
    depth: usize,
) -> Option<ModPath> {
    let first = path.first()?;
    let mut base: ModPath = match first.as_str() {
        "crate" => Vec::new(),
        "self" => module.to_vec(),
        "super" => {
            let mut base = module.to_vec();
            let mut rest = path;
            while rest.first().is_some_and(|s| s == "super") {
                base.pop()?;
                rest = &rest[1..];
            }
            base.extend(rest.iter().cloned());
            return Some(base);
        }
        _ => {
            let mut child = module.to_vec();
            child.push(first.clone());
            if children.contains(&child) {
                child.extend(path[1..].iter().cloned());
                return Some(child);
            }
            let alias = aliases.get(&(module.to_vec(), first.clone()))?;
            if depth > 8 || alias.first() == Some(first) {
                return None;
            }
            let mut full = resolve(module, alias, children, aliases, depth + 1)?;
            full.extend(path[1..].iter().cloned());
            return Some(full);
        }
    };
    base.extend(path[1..].iter().cloned());
    Some(base)
}

/// `path` with each name a module imports (`use` or `pub use`) replaced by what it imports:
/// `super::UsageError` where the parent only re-exports `crate::project::UsageError` names
/// the project's file, not the parent's. `None` when it leads out of the crate.
fn through_reexports(
    mut path: ModPath,
    children: &BTreeSet<ModPath>,
    aliases: &HashMap<(ModPath, String), Vec<String>>,
) -> Option<ModPath> {
    for _ in 0..8 {
        let found = (1..=path.len()).find_map(|n| {
            let key = (path[..n - 1].to_vec(), path[n - 1].clone());
            let module: ModPath = path[..n].to_vec();
            // A module of its own is never an alias.
            (!children.contains(&module))
                .then(|| aliases.get(&key))
                .flatten()
                .map(|alias| (n, alias))
        });
        let Some((n, alias)) = found else {
            return Some(path);
        };
        let mut full = resolve(&path[..n - 1], alias, children, aliases, 0)?;
        full.extend(path[n..].iter().cloned());
        if full == path {
            return Some(path);
        }
        path = full;
    }
    Some(path)
}

/// Reads every file of the crate whose root folder is `src`.
fn graph(src: &Path) -> Graph {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let mut graph = Graph::default();
    let mut scans = Vec::new();
    for file in &files {
        let name = file.to_string_lossy().into_owned();
        let module = module_of(src, file);
        let scan = scan(&std::fs::read_to_string(file).unwrap());
        graph.files.insert(module.clone(), name.clone());
        scans.push((module, name, scan));
    }
    // Every module, file or inline, to resolve child-relative paths.
    let mut modules: BTreeSet<ModPath> = graph.files.keys().cloned().collect();
    let mut test_files: BTreeSet<ModPath> = BTreeSet::new();
    let mut aliases: HashMap<(ModPath, String), Vec<String>> = HashMap::new();
    for (module, _, scan) in &scans {
        for (scope, name) in &scan.modules {
            let mut path = module.clone();
            path.extend(scope.iter().cloned());
            path.push(name.clone());
            modules.insert(path);
        }
        for child in &scan.test_children {
            let mut path = module.clone();
            path.push(child.clone());
            test_files.insert(path);
        }
        for (scope, alias, path) in &scan.aliases {
            let mut at = module.clone();
            at.extend(scope.iter().cloned());
            aliases.insert((at, alias.clone()), path.clone());
        }
    }
    let is_test = |module: &ModPath| test_files.iter().any(|t| module.starts_with(t));
    let test_names: BTreeSet<String> = graph
        .files
        .iter()
        .filter(|(module, _)| is_test(module))
        .map(|(_, name)| name.clone())
        .collect();
    for (module, name, scan) in &scans {
        if is_test(module) {
            continue;
        }
        for (scope, path) in &scan.paths {
            let mut at = module.clone();
            at.extend(scope.iter().cloned());
            let Some(target) = resolve(&at, path, &modules, &aliases, 0) else {
                continue;
            };
            let followed = through_reexports(target.clone(), &modules, &aliases);
            for (target, edges) in [
                (Some(target), &mut graph.written),
                (followed, &mut graph.edges),
            ] {
                let Some(target) = target else { continue };
                // The longest prefix that is a file.
                let file = (0..=target.len())
                    .rev()
                    .find_map(|n| graph.files.get(&target[..n]));
                let Some(file) = file else { continue };
                if file != name && !test_names.contains(file) {
                    edges
                        .entry((name.clone(), file.clone()))
                        .or_default()
                        .insert(path.join("::"));
                }
            }
        }
    }
    graph
}

/// Groups of files that import each other in a loop (strongly connected components of more
/// than one file), each with the imports that tie it.
fn cycles(graph: &Graph) -> Vec<Vec<String>> {
    let files: Vec<&String> = graph.files.values().collect();
    let index: HashMap<&String, usize> = files.iter().enumerate().map(|(i, f)| (*f, i)).collect();
    let mut next: Vec<Vec<usize>> = vec![Vec::new(); files.len()];
    for (from, to) in graph.edges.keys() {
        next[index[from]].push(index[to]);
    }
    // Tarjan's algorithm, iteratively.
    let n = files.len();
    let (mut order, mut low) = (vec![usize::MAX; n], vec![0; n]);
    let (mut on_stack, mut stack) = (vec![false; n], Vec::new());
    let mut counter = 0;
    let mut groups = Vec::new();
    for root in 0..n {
        if order[root] != usize::MAX {
            continue;
        }
        let mut work = vec![(root, 0usize)];
        while let Some(&mut (v, ref mut child)) = work.last_mut() {
            if *child == 0 && order[v] == usize::MAX {
                order[v] = counter;
                low[v] = counter;
                counter += 1;
                stack.push(v);
                on_stack[v] = true;
            }
            if let Some(&w) = next[v].get(*child) {
                *child += 1;
                if order[w] == usize::MAX {
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(order[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == order[v] {
                let mut group = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    group.push(w);
                    if w == v {
                        break;
                    }
                }
                if group.len() > 1 {
                    let members: BTreeSet<&String> = group.iter().map(|&i| files[i]).collect();
                    let mut lines: Vec<String> = graph
                        .edges
                        .iter()
                        .filter(|((from, to), _)| members.contains(from) && members.contains(to))
                        .map(|((from, to), paths)| {
                            let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
                            format!("{from} -> {to} ({})", paths.join(", "))
                        })
                        .collect();
                    lines.sort();
                    groups.push(lines);
                }
            }
        }
    }
    groups
}

fn crate_src(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .join(name)
        .join("src")
}

/// The graph without the imports between a module's file and the files of its own submodules
/// (see the file's doc: a parent and its descendants are one room).
fn without_family_edges(mut graph: Graph) -> Graph {
    let module_of: HashMap<String, ModPath> = graph
        .files
        .iter()
        .map(|(module, file)| (file.clone(), module.clone()))
        .collect();
    let family = |from: &String, to: &String| match (module_of.get(from), module_of.get(to)) {
        (Some(a), Some(b)) => a.starts_with(b) || b.starts_with(a),
        _ => false,
    };
    graph.edges.retain(|(from, to), _| !family(from, to));
    graph
}

fn assert_acyclic(krate: &str) {
    let src = crate_src(krate);
    let graph = without_family_edges(graph(&src));
    let root = format!("{}/", src.parent().unwrap().parent().unwrap().display());
    let found: Vec<String> = cycles(&graph)
        .into_iter()
        .map(|lines| lines.join("\n  ").replace(&root, ""))
        .collect();
    assert!(
        found.is_empty(),
        "import cycles between files of `{krate}` (break each: move what both sides need below them):\n  {}",
        found.join("\n\n  ")
    );
}

#[test]
fn server_files_import_no_cycle() {
    assert_acyclic("server");
}

#[test]
fn engine_files_import_no_cycle() {
    assert_acyclic("engine");
}

/// `lsp` and `dap` never import `cli` or each other; `project` (the layer under them) imports
/// none of them; the CLI imports the servers only from `cli/mod.rs`, to start them.
#[test]
fn front_ends_do_not_import_each_other() {
    let src = crate_src("server");
    let graph = graph(&src);
    let area = |file: &str| {
        let relative = Path::new(file).strip_prefix(&src).unwrap();
        relative
            .iter()
            .next()
            .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
            .unwrap_or_default()
    };
    let mut wrong = Vec::new();
    for ((from, to), paths) in &graph.written {
        let (a, b) = (area(from), area(to));
        let starts_a_server = from.ends_with("cli/mod.rs") && to.ends_with("/mod.rs");
        let forbidden = match a.as_str() {
            "lsp" => b == "cli" || b == "dap",
            "dap" => b == "cli" || b == "lsp",
            "cli" => (b == "lsp" || b == "dap") && !starts_a_server,
            "project" => b == "cli" || b == "lsp" || b == "dap",
            _ => false,
        };
        if forbidden {
            let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
            wrong.push(format!("{from} -> {to} ({})", paths.join(", ")));
        }
    }
    assert!(
        wrong.is_empty(),
        "front ends import each other:\n{}",
        wrong.join("\n")
    );
}

// The scanner itself.

fn paths_of(source: &str) -> Vec<String> {
    scan(source)
        .paths
        .into_iter()
        .map(|(scope, path)| {
            let scope = if scope.is_empty() {
                String::new()
            } else {
                format!("[{}] ", scope.join("::"))
            };
            format!("{scope}{}", path.join("::"))
        })
        .collect()
}

#[test]
fn scanner_reads_nested_use_trees() {
    assert_eq!(
        paths_of("use a::{b, c::{d, e as f}, self};\nuse super::super::g::*;\n"),
        ["a::b", "a::c::d", "a::c::e", "a", "super::super::g"]
    );
    let scan = scan("use crate::x::{y as z, self};");
    assert!(
        scan.aliases
            .iter()
            .any(|(_, alias, path)| alias == "z" && path.join("::") == "crate::x::y")
    );
    assert!(
        scan.aliases
            .iter()
            .any(|(_, alias, path)| alias == "x" && path.join("::") == "crate::x")
    );
}

#[test]
fn scanner_reads_paths_in_code_but_not_in_comments_or_strings() {
    let source = r##"
//! See [`crate::docs::only`].
/* crate::block::comment /* nested crate::x */ */
fn f<'a>(x: &'a str) -> char {
    let _ = "crate::in_string";
    let _ = r#"crate::in_raw "string""#;
    crate::real::call(x);
    self::local::thing();
    std::mem::drop(x);
    '"'
}
"##;
    assert_eq!(
        paths_of(source),
        ["crate::real::call", "self::local::thing", "std::mem::drop"]
    );
}

#[test]
fn scanner_tracks_inline_modules_and_skips_test_code() {
    let source = "
mod inner {
    use super::sibling::Thing;
    fn g() { crate::deep::f(); }
}
#[cfg(test)]
mod tests {
    use crate::anything::Goes;
}
#[cfg(test)]
mod more_tests;
use after::All;
";
    assert_eq!(
        paths_of(source),
        [
            "[inner] super::sibling::Thing",
            "[inner] crate::deep::f",
            "after::All"
        ]
    );
    assert_eq!(scan(source).test_children, ["more_tests"]);
}

#[test]
fn files_map_to_modules_as_rustc_does() {
    let src = Path::new("/c/src");
    let module = |file: &str| module_of(src, &src.join(file)).join("::");
    assert_eq!(module("main.rs"), "");
    assert_eq!(module("lib.rs"), "");
    assert_eq!(module("a.rs"), "a");
    assert_eq!(module("a/mod.rs"), "a");
    assert_eq!(module("a/b.rs"), "a::b");
    assert_eq!(module("a/b/mod.rs"), "a::b");
}

#[test]
fn paths_resolve_relative_to_their_module() {
    let children: BTreeSet<ModPath> = [vec!["a".to_string()], vec!["a".into(), "b".into()]]
        .into_iter()
        .collect();
    let mut aliases = HashMap::new();
    aliases.insert(
        (vec!["a".to_string()], "report".to_string()),
        vec!["crate".to_string(), "cli".into(), "report".into()],
    );
    let path = |text: &str| text.split("::").map(String::from).collect::<Vec<_>>();
    let from_a = |text: &str| {
        resolve(&["a".to_string()], &path(text), &children, &aliases, 0).map(|p| p.join("::"))
    };
    assert_eq!(from_a("super::x::Y").as_deref(), Some("x::Y"));
    assert_eq!(from_a("self::b::Z").as_deref(), Some("a::b::Z"));
    assert_eq!(from_a("b::Z").as_deref(), Some("a::b::Z"));
    assert_eq!(from_a("crate::q").as_deref(), Some("q"));
    assert_eq!(
        from_a("report::human::write").as_deref(),
        Some("cli::report::human::write")
    );
    assert_eq!(from_a("std::mem::drop"), None);
    // A name the parent re-exports is followed to where it is defined.
    aliases.insert(
        (Vec::new(), "UsageError".to_string()),
        path("crate::project::UsageError"),
    );
    let target = resolve(
        &["a".to_string()],
        &path("super::UsageError"),
        &children,
        &aliases,
        0,
    )
    .unwrap()
    .join("::");
    assert_eq!(
        through_reexports(path(&target), &children, &aliases)
            .map(|p| p.join("::"))
            .as_deref(),
        Some("project::UsageError")
    );
    // A name imported from another crate leads out.
    aliases.insert((Vec::new(), "Lib".to_string()), path("other_crate::Lib"));
    assert_eq!(through_reexports(path("Lib::f"), &children, &aliases), None);
}

#[test]
fn cycles_are_found_with_what_ties_them() {
    let mut graph = Graph::default();
    for (module, file) in [("a", "a.rs"), ("b", "b.rs"), ("c", "c.rs")] {
        graph
            .files
            .insert(vec![module.to_string()], file.to_string());
    }
    let mut edge = |from: &str, to: &str| {
        graph
            .edges
            .entry((from.to_string(), to.to_string()))
            .or_default()
            .insert(format!("crate::{}", to.trim_end_matches(".rs")));
    };
    edge("a.rs", "b.rs");
    edge("b.rs", "c.rs");
    assert!(cycles(&graph).is_empty());
    graph
        .edges
        .entry(("c.rs".to_string(), "a.rs".to_string()))
        .or_default()
        .insert("crate::a".to_string());
    assert_eq!(
        cycles(&graph),
        [vec![
            "a.rs -> b.rs (crate::b)".to_string(),
            "b.rs -> c.rs (crate::c)".to_string(),
            "c.rs -> a.rs (crate::a)".to_string()
        ]]
    );
}

#[test]
fn a_parent_and_its_submodules_are_one_room_but_siblings_are_not() {
    let mut graph = Graph::default();
    for (module, file) in [
        (vec!["json"], "json/mod.rs"),
        (vec!["json", "encode"], "json/encode.rs"),
        (vec!["json", "convert"], "json/convert.rs"),
        (vec!["vm"], "vm.rs"),
        (vec!["vm", "hooks", "deep"], "vm/hooks/deep.rs"),
    ] {
        graph.files.insert(
            module.into_iter().map(String::from).collect(),
            file.to_string(),
        );
    }
    for (from, to) in [
        ("json/mod.rs", "json/encode.rs"),
        ("json/encode.rs", "json/mod.rs"),
        ("vm.rs", "vm/hooks/deep.rs"),
        ("vm/hooks/deep.rs", "vm.rs"),
    ] {
        graph
            .edges
            .entry((from.to_string(), to.to_string()))
            .or_default()
            .insert("x".to_string());
    }
    let graph = without_family_edges(graph);
    assert!(graph.edges.is_empty(), "{:?}", graph.edges);
    assert!(cycles(&graph).is_empty());
    // Siblings that import each other are a cycle, and a descendant counts against files
    // outside its line of ancestors.
    let mut graph = graph;
    for (from, to) in [
        ("json/encode.rs", "json/convert.rs"),
        ("json/convert.rs", "json/encode.rs"),
        ("vm/hooks/deep.rs", "json/mod.rs"),
        ("json/mod.rs", "vm/hooks/deep.rs"),
    ] {
        graph
            .edges
            .entry((from.to_string(), to.to_string()))
            .or_default()
            .insert("x".to_string());
    }
    let graph = without_family_edges(graph);
    assert_eq!(graph.edges.len(), 4);
    assert_eq!(cycles(&graph).len(), 2);
}
