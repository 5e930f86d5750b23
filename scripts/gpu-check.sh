#!/usr/bin/env bash
# Issue 16's GPU check, on a machine with an NVIDIA GPU, in one go (about 5 minutes on an H100,
# never more than --budget seconds): the GPU tests, then gpu_bench and Hugging Face transformers
# on random-weight Llama-3.2-1B and Llama-3.1-8B checkpoints, then ONE table (metric, plexus,
# peer/ceiling, ratio, target, result). Every step has a timeout and its own log; a failed step
# is reported and the rest still run.
#
#   scripts/gpu-check.sh [--prebuilt DIR] [--results DIR] [--models DIR] [--budget S]
#                        [--skip-8b] [--skip-hf] [--skip-tests] [--dry-run]
#
#   --prebuilt DIR  binaries from scripts/pack-gpu.sh (DIR/plexus-gpu.tar.xz) instead of building
#                   here with -DCMAKE_CUDA_ARCHITECTURES=native
#   --results DIR   logs, JSON and the table (default: results/gpu-check-DATE). When $OUT is set
#                   (the device tool), $OUT gets table.txt, summary.json and gpu-check-results.tar.gz
#                   (everything), refreshed after every step so a cut-off run still brings its logs
#   --models DIR    where the checkpoints go (default: /dev/shm when it has 24 GB free, else /tmp)
#   --budget S      seconds for the whole run (default 460); later steps shrink or are skipped
#   --dry-run       print the steps and their time limits, run nothing
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
PREBUILT= RESULTS= MODELS= BUDGET=460 DRY=0 SKIP_8B=0 SKIP_HF=0 SKIP_TESTS=0
while [ $# -gt 0 ]; do
  case "$1" in
    --prebuilt) PREBUILT=$2; shift 2 ;;
    --results) RESULTS=$2; shift 2 ;;
    --models) MODELS=$2; shift 2 ;;
    --budget) BUDGET=$2; shift 2 ;;
    --skip-8b) SKIP_8B=1; shift ;;
    --skip-hf) SKIP_HF=1; shift ;;
    --skip-tests) SKIP_TESTS=1; shift ;;
    --dry-run) DRY=1; shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "gpu-check.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [ -z "$RESULTS" ]; then
  if [ -n "${OUT:-}" ]; then RESULTS=/tmp/gpu-check-$(date -u +%Y%m%d-%H%M%S); else RESULTS=results/gpu-check-$(date -u +%Y%m%d-%H%M%S); fi
fi
ORIG_LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}
mkdir -p "$RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)
START=$(date +%s)
# The prompt both plexus and transformers get: 16 ids, as gpu_bench makes by default.
IDS=128000,7932,15851,23770,31689,39608,47527,55446,63365,71284,79203,87122,95041,2960,10879,18798
NEW=128
printf 'step\tseconds\tstatus\n' >"$RESULTS/steps.tsv"

# The device tool brings back at most 8 files from $OUT: the table, the summary and one archive.
publish() {
  [ -n "${OUT:-}" ] && [ "$DRY" = 0 ] || return 0
  mkdir -p "$OUT"
  for f in table.txt summary.json; do [ -f "$RESULTS/$f" ] && cp "$RESULTS/$f" "$OUT/"; done
  tar -C "$RESULTS" -czf "$OUT/gpu-check-results.tar.gz" . 2>/dev/null
  return 0
}

# step NAME LIMIT CMD...: runs CMD with its output in NAME.log (tail shown), under
# min(LIMIT, what is left of the budget); skipped when under 10 s are left.
step() {
  local name=$1 limit=$2; shift 2
  local left=$((START + BUDGET - $(date +%s) - 5))
  [ "$limit" -gt "$left" ] && limit=$left
  printf '\n== %s (limit %ss, %ss elapsed)\n' "$name" "$limit" "$(($(date +%s) - START))"
  if [ "$DRY" = 1 ]; then printf '   %q' "$@"; echo; return 0; fi
  if [ "$limit" -lt 10 ]; then
    echo "   skipped: out of time"; printf '%s\t0\tskipped (out of time)\n' "$name" >>"$RESULTS/steps.tsv"; return 1
  fi
  local t0=$(date +%s) rc
  timeout -k 10 "$limit" "$@" >"$RESULTS/$name.log" 2>&1
  rc=$?
  local dt=$(($(date +%s) - t0)) status=ok
  [ $rc = 124 ] || [ $rc = 137 ] && status="timed out after ${limit}s"
  [ $rc != 0 ] && [ "$status" = ok ] && status="failed (exit $rc)"
  tail -n 25 "$RESULTS/$name.log" | sed 's/^/   /'
  printf '   -> %s in %ss\n' "$status" "$dt"
  printf '%s\t%s\t%s\n' "$name" "$dt" "$status" >>"$RESULTS/steps.tsv"
  publish
  return $rc
}

