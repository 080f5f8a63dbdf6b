#!/usr/bin/env bash
# The GitHub Action's own script (action.yml at the repository root runs it; a test runs it
# locally: tests/packaging/run.sh). Installs kruise-lua from its wheel into a virtualenv (no Rust
# toolchain), runs `kruise-lua check` on the chosen paths with the chosen options, writes the
# SARIF report (for code scanning) and prints the workflow annotations (`--format github`).
#
# Inputs, as environment variables (action.yml maps its inputs to them):
#   KRUISE_LUA_PATHS     paths to check, whitespace-separated (default: lua_configuration)
#   KRUISE_LUA_ARGS      more `check` options, whitespace-separated (e.g. `--mode production --lint`)
#   KRUISE_LUA_SARIF     where to write the SARIF report (default: kruise-lua.sarif; empty: none)
#   KRUISE_LUA_ANNOTATE  `true` (default) prints ::error/::warning annotations; `false` the
#                        human report instead
#   KRUISE_LUA_INSTALL   what pip installs: a requirement (default: kruise-lua==VERSION, the
#                        action's own version) or a wheel's path
#   KRUISE_LUA_VENV      where the virtualenv goes (default: $RUNNER_TEMP/kruise-lua-venv)
# Outputs (to $GITHUB_OUTPUT when set): `sarif-file`, `exit-code`.
# Exit code: check's (0 green, 1 a failing step or case, 2 a usage or I/O error).
set -euo pipefail
action_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# The action's version is the workspace version: a tag's action installs the same release.
version="$(sed -n 's/^version = "\(.*\)"$/\1/p' "$action_dir/Cargo.toml" | head -n 1)"
paths="${KRUISE_LUA_PATHS:-lua_configuration}"
args="${KRUISE_LUA_ARGS:-}"
sarif="${KRUISE_LUA_SARIF-kruise-lua.sarif}"
annotate="${KRUISE_LUA_ANNOTATE:-true}"
install="${KRUISE_LUA_INSTALL:-kruise-lua==$version}"
venv="${KRUISE_LUA_VENV:-${RUNNER_TEMP:-${TMPDIR:-/tmp}}/kruise-lua-venv}"
python="${PYTHON:-python3}"
command -v "$python" >/dev/null 2>&1 || python=python

case "$annotate" in
  true | false) ;;
  *) echo "kruise-lua action: annotate must be true or false, not '$annotate'" >&2; exit 2 ;;
esac

if [ ! -x "$venv/bin/kruise-lua" ] && [ ! -x "$venv/Scripts/kruise-lua.exe" ]; then
  "$python" -m venv "$venv"
  pip="$venv/bin/pip"
  [ -x "$pip" ] || pip="$venv/Scripts/pip.exe"
  "$pip" install --quiet --disable-pip-version-check "$install"
fi
bin="$venv/bin/kruise-lua"
[ -x "$bin" ] || bin="$venv/Scripts/kruise-lua.exe"
"$bin" --version

# Word splitting on purpose: paths and options are whitespace-separated lists.
# shellcheck disable=SC2206
path_list=($paths)
# shellcheck disable=SC2206
arg_list=($args)

status=0
if [ "$annotate" = true ]; then
  "$bin" check --format github "${arg_list[@]}" "${path_list[@]}" || status=$?
else
  "$bin" check --color never "${arg_list[@]}" "${path_list[@]}" || status=$?
fi
if [ -n "$sarif" ] && [ "$status" -ne 2 ]; then
  # Same run, as SARIF for code scanning; its exit code is the same verdict.
  "$bin" check --format sarif "${arg_list[@]}" "${path_list[@]}" >"$sarif" || true
  echo "kruise-lua: SARIF report in $sarif"
fi
if [ -n "${GITHUB_OUTPUT:-}" ]; then
  {
    echo "sarif-file=$sarif"
    echo "exit-code=$status"
  } >>"$GITHUB_OUTPUT"
fi
exit "$status"
