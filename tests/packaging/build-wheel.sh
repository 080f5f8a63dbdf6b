#!/usr/bin/env bash
# Builds the kruise-lua wheel (server/pyproject.toml, maturin `bindings = "bin"`) once for the
# packaging tests and the pre-commit test, and prints its path. The tools come from
# tests/packaging/requirements.txt in a venv under the target folder.
#
# Two builds:
# - default (the test suite): the `dev` profile of the host target, so cargo reuses the debug
#   build the other tests made (nothing compiles twice; the binary is stripped into the wheel),
#   tagged with the manylinux policy the binary meets on this host;
# - KRUISE_LUA_WHEEL_RELEASE=1: what the release workflow ships, `--release --zig
#   --compatibility manylinux2014` (zig links against glibc 2.17; cargo builds it all again under
#   target/x86_64-unknown-linux-gnu, several minutes of CPU).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
target_dir="${CARGO_TARGET_DIR:-$repo/target}"
venv="${KRUISE_LUA_PACKAGING_VENV:-$target_dir/packaging-venv}"
python="${PYTHON:-python3.11}"
command -v "$python" >/dev/null 2>&1 || python=python3

if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv" >&2
fi
stamp="$venv/.requirements"
if ! cmp -s "$here/requirements.txt" "$stamp" 2>/dev/null; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements.txt" >&2
  cp "$here/requirements.txt" "$stamp"
fi

if [ "${KRUISE_LUA_WHEEL_RELEASE:-}" = 1 ]; then
  out="$target_dir/wheels/release"
  build=(--release --zig --compatibility manylinux2014)
else
  out="$target_dir/wheels/dev"
  build=(--profile dev)
fi
rm -rf "$out"
mkdir -p "$out"
# maturin finds zig through the ziglang package of the Python on PATH: the venv's.
PATH="$venv/bin:$PATH" maturin build --quiet --locked --manifest-path "$repo/server/Cargo.toml" \
  "${build[@]}" --strip --out "$out" >&2
wheel="$(ls "$out"/kruise_lua-*.whl)"
[ "$(printf '%s\n' "$wheel" | wc -l)" -eq 1 ] || { echo "build-wheel: expected one wheel in $out" >&2; exit 1; }
printf '%s\n' "$wheel"
