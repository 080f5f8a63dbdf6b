#!/usr/bin/env bash
# The whole test suite: formatting, lints, every crate's tests (engine conformance, CLI
# end-to-end), and the bundled script library checked by the freshly built binary.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -f ../shared/conformance/README.md ]; then
  echo "error: ../shared/conformance is missing; the engine's conformance tests need it beside the repository" >&2
  exit 2
fi

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "== cargo test"
cargo test --workspace --locked

echo "== kruise-lua check lua_configuration"
cargo run --quiet --locked -p kruise-lua -- check lua_configuration
