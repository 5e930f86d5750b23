#!/usr/bin/env bash
# plexus beside llama.cpp on quantised weights (issue 17): the same GGUF file for both engines,
# made the llama.cpp way (plexus make-model -> hf_to_gguf.py bf16 GGUF -> llama-quantize Q8_0 /
# Q4_K_M). Decode (32 tokens from an empty context) and prefill (128 / 512 tokens) tokens/s on 1
# and 2 threads, the read bandwidth measured in the same run, and each process's peak resident
# memory against the file's size. Every repetition is its own process (one engine_bench repeat /
# one llama-bench repetition, each after its own warm-up), interleaved round by round with the
# order alternating, so a busy spell on the shared machine hits both engines; medians reported.
# When `plexus quantize` exists, plexus also runs its own Q8_0 / Q4_K files (extra rows).
# Results: a table on stdout, bench-results/llama_cpp_quant-TIME.{json,csv} (git-ignored).
# usage: benchmarks/llama_cpp/run_quant.sh [BUILD_DIR] [--quick] [--repeats N] [--preset P] [--qtypes 'T ...']
#   --preset: the make-model preset (default llama-3.2-1b: 1.24B parameters, Q8_0 1.3 GB, Q4_K_M
#   0.8 GB, far beyond the L3 cache; `small` for a quick look). --arch: make-model's architecture
#   (default llama; mixtral or qwen3-moe for a mixture of experts, docs/moe.md). --quick: 2 threads, decode and
#   prefill 128 only. --repeats N: rounds (default 3). --threads 'N ...': thread counts (default
#   '1 2'); --prefill 'N ...': prompt lengths (default '128 512'; '' for decode only); --decode N:
#   decoded tokens per repetition (default 32); --qtypes: llama-quantize's type names (default
#   'Q8_0 Q4_K_M Q5_K_M Q3_K_M IQ4_XS'; plexus quantize takes the same names).
# env: PLEXUS_WAIT (plexus's --wait, default auto); LLAMA_POLICIES: the OMP_WAIT_POLICY values
#      llama.cpp runs under, the better median counts (default PASSIVE: on a shared machine
#      ACTIVE spins at its barriers and ran 10-60x slower beside other work).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
build=build quick=0 repeats=3 preset=llama-3.2-1b arch=llama threads_opt="" prefills_opt="-" decode_steps=32
qtypes_opt="Q8_0 Q4_K_M Q5_K_M Q3_K_M IQ4_XS"
usage="usage: run_quant.sh [BUILD_DIR] [--quick] [--repeats N] [--preset P] [--arch A] [--threads 'N ...'] [--prefill 'N ...'] [--decode N] [--qtypes 'T ...']"
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --repeats) repeats="$2"; shift ;;
    --preset) preset="$2"; shift ;;
    --arch) arch="$2"; shift ;;
    --threads) threads_opt="$2"; shift ;;
    --prefill) prefills_opt="$2"; shift ;;
    --decode) decode_steps="$2"; shift ;;
    --qtypes) qtypes_opt="$2"; shift ;;
    -*) echo "run_quant.sh: unknown option $1 ($usage)" >&2; exit 2 ;;
    *) build="$1" ;;
  esac
  shift
