#!/usr/bin/env bash
# What the intent check costs `check` (issue 20): median CPU time (user + system) of `check`
# by default, with `--no-intent`, and with `--no-intent --no-schema`, on the bundled library
# and on a 40× copy of it, and the ratios default / `--no-intent` and default / both off (issue
# 20's goal: at most 1.3×). A benchmark, not a test:
# figures go to docs/BENCHMARKS.md ("Intent check").
#
# Usage: scripts/bench-intent.sh [BINARY]   (default target/release/kruise-lua; RUNS=10)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/release/kruise-lua}
runs=${RUNS:-10}
[ -x "$bin" ] || { echo "no binary at $bin (cargo build --release -p kruise-lua)" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
copies=()
for i in $(seq 1 40); do
  mkdir -p "$tmp/copy$i"
  cp -r lua_configuration "$tmp/copy$i/"
  copies+=("$tmp/copy$i/lua_configuration")
done

# Median CPU seconds of `runs` runs of the command.
cpu() {
  local samples=()
  for _ in $(seq 1 "$runs"); do
    # `check` exits 1 on failures and 0 without; any other code (a crash, a usage error) stops
    # the benchmark rather than timing it.
    local status=0
    /usr/bin/time -f "%U %S" -o "$tmp/time" "$@" >/dev/null 2>"$tmp/stderr" || status=$?
    if [ "$status" -gt 1 ]; then
      echo "bench-intent: $* exited with $status:" >&2
      tail -5 "$tmp/stderr" >&2
      exit 2
    fi
    # GNU time writes "Command exited with non-zero status 1" above the figures then.
    samples+=("$(tail -1 "$tmp/time" | awk '{printf "%.3f", $1 + $2}')")
  done
  printf '%s\n' "${samples[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}

# a / b, two decimals.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}'; }

printf '| corpus | default | --no-intent | --no-intent --no-schema | default / --no-intent | default / both off |\n'
printf '|---|---|---|---|---|---|\n'
for corpus in library 40x; do
  if [ "$corpus" = library ]; then paths=(lua_configuration); else paths=("${copies[@]}"); fi
  d=$(cpu "$bin" check "${paths[@]}")
  n=$(cpu "$bin" check --no-intent "${paths[@]}")
  b=$(cpu "$bin" check --no-intent --no-schema "${paths[@]}")
  printf '| %s | %s s | %s s | %s s | %s× | %s× |\n' "$corpus" "$d" "$n" "$b" "$(ratio "$d" "$n")" "$(ratio "$d" "$b")"
done
