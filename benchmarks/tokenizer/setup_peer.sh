#!/usr/bin/env bash
# Installs the benchmark peer (npm `tokenizers`, pinned in package-lock.json) into
# benchmarks/tokenizer/node_modules (git-ignored). Idempotent; fails when node/npm are missing.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
command -v node >/dev/null && command -v npm >/dev/null || { echo "setup_peer: node and npm are needed" >&2; exit 1; }
if [ -f "$here/node_modules/tokenizers/package.json" ]; then exit 0; fi
echo "setup_peer: npm ci in $here" >&2
(cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
