//! Builds Lua 5.1.5 from the pristine sources in `lua-5.1.5/` into a static library.

use std::path::PathBuf;

fn main() {
    let src = PathBuf::from("lua-5.1.5");
    println!("cargo:rerun-if-changed=lua-5.1.5");
    println!("cargo:rerun-if-changed=build.rs");
    let mut build = cc::Build::new();
    build
        .warnings(false)
        .include(&src)
        .define("LUA_USE_LINUX", None);
    for entry in std::fs::read_dir(&src).expect("lua-5.1.5 sources") {
        let path = entry.expect("dir entry").path();
        if path.extension().is_some_and(|e| e == "c") {
            build.file(path);
        }
    }
    build.cargo_metadata(false).compile("kruiselua51");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    println!("cargo:rustc-link-search=native={}", out.display());
    // whole-archive: mlua's references to the C API come later in the link line
    // than this crate's archive, so every object must be kept.
    println!("cargo:rustc-link-lib=static:+whole-archive=kruiselua51");
    println!("cargo:rustc-link-lib=m");
}
