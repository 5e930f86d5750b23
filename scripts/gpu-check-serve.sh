#!/usr/bin/env bash
# Issue 19's GPU check of `plexus serve`, on a machine with an NVIDIA GPU, in one go (about 5
# minutes on an H100/H200 from a prebuilt archive; every step has a time limit and the whole run
# stops by --budget seconds):
#   1. a Llama-3.2-1B-shaped bf16 model with the Llama 3 tokenizer (make-model);
#   2. `plexus serve` on the GPU (continuous batching, --max-sequences 64): /health, a
#      completion, a chat completion, a stream (curl);
#   3. aggregate generated tokens/s at 1, 4, 16 and 64 concurrent streaming clients
#      (scripts/serve_load.py, Python's standard library), with energy per request from NVML:
#      the sum of the requests' usage.energy_j against the energy /metrics says was attributed
#      and measured;
#   4. the same server at --max-sequences 1 (1, 4 and 16 clients): the continuous-batching ratio;
#   5. SIGTERM while a request runs: that request completes and the server exits 0.
# Results: $OUT/summary.txt and $OUT/gpu-check-serve-logs.tar.gz under the device tool, else
# results/gpu-check-serve-DATE.
#
#   scripts/gpu-check-serve.sh --prebuilt DIR [--budget S]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUDGET=480 PREBUILT=
while [ $# -gt 0 ]; do
  case "$1" in
    --budget) BUDGET=$2; shift 2 ;;
    --prebuilt) PREBUILT=$2; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "gpu-check-serve.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$PREBUILT" ] || { echo "gpu-check-serve.sh: --prebuilt DIR is required (scripts/pack-gpu.sh --out DIR)" >&2; exit 2; }
source "$ROOT/scripts/gpu_check_lib.sh"
gpu_check_start gpu-check-serve

section "GPU"
nvidia-smi --query-gpu=name,driver_version,memory.total,power.draw --format=csv,noheader | tee -a "$RESULTS/summary.txt" || true
section "prebuilt ($PREBUILT)"
unpack_prebuilt "$PREBUILT"
grep -E '^(commit|packed)=' "$PACK/manifest.txt" | tee -a "$RESULTS/summary.txt" || true
PLEXUS=$PACK/bin/plexus

section "model: Llama-3.2-1B shape, bf16, Llama 3 tokenizer"
M=/dev/shm/plexus-serve-1b
[ -d /dev/shm ] || M=/tmp/plexus-serve-1b
run make-model 120 "$PLEXUS" make-model "$M" --preset llama-3.2-1b --tokenizer "$PACK/golden/tokenizers/llama3" --force

SERVER_PID=
PORT=
# start_server NAME ARGS...: plexus serve on a free port, waits for /health ok (90 s at most).
start_server() {
  local name=$1; shift
  "$PLEXUS" serve "$M" --port 0 --context 1024 "$@" >"$RESULTS/$name.log" 2>&1 &
  SERVER_PID=$!
  PORT=
  for _ in $(seq 1 900); do
    PORT=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$RESULTS/$name.log" | head -1)
    if [ -n "$PORT" ] && curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1; then break; fi
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
  done
  grep -E 'listening|loaded|plan|device|note' "$RESULTS/$name.log" | head -8 | sed 's/^/   /' | tee -a "$RESULTS/summary.txt"
  if ! curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1; then
    echo "   $name: the server did not come up (see $name.log)" | tee -a "$RESULTS/summary.txt"
    tail -n 20 "$RESULTS/$name.log" >>"$RESULTS/summary.txt"
    FAILED+=("$name: no server")
    return 1
  fi
}
stop_server() {
  [ -n "$SERVER_PID" ] || return 0
  kill -TERM "$SERVER_PID" 2>/dev/null || true
  local rc=0
  wait "$SERVER_PID" || rc=$?
  echo "   server exit $rc" | tee -a "$RESULTS/summary.txt"
  [ $rc = 0 ] || FAILED+=("server exit $rc")
  SERVER_PID=
}
trap '[ -n "$SERVER_PID" ] && kill -9 "$SERVER_PID" 2>/dev/null; publish' EXIT
metrics() { curl -sf "http://127.0.0.1:$PORT/metrics" | grep -E '^plexus_(energy|device_energy|device_power|generation_tokens_total|requests_running|kv_cache)' | sed 's/^/   /'; }

