#!/usr/bin/env bash
# The same load from `plexus bench` (backend.type openai) against llama.cpp's llama-server and
# plexus serve on the same GGUF file, side by side in one report: a sweep over backend.url and
# the number of clients, so BENCH.json / .csv / .html hold every run with its engine named, and
# `plexus bench compare` puts the two engines' runs in columns. Energy: what this host's monitor
# reads over each load window (NVML on a GPU machine; RAPL where readable; else "unavailable").
# The GGUF: the serve benchmark's small model (plexus make-model --preset small, Mistral
# tokenizer) as Q8_0 (plexus quantize). llama-server: built from node-llama-cpp's llama.cpp
# source by benchmarks/llama_cpp/setup_peer.sh (CPU, about 12 minutes at -j 1, once).
# usage: benchmarks/serve/openai_bench.sh [BUILD_DIR [OUT_DIR]]
#   env: THREADS (2) REQUESTS (16) MAX_TOKENS (32) CONCURRENCY ([1, 4, 16]) MODEL (another HF model dir)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
build="${1:-$repo/build}"
out="${2:-$repo/bench-results/openai}"
plexus="$build/plexus"
threads="${THREADS:-2}"
ctx=256
[ -x "$plexus" ] || { echo "openai_bench.sh: $plexus not found: build plexus first (cmake --build $build --target plexus)" >&2; exit 1; }
command -v curl >/dev/null || { echo "openai_bench.sh: curl is needed" >&2; exit 1; }
mkdir -p "$out"
tokenizer="$repo/tests/data/golden/tokenizers/mistral"
model="${MODEL:-$repo/models/serve-bench-small}"
if [ -z "${MODEL:-}" ] && [ ! -f "$model/config.json" ]; then
  "$plexus" make-model "$model" --preset small --tokenizer "$tokenizer" --force >&2
fi
gguf="$model.q8_0.gguf"
if [ ! -f "$gguf" ] || [ "$model/model.safetensors" -nt "$gguf" ]; then
  "$plexus" quantize "$model" "$gguf" --type q8_0 --force >&2
fi
bin="$(bash "$repo/benchmarks/llama_cpp/setup_peer.sh" llama-server)"

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# wait_up NAME LOG PORT: waits for /health 200 on the port
wait_up() {
  for _ in $(seq 1500); do
    curl -fsS "http://127.0.0.1:$3/health" >/dev/null 2>&1 && return 0
    kill -0 "${pids[-1]}" 2>/dev/null || { echo "openai_bench.sh: $1 exited:" >&2; cat "$2" >&2; exit 1; }
    sleep 0.2
  done
  echo "openai_bench.sh: $1 did not come up:" >&2; cat "$2" >&2; exit 1
}

port_plexus=$(free_port)
"$plexus" serve "$gguf" --host 127.0.0.1 --port "$port_plexus" --threads "$threads" --served-model-name m --context "$ctx" \
  --max-sequences 64 --max-queue 256 2> "$out/plexus-serve.stderr" &
pids+=($!)
wait_up "plexus serve" "$out/plexus-serve.stderr" "$port_plexus"
port_llama=$(free_port)
# PASSIVE: OpenMP threads sleep at barriers (see benchmarks/serve/run.sh). -c: 64 slots × ctx.
OMP_WAIT_POLICY=PASSIVE "$bin/llama-server" -m "$gguf" --host 127.0.0.1 --port "$port_llama" -t "$threads" -tb "$threads" \
  -np 64 -c $((64 * ctx)) --cont-batching --no-webui --alias m 2> "$out/llama-server.stderr" &
pids+=($!)
wait_up llama-server "$out/llama-server.stderr" "$port_llama"

config="$out/openai-side-by-side.yaml"
cat > "$config" <<YAML
name: openai-side-by-side
backend: {type: openai, url: http://127.0.0.1:$port_llama, model: m, endpoint: completions, tokenizer: $tokenizer}
scenario:
  random: {input_tokens: 16, output_tokens: ${MAX_TOKENS:-32}}
  num_samples: ${REQUESTS:-16}
  warmup_samples: 2
  concurrency: 1
  slo: {ttft_ms: 1000, tpot_ms: 100}
monitor: {interval_ms: 100}
output: {dir: $out}
sweep:
  backend.url: [http://127.0.0.1:$port_llama, http://127.0.0.1:$port_plexus]
  scenario.concurrency: ${CONCURRENCY:-[1, 4, 16]}
YAML
"$plexus" bench "$config"
"$plexus" bench compare "$out/openai-side-by-side.json"
