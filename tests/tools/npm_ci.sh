#!/usr/bin/env bash
# Installs a test folder's npm packages (its package-lock.json) into the build tree, never the
# source tree, and copies its .mjs scripts beside them so that their imports resolve there.
# Idempotent: npm ci runs only when the lock file changed. The CTest fixtures run it:
# serve_clients_npm_ci (the official `openai` SDK), deploy_validators_npm_ci (Kubernetes schemas,
# Dockerfile linter).
# usage: npm_ci.sh NAME SOURCE_DIR DEST_DIR PACKAGE   (PACKAGE: one installed package that proves the install)
set -euo pipefail
name="$1"
src="$2"
dest="$3"
probe="$4"
die() { echo "$name: $*" >&2; exit 1; }
command -v node >/dev/null || die "'node' (Node.js 20 or newer) is not on PATH: these tests run npm packages"
command -v npm >/dev/null || die "'npm' is not on PATH: it installs the packages of $src/package-lock.json"
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 20 ] || die "node $(node --version) is too old: these tests need Node.js 20 or newer"

mkdir -p "$dest"
cp "$src"/package.json "$src"/package-lock.json "$dest"/
for f in "$src"/*.mjs; do [ -e "$f" ] && cp "$f" "$dest"/; done
stamp="$dest/node_modules/.plexus-lock.sha256"
want=$(sha256sum "$src/package-lock.json" | cut -d' ' -f1)
if [ -f "$dest/node_modules/$probe/package.json" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  echo "$name: $dest/node_modules matches package-lock.json"
  exit 0
fi
echo "$name: npm ci in $dest"
if ! (cd "$dest" && npm ci --no-audit --no-fund --loglevel=error); then
  die "npm ci failed in $dest: these tests install the packages pinned in
  $src/package-lock.json from the npm registry ($(npm config get registry 2>/dev/null || echo '?')).
  Check the network or proxy settings (npm config get registry / https-proxy), then rerun ctest -R $name."
fi
echo "$want" > "$stamp"
