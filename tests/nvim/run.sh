#!/usr/bin/env bash
# The Neovim end-to-end tests: a venv with the pinned headless Neovim and pytest, the
# kruise-lua binary built by cargo, then pytest. Set KRUISE_LUA_BIN to test another binary
# (the build is skipped), NVIM_BIN to use another nvim.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="$here/.venv"

if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements.txt"

if [ -z "${KRUISE_LUA_BIN:-}" ]; then
  (cd "$repo" && cargo build --quiet --locked -p kruise-lua)
  export KRUISE_LUA_BIN="${CARGO_TARGET_DIR:-$repo/target}/debug/kruise-lua"
fi
if ! "$KRUISE_LUA_BIN" lsp --help >/dev/null 2>&1; then
  echo "error: $KRUISE_LUA_BIN has no \`lsp\` subcommand" >&2
  exit 1
fi

cd "$here"
set +e
"$venv/bin/python" -m pytest -q "$@"
status=$?
set -e
# pytest's 5 means no test ran: that is a failure here, not a pass.
if [ "$status" -eq 5 ]; then
  echo "error: no test ran" >&2
  exit 1
fi
exit "$status"
