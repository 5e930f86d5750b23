#!/usr/bin/env bash
# `make run`: the tour. Makes the demo model if missing (random weights in the shape of a
# 135M-parameter SmolLM, with a real tokenizer), then generates and scores text with it.
set -euo pipefail
cd "$(dirname "$0")/.."
PLEXUS=${1:-build/plexus}
MODEL=${PLEXUS_DEMO_MODEL:-models/demo-small-bf16}
TOKENIZER=../shared/golden/tokenizers/mistral

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

if [ ! -f "$MODEL/config.json" ]; then
  step "making the demo model in $MODEL (random weights; no pretrained weights can be downloaded here)"
  if [ -f "$TOKENIZER/tokenizer.json" ]; then
    "$PLEXUS" make-model "$MODEL" --preset small --arch llama --dtype bf16 --seed 1 --tokenizer "$TOKENIZER"
  else
    "$PLEXUS" make-model "$MODEL" --preset small --arch llama --dtype bf16 --seed 1
  fi
fi

if [ -f "$MODEL/tokenizer.json" ]; then
  step "plexus generate $MODEL --prompt 'The capital of France is' --max-tokens 24"
  echo "(random weights: the words are noise, the speed is real)"
  "$PLEXUS" generate "$MODEL" --prompt "The capital of France is" --max-tokens 24 --ignore-eos
  step "plexus generate --json (sampling: temperature 0.8, top-k 40, top-p 0.95, seed 7)"
  "$PLEXUS" generate "$MODEL" --prompt "Once upon a time" --max-tokens 16 --temperature 0.8 --top-k 40 --top-p 0.95 --seed 7 --json
  step "plexus perplexity $MODEL --text ..."
  "$PLEXUS" perplexity "$MODEL" --text "Call me Ishmael. Some years ago, never mind how long precisely, having little or no money in my purse, I thought I would sail about a little and see the watery part of the world."
else
  step "plexus generate $MODEL --ids 1,415,5565,302,4843,349 --max-tokens 24"
  "$PLEXUS" generate "$MODEL" --ids 1,415,5565,302,4843,349 --max-tokens 24 --ignore-eos
  step "plexus perplexity $MODEL --ids ..."
  "$PLEXUS" perplexity "$MODEL" --ids 1,415,5565,302,4843,349,28723,1014,2
fi
echo
echo "Next: 'plexus --help', 'make bench' for speed against this machine's limits, docs/ for the rest."
