#!/usr/bin/env bash
# The three crates are publishable: `cargo package` packs kruise-lua51-sys, kruise-lua-engine and
# kruise-lua (versions on the path dependencies, licence and description present, the C sources
# and the patch inside lua51-sys's package), and lua51-sys's package builds on its own (its
# build.rs finds the patch and the lua-src pin in the published, rewritten Cargo.toml).
#
# The engine's and the binary's packages are packed but not verified: verifying rebuilds every
# dependency of each from scratch in target/package (several minutes of CPU and ~1 GB for the
# binary) to learn what the workspace build already shows; lua51-sys's is the one whose build
# depends on files the package must carry, so it is verified.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
target_dir="${CARGO_TARGET_DIR:-$repo/target}"
cd "$repo"

failures=0
fail() { echo "tests/packaging/crates: FAIL: $*" >&2; failures=$((failures + 1)); }

crates=(kruise-lua51-sys kruise-lua-engine kruise-lua)
# --allow-dirty: a developer's uncommitted edits are packed as they are (CI's clone is clean).
cargo package --quiet --locked --allow-dirty --no-verify "${crates[@]/#/-p}" || fail "cargo package --no-verify"

version="$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)"
for crate in "${crates[@]}"; do
  file="$target_dir/package/$crate-$version.crate"
  [ -f "$file" ] || { fail "no package $file"; continue; }
  manifest="$(tar xzf "$file" -O "$crate-$version/Cargo.toml")"
  for field in description license; do
    grep -q "^$field = " <<<"$manifest" || fail "$crate: no $field in its published Cargo.toml"
  done
done
listing="$(tar tzf "$target_dir/package/kruise-lua51-sys-$version.crate")"
for needed in build.rs patches/gopher.patch csrc/kruise_gopher.c csrc/kruise_gopher.h csrc/kruise_host.c; do
  grep -qx "kruise-lua51-sys-$version/$needed" <<<"$listing" || fail "kruise-lua51-sys's package lacks $needed"
done
engine_manifest="$(tar xzf "$target_dir/package/kruise-lua-engine-$version.crate" -O "kruise-lua-engine-$version/Cargo.toml")"
grep -A3 '^\[dependencies.kruise-lua51-sys\]' <<<"$engine_manifest" | grep -q "^version = \"$version\"" \
  || fail "kruise-lua-engine's dependency on kruise-lua51-sys has no version"

cargo package --quiet --locked --allow-dirty -p kruise-lua51-sys || fail "cargo package -p kruise-lua51-sys (verify)"

if [ "$failures" -gt 0 ]; then
  exit 1
fi
echo "tests/packaging/crates: ${crates[*]} package; kruise-lua51-sys's package builds"
