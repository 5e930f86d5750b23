#!/usr/bin/env python3
"""Issue 33's quantised GEMV targets from the BLOCK-GEMV lines of CudaPerf.BlockGemvBandwidthAgainstACopy
(tests/kernels/cuda_perf_test.cpp): at one token with the default (rows) shape, the median over
its matrices of the share of the copy ceiling, for Q8_0 (>= 0.75) and Q4_K (>= 0.60). Prints a
line per format; exit 1 when a target is missed or has no data.
Usage: gemv_targets.py GEMV_PERF_LOG"""
import re
import statistics
import sys

TARGETS = {"Q8_0": 0.75, "Q4_K": 0.60}
LINE = re.compile(r"^BLOCK-GEMV (\S+)\s+rows\s+(\d+)x(\d+) n=1: .* ([0-9.]+) of the copy$")


def main() -> int:
    shares = {t: [] for t in TARGETS}
    for line in open(sys.argv[1], errors="replace"):
        m = LINE.match(line.rstrip())
        if m and m.group(1) in shares:
            shares[m.group(1)].append(float(m.group(4)))
    missed = 0
    for t, want in TARGETS.items():
        if not shares[t]:
            print(f"   GEMV {t} n=1: no data (target >= {want})")
            missed += 1
            continue
        got = statistics.median(shares[t])
        ok = got >= want
        missed += not ok
        print(f"   GEMV {t} n=1: {got:.2f} of the copy ceiling (median of {len(shares[t])}), target >= {want}: "
              + ("pass" if ok else "MISSED"))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
