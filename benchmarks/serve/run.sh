#!/usr/bin/env bash
# plexus serve's continuous batching against one sequence at a time, and against llama.cpp's
# llama-server. Part 1: `plexus serve` twice on the same model and threads — --max-sequences 64
# ("cb") and --max-sequences 1 ("seq1") — measured by serve_bench.mjs (interleaved, median of
# repeats): aggregate generated tokens/s at 1, 4, 16 and 64 clients and the ratio cb/seq1.
# Part 2 (--llama): the same model as one Q8_0 GGUF file (plexus quantize, with its tokenizer),
# served by plexus (64 sequences) and by llama-server (64 slots, continuous batching; built from
# node-llama-cpp's llama.cpp source by benchmarks/llama_cpp/setup_peer.sh), same threads.
# The model: `make-model --preset small` (SmolLM-135M's shape: 30 layers, hidden 576, bf16) with the
# Mistral tokenizer (32000 tokens, so the lm_head is not most of the work, as Llama 3's 128k would
# make it), made once into models/serve-bench-small. Every request: a distinct ~16-token prompt,
# greedy, max_tokens MAX_TOKENS with ignore_eos; context 256 per sequence.
# Writes OUT/serve_bench.json (and OUT/serve_bench_llama.json).
# usage: benchmarks/serve/run.sh [--llama] [BUILD_DIR [OUT_DIR]]
#   env: THREADS (2) REPEATS (3) MAX_TOKENS (32) CONCURRENCY (1,4,16,64) MODEL (another HF model dir)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
llama=0
pos=()
for a in "$@"; do
  case "$a" in
    --llama) llama=1 ;;
    -*) echo "run.sh: unknown option $a (usage: run.sh [--llama] [BUILD_DIR [OUT_DIR]])" >&2; exit 2 ;;
    *) pos+=("$a") ;;
  esac
done
build="${pos[0]:-$repo/build}"
out="${pos[1]:-$repo/bench-results/serve}"
plexus="$build/plexus"
threads="${THREADS:-2}"
ctx=256
bench_args=(--concurrency "${CONCURRENCY:-1,4,16,64}" --repeats "${REPEATS:-3}" --max-tokens "${MAX_TOKENS:-32}" --model m)
[ -x "$plexus" ] || { echo "run.sh: $plexus not found: build plexus first (cmake --build $build --target plexus)" >&2; exit 1; }
command -v node >/dev/null || { echo "run.sh: node (20+) is needed" >&2; exit 1; }
command -v curl >/dev/null || { echo "run.sh: curl is needed" >&2; exit 1; }
mkdir -p "$out"

model="${MODEL:-$repo/models/serve-bench-small}"
if [ -z "${MODEL:-}" ] && [ ! -f "$model/config.json" ]; then
  "$plexus" make-model "$model" --preset small --tokenizer "$repo/tests/data/golden/tokenizers/mistral" --force >&2
fi

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

# wait_up NAME LOG PORT|SED_EXPR: waits for the port (or the port SED_EXPR finds in LOG) and /health 200; sets $url
wait_up() {
  local name="$1" log="$2" sed_expr="$3" port=""
  [[ "$sed_expr" =~ ^[0-9]+$ ]] && port="$sed_expr"
  for _ in $(seq 1500); do
    [ -n "$port" ] || port=$(sed -n "$sed_expr" "$log" | head -1)
    [ -n "$port" ] && curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
    kill -0 "${pids[-1]}" 2>/dev/null || { echo "run.sh: $name exited:" >&2; cat "$log" >&2; exit 1; }
    sleep 0.2
  done
  curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1 || { echo "run.sh: $name did not come up:" >&2; cat "$log" >&2; exit 1; }
  url="http://127.0.0.1:$port"
}

# start_plexus NAME MODEL ARGS...: plexus serve on a free port (--port 0); sets $url
start_plexus() {
  local name="$1" m="$2"; shift 2
  local log="$out/$name.stderr"
  "$plexus" serve "$m" --host 127.0.0.1 --port 0 --threads "$threads" --served-model-name m --context "$ctx" "$@" 2> "$log" &
  pids+=($!)
  wait_up "$name" "$log" 's/.*listening on http:\/\/[^ :]*:\([0-9][0-9]*\).*/\1/p'
  echo "run.sh: $name on $url: plexus serve $m --threads $threads --context $ctx $*" >&2
}

start_plexus cb "$model" --max-sequences 64 --max-queue 256
cb_url="$url"
start_plexus seq1 "$model" --max-sequences 1 --max-queue 256
seq1_url="$url"
node "$here/serve_bench.mjs" --server "seq1=$seq1_url" --server "cb=$cb_url" --baseline seq1 "${bench_args[@]}" \
  --json "$out/serve_bench.json"
cleanup
pids=()
[ "$llama" = 1 ] || exit 0

bin="$(bash "$repo/benchmarks/llama_cpp/setup_peer.sh" llama-server)"
gguf="$model.q8_0.gguf"
if [ ! -f "$gguf" ] || [ "$model/model.safetensors" -nt "$gguf" ]; then
  "$plexus" quantize "$model" "$gguf" --type q8_0 --force >&2
fi
start_plexus plexus-gguf "$gguf" --max-sequences 64 --max-queue 256
plexus_url="$url"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
log="$out/llama-server.stderr"
# PASSIVE: OpenMP threads sleep at barriers (spinning on this shared 2-core machine was 10-60x
# slower in benchmarks/llama_cpp). -c is all slots' context together: 64 slots × 256.
OMP_WAIT_POLICY=PASSIVE "$bin/llama-server" -m "$gguf" --host 127.0.0.1 --port "$port" -t "$threads" -tb "$threads" \
  -np 64 -c $((64 * ctx)) --cont-batching --no-webui 2> "$log" &
pids+=($!)
wait_up llama-server "$log" "$port"
echo "run.sh: llama-server on $url: $bin/llama-server -m $gguf -t $threads -np 64 -c $((64 * ctx))" >&2
node "$here/serve_bench.mjs" --server "llama-server=$url" --server "plexus=$plexus_url" --baseline llama-server "${bench_args[@]}" \
  --json "$out/serve_bench_llama.json"
