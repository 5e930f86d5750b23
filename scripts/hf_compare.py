#!/usr/bin/env python3
"""The peer of gpu_bench's batch-1 decode: Hugging Face transformers + accelerate `generate` on the
same checkpoint and GPU (device_map="auto", bfloat16, greedy, the same prompt ids and new-token
count, batch 1). Reports tokens/s (median of --reps runs after a warm-up) and J/token from NVML's
total-energy counter read before and after the timed runs, as gpu_bench reads it around its own.

  scripts/hf_compare.py MODEL_DIR --ids 128000,7932,... --new-tokens 128 --reps 3 --json OUT.json

Every failure (a missing package, a load error, out of memory) is written to the JSON as "error"
with exit status 1, so a table can still be printed from what did run.
"""
import argparse
import json
import os
import re
import statistics
import sys
import time


def default_ids(n, vocab):
    """The prompt gpu_bench makes when given no --ids."""
    return [min(128000, vocab - 1) if i == 0 else (i * 7919 + 13) % min(vocab, 100000) for i in range(n)]


def write(path, result):
    if not path:
        return
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)


class Energy:
    """NVML's total energy of one GPU, in joules; None where NVML cannot say."""

    def __init__(self, index):
        self.handle, self.why = None, None
        try:
            import pynvml
            pynvml.nvmlInit()
            self.nvml = pynvml
            self.handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle)
        except Exception as e:  # no pynvml, no driver, or a GPU without the counter
            self.handle, self.why = None, f"{type(e).__name__}: {e}"

    def joules(self):
        if self.handle is None:
            return None
        return self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle) / 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--ids", help="prompt token ids, comma-separated (default: gpu_bench's 16)")
    ap.add_argument("--new-tokens", type=int, default=128)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--gpu", type=int, default=0, help="NVML index of the GPU whose energy is read")
    ap.add_argument("--json", help="write the results here")
    a = ap.parse_args()
    result = {"model": a.model, "new_tokens": a.new_tokens, "reps": a.reps, "complete": False}
    try:
        run(a, result)
        result["complete"] = True
    except BaseException as e:  # recorded, then the exit status says it failed
        result["error"] = f"{type(e).__name__}: {e}"
        print(f"hf_compare: {result['error']}", file=sys.stderr)
    write(a.json, result)
    for k in ("load_s", "tokens_per_s", "decode_tokens_per_s", "joules_per_token"):
        if k in result:
            print(f"hf_compare {k}: {result[k]:.4f}")
    return 0 if result["complete"] else 1


def run(a, result):
    import torch
    import transformers

    result["versions"] = {"torch": torch.__version__, "transformers": transformers.__version__}
    try:
        import accelerate
        result["versions"]["accelerate"] = accelerate.__version__
    except ImportError:
        pass
    with open(os.path.join(a.model, "config.json")) as f:
        config = json.load(f)
    ids = [int(x) for x in a.ids.split(",")] if a.ids else default_ids(16, config["vocab_size"])
    result["prompt_tokens"] = len(ids)
    # transformers 4.56 renamed torch_dtype to dtype; an unknown keyword would be taken silently.
    major_minor = tuple(int(x) for x in re.findall(r"\d+", transformers.__version__)[:2])
    dtype_kw = "dtype" if major_minor >= (4, 56) else "torch_dtype"
    t0 = time.perf_counter()
    model = transformers.AutoModelForCausalLM.from_pretrained(a.model, device_map="auto", **{dtype_kw: torch.bfloat16})
    model.eval()
    torch.cuda.synchronize()
    result["load_s"] = time.perf_counter() - t0
    result["device_map"] = {k: str(v) for k, v in (getattr(model, "hf_device_map", None) or {}).items()}
    result["dtype"] = str(next(model.parameters()).dtype)
    device = next(model.parameters()).device
    input_ids = torch.tensor([ids], device=device)
    mask = torch.ones_like(input_ids)
    eos = config.get("eos_token_id")
    pad = eos[0] if isinstance(eos, list) else eos

    def generate(n):
        with torch.inference_mode():
            return model.generate(input_ids=input_ids, attention_mask=mask, max_new_tokens=n, min_new_tokens=n,
                                  do_sample=False, pad_token_id=pad, use_cache=True)

    generate(8)  # warm-up
    torch.cuda.synchronize()
    energy = Energy(a.gpu)
    e0 = energy.joules()
    tps, first = [], None
    for _ in range(a.reps):
        torch.cuda.synchronize()
        t = time.perf_counter()
        out = generate(a.new_tokens)
        torch.cuda.synchronize()
        dt = time.perf_counter() - t
        new = out.shape[1] - len(ids)
        tps.append(new / dt)
        if first is None:
            first = out[0, len(ids):].tolist()
    e1 = energy.joules()
    # The prefill of the prompt alone, to separate decode from it as gpu_bench does.
    torch.cuda.synchronize()
    t = time.perf_counter()
    generate(1)
    torch.cuda.synchronize()
    prefill_s = time.perf_counter() - t
    result["all_tokens_per_s"] = tps
    result["tokens_per_s"] = statistics.median(tps)  # new tokens over the whole generate call
    per_token = 1 / result["tokens_per_s"]
    rest = a.new_tokens * per_token - prefill_s
    if rest > 0 and a.new_tokens > 1:
        result["decode_tokens_per_s"] = (a.new_tokens - 1) / rest
    result["ids"] = first
    if e0 is not None and e1 is not None:
        result["joules"] = e1 - e0
        result["joules_per_token"] = (e1 - e0) / (a.new_tokens * a.reps)
    else:
        result["energy_unavailable"] = energy.why


if __name__ == "__main__":
    sys.exit(main())
