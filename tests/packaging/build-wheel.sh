#!/usr/bin/env bash
# Builds the kruise-lua wheel (server/pyproject.toml, maturin `bindings = "bin"`) once for the
# packaging tests and the pre-commit test, and prints its path. The tools come from
# tests/packaging/requirements.txt in a venv under the target folder.
#
# Profile: KRUISE_LUA_WHEEL_PROFILE (default `dev`: the test suite's debug build, stripped, so
# CI compiles nothing twice; `release` is what the release workflow ships). The wheel is
# manylinux2014 (glibc 2.17) through zig as the linker, as the release workflow builds it.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
target_dir="${CARGO_TARGET_DIR:-$repo/target}"
venv="${KRUISE_LUA_PACKAGING_VENV:-$target_dir/packaging-venv}"
profile="${KRUISE_LUA_WHEEL_PROFILE:-dev}"
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

out="$target_dir/wheels/$profile"
rm -rf "$out"
mkdir -p "$out"
# maturin finds zig through the ziglang package of the Python on PATH: the venv's.
PATH="$venv/bin:$PATH" maturin build --quiet --locked --manifest-path "$repo/server/Cargo.toml" \
  --profile "$profile" --strip --zig --compatibility manylinux2014 --out "$out" >&2
wheel="$(ls "$out"/kruise_lua-*.whl)"
[ "$(printf '%s\n' "$wheel" | wc -l)" -eq 1 ] || { echo "build-wheel: expected one wheel in $out" >&2; exit 1; }
printf '%s\n' "$wheel"
