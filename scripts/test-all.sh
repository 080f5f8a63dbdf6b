#!/usr/bin/env bash
# The whole test suite: formatting, lints, every crate's tests (engine conformance, CLI
# end-to-end), the differential test against gopher-lua, the bundled script library checked by
# the freshly built binary, the language server end to end (pytest-lsp), packaging (the Python
# wheel installed without Rust, the GitHub Action's script, actionlint, `cargo package`), the
# pre-commit hooks (real pre-commit, system and python hooks from the same wheel), Neovim end to end
# (headless nvim), and the VS Code extension (unit tests, the extension against the real
# server, the .vsix package).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -f ../shared/conformance/README.md ]; then
  echo "error: ../shared/conformance is missing; the engine's conformance tests need it beside the repository" >&2
  exit 2
fi

# The HTML report's test (tests/tests/plan_html.rs) and the VS Code suite open Debian's chromium.
if [ ! -x /usr/bin/chromium ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "== installing chromium (apt)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "== cargo test"
cargo test --workspace --locked

echo "== reliability suite and a short fuzz run (also part of cargo test; named here so a failure is easy to place)"
cargo test --locked -p kruise-lua-e2e --test reliability
PROPTEST_CASES=${PROPTEST_CASES:-256} cargo test --locked -p kruise-lua-engine --test fuzz

echo "== differential test against gopher-lua (fixed seeds)"
bash scripts/difftest.sh --ci

echo "== kruise-lua check lua_configuration"
cargo run --quiet --locked -p kruise-lua -- check lua_configuration

echo "== language server end to end (pytest-lsp)"
bash tests/lsp/run.sh

echo "== packaging: the wheel without Rust, the GitHub Action, actionlint"
# One wheel for both the packaging and the pre-commit tests (a dev-profile build reusing the
# debug build above).
KRUISE_LUA_WHEEL="$(bash tests/packaging/build-wheel.sh)"
export KRUISE_LUA_WHEEL
bash tests/packaging/run.sh

echo "== packaging: cargo package of the three crates"
bash tests/packaging/crates.sh

echo "== pre-commit hooks end to end"
bash tests/precommit/run.sh

echo "== Neovim end to end"
bash tests/nvim/run.sh

echo "== VS Code extension"
bash editors/vscode/test.sh
