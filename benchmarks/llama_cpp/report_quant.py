#!/usr/bin/env python3
"""Prints the plexus vs llama.cpp table on quantised GGUF files from run_quant.sh's manifest (one
JSON line per raw output: engine_bench JSON, llama-bench JSON, each with /usr/bin/time -v beside
it) and writes it as JSON and CSV. Per quantisation type, thread count and cell: medians over the
rounds of each engine's tokens/s (llama.cpp at its better OpenMP wait policy), the ratio
plexus / llama.cpp; for decode, each engine's fraction of the read bandwidth measured in the same
run (bytes a decoded token reads: every blk.* tensor and the output matrix as stored in the file —
of a mixture of experts' stacked ffn_*_exps, the expert_used_count / expert_count share a token
reads —, times tokens/s, over the median read bandwidth of that thread count); each process's median peak
resident memory over the file's size (target: at most 1.10).
usage: report_quant.py MANIFEST --file QTYPE=PATH [--file plexus:QTYPE=PATH ...] [--json OUT] [--csv OUT] [--machine TEXT]"""
import argparse
import csv
import json
import os
import re
import statistics
import struct

# ggml tensor type -> (name, elements per block, bytes per block)
GGML_TYPES = {0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20), 6: ("Q5_0", 32, 22),
              7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 9: ("Q8_1", 32, 36), 10: ("Q2_K", 256, 84),
              11: ("Q3_K", 256, 110), 12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176), 14: ("Q6_K", 256, 210),
              15: ("Q8_K", 256, 292), 20: ("IQ4_NL", 32, 18), 23: ("IQ4_XS", 256, 136), 30: ("BF16", 1, 2)}
# GGUF metadata value type -> struct format of a scalar (8: string, 9: array handled apart)
GGUF_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "B", 10: "Q", 11: "q", 12: "d"}


