#!/usr/bin/python3
"""Makes tests/data/gguf/mixes/: GGUF files in llama.cpp's named mixes, quantised by llama.cpp's own
llama-quantize, and cases.jsonl with each file's reference NLLs (issue 40's checks against
llama.cpp). Run by hand (Debian python3 with numpy and torch), never by the tests.

1. Two random-weight f32 checkpoints (written by tests/tools/mkmodel.py, code
   that is not plexus's): `r256`, rows of multiples of 256 (mkmodel.py's gguf-small: hidden 256, 2
   layers, 4 heads, 2 kv heads, head_dim 64, untied; intermediate 256 rather than 512 to keep the
   files small), and `r576`, rows of 576 like SmolLM-135M's (hidden 576, head_dim 64, tied
   embeddings; 1 layer, 3 heads, 1 kv head, intermediate 256 to keep the files small: q/k/v/gate/up
   rows are 576 wide as in SmolLM, down's a multiple of 256). Vocabulary 320 for both. (plexus
   make-model has no such shapes; mkmodel.py also keeps the reference independent of plexus.)
2. Each converted with hf_to_gguf.py (f32 GGUF, q/k rows permuted to llama.cpp's rope layout) and
   quantised by llama-quantize to the mixes of CASES (llama-quantize's type names; on r576 it falls
   back to Q5_0 / Q5_1 / IQ4_NL / Q8_0 for the rows a 256-block cannot cover); the IQ1/IQ2/IQ3
   mixes with an importance matrix llama-imatrix computes over a fixed text.
3. Each file dequantised INDEPENDENTLY of plexus, by llama.cpp's gguf-py (GGUFReader +
   gguf.quants.dequantize, numpy), the q/k rows permuted back, written as an f32 safetensors
   checkpoint, and run through tests/train/tools/ref_forward.py (float64, Hugging Face semantics):
   `dequant_f64_nll`, the per-token NLL of IDS.
cases.jsonl, one line per file: file, shape, mix, ids, dequant_f64_nll, tensor_types (name -> GGUF
type name, as llama-quantize chose), tensor_sums (name -> three float64 sums of gguf-py's values in
file order: w, w², w·((i mod 7) − 3); tensor_sums below).

usage: make_mix_cases.py [--peer DIR] [--out DIR] [--work DIR]
  --peer DIR  the llama.cpp peer (setup_peer.sh's folder: DIR/build/bin/llama-quantize and
              llama-imatrix, DIR/llama.cpp/gguf-py; default benchmarks/llama_cpp/peer)
  --out DIR   where the files and cases.jsonl go (default tests/data/gguf/mixes)
  --work DIR  scratch folder (default a temporary one, removed after)
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
# mkmodel.py (not plexus's code), an unmodified copy in tests/tools so a clone runs this.
TOOLS = os.path.join(REPO, "tests", "tools")
# The float64 forward (not plexus's code): tests/train's oracle, which covers the Llama shapes here.
REF_FORWARD = os.path.join(REPO, "tests", "train", "tools", "ref_forward.py")

SHAPES = {
    "r256": dict(hidden_size=256, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=64,
                 intermediate_size=256, vocab_size=320, tie_word_embeddings=False),
    "r576": dict(hidden_size=576, num_hidden_layers=1, num_attention_heads=3, num_key_value_heads=1, head_dim=64,
                 intermediate_size=256, vocab_size=320, tie_word_embeddings=True),
}
SEEDS = {"r256": 401, "r576": 402}
STD = 0.05
# (shape, llama-quantize type): every new block format at least once, the mixes the issue names on
# the shape where each matters (r576: the fallbacks; r256: the K-quants themselves).
CASES = [
    ("r256", "Q5_K_M"), ("r256", "Q3_K_M"), ("r256", "Q2_K"), ("r256", "IQ4_XS"),
    ("r576", "Q4_K_M"), ("r576", "Q5_K_M"), ("r576", "Q3_K_M"), ("r576", "IQ4_XS"), ("r576", "Q4_1"),
    # The codebook types, which llama-quantize writes only with an importance matrix: between them
    # IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S and IQ1_M.
    ("r256", "IQ2_XXS"), ("r256", "IQ2_XS"), ("r256", "IQ3_XXS"), ("r256", "IQ1_S"), ("r256", "IQ1_M"),
]
# The mixes llama-quantize refuses without an importance matrix.
NEEDS_IMATRIX = {"IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ1_M"}
IMATRIX_WORDS = ["the", "cat", "dog", "runs", "a", "big", "small", "house", "tree", "sky", "blue", "red", "green",
                 "and", "or", "of"]
# 40 fixed ids below the vocabulary (a multiplicative walk: no plexus or llama.cpp code involved).
IDS = [(7 + 97 * i * i + 31 * i) % 317 + 3 for i in range(40)]


def run(cmd, log=None):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if log:
        with open(log, "w") as f:
            f.write(r.stdout + r.stderr)
    if r.returncode != 0:
        sys.exit(f"make_mix_cases: {' '.join(cmd)} failed ({r.returncode}):\n{r.stderr[-3000:]}")
    return r.stdout


def make_checkpoint(shape, out):
    """The shape's f32 checkpoint, by mkmodel.py (its generator, our shape as a preset)."""
    sys.path.insert(0, TOOLS)
    import mkmodel  # noqa: E402  (tests/tools, unmodified)
    mkmodel.PRESETS[shape] = dict(SHAPES[shape])
    argv = sys.argv
    sys.argv = ["mkmodel.py", out, "--preset", shape, "--arch", "llama", "--dtype", "f32", "--seed", str(SEEDS[shape]),
                "--std", str(STD)]
    try:
        mkmodel.main()
    finally:
        sys.argv = argv


