#!/usr/bin/env bash
# The VS Code extension's checks: install the locked dependencies, type-check, unit tests
# (plain node, no VS Code), the bundled extension against the real `kruise-lua lsp` (built by
# cargo unless KRUISE_LUA_BIN names a binary), the .vsix, and that .vsix in a real VS Code
# (e2e/run.sh: code-server + headless Chromium; KRUISE_LUA_SKIP_VSCODE_E2E=1 skips it).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cd "$here"

if [ -z "${KRUISE_LUA_BIN:-}" ]; then
  (cd "$repo" && cargo build --quiet --locked -p kruise-lua)
  export KRUISE_LUA_BIN="$repo/target/debug/kruise-lua"
fi

npm ci --no-audit --no-fund
npm test
npm run package
ls -l kruise-lua.vsix

if [ "${KRUISE_LUA_SKIP_VSCODE_E2E:-}" = 1 ]; then
  echo "vscode-e2e: skipped (KRUISE_LUA_SKIP_VSCODE_E2E=1)"
else
  KRUISE_LUA_VSIX="$here/kruise-lua.vsix" bash "$here/e2e/run.sh"
fi
