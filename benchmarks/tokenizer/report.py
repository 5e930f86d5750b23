#!/usr/bin/env python3
"""Prints the tokenizer benchmark table from plexus.jsonl and hf.jsonl (either may be empty).
usage: report.py PLEXUS_JSONL HF_JSONL"""
import json
import sys


def load(path):
    with open(path, encoding="utf-8") as f:
        return {r["tokenizer"]: r for r in (json.loads(line) for line in f if line.strip())}


def main():
    ours, peer = load(sys.argv[1]), load(sys.argv[2])
    print("tokenizer encode, 1 MiB English text, one thread (median of runs, MB = 1e6 bytes)")
    print(f"{'tokenizer':<10} {'input':<11} {'plexus MB/s':>12} {'HF tokenizers MB/s':>19} {'plexus/HF':>10} {'tokens':>8}  same ids")
    for name, r in ours.items():
        p = peer.get(name)
        for mode, key, tokens in (("whole text", "mb_per_s_median", "tokens"),
                                  ("paragraphs", "paragraphs_mb_per_s_median", "paragraph_tokens")):
            hf = f"{p[key]:.2f}" if p else "n/a"
            ratio = f"{r[key] / p[key]:.2f}x" if p else "n/a"
            if not p:
                same = "n/a"
            elif mode == "whole text":
                same = "yes" if p["ids_hash"] == r["ids_hash"] and p["tokens"] == r["tokens"] else "NO"
            else:
                same = "yes (count)" if p[tokens] == r[tokens] else "NO"
            print(f"{name:<10} {mode:<11} {r[key]:>12.2f} {hf:>19} {ratio:>10} {r[tokens]:>8}  {same}")


if __name__ == "__main__":
    main()