def gguf_tensors(path, meta=None):
    """[(name, type name, dims, bytes)] from a GGUF v3 file's tensor table; the integer metadata
    into `meta` (key -> value) when given."""
    with open(path, "rb") as f:
        def read(fmt):
            return struct.unpack("<" + fmt, f.read(struct.calcsize("<" + fmt)))

        def string():
            (n,) = read("Q")
            return f.read(n).decode("utf-8", "replace")

        def skip_value(vtype):
            if vtype == 8:
                string()
            elif vtype == 9:
                etype, count = read("IQ")
                if etype in GGUF_SCALARS:
                    f.seek(count * struct.calcsize(GGUF_SCALARS[etype]), 1)
                else:
                    for _ in range(count):
                        skip_value(etype)
            else:
                read(GGUF_SCALARS[vtype])

        magic = f.read(4)
        if magic != b"GGUF":
            raise ValueError(f"{path}: not a GGUF file")
        _, n_tensors, n_kv = read("IQQ")
        for _ in range(n_kv):
            key = string()
            (vtype,) = read("I")
            if meta is not None and vtype in (4, 5, 10, 11):
                (meta[key],) = read(GGUF_SCALARS[vtype])
            else:
                skip_value(vtype)
        out = []
        for _ in range(n_tensors):
            name = string()
            (n_dims,) = read("I")
            dims = read(f"{n_dims}Q")
            ttype, _ = read("IQ")
            tname, elems, block = GGML_TYPES[ttype]
            numel = 1
            for d in dims:
                numel *= d
            out.append((name, tname, dims, numel // elems * block))
        return out


def file_facts(path):
    meta = {}
    tensors = gguf_tensors(path, meta)
    names = {t[0] for t in tensors}
    head = "output.weight" if "output.weight" in names else "token_embd.weight"
    # A mixture of experts' token reads expert_used_count of expert_count experts (ffn_*_exps).
    experts = next((v for k, v in meta.items() if k.endswith(".expert_count")), 0)
    used = next((v for k, v in meta.items() if k.endswith(".expert_used_count")), 0)
    share = lambda name: used / experts if experts and "_exps." in name else 1.0
    per_token = sum(b * share(name) for name, _, _, b in tensors if name.startswith("blk.") or name in (head, "output_norm.weight"))
    mix = {}
    for name, tname, dims, b in tensors:
        if len(dims) == 2:
            mix[tname] = mix.get(tname, 0) + b
    return {"path": path, "bytes": os.path.getsize(path), "bytes_per_token": per_token,
            "matrix_bytes_by_type": mix, "head": head}


def peak_rss_bytes(path):
    try:
        with open(path, encoding="utf-8") as f:
            m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", f.read())
    except OSError:
        return None
    return int(m.group(1)) * 1024 if m else None


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else float("nan")


def load(manifest):
    base = os.path.dirname(manifest)
    bandwidth, strategies = {}, {}
    runs = {}  # (source, engine, qtype, threads, cell) -> {policy: [(tok/s, rss)]}
    with open(manifest, encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    for rec in records:
        path = rec["file"] if os.path.isabs(rec["file"]) else os.path.join(base, rec["file"])
        with open(path, encoding="utf-8") as f:
            j = json.load(f)
        if rec["engine"] == "ceilings":
            bandwidth.setdefault(rec["threads"], []).append(j["read_bandwidth_gb_s"])
            strategies.setdefault(rec["threads"], []).append(j["read_bandwidth_strategy"])
            continue
        if rec["engine"] == "plexus":
            rate = j.get("prefill_tokens_per_s", j.get("decode_tokens_per_s"))
            policy = "plexus"
        else:
            (test,) = j
            rate = test["avg_ts"]
            policy = rec["policy"]
        key = (rec["source"], rec["engine"], rec["qtype"], rec["threads"], rec["cell"])
        runs.setdefault(key, {}).setdefault(policy, []).append((rate, peak_rss_bytes(path + ".time")))
    return bandwidth, strategies, runs


def summary(by_policy):
    """(median tok/s at the best policy, that policy, median peak RSS, every run's tok/s)"""
    if not by_policy:
        return float("nan"), "", float("nan"), []
    policy, rs = max(by_policy.items(), key=lambda kv: median([r for r, _ in kv[1]]))
    return median([r for r, _ in rs]), policy, median([m for _, m in rs]), [r for r, _ in rs]


def rows(bandwidth, runs, files):
    out = []
    cells = sorted({(k[2], k[3], k[4]) for k in runs}, key=lambda c: (c[0], int(c[1]), c[2]))
    for qtype, threads, cell in cells:
        theirs, policy, theirs_rss, theirs_runs = summary(runs.get(("llama.cpp", "llama.cpp", qtype, threads, cell), {}))
        bw = median(bandwidth.get(threads, []))
        for source in ("llama.cpp", "plexus"):
            key = ("plexus", qtype) if source == "plexus" else (qtype,)
            fkey = ":".join(key)
            if fkey not in files:
                continue
            ours, _, ours_rss, ours_runs = summary(runs.get((source, "plexus", qtype, threads, cell), {}))
            if source == "plexus" and not ours_runs:
                continue
            f, lf = files[fkey], files[qtype]
            decode = cell.startswith("tg")
            row = {"qtype": qtype, "file": "llama.cpp's" if source == "llama.cpp" else "plexus's", "threads": int(threads),
                   "cell": cell, "plexus_tokens_per_s": ours, "llama_cpp_tokens_per_s": theirs,
                   "llama_cpp_wait_policy": policy, "ratio": ours / theirs if theirs else float("nan"),
                   "plexus_runs": ours_runs, "llama_cpp_runs": theirs_runs, "read_bandwidth_gb_s": bw,
                   "file_bytes": f["bytes"], "llama_file_bytes": lf["bytes"],
                   "plexus_peak_rss_bytes": ours_rss, "llama_cpp_peak_rss_bytes": theirs_rss,
                   "plexus_rss_over_file": ours_rss / f["bytes"], "llama_cpp_rss_over_file": theirs_rss / lf["bytes"]}
            if decode:
                row["bytes_per_token"] = f["bytes_per_token"]
                row["plexus_fraction_of_bandwidth"] = ours * f["bytes_per_token"] / (bw * 1e9)
                row["llama_cpp_fraction_of_bandwidth"] = theirs * lf["bytes_per_token"] / (bw * 1e9)
            out.append(row)
    return out


def pct(x):
    return "    -" if x != x else f"{100 * x:4.0f}%"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("manifest")
    ap.add_argument("--file", action="append", default=[], help="QTYPE=PATH (llama.cpp's) or plexus:QTYPE=PATH")
    ap.add_argument("--json")
    ap.add_argument("--csv")
    ap.add_argument("--machine", default="")
    a = ap.parse_args()
    files = {}
    for spec in a.file:
        k, path = spec.split("=", 1)
        files[k] = file_facts(path)
    bandwidth, strategies, runs = load(a.manifest)
    table = rows(bandwidth, runs, files)

    print(f"\nplexus vs llama.cpp on quantised GGUF files, medians{'; ' + a.machine if a.machine else ''}")
    for k, f in files.items():
        mix = ", ".join(f"{t} {b / 1e6:.0f} MB" for t, b in sorted(f["matrix_bytes_by_type"].items(), key=lambda kv: -kv[1]))
        print(f"  {k:<12} {os.path.basename(f['path'])}: {f['bytes'] / 1e6:.1f} MB, {f['bytes_per_token'] / 1e6:.1f} MB read per "
              f"decoded token (blk.* + {f['head']}); matrices: {mix}")
    for t in sorted(bandwidth, key=int):
        print(f"  read bandwidth, {t} thread(s): median {median(bandwidth[t]):.1f} GB/s of "
              f"{', '.join(f'{x:.1f}' for x in bandwidth[t])} ({', '.join(sorted(set(strategies[t])))})")
    print(f"{'qtype':<7}{'file':<11}{'thr':>3} {'cell':<6}{'plexus':>9}{'llama.cpp':>10}{'ratio':>7}{'plx bw':>7}{'lcp bw':>7}"
          f"{'plx RSS':>9}{'lcp RSS':>9}{'plx/file':>9}{'lcp/file':>9}")
    for r in table:
        print(f"{r['qtype']:<7}{r['file']:<11}{r['threads']:>3} {r['cell']:<6}{r['plexus_tokens_per_s']:>9.1f}"
              f"{r['llama_cpp_tokens_per_s']:>10.1f}{r['ratio']:>6.2f}x{pct(r.get('plexus_fraction_of_bandwidth', float('nan'))):>7}"
              f"{pct(r.get('llama_cpp_fraction_of_bandwidth', float('nan'))):>7}"
              f"{r['plexus_peak_rss_bytes'] / 1e6:>7.0f}MB{r['llama_cpp_peak_rss_bytes'] / 1e6:>7.0f}MB"
              f"{r['plexus_rss_over_file']:>9.2f}{r['llama_cpp_rss_over_file']:>9.2f}")
    dec = [r for r in table if r["cell"].startswith("tg") and r["file"] == "llama.cpp's"]
    if dec:
        print("targets (issue 40), decode on llama.cpp's files: plexus >= 1.0x llama.cpp: "
              + ", ".join(f"{r['qtype']} {r['threads']}t {r['ratio']:.2f}x" for r in dec)
              + "; >= 75% of read bandwidth: "
              + ", ".join(f"{r['qtype']} {r['threads']}t {pct(r['plexus_fraction_of_bandwidth']).strip()}" for r in dec))
    pre = [r for r in table if r["cell"].startswith("pp") and r["file"] == "llama.cpp's"]
    if pre:
        print("targets (issue 40), prefill on llama.cpp's files: plexus >= 0.9x llama.cpp: "
              + ", ".join(f"{r['qtype']} {r['threads']}t {r['cell']} {r['ratio']:.2f}x" for r in pre))
    if table:
        worst = max(table, key=lambda r: r["plexus_rss_over_file"] if r["plexus_rss_over_file"] == r["plexus_rss_over_file"] else 0)
        print(f"peak memory <= file + 10%: plexus's largest {worst['plexus_rss_over_file']:.2f}x of the file "
              f"({worst['qtype']} {worst['file']} {worst['threads']}t {worst['cell']})")
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump({"machine": a.machine, "files": files,
                       "read_bandwidth_gb_s": {t: v for t, v in bandwidth.items()}, "cells": table}, f, indent=1)
    if a.csv:
        fields = [k for k in table[0] if not k.endswith("_runs")] + ["bytes_per_token", "plexus_fraction_of_bandwidth",
                                                                    "llama_cpp_fraction_of_bandwidth"] if table else []
        fields = list(dict.fromkeys(fields))
        with open(a.csv, "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
            w.writeheader()
            w.writerows(table)
    if a.json or a.csv:
        print("written: " + " ".join(x for x in (a.json, a.csv) if x))


if __name__ == "__main__":
    main()
