#!/usr/bin/env bash
# End-to-end test of the pre-commit hooks in .pre-commit-hooks.yaml with the real `pre-commit`
# (PyPI, pinned in requirements.txt, in a venv): a scratch git repository holding a
# lua_configuration tree, and a hooks repository holding this repository's hook definitions,
# referenced from .pre-commit-config.yaml by path and commit. `pre-commit run --all-files` must
# pass on the good tree and fail, naming the problem, on a bad script (lint) and on a failing
# case (check). Then the `language: python` hooks: pre-commit installs the hooks' package (the
# root pyproject.toml), which brings the kruise-lua wheel (tests/packaging/build-wheel.sh, or
# KRUISE_LUA_WHEEL) from a local folder (PIP_FIND_LINKS), with no cargo, rustc or kruise-lua on
# PATH; they must pass the good tree and fail the bad case.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="${KRUISE_LUA_PRECOMMIT_VENV:-${CARGO_TARGET_DIR:-$repo/target}/precommit-venv}"
python="${PYTHON:-python3.11}"
command -v "$python" >/dev/null 2>&1 || python=python3

cargo build --quiet -p kruise-lua --manifest-path "$repo/Cargo.toml"
system_path="${CARGO_TARGET_DIR:-$repo/target}/debug:$PATH"

if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
stamp="$venv/.requirements"
if ! cmp -s "$here/requirements.txt" "$stamp" 2>/dev/null; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements.txt"
  cp "$here/requirements.txt" "$stamp"
fi
pre_commit="$venv/bin/pre-commit"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export PRE_COMMIT_HOME="$work/cache"
git_() { git -c user.name=test -c user.email=test@example.com -c commit.gpgsign=false "$@"; }

# The hooks repository: this repository's hook definitions and the python hooks' package, committed.
mkdir "$work/hooks"
cp "$repo/.pre-commit-hooks.yaml" "$repo/pyproject.toml" "$work/hooks/"
git_ -C "$work/hooks" init --quiet
git_ -C "$work/hooks" add .pre-commit-hooks.yaml pyproject.toml
git_ -C "$work/hooks" commit --quiet -m hooks
rev="$(git -C "$work/hooks" rev-parse HEAD)"

# The project using them.
project="$work/project"
mkdir "$project"
cp -r "$repo/tests/fixtures/tree/lua_configuration" "$project/"
cat > "$project/.pre-commit-config.yaml" <<YAML
repos:
  - repo: $work/hooks
    rev: $rev
    hooks:
      - id: kruise-lua-check
      - id: kruise-lua-lint
YAML
git_ -C "$project" init --quiet
git_ -C "$project" add -A
git_ -C "$project" commit --quiet -m tree

failures=0
fail() { echo "tests/precommit: FAIL: $*" >&2; failures=$((failures + 1)); }

run_hooks() { (cd "$project" && PATH="$system_path" "$pre_commit" run --all-files --color never) >"$work/out" 2>&1; }

# 1. A good tree passes both hooks.
if run_hooks; then
  grep -q "kruise-lua check.*Passed" "$work/out" || fail "check hook did not pass: $(cat "$work/out")"
  grep -q "kruise-lua lint.*Passed" "$work/out" || fail "lint hook did not pass: $(cat "$work/out")"
else
  fail "good tree: pre-commit failed: $(cat "$work/out")"
fi

# 2. A misspelt obj field: lint fails (KL001), the cases still pass.
script="$project/lua_configuration/example.io/Weighted/trafficRouting.lua"
sed -i.orig 's/return { spec = spec, annotations = annotations }/return { spec = spec, annotations = annotations, labels = obj.data.label }/' "$script"
rm -f "$script.orig"
git_ -C "$project" commit --quiet -am "bad script"
if run_hooks; then
  fail "bad script: pre-commit passed: $(cat "$work/out")"
