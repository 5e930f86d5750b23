#!/usr/bin/env bash
# The compose target's compose.yaml files checked by Debian's docker-compose (`config` validates
# against the Compose schema and prints the normalised file; no daemon needed): every example
# passes, keeps its GPU reservation (none on CPUs) through normalisation, and the broken file in
# bad/ is rejected.
# usage: check_compose.sh EXAMPLES_DIR BAD_DIR
set -uo pipefail
examples="$1"
bad="$2"
fail=0
problem() { echo "FAIL: $*"; fail=1; }
command -v docker-compose >/dev/null || { echo "FAIL: docker-compose is not installed (scripts/setup.sh installs it)"; exit 1; }

for api in plexus vllm tgi tei cpu; do
  dir="$examples/compose-$api"
  [ -f "$dir/compose.yaml" ] || { problem "$dir/compose.yaml was not generated"; continue; }
  if ! normalised=$(cd "$dir" && docker-compose -f compose.yaml config 2>&1); then
    echo "$normalised"
    problem "docker-compose config rejected $dir/compose.yaml"
    continue
  fi
  if [ "$api" = cpu ]; then
    grep -q "driver: nvidia" <<<"$normalised" && problem "$dir: a CPU deployment reserves GPUs"
  else
    for want in "driver: nvidia" "- gpu" "- '0'" "- '1'" "/models/tiny-llama:ro" "published: 8080" "shm_size: 16g" "start_period:"; do
      grep -qF -- "$want" <<<"$normalised" || problem "$dir: docker-compose config's output lacks \"$want\""
    done
  fi
  echo "$dir/compose.yaml: ok"
done

if out=$(cd "$bad" && docker-compose -f compose.yaml config 2>&1); then
  problem "docker-compose config passed $bad/compose.yaml"
else
  echo "$out"
  grep -q "capabilites" <<<"$out" || problem "docker-compose's report of $bad/compose.yaml does not name the misspelt key"
fi

[ "$fail" = 0 ] && echo "check_compose: every generated compose.yaml passes docker-compose config; the broken one is rejected"
exit "$fail"
