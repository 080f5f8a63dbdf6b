#!/usr/bin/env bash
# What the intent check and schema validation cost `check`, in instructions (issue 20): callgrind's
# count of the whole process, one worker thread, for `check` by default, with `--no-intent`, and
# with `--no-intent --no-schema`, on the bundled library and on COPIES copies of it (default 3).
# Instruction counts repeat to 0.01 % where this machine's CPU time moves by a quarter, so they
# are the figure issue 20's goal (default / both off at most 1.3x) is read from. A benchmark,
# not a test: figures go to docs/BENCHMARKS.md.
#
# Usage: scripts/count-intent.sh [BINARY]
#   (default target/profiling/kruise-lua: cargo build --profile profiling -p kruise-lua)
# Needs valgrind. Set KEEP=dir to keep the callgrind files (for callgrind_annotate).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/profiling/kruise-lua}
copies=${COPIES:-3}
[ -x "$bin" ] || { echo "no binary at $bin (cargo build --profile profiling -p kruise-lua)" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "count-intent: needs valgrind (apt install valgrind)" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=${KEEP:-$tmp}
mkdir -p "$out"
paths=()
for i in $(seq 1 "$copies"); do
  mkdir -p "$tmp/copy$i"
  cp -r lua_configuration "$tmp/copy$i/"
  paths+=("$tmp/copy$i/lua_configuration")
done

# Instructions of one run of `check` with the given options on the given corpus.
count() {
  local name=$1 corpus=$2
  shift 2
  local status=0
  RAYON_NUM_THREADS=1 valgrind --tool=callgrind --callgrind-out-file="$out/$corpus-$name.out" \
    "$bin" check "$@" >/dev/null 2>"$tmp/err" || status=$?
  if [ "$status" -gt 1 ]; then
    echo "count-intent: check $* exited with $status:" >&2
    tail -5 "$tmp/err" >&2
    exit 2
  fi
  grep -o 'Collected : [0-9]*' "$tmp/err" | awk '{print $3}'
}

millions() { awk -v n="$1" 'BEGIN {printf "%.1f M", n / 1e6}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }

printf '| corpus | default | --no-intent | --no-intent --no-schema | default / both off |\n'
printf '|---|---|---|---|---|\n'
for corpus in library copies; do
  if [ "$corpus" = library ]; then set -- lua_configuration; else set -- "${paths[@]}"; fi
  d=$(count default "$corpus" "$@")
  n=$(count no-intent "$corpus" --no-intent "$@")
  b=$(count bare "$corpus" --no-intent --no-schema "$@")
  label=$corpus
  [ "$corpus" = copies ] && label="$copies copies"
  printf '| %s | %s | %s | %s | %s |\n' "$label" "$(millions "$d")" "$(millions "$n")" \
    "$(millions "$b")" "$(ratio "$d" "$b")"
done
