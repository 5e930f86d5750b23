#!/usr/bin/env python3
"""Prints the plexus vs llama.cpp table from run.sh's manifest (one JSON line per raw output) and
writes it as JSON and CSV. Per cell: medians (tokens/s) of each side, llama.cpp at its better
OpenMP wait policy, the ratio plexus / llama.cpp, and both sides' fraction of the ceiling
measured in the same run without the load (prefill: matmul FLOP/s over fp32 FMA peak; decode: bytes read per step
(weights + f32 KV cache) over read bandwidth).
usage: report.py MANIFEST [--json OUT.json] [--csv OUT.csv] [--machine TEXT]"""
import argparse
import csv
import json
import os
import statistics


def read_raw(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def llama_rates(rec, text):
    """The per-repetition tokens/s of one llama.cpp run."""
    if rec["tool"] == "llama-bench":
        (test,) = json.loads(text)
        return list(test["samples_ts"])
    return [json.loads(line)["speed_tg"] for line in text.splitlines() if line.strip().startswith("{")]


def load(manifest):
    base = os.path.dirname(manifest)
    ceilings, cells = {}, {}
    with open(manifest, encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    for rec in records:
        text = read_raw(os.path.join(base, rec["file"]) if not os.path.isabs(rec["file"]) else rec["file"])
        if rec["engine"] == "ceilings":
            j = json.loads(text)
            ceilings[rec["threads"]] = (j["read_bandwidth_gb_s"], j["fma_peak_gflop_s"])
            continue
        key = (rec["load"], rec["dtype"], rec["threads"], rec["cell"])
        c = cells.setdefault(key, {"llama": {}})
        if rec["engine"] == "plexus":
            j = json.loads(text)
            c["plexus"] = j
        else:
            rates = llama_rates(rec, text)
            c["llama"][rec["policy"]] = statistics.median(rates) if rates else float("nan")
    return ceilings, cells


def rows(ceilings, cells):
    out = []
    for (load, dtype, threads, cell), c in cells.items():
        p = c.get("plexus", {})
        prefill = "prefill_tokens_per_s" in p
        ours = p.get("prefill_tokens_per_s" if prefill else "decode_tokens_per_s", float("nan"))
        policy, theirs = max(c["llama"].items(), key=lambda kv: kv[1]) if c["llama"] else ("", float("nan"))
        bw, peak = ceilings.get(threads, (float("nan"), float("nan")))
        if prefill:
            def frac(rate):
                return rate * p["prefill_flop_per_token"] / (peak * 1e9)
            ceiling = f"FMA peak {peak:.0f} GFLOP/s"
        else:
            def frac(rate):
                return rate / p["decode_batch"] * p["decode_bytes_per_step"] / (bw * 1e9)
            ceiling = f"read bw {bw:.1f} GB/s"
        out.append({"load": load, "dtype": dtype, "threads": int(threads), "cell": cell,
                    "plexus_tokens_per_s": ours, "llama_cpp_tokens_per_s": theirs, "llama_cpp_wait_policy": policy,
                    "llama_cpp_by_policy": c["llama"], "ratio": ours / theirs if theirs else float("nan"),
                    "plexus_fraction_of_ceiling": frac(ours), "llama_cpp_fraction_of_ceiling": frac(theirs),
                    "ceiling": ceiling, "plexus_runs": p.get("prefill_runs_tokens_per_s", p.get("decode_runs_tokens_per_s"))})
    order = {"quiet": 0, "busy": 1}
    out.sort(key=lambda r: (order.get(r["load"], 2), r["dtype"], r["threads"]))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("manifest")
    ap.add_argument("--json")
    ap.add_argument("--csv")
    ap.add_argument("--machine", default="")
    a = ap.parse_args()
    ceilings, cells = load(a.manifest)
    table = rows(ceilings, cells)
    print(f"\nplexus vs llama.cpp, same weights, medians in tokens/s{'; ' + a.machine if a.machine else ''}")
    print("(llama.cpp at its better OMP_WAIT_POLICY; % of ceiling: prefill of fp32 FMA peak, decode of read bandwidth)")
    print(f"{'load':<6}{'dtype':<6}{'thr':>3} {'cell':<12}{'plexus':>9}{'llama.cpp':>10}{'policy':>8}{'ratio':>7}"
          f"{'plexus%':>9}{'llama%':>8}  ceiling")
    for r in table:
        print(f"{r['load']:<6}{r['dtype']:<6}{r['threads']:>3} {r['cell']:<12}{r['plexus_tokens_per_s']:>9.1f}"
              f"{r['llama_cpp_tokens_per_s']:>10.1f}{r['llama_cpp_wait_policy'][:7]:>8}{r['ratio']:>6.2f}x"
              f"{100 * r['plexus_fraction_of_ceiling']:>8.0f}%{100 * r['llama_cpp_fraction_of_ceiling']:>7.0f}%  {r['ceiling']}")
    by = {(r["load"], r["dtype"], r["threads"], r["cell"]): r["plexus_tokens_per_s"] for r in table}
    scaling = [(k, by[k], by[(k[0], k[1], 1, k[3])]) for k in by if k[2] == 2 and (k[0], k[1], 1, k[3]) in by]
    if scaling:
        print("plexus 2 threads / 1 thread: " + ", ".join(f"{load} {dt} {cell} {two / one:.2f}"
                                                          for (load, dt, _, cell), two, one in scaling))
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump({"machine": a.machine, "ceilings": [{"threads": int(k), "read_bandwidth_gb_s": v[0], "fma_peak_gflop_s": v[1]}
                                                          for k, v in ceilings.items()],
                       "cells": table}, f, indent=1)
    if a.csv:
        fields = [k for k in table[0] if k not in ("llama_cpp_by_policy", "plexus_runs")] if table else []
        with open(a.csv, "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
            w.writeheader()
            w.writerows(table)
    if a.json or a.csv:
        print("written: " + " ".join(x for x in (a.json, a.csv) if x))


if __name__ == "__main__":
    main()
