#!/usr/bin/env python3
"""A small transformers runner for `plexus bench` configurations with `backend.type: pytorch`.

Loads a model with transformers (device_map, max_memory, torch_dtype as the energy-benchmark
suite's configurations give them), generates for the prompts in batches, and prints the token
line plexus bench reads for J/token:

    {"plexus_tokens": {"input": N, "output": M}}

--dry-run prints the load and generation settings as JSON without importing torch or
transformers (for checking a configuration). Exit 2 on bad arguments or a missing package.
"""
import argparse
import json
import os
import sys


def parse_device_ids(text):
    """'0,2' -> [0, 2]."""
    ids = []
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit():
            raise ValueError(f"--device-ids: '{part}' is not a GPU number (give e.g. 0,1)")
        ids.append(int(part))
    if len(set(ids)) != len(ids):
        raise ValueError(f"--device-ids: '{text}' names a GPU twice")
    return ids


def parse_max_memory(text, device_ids):
    """'0=10GiB,cpu=64GiB' -> {0: '10GiB', 'cpu': '64GiB'}, GPU keys renumbered to their place in
    device_ids (which become CUDA_VISIBLE_DEVICES, so GPU 3 of [2, 3] is cuda:1 to torch)."""
    out = {}
    for part in text.split(","):
        key, sep, size = part.partition("=")
        key, size = key.strip(), size.strip()
        if not sep or not key or not size:
            raise ValueError(f"--max-memory: '{part}' is not DEVICE=SIZE (e.g. 0=10GiB or cpu=64GiB)")
        if key in ("cpu", "disk"):
            out[key] = size
            continue
        if not key.isdigit():
            raise ValueError(f"--max-memory: device '{key}' is neither a GPU number nor cpu/disk")
        gpu = int(key)
        if device_ids:
            if gpu not in device_ids:
                raise ValueError(f"--max-memory: GPU {gpu} is not among --device-ids {device_ids}")
            gpu = device_ids.index(gpu)
        out[gpu] = size
    return out


def read_prompts(args):
    prompts = list(args.prompt or [])
    if args.dataset:
        with open(args.dataset, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                record = json.loads(line)
                if not isinstance(record, dict) or not isinstance(record.get("prompt"), str):
                    raise ValueError(f"{args.dataset}:{number}: expected an object with a \"prompt\" string")
                prompts.append(record["prompt"])
    if not prompts:
        raise ValueError("no prompts: give --prompt TEXT (repeatable) or --dataset FILE.jsonl")
    return prompts


def cycle(prompts, n):
    """n prompts taken round the list (n = 0: each once)."""
    if n <= 0:
        return list(prompts)
    return [prompts[i % len(prompts)] for i in range(n)]


def settings(args):
    device_ids = parse_device_ids(args.device_ids) if args.device_ids else []
    load = {"device_map": args.device_map, "torch_dtype": args.torch_dtype}
    if args.max_memory:
        load["max_memory"] = parse_max_memory(args.max_memory, device_ids)
    prompts = read_prompts(args)
    return {
        "model": args.model,
        "revision": args.revision,
        "cuda_visible_devices": ",".join(str(i) for i in device_ids) if device_ids else None,
        "load": load,
        "generate": {"max_new_tokens": args.max_new_tokens, "batch_size": args.batch_size,
                     "temperature": args.temperature, "seed": args.seed, "ignore_eos": args.ignore_eos},
        "measured": cycle(prompts, args.num_samples),
        "warmup": cycle(prompts, args.warmup_samples) if args.warmup_samples > 0 else [],
    }


def arguments(argv):
    p = argparse.ArgumentParser(description="Run a Hugging Face model with transformers; print plexus's token line.")
    p.add_argument("--model", required=True, help="a Hugging Face id or a model directory")
    p.add_argument("--revision")
    p.add_argument("--device-ids", help="GPUs to use, e.g. 0,1 (they become CUDA_VISIBLE_DEVICES)")
    p.add_argument("--device-map", default="auto", choices=["auto", "balanced", "balanced_low_0", "sequential"])
    p.add_argument("--max-memory", help="DEVICE=SIZE,... e.g. 0=10GiB,cpu=64GiB")
    p.add_argument("--torch-dtype", default="auto", choices=["auto", "float32", "float16", "bfloat16"])
    p.add_argument("--prompt", action="append", help="a prompt (repeatable)")
    p.add_argument("--dataset", help="JSON lines with a \"prompt\" string each")
    p.add_argument("--max-new-tokens", type=int, default=32)
    p.add_argument("--batch-size", type=int, default=1)
    p.add_argument("--num-samples", type=int, default=0, help="prompts to run (0: each once)")
    p.add_argument("--warmup-samples", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--ignore-eos", action="store_true", help="always generate --max-new-tokens tokens")
    p.add_argument("--dry-run", action="store_true", help="print the settings as JSON; import nothing, run nothing")
    args = p.parse_args(argv)
    if args.max_new_tokens < 1 or args.batch_size < 1 or args.num_samples < 0 or args.warmup_samples < 0:
        p.error("--max-new-tokens and --batch-size must be at least 1, --num-samples and --warmup-samples at least 0")
    return args


def generate(plan):
    if plan["cuda_visible_devices"] is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = plan["cuda_visible_devices"]
    import importlib.util
    missing = [m for m in ("torch", "transformers") if importlib.util.find_spec(m) is None]
    if missing:  # said before torch's seconds-long import
        print(f"hf_runner: not installed: {' '.join(missing)} (pip install torch transformers accelerate)", file=sys.stderr)
        return 2
    import torch
    import transformers
    load = dict(plan["load"])
    if load["torch_dtype"] != "auto":
        load["torch_dtype"] = getattr(torch, load["torch_dtype"])
    tokenizer = transformers.AutoTokenizer.from_pretrained(plan["model"], revision=plan["revision"])
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"  # decoder-only models continue from the right end
    model = transformers.AutoModelForCausalLM.from_pretrained(plan["model"], revision=plan["revision"], **load)
    g = plan["generate"]
    torch.manual_seed(g["seed"])
    options = {"max_new_tokens": g["max_new_tokens"], "pad_token_id": tokenizer.pad_token_id}
    if g["temperature"] > 0:
        options.update(do_sample=True, temperature=g["temperature"])
    else:
        options.update(do_sample=False)
    if g["ignore_eos"]:
        options["min_new_tokens"] = g["max_new_tokens"]

    def run(prompts):
        tokens_in = tokens_out = 0
        for start in range(0, len(prompts), g["batch_size"]):
            batch = tokenizer(prompts[start:start + g["batch_size"]], return_tensors="pt", padding=True).to(model.device)
            with torch.no_grad():
                out = model.generate(**batch, **options)
            new = out[:, batch["input_ids"].shape[1]:]
            tokens_in += int(batch["attention_mask"].sum())
            tokens_out += int((new != tokenizer.pad_token_id).sum()) if not g["ignore_eos"] else new.numel()
        return tokens_in, tokens_out

    run(plan["warmup"])
    tokens_in, tokens_out = run(plan["measured"])
    print(json.dumps({"plexus_tokens": {"input": tokens_in, "output": tokens_out}}), flush=True)
    return 0


def main(argv):
    args = arguments(argv)
    try:
        plan = settings(args)
    except (ValueError, OSError) as e:
        print(f"hf_runner: {e}", file=sys.stderr)
        return 2
    if args.dry_run:
        print(json.dumps(plan))
        return 0
    return generate(plan)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
