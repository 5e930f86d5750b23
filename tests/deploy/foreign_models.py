#!/usr/bin/env python3
"""Writes small checkpoints of architectures plexus does not load, for `plexus deploy --api-type
vllm|tgi|tei`: config.json as Hugging Face writes it for each family and real safetensors files
(zero weights) with that family's tensor names and shapes.

  opt   OPTForCausalLM, float16, two shards + model.safetensors.index.json with metadata.total_size
  gpt2  GPT2LMHeadModel, float32, one model.safetensors (n_layer / n_head / n_embd / n_positions)
  t5    T5ForConditionalGeneration, float32, 2 encoder and 3 decoder blocks (num_layers /
        num_decoder_layers, num_heads, d_kv), two shards + an index without metadata
  bert  BertModel (an embedding model, for TEI), float32, one model.safetensors

usage: foreign_models.py OUT_DIR
Prints, as JSON, each model's parameter bytes (the sum of its tensors' bytes) and the KV cache
bytes per token its attention config implies (2 (K, V) x layers x KV heads x head_dim x 2 bytes;
the decoder's for T5; none for BERT), computed here from the shapes written.
"""
import json
import os
import struct
import sys

SIZES = {"F16": 2, "BF16": 2, "F32": 4}


def write_safetensors(path, tensors, dtype):
    """tensors: [(name, shape)] written as zeros of dtype; returns the data bytes."""
    header, offset = {}, 0
    for name, shape in tensors:
        n = SIZES[dtype]
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        f.write(bytes(offset))
    return offset


def write_model(out, config, tensors, dtype, shards=1, total_size=True):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    if shards == 1:
        return write_safetensors(os.path.join(out, "model.safetensors"), tensors, dtype)
    per = (len(tensors) + shards - 1) // shards
    total, weight_map = 0, {}
    for s in range(shards):
        name = "model-%05d-of-%05d.safetensors" % (s + 1, shards)
        part = tensors[s * per:(s + 1) * per]
        total += write_safetensors(os.path.join(out, name), part, dtype)
        for t, _ in part:
            weight_map[t] = name
    index = {"metadata": {"total_size": total}, "weight_map": weight_map} if total_size else {"weight_map": weight_map}
    with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
        json.dump(index, f, indent=2)
    return total


