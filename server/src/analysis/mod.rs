//! Static analysis of Kruise traffic-routing Lua scripts, for the language server and `check`.
//!
//! Everything works on `&str` sources and byte-offset ranges (`Range<usize>`); converting to
//! LSP positions (UTF-16 or UTF-8) is the protocol layer's job. Nothing here does I/O except
//! [`LintConfig::load`].
//!
//! * [`analyze_script`]: syntax errors (Lua 5.1 as gopher-lua parses it) and lint diagnostics.
//! * [`complete`], [`hover`]: `obj` fields with Kruise's docs, `obj.data.spec` fields from the
//!   test cases ([`infer_spec_shape`]) and the CRD's schema ([`SpecSchema`]), library members
//!   Kruise provides, names in scope.
//! * [`definition`], [`references`], [`document_symbols`]: navigation on resolved names;
//!   [`rename`](rename::rename) of locals and script globals.
//! * [`highlight::tokens`] (semantic highlighting), [`signature_help`].
//!
//! Every entry point tolerates incomplete code: the parser recovers, and completion reads the
//! expression before the cursor from the text.

pub mod calls;
pub mod completion;
pub mod config;
pub mod folding;
pub mod highlight;
pub mod hover;
pub mod lex;
pub mod library;
pub mod lints;
pub mod navigation;
pub mod obj_reads;
pub mod obj_schema;
pub mod parse;
pub mod parsed_script;
pub mod rename;
pub mod selection;
pub mod semantic;
pub mod severity;
pub mod shape_limits;
#[cfg(test)]
mod shape_tests;
pub mod signature;
pub mod snippets;
pub mod spec_schema;
pub mod spec_shape;
pub mod suppress;
pub mod types;
pub mod walk;

use kruise_lua_engine::script::ScriptFlavor;
use std::ops::Range;

// What the language server's protocol layer uses.
pub use completion::{CompletionContext, CompletionKind, complete};
pub use config::LintConfig;
pub use hover::hover;
pub use lints::Fix;
pub use navigation::{
    DocumentSymbol, SymbolKind, definition, document_symbols, highlights, references,
};
pub use obj_schema::{ObjPath, PathSeg};
pub use parse::SyntaxError;
pub use parsed_script::ParsedScript;
pub use severity::Severity;
pub use signature::signature_help;
pub use spec_schema::SpecSchema;
pub use spec_shape::{SpecShape, infer_spec_shape};

/// One lint finding, with its configured severity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The lint's code, `KL001`...
    pub code: &'static str,
    pub severity: Severity,
    pub range: Range<usize>,
    pub message: String,
    /// An edit that fixes it, when there is an obvious one.
    pub fix: Option<Fix>,
}

/// The result of [`analyze`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Analysis {
    /// Every syntax error, in source order (errors for Kruise: the script cannot run).
    pub syntax_errors: Vec<SyntaxError>,
    /// Lint findings, in source order.
    pub diagnostics: Vec<Diagnostic>,
}

/// Parses `source` and runs the lints `config` enables; `spec_shape`, the shape of
/// `obj.data.spec` from the script's test cases, lets KL005 tell arrays from maps inside the
/// spec; `configmap_kind` is the provider of a script embedded in a ConfigMap (KL011).
pub fn analyze_script(
    source: &str,
    flavor: ScriptFlavor,
    config: &LintConfig,
    spec_shape: Option<&SpecShape>,
    configmap_kind: Option<&kruise_lua_engine::script::ScriptKind>,
) -> Analysis {
    analyze_parsed(
        &ParsedScript::new(source),
        flavor,
        config,
        spec_shape,
        configmap_kind,
    )
}

/// [`analyze_script`] on a script already parsed (the language server keeps one parse per
/// document version for every request).
pub fn analyze_parsed(
    script: &ParsedScript,
    flavor: ScriptFlavor,
    config: &LintConfig,
    spec_shape: Option<&SpecShape>,
    configmap_kind: Option<&kruise_lua_engine::script::ScriptKind>,
) -> Analysis {
    let source = script.source();
    let ctx = lints::LintContext::new(
        source,
        script.ast(),
        script.model(),
        flavor,
        !script.errors().is_empty(),
        spec_shape,
    )
    .in_configmap(configmap_kind);
    let mut diagnostics = Vec::new();
    let suppressions = suppress::Suppressions::of(source);
    for lint in lints::all() {
        let Some(severity) = config.severity(lint.code(), lint.default_severity()) else {
            continue;
        };
        let found = lint.check(&ctx).into_iter();
        let found = found.filter(|d| !suppressions.disables(lint.code(), &d.range));
        diagnostics.extend(found.map(|d| Diagnostic {
            code: lint.code(),
            severity,
            range: d.range,
            message: d.message,
            fix: d.fix,
        }));
    }
    diagnostics.sort_by(|a, b| {
        (a.range.start, a.range.end, a.code).cmp(&(b.range.start, b.range.end, b.code))
    });
    Analysis {
        syntax_errors: script.errors().to_vec(),
        diagnostics,
    }
}

