#!/usr/bin/env bash
# Continuous batching against one sequence at a time: starts `plexus serve` twice on the same model
# and threads — default --max-sequences (continuous batching, "cb") and --max-sequences 1 ("seq1")
# — and runs serve_bench.mjs against both (interleaved, median of repeats): aggregate generated
# tokens/s at 1, 4, 16 and 64 clients and the ratio cb/seq1. Writes OUT/serve_bench.json.
# The model: `make-model --preset small` (SmolLM-135M's shape, 30 layers) with the Mistral
# tokenizer (32000 tokens), made once into models/serve-bench-small.
# usage: benchmarks/serve/run.sh [BUILD_DIR] [OUT_DIR]     env: THREADS (2) REPEATS (3) MAX_TOKENS (32)
#        MODEL (a model to use instead) CONCURRENCY (1,4,16,64) CB_MAX_SEQUENCES (64)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
build="${1:-$repo/build}"
out="${2:-$repo/bench-results/serve}"
plexus="$build/plexus"
threads="${THREADS:-2}"
[ -x "$plexus" ] || { echo "run.sh: $plexus not found: build plexus first (cmake --build $build --target plexus)" >&2; exit 1; }
command -v node >/dev/null || { echo "run.sh: node (20+) is needed" >&2; exit 1; }
mkdir -p "$out"

model="${MODEL:-$repo/models/serve-bench-small}"
if [ -z "${MODEL:-}" ] && [ ! -f "$model/config.json" ]; then
  "$plexus" make-model "$model" --preset small --tokenizer "$repo/tests/data/golden/tokenizers/mistral" --force >&2
fi

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

# start NAME ARGS...: a server on a free port; sets $url
start() {
  local name="$1"; shift
  local log="$out/$name.stderr"
  "$plexus" serve "$model" --host 127.0.0.1 --port 0 --threads "$threads" "$@" 2> "$log" &
  pids+=($!)
  local port=""
  for _ in $(seq 600); do
    port=$(sed -n 's/.*listening on http:\/\/[^ :]*:\([0-9][0-9]*\).*/\1/p' "$log" | head -1)
    [ -n "$port" ] && curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
    kill -0 "${pids[-1]}" 2>/dev/null || { echo "run.sh: $name exited:" >&2; cat "$log" >&2; exit 1; }
    sleep 0.2
  done
  [ -n "$port" ] || { echo "run.sh: $name did not come up:" >&2; cat "$log" >&2; exit 1; }
  url="http://127.0.0.1:$port"
  echo "run.sh: $name on $url (plexus serve $model --threads $threads $*)" >&2
}

start cb --max-sequences "${CB_MAX_SEQUENCES:-64}" --max-queue 256
cb_url="$url"
start seq1 --max-sequences 1 --max-queue 256
seq1_url="$url"

node "$here/serve_bench.mjs" --server "seq1=$seq1_url" --server "cb=$cb_url" --baseline seq1 \
  --concurrency "${CONCURRENCY:-1,4,16,64}" --repeats "${REPEATS:-3}" --max-tokens "${MAX_TOKENS:-32}" \
  --json "$out/serve_bench.json"
