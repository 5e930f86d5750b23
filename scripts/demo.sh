#!/usr/bin/env bash
# `make run`: the tour. `plexus bench configs/demo.yaml` makes the demo model if missing (random
# weights in the shape of a 135M-parameter SmolLM, with the Mistral tokenizer from
# tests/data/golden), plans it across 4 virtual devices, runs 8 requests and writes JSON, CSV and
# HTML reports; then a short generate.
set -euo pipefail
cd "$(dirname "$0")/.."
PLEXUS=${1:-build/plexus}
MODEL=${PLEXUS_DEMO_MODEL:-models/demo-small-bf16}

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

# A model left by an older `make run` (without a tokenizer, or one this plexus cannot load) is
# made again rather than failing half-way through the tour.
if [ -e "$MODEL" ]; then
  if [ ! -f "$MODEL/tokenizer.json" ] ||
     ! "$PLEXUS" generate "$MODEL" --prompt "Hi" --max-tokens 1 >/dev/null 2>&1; then
    echo "demo: $MODEL is incomplete or from an older plexus: making it again" >&2
    rm -rf "$MODEL"
  fi
fi

step "plexus bench configs/demo.yaml   (4 virtual devices, stages plan; random weights: the speed is real, the words are noise)"
"$PLEXUS" bench configs/demo.yaml --set "model=$MODEL"

step "plexus generate $MODEL --prompt 'The capital of France is' --max-tokens 16 --virtual-devices 4"
"$PLEXUS" generate "$MODEL" --prompt "The capital of France is" --max-tokens 16 --ignore-eos --virtual-devices 4

echo
echo "Report: bench-results/demo.html (JSON and CSV beside it). Compare runs with 'plexus bench compare A.json B.json'."
echo "Next: configs/ for more benchmarks (sweeps, GPUs), 'make bench' for speed against this machine's limits, docs/."