/// The shared conformance vectors (`.lua` scripts and their `.expected.json`), for tests.
#[cfg(test)]
pub(crate) fn conformance_vectors() -> &'static std::path::Path {
    std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/conformance/vectors"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn analyze(source: &str, flavor: ScriptFlavor, config: &LintConfig) -> Analysis {
        analyze_script(source, flavor, config, None, None)
    }

    const SCRIPT: &str = "local spec = obj.data.spec\nlocal unused = 1\nfor _, r in ipairs(spec.http) do\n  r.route[1].weight = obj.stableWeight\n  r.route[2] = {destination = {host = obj.canaryService}, weight = obj.canaryweight}\nend\nreturn obj.data\n";

    #[test]
    fn analyze_applies_configuration() {
        let analysis = analyze(SCRIPT, ScriptFlavor::Custom, &LintConfig::default());
        assert!(analysis.syntax_errors.is_empty());
        let codes: Vec<(&str, Severity)> = analysis
            .diagnostics
            .iter()
            .map(|d| (d.code, d.severity))
            .collect();
        assert_eq!(
            codes,
            vec![("KL007", Severity::Hint), ("KL001", Severity::Error)]
        );
        let config =
            LintConfig::from_toml_str("[lints]\nKL007 = \"off\"\nKL001 = \"warning\"").unwrap();
        let analysis = analyze(SCRIPT, ScriptFlavor::Custom, &config);
        let codes: Vec<(&str, Severity)> = analysis
            .diagnostics
            .iter()
            .map(|d| (d.code, d.severity))
            .collect();
        assert_eq!(codes, vec![("KL001", Severity::Warning)]);
        let fix = analysis.diagnostics[0].fix.as_ref().unwrap();
        assert_eq!(&SCRIPT[fix.range.clone()], "canaryweight");
        assert_eq!(fix.replacement, "canaryWeight");
    }

    #[test]
    fn syntax_errors_and_lints_together() {
        let source = "local t = os.time()\nlocal x = 7 // 2\nreturn {spec = {x = t}}";
        let analysis = analyze(source, ScriptFlavor::Custom, &LintConfig::default());
        assert!(!analysis.syntax_errors.is_empty());
        assert!(analysis.diagnostics.iter().any(|d| d.code == "KL002"));
        assert_eq!(lints::all().len(), 14);
        assert_eq!(lints::all()[0].code(), "KL001");
    }

    #[test]
    fn conformance_vectors_have_no_false_errors() {
        // Scripts that run fine in Kruise must not get error-level diagnostics, except those
        // that deliberately return non-tables or use missing globals.
        let mut checked = 0;
        let mut failures = Vec::new();
        for entry in std::fs::read_dir(conformance_vectors())
            .expect("shared/conformance")
            .flatten()
        {
            let path = entry.path();
            if path.extension().is_none_or(|e| e != "lua") {
                continue;
            }
            let stem = path.file_stem().unwrap().to_string_lossy().to_string();
            let expected = std::fs::read_to_string(path.with_extension("expected.json")).unwrap();
            if !expected.contains("\"status\": \"ok\"")
                || expected.contains("\"status\": \"error\"")
            {
                continue;
            }
            let source = std::fs::read_to_string(&path).unwrap();
            let analysis = analyze(&source, ScriptFlavor::Custom, &LintConfig::default());
            let errors: Vec<&Diagnostic> = analysis
                .diagnostics
                .iter()
                .filter(|d| d.severity == Severity::Error)
                .collect();
            // Harness-only successes (non-table results) and vectors probing missing names
            // are expected to be flagged.
            let allowed = |d: &Diagnostic| {
                (d.code == "KL003" && stem.starts_with("ret_"))
                    || (d.code == "KL001" && stem == "obj_field_names")
                    || (d.code == "KL002"
                        && (stem.starts_with("env_") || stem.starts_with("tbl_library")))
            };
            let unexpected: Vec<_> = errors.into_iter().filter(|d| !allowed(d)).collect();
            if !unexpected.is_empty() {
                failures.push(format!("{stem}: {unexpected:?}"));
            }
            checked += 1;
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        assert!(checked > 100, "only {checked} vectors checked");
    }

    /// A realistic script of about `lines` lines: helpers, loops over the spec, obj reads.
    fn big_script(lines: usize) -> String {
        let mut source =
            String::from("local json = require(\"json\")\nlocal spec = obj.data.spec\n");
        let mut i = 0;
        while source.lines().count() < lines {
            source.push_str(&format!(
                "local function route_{i}(rule, weight)\n  local out = {{}}\n  for _, r in ipairs(rule.route or {{}}) do\n    if r.destination.host == obj.stableService then\n      r.weight = obj.stableWeight - weight\n    else\n      table.insert(out, {{host = obj.canaryService, weight = obj.canaryWeight}})\n    end\n  end\n  for k, v in pairs(obj.data.labels or {{}}) do out[k] = string.format(\"%s=%d\", v, weight) end\n  return out\nend\nspec[\"r{i}\"] = route_{i}(spec.http[1], {i})\n"
            ));
            i += 1;
        }
        source.push_str("return obj.data\n");
        source
    }

    #[test]
    fn big_script_analyzes_cleanly() {
        let source = big_script(200);
        let analysis = analyze(&source, ScriptFlavor::Custom, &LintConfig::default());
        assert!(analysis.syntax_errors.is_empty());
        assert!(
            analysis
                .diagnostics
                .iter()
                .all(|d| d.severity != Severity::Error),
            "{:?}",
            analysis.diagnostics
        );
    }
}
