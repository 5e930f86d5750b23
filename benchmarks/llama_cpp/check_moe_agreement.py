#!/usr/bin/env python3
"""Checks that llama.cpp runs plexus's GGUF files of mixture-of-experts models as plexus runs them:
tiny random Mixtral and Qwen3-MoE checkpoints (f32, every Qwen3-MoE layer sparse, as llama.cpp's
qwen3moe wants) and a dense Qwen3 for reference, given the Mistral tokenizer (tests/golden) and
written by `plexus quantize --type F32`, are scored by `llama-perplexity` and by `plexus perplexity --ids` on the token ids
`llama-tokenize` gives for the same text.

Per token: llama-perplexity with a context of 4 scores one token per chunk (the 4th, after BOS
and two tokens); `--ppl-output-type 1` prints the running mean NLL after each chunk, so chunk k's
NLL is k·mean_k − (k−1)·mean_{k−1} (printed to 6 decimals: ~1e-5 of rounding over 48 chunks).
plexus scores the same 4 ids per chunk. This per-token figure is reported, not judged: the dense
Qwen3 reference (an architecture check_agreement.py passes) shows ~2e-3 there too, so it measures
llama.cpp's short-context runs as much as the models. Judged: the mean NLL of the scored half of
each of 6 chunks of 128 tokens, as check_agreement.py, within 1e-3 (issue 35's target).

The same check takes the dense families plexus writes in llama.cpp's own architectures (--archs):
gemma2, gemma3, phi3 and gpt2 (tiny make-model checkpoints, f32, given what llama.cpp derives
rather than reads: query_pre_attn_scalar = head_dim, gemma3's every-6th-layer pattern, the
tokenizer's bos/eos ids; FAMILY_PATCHES).

usage: check_moe_agreement.py --plexus PLEXUS --bin LLAMA_CPP_BIN_DIR --tokenizer DIR --work DIR [--archs A,B,...]
"""
import argparse
import json
import os
import re
import shutil
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_agreement import text_bytes  # noqa: E402

TOLERANCE = 1e-3
CHUNKS = 48
N_CTX = 128
LONG_CHUNKS = 6
ARCHS = ("mixtral", "qwen3-moe", "qwen3", "gemma2", "gemma3", "phi3", "gpt2")
# config.json fields set before writing, so that llama.cpp's derivations (docs/cli.md, "Gemma, Phi-3
# and GPT-2 in GGUF") give the model plexus runs: the tiny Gemmas' query_pre_attn_scalar 24 and
# gemma3's period of 3 are not what llama.cpp derives; GPT-2's bos/eos are the vocabulary's last id.
FAMILY_PATCHES = {
    "gemma2": {"query_pre_attn_scalar": 16},
    "gemma3": {"query_pre_attn_scalar": 16, "layer_types": None, "sliding_window_pattern": 6},
    "gpt2": {"bos_token_id": 1, "eos_token_id": 2},
}


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"check_moe_agreement: {' '.join(cmd)} failed (exit {r.returncode}):\n{r.stderr[-3000:]}")
    return r.stdout + r.stderr


def llama_ppl(bin_dir, gguf, text_path, n_ctx, chunks):
    """Running mean NLLs after each chunk (llama-perplexity --ppl-output-type 1). llama.cpp's
    asynchronous logger now and then loses its last lines at exit: up to 5 tries."""
    for _ in range(5):
        out = run([os.path.join(bin_dir, "llama-perplexity"), "-m", gguf, "-f", text_path, "-c", str(n_ctx), "-b", str(n_ctx),
                   "--chunks", str(chunks), "-t", "2", "-ctk", "f32", "-ctv", "f32", "--ppl-output-type", "1"])
        means = [float(m.group(1)) for m in re.finditer(r"^\s*\d+\s+[0-9.]+\s+([0-9.]+)\s+\S+\s*$", out, re.M)]
        if len(means) == chunks:
            return means
    sys.exit(f"check_moe_agreement: llama-perplexity on {gguf} printed {len(means)} chunk lines, expected {chunks}:\n{out[-3000:]}")


def plexus_nll(plexus, model, ids):
    out = run([plexus, "perplexity", model, "--ids", ",".join(map(str, ids)), "--json", "--threads", "2"])
    return json.loads(out[:out.rindex("}") + 1])["nll"]


