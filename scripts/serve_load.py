#!/usr/bin/env python3
"""Load for a running `plexus serve` from Python's standard library alone (for machines without
Node.js, such as the GPU machine of scripts/gpu-check-serve.sh): C concurrent clients, each
sending R streaming completions one after another, greedy, exactly max_tokens T each (ignore_eos). Prints one JSON line:
requests, generated tokens, wall seconds, aggregate tokens/s, the median TTFT and the sum of
usage.energy_j over the requests (with stream_options.include_usage).

  scripts/serve_load.py --url http://127.0.0.1:8080 --clients 16 --requests 4 --max-tokens 64
"""
import argparse
import http.client
import json
import statistics
import sys
import threading
import time
import urllib.parse


def stream_completion(host, port, model, prompt, max_tokens, api_key):
    body = json.dumps({"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0,
                       "stream": True, "stream_options": {"include_usage": True}, "ignore_eos": True})
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = "Bearer " + api_key
    conn = http.client.HTTPConnection(host, port, timeout=600)
    t0 = time.perf_counter()
    conn.request("POST", "/v1/completions", body, headers)
    resp = conn.getresponse()
    if resp.status != 200:
        raise RuntimeError(f"HTTP {resp.status}: {resp.read()[:300]!r}")
    ttft, usage, done, text = None, None, False, ""
    for raw in resp:
        line = raw.decode("utf-8").strip()
        if not line.startswith("data: "):
            continue
        data = line[6:]
        if data == "[DONE]":
            done = True
            break
        chunk = json.loads(data)
        if chunk.get("choices"):
            if ttft is None:
                ttft = time.perf_counter() - t0
            text += chunk["choices"][0].get("text", "")
        if chunk.get("usage"):
            usage = chunk["usage"]
    conn.close()
    if not done or usage is None:
        raise RuntimeError("stream ended without usage and [DONE]")
    return {"ttft_s": ttft or 0.0, "usage": usage, "text": text}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--model", default="")
    ap.add_argument("--clients", type=int, default=1)
    ap.add_argument("--requests", type=int, default=4, help="requests per client")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--api-key", default="")
    a = ap.parse_args()
    u = urllib.parse.urlparse(a.url)
    host, port = u.hostname, u.port or 80
    model = a.model
    if not model:
        conn = http.client.HTTPConnection(host, port, timeout=60)
        conn.request("GET", "/v1/models", headers={"Authorization": "Bearer " + a.api_key} if a.api_key else {})
        model = json.loads(conn.getresponse().read())["data"][0]["id"]
        conn.close()
    results, errors, lock = [], [], threading.Lock()

    def client(c):
        for r in range(a.requests):
            prompt = f"Client {c} request {r}: tell me about the number {c * 1000 + r}."
            try:
                out = stream_completion(host, port, model, prompt, a.max_tokens, a.api_key)
                with lock:
                    results.append(out)
            except Exception as e:  # noqa: BLE001 - reported in the summary
                with lock:
                    errors.append(str(e))

    t0 = time.perf_counter()
    threads = [threading.Thread(target=client, args=(c,)) for c in range(a.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    tokens = sum(r["usage"]["completion_tokens"] for r in results)
    energy = [r["usage"].get("energy_j") for r in results]
    summary = {
        "clients": a.clients, "requests": len(results), "errors": len(errors), "first_error": errors[0] if errors else None,
        "generated_tokens": tokens, "wall_s": round(wall, 3), "tokens_per_s": round(tokens / wall, 2) if wall > 0 else 0,
        "median_ttft_ms": round(1000 * statistics.median(r["ttft_s"] for r in results), 2) if results else None,
        "energy_j_sum": round(sum(e for e in energy if e is not None), 3) if any(e is not None for e in energy) else None,
    }
    print(json.dumps(summary), flush=True)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
