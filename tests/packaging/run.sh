#!/usr/bin/env bash
# Packaging end to end: what a user without a Rust toolchain installs.
#  1. the wheel (build-wheel.sh, built once; the pre-commit test reuses it) is consistent with
#     its manylinux tag (`auditwheel show`), and its version is the workspace's;
#  2. a fresh virtualenv with no cargo/rustc on PATH installs it and `kruise-lua check
#     lua_configuration` is green (the time it takes is printed);
#  3. the GitHub Action's script (scripts/github-action.sh) run locally on that wheel: green on
#     the library with a SARIF file, red with an ::error annotation on a failing case;
#  4. actionlint on every workflow (which also checks the action's inputs where `uses: ./`);
#  5. the root pyproject.toml (the pre-commit hooks' package) pins the workspace version.
# Prints the wheel's path and size. KRUISE_LUA_WHEEL names an already built wheel.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
target_dir="${CARGO_TARGET_DIR:-$repo/target}"
venv="${KRUISE_LUA_PACKAGING_VENV:-$target_dir/packaging-venv}"
python="${PYTHON:-python3.11}"
command -v "$python" >/dev/null 2>&1 || python=python3
python="$(command -v "$python")"

failures=0
fail() { echo "tests/packaging: FAIL: $*" >&2; failures=$((failures + 1)); }

wheel="${KRUISE_LUA_WHEEL:-$(bash "$here/build-wheel.sh")}"
echo "tests/packaging: wheel $(basename "$wheel"), $(du -k "$wheel" | cut -f1) KiB"

version="$(sed -n 's/^version = "\(.*\)"$/\1/p' "$repo/Cargo.toml" | head -n 1)"
case "$(basename "$wheel")" in
  "kruise_lua-$version-"*) ;;
  *) fail "the wheel $(basename "$wheel") is not version $version" ;;
esac

# 1. auditwheel: the wheel's platform tag holds for what the binary links.
tag="$(basename "$wheel" .whl | sed 's/.*-py3-none-//')"
"$venv/bin/auditwheel" show "$wheel" >"$target_dir/auditwheel.txt" 2>&1 || fail "auditwheel show failed: $(cat "$target_dir/auditwheel.txt")"
# The file name may carry a legacy alias too (manylinux2014 = manylinux_2_17): one of its tags
# must be the one auditwheel finds the binary consistent with.
consistent=false
IFS=. read -r -a tags <<<"$tag"
for t in "${tags[@]}"; do
  if tr -s ' \n' ' ' <"$target_dir/auditwheel.txt" | grep -q "consistent with the following platform tag: \"$t\""; then
    consistent=true
  fi
done
[ "$consistent" = true ] || fail "auditwheel: the wheel is not consistent with $tag: $(cat "$target_dir/auditwheel.txt")"

# 2. A fresh virtualenv, nothing of Rust on PATH.
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir "$work/bin"
ln -s "$python" "$work/bin/python3"
clean_path="$work/bin:/usr/bin:/bin"
if PATH="$clean_path" command -v cargo >/dev/null 2>&1 || PATH="$clean_path" command -v rustc >/dev/null 2>&1; then
  fail "cargo or rustc is on the clean PATH $clean_path"
fi
env -i HOME="$work" PATH="$clean_path" python3 -m venv "$work/venv"
start=$(date +%s%N)
env -i HOME="$work" PATH="$work/venv/bin:$clean_path" pip install --quiet --disable-pip-version-check --no-index "$wheel" \
  || fail "pip install of the wheel failed"
installed=$(date +%s%N)
if (cd "$repo" && env -i HOME="$work" PATH="$work/venv/bin:$clean_path" kruise-lua check --color never lua_configuration >"$work/check.out" 2>&1); then
  checked=$(date +%s%N)
  grep -q "passed" "$work/check.out" || fail "no summary from check: $(tail -5 "$work/check.out")"
  printf 'tests/packaging: fresh venv: pip install %d ms, check lua_configuration %d ms (%s)\n' \
    $(((installed - start) / 1000000)) $(((checked - installed) / 1000000)) "$(tail -n 1 "$work/check.out")"
else
  fail "kruise-lua check lua_configuration from the wheel is not green: $(tail -20 "$work/check.out")"
fi

# 3. The action's script, locally, on the wheel.
action_env=(env -i HOME="$work" PATH="$clean_path" RUNNER_TEMP="$work" GITHUB_OUTPUT="$work/gh-output"
  KRUISE_LUA_INSTALL="$wheel" KRUISE_LUA_VENV="$work/action-venv")
if (cd "$repo" && "${action_env[@]}" KRUISE_LUA_SARIF="$work/green.sarif" bash scripts/github-action.sh >"$work/action.out" 2>&1); then
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["version"]=="2.1.0", d["version"]' "$work/green.sarif" \
    || fail "the action wrote no SARIF 2.1.0 report"
  grep -q "^sarif-file=$work/green.sarif$" "$work/gh-output" || fail "no sarif-file output: $(cat "$work/gh-output")"
  grep -q "^exit-code=0$" "$work/gh-output" || fail "no exit-code=0 output: $(cat "$work/gh-output")"
else
  fail "the action is red on the bundled library: $(tail -20 "$work/action.out")"
fi
cp -r "$repo/tests/fixtures/tree/lua_configuration" "$work/tree"
case_file="$work/tree/example.io/Weighted/testdata/rollout_steps.yaml"
sed -i 's/weight: \([0-9]*\)/weight: 1\1/' "$case_file"
: >"$work/gh-output"
status=0
(cd "$work" && "${action_env[@]}" KRUISE_LUA_PATHS="tree" KRUISE_LUA_SARIF="red.sarif" \
  bash "$repo/scripts/github-action.sh" >"$work/action.out" 2>&1) || status=$?
[ "$status" -eq 1 ] || fail "the action's exit code on a failing case is $status, not 1: $(tail -20 "$work/action.out")"
grep -q "^::error file=tree/example.io/Weighted/testdata/rollout_steps.yaml" "$work/action.out" \
  || fail "no ::error annotation on the failing case: $(tail -20 "$work/action.out")"
grep -q '"level": *"error"' "$work/red.sarif" || fail "the SARIF report has no error result"
grep -q "^exit-code=1$" "$work/gh-output" || fail "no exit-code=1 output: $(cat "$work/gh-output")"

# 4. actionlint on the workflows.
(cd "$repo" && "$venv/bin/actionlint" .github/workflows/*.yml) || fail "actionlint"

# 5. The pre-commit package pins this version.
grep -q "^version = \"$version\"$" "$repo/pyproject.toml" || fail "pyproject.toml's version is not $version"
grep -q "\"kruise-lua==$version\"" "$repo/pyproject.toml" || fail "pyproject.toml does not pin kruise-lua==$version"

if [ "$failures" -gt 0 ]; then
  exit 1
fi
echo "tests/packaging: the wheel installs and checks green without Rust; the action and the workflows pass"
