#!/usr/bin/env python3
"""Time to first token with a shared long prompt, with and without prefix caching (issue 36).

Starts `plexus serve` twice on the same model and threads — with the prefix cache (the default)
and with --no-prefix-cache — and sends each, one at a time, REQUESTS completions whose prompts
(token ids) share a PREFIX-token start and end with 16 tokens of their own, after one warm-up
request with the shared start alone. Each request asks for one token (max_tokens 1, greedy), so
its wall time is its time to first token. Prints the median TTFT of each server, the ratio, and
whether the two servers answered the same tokens; writes OUT/prefix_cache.json.

usage: benchmarks/serve/prefix_cache_bench.py [--build DIR] [--model DIR] [--prefix N] [--requests N]
       [--threads N] [--out DIR]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.loads(r.read())


def start(plexus, model, threads, ctx, extra, log_path):
    log = open(log_path, "w")
    p = subprocess.Popen([plexus, "serve", model, "--port", "0", "--threads", str(threads), "--context", str(ctx),
                          "--max-sequences", "2", *extra], stderr=log, stdout=log)
    port = None
    for _ in range(3000):
        if p.poll() is not None:
            sys.exit(f"prefix_cache_bench: plexus serve exited:\n{open(log_path).read()}")
        m = re.search(r"listening on http://[^:]+:(\d+)", open(log_path).read())
        if m:
            port = m.group(1)
            break
        time.sleep(0.1)
    if port is None:
        p.kill()
        sys.exit(f"prefix_cache_bench: plexus serve did not come up:\n{open(log_path).read()}")
    return p, f"http://127.0.0.1:{port}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(REPO, "build"))
    ap.add_argument("--model", default=os.path.join(REPO, "models", "serve-bench-small"))
    ap.add_argument("--prefix", type=int, default=2000)
    ap.add_argument("--requests", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=os.path.join(REPO, "bench-results", "serve"))
    a = ap.parse_args()
    plexus = os.path.join(a.build, "plexus")
    if not os.access(plexus, os.X_OK):
        sys.exit(f"prefix_cache_bench: {plexus} not found: build plexus first")
    if not os.path.exists(os.path.join(a.model, "config.json")):
        subprocess.run([plexus, "make-model", a.model, "--preset", "small", "--tokenizer",
                        os.path.join(REPO, "tests", "data", "golden", "tokenizers", "mistral"), "--force"], check=True)
    os.makedirs(a.out, exist_ok=True)
    # Ids 100.. of the vocabulary (no special tokens), a fixed pseudo-random walk.
    shared = [100 + (i * 7919) % 20000 for i in range(a.prefix)]
    prompts = [shared + [100 + (j * 131 + i * 17) % 20000 for i in range(16)] for j in range(a.requests)]
    ctx = a.prefix + 64
    results = {}
    for name, extra in (("cached", []), ("uncached", ["--no-prefix-cache"])):
        proc, url = start(plexus, a.model, a.threads, ctx, extra, os.path.join(a.out, f"prefix_cache_{name}.log"))
        try:
            post(url + "/v1/completions", {"prompt": shared, "max_tokens": 1, "temperature": 0})  # warm-up / fill
            ttft, tokens = [], []
            for p in prompts:
                t0 = time.perf_counter()
                r = post(url + "/v1/completions", {"prompt": p, "max_tokens": 1, "temperature": 0})
                ttft.append(time.perf_counter() - t0)
                tokens.append(r["choices"][0]["text"])
            metrics = urllib.request.urlopen(url + "/metrics", timeout=60).read().decode()
            hits = re.search(r"^plexus_prefix_cache_hit_tokens_total (\d+)", metrics, re.M)
            results[name] = {"ttft_s": ttft, "median_ttft_s": statistics.median(ttft), "texts": tokens,
                             "hit_tokens": int(hits.group(1)) if hits else None}
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    ratio = results["uncached"]["median_ttft_s"] / results["cached"]["median_ttft_s"]
    same = results["uncached"]["texts"] == results["cached"]["texts"]
    summary = {"prefix_tokens": a.prefix, "requests": a.requests, "threads": a.threads, "model": a.model,
               "cached": results["cached"], "uncached": results["uncached"], "ttft_ratio": ratio, "same_outputs": same}
    with open(os.path.join(a.out, "prefix_cache.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(f"shared prefix {a.prefix} tokens, {a.requests} requests, {a.threads} threads")
    print(f"median TTFT without the cache: {results['uncached']['median_ttft_s'] * 1000:.1f} ms")
    print(f"median TTFT with the cache:    {results['cached']['median_ttft_s'] * 1000:.1f} ms "
          f"({results['cached']['hit_tokens']} prompt tokens copied)")
    print(f"ratio: {ratio:.1f}x; same outputs: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
