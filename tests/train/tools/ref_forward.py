#!/usr/bin/python3
"""Reference forward pass with Hugging Face semantics (Llama / Mistral / Qwen2 / Qwen3), in float64 by default.

Reads config.json + *.safetensors (F32/BF16/F16) from MODEL_DIR, runs the token ids through the model
and prints JSON: per-position log-softmax of the next token ("nll"), the last position's logits top-k,
and the greedy continuation. Used as the oracle of tests/train (a copy of ../shared/tools/ref_forward.py, plus the Mistral sliding
window, an o_proj bias and tie_word_embeddings over a stored lm_head); needs Debian python3-torch and python3-numpy.
Usage: ref_forward.py MODEL_DIR --ids 1,2,3 [--greedy N] [--dtype float64|float32] [--all-logits FILE.npy]
"""
import argparse, glob, json, math, os, struct
import numpy as np, torch

def load_safetensors(d):
    out = {}
    for fn in sorted(glob.glob(os.path.join(d, "*.safetensors"))):
        with open(fn, "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]; hdr = json.loads(f.read(n)); base = 8 + n
            raw = np.memmap(fn, dtype=np.uint8, mode="r")
        for name, m in hdr.items():
            if name == "__metadata__": continue
            a, b = m["data_offsets"]; buf = np.asarray(raw[base + a: base + b])
            if m["dtype"] == "BF16":
                arr = (buf.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
            elif m["dtype"] == "F16": arr = buf.view(np.float16).astype(np.float32)
            elif m["dtype"] == "F32": arr = buf.view(np.float32)
            else: raise SystemExit(f"unsupported dtype {m['dtype']}")
            out[name] = torch.from_numpy(arr.reshape(m["shape"]).copy())
    return out

def rms(x, w, eps): return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * w

def forward(c, W, ids, dt):
    H, L = c["hidden_size"], c["num_hidden_layers"]; nh, nkv = c["num_attention_heads"], c.get("num_key_value_heads", c["num_attention_heads"])
    hd = c.get("head_dim") or H // nh; eps = c.get("rms_norm_eps", 1e-6); theta = c.get("rope_theta", 10000.0)
    mt = c.get("model_type", "llama")
    g = lambda n: W[n].to(dt)
    T = len(ids); x = g("model.embed_tokens.weight")[torch.tensor(ids)]
    pos = torch.arange(T, dtype=dt)
    inv = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=dt) / hd))
    ang = torch.outer(pos, inv); cos = torch.cat([ang.cos()] * 2, -1); sin = torch.cat([ang.sin()] * 2, -1)
    def rope(t):  # t: (heads, T, hd), rotate-half convention
        t1, t2 = t[..., : hd // 2], t[..., hd // 2:]
        return t * cos + torch.cat([-t2, t1], -1) * sin
    mask = torch.full((T, T), float("-inf"), dtype=dt).triu(1)
    win = c.get("sliding_window") or 0  # Mistral: keys in [t - window + 1, t]
    if win > 0 and mt == "mistral": mask = mask + torch.full((T, T), float("-inf"), dtype=dt).tril(-win)
    for i in range(L):
        p = f"model.layers.{i}."
        h = rms(x, g(p + "input_layernorm.weight"), eps)
        def lin(n, inp):
            y = inp @ g(p + n + ".weight").T
            return y + g(p + n + ".bias") if (p + n + ".bias") in W else y
        q = lin("self_attn.q_proj", h).view(T, nh, hd).transpose(0, 1)
        k = lin("self_attn.k_proj", h).view(T, nkv, hd).transpose(0, 1)
        v = lin("self_attn.v_proj", h).view(T, nkv, hd).transpose(0, 1)
        if mt == "qwen3":
            q = rms(q, g(p + "self_attn.q_norm.weight"), eps); k = rms(k, g(p + "self_attn.k_norm.weight"), eps)
        q, k = rope(q), rope(k)
        rep = nh // nkv; k = k.repeat_interleave(rep, 0); v = v.repeat_interleave(rep, 0)
        att = (q @ k.transpose(1, 2)) / math.sqrt(hd) + mask
        o = (att.softmax(-1) @ v).transpose(0, 1).reshape(T, nh * hd)
        x = x + lin("self_attn.o_proj", o)
        h = rms(x, g(p + "post_attention_layernorm.weight"), eps)
        m = torch.nn.functional.silu(h @ g(p + "mlp.gate_proj.weight").T) * (h @ g(p + "mlp.up_proj.weight").T)
        x = x + m @ g(p + "mlp.down_proj.weight").T
    x = rms(x, g("model.norm.weight"), eps)
    tied = c.get("tie_word_embeddings", False) or "lm_head.weight" not in W
    head = g("model.embed_tokens.weight") if tied else g("lm_head.weight")
    return x @ head.T

def main():
    ap = argparse.ArgumentParser(); ap.add_argument("model"); ap.add_argument("--ids", required=True)
    ap.add_argument("--greedy", type=int, default=0); ap.add_argument("--dtype", default="float64")
    ap.add_argument("--all-logits")
    a = ap.parse_args(); dt = getattr(torch, a.dtype)
    c = json.load(open(os.path.join(a.model, "config.json"))); W = load_safetensors(a.model)
    ids = [int(t) for t in a.ids.split(",")]
    logits = forward(c, W, ids, dt); lp = logits.log_softmax(-1)
    nll = [-lp[t, ids[t + 1]].item() for t in range(len(ids) - 1)]
    if a.all_logits: np.save(a.all_logits, logits.numpy())
    gen = list(ids)
    for _ in range(a.greedy):
        gen.append(int(forward(c, W, gen, dt)[-1].argmax()))
    last = logits[-1]; top = torch.topk(last, 5)
    print(json.dumps({"n": len(ids), "nll": nll, "ppl": math.exp(sum(nll) / max(1, len(nll))),
                      "top5_last": [[int(i), float(v)] for v, i in zip(top.values, top.indices)],
                      "greedy": gen[len(ids):]}))

if __name__ == "__main__":
    main()
