//! Benchmarks of schema validation on the bundled library (issue 21), beside the engine's own
//! step (engine.rs `virtual_service_step`): reading the bundled CRDs, validating one Istio
//! VirtualService object as an Update (its CEL duration rule included), and validating the
//! `original` of every case of the library against its CRD. Figures are in docs/BENCHMARKS.md.

use std::path::{Path, PathBuf};

use divan::Bencher;
use kruise_lua_engine::schema::{SchemaSet, validate_update_as};
use kruise_lua_engine::testcase;
use kruise_lua_engine::value::JsonValue;

fn main() {
    divan::main();
}

fn library() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../lua_configuration")
}

fn bundled() -> SchemaSet {
    let mut set = SchemaSet::new();
    set.add_path(&library().join("crds"))
        .expect("bundled CRDs load");
    set
}

fn original(case: &Path) -> JsonValue {
    let text = std::fs::read_to_string(case).expect("case is readable");
    testcase::parse_case(&text)
        .expect("case parses")
        .root
        .get("original")
        .expect("an original")
        .to_json()
}

/// `(group, kind, original)` of every case of the library.
fn originals() -> Vec<(String, String, JsonValue)> {
    let mut all = Vec::new();
    for entry in kruise_lua_engine::discovery::discover(&library()).expect("readable") {
        let Some(folder) = entry
            .cases
            .iter()
            .flatten()
            .next()
            .and_then(|p| p.parent()?.parent())
        else {
            continue;
        };
        let kind = folder.file_name().unwrap().to_string_lossy().into_owned();
        let group = folder
            .parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        for case in entry.cases.into_iter().flatten() {
            let text = std::fs::read_to_string(&case).expect("readable");
            if let Ok(parsed) = testcase::parse_case(&text)
                && let Some(original) = parsed.root.get("original")
            {
                all.push((group.clone(), kind.clone(), original.to_json()));
            }
        }
    }
    all
}

#[divan::bench]
fn read_bundled_crds() -> SchemaSet {
    bundled()
}

#[divan::bench]
fn validate_virtual_service_update(bencher: Bencher) {
    let set = bundled();
    let object = original(
        &library().join("networking.istio.io/VirtualService/testdata/header_matches.yaml"),
    );
    bencher.bench(|| {
        let v = validate_update_as(
            &set,
            "networking.istio.io",
            "VirtualService",
            &object,
            &object,
        );
        assert!(v.findings.is_empty(), "{:?}", v.findings);
        v
    });
}

#[divan::bench]
fn validate_every_original(bencher: Bencher) {
    let set = bundled();
    let all = originals();
    assert!(all.len() > 50, "{} originals", all.len());
    bencher.bench(|| {
        all.iter()
            .map(|(group, kind, object)| {
                validate_update_as(&set, group, kind, object, object)
                    .findings
                    .len()
            })
            .sum::<usize>()
    });
}
