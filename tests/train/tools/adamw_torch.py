#!/usr/bin/python3
# The f32 reference of adamw_test: torch.nn.utils.clip_grad_norm_ then torch.optim.AdamW.step()
# on the tensors and per-step gradients of IN.json; prints, after every step, the total norm,
# the weights and both moments (every f32 value exactly, as a double) as JSON on stdout.
# Usage: /usr/bin/python3 adamw_torch.py IN.json
import json, sys
import torch

def main():
    a = json.load(open(sys.argv[1]))
    params = [torch.nn.Parameter(torch.tensor(t, dtype=torch.float32)) for t in a["params"]]
    opt = torch.optim.AdamW(params, lr=a["lr"], betas=(a["beta1"], a["beta2"]), eps=a["eps"],
                            weight_decay=a["weight_decay"])
    steps = []
    for grads in a["grads"]:
        for p, g in zip(params, grads):
            p.grad = torch.tensor(g, dtype=torch.float32)
        norm = torch.nn.utils.clip_grad_norm_(params, a["max_grad_norm"])
        opt.step()
        st = [opt.state[p] for p in params]
        steps.append({"norm": float(norm),
                      "params": [p.detach().tolist() for p in params],
                      "exp_avg": [s["exp_avg"].tolist() for s in st],
                      "exp_avg_sq": [s["exp_avg_sq"].tolist() for s in st]})
    json.dump({"torch": torch.__version__, "steps": steps}, sys.stdout)

main()
