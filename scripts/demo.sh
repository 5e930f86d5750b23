#!/usr/bin/env bash
# `make run`: the tour. `plexus bench configs/demo.yaml` makes the demo model if missing (random
# weights in the shape of a 135M-parameter SmolLM, with a real tokenizer), plans it across 4
# virtual devices, runs 8 requests and writes JSON, CSV and HTML reports; then a short generate.
set -euo pipefail
cd "$(dirname "$0")/.."
PLEXUS=${1:-build/plexus}
MODEL=${PLEXUS_DEMO_MODEL:-models/demo-small-bf16}
TOKENIZER=tests/data/golden/tokenizers/mistral

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

sets=(--set "model=$MODEL")
if [ ! -f "$TOKENIZER/tokenizer.json" ] && [ ! -f "$MODEL/tokenizer.json" ]; then
  # No tokenizer at hand: the model is made without one, so the prompts are token ids.
  sets+=(--set "model_make.tokenizer=" --set "scenario.prompts=null"
         --set "scenario.prompts_ids=[[1,415,5565,302,4843,349],[1,5713,3714,264,727]]")
fi

step "plexus bench configs/demo.yaml   (4 virtual devices, stages plan; random weights: the speed is real, the words are noise)"
"$PLEXUS" bench configs/demo.yaml "${sets[@]}"

if [ -f "$MODEL/tokenizer.json" ]; then
  step "plexus generate $MODEL --prompt 'The capital of France is' --max-tokens 16 --virtual-devices 4"
  "$PLEXUS" generate "$MODEL" --prompt "The capital of France is" --max-tokens 16 --ignore-eos --virtual-devices 4
fi
echo
echo "Report: bench-results/demo.html (JSON and CSV beside it). Compare runs with 'plexus bench compare A.json B.json'."
echo "Next: configs/ for more benchmarks (sweeps, GPUs), 'make bench' for speed against this machine's limits, docs/."