# Directories holding cuBLAS 13 (and the CUDA runtime), wherever this machine keeps them: the
# toolkit, the Python wheels (nvidia-cublas: nvidia/cu13/lib or nvidia/cublas/lib), ldconfig.
cuda_lib_dirs() {
  {
    for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib; do
      ls "$d"/libcublas.so.* "$d"/libnccl.so.* >/dev/null 2>&1 && echo "$d"
    done
    python3 - <<'EOF' 2>/dev/null
import glob, os, site, sys
roots = set(site.getsitepackages() + [site.getusersitepackages()] + [p for p in sys.path if p.endswith("-packages")])
try:
    import nvidia
    roots.update(os.path.dirname(p) for p in nvidia.__path__)
except Exception:
    pass
for r in roots:
    for lib in ("libcublas*.so.*", "libnccl*.so.*", "libcudart.so.*"):
        for f in glob.glob(os.path.join(r, "nvidia", "**", lib), recursive=True):
            print(os.path.dirname(f))
EOF
    ldconfig -p 2>/dev/null | awk '/libcublas\.so|libnccl\.so/ {print $NF}' | xargs -r -n1 dirname
  } | awk '!seen[$0]++' | paste -sd: -
}

if [ "$DRY" = 1 ]; then echo "dry run: results would go to $RESULTS"; fi

# --- the binaries -------------------------------------------------------------------------
if [ -n "$PREBUILT" ]; then
  PACK=/tmp/plexus-gpu
  if [ "$DRY" = 0 ]; then
    rm -rf "$PACK" && mkdir -p "$PACK" && tar -C "$PACK" -xJf "$PREBUILT/plexus-gpu.tar.xz" || { echo "cannot unpack $PREBUILT/plexus-gpu.tar.xz" >&2; exit 1; }
    # The test binaries have the packing machine's build and source paths compiled in (the plexus
    # binary, the golden data): put what they look for there when those paths are free.
    src=$(sed -n 's/^source_dir=//p' "$PACK/manifest.txt") bld=$(sed -n 's/^build_dir=//p' "$PACK/manifest.txt")
    if [ -n "$src" ] && [ ! -e "$src" ]; then mkdir -p "$(dirname "$src")" && ln -s "$ROOT" "$src"; fi
    if [ -n "$bld" ]; then
      mkdir -p "$bld" 2>/dev/null
      [ -e "$bld/plexus" ] || ln -s "$PACK/bin/plexus" "$bld/plexus"
      [ -e "$bld/golden" ] || ln -s "$PACK/golden" "$bld/golden"
    fi
  fi
  BIN=$PACK/bin
  GB=$PACK/bin/gpu_bench
  export LD_LIBRARY_PATH="$PACK/lib:$(cuda_lib_dirs)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
else
  BUILD=build-gpu
  step build 300 bash -c "cmake -S . -B $BUILD -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native &&
    ninja -C $BUILD plexus gpu_bench \$(python3 scripts/gpu_test_targets.py tests)" || echo "build failed: see $RESULTS/build.log"
  BIN=$BUILD
  GB=$BUILD/benchmarks/gpu_bench
  export LD_LIBRARY_PATH="$(cuda_lib_dirs)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
PLEXUS=$BIN/plexus
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"

# --- the machine --------------------------------------------------------------------------
step env 30 bash -c "nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv;
  nvidia-smi | head -15; ldd $PLEXUS $GB | grep -E 'not found|cublas' || true; $PLEXUS detect || true;
  free -g; df -h /dev/shm /tmp; LD_LIBRARY_PATH=\"$ORIG_LD_LIBRARY_PATH\" python3 -c 'import torch, transformers; print(torch.__version__, transformers.__version__)' || true"
if [ "$DRY" = 0 ]; then
  python3 - "$RESULTS" "$PREBUILT" <<'EOF'
import json, subprocess, sys, datetime
def q(f):
    try:
        return subprocess.run(["nvidia-smi", f"--query-gpu={f}", "--format=csv,noheader"], capture_output=True, text=True, timeout=20).stdout.strip().splitlines()[0]
    except Exception:
        return "?"
