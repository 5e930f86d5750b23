#!/usr/bin/env bash
# plexus beside llama.cpp on the CPU, same weights (the plexus checkpoint converted to GGUF by
# hf_to_gguf.py, its agreement checked first by check_agreement.py), interleaved cell by cell:
# prefill 128/512 tokens, decode at depth 128/512, batched decode of 4/8/16 sequences sharing a
# 128-token prompt; bf16 and f32; 1 and 2 threads; quiet and with a competing load (a spinning
# process pinned to the last core, started and always stopped here). llama.cpp runs under
# OMP_WAIT_POLICY=PASSIVE and ACTIVE (quiet) or PASSIVE (busy: spinning at its barriers beside
# the load ran 10-60x slower than PASSIVE in every cell) and its best median counts. The read
# bandwidth and FMA peak are measured in the same run, without the load, for each thread count.
# Results: a table on stdout, bench-results/llama_cpp-TIME.{json,csv} (git-ignored).
# usage: benchmarks/llama_cpp/run.sh [BUILD_DIR] [--quick] [--repeats N]
#   --quick: bf16, 2 threads, quiet and busy, prefill 128 / decode at depth 128 / batch 8. On the
#   shared 2-core VM --quick took 0.5-5 min, the whole run 12-18 min (llama.cpp built once, ~20 min).
# env: PLEXUS_WAIT=spin|passive|auto: plexus's --wait (default auto, as a user gets);
#      LLAMA_POLICIES_QUIET / LLAMA_POLICIES_BUSY: the OMP_WAIT_POLICY values llama.cpp runs under
#      (default "PASSIVE ACTIVE" / "PASSIVE").
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
build=build quick=0 repeats=3
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --repeats) repeats="$2"; shift ;;
    -*) echo "run.sh: unknown option $1 (usage: run.sh [BUILD_DIR] [--quick] [--repeats N])" >&2; exit 2 ;;
    *) build="$1" ;;
  esac
  shift
