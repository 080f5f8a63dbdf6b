#!/usr/bin/env bash
# Packages a platform-specific .vsix carrying the server: `server/kruise-lua` (`.exe` on Windows)
# inside the extension, which the extension uses before PATH when `kruiseLua.server.path` is left
# at its default (src/logic.ts, resolveServerPath). VS Code installs the package whose target
# matches the machine (https://code.visualstudio.com/api/working-with-extensions/publishing-extension#platformspecific-extensions).
#
# Usage: package-platform.sh TARGET BINARY [OUT]
#   TARGET  a vsce target: linux-x64, linux-arm64, darwin-x64, darwin-arm64, win32-x64, ...
#   BINARY  the kruise-lua binary built for that target
#   OUT     the .vsix to write (default: kruise-lua-TARGET.vsix here)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
[ "$#" -ge 2 ] || { echo "usage: $0 TARGET BINARY [OUT]" >&2; exit 2; }
target="$1"
binary="$2"
out="${3:-$here/kruise-lua-$target.vsix}"
[ -f "$binary" ] || { echo "package-platform: no binary at $binary" >&2; exit 1; }
case "$target" in
  win32-*) name=kruise-lua.exe ;;
  *) name=kruise-lua ;;
esac

cd "$here"
rm -rf server
mkdir server
trap 'rm -rf "$here/server"' EXIT
cp "$binary" "server/$name"
chmod 755 "server/$name"
npx --no-install vsce package --no-dependencies --allow-missing-repository --skip-license \
  --target "$target" -o "$out"
