//! The lints: one per file, each behind the [`Lint`] trait with a stable code (`KL001`...),
//! a name and a default severity. Fixture tests live in `fixtures/<code>/*.lua` with the
//! expected output in `*.expected` next to each script (`KRUISE_LUA_BLESS=1` rewrites them).

mod bundled_provider_configmap;
mod global_assignment;
mod ingress_non_string_value;
mod missing_table_return;
mod obj_assignment;
mod optional_obj_field;
mod pairs_random_order;
mod pruned_spec_field;
mod unknown_obj_field;
mod unsupported_global;
mod unused_global_function;
mod unused_local;
mod unused_parameter;
mod weight_type_mismatch;

mod lint;

pub use lint::{Fix, Lint, LintContext, LintDiagnostic};

static ALL: [&dyn Lint; 14] = [
    &unknown_obj_field::UnknownObjField,
    &unsupported_global::UnsupportedGlobal,
    &missing_table_return::MissingTableReturn,
    &weight_type_mismatch::WeightTypeMismatch,
    &pairs_random_order::PairsRandomOrder,
    &global_assignment::GlobalAssignment,
    &unused_local::UnusedLocal,
    &ingress_non_string_value::IngressNonStringValue,
    &optional_obj_field::OptionalObjField,
    &obj_assignment::ObjAssignment,
    &bundled_provider_configmap::BundledProviderConfigMap,
    &unused_parameter::UnusedParameter,
    &unused_global_function::UnusedGlobalFunction,
    &pruned_spec_field::PrunedSpecField,
];

/// All lints, in code order.
pub fn all() -> &'static [&'static dyn Lint] {
    &ALL
}

/// The lint with this code (any case) or name.
pub fn find(code_or_name: &str) -> Option<&'static dyn Lint> {
    ALL.iter()
        .copied()
        .find(|l| l.code().eq_ignore_ascii_case(code_or_name) || l.name() == code_or_name)
}

#[cfg(test)]
mod fixture_tests {
    //! Runs every lint on its fixtures and compares with the `.expected` files.

    use std::path::Path;

    use super::*;
    use crate::analysis::parse::parse;
    use crate::analysis::semantic::Model;
    use crate::analysis::spec_schema::SpecSchema;
    use crate::analysis::spec_shape::SpecShape;
    use kruise_lua_engine::script::ScriptFlavor;

    /// `line:col` (1-based, column in characters) of a byte offset.
    fn line_col(source: &str, offset: usize) -> (usize, usize) {
        let before = &source[..offset];
        let line = before.matches('\n').count() + 1;
        let col = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
        (line, col)
    }

    /// The report for one fixture: each finding with the source line and carets under it.
    fn render(source: &str, lint: &dyn Lint, found: &[LintDiagnostic]) -> String {
        let mut out = String::new();
        for d in found {
            let (line, col) = line_col(source, d.range.start);
            let (end_line, end_col) = line_col(source, d.range.end);
            out.push_str(&format!(
                "{}[{}] {line}:{col}-{end_line}:{end_col}: {}\n",
                lint.default_severity(),
                lint.code(),
                d.message
            ));
            let text = source.lines().nth(line - 1).unwrap_or("");
            let width = if end_line == line {
                (end_col - col).max(1)
            } else {
                text.chars().count().saturating_sub(col - 1).max(1)
            };
            out.push_str(&format!(
                "  | {text}\n  | {}{}\n",
                " ".repeat(col - 1),
                "^".repeat(width)
            ));
            if let Some(fix) = &d.fix {
                out.push_str(&format!(
                    "  fix: {} ({:?} -> {:?})\n",
                    fix.title,
                    &source[fix.range.clone()],
                    fix.replacement
                ));
            }
        }
        if found.is_empty() {
            out.push_str("(no findings)\n");
        }
        out
    }

    fn run(lint: &dyn Lint, path: &Path) -> String {
        let source = std::fs::read_to_string(path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy();
        let flavor = if name.starts_with("ingress") {
            ScriptFlavor::Ingress
        } else {
            ScriptFlavor::Custom
        };
        let parsed = parse(&source);
        assert!(
            parsed.errors.is_empty() || name.contains("syntax"),
            "{name}: {:?}",
            parsed.errors
        );
        let model = Model::build(&parsed.ast, source.len());
        // `-- configmap-key: lua.traffic.routing.<Kind>.<group>` on line 1: the script is
        // embedded in a ConfigMap under that key.
        let configmap_kind = source
            .lines()
            .next()
            .and_then(|line| line.strip_prefix("-- configmap-key: "))
            .and_then(|key| kruise_lua_engine::discovery::script_kind_of_key(key.trim()));
        // A `crd.yaml` beside the fixtures is the schema of the script's spec (its first CRD,
        // storage version), unless line 1 says `-- no-crd`.
        let crd = path.with_file_name("crd.yaml");
        let shape = (crd.is_file() && !source.starts_with("-- no-crd")).then(|| {
            let mut set = kruise_lua_engine::schema::SchemaSet::new();
            set.add_path(&crd).unwrap();
            let first = &set.crds()[0];
            let (group, kind) = (first.group.clone(), first.kind.clone());
            let schema = SpecSchema::choose(std::sync::Arc::new(set), &group, &kind, &[]);
            SpecShape::default().with_schema(schema)
        });
        let ctx = LintContext::new(
            &source,
            &parsed.ast,
            &model,
            flavor,
            !parsed.errors.is_empty(),
            shape.as_ref(),
        )
        .in_configmap(configmap_kind.as_ref());
        let mut found = lint.check(&ctx);
        found.sort_by_key(|d| (d.range.start, d.range.end));
        render(&source, lint, &found)
    }

    #[test]
    fn fixtures() {
        let bless = std::env::var_os("KRUISE_LUA_BLESS").is_some();
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/analysis/lints/fixtures");
        let mut failures = Vec::new();
        for lint in all() {
            let dir = root.join(lint.code());
            let mut scripts: Vec<_> = std::fs::read_dir(&dir)
                .unwrap_or_else(|_| panic!("{} has no fixtures in {}", lint.code(), dir.display()))
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "lua"))
                .collect();
            scripts.sort();
            assert!(
                scripts.len() >= 2,
                "{}: need fixtures with and without findings",
                lint.code()
            );
            for script in scripts {
                let actual = run(*lint, &script);
                let expected_path = script.with_extension("expected");
                if bless {
                    std::fs::write(&expected_path, &actual).unwrap();
                    continue;
                }
                let expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
                if expected != actual {
                    failures.push(format!(
                        "== {}\n-- expected\n{expected}-- actual\n{actual}",
                        script.display()
                    ));
                }
            }
        }
        assert!(
            failures.is_empty(),
            "fixture mismatches (KRUISE_LUA_BLESS=1 to accept):\n{}",
            failures.join("\n")
        );
    }
}
