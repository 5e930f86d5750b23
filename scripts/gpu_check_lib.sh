# What the one-call GPU checks (gpu-check-quant.sh, gpu-check-tp.sh, gpu-check-train.sh) share, sourced by them:
# the results folder, the summary, time-limited steps and the unpacking of a prebuilt archive.
# The device tool brings back a few files from $OUT: summary.txt and one archive of every log,
# refreshed after each step so a cut-off run still brings its logs.

# gpu_check_start NAME: RESULTS (in /tmp under the device tool, else results/), START, FAILED.
gpu_check_start() {
  GPU_CHECK_NAME=$1
  if [ -n "${OUT:-}" ]; then RESULTS=/tmp/$1-$(date -u +%Y%m%d-%H%M%S); else RESULTS=results/$1-$(date -u +%Y%m%d-%H%M%S); fi
  mkdir -p "$RESULTS"
  RESULTS=$(cd "$RESULTS" && pwd)
  START=$(date +%s)
  FAILED=()
}

publish() {
  [ -n "${OUT:-}" ] || return 0
  mkdir -p "$OUT"
  cp "$RESULTS/summary.txt" "$OUT/" 2>/dev/null || true
  tar -C "$RESULTS" -czf "$OUT/$GPU_CHECK_NAME-logs.tar.gz" . 2>/dev/null || true
}

section() { printf '\n===== %s (%ss elapsed)\n' "$1" "$(($(date +%s) - START))" | tee -a "$RESULTS/summary.txt"; }

# gpu_check_finish: the summary section, the results published; exits 0 when no step failed, else 1.
gpu_check_finish() {
  section "summary"
  if [ ${#FAILED[@]} -eq 0 ]; then
    echo "ALL STEPS OK in $(($(date +%s) - START)) s" | tee -a "$RESULTS/summary.txt"
    publish
    exit 0
  fi
  printf 'FAILED: %s\n' "${FAILED[@]}" | tee -a "$RESULTS/summary.txt"
  echo "total $(($(date +%s) - START)) s; logs in $RESULTS" | tee -a "$RESULTS/summary.txt"
  publish
  exit 1
}

# run NAME LIMIT CMD...: CMD's output in NAME.log (its tail shown) under min(LIMIT, the budget left).
run() {
  local name=$1 limit=$2; shift 2
  local left=$((START + BUDGET - $(date +%s)))
  [ "$limit" -gt "$left" ] && limit=$left
  if [ "$limit" -lt 10 ]; then
    echo "   $name: skipped, out of time" | tee -a "$RESULTS/summary.txt"; FAILED+=("$name (no time)"); return 0
  fi
  local t0=$(date +%s) rc=0
  timeout -k 5 "$limit" "$@" >"$RESULTS/$name.log" 2>&1 || rc=$?
  tail -n 15 "$RESULTS/$name.log" | sed 's/^/   /'
  local status=ok
  [ $rc != 0 ] && status="failed (exit $rc)"
  { [ $rc = 124 ] || [ $rc = 137 ]; } && status="timed out after ${limit}s"
  echo "   -> $name: $status in $(($(date +%s) - t0))s" | tee -a "$RESULTS/summary.txt"
  [ "$status" = ok ] || FAILED+=("$name: $status")
  publish
  return 0
}

# unpack_prebuilt DIR: DIR/plexus-gpu.tar.xz (scripts/pack-gpu.sh) into PACK=/tmp/plexus-gpu, the
# packing machine's source and build paths (compiled into the test binaries) linked to it, and
# the CUDA libraries on LD_LIBRARY_PATH. Exits 1 when the archive cannot be unpacked.
unpack_prebuilt() {
  PACK=/tmp/plexus-gpu
  rm -rf "$PACK" && mkdir -p "$PACK" && tar -C "$PACK" -xJf "$1/plexus-gpu.tar.xz" || { echo "cannot unpack $1/plexus-gpu.tar.xz" | tee -a "$RESULTS/summary.txt"; publish; exit 1; }
  local src bld cudalibs
  src=$(sed -n 's/^source_dir=//p' "$PACK/manifest.txt") bld=$(sed -n 's/^build_dir=//p' "$PACK/manifest.txt")
  if [ -n "$src" ] && [ ! -e "$src" ]; then mkdir -p "$(dirname "$src")" && ln -s "$ROOT" "$src"; fi
  if [ -n "$bld" ]; then
    mkdir -p "$bld" 2>/dev/null || true
    [ -e "$bld/plexus" ] || ln -s "$PACK/bin/plexus" "$bld/plexus"
    [ -e "$bld/golden" ] || ln -s "$PACK/golden" "$bld/golden"
  fi
  cudalibs=$(for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib; do ls "$d"/libcublas.so.* >/dev/null 2>&1 && printf '%s:' "$d"; done
    python3 -c 'import glob,site,os;print(":".join(sorted({os.path.dirname(p) for r in site.getsitepackages() for p in glob.glob(r+"/nvidia/*/lib/lib*.so*")})))' 2>/dev/null)
  export LD_LIBRARY_PATH="$PACK/lib:${cudalibs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}
