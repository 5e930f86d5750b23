#!/usr/bin/env python3
"""Tokens/s of `plexus generate` with tensor parallelism on virtual CPU devices (--tp N implies N
of them; TP 1 runs on --virtual-devices 1), with the communication share of each token
(execution.communication of --json).

Usage: benchmarks/comm/tp_tokens.py PLEXUS MODEL [--tp 1,2,4] [--prompt 16] [--tokens 32]
                                    [--repeats 3] [--threads 0] [--wait passive] [--json]
Each TP size runs `--repeats` times; the row is the median run by decode tokens/s. Greedy ids
are compared with TP 1's (they must agree: the split changes no result beyond rounding).
"""
import argparse
import json
import statistics
import subprocess
import sys


def run(plexus, model, tp, prompt, tokens, threads, wait):
    ids = ",".join(str((t * 131 + 7) % 30000 + 10) for t in range(prompt))
    cmd = [plexus, "generate", model, "--ids", ids, "--max-tokens", str(tokens), "--ignore-eos", "--json",
           "--threads", str(threads), "--wait", wait]
    # Every size on virtual devices (TP 1 on one), so all load and compute the same way: a run
    # without device flags would instead read the weights in place from the checkpoint.
    cmd += ["--virtual-devices", "1"] if tp == 1 else ["--tp", str(tp)]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {out.returncode}\n{out.stderr}")
    return json.loads(out.stdout), " ".join(cmd)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("plexus")
    p.add_argument("model")
    p.add_argument("--tp", default="1,2,4")
    p.add_argument("--prompt", type=int, default=16)
    p.add_argument("--tokens", type=int, default=32)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--wait", default="passive", help="the pools' wait policy (passive: fair on a busy machine)")
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    sizes = [int(x) for x in a.tp.split(",")]
    rows, reference = [], None
    for tp in sizes:
        runs = [run(a.plexus, a.model, tp, a.prompt, a.tokens, a.threads, a.wait) for _ in range(a.repeats)]
        runs.sort(key=lambda r: r[0]["decode_tokens_per_s"])
        j, cmd = runs[len(runs) // 2]
        comm = j["execution"].get("communication") if isinstance(j.get("execution"), dict) else None
        if reference is None:
            reference = j["ids"]
        rows.append({
            "tp": tp, "command": cmd,
            "decode_tokens_per_s": j["decode_tokens_per_s"], "prefill_tokens_per_s": j["prefill_tokens_per_s"],
            "decode_all": [r[0]["decode_tokens_per_s"] for r in runs],
            "threads": j["threads"],
            "comm_bytes_per_token": comm["bytes_per_token"] if comm else 0,
            "comm_ms_per_token": comm["seconds_per_token"] * 1e3 if comm else 0,
            "comm_share": comm["share_of_forward_time"] if comm else 0,
            "all_reduce_calls": comm["collectives"]["all_reduce"]["calls"] if comm else 0,
            "ids_equal_tp1": j["ids"] == reference,
        })
    if a.json:
        print(json.dumps(rows, indent=1))
        return
    base = rows[0]["decode_tokens_per_s"]
    print(f"plexus generate on {a.model}: {a.prompt} prompt + {a.tokens} new tokens, greedy, --wait {a.wait}, median of "
          f"{a.repeats} runs by decode tok/s; comm = the collectives of one rank per token (execution.communication)")
    print(f"{'tp':>3} {'threads':>7} {'decode tok/s':>12} {'vs tp 1':>8} {'prefill tok/s':>13} {'comm KiB/tok':>12} "
          f"{'comm ms/tok':>11} {'comm share':>10} {'ids = tp 1':>10}")
    for r in rows:
        print(f"{r['tp']:>3} {r['threads']:>7} {r['decode_tokens_per_s']:>12.2f} {r['decode_tokens_per_s'] / base:>8.2f} "
              f"{r['prefill_tokens_per_s']:>13.1f} {r['comm_bytes_per_token'] / 1024:>12.2f} {r['comm_ms_per_token']:>11.3f} "
              f"{100 * r['comm_share']:>9.1f}% {str(r['ids_equal_tp1']):>10}")
    for r in rows:
        print(f"  tp {r['tp']}: {r['command']}  (decode tok/s of the runs: "
              + ", ".join(f"{x:.2f}" for x in r["decode_all"]) + ")")


if __name__ == "__main__":
    main()
