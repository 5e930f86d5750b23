#!/usr/bin/env python3
"""Checks that llama.cpp runs a hf_to_gguf.py conversion as plexus runs the checkpoint: the same
text scored by `llama-perplexity` (one chunk of 128 tokens, f32 KV cache; it scores the second
half of the chunk) and by `plexus perplexity --ids` on the same token ids (BOS + one token per
byte in the converter's synthetic vocabulary) must give the same mean NLL over the same tokens.

Models: each benchmark checkpoint given, and controls made here (the tiny preset, f32 and bf16,
with larger random weights, so attention is sharp and the rope layout of q and k matters),
converted correctly (must agree); the f32 control converted once more without the q/k row
permutation must disagree, showing the check can fail. Exits 1 on a failed check.

usage: check_agreement.py --plexus PLEXUS --perplexity LLAMA_PERPLEXITY --work DIR MODEL_DIR:GGUF...
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_to_gguf  # noqa: E402

N_CTX = 128
# Mean-NLL tolerance (nats): the two differ in summation order (and llama.cpp may round bf16
# models' activations to bf16 before its dot products, plexus keeps them f32).
TOLERANCE = {"F32": 1e-3, "BF16": 5e-3}
# The controls' weights: large enough for sharp attention, small enough that rounding differences
# stay small (at 0.1 a correct conversion agrees to ~4e-5, a wrong rope layout is off by ~4e-2).
CONTROL_STD = 0.1
CONTROL_MIN_GAP = 1e-2  # a wrong rope layout must move the control's mean NLL by at least this


def text_bytes(n):
    """n bytes of lowercase pseudo-words, the same every run."""
    s, words, out = 7, "", bytearray()
    while len(out) < n:
        s = (s * 1103515245 + 12345) % (1 << 31)
        length = 2 + s % 7
        for _ in range(length):
            s = (s * 1103515245 + 12345) % (1 << 31)
            out.append(ord("a") + s % 26)
        out.append(ord(" ") if s % 5 else ord("\n"))
    return bytes(out[:n])


def llama_mean_nll(perplexity, gguf, text_path):
    # llama.cpp's asynchronous logger now and then loses its last lines at exit (the final
    # estimate among them): up to 5 tries.
    for _ in range(5):
        r = subprocess.run([perplexity, "-m", gguf, "-f", text_path, "-c", str(N_CTX), "-b", str(N_CTX), "--chunks", "1",
                            "-t", "2", "-ctk", "f32", "-ctv", "f32"], capture_output=True, text=True)
        if r.returncode != 0:
            break
        m = re.search(r"Final estimate: PPL = ([0-9.]+)", r.stdout + r.stderr)
        if m:
            return math.log(float(m.group(1)))
    sys.exit(f"check_agreement: {perplexity} on {gguf} gave no final estimate (exit {r.returncode}):\n{r.stderr[-2000:]}")


def plexus_mean_nll(plexus, model_dir, ids):
    r = subprocess.run([plexus, "perplexity", model_dir, "--ids", ",".join(map(str, ids)), "--json", "--threads", "2",
                        "--context", str(N_CTX)], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"check_agreement: plexus perplexity {model_dir} failed (exit {r.returncode}):\n{r.stderr[-2000:]}")
    nll = json.loads(r.stdout)["nll"]  # nll[i]: token i+1 given tokens 0..i
    scored = nll[N_CTX // 2:N_CTX - 1]  # what llama-perplexity scores: logits at n_ctx/2 .. n_ctx-2
    return sum(scored) / len(scored)


def compare(args, model_dir, gguf, text, text_path):
    with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    byte_ids = hf_to_gguf.byte_token_ids(cfg)
    ids = [hf_to_gguf.special_ids(cfg)["bos"]] + [byte_ids[b] for b in text[:N_CTX - 1]]
    return plexus_mean_nll(args.plexus, model_dir, ids), llama_mean_nll(args.perplexity, gguf, text_path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    ap.add_argument("--plexus", required=True)
    ap.add_argument("--perplexity", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("models", nargs="+", metavar="MODEL_DIR:GGUF")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    text = text_bytes(2 * N_CTX + 64)
    text_path = os.path.join(args.work, "text.txt")
    with open(text_path, "wb") as f:
        f.write(text)

    ok = True
    print(f"agreement, plexus perplexity vs llama-perplexity: mean NLL (nats) of tokens {N_CTX // 2 + 1}..{N_CTX - 1} "
          f"of a {N_CTX}-token text")
    pairs = [m.rsplit(":", 1) for m in args.models]
    controls = {}
    for dtype in ("f32", "bf16"):
        controls[dtype] = os.path.join(args.work, f"control-tiny-{dtype}")
        if not os.path.exists(os.path.join(controls[dtype], "config.json")):
            subprocess.run([args.plexus, "make-model", controls[dtype], "--preset", "tiny", "--dtype", dtype,
                            "--std", str(CONTROL_STD), "--seed", "3"], check=True, stdout=subprocess.DEVNULL)
        pairs.append((controls[dtype], controls[dtype] + ".gguf"))
        hf_to_gguf.convert(controls[dtype], controls[dtype] + ".gguf")
    wrong = os.path.join(args.work, "control-tiny-f32-no-rope-permutation.gguf")
    hf_to_gguf.convert(controls["f32"], wrong, permute_rope=False)
    for model_dir, gguf in pairs:
        with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
            dtype = "BF16" if json.load(f).get("torch_dtype") == "bfloat16" else "F32"
        ours, theirs = compare(args, model_dir, gguf, text, text_path)
        good = abs(ours - theirs) <= TOLERANCE[dtype]
        ok &= good
        print(f"  {os.path.basename(model_dir):<18} {dtype:<5} plexus {ours:.6f}  llama.cpp {theirs:.6f}  "
              f"|diff| {abs(ours - theirs):.2e} <= {TOLERANCE[dtype]:.0e}: {'ok' if good else 'FAILED'}")
    ours, theirs = compare(args, controls["f32"], wrong, text, text_path)
    good = abs(ours - theirs) >= CONTROL_MIN_GAP
    ok &= good
    print(f"  control, q/k rows not permuted (must disagree): plexus {ours:.6f}  llama.cpp {theirs:.6f}  "
          f"|diff| {abs(ours - theirs):.2e} >= {CONTROL_MIN_GAP}: {'ok' if good else 'FAILED'}")
    if not ok:
        sys.exit("check_agreement: llama.cpp does not run the converted model as plexus runs the checkpoint")


if __name__ == "__main__":
    main()
