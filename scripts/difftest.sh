#!/usr/bin/env bash
# Differential test of the engine against gopher-lua: builds the Go runner
# (tests/difftest/gopher-runner) against Debian's 2017 snapshot of gopher-lua, or against a
# gopher-lua checkout you give it (`--gopher-src DIR`, e.g. Kruise's pin), then compares both
# engines on generated scripts (tests/difftest, README "Differential test against gopher-lua").
#
#   scripts/difftest.sh --ci              the brief, fixed-seed run of scripts/test-all.sh
#   scripts/difftest.sh --seeds 20000     a long run (add --first N for other seeds, --size K
#                                         for longer programs, --examples for one example
#                                         of every class that matched)
#   scripts/difftest.sh --show 17         one program's source and both engines' outcomes
#   scripts/difftest.sh --findings        every class's example through both engines (Markdown)
#   scripts/difftest.sh --gopher-src DIR [options above]
#                                         against the gopher-lua source in DIR (a checkout of
#                                         yuin/gopher-lua at Kruise's pin): the runner is
#                                         built offline with a go.mod `replace`, and the
#                                         expected 2017-vs-2022 classes do not apply (--pin)
#
# Go and Debian's gopher-lua are installed with apt-get when they are missing and this runs as
# root (a fresh machine, CI). Otherwise, without them, it fails under CI (CI set) and elsewhere
# says how to install them and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."

gopher_src=
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --gopher-src)
      [ $# -ge 2 ] || { echo "error: --gopher-src needs a directory" >&2; exit 2; }
      gopher_src=$2
      shift 2
      ;;
    --gopher-src=*)
      gopher_src=${1#--gopher-src=}
      shift
      ;;
    *)
      args+=("$1")
      shift
      ;;
  esac
done

if { ! command -v go >/dev/null 2>&1 || [ ! -d /usr/share/gocode/src/github.com/yuin/gopher-lua ]; } \
  && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
    golang-go golang-github-yuin-gopher-lua-dev
fi

if ! command -v go >/dev/null 2>&1; then
  message="the differential test needs Go: apt-get install -y golang-go"
  if [ -n "${CI:-}" ]; then
    echo "error: $message" >&2
    exit 1
  fi
  echo "difftest NOT RUN: $message" >&2
  exit 0
fi

# Beside the build: CARGO_TARGET_DIR when set (an absolute or relative path), else target/.
build="${CARGO_TARGET_DIR:-target}/difftest"
mkdir -p "$build"
if [ -n "$gopher_src" ]; then
  if [ ! -d "$gopher_src" ]; then
    echo "error: --gopher-src $gopher_src: no such directory" >&2
    exit 2
  fi
  gopher_src=$(cd "$gopher_src" && pwd)
  if [ ! -f "$gopher_src/go.mod" ] || ! grep -q '^module github.com/yuin/gopher-lua$' "$gopher_src/go.mod"; then
    echo "error: $gopher_src is not a gopher-lua checkout (no go.mod naming github.com/yuin/gopher-lua)" >&2
    exit 2
  fi
  # Module mode, offline: a throw-away module holding the runner, its gopher-lua replaced by
  # the given directory (a directory replacement needs no go.sum and no download).
  module="$build/pin-module"
  rm -rf "$module"
  mkdir -p "$module"
  cp tests/difftest/gopher-runner/*.go "$module/"
  cat >"$module/go.mod" <<MOD
module kruise-lua/gopher-runner

go 1.17

require github.com/yuin/gopher-lua v0.0.0
replace github.com/yuin/gopher-lua => $gopher_src
MOD
  (cd "$module" && GO111MODULE=on GOFLAGS=-mod=mod GOPROXY=off GOCACHE="$PWD/../gocache" \
    go build -o ../gopher-runner-pin .)
  cargo run --quiet --locked -p kruise-lua-difftest -- --runner "$build/gopher-runner-pin" --pin ${args[@]+"${args[@]}"}
  exit
fi

GOPHER_LUA=/usr/share/gocode/src/github.com/yuin/gopher-lua
if [ ! -d "$GOPHER_LUA" ]; then
  message="the differential test needs Debian's gopher-lua: apt-get install -y golang-github-yuin-gopher-lua-dev (or pass --gopher-src DIR)"
  if [ -n "${CI:-}" ]; then
    echo "error: $message" >&2
    exit 1
  fi
  echo "difftest NOT RUN: $message" >&2
  exit 0
fi

# GOPATH mode, offline: the runner imports the Debian package, nothing is downloaded.
mkdir -p "$build/gopath"
GO111MODULE=off GOFLAGS= GOPATH="$(cd "$build" && pwd)/gopath:/usr/share/gocode" GOCACHE="$(cd "$build" && pwd)/gocache" \
  go build -o "$build/gopher-runner" ./tests/difftest/gopher-runner

cargo run --quiet --locked -p kruise-lua-difftest -- --runner "$build/gopher-runner" ${args[@]+"${args[@]}"}
