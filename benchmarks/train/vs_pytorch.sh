#!/usr/bin/env bash
# plexus's training step against PyTorch's, side by side in one run on the same threads and shape
# (SmolLM-135M's, sequence length 256): train_bench then torch_train_peer.py, alternated
# `rounds` times; prints each round's tokens/s and the ratio of the medians.
# Usage: benchmarks/train/vs_pytorch.sh [BUILD_DIR] [micro-batch] [rounds]
set -euo pipefail
build=${1:-build}
micro=${2:-1}
rounds=${3:-3}
here=$(dirname "$0")
threads=$(nproc)
plexus_rates=() torch_rates=()
for r in $(seq "$rounds"); do
  p=$("$build/benchmarks/train_bench" --seq-len 256 --micro-batch "$micro" --steps 5 --threads "$threads" --json |
      /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["tokens_per_s_median"])')
  t=$(/usr/bin/python3 "$here/torch_train_peer.py" --seq-len 256 --micro-batch "$micro" --steps 5 --threads "$threads" |
      /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["tokens_per_s_median"])')
  echo "round $r: plexus $p tokens/s, pytorch $t tokens/s"
  plexus_rates+=("$p") torch_rates+=("$t")
done
/usr/bin/python3 - "${plexus_rates[*]}" "${torch_rates[*]}" <<'PY'
import statistics, sys
p = [float(x) for x in sys.argv[1].split()]; t = [float(x) for x in sys.argv[2].split()]
print(f"median plexus {statistics.median(p):.1f} tokens/s, pytorch {statistics.median(t):.1f} tokens/s, "
      f"ratio plexus/pytorch {statistics.median(p) / statistics.median(t):.2f}")
PY
