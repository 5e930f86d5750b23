#!/usr/bin/env bash
# Tokenizer throughput: MB/s encoding a 1 MiB English text on one thread, plexus beside Hugging
# Face's Rust tokenizers (npm `tokenizers`), for each golden tokenizer.
# usage: benchmarks/tokenizer/run.sh [BUILD_DIR] [--runs N]   (BUILD_DIR defaults to build)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
build="${1:-build}"
shift || true
runs=5
if [ "${1:-}" = "--runs" ]; then runs="$2"; fi
case "$build" in /*) ;; *) build="$repo/$build" ;; esac

cmake --build "$build" --target plexus_bench_tokenizer >&2
golden="$build/golden/tokenizers"  # tests/data/golden as the build tree holds it (tokenizer.json decompressed)
out="$build/benchmarks/tokenizer"
mkdir -p "$out"
text="$out/english_1mib.txt"
python3 "$here/make_text.py" "$golden" "$text"

specs=()
for name in qwen3 llama3 mistral; do specs+=("$name=$golden/$name"); done

"$out/plexus_bench_tokenizer" "$text" "${specs[@]}" --runs "$runs" > "$out/plexus.jsonl"
: > "$out/hf.jsonl"
if bash "$here/setup_peer.sh" >&2; then
  # One thread for the peer too: rayon (HF's thread pool) and the tokenizers parallelism switch.
  RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false node "$here/hf_bench.js" "$text" "${specs[@]}" --runs "$runs" \
    > "$out/hf.jsonl"
else
  echo "benchmarks/tokenizer: HF tokenizers peer unavailable (needs node and npm); plexus numbers only" >&2
fi
python3 "$here/report.py" "$out/plexus.jsonl" "$out/hf.jsonl"