commit = "?"
if sys.argv[2]:
    try:
        commit = dict(l.strip().split("=", 1) for l in open("/tmp/plexus-gpu/manifest.txt") if "=" in l).get("commit", "?")
    except OSError:
        pass
else:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip() or "?"
json.dump({"gpu": q("name"), "driver": q("driver_version"), "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
           "commit": commit}, open(sys.argv[1] + "/env.json", "w"))
EOF
fi

# --- GPU tests ----------------------------------------------------------------------------
if [ "$SKIP_TESTS" = 0 ]; then
  if [ -n "$PREBUILT" ]; then
    step gpu-tests 240 bash -c "rc=0; n=0; while IFS=\$'\t' read -r exe filter; do n=\$((n+1));
        echo \"## \$exe --gtest_filter=\$filter\"; (cd $RESULTS && $BIN/\$exe --gtest_filter=\"\$filter\" --gtest_color=no) || rc=1;
      done < $PACK/gpu-tests.txt; [ \$n -gt 0 ] || { echo 'no GPU test binaries were packed'; rc=1; }; exit \$rc"
  else
    step gpu-tests 240 bash -c "cd $BUILD && ctest -L gpu --timeout 120 --output-on-failure"
  fi
  [ "$DRY" = 0 ] && python3 - "$RESULTS" <<'EOF'
import json, re, sys
log = open(sys.argv[1] + "/gpu-tests.log", errors="replace").read()
n = {"passed": 0, "failed": 0, "skipped": 0}
for m in re.finditer(r"\[  PASSED  \] (\d+) test", log): n["passed"] += int(m.group(1))
for m in re.finditer(r"\[  FAILED  \] (\d+) test", log): n["failed"] += int(m.group(1))
for m in re.finditer(r"\[  SKIPPED \] (\d+) test", log): n["skipped"] += int(m.group(1))
m = re.search(r"(\d+)% tests passed, (\d+) tests failed out of (\d+)", log)
if m:  # ctest's summary
    n["failed"] = int(m.group(2)); n["passed"] = int(m.group(3)) - n["failed"]
    n["skipped"] = len(re.findall(r"\*\*\*Skipped|Not Run", log))
for line in open(sys.argv[1] + "/steps.tsv"):
    if line.startswith("gpu-tests\t") and line.rstrip().split("\t")[-1] != "ok" and n["failed"] == 0:
        n["failed"] = 1  # the step failed, timed out or crashed: never a pass for want of a summary
json.dump(n, open(sys.argv[1] + "/gpu-tests.json", "w"))
print("GPU tests:", n)
EOF
fi

# --- checkpoints --------------------------------------------------------------------------
if [ -z "$MODELS" ]; then
  free_gb=$(df -BG --output=avail /dev/shm 2>/dev/null | tail -1 | tr -dc 0-9)
  if [ "${free_gb:-0}" -ge 24 ]; then MODELS=/dev/shm/plexus-models; else MODELS=/tmp/plexus-models; fi
fi
M1=$MODELS/llama-3.2-1b M8=$MODELS/llama-3.1-8b
[ "$DRY" = 0 ] && mkdir -p "$MODELS"
make_model() {  # NAME DIR PRESET [ARGS]
  local name=$1 dir=$2 preset=$3; shift 3
  if [ "$DRY" = 0 ] && [ -f "$dir/config.json" ]; then echo "== $name: $dir already there"; return 0; fi
  step "$name" "$LIMIT" "$PLEXUS" make-model "$dir" --preset "$preset" --force "$@"
}
LIMIT=60 make_model make-1b "$M1" llama-3.2-1b

# plexus generate itself on GPU 0 (the CLI's run path, its monitor's energy), then the benchmarks.
step generate-1b 60 bash -c "$PLEXUS generate $M1 --ids $IDS --max-tokens $NEW --greedy --ignore-eos --devices 0 --json > $RESULTS/generate-1b.json"
step gpu_bench-1b 90 "$GB" "$M1" --devices 0 --ids "$IDS" --decode-tokens "$NEW" --json "$RESULTS/gpu_bench-1b.json"
if [ "$SKIP_8B" = 0 ]; then
  LIMIT=150 make_model make-8b "$M8" llama-3.1-8b --shards 4
  step gpu_bench-8b 170 "$GB" "$M8" --devices 0 --ids "$IDS" --decode-tokens "$NEW" --reps 3 --batches 1,8,16,32,64,128 \
    --json "$RESULTS/gpu_bench-8b.json"
  # The prefill with the previous (in-loop conversion) tensor-core attention, for the log.
  step gpu_bench-8b-inloopattn 40 env PLEXUS_CUDA_PREFILL_ATTENTION=bf16-inloop "$GB" "$M8" --devices 0 --ids "$IDS" --reps 3 \
    --skip ceilings,decode,batched --json "$RESULTS/gpu_bench-8b-inloopattn.json"