done
case "$build" in /*) ;; *) build="$repo/$build" ;; esac
py=${PYTHON:-/usr/bin/python3}
"$py" -c 'import numpy' 2>/dev/null || { echo "run.sh: $py lacks numpy (Debian: apt-get install python3-numpy; or set PYTHON)" >&2; exit 1; }

bin="$(bash "$here/setup_peer.sh")"
cmake --build "$build" --target plexus engine_bench >&2
plexus="$build/plexus" engine_bench="$build/benchmarks/engine_bench"
wait_args=(--wait "${PLEXUS_WAIT:-auto}")

if [ "$quick" = 1 ]; then
  dtypes=(bf16) threads_list=(2) prefills=(128) depths=(128) batches=(8)
else
  dtypes=(bf16 f32) threads_list=(1 2) prefills=(128 512) depths=(128 512) batches=(4 8 16)
fi
loads=(quiet busy)
policies_quiet=${LLAMA_POLICIES_QUIET:-PASSIVE ACTIVE} policies_busy=${LLAMA_POLICIES_BUSY:-PASSIVE}
decode_steps=32 batch_steps=16 batch_prompt=128
ncpu=$(nproc)

out="$build/benchmarks/llama_cpp"
raw="$out/raw-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$raw" "$repo/bench-results"
manifest="$raw/manifest.jsonl"
: > "$manifest"

# --- models: the plexus checkpoints, their GGUF conversions, agreement -------------------------
declare -A gguf
pairs=()
for dt in "${dtypes[@]}"; do
  model="$repo/models/small-$dt"
  if [ ! -f "$model/config.json" ]; then
    "$plexus" make-model "$model" --preset small --arch llama --dtype "$dt" --seed 1 >&2
  fi
  gguf[$dt]="$out/small-$dt.gguf"
  if [ ! -f "${gguf[$dt]}" ] || [ "$model/model.safetensors" -nt "${gguf[$dt]}" ] || [ "$here/hf_to_gguf.py" -nt "${gguf[$dt]}" ]; then
    "$py" "$here/hf_to_gguf.py" "$model" "${gguf[$dt]}"
  fi
  pairs+=("$model:${gguf[$dt]}")
done
"$py" "$here/check_agreement.py" --plexus "$plexus" --perplexity "$bin/llama-perplexity" --work "$out/agreement" \
  "${pairs[@]}" | tee "$raw/agreement.txt"

# --- the competing load ------------------------------------------------------------------------
spinner=""
stop_load() { if [ -n "$spinner" ]; then kill "$spinner" 2>/dev/null || true; wait "$spinner" 2>/dev/null || true; spinner=""; fi; }
trap stop_load EXIT
trap 'exit 130' INT TERM
start_load() { taskset -c $((ncpu - 1)) bash -c 'while :; do :; done' & spinner=$!; }

# --- cells ---------------------------------------------------------------------------------------
n=0
record() {  # record FILE key=value...: one manifest line naming the raw output and its cell
  local file="$1"; shift
  "$py" -c 'import json,sys; d=dict(a.split("=",1) for a in sys.argv[2:]); d["file"]=sys.argv[1]; print(json.dumps(d))' "$file" "$@" >> "$manifest"
}
run_plexus() {  # run_plexus TAGS... -- ENGINE_BENCH_ARGS...
  local tags=() f; while [ "$1" != -- ]; do tags+=("$1"); shift; done; shift
  f="$raw/$((n += 1))-plexus.json"
  "$engine_bench" "$model" --threads "$threads" --repeats "$repeats" --json "${wait_args[@]}" "$@" > "$f"
  record "$f" "${tags[@]}" engine=plexus tool=engine_bench
}
run_llama() {  # run_llama TAGS... -- TOOL ARGS...  (once per OpenMP wait policy)
  local tags=() f tool policy; while [ "$1" != -- ]; do tags+=("$1"); shift; done; shift
  tool="$1"; shift
  local want=1 try; [ "$tool" = llama-batched-bench ] && want=$repeats
  local policies; [ "$load" = busy ] && policies=$policies_busy || policies=$policies_quiet
  for policy in $policies; do
    f="$raw/$((n += 1))-llama-$policy.json"
    # llama-batched-bench prints its results through llama.cpp's asynchronous logger, which now
    # and then loses lines at exit: up to 3 tries for all of them.
    for try in 1 2 3; do
      OMP_WAIT_POLICY=$policy "$bin/$tool" -m "${gguf[$dtype]}" -t "$threads" "$@" > "$f" 2> "$f.log"
      [ "$(grep -c '_ts"\|speed_tg' "$f")" -ge "$want" ] && break
    done
    record "$f" "${tags[@]}" engine=llama.cpp tool="$tool" policy="$policy"
  done
}
cell() {  # cell NAME PLEXUS_ARGS -- LLAMA_TOOL ARGS: both sides, plexus first on even cells
  local name="$1"; shift
  local pargs=(); while [ "$1" != -- ]; do pargs+=("$1"); shift; done; shift
  local tags=(dtype="$dtype" load="$load" threads="$threads" cell="$name")
  printf '  %-5s %-6s %dt %-12s\n' "$load" "$dtype" "$threads" "$name" >&2
  if [ $((n % 2)) = 0 ]; then run_plexus "${tags[@]}" -- "${pargs[@]}"; run_llama "${tags[@]}" -- "$@"
  else run_llama "${tags[@]}" -- "$@"; run_plexus "${tags[@]}" -- "${pargs[@]}"; fi
}

for load in "${loads[@]}"; do
  [ "$load" = busy ] && start_load
  for threads in "${threads_list[@]}"; do
    if [ "$load" = quiet ]; then  # what the machine can do, for both loads (under the load a
      model="$repo/models/small-${dtypes[0]}"  # probe thread may share the spinner's core)
      f="$raw/$((n += 1))-ceilings.json"
      "$engine_bench" "$model" --threads "$threads" --repeats "$repeats" --only ceilings --json > "$f"
      record "$f" threads="$threads" engine=ceilings tool=engine_bench
    fi
    for dtype in "${dtypes[@]}"; do
      model="$repo/models/small-$dtype"
      for p in "${prefills[@]}"; do
        cell "pp$p" --only prefill --prompt "$p" -- llama-bench -p "$p" -n 0 -r "$repeats" -o json
      done
      for d in "${depths[@]}"; do
        cell "tg$decode_steps@d$d" --only decode --depth "$d" --decode "$decode_steps" -- \
          llama-bench -p 0 -n "$decode_steps" -d "$d" -r "$repeats" -o json
      done
      for b in "${batches[@]}"; do
        npl=$(printf "$b,%.0s" $(seq "$repeats")); npl=${npl%,}
        cell "batch$b" --only decode --depth "$batch_prompt" --decode "$batch_steps" --batch "$b" -- \
          llama-batched-bench -tb "$threads" -c $((batch_prompt + b * batch_steps + 256)) -npp "$batch_prompt" \
          -ntg "$batch_steps" -npl "$npl" -pps --output-format jsonl
      done
    done
  done
  stop_load
done

stamp=$(date +%Y%m%d-%H%M%S)
"$py" "$here/report.py" "$manifest" --json "$repo/bench-results/llama_cpp-$stamp.json" --csv "$repo/bench-results/llama_cpp-$stamp.csv" \
  --machine "$(lscpu | sed -n 's/^Model name: *//p'), $ncpu CPUs"
