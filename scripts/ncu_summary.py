#!/usr/bin/env python3
"""Sums Nsight Compute's per-launch `gpu__time_duration.sum` (ncu --csv) by kernel and prints the
kernels by total time: where the GPU time of the profiled launches went (gpu-check.sh's ncu step)."""
import collections
import csv
import sys

UNIT = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3, "second": 1e6, "s": 1e6}


def main(path):
    lines = open(path, errors="replace").read().splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith('"ID"'))
    total = collections.Counter()
    count = collections.Counter()
    for row in csv.DictReader(lines[start:]):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        name = row.get("Kernel Name") or row.get("Function Name") or "?"
        name = name.split("(")[0][:70]
        us = float(row["Metric Value"].replace(",", "")) * UNIT.get(row.get("Metric Unit", "nsecond"), 1e-3)
        total[name] += us
        count[name] += 1
    grand = sum(total.values())
    if grand == 0:
        raise SystemExit("no gpu__time_duration rows")
    print(f"{sum(count.values())} launches, {grand:.0f} us of GPU time")
    print(f"{'kernel':72} {'launches':>8} {'total us':>10} {'avg us':>8} {'share':>6}")
    for name, us in total.most_common(20):
        print(f"{name:72} {count[name]:8d} {us:10.1f} {us / count[name]:8.2f} {100 * us / grand:5.1f}%")


if __name__ == "__main__":
    main(sys.argv[1])
