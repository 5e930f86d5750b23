#!/usr/bin/env bash
# Builds here what scripts/gpu-check.sh runs on a GPU machine that lacks our build dependencies,
# and packs it into one archive: the plexus binary, the GPU test binaries (ctest label gpu),
# gpu_bench, the golden data the tests read, and every shared library they need that the GPU
# machine brings itself or must not take from us (glibc, libstdc++, libgcc, the CUDA driver,
# cuBLAS and the CUDA runtime are left out).
#
#   scripts/pack-gpu.sh [--build-dir build] [--out .gpu] [--arch "80;90"]
#
# Writes OUT/plexus-gpu.tar.xz (unpacked by `scripts/gpu-check.sh --prebuilt OUT`) and prints its
# size. OUT is ignored by git: name it in the device tool's carry list.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=build
OUT=.gpu
ARCH=
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) BUILD=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --arch) ARCH=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "pack-gpu.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

export CMAKE_CXX_COMPILER_LAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER:-$(command -v ccache || true)}
export CMAKE_C_COMPILER_LAUNCHER=${CMAKE_C_COMPILER_LAUNCHER:-$CMAKE_CXX_COMPILER_LAUNCHER}
if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release ${ARCH:+-DCMAKE_CUDA_ARCHITECTURES="$ARCH"}
elif [ -n "$ARCH" ]; then
  cmake -S . -B "$BUILD" -DCMAKE_CUDA_ARCHITECTURES="$ARCH" >/dev/null
fi
if ! grep -q 'gpu_bench' "$BUILD/build.ninja"; then
  echo "pack-gpu.sh: $BUILD was configured without the CUDA toolkit; nothing GPU to pack" >&2
  exit 1
fi

# The GPU test targets: the tests' CMakeLists declare them with plexus_add_test(NAME LABELS ... gpu ...).
# PACK_TEST_TARGETS="a b" overrides.
if [ -z "${PACK_TEST_TARGETS:-}" ]; then
  PACK_TEST_TARGETS=$(python3 scripts/gpu_test_targets.py tests)
fi
echo "pack-gpu.sh: building plexus gpu_bench ${PACK_TEST_TARGETS:-(no GPU test targets declared)}"
ninja -C "$BUILD" -j "$(nproc)" plexus gpu_bench $PACK_TEST_TARGETS

STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/bin" "$STAGE/lib"
cp "$BUILD/plexus" "$BUILD/benchmarks/gpu_bench" "$STAGE/bin/"

# The GPU tests as ctest lists them: each binary with the names of its gpu-labelled tests.
(cd "$BUILD" && ctest -L gpu --show-only=json-v1) >"$STAGE/ctest-gpu.json"
python3 - "$STAGE" "$BUILD" <<'EOF'
import json, os, shutil, sys
stage, build = sys.argv[1], sys.argv[2]
tests = json.load(open(os.path.join(stage, "ctest-gpu.json"))).get("tests", [])
by_binary = {}
for t in tests:
    cmd = t.get("command") or []
    if not cmd:
        continue
    exe = cmd[0]
    name = next((a.split("=", 1)[1] for a in cmd[1:] if a.startswith("--gtest_filter=")), None)
    by_binary.setdefault(exe, [])
    if name:
        by_binary[exe].append(name)
with open(os.path.join(stage, "gpu-tests.txt"), "w") as f:
    for exe, names in sorted(by_binary.items()):
        if not os.path.isfile(exe):
            print(f"pack-gpu.sh: warning: {exe} (gpu-labelled tests) was not built; add its target to PACK_TEST_TARGETS", file=sys.stderr)
            continue
        shutil.copy2(exe, os.path.join(stage, "bin", os.path.basename(exe)))
        f.write(os.path.basename(exe) + "\t" + (":".join(names) if names else "*") + "\n")
print(f"pack-gpu.sh: {len(tests)} GPU tests in {len(by_binary)} binaries")
EOF

# Shared libraries: everything ldd resolves except the C runtime, the compiler's runtime and CUDA's.
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|libutil\.so|libresolv|libstdc\+\+|libgcc_s|libcuda\.|libcudart|libcublas|libcublasLt|libnvidia-|libnvrtc|libnccl)'
for b in "$STAGE"/bin/*; do
  ldd "$b" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  if ! [[ $name =~ $skip ]]; then cp -L "$path" "$STAGE/lib/$name"; fi
done
if ldd "$STAGE"/bin/* | grep -q 'not found'; then
  echo "pack-gpu.sh: warning: unresolved libraries here:" >&2
  ldd "$STAGE"/bin/* | grep 'not found' | sort -u >&2
fi
strip --strip-unneeded "$STAGE"/bin/* "$STAGE"/lib/* 2>/dev/null || true

# The golden data the tests read (logits cases, tokenizers), and where the binaries expect it:
# the tests have the build and source paths compiled in; gpu-check.sh links them into place.
cp -r "$BUILD/golden" "$STAGE/golden"
{
  echo "build_dir=$(cd "$BUILD" && pwd)"
  echo "source_dir=$(pwd)"
  echo "commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo -dirty)"
  echo "packed=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "cuda_code=$(grep -oE -- '--generate-code=[^ ]+' "$BUILD/build.ninja" | sort -u | tr '\n' ' ')"
  echo "nvcc=$(sed -n 's/^set(CMAKE_CUDA_COMPILER_VERSION "\(.*\)")/\1/p' "$BUILD"/CMakeFiles/*/CMakeCUDACompiler.cmake | head -1)"
} >"$STAGE/manifest.txt"
cat "$STAGE/manifest.txt"

mkdir -p "$OUT"
rm -f "$OUT/plexus-gpu.tar.xz"
XZ_OPT=-6T0 tar -C "$STAGE" -cJf "$OUT/plexus-gpu.tar.xz" .
echo "pack-gpu.sh: unpacked $(du -sh "$STAGE" | cut -f1), packed $(du -h "$OUT/plexus-gpu.tar.xz" | cut -f1): $OUT/plexus-gpu.tar.xz"
du -ah "$STAGE" | sort -h | tail -8