done
case "$build" in /*) ;; *) build="$repo/$build" ;; esac
py=${PYTHON:-/usr/bin/python3}
"$py" -c 'import numpy' 2>/dev/null || { echo "run_quant.sh: $py lacks numpy (Debian: apt-get install python3-numpy; or set PYTHON)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "run_quant.sh: /usr/bin/time is needed for peak memory (Debian: apt-get install time)" >&2; exit 1; }

bin="$(bash "$here/setup_peer.sh")"
cmake --build "$build" --target plexus engine_bench >&2
plexus="$build/plexus" engine_bench="$build/benchmarks/engine_bench"
wait_args=(--wait "${PLEXUS_WAIT:-auto}")
policies=${LLAMA_POLICIES:-PASSIVE}

if [ "$quick" = 1 ]; then
  threads_list=(2) prefills=(128)
else
  threads_list=(1 2) prefills=(128 512)
fi
[ -n "$threads_opt" ] && read -ra threads_list <<< "$threads_opt"
[ "$prefills_opt" != - ] && read -ra prefills <<< "$prefills_opt"
read -ra qtypes <<< "$qtypes_opt"

out="$build/benchmarks/llama_cpp/quant"
raw="$out/raw-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$raw" "$repo/bench-results"
manifest="$raw/manifest.jsonl"
: > "$manifest"

# --- the files: checkpoint -> bf16 GGUF -> llama-quantize; plexus quantize when it exists -------
tag=$preset$([ "$arch" = llama ] || echo "-$arch")
model="$repo/models/$tag-bf16"
if [ ! -f "$model/config.json" ]; then
  "$plexus" make-model "$model" --preset "$preset" --arch "$arch" --dtype bf16 --seed 1 >&2
fi
ceiling_model="$out/tiny-bf16"
[ -f "$ceiling_model/config.json" ] || "$plexus" make-model "$ceiling_model" --preset tiny --dtype bf16 --seed 1 >&2
src_gguf="$out/$tag-bf16.gguf"
if [ ! -f "$src_gguf" ] || [ "$model/model.safetensors" -nt "$src_gguf" ] || [ "$here/hf_to_gguf.py" -nt "$src_gguf" ]; then
  "$py" "$here/hf_to_gguf.py" "$model" "$src_gguf" >&2
fi
declare -A file own
for q in "${qtypes[@]}"; do
  file[$q]="$out/$tag-${q,,}.gguf"
  if [ ! -f "${file[$q]}" ] || [ "$src_gguf" -nt "${file[$q]}" ]; then
    echo "run_quant.sh: llama-quantize $q" >&2
    "$bin/llama-quantize" "$src_gguf" "${file[$q]}" "$q" "$(nproc)" > "$raw/quantize-$q.log" 2>&1 ||
      { tail -20 "$raw/quantize-$q.log" >&2; exit 1; }
  fi
done
if "$plexus" quantize --help > /dev/null 2>&1; then
  for q in "${qtypes[@]}"; do
    t=${q,,}  # the same named mix as llama-quantize's file (plexus quantize takes its names)
    own[$q]="$out/$tag-plexus-$t.gguf"
    if [ ! -f "${own[$q]}" ] || [ "$model/model.safetensors" -nt "${own[$q]}" ]; then
      echo "run_quant.sh: plexus quantize --type $t" >&2
      "$plexus" quantize "$model" "${own[$q]}" --type "$t" --force > "$raw/plexus-quantize-$t.log" 2>&1 ||
        { echo "run_quant.sh: plexus quantize --type $t failed (its own-file rows left out):" >&2; tail -5 "$raw/plexus-quantize-$t.log" >&2; unset "own[$q]"; continue; }
    fi
  done
else
  echo "run_quant.sh: this plexus has no 'quantize' command: plexus runs llama.cpp's files only" >&2
fi

# plexus must load the file, or its cells are left out (with the reason) and llama.cpp runs alone.
plexus_ok=1
if ! "$engine_bench" "${file[${qtypes[0]}]}" --only decode --depth 0 --decode 1 --repeats 1 --warmup 0 --prompt 1 --json \
     > "$raw/plexus-probe.json" 2> "$raw/plexus-probe.log"; then
  plexus_ok=0
  echo "run_quant.sh: plexus cannot run ${file[${qtypes[0]}]} (plexus cells left out):" >&2
  tail -3 "$raw/plexus-probe.log" >&2
fi

# --- runs --------------------------------------------------------------------------------------
n=0
record() {  # record FILE key=value...: one manifest line naming the raw output and its cell
  local f="$1"; shift
  "$py" -c 'import json,sys; d=dict(a.split("=",1) for a in sys.argv[2:]); d["file"]=sys.argv[1]; print(json.dumps(d))' "$f" "$@" >> "$manifest"
}
timed() {  # timed OUT CMD...: CMD's stdout to OUT, /usr/bin/time -v (peak RSS) to OUT.time
  /usr/bin/time -v -o "$1.time" "${@:2}" > "$1" 2> "$1.log"
}
run_plexus() {  # run_plexus GGUF SOURCE TAGS... -- ENGINE_BENCH_ARGS...
  local gguf="$1" source="$2"; shift 2
  local tags=() f; while [ "$1" != -- ]; do tags+=("$1"); shift; done; shift
  f="$raw/$((n += 1))-plexus.json"
  timed "$f" "$engine_bench" "$gguf" --threads "$threads" --repeats 1 --warmup 1 --json "${wait_args[@]}" "$@" ||
    { echo "  plexus failed: $(tail -1 "$f.log")" >&2; return 0; }
  record "$f" "${tags[@]}" engine=plexus source="$source" gguf="$gguf"
}
run_llama() {  # run_llama TAGS... -- LLAMA_BENCH_ARGS...  (once per OpenMP wait policy)
  local tags=() f policy; while [ "$1" != -- ]; do tags+=("$1"); shift; done; shift
  for policy in $policies; do
    f="$raw/$((n += 1))-llama-$policy.json"
    timed "$f" env OMP_WAIT_POLICY="$policy" "$bin/llama-bench" -m "${file[$q]}" -t "$threads" -r 1 -o json "$@" ||
      { echo "  llama-bench failed: $(tail -1 "$f.log")" >&2; continue; }
    record "$f" "${tags[@]}" engine=llama.cpp policy="$policy" source=llama.cpp gguf="${file[$q]}"
  done
}
cell() {  # cell NAME PLEXUS_ARGS -- LLAMA_BENCH_ARGS: both engines, the order alternating
  local name="$1"; shift
  local pargs=(); while [ "$1" != -- ]; do pargs+=("$1"); shift; done; shift
  local tags=(qtype="$q" threads="$threads" cell="$name" round="$round")
  printf '  round %d  %-7s %dt %-6s\n' "$round" "$q" "$threads" "$name" >&2
  if [ $((n % 2)) = 0 ]; then
    [ "$plexus_ok" = 1 ] && run_plexus "${file[$q]}" llama.cpp "${tags[@]}" -- "${pargs[@]}"
    run_llama "${tags[@]}" -- "$@"
  else
    run_llama "${tags[@]}" -- "$@"
    [ "$plexus_ok" = 1 ] && run_plexus "${file[$q]}" llama.cpp "${tags[@]}" -- "${pargs[@]}"
  fi
  if [ "$plexus_ok" = 1 ] && [ -n "${own[$q]:-}" ]; then run_plexus "${own[$q]}" plexus "${tags[@]}" -- "${pargs[@]}"; fi
  return 0
}

for round in $(seq "$repeats"); do
  for threads in "${threads_list[@]}"; do
    # The read-bandwidth ceiling, once per round and thread count (engine_bench's best of its
    # read strategies; it loads a tiny model only to start).
    f="$raw/$((n += 1))-ceilings.json"
    "$engine_bench" "$ceiling_model" --threads "$threads" --repeats 3 --only ceilings --json > "$f"
    record "$f" threads="$threads" round="$round" engine=ceilings
    for q in "${qtypes[@]}"; do
      cell "tg$decode_steps" --only decode --depth 0 --decode "$decode_steps" --prompt 1 -- -p 0 -n "$decode_steps"
      for p in "${prefills[@]+"${prefills[@]}"}"; do
        cell "pp$p" --only prefill --prompt "$p" -- -p "$p" -n 0
      done
    done
  done
done

stamp=$(date +%Y%m%d-%H%M%S)
args=()
for q in "${qtypes[@]}"; do args+=(--file "$q=${file[$q]}"); [ -n "${own[$q]:-}" ] && args+=(--file "plexus:$q=${own[$q]}"); done
"$py" "$here/report_quant.py" "$manifest" "${args[@]}" --json "$repo/bench-results/llama_cpp_quant-$stamp.json" \
  --csv "$repo/bench-results/llama_cpp_quant-$stamp.csv" --machine "$(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
