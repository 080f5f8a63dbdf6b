#!/usr/bin/env bash
# The VS Code extension's checks: install the locked dependencies, type-check, unit tests
# (plain node, no VS Code), the bundled extension against the real `kruise-lua lsp` (built by
# cargo unless KRUISE_LUA_BIN names a binary), the .vsix, and that .vsix in a real VS Code
# (e2e/run.sh: code-server + headless Chromium; KRUISE_LUA_SKIP_VSCODE_E2E=1 skips it). On
# Linux x86_64 the e2e suite installs the platform package (package-platform.sh linux-x64, the
# server inside) and runs with no kruise-lua on code-server's PATH; elsewhere the universal
# package with kruiseLua.server.path.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cd "$here"

if [ -z "${KRUISE_LUA_BIN:-}" ]; then
  (cd "$repo" && cargo build --quiet --locked -p kruise-lua)
  export KRUISE_LUA_BIN="${CARGO_TARGET_DIR:-$repo/target}/debug/kruise-lua"
fi

npm ci --no-audit --no-fund
npm test
npm run package
ls -l kruise-lua.vsix

if [ "${KRUISE_LUA_SKIP_VSCODE_E2E:-}" = 1 ]; then
  echo "vscode-e2e: skipped (KRUISE_LUA_SKIP_VSCODE_E2E=1)"
else
  if [ "$(uname -s)-$(uname -m)" = Linux-x86_64 ]; then
    # The binary stripped of debug info (a debug build is ~200 MB, ~30 MB without): what a
    # release package carries is a release build, which has none.
    stripped="$repo/target/vscode-e2e/kruise-lua"
    mkdir -p "$(dirname "$stripped")"
    strip -o "$stripped" "$KRUISE_LUA_BIN"
    bash "$here/package-platform.sh" linux-x64 "$stripped" "$here/kruise-lua-linux-x64.vsix"
    ls -l "$here/kruise-lua-linux-x64.vsix"
    KRUISE_LUA_VSIX="$here/kruise-lua-linux-x64.vsix" KRUISE_LUA_E2E_BUNDLED=1 bash "$here/e2e/run.sh"
  else
    KRUISE_LUA_VSIX="$here/kruise-lua.vsix" bash "$here/e2e/run.sh"
  fi
fi
