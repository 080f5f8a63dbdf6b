#!/usr/bin/env bash
# The VS Code extension's checks: install the locked dependencies, type-check, unit tests
# (plain node, no VS Code), and build the .vsix.
set -euo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund
npm test
npm run package
ls -l kruise-lua.vsix
