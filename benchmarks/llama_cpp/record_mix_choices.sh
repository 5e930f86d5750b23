#!/usr/bin/env bash
# Records llama-quantize's per-tensor type choices for plexus's named mixes (issue 40), by hand,
# never by the tests: three checkpoints (mkmodel.py's gguf-small: rows of 256 multiples, 2 layers;
# `plexus make-model --preset small`: SmolLM-135M's shape, rows of 576, 30 layers, 3 query heads
# per KV head, tied embeddings; `--preset tiny`: 4 layers, rows of 64 and 176), converted with
# hf_to_gguf.py, quantised by llama-quantize to every mix; each file's tensor types go to
# tests/data/gguf/mix_choices.jsonl (tests/model/quant_mix_test.cpp checks plexus's rules against
# them). From gguf-small's Q4_1, Q5_0, Q5_1, IQ4_NL and IQ4_XS files three tensors each go to
# tests/data/gguf/gs-llama-blk-golden.gguf (the byte-identity goldens of quant_golden_test.cpp).
# usage: benchmarks/llama_cpp/record_mix_choices.sh [BUILD_DIR]
# env: LLAMA_BIN: a directory holding llama-quantize (default: setup_peer.sh builds the peer).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
build="${1:-build}"
case "$build" in /*) ;; *) build="$repo/$build" ;; esac
py=${PYTHON:-/usr/bin/python3}
"$py" -c 'import numpy' 2>/dev/null || { echo "record_mix_choices.sh: $py lacks numpy" >&2; exit 1; }
bin="${LLAMA_BIN:-$(bash "$here/setup_peer.sh" llama-quantize)}"
[ -x "$bin/llama-quantize" ] || { echo "record_mix_choices.sh: no llama-quantize in $bin" >&2; exit 1; }
plexus="$build/plexus"
[ -x "$plexus" ] || cmake --build "$build" --target plexus >&2
mixes=(Q8_0 Q6_K Q5_K_M Q5_K_S Q5_1 Q5_0 Q4_K_M Q4_K_S Q4_1 Q4_0 IQ4_XS IQ4_NL Q3_K_M Q2_K)
work="$build/benchmarks/llama_cpp/mixes"
mkdir -p "$work"
out="$repo/tests/data/gguf/mix_choices.jsonl"
tmp="$out.tmp"
: > "$tmp"

make_case() {  # CASE: the checkpoint in $work/CASE
  local dir="$work/$1"
  [ -f "$dir/config.json" ] && return
  case "$1" in
    gguf-small) "$py" "$repo/tests/tools/mkmodel.py" "$dir" --preset gguf-small --arch llama --dtype f32 --seed 201 --std 0.05 ;;
    smollm) "$plexus" make-model "$dir" --preset small --dtype bf16 --seed 1 ;;
    tiny) "$plexus" make-model "$dir" --preset tiny --dtype bf16 --seed 1 ;;
  esac >&2
}

for c in gguf-small tiny smollm; do
  make_case "$c"
  src="$work/$c.gguf"
  [ -f "$src" ] || "$py" "$here/hf_to_gguf.py" "$work/$c" "$src" >&2
  for m in "${mixes[@]}"; do
    f="$work/$c-$m.gguf"
    if [ ! -f "$f" ]; then
      echo "record_mix_choices.sh: $c $m" >&2
      "$bin/llama-quantize" "$src" "$f.part" "$m" 2 > "$work/$c-$m.log" 2>&1 ||
        { echo "record_mix_choices.sh: llama-quantize $c $m failed, see $work/$c-$m.log" >&2; exit 1; }
      mv "$f.part" "$f"
    fi
    "$py" "$here/mix_choices.py" record "$c" "$work/$c" "$m" "$f" >> "$tmp"
  done
done
mv "$tmp" "$out"
pairs=()
for t in Q4_1 Q5_0 Q5_1 IQ4_NL IQ4_XS; do pairs+=("$t=$work/gguf-small-$t.gguf"); done
"$py" "$here/mix_choices.py" extract "$repo/tests/data/gguf/gs-llama-blk-golden.gguf" "${pairs[@]}" \
  --tensors blk.0.attn_q.weight,blk.0.attn_v.weight,blk.1.ffn_down.weight

# llama.cpp loads and runs what plexus writes: every mix of a tiny checkpoint with a tokenizer
# (rows of 64 and 176: fallbacks and F16 included) through llama-perplexity.
tok_model="$work/tiny-tok"
[ -f "$tok_model/config.json" ] ||
  "$plexus" make-model "$tok_model" --preset tiny --dtype bf16 --seed 1 --tokenizer "$repo/tests/data/golden/tokenizers/mistral" >&2
"$py" -c "print('The quick brown fox jumps over the lazy dog. ' * 60)" > "$work/text.txt"
for m in "${mixes[@]}"; do
  f="$work/plexus-tiny-$m.gguf"
  "$plexus" quantize "$tok_model" "$f" --type "$m" --force > /dev/null
  "$bin/llama-perplexity" -m "$f" -f "$work/text.txt" -c 64 --chunks 1 -t 2 > "$work/plexus-tiny-$m.log" 2>&1 ||
    { echo "record_mix_choices.sh: llama.cpp cannot run plexus's $m file, see $work/plexus-tiny-$m.log" >&2; exit 1; }
  echo "llama.cpp runs plexus's $m: $(grep -o 'PPL = [0-9.]*' "$work/plexus-tiny-$m.log")" >&2
done
echo "wrote $out ($(wc -l < "$out") lines) and tests/data/gguf/gs-llama-blk-golden.gguf" >&2
