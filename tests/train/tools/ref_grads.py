#!/usr/bin/python3
"""Loss and gradients of one batch with PyTorch autograd (the oracle of tests/train/llama_train_torch_test).

Runs the sequences through ref_forward.py's forward (float64 by default) and prints JSON:
{"loss_sum": the sum of the next-token cross-entropy over all b*(T-1) predictions,
 "grad_norms": {name: 2-norm of d loss_sum / d name}} (a tied lm_head's gradient is in the embedding's).
Usage: ref_grads.py MODEL_DIR --batch 1,2,3;4,5,6 [--dtype float64|float32]
"""
import argparse, json, os, sys
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ref_forward import forward, load_safetensors  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model"); ap.add_argument("--batch", required=True); ap.add_argument("--dtype", default="float64")
    a = ap.parse_args(); dt = getattr(torch, a.dtype)
    c = json.load(open(os.path.join(a.model, "config.json")))
    W = {k: v.to(dt).requires_grad_(True) for k, v in load_safetensors(a.model).items()}
    if c.get("tie_word_embeddings", False): W.pop("lm_head.weight", None)  # tied: the embedding is the head
    total = 0
    for seq in a.batch.split(";"):
        ids = [int(t) for t in seq.split(",")]
        lp = forward(c, W, ids, dt).log_softmax(-1)
        total = total - lp[:-1].gather(1, torch.tensor(ids[1:])[:, None]).sum()
    total.backward()
    print(json.dumps({"loss_sum": total.item(),
                      "grad_norms": {k: W[k].grad.norm().item() for k in sorted(W)}}))


if __name__ == "__main__":
    main()