def opt(out):
    H, L, heads, ffn, V, P = 64, 2, 4, 256, 512, 2048
    t = [("model.decoder.embed_tokens.weight", (V, H)), ("model.decoder.embed_positions.weight", (P + 2, H))]
    for i in range(L):
        p = "model.decoder.layers.%d." % i
        for proj in ("k_proj", "v_proj", "q_proj", "out_proj"):
            t += [(p + "self_attn." + proj + ".weight", (H, H)), (p + "self_attn." + proj + ".bias", (H,))]
        t += [(p + "self_attn_layer_norm.weight", (H,)), (p + "self_attn_layer_norm.bias", (H,)),
              (p + "fc1.weight", (ffn, H)), (p + "fc1.bias", (ffn,)), (p + "fc2.weight", (H, ffn)), (p + "fc2.bias", (H,)),
              (p + "final_layer_norm.weight", (H,)), (p + "final_layer_norm.bias", (H,))]
    t += [("model.decoder.final_layer_norm.weight", (H,)), ("model.decoder.final_layer_norm.bias", (H,))]
    config = {"architectures": ["OPTForCausalLM"], "model_type": "opt", "hidden_size": H, "num_hidden_layers": L,
              "num_attention_heads": heads, "ffn_dim": ffn, "vocab_size": V, "max_position_embeddings": P,
              "word_embed_proj_dim": H, "do_layer_norm_before": True, "activation_function": "relu",
              "torch_dtype": "float16"}
    return write_model(out, config, t, "F16", shards=2), 2 * L * heads * (H // heads) * 2


def gpt2(out):
    E, L, heads, V, P = 64, 2, 4, 512, 1024
    t = [("wte.weight", (V, E)), ("wpe.weight", (P, E))]
    for i in range(L):
        p = "h.%d." % i
        t += [(p + "ln_1.weight", (E,)), (p + "ln_1.bias", (E,)),
              (p + "attn.c_attn.weight", (E, 3 * E)), (p + "attn.c_attn.bias", (3 * E,)),
              (p + "attn.c_proj.weight", (E, E)), (p + "attn.c_proj.bias", (E,)),
              (p + "ln_2.weight", (E,)), (p + "ln_2.bias", (E,)),
              (p + "mlp.c_fc.weight", (E, 4 * E)), (p + "mlp.c_fc.bias", (4 * E,)),
              (p + "mlp.c_proj.weight", (4 * E, E)), (p + "mlp.c_proj.bias", (E,))]
    t += [("ln_f.weight", (E,)), ("ln_f.bias", (E,))]
    config = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_embd": E, "n_layer": L, "n_head": heads,
              "n_positions": P, "n_ctx": P, "vocab_size": V, "activation_function": "gelu_new", "torch_dtype": "float32"}
    return write_model(out, config, t, "F32"), 2 * L * heads * (E // heads) * 2


def t5(out):
    D, dkv, heads, ff, enc, dec, V = 64, 16, 4, 128, 2, 3, 512
    inner = heads * dkv
    t = [("shared.weight", (V, D))]

    def attention(p, kind):
        return [(p + kind + "." + w + ".weight", (inner, D) if w != "o" else (D, inner)) for w in ("q", "k", "v", "o")]

    for i in range(enc):
        p = "encoder.block.%d.layer." % i
        t += attention(p + "0.", "SelfAttention")
        if i == 0:
            t += [(p + "0.SelfAttention.relative_attention_bias.weight", (32, heads))]
        t += [(p + "0.layer_norm.weight", (D,)), (p + "1.DenseReluDense.wi.weight", (ff, D)),
              (p + "1.DenseReluDense.wo.weight", (D, ff)), (p + "1.layer_norm.weight", (D,))]
    t += [("encoder.final_layer_norm.weight", (D,))]
    for i in range(dec):
        p = "decoder.block.%d.layer." % i
        t += attention(p + "0.", "SelfAttention")
        if i == 0:
            t += [(p + "0.SelfAttention.relative_attention_bias.weight", (32, heads))]
        t += [(p + "0.layer_norm.weight", (D,))] + attention(p + "1.", "EncDecAttention") + \
             [(p + "1.layer_norm.weight", (D,)), (p + "2.DenseReluDense.wi.weight", (ff, D)),
              (p + "2.DenseReluDense.wo.weight", (D, ff)), (p + "2.layer_norm.weight", (D,))]
    t += [("decoder.final_layer_norm.weight", (D,)), ("lm_head.weight", (V, D))]
    config = {"architectures": ["T5ForConditionalGeneration"], "model_type": "t5", "d_model": D, "d_kv": dkv, "d_ff": ff,
              "num_layers": enc, "num_decoder_layers": dec, "num_heads": heads, "vocab_size": V, "n_positions": 512,
              "is_encoder_decoder": True, "relative_attention_num_buckets": 32, "feed_forward_proj": "relu",
              "torch_dtype": "float32"}
    return write_model(out, config, t, "F32", shards=2, total_size=False), 2 * dec * heads * dkv * 2


def bert(out):
    H, L, heads, inter, V, P = 64, 2, 4, 256, 512, 512
    t = [("embeddings.word_embeddings.weight", (V, H)), ("embeddings.position_embeddings.weight", (P, H)),
         ("embeddings.token_type_embeddings.weight", (2, H)), ("embeddings.LayerNorm.weight", (H,)),
         ("embeddings.LayerNorm.bias", (H,))]
    for i in range(L):
        p = "encoder.layer.%d." % i
        for w in ("query", "key", "value"):
            t += [(p + "attention.self." + w + ".weight", (H, H)), (p + "attention.self." + w + ".bias", (H,))]
        t += [(p + "attention.output.dense.weight", (H, H)), (p + "attention.output.dense.bias", (H,)),
              (p + "attention.output.LayerNorm.weight", (H,)), (p + "attention.output.LayerNorm.bias", (H,)),
              (p + "intermediate.dense.weight", (inter, H)), (p + "intermediate.dense.bias", (inter,)),
              (p + "output.dense.weight", (H, inter)), (p + "output.dense.bias", (H,)),
              (p + "output.LayerNorm.weight", (H,)), (p + "output.LayerNorm.bias", (H,))]
    t += [("pooler.dense.weight", (H, H)), ("pooler.dense.bias", (H,))]
    config = {"architectures": ["BertModel"], "model_type": "bert", "hidden_size": H, "num_hidden_layers": L,
              "num_attention_heads": heads, "intermediate_size": inter, "vocab_size": V, "max_position_embeddings": P,
              "type_vocab_size": 2, "hidden_act": "gelu", "torch_dtype": "float32"}
    return write_model(out, config, t, "F32"), 0


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    summary = {}
    for name, make in (("opt", opt), ("gpt2", gpt2), ("t5", t5), ("bert", bert)):
        parameter_bytes, kv = make(os.path.join(out, name))
        summary[name] = {"parameter_bytes": parameter_bytes, "kv_bytes_per_token": kv}
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
