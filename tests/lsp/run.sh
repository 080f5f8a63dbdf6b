#!/usr/bin/env bash
# End-to-end tests of `kruise-lua lsp`: builds the binary, prepares a venv with the pinned
# requirements (pytest-lsp), and runs pytest. Exits non-zero on any failure, and on "no tests".
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="${KRUISE_LUA_LSP_VENV:-${CARGO_TARGET_DIR:-$repo/target}/lsp-venv}"
python="${PYTHON:-python3.11}"
command -v "$python" >/dev/null 2>&1 || python=python3

cargo build --quiet -p kruise-lua --manifest-path "$repo/Cargo.toml"
export KRUISE_LUA_BIN="${KRUISE_LUA_BIN:-${CARGO_TARGET_DIR:-$repo/target}/debug/kruise-lua}"

if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
stamp="$venv/.requirements"
if ! cmp -s "$here/requirements.txt" "$stamp" 2>/dev/null; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements.txt"
  cp "$here/requirements.txt" "$stamp"
fi

cd "$here"
status=0
"$venv/bin/python" -m pytest -q -p no:cacheprovider "$@" || status=$?
if [ "$status" -eq 5 ]; then
  echo "tests/lsp: pytest collected no tests" >&2
  exit 1
fi
exit "$status"
