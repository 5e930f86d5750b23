#!/usr/bin/env bash
# Installs the serve client tests' npm packages (package-lock.json: the official `openai` SDK) into
# the build tree, never the source tree, and copies the test scripts beside them so that their
# `import 'openai'` resolves there. Idempotent: npm ci runs only when the lock file changed.
# usage: npm_ci.sh SOURCE_DIR DEST_DIR        (the CTest fixture serve_clients_npm_ci runs it)
set -euo pipefail
src="$1"
dest="$2"
die() { echo "serve_clients_npm_ci: $*" >&2; exit 1; }
command -v node >/dev/null || die "'node' (Node.js 20 or newer) is not on PATH: the serve client tests run the official openai npm package"
command -v npm >/dev/null || die "'npm' is not on PATH: it installs the serve client tests' openai package"
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 20 ] || die "node $(node --version) is too old: the serve client tests need Node.js 20 or newer"

mkdir -p "$dest"
cp "$src"/package.json "$src"/package-lock.json "$src"/*.mjs "$dest"/
stamp="$dest/node_modules/.plexus-lock.sha256"
want=$(sha256sum "$src/package-lock.json" | cut -d' ' -f1)
if [ -f "$dest/node_modules/openai/package.json" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  echo "serve_clients_npm_ci: $dest/node_modules matches package-lock.json"
  exit 0
fi
echo "serve_clients_npm_ci: npm ci in $dest"
if ! (cd "$dest" && npm ci --no-audit --no-fund --loglevel=error); then
  die "npm ci failed in $dest: the serve client tests install the openai package pinned in
  $src/package-lock.json from the npm registry ($(npm config get registry 2>/dev/null || echo '?')).
  Check the network or proxy settings (npm config get registry / https-proxy), then rerun ctest -R serve_clients."
fi
echo "$want" > "$stamp"
