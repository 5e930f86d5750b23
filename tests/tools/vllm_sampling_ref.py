#!/usr/bin/env python3
"""vLLM's sampling formulas, written out plainly in float64 (no plexus code): the oracle of the
sampler tests (tests/serve/sampling_vllm_test.cpp).

The order and the formulas are those of vLLM's v1 sampler (vllm/v1/sample/sampler.py, its
docstring "steps in order", and vllm/model_executor/layers/utils.py apply_penalties):
  1. logit_bias: logits[id] += bias;
  2. penalties, on the biased logits:
     repetition (tokens of the prompt or the output so far): logit / r when logit > 0, else logit * r;
     frequency (output tokens):  logit -= frequency_penalty * count;
     presence  (output tokens):  logit -= presence_penalty * (count > 0);
  3. temperature < 1e-5: greedy, the argmax of those logits;
     otherwise probs = softmax(logits / temperature), then
  4. min_p: drop tokens whose probability < min_p * the largest probability;
  5. top_k: keep the k largest logits;
  6. top_p: sort the kept probabilities (renormalised) ascending, drop those whose running sum is
     <= 1 - top_p (the largest always stays);
  7. sample from what is left, renormalised.

usage: vllm_sampling_ref.py CASES.json   prints the results as JSON on stdout.
CASES.json: a list of {"logits": [V floats], "prompt": [ids], "output": [ids],
"presence_penalty", "frequency_penalty", "repetition_penalty", "logit_bias": [[id, bias], ...],
"temperature", "min_p", "top_k" (0: none), "top_p"}; every field but logits optional.
Result per case: {"logits": the logits after steps 1-2, "greedy": bool, "argmax": id,
"probs": [V] the final distribution (zeros for dropped tokens; one-hot when greedy)}.
"""
import json
import math
import sys


def processed_logits(case):
    logits = [float(x) for x in case["logits"]]
    vocab = len(logits)
    for token, bias in case.get("logit_bias", []):
        logits[token] += float(bias)
    prompt_mask = [False] * vocab
    for token in case.get("prompt", []):
        prompt_mask[token] = True
    counts = [0] * vocab
    for token in case.get("output", []):
        counts[token] += 1
    rep = float(case.get("repetition_penalty", 1.0))
    freq = float(case.get("frequency_penalty", 0.0))
    pres = float(case.get("presence_penalty", 0.0))
    for i in range(vocab):
        if prompt_mask[i] or counts[i] > 0:
            logits[i] = logits[i] / rep if logits[i] > 0 else logits[i] * rep
    for i in range(vocab):
        logits[i] -= freq * counts[i]
    for i in range(vocab):
        logits[i] -= pres * (1.0 if counts[i] > 0 else 0.0)
    return logits


def softmax(xs):
    finite = [x for x in xs if x != -math.inf]
    m = max(finite)
    e = [math.exp(x - m) if x != -math.inf else 0.0 for x in xs]
    s = sum(e)
    return [x / s for x in e]


def distribution(logits, case):
    vocab = len(logits)
    temperature = float(case.get("temperature", 1.0))
    if temperature < 1e-5:
        best = max(range(vocab), key=lambda i: (logits[i], -i))
        return True, [1.0 if i == best else 0.0 for i in range(vocab)]
    scaled = [x / temperature for x in logits]
    min_p = float(case.get("min_p", 0.0))
    if min_p > 0:
        probs = softmax(scaled)
        top = max(probs)
        scaled = [-math.inf if probs[i] < min_p * top else scaled[i] for i in range(vocab)]
    top_k = int(case.get("top_k", 0))
    if 0 < top_k < vocab:
        kth = sorted(scaled, reverse=True)[top_k - 1]
        scaled = [x if x >= kth else -math.inf for x in scaled]
    top_p = float(case.get("top_p", 1.0))
    if top_p < 1.0:
        probs = softmax(scaled)
        ascending = sorted(range(vocab), key=lambda i: probs[i])
        running = 0.0
        for n, i in enumerate(ascending):
            running += probs[i]
            if running <= 1.0 - top_p and n < vocab - 1:
                scaled[i] = -math.inf
    return False, softmax(scaled)


def main():
    with open(sys.argv[1]) as f:
        cases = json.load(f)
    out = []
    for case in cases:
        logits = processed_logits(case)
        greedy, probs = distribution(logits, case)
        argmax = max(range(len(logits)), key=lambda i: (logits[i], -i))
        out.append({"logits": logits, "greedy": greedy, "argmax": argmax, "probs": probs})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
