#!/usr/bin/env bash
# Runs every libFuzzer harness of a PLEXUS_FUZZ build for a given time each (make fuzz).
# Usage: scripts/fuzz.sh BUILD_DIR SECONDS [HARNESS...]
# Each harness starts from a copy of fuzz/corpus/<name> (new inputs stay in BUILD_DIR/corpus,
# crashes in BUILD_DIR/findings/<name>); the last coverage line of each run is printed.
set -euo pipefail
build=${1:?build dir}
seconds=${2:?seconds per harness}
shift 2
root=$(cd "$(dirname "$0")/.." && pwd)
harnesses=("$@")
if [ ${#harnesses[@]} -eq 0 ]; then
  harnesses=(safetensors gguf config_json tokenizer_json device_map bench_yaml batch_request batch_resume chat_template)
fi
status=0
for name in "${harnesses[@]}"; do
  work="$build/corpus/$name"
  findings="$build/findings/$name"
  mkdir -p "$work" "$findings"
  cp -n "$root/fuzz/corpus/$name"/* "$work"/ 2>/dev/null || true
  log="$build/fuzz_$name.log"
  echo "== $name: ${seconds}s"
  if ! "$build/fuzz/${name}_fuzz" "$work" -max_total_time="$seconds" -max_len=262144 -timeout=20 -rss_limit_mb=4096 \
      -artifact_prefix="$findings/" -print_final_stats=1 >"$log" 2>&1; then
    echo "   FINDING: see $log and $findings/"
    status=1
  fi
  grep -E "^#[0-9]+.*(DONE|cov:)" "$log" | tail -1 || true
done
exit $status
