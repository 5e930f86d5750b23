#!/usr/bin/env bash
# `make bench`: every benchmark, each printing its ratio against a ceiling or a peer measured
# in the same run. Usage: scripts/bench.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
PLEXUS=$BUILD/plexus
MODEL=models/small-bf16

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

if [ ! -f "$MODEL/config.json" ]; then
  step "making $MODEL (small preset: 124.6M parameters, bf16)"
  "$PLEXUS" make-model "$MODEL" --preset small --arch llama --dtype bf16 --seed 1
fi

step "engine: decode vs memory bandwidth, prefill vs fp32 FMA peak ($BUILD/benchmarks/engine_bench $MODEL)"
"$BUILD/benchmarks/engine_bench" "$MODEL" --repeats 5

step "exec: tokens/s and busy fractions on 1, 2, 4 virtual devices, resident vs offloaded ($BUILD/benchmarks/exec_bench $MODEL)"
"$BUILD/benchmarks/exec_bench" "$MODEL"

# The README's model (with its tokenizer: configs/demo.yaml's prompts are text).
README_MODEL=models/small
if [ ! -f "$README_MODEL/tokenizer.json" ]; then
  step "making $README_MODEL (the README's: small preset with the Mistral tokenizer)"
  "$PLEXUS" make-model "$README_MODEL" --preset small --arch llama --dtype bf16 --seed 1 --tokenizer tests/data/golden/tokenizers/mistral
fi
step "prediction: the README's plan and bench (calibrated and not), then 1, 2, 4 virtual devices, resident/offloaded, batch 1 and 8 ($BUILD/benchmarks/predict_bench $README_MODEL)"
"$PLEXUS" calibrate
"$BUILD/benchmarks/predict_bench" "$README_MODEL"

step "collectives: in-process all-reduce latency and bandwidth, 2 and 4 ranks, 4 KiB - 64 MiB, beside one thread's memcpy ($BUILD/benchmarks/comm_bench)"
"$BUILD/benchmarks/comm_bench"

# Tensor parallelism needs heads that split: the small preset's 9 heads split 3 ways, Llama 3.2
# 1B's 32 heads (8 kv heads) 2 and 4 ways.
TP_MODEL=models/llama-3.2-1b-bf16
if [ ! -f "$TP_MODEL/config.json" ]; then
  step "making $TP_MODEL (llama-3.2-1b preset: 1.24B parameters, bf16, 2.5 GB)"
  "$PLEXUS" make-model "$TP_MODEL" --preset llama-3.2-1b --dtype bf16 --seed 1
fi
step "tensor parallelism: decode tokens/s for TP 1, 2, 4 on virtual devices and each token's communication (benchmarks/comm/tp_tokens.py)"
python3 benchmarks/comm/tp_tokens.py "$PLEXUS" "$TP_MODEL" --tp 1,2,4 --tokens 16 --repeats 5
python3 benchmarks/comm/tp_tokens.py "$PLEXUS" "$MODEL" --tp 1,3 --tokens 32 --repeats 5

step "tokenizer: MB/s encoding 1 MiB of English, one thread, beside Hugging Face tokenizers (benchmarks/tokenizer/run.sh)"
bash benchmarks/tokenizer/run.sh "$BUILD"

if [ -x "$BUILD/benchmarks/planner/bench_planner" ]; then
  step "planner: time to plan a 126-layer model ($BUILD/benchmarks/planner/bench_planner)"
  "$BUILD/benchmarks/planner/bench_planner"
fi

# The llama.cpp peer is built once from the npm package node-llama-cpp (setup_peer.sh, ~20 min);
# where it cannot be (no npm, no network), its benchmarks are skipped with the reason.
if bash benchmarks/llama_cpp/setup_peer.sh > /dev/null; then
  step "llama.cpp side by side: prefill, decode at depth, batched decode; bf16/f32, 1/2 threads, quiet/busy (benchmarks/llama_cpp/run.sh)"
  bash benchmarks/llama_cpp/run.sh "$BUILD"

  step "llama.cpp side by side on quantised GGUF files: Q8_0, Q4_K_M, Q5_K_M, Q3_K_M, IQ4_XS, decode and prefill, read bandwidth, peak memory (benchmarks/llama_cpp/run_quant.sh)"
  bash benchmarks/llama_cpp/run_quant.sh "$BUILD"

  step "OpenAI-compatible servers side by side: plexus bench's openai backend against llama-server and plexus serve on one GGUF (benchmarks/serve/openai_bench.sh)"
  bash benchmarks/serve/openai_bench.sh "$BUILD"
else
  step "llama.cpp side by side: skipped, the llama.cpp peer could not be built (benchmarks/llama_cpp/setup_peer.sh, its reason above)"
fi