def write_safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for name, arr in tensors.items():
        b = np.ascontiguousarray(arr, dtype=np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(arr.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    header["__metadata__"] = {"format": "pt"}
    hj = json.dumps(header, separators=(",", ":")).encode()
    hj += b" " * ((8 - len(hj) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hj)))
        f.write(hj)
        for b in blobs:
            f.write(b)


def interleaved_rows_to_rotate_half(w, n_heads):
    """The inverse of hf_to_gguf.py's rope_rows_to_interleaved: per head, rows 2i and 2i+1 back to
    rows i and i + head_dim/2."""
    rows, cols = w.shape
    head_dim = rows // n_heads
    return w.reshape(n_heads, head_dim // 2, 2, cols).swapaxes(1, 2).reshape(rows, cols)


HF_NAMES = {"attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
            "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj", "ffn_norm": "post_attention_layernorm",
            "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}


def tensor_sums(w):
    """Three float64 sums over a tensor's values in file order (element i): w_i, w_i^2 and
    w_i·((i mod 7) − 3), so that a value, a sign or a position decoded wrongly shows."""
    v = w.reshape(-1).astype(np.float64)
    k = (np.arange(v.size) % 7 - 3).astype(np.float64)
    return [float(v.sum()), float((v * v).sum()), float((v * k).sum())]


def dequantised_checkpoint(gguf_mod, path, cfg, out):
    """path's tensors dequantised by gguf-py into an f32 Hugging Face checkpoint at out; returns
    ({gguf tensor name: GGUF type name}, {gguf tensor name: tensor_sums})."""
    reader = gguf_mod.GGUFReader(path)
    tensors, types, sums = {}, {}, {}
    for t in reader.tensors:
        types[t.name] = t.tensor_type.name
        w = np.asarray(gguf_mod.quants.dequantize(t.data, t.tensor_type), dtype=np.float32)
        shape = [int(x) for x in reversed(t.shape)]  # GGUF lists ne0 (the row) first
        w = w.reshape(shape)
        sums[t.name] = tensor_sums(w)
        parts = t.name.split(".")
        if parts[0] == "blk":
            layer, kind = parts[1], parts[2]
            if kind == "attn_q":
                w = interleaved_rows_to_rotate_half(w, cfg["num_attention_heads"])
            elif kind == "attn_k":
                w = interleaved_rows_to_rotate_half(w, cfg["num_key_value_heads"])
            name = f"model.layers.{layer}.{HF_NAMES[kind]}.weight"
        else:
            name = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
                    "output.weight": "lm_head.weight"}[t.name]
        tensors[name] = w
    os.makedirs(out, exist_ok=True)
    write_safetensors(os.path.join(out, "model.safetensors"), tensors)
    c = dict(cfg)
    c["torch_dtype"] = "float32"
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(c, f, indent=2)
    return types, sums


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--peer", default=os.path.join(HERE, "peer"))
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "data", "gguf", "mixes"))
    ap.add_argument("--work")
    a = ap.parse_args()
    quantize = os.path.join(a.peer, "build", "bin", "llama-quantize")
    imatrix_tool = os.path.join(a.peer, "build", "bin", "llama-imatrix")
    gguf_py = os.path.join(a.peer, "llama.cpp", "gguf-py")
    if not os.access(quantize, os.X_OK) or not os.access(imatrix_tool, os.X_OK) or not os.path.isdir(gguf_py):
        sys.exit(f"make_mix_cases: no {quantize}, {imatrix_tool} or {gguf_py} (run benchmarks/llama_cpp/setup_peer.sh, or --peer)")
    sys.path.insert(0, gguf_py)
    import gguf  # noqa: E402  (llama.cpp's gguf-py)

    work = a.work or tempfile.mkdtemp(prefix="mix_cases_")
    os.makedirs(a.out, exist_ok=True)
    lines = []
    try:
        for shape in SHAPES:
            ckpt = os.path.join(work, shape)
            make_checkpoint(shape, ckpt)
            run([sys.executable, os.path.join(HERE, "hf_to_gguf.py"), ckpt, os.path.join(work, shape + "-f32.gguf")])
            # An importance matrix from llama.cpp's llama-imatrix over a fixed text of words.
            text = os.path.join(work, "imatrix-text.txt")
            with open(text, "w") as f:
                f.write(" ".join(IMATRIX_WORDS[(i * i + 3 * i) % len(IMATRIX_WORDS)] for i in range(3000)))
            run([imatrix_tool, "-m", os.path.join(work, shape + "-f32.gguf"), "-f", text, "-o",
                 os.path.join(work, shape + "-imatrix.gguf"), "-c", "64", "--chunks", "8", "-t", "1"],
                os.path.join(work, shape + "-imatrix.log"))
        for shape, mix in CASES:
            name = f"{shape}-{mix.lower()}.gguf"
            dst = os.path.join(a.out, name)
            imatrix = ["--imatrix", os.path.join(work, shape + "-imatrix.gguf")] if mix in NEEDS_IMATRIX else []
            run([quantize, *imatrix, os.path.join(work, shape + "-f32.gguf"), dst, mix, "1"], os.path.join(work, name + ".log"))
            with open(os.path.join(work, shape, "config.json")) as f:
                cfg = json.load(f)
            deq = os.path.join(work, name + "-dequant")
            types, sums = dequantised_checkpoint(gguf, dst, cfg, deq)
            ref = json.loads(run([sys.executable, REF_FORWARD, deq, "--ids",
                                  ",".join(map(str, IDS))]))
            lines.append({"file": name, "shape": shape, "mix": mix, "ids": IDS,
                          "dequant_f64_nll": [round(v, 9) for v in ref["nll"]], "tensor_types": types,
                          "tensor_sums": sums})
            kinds = sorted(set(types.values()))
            print(f"{name}: {os.path.getsize(dst)} bytes, types {' '.join(kinds)}, mean NLL "
                  f"{sum(ref['nll']) / len(ref['nll']):.4f}", file=sys.stderr)
        with open(os.path.join(a.out, "cases.jsonl"), "w") as f:
            for line in lines:
                f.write(json.dumps(line) + "\n")
    finally:
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