section "serve on the GPU, continuous batching (--max-sequences 64)"
if start_server serve-cb --max-sequences 64 --max-queue 256; then
  B="http://127.0.0.1:$PORT"
  run completion 60 curl -sS "$B/v1/completions" -H 'Content-Type: application/json' \
    -d '{"model": "'"$M"'", "prompt": "The capital of France is", "max_tokens": 16, "temperature": 0}'
  run chat 60 curl -sS "$B/v1/chat/completions" -H 'Content-Type: application/json' \
    -d '{"model": "'"$M"'", "messages": [{"role": "user", "content": "Hello!"}], "max_tokens": 16, "temperature": 0}'
  run stream 60 curl -sSN "$B/v1/completions" -H 'Content-Type: application/json' \
    -d '{"model": "'"$M"'", "prompt": "Once upon a time", "max_tokens": 8, "stream": true, "stream_options": {"include_usage": true}}'
  metrics >"$RESULTS/metrics-before.txt" || true
  for c in 1 4 16 64; do
    run "load-cb-$c" 90 python3 scripts/serve_load.py --url "$B" --clients "$c" --requests $((c < 16 ? 4 : 2)) --max-tokens 64
    grep '^{' "$RESULTS/load-cb-$c.log" | sed "s/^/   cb c=$c /" >>"$RESULTS/summary.txt" || true
  done
  section "energy: /metrics after the load"
  metrics | tee "$RESULTS/metrics-after.txt" | tee -a "$RESULTS/summary.txt" || true
  stop_server
fi

section "the same server at --max-sequences 1"
if start_server serve-one --max-sequences 1 --max-queue 256; then
  for c in 1 4 16; do
    run "load-one-$c" 120 python3 scripts/serve_load.py --url "http://127.0.0.1:$PORT" --clients "$c" --requests $((c < 16 ? 4 : 2)) --max-tokens 64
    grep '^{' "$RESULTS/load-one-$c.log" | sed "s/^/   one c=$c /" >>"$RESULTS/summary.txt" || true
  done
  section "SIGTERM while a request runs"
  python3 scripts/serve_load.py --url "http://127.0.0.1:$PORT" --clients 1 --requests 1 --max-tokens 256 >"$RESULTS/drain-request.log" 2>&1 &
  CLIENT=$!
  sleep 1
  stop_server
  rc=0; wait "$CLIENT" || rc=$?
  echo "   the running request: client exit $rc; $(cat "$RESULTS/drain-request.log")" | tee -a "$RESULTS/summary.txt"
  [ $rc = 0 ] || FAILED+=("drain: the running request did not complete")
fi

section "summary"
python3 - "$RESULTS" <<'PY' | tee -a "$RESULTS/summary.txt"
import json, glob, os, sys
r = sys.argv[1]
def load(name):
    try:
        return json.loads([l for l in open(os.path.join(r, name + ".log")) if l.startswith("{")][-1])
    except Exception:
        return None
print("clients  cb tok/s  max-seq-1 tok/s  ratio  cb energy J/token")
for c in (1, 4, 16, 64):
    a, b = load(f"load-cb-{c}"), load(f"load-one-{c}")
    ta = a["tokens_per_s"] if a else None
    tb = b["tokens_per_s"] if b else None
    jt = (a["energy_j_sum"] / a["generated_tokens"]) if a and a.get("energy_j_sum") and a["generated_tokens"] else None
    ratio = f"{ta / tb:.2f}" if ta and tb else "-"
    print(f"{c:7d}  {ta if ta else '-':>8}  {tb if tb else '-':>15}  {ratio:>5}  {f'{jt:.4f}' if jt else '-'}")
def metric(name, key):
    try:
        for l in open(os.path.join(r, name)):
            f = l.split()
            if f and f[0] == key:
                return float(f[1])
    except Exception:
        return None
a0, a1 = metric("metrics-before.txt", "plexus_energy_attributed_joules"), metric("metrics-after.txt", "plexus_energy_attributed_joules")
sums = [load(f"load-cb-{c}") for c in (1, 4, 16, 64)]
if a0 is not None and a1 is not None and all(x and x.get("energy_j_sum") is not None for x in sums):
    total = sum(x["energy_j_sum"] for x in sums)
    print(f"energy: the load's requests' usage.energy_j sum to {total:.2f} J; /metrics attributed {a1 - a0:.2f} J over the same load")
PY
if [ ${#FAILED[@]} -eq 0 ]; then echo "ALL OK" | tee -a "$RESULTS/summary.txt"; else printf 'FAILED: %s\n' "${FAILED[@]}" | tee -a "$RESULTS/summary.txt"; fi
publish