fi
if [ "$SKIP_HF" = 0 ]; then
  export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1 TRANSFORMERS_VERBOSITY=error
  # The machine's own library path for Python: our packed libraries must not shadow torch's.
  step hf-1b 100 env LD_LIBRARY_PATH="$ORIG_LD_LIBRARY_PATH" python3 scripts/hf_compare.py "$M1" --ids "$IDS" --new-tokens "$NEW" --reps 3 --json "$RESULTS/hf-1b.json"
  [ "$SKIP_8B" = 0 ] && step hf-8b 130 env LD_LIBRARY_PATH="$ORIG_LD_LIBRARY_PATH" python3 scripts/hf_compare.py "$M8" --ids "$IDS" --new-tokens "$NEW" --reps 3 --json "$RESULTS/hf-8b.json"
fi

# The decode step's CUDA graph against eager launches (PLEXUS_CUDA_GRAPHS=0), batch 1, for the log.
step gpu_bench-1b-nographs 40 env PLEXUS_CUDA_GRAPHS=0 "$GB" "$M1" --devices 0 --ids "$IDS" --decode-tokens "$NEW" --reps 3 \
  --skip ceilings,prefill,batched --json "$RESULTS/gpu_bench-1b-nographs.json"

# The multi-GPU path on one GPU: two virtual GPUs (--virtual-gpus, as generate takes it), batch 1 and 8.
step gpu_bench-1b-vgpu2 60 "$GB" "$M1" --virtual-gpus 2 --ids "$IDS" --decode-tokens 64 --reps 3 --batches 8 \
  --skip ceilings,prefill --json "$RESULTS/gpu_bench-1b-vgpu2.json"

# plexus batch with a replica per virtual GPU (2 replicas on --virtual-gpus 2), 32 requests.
if [ "$DRY" = 0 ]; then
  for i in $(seq 1 32); do echo "{\"id\": \"r$i\", \"ids\": [128000, $((i * 997 % 128000)), $((i * 331 % 128000))], \"max_tokens\": 32}"; done >"$RESULTS/batch-in.jsonl"
fi
step batch-1b-vgpu2 60 "$PLEXUS" batch "$M1" --input "$RESULTS/batch-in.jsonl" --output "$RESULTS/batch-out.jsonl" \
  --replicas 2 --virtual-gpus 2 --context 256 --json

# Where a decode step's GPU time goes: Nsight Compute's per-kernel durations over a few 8B decode
# steps (eager launches, so each kernel is seen), summed by kernel, for the log.
if [ "$SKIP_8B" = 0 ]; then
  step ncu-8b-decode 60 bash -c "command -v ncu >/dev/null || { echo 'ncu: not on this machine'; exit 0; };
    PLEXUS_CUDA_GRAPHS=0 ncu --clock-control none --metrics gpu__time_duration.sum --launch-skip 1500 --launch-count 1200 --csv \
      $PLEXUS generate $M8 --ids $IDS --max-tokens 16 --greedy --ignore-eos --devices 0 > $RESULTS/ncu-8b.csv 2> $RESULTS/ncu-8b.err;
    python3 scripts/ncu_summary.py $RESULTS/ncu-8b.csv || { head -c 3000 $RESULTS/ncu-8b.csv; tail -20 $RESULTS/ncu-8b.err; }"
fi

# --- the table ----------------------------------------------------------------------------
echo
echo "== steps (seconds): $(tail -n +2 "$RESULTS/steps.tsv" | awk -F'\t' '{printf "%s %s%s; ", $1, $2, ($3 == "ok" ? "" : " [" $3 "]")}')"
if [ "$DRY" = 1 ]; then echo "== table: python3 scripts/gpu_check_table.py $RESULTS"; exit 0; fi
python3 scripts/gpu_check_table.py "$RESULTS" | tee "$RESULTS/table.txt"
rc=$?  # 1 when a target was missed (pipefail)
echo "total $(($(date +%s) - START)) s; results in $RESULTS"
publish
exit $rc