else
  grep -q "kruise-lua lint.*Failed" "$work/out" || fail "lint hook did not fail: $(cat "$work/out")"
  grep -q "error\[KL001\]" "$work/out" || fail "no KL001 finding: $(cat "$work/out")"
  grep -q "kruise-lua check.*Passed" "$work/out" || fail "check hook should pass: $(cat "$work/out")"
fi
git_ -C "$project" revert --quiet --no-edit HEAD >/dev/null

# 3. A wrong expectation: check fails, lint passes.
case_file="$project/lua_configuration/example.io/Weighted/testdata/rollout_steps.yaml"
python3 - "$case_file" <<'PY'
import re, sys
path = sys.argv[1]
text = open(path).read()
new = re.sub(r"weight: (\d+)", lambda m: "weight: %d" % (int(m.group(1)) + 1), text, count=1)
assert new != text, "no weight to change in " + path
open(path, "w").write(new)
PY
git_ -C "$project" commit --quiet -am "bad case"
if run_hooks; then
  fail "bad case: pre-commit passed: $(cat "$work/out")"
else
  grep -q "kruise-lua check.*Failed" "$work/out" || fail "check hook did not fail: $(cat "$work/out")"
  grep -q "kruise-lua lint.*Passed" "$work/out" || fail "lint hook should pass: $(cat "$work/out")"
fi

# 4. The `language: python` hooks, from the wheel, with nothing of Rust or kruise-lua on PATH.
git_ -C "$project" revert --quiet --no-edit HEAD >/dev/null
wheel="${KRUISE_LUA_WHEEL:-$(bash "$repo/tests/packaging/build-wheel.sh")}"
mkdir "$work/wheels" "$work/bin"
cp "$wheel" "$work/wheels/"
ln -s "$(command -v git)" "$work/bin/git"
clean_path="$work/bin:/usr/bin:/bin"
for tool in cargo rustc kruise-lua; do
  if PATH="$clean_path" command -v "$tool" >/dev/null 2>&1; then
    fail "$tool is on the clean PATH $clean_path"
  fi
done
cat > "$project/.pre-commit-config.yaml" <<YAML
repos:
  - repo: $work/hooks
    rev: $rev
    hooks:
      - id: kruise-lua-check-python
      - id: kruise-lua-lint-python
YAML
git_ -C "$project" commit --quiet -am "python hooks"
run_python_hooks() {
  (cd "$project" && PATH="$clean_path" PIP_FIND_LINKS="$work/wheels" PIP_DISABLE_PIP_VERSION_CHECK=1 "$pre_commit" run --all-files --color never) >"$work/out" 2>&1
}
start=$(date +%s)
if run_python_hooks; then
  grep -q "kruise-lua check.*Passed" "$work/out" || fail "python check hook did not pass: $(cat "$work/out")"
  grep -q "kruise-lua lint.*Passed" "$work/out" || fail "python lint hook did not pass: $(cat "$work/out")"
  echo "tests/precommit: python hooks installed the wheel and passed in $(($(date +%s) - start)) s"
else
  fail "good tree, python hooks: pre-commit failed: $(cat "$work/out")"
fi
python3 - "$case_file" <<'PY'
import re, sys
path = sys.argv[1]
text = open(path).read()
new = re.sub(r"weight: (\d+)", lambda m: "weight: %d" % (int(m.group(1)) + 1), text, count=1)
assert new != text, "no weight to change in " + path
open(path, "w").write(new)
PY
git_ -C "$project" commit --quiet -am "bad case"
if run_python_hooks; then
  fail "bad case, python hooks: pre-commit passed: $(cat "$work/out")"
else
  grep -q "kruise-lua check.*Failed" "$work/out" || fail "python check hook did not fail: $(cat "$work/out")"
fi

if [ "$failures" -gt 0 ]; then
  exit 1
fi
echo "tests/precommit: the hooks (system and python) pass a good tree and fail a bad script and a bad case"