def all_sparse(src, cfg):
    """The preset's dense layers given layer 0's router and experts instead (the same weights)."""
    path = os.path.join(src, "model.safetensors")
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    tensors = {k: data[v["data_offsets"][0]:v["data_offsets"][1]] for k, v in header.items() if k != "__metadata__"}
    shapes = {k: v["shape"] for k, v in header.items() if k != "__metadata__"}
    for layer in range(cfg["num_hidden_layers"]):
        dense = f"model.layers.{layer}.mlp.gate_proj.weight"
        if dense not in tensors:
            continue
        for part in ("gate_proj", "up_proj", "down_proj"):
            del tensors[f"model.layers.{layer}.mlp.{part}.weight"], shapes[f"model.layers.{layer}.mlp.{part}.weight"]
        for name in [k for k in tensors if k.startswith("model.layers.0.mlp.")]:
            to = name.replace("model.layers.0.", f"model.layers.{layer}.", 1)
            tensors[to], shapes[to] = tensors[name], shapes[name]
    out, offset = {}, 0
    for k in tensors:
        out[k] = {"dtype": "F32", "shape": shapes[k], "data_offsets": [offset, offset + len(tensors[k])]}
        offset += len(tensors[k])
    head = json.dumps(out).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head + b"".join(tensors.values()))
    with open(os.path.join(src, "config.json"), "w", encoding="utf-8") as f:
        json.dump(cfg, f, indent=2)


def check(args, arch, text_path):
    src = os.path.join(args.work, arch)
    run([args.plexus, "make-model", src, "--arch", arch, "--dtype", "f32", "--std", "0.1", "--seed", "3", "--force"])
    cfg_path = os.path.join(src, "config.json")
    with open(cfg_path, encoding="utf-8") as f:
        cfg = json.load(f)
    if cfg.pop("mlp_only_layers", None):  # llama.cpp's qwen3moe has experts in every layer
        all_sparse(src, cfg)
    if arch in FAMILY_PATCHES:
        cfg.update(FAMILY_PATCHES[arch])
        with open(cfg_path, "w", encoding="utf-8") as f:
            json.dump(cfg, f, indent=2)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(args.tokenizer, name), os.path.join(src, name))
    gguf = src + "-f32.gguf"
    # general.name without "phi3": llama.cpp sets attributes on Phi-3's own special tokens
    # (<|endoftext|>) for a model so named, which the Mistral vocabulary does not have.
    run([args.plexus, "quantize", src, gguf, "--type", "F32", "--force", "--name", "tiny-" + arch.replace("phi3", "phi-three")])
    ids = json.loads(run([os.path.join(args.bin, "llama-tokenize"), "-m", gguf, "-f", text_path, "--ids", "--log-disable"])
                     .strip().splitlines()[-1])
    bos = cfg.get("bos_token_id", 1)
    worst_token = 0.0
    means = llama_ppl(args.bin, gguf, text_path, 4, CHUNKS)
    for k in range(CHUNKS):
        theirs = (k + 1) * means[k] - k * (means[k - 1] if k else 0.0)
        ours = plexus_nll(args.plexus, gguf, [bos] + ids[4 * k + 1:4 * k + 4])[2]
        worst_token = max(worst_token, abs(ours - theirs))
    worst_chunk = 0.0
    means = llama_ppl(args.bin, gguf, text_path, N_CTX, LONG_CHUNKS)
    for k in range(LONG_CHUNKS):
        theirs = (k + 1) * means[k] - k * (means[k - 1] if k else 0.0)
        nll = plexus_nll(args.plexus, gguf, [bos] + ids[N_CTX * k + 1:N_CTX * (k + 1)])
        worst_chunk = max(worst_chunk, abs(sum(nll[N_CTX // 2:N_CTX - 1]) / (N_CTX // 2 - 1) - theirs))
    ok = worst_chunk <= TOLERANCE
    print(f"  {arch:<10} per token ({CHUNKS} tokens, context 4): max |diff| {worst_token:.2e}; "
          f"mean of each {N_CTX}-token chunk ({LONG_CHUNKS}): max |diff| {worst_chunk:.2e}: {'ok' if ok else 'FAILED'}")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    ap.add_argument("--plexus", required=True)
    ap.add_argument("--bin", required=True, help="llama.cpp's build/bin (setup_peer.sh)")
    ap.add_argument("--tokenizer", required=True, help="a directory with tokenizer.json and tokenizer_config.json (32000 tokens)")
    ap.add_argument("--work", required=True)
    ap.add_argument("--archs", default="mixtral,qwen3-moe,qwen3", help=f"comma-separated, of {', '.join(ARCHS)}")
    args = ap.parse_args()
    archs = args.archs.split(",")
    for a in archs:
        if a not in ARCHS:
            ap.error(f"--archs: unknown architecture '{a}' (one of {', '.join(ARCHS)})")
    os.makedirs(args.work, exist_ok=True)
    text_path = os.path.join(args.work, "text.txt")
    with open(text_path, "wb") as f:
        f.write(text_bytes(8192))
    print("agreement on plexus's GGUF files, plexus perplexity vs llama-perplexity (f32, NLL in nats)")
    ok = all([check(args, arch, text_path) for arch in archs])
    if not ok:
        sys.exit(f"check_moe_agreement: a difference exceeds {TOLERANCE}")


if __name__ == "__main__":
    main()
