#!/usr/bin/env python3
"""The one table of scripts/gpu-check.sh, from the JSON files in its results directory:
metric, plexus, peer or ceiling, ratio, target, result. Prints it as text, writes table.md and
summary.json beside the inputs; exit status 1 when a target is missed. Missing or failed parts show as "-" and "no data" (a target whose
measurement is missing fails: nothing is passed for want of data)."""
import json
import os
import sys


def load(results, name):
    try:
        with open(os.path.join(results, name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def get(d, *keys):
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


def fmt(v, digits=1):
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    return f"{v:.{digits}f}"


def leading_agreement(a, b):
    if not a or not b:
        return None
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def rows(results):
    out = []

    def row(metric, plexus, peer, ratio, target=None, minimum=None, digits=1):
        if minimum is None:
            verdict = "info"
        elif ratio is None:
            verdict = "FAIL (no data)"
        else:
            verdict = "pass" if ratio >= minimum else "FAIL"
        out.append({"metric": metric, "plexus": plexus, "peer": peer, "ratio": ratio, "target": target,
                    "result": verdict, "digits": digits})

    tests = load(results, "gpu-tests.json")
    if tests:
        ok = tests.get("failed", 1) == 0 and tests.get("passed", 0) > 0
        out.append({"metric": "GPU tests (ctest label gpu)",
                    "plexus": f"{tests.get('passed', 0)} passed, {tests.get('failed', 0)} failed, {tests.get('skipped', 0)} skipped",
                    "peer": None, "ratio": None, "target": "all pass", "result": "pass" if ok else "FAIL", "digits": 0})
    for size, speedup in (("1b", 3.0), ("8b", 1.5)):
        b = load(results, f"gpu_bench-{size}.json")
        hf = load(results, f"hf-{size}.json")
        name = "Llama-3.2-1B" if size == "1b" else "Llama-3.1-8B"
        p_e2e, h_tps = get(b, "decode", "e2e_tokens_per_s"), get(hf, "tokens_per_s")
        row(f"{name} decode b1 tokens/s vs HF generate", p_e2e, h_tps, p_e2e / h_tps if p_e2e and h_tps else None,
            f">= {speedup}x", speedup)
        p_dec, h_dec = get(b, "decode", "decode_tokens_per_s"), get(hf, "decode_tokens_per_s")
        row(f"{name} decode-only tokens/s vs HF", p_dec, h_dec, p_dec / h_dec if p_dec and h_dec else None)
        copy = get(b, "ceilings", "copy_gbps")
        # Issue 33's targets: 8B >= 0.85 of the copy bandwidth at batch 1, 1B >= 0.65.
        share = 0.85 if size == "8b" else 0.65
        row(f"{name} decode b1 GB/s of weights vs D2D copy GB/s",
            p_dec * b["bytes_per_token"] / 1e9 if p_dec and b.get("bytes_per_token") else None, copy,
            get(b, "decode", "hbm_fraction"), f">= {share}", share, 0)
        row(f"{name} prefill {get(b, 'prefill', 'tokens') or 2048} TFLOP/s vs cuBLAS bf16 (model shapes)", get(b, "prefill", "tflops"),
            get(b, "ceilings", "gemm_model_tflops"), get(b, "prefill", "gemm_fraction"), ">= 0.60", 0.60)
        for one in b.get("batched") or []:
            # tokens/s against the read ceiling: the weights and every sequence's KV once per step
            # at the copy bandwidth (issue 33: the 8B at 64 sequences >= 0.50 of it).
            target = size == "8b" and one.get("batch") == 64
            row(f"{name} batched decode {one.get('batch')} seqs tokens/s vs weight+KV read ceiling",
                one.get("decode_tokens_per_s"), one.get("read_ceiling_tokens_per_s"), one.get("read_fraction"),
                ">= 0.50" if target else None, 0.50 if target else None)
        pj, hj = get(b, "decode", "joules_per_token"), get(hf, "joules_per_token")
        row(f"{name} J/token b1 (NVML) vs HF (ratio HF/plexus)", pj, hj, hj / pj if pj and hj else None, digits=3)
    v2 = load(results, "gpu_bench-1b-vgpu2.json")
    if v2:
        one = get(v2, "decode", "decode_tokens_per_s")
        row("Llama-3.2-1B decode b1 tokens/s, 2 virtual GPUs vs 1 GPU", one,
            get(load(results, "gpu_bench-1b.json"), "decode", "decode_tokens_per_s"), None)
        for b in v2.get("batched") or []:
            row(f"Llama-3.2-1B batched decode {b.get('batch')} seqs tokens/s, 2 virtual GPUs", b.get("decode_tokens_per_s"), None, None)
    gen = load(results, "generate-1b.json")
    hf1 = load(results, "hf-1b.json")
    if gen:
        energy = get(gen, "monitor", "aggregate", "total_energy_j")
        tokens = gen.get("completion_tokens")
        jpt = get(gen, "energy", "j_per_token") or (energy / tokens if energy and tokens else None)
        row("Llama-3.2-1B `plexus generate --devices 0` J/token (its energy section)", jpt,
            get(hf1, "joules_per_token"), None, digits=3)
        agree = leading_agreement(gen.get("ids"), hf1.get("ids"))
        out.append({"metric": "Llama-3.2-1B greedy tokens equal to HF's before the first difference",
                    "plexus": agree, "peer": len(hf1.get("ids") or []) or None, "ratio": None, "target": None,
                    "result": "info", "digits": 0})
    return out


def main():
    results = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(results, exist_ok=True)
    table = rows(results)
    env = load(results, "env.json")
    head = f"card: {env.get('gpu', '?')}, driver {env.get('driver', '?')}, {env.get('date', '?')}, plexus {env.get('commit', '?')}"
    cols = ("metric", "plexus", "peer/ceiling", "ratio", "target", "result")
    lines = []
    for r in table:
        d = r["digits"]
        lines.append((r["metric"], fmt(r["plexus"], d) if not isinstance(r["plexus"], int) else str(r["plexus"]),
                      fmt(r["peer"], d) if not isinstance(r["peer"], int) else str(r["peer"]),
                      fmt(r["ratio"], 3), r["target"] or "", r["result"]))
    widths = [max(len(c), *(len(l[i]) for l in lines)) if lines else len(c) for i, c in enumerate(cols)]
    text = [head, ""]
    text.append("  ".join(c.ljust(widths[i]) for i, c in enumerate(cols)))
    text.append("  ".join("-" * w for w in widths))
    for l in lines:
        text.append("  ".join(v.ljust(widths[i]) if i == 0 else v.rjust(widths[i]) for i, v in enumerate(l)))
    print("\n".join(text))
    with open(os.path.join(results, "table.md"), "w") as f:
        f.write(head + "\n\n| " + " | ".join(cols) + " |\n|" + "---|" * len(cols) + "\n")
        for l in lines:
            f.write("| " + " | ".join(v.replace("|", "\\|") for v in l) + " |\n")
    failed = [r["metric"] for r in table if r["result"].startswith("FAIL")]
    with open(os.path.join(results, "summary.json"), "w") as f:
        json.dump({"env": env, "rows": table, "failed": failed}, f, indent=2)
    print(f"\n{len(failed)} target(s) missed" + (": " + "; ".join(failed) if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
