#!/usr/bin/python3
"""The peer of train_bench: the same training step in PyTorch eager mode on the CPU (float32,
autograd, torch.optim.AdamW + clip_grad_norm_), the same shape (make-model's `small` preset with
SmolLM-135M's vocabulary by default), timed the same way: tokens/s as the median of the timed steps.
Usage: torch_train_peer.py [--seq-len 256] [--micro-batch 1] [--steps 5] [--warmup 1] [--threads 2] [--vocab 49152]
Prints one JSON object. Needs Debian's python3-torch (run it with /usr/bin/python3)."""
import argparse, json, math, statistics, time
import torch
import torch.nn.functional as F


class Layer(torch.nn.Module):
    def __init__(s, H, nh, nkv, hd, inter):
        super().__init__()
        s.nh, s.nkv, s.hd = nh, nkv, hd
        s.q = torch.nn.Linear(H, nh * hd, bias=False)
        s.k = torch.nn.Linear(H, nkv * hd, bias=False)
        s.v = torch.nn.Linear(H, nkv * hd, bias=False)
        s.o = torch.nn.Linear(nh * hd, H, bias=False)
        s.gate = torch.nn.Linear(H, inter, bias=False)
        s.up = torch.nn.Linear(H, inter, bias=False)
        s.down = torch.nn.Linear(inter, H, bias=False)
        s.n1 = torch.nn.Parameter(torch.ones(H))
        s.n2 = torch.nn.Parameter(torch.ones(H))


def rmsnorm(x, w, eps=1e-5):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rotate(t, cos, sin):  # t (b, heads, T, hd): rotate-half RoPE
    h = t.shape[-1] // 2
    return t * cos + torch.cat([-t[..., h:], t[..., :h]], -1) * sin


class Model(torch.nn.Module):
    def __init__(s, vocab, H, L, nh, nkv, inter):
        super().__init__()
        hd = H // nh
        s.embed = torch.nn.Embedding(vocab, H)
        s.layers = torch.nn.ModuleList([Layer(H, nh, nkv, hd, inter) for _ in range(L)])
        s.norm = torch.nn.Parameter(torch.ones(H))
        s.hd = hd

    def forward(s, ids):  # ids (b, T): the mean next-token cross-entropy
        b, T = ids.shape
        inv = 1.0 / (10000.0 ** (torch.arange(0, s.hd, 2, dtype=torch.float64) / s.hd))
        ang = torch.outer(torch.arange(T, dtype=torch.float64), inv)
        cos = torch.cat([ang.cos()] * 2, -1).float()
        sin = torch.cat([ang.sin()] * 2, -1).float()
        mask = torch.full((T, T), float("-inf")).triu(1)
        x = s.embed(ids)
        for l in s.layers:
            h = rmsnorm(x, l.n1)
            q = l.q(h).view(b, T, l.nh, l.hd).transpose(1, 2)
            k = l.k(h).view(b, T, l.nkv, l.hd).transpose(1, 2)
            v = l.v(h).view(b, T, l.nkv, l.hd).transpose(1, 2)
            q, k = rotate(q, cos, sin), rotate(k, cos, sin)
            rep = l.nh // l.nkv
            k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
            att = (q @ k.transpose(-1, -2)) / math.sqrt(l.hd) + mask
            a = (att.softmax(-1) @ v).transpose(1, 2).reshape(b, T, l.nh * l.hd)
            x = x + l.o(a)
            h = rmsnorm(x, l.n2)
            x = x + l.down(F.silu(l.gate(h)) * l.up(h))
        x = rmsnorm(x[:, :-1], s.norm)
        logits = x @ s.embed.weight.T  # tied embeddings
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seq-len", type=int, default=256)
    ap.add_argument("--micro-batch", type=int, default=1)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--vocab", type=int, default=49152)
    a = ap.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    m = Model(a.vocab, 576, 30, 9, 3, 1536)
    with torch.no_grad():  # as make-model draws weights: matrices N(0, 0.02²), norms 1
        for name, p in m.named_parameters():
            if p.dim() == 2:
                p.normal_(0.0, 0.02)
    params = sum(p.numel() for p in m.parameters())
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
    ids = torch.randint(0, a.vocab, (a.micro_batch, a.seq_len))
    rates, losses = [], []
    for s in range(-a.warmup, a.steps):
        t = time.perf_counter()
        opt.zero_grad()
        loss = m(ids)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()
        sec = time.perf_counter() - t
        if s >= 0:
            rates.append(a.micro_batch * a.seq_len / sec)
            losses.append(loss.item())
    print(json.dumps({"peer": "pytorch " + torch.__version__ + " eager, float32, CPU",
                      "threads": torch.get_num_threads(), "parameters": params, "seq_len": a.seq_len,
                      "micro_batch": a.micro_batch, "tokens_per_s_median": statistics.median(rates),
                      "tokens_per_s": rates, "losses": losses}))


if __name__ == "__main__":
    main()
