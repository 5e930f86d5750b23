#!/usr/bin/env python3
"""Writes the benchmark's 1 MiB English text: the English prose excerpts (Moby Dick, State of the
Union) of the golden tokenizer cases, in a fixed order, repeated. usage: make_text.py TOKENIZERS_DIR OUT (tests/data/golden/tokenizers)"""
import json
import sys


def main():
    tokenizers, out = sys.argv[1], sys.argv[2]
    texts = []
    for name in ("qwen3", "llama3", "mistral"):
        with open(f"{tokenizers}/{name}/cases.jsonl", encoding="utf-8") as f:
            for line in f:
                t = json.loads(line)["text"]
                prose_share = sum(c.isalpha() or c == " " for c in t) / max(len(t), 1)
                if len(t.split()) >= 30 and prose_share >= 0.88 and t not in texts:
                    texts.append(t)
    if not texts:
        sys.exit("make_text.py: no English excerpts found under " + tokenizers)
    size = 1 << 20
    parts, total, i = [], 0, 0
    while total < size:
        parts.append(texts[i % len(texts)])
        total += len(parts[-1].encode("utf-8")) + 2
        i += 1
    data = "\n\n".join(parts).encode("utf-8")[:size].decode("utf-8", "ignore")
    with open(out, "w", encoding="utf-8") as f:
        f.write(data)
    print(f"make_text.py: {out}: {len(data.encode('utf-8'))} bytes from {len(texts)} excerpts", file=sys.stderr)


if __name__ == "__main__":
    main()
