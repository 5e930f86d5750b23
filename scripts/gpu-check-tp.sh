#!/usr/bin/env bash
# Issue 18's GPU check of tensor parallelism on CUDA devices, on a machine with an NVIDIA GPU, in
# one go (an estimated 4-6 minutes on an H100, build included; every step has a time limit and
# the whole run stops by --budget seconds):
#   1. build (CUDA on, this GPU's architecture only, -j 16): cuda_comm_tests first, then plexus and
#      gpu_model_tests in the background;
#   2. cuda_comm_tests: the all-reduce kernel against the host's sum (bit for bit), the CUDA
#      in-process group on virtual GPUs against the host's InProcessGroup (bit for bit, every
#      rank, ordered on the ranks' streams), all-gather, broadcast, abort; with 2+ GPUs also
#      NCCL (ncclCommInitAll, and ranks joining through a host collective) and peer reads
#      (these skip, with the reason, on one GPU); all-reduce latency and bandwidth, 4 KiB - 64 MiB,
#      of the in-process group on 2 and 4 virtual GPUs (and NCCL over every GPU, 2+), as ALLREDUCE lines;
#   3. gpu_model_tests GpuModel.TensorParallelOverVirtualGpusGivesOneGpusNll: --tp 2 and
#      --tp 2 --pp 2 on virtual GPUs against one GPU (NLL within 1e-4, greedy ids equal, the same
#      bits run to run);
#   4. decode and prefill tokens/s of a generated Llama-3.2-1B-shaped bf16 model on 1 GPU
#      (--devices 0) against --virtual-gpus 2 --tp 2 on the same GPU, with the communication
#      share of each token (what the in-process all-reduce costs; no speed-up is possible on one
#      GPU: both ranks share its SMs and memory bandwidth).
# Ends with a summary. Results: when $OUT is set (the device tool), $OUT/summary.txt and
# $OUT/gpu-check-tp-logs.tar.gz; else results/gpu-check-tp-DATE.
#
#   scripts/gpu-check-tp.sh [--budget S] [--skip-perf] [--build-dir DIR] [--arch A] [--prebuilt DIR]
#
#   --budget S      seconds for the whole run (default 480); steps past it are skipped
#   --skip-perf     leave out step 4
#   --build-dir DIR where to build (default build-gpu-tp)
#   --arch A        CMAKE_CUDA_ARCHITECTURES (default native: the GPU at hand)
#   --prebuilt DIR  binaries packed by `scripts/pack-gpu.sh --out DIR` (cuda_comm_tests included):
#                   no build
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUDGET=480 SKIP_PERF=0 BUILD=build-gpu-tp ARCH=native PREBUILT=
while [ $# -gt 0 ]; do
  case "$1" in
    --budget) BUDGET=$2; shift 2 ;;
    --skip-perf) SKIP_PERF=1; shift ;;
    --build-dir) BUILD=$2; shift 2 ;;
    --arch) ARCH=$2; shift 2 ;;
    --prebuilt) PREBUILT=$2; shift 2 ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "gpu-check-tp.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
source "$ROOT/scripts/gpu_check_lib.sh"
gpu_check_start gpu-check-tp

section "GPU"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee -a "$RESULTS/summary.txt" || true
nvidia-smi topo -m 2>/dev/null | head -12 >>"$RESULTS/summary.txt" || true
git rev-parse --short HEAD 2>/dev/null | sed 's/^/commit /' | tee -a "$RESULTS/summary.txt" || true
ls /usr/local/cuda/lib*/libnccl.so* /usr/lib/x86_64-linux-gnu/libnccl.so* 2>/dev/null | sed 's/^/nccl: /' | tee -a "$RESULTS/summary.txt" || echo "nccl: no libnccl.so found" | tee -a "$RESULTS/summary.txt"

# --- 1. build -------------------------------------------------------------------------------
BG=
if [ -n "$PREBUILT" ]; then
  section "prebuilt ($PREBUILT)"
  unpack_prebuilt "$PREBUILT"
  CCT=$PACK/bin/cuda_comm_tests PLEXUS=$PACK/bin/plexus GMT=$PACK/bin/gpu_model_tests
else
  section "build ($BUILD)"
  run configure 60 cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPLEXUS_CUDA=ON "-DCMAKE_CUDA_ARCHITECTURES=$ARCH"
  grep -E 'plexus: (CUDA|NCCL)' "$RESULTS/configure.log" | tee -a "$RESULTS/summary.txt" || true
  run build 240 ninja -C "$BUILD" -j 16 cuda_comm_tests
  CCT=$BUILD/tests/comm/cuda_comm_tests PLEXUS=$BUILD/plexus GMT=$BUILD/tests/exec/gpu_model_tests
  if [ ! -x "$CCT" ]; then
    echo "no $CCT: the build failed (see $RESULTS/build.log)" | tee -a "$RESULTS/summary.txt"
    tail -n 40 "$RESULTS/build.log" >>"$RESULTS/summary.txt" 2>/dev/null || true
    publish
    exit 1
  fi
  bg_limit=$((START + BUDGET - $(date +%s) - 150))
  [ "$bg_limit" -lt 30 ] && bg_limit=30
  ( rc=0; timeout -k 5 "$bg_limit" ninja -C "$BUILD" -j 12 plexus gpu_model_tests >"$RESULTS/build-run.log" 2>&1 || rc=$?
    echo "ninja exit $rc" >>"$RESULTS/build-run.log" ) &
  BG=$!
  echo "   plexus, gpu_model_tests building in the background (limit ${bg_limit}s)" | tee -a "$RESULTS/summary.txt"
