#!/usr/bin/env bash
# Issue 34's GPU check of training's compute (CudaTrainOps, CudaOptimizer), on a machine with an
# NVIDIA GPU, in one go (an estimated 3-4 minutes on an H100/H200 from a clean tree, most of it
# the build; never more than --budget seconds):
#   1. build (CUDA on, this GPU's architecture only, -j of every core): cuda_train_tests alone
#      (with the libraries it links; not plexus);
#   2. run it: every TrainOps op against RefTrainOps (the CPU cases, then every attention head
#      size 32..256 with GQA and windows), two runs bitwise equal, embed_backward bitwise, the
#      cross-entropy of a 32000 vocabulary, AdamW bitwise as the CPU's, the gradient norm, the
#      whole Llama-family step in device memory against CpuTrainOps (every architecture's parts)
#      and three optimizer steps;
# and a summary: the tests passed / failed / skipped (a skip on a GPU machine is a failure: the
# tests did not see the GPU). Results: when $OUT is set (the device tool), $OUT/summary.txt and
# $OUT/gpu-check-train-logs.tar.gz; else results/gpu-check-train-DATE.
#
#   scripts/gpu-check-train.sh [--budget S] [--build-dir DIR] [--arch A] [--prebuilt DIR]
#
#   --budget S      seconds for the whole run (default 420); steps past it are skipped
#   --build-dir DIR where to build (default build-gpu-train)
#   --arch A        CMAKE_CUDA_ARCHITECTURES (default native: the GPU at hand)
#   --prebuilt DIR  binaries packed by `scripts/pack-gpu.sh --out DIR` (it packs cuda_train_tests
#                   with the other gpu-labelled tests): no build
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUDGET=420 BUILD=build-gpu-train ARCH=native PREBUILT=
while [ $# -gt 0 ]; do
  case "$1" in
    --budget) BUDGET=$2; shift 2 ;;
    --build-dir) BUILD=$2; shift 2 ;;
    --arch) ARCH=$2; shift 2 ;;
    --prebuilt) PREBUILT=$2; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "gpu-check-train.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
source "$ROOT/scripts/gpu_check_lib.sh"
gpu_check_start gpu-check-train

section "GPU"
nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader | tee -a "$RESULTS/summary.txt" || true
git rev-parse --short HEAD 2>/dev/null | sed 's/^/commit /' | tee -a "$RESULTS/summary.txt" || true

# --- 1. build -------------------------------------------------------------------------------
if [ -n "$PREBUILT" ]; then
  section "prebuilt ($PREBUILT)"
  unpack_prebuilt "$PREBUILT"
  CTT=$PACK/bin/cuda_train_tests
else
  section "build ($BUILD)"
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  run configure 60 cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPLEXUS_CUDA=ON \
    "-DCMAKE_CUDA_ARCHITECTURES=$ARCH" "${launcher[@]}"
  run build 300 ninja -C "$BUILD" -j "$(nproc)" cuda_train_tests
  CTT=$BUILD/tests/train/cuda_train_tests
fi
if [ ! -x "$CTT" ]; then
  echo "no $CTT: the build failed or the archive lacks it (see $RESULTS/build.log)" | tee -a "$RESULTS/summary.txt"
  tail -n 40 "$RESULTS/build.log" >>"$RESULTS/summary.txt" 2>/dev/null || true
  publish
  exit 1
fi

# --- 2. tests -------------------------------------------------------------------------------
section "CudaTrainOps and CudaOptimizer against RefTrainOps and the CPU"
run train-gpu-tests 180 "$CTT" --gtest_color=no
grep -E '^\[  (PASSED  |FAILED  )\]|^\[       OK \]|^\[  FAILED  \] [A-Za-z]' "$RESULTS/train-gpu-tests.log" | sort -u | tee -a "$RESULTS/summary.txt" || true
# The first failures, for the report (element, got vs want).
grep -m 20 -E 'Failure|: .* vs ' "$RESULTS/train-gpu-tests.log" | tee -a "$RESULTS/summary.txt" || true
skipped=$(grep -cE '^\[  SKIPPED \] [A-Za-z]' "$RESULTS/train-gpu-tests.log" || true)
if [ "${skipped:-0}" -gt 0 ]; then
  echo "   $skipped tests SKIPPED (no usable GPU?): $(grep -m1 -E 'no usable CUDA device|no CUDA device' "$RESULTS/train-gpu-tests.log" || true)" | tee -a "$RESULTS/summary.txt"
  FAILED+=("train-gpu-tests: $skipped skipped")
fi

# --- summary --------------------------------------------------------------------------------
gpu_check_finish
