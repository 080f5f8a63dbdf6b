#!/usr/bin/env bash
# Differential test of the engine against gopher-lua (Debian's 2017 snapshot): builds the Go
# runner (tests/difftest/gopher-runner) against the Debian package, then compares both engines
# on generated scripts (tests/difftest, README "Differential test against gopher-lua").
#
#   scripts/difftest.sh --ci              the brief, fixed-seed run of scripts/test-all.sh
#   scripts/difftest.sh --seeds 20000     a long run (add --first N for other seeds, --size K
#                                         for longer programs, --examples for one example
#                                         of every class that matched)
#   scripts/difftest.sh --show 17         one program's source and both engines' outcomes
#   scripts/difftest.sh --findings        every class's example through both engines (Markdown)
#
# Without Go or the gopher-lua package it fails under CI (CI set) and otherwise says how to
# install them and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."

GOPHER_LUA=/usr/share/gocode/src/github.com/yuin/gopher-lua
if ! command -v go >/dev/null 2>&1 || [ ! -d "$GOPHER_LUA" ]; then
  message="the differential test needs Go and Debian's gopher-lua: apt-get install -y golang-go golang-github-yuin-gopher-lua-dev"
  if [ -n "${CI:-}" ]; then
    echo "error: $message" >&2
    exit 1
  fi
  echo "difftest NOT RUN: $message" >&2
  exit 0
fi

# GOPATH mode, offline: the runner imports the Debian package, nothing is downloaded.
build=target/difftest
mkdir -p "$build/gopath"
GO111MODULE=off GOFLAGS= GOPATH="$PWD/$build/gopath:/usr/share/gocode" GOCACHE="$PWD/$build/gocache" \
  go build -o "$build/gopher-runner" ./tests/difftest/gopher-runner

cargo run --quiet --locked -p kruise-lua-difftest -- --runner "$build/gopher-runner" "$@"