fi

# --- 2. collectives -------------------------------------------------------------------------
section "collectives (cuda_comm_tests)"
run comm-tests 120 "$CCT" --gtest_color=no
grep -E '^\[  (PASSED  |FAILED  |SKIPPED )\]' "$RESULTS/comm-tests.log" | tee -a "$RESULTS/summary.txt" || true
grep '^ALLREDUCE' "$RESULTS/comm-tests.log" | tee -a "$RESULTS/summary.txt" || true
if grep -qE 'no usable CUDA device|no CUDA device present' "$RESULTS/comm-tests.log"; then
  echo "   the tests did not see the GPU" | tee -a "$RESULTS/summary.txt"
  FAILED+=("comm-tests: no GPU seen")
fi

# --- 3. the model over 2 virtual GPUs -------------------------------------------------------
section "tensor parallelism over virtual GPUs against one GPU (gpu_model_tests)"
if [ -n "$BG" ]; then
  wait "$BG" || true
  tail -n 3 "$RESULTS/build-run.log" | sed 's/^/   /' | tee -a "$RESULTS/summary.txt"
  grep -q "ninja exit 0" "$RESULTS/build-run.log" || FAILED+=("build-run: see build-run.log")
fi
if [ -x "$GMT" ]; then
  run tp-model-test 120 "$GMT" --gtest_filter='GpuModel.TensorParallelOverVirtualGpusGivesOneGpusNll' --gtest_color=no
  grep -E '^\[  (PASSED  |FAILED  |SKIPPED )\]|Failure|token [0-9]' "$RESULTS/tp-model-test.log" | head -20 | tee -a "$RESULTS/summary.txt" || true
else
  echo "   skipped: gpu_model_tests did not build" | tee -a "$RESULTS/summary.txt"; FAILED+=("tp-model-test: not built")
fi

# --- 4. tokens/s: 1 GPU against --tp 2 on 2 virtual GPUs ------------------------------------
section "Llama-3.2-1B shape, bf16: 1 GPU against --virtual-gpus 2 --tp 2"
if [ "$SKIP_PERF" = 1 ]; then
  echo "   skipped (--skip-perf)" | tee -a "$RESULTS/summary.txt"
elif [ ! -x "$PLEXUS" ]; then
  echo "   skipped: plexus did not build" | tee -a "$RESULTS/summary.txt"
else
  M1=/dev/shm/plexus-tp-1b
  [ -d /dev/shm ] || M1=/tmp/plexus-tp-1b
  run make-1b 90 "$PLEXUS" make-model "$M1" --preset llama-3.2-1b --force
  IDS=128000,7932,15851,23770,31689,39608,47527,55446,63365,71284,79203,87122,95041,2960,10879,18798
  for mode in one tp2; do
    args=(--devices 0)
    [ "$mode" = tp2 ] && args=(--virtual-gpus 2 --tp 2)
    for rep in 1 2; do
      run "generate-$mode-$rep" 90 "$PLEXUS" generate "$M1" --ids "$IDS" --max-tokens 64 --ignore-eos --context 128 "${args[@]}" --json
    done
    python3 - "$RESULTS/generate-$mode-2.log" "$mode" <<'PY' | tee -a "$RESULTS/summary.txt" || true
import json, sys
lines = [l for l in open(sys.argv[1], errors="replace") if l.startswith("{")]  # stdout's one JSON line
try:
    j = json.loads(lines[-1])
except Exception as e:
    print(f"   {sys.argv[2]}: no JSON ({e})"); sys.exit(0)
c = (j.get("execution") or {}).get("communication") or {}
print(f"   {sys.argv[2]:>4}: decode {j.get('decode_tokens_per_s', 0):.1f} tokens/s, prefill {j.get('prefill_tokens_per_s', 0):.1f} tokens/s"
      + (f", all-reduce {c.get('bytes_per_token', 0):.0f} B/token, {1e6 * c.get('seconds_per_token', 0):.0f} us/token per rank,"
         f" {100 * c.get('share_of_forward_time', 0):.1f}% of the forward" if c else ""))
PY
  done
  rm -rf "$M1"
fi

# --- summary --------------------------------------------------------------------------------
gpu_check_finish
