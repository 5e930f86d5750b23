#!/usr/bin/env python3
"""Converts a Hugging Face Llama, Mixtral, Qwen3-MoE or gpt-oss checkpoint (config.json + *.safetensors,
f32 or bf16, as `plexus make-model --arch llama|mixtral|qwen3-moe|gpt-oss` writes) to a GGUF v3 file
llama.cpp loads, for the llama.cpp benchmark peer. Written from the GGUF format description (magic, version 3, typed key/values,
tensor infos, 32-byte aligned data); llama.cpp's code is not used.

Tensors keep their dtype (bf16 stays BF16, f32 stays F32); norm vectors are always F32. The q and
k projection rows are permuted from Hugging Face's rotate-half rope layout to llama.cpp's
interleaved-pair layout: per head, row i of the first half and row i of the second half become
rows 2i and 2i+1 (Llama and Mixtral, llama.cpp's "llama" architecture; Qwen3-MoE keeps
rotate-half rope, llama.cpp's NEOX order, so its rows stay). A mixture of experts' per-expert
matrices become llama.cpp's stacked tensors: ffn_gate_exps / ffn_up_exps (E, I, H) and
ffn_down_exps (E, H, I) in numpy order, the router ffn_gate_inp (E, H). Llama 3 rope scaling becomes rope_freqs.weight (each pair's frequency
divisor, F32), as in llama.cpp's own Llama 3 files. gpt-oss (llama.cpp's "gpt-oss", NEOX rope):
q/k/v/o with their biases, attn_sinks, post_attention_norm, the router and its bias as
ffn_gate_inp, the fused gate_up_proj (E, H, 2I; gate = columns 0::2, up = 1::2) split and turned
(out, in) into ffn_gate_exps / ffn_up_exps (E, I, H), down_proj (E, I, H) turned into ffn_down_exps
(E, H, I), the expert biases F32 (gate/up split as the weights); the sliding window and YaRN
(type, factor, original context) as keys, layer_types as attention.sliding_window_pattern's period
(2, llama.cpp's default, written as no key); output.weight even when the embedding is tied
(llama.cpp's gpt-oss wants one). The vocabulary is synthetic (the checkpoints have no tokenizer): a byte-level
"gpt2" BPE without merges, so any text tokenizes to one token per byte, plus the config's
bos/eos ids as control tokens; byte_token_ids() says which id each byte gets.

usage: hf_to_gguf.py MODEL_DIR OUT.gguf
"""
import json
import os
import struct
import sys

import numpy as np

GGUF_MAGIC = b"GGUF"
GGUF_VERSION = 3
ALIGNMENT = 32
# Value types of GGUF metadata.
T_UINT32, T_INT32, T_FLOAT32, T_BOOL, T_STRING, T_ARRAY = 4, 5, 6, 7, 8, 9
# Tensor types.
GGML_F32, GGML_BF16 = 0, 30
FILE_TYPE = {GGML_F32: 0, GGML_BF16: 32}  # general.file_type: all F32 / mostly BF16
# Token types.
TOKEN_NORMAL, TOKEN_UNKNOWN, TOKEN_CONTROL, TOKEN_UNUSED = 1, 2, 3, 5


class InputError(Exception):
    pass


# --- reading the checkpoint ---------------------------------------------------------------------

def read_safetensors(path):
    """Tensor name -> (dtype 'F32'|'BF16', numpy array viewing the file: float32 or uint16 bits)."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    data_start = 8 + n
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = info["dtype"]
        if dtype not in ("F32", "BF16"):
            raise InputError(f"{path}: tensor {name} has dtype {dtype}; only F32 and BF16 convert")
        begin, end = info["data_offsets"]
        buf = raw[data_start + begin:data_start + end]
        arr = buf.view(np.float32 if dtype == "F32" else np.uint16).reshape(info["shape"])
        out[name] = (dtype, arr)
    return out


def load_checkpoint(model_dir):
    cfg_path = os.path.join(model_dir, "config.json")
    try:
        with open(cfg_path, encoding="utf-8") as f:
            cfg = json.load(f)
    except OSError as e:
        raise InputError(f"{cfg_path}: {e.strerror}") from None
    if cfg.get("model_type") not in ("llama", "mixtral", "qwen3_moe", "gpt_oss"):
        raise InputError(f"{cfg_path}: model_type {cfg.get('model_type')!r}; this converter handles llama, mixtral, qwen3_moe "
                         "and gpt_oss")
    gpt_oss = cfg.get("model_type") == "gpt_oss"
    if cfg.get("model_type") == "qwen3_moe" and (cfg.get("mlp_only_layers") or cfg.get("decoder_sparse_step", 1) != 1):
        raise InputError(f"{cfg_path}: dense layers among the experts (mlp_only_layers, decoder_sparse_step): llama.cpp's "
                         "qwen3moe makes every layer sparse")
    rs = cfg.get("rope_scaling")
    if rs and rs.get("rope_type", rs.get("type")) != ("yarn" if gpt_oss else "llama3"):
        raise InputError(f"{cfg_path}: rope_scaling {rs!r}; this converter handles plain and llama3 rope only (gpt-oss: yarn)")
    if gpt_oss and (cfg.get("swiglu_limit", 7.0) != 7.0 or cfg.get("swiglu_alpha", 1.702) != 1.702):
        raise InputError(f"{cfg_path}: swiglu_alpha/swiglu_limit differ from llama.cpp's fixed 1.702 and 7.0")
    for field in ("mlp_bias",) if gpt_oss else ("attention_bias", "mlp_bias"):
        if cfg.get(field):
            raise InputError(f"{cfg_path}: {field} is true; this converter handles bias-free llama only")
    files = sorted(p for p in os.listdir(model_dir) if p.endswith(".safetensors"))
    if not files:
        raise InputError(f"{model_dir}: no *.safetensors file")
    tensors = {}
    for p in files:
        tensors.update(read_safetensors(os.path.join(model_dir, p)))
    return cfg, tensors


# --- conversion ---------------------------------------------------------------------------------

def rope_rows_to_interleaved(w, n_heads):
    """(n_heads * head_dim, in) rows from rotate-half order (pairs i, i + head_dim/2 of a head) to
    interleaved order (pairs 2i, 2i+1)."""
    rows, cols = w.shape
    head_dim = rows // n_heads
    return w.reshape(n_heads, 2, head_dim // 2, cols).swapaxes(1, 2).reshape(rows, cols)


def llama3_rope_factors(cfg):
    """Per rotated pair i < head_dim/2: the divisor of its rope frequency under Llama 3's rope
    scaling (GGUF's rope_freqs.weight): 1 for short wavelengths, `factor` for long ones, a blend
    between (the same formula as rope_inv_freq in src/model/llama_family.cpp)."""
    rs = cfg["rope_scaling"]
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    theta = cfg.get("rope_theta", 10000.0)
    factor, low, high = rs.get("factor", 8.0), rs.get("low_freq_factor", 1.0), rs.get("high_freq_factor", 4.0)
    old_ctx = rs.get("original_max_position_embeddings", 8192)
    freq = 1.0 / theta ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    wavelen = 2 * np.pi / freq
    smooth = np.clip((old_ctx / wavelen - low) / (high - low), 0.0, 1.0)
    scaled = (1 - smooth) * freq / factor + smooth * freq
    scaled = np.where(wavelen < old_ctx / high, freq, np.where(wavelen > old_ctx / low, freq / factor, scaled))
    return (freq / scaled).astype(np.float32)


def to_f32(dtype, arr):
    if dtype == "F32":
        return np.ascontiguousarray(arr, dtype=np.float32)
    return (arr.astype(np.uint32) << 16).view(np.float32)


def gguf_arch(cfg):
    """llama.cpp's architecture name: Mixtral runs as llama with experts."""
    return {"qwen3_moe": "qwen3moe", "gpt_oss": "gpt-oss"}.get(cfg["model_type"], "llama")


def gguf_tensors(cfg, tensors, permute_rope=True):
    """[(gguf name, ggml type, numpy array (rows, cols), (E, rows, cols) or (n,))] in llama.cpp's names."""
    if gguf_arch(cfg) != "llama":
        permute_rope = False  # NEOX rope: Hugging Face's rotate-half order as it is
    n_layers = cfg["num_hidden_layers"]
    n_heads = cfg["num_attention_heads"]
    n_kv_heads = cfg.get("num_key_value_heads", n_heads)

    def take(name):
        if name not in tensors:
            raise InputError(f"checkpoint has no tensor {name}")
        return tensors[name]

    def matrix(hf, gguf, heads=0):
        dtype, arr = take(hf)
        if heads and permute_rope:
            arr = rope_rows_to_interleaved(arr, heads)
        return (gguf, GGML_F32 if dtype == "F32" else GGML_BF16, arr)

    def vector(hf, gguf):
        return (gguf, GGML_F32, to_f32(*take(hf)))

    def experts(layer, part):
        """Every expert's `part` matrix of `layer`, stacked (E, rows, cols), with its ggml type."""
        mixtral = cfg["model_type"] == "mixtral"
        n = cfg["num_local_experts"] if mixtral else cfg["num_experts"]
        name = {"gate": "w1", "up": "w3", "down": "w2"}[part] if mixtral else part + "_proj"
        base = f"model.layers.{layer}." + ("block_sparse_moe.experts." if mixtral else "mlp.experts.")
        parts = [take(f"{base}{e}.{name}.weight") for e in range(n)]
        return (f"blk.{layer}.ffn_{part}_exps.weight", GGML_F32 if parts[0][0] == "F32" else GGML_BF16,
                np.stack([arr for _, arr in parts]))

    out = [matrix("model.embed_tokens.weight", "token_embd.weight")]
    if cfg["model_type"] == "gpt_oss":
        return out + gpt_oss_tensors(cfg, take, matrix, vector)
    for i in range(n_layers):
        p, b = f"model.layers.{i}.", f"blk.{i}."
        out += [
            vector(p + "input_layernorm.weight", b + "attn_norm.weight"),
            matrix(p + "self_attn.q_proj.weight", b + "attn_q.weight", n_heads),
            matrix(p + "self_attn.k_proj.weight", b + "attn_k.weight", n_kv_heads),
            matrix(p + "self_attn.v_proj.weight", b + "attn_v.weight"),
            matrix(p + "self_attn.o_proj.weight", b + "attn_output.weight"),
            vector(p + "post_attention_layernorm.weight", b + "ffn_norm.weight"),
        ]
        if cfg["model_type"] == "qwen3_moe":
            out += [vector(p + "self_attn.q_norm.weight", b + "attn_q_norm.weight"),
                    vector(p + "self_attn.k_norm.weight", b + "attn_k_norm.weight")]
        if cfg["model_type"] == "llama":
            out += [
                matrix(p + "mlp.gate_proj.weight", b + "ffn_gate.weight"),
                matrix(p + "mlp.up_proj.weight", b + "ffn_up.weight"),
                matrix(p + "mlp.down_proj.weight", b + "ffn_down.weight"),
            ]
        else:
            router = p + ("block_sparse_moe.gate.weight" if cfg["model_type"] == "mixtral" else "mlp.gate.weight")
            out += [matrix(router, b + "ffn_gate_inp.weight")] + [experts(i, part) for part in ("gate", "up", "down")]
    out.append(vector("model.norm.weight", "output_norm.weight"))
    if cfg.get("rope_scaling"):  # llama3 (gpt-oss returned above)
        out.append(("rope_freqs.weight", GGML_F32, llama3_rope_factors(cfg)))
    if "lm_head.weight" in tensors and not cfg.get("tie_word_embeddings", False):
        out.append(matrix("lm_head.weight", "output.weight"))
    return out


def gpt_oss_tensors(cfg, take, matrix, vector):
    """gpt-oss's layers, output norm and output in llama.cpp's names and layout (see the top)."""
    out = []

    def typed(name, dtype, arr):
        return (name, GGML_F32 if dtype == "F32" else GGML_BF16, np.ascontiguousarray(arr))

    for i in range(cfg["num_hidden_layers"]):
        p, b = f"model.layers.{i}.", f"blk.{i}."
        out.append(vector(p + "input_layernorm.weight", b + "attn_norm.weight"))
        for hf, gg in (("q_proj", "attn_q"), ("k_proj", "attn_k"), ("v_proj", "attn_v"), ("o_proj", "attn_output")):
            out += [matrix(p + f"self_attn.{hf}.weight", b + gg + ".weight"), vector(p + f"self_attn.{hf}.bias", b + gg + ".bias")]
        out += [vector(p + "self_attn.sinks", b + "attn_sinks.weight"),
                vector(p + "post_attention_layernorm.weight", b + "post_attention_norm.weight"),
                vector(p + "mlp.router.weight", b + "ffn_gate_inp.weight"),
                vector(p + "mlp.router.bias", b + "ffn_gate_inp.bias")]
        dtype, gate_up = take(p + "mlp.experts.gate_up_proj")  # (E, H, 2I): (in, out), gate and up interleaved
        gate_up = gate_up.transpose(0, 2, 1)  # (E, 2I, H)
        dtype_down, down = take(p + "mlp.experts.down_proj")  # (E, I, H)
        gu_bias = to_f32(*take(p + "mlp.experts.gate_up_proj_bias"))  # (E, 2I)
        out += [typed(b + "ffn_gate_exps.weight", dtype, gate_up[:, 0::2, :]),
                (b + "ffn_gate_exps.bias", GGML_F32, np.ascontiguousarray(gu_bias[:, 0::2])),
                typed(b + "ffn_up_exps.weight", dtype, gate_up[:, 1::2, :]),
                (b + "ffn_up_exps.bias", GGML_F32, np.ascontiguousarray(gu_bias[:, 1::2])),
                typed(b + "ffn_down_exps.weight", dtype_down, down.transpose(0, 2, 1)),
                vector(p + "mlp.experts.down_proj_bias", b + "ffn_down_exps.bias")]
    out.append(vector("model.norm.weight", "output_norm.weight"))
    head = "model.embed_tokens.weight" if cfg.get("tie_word_embeddings", False) else "lm_head.weight"
    out.append(matrix(head, "output.weight"))
    return out


def sliding_period(cfg):
    """The period P of llama.cpp's gpt-oss sliding layers (layer l sliding when l % P < P - 1)
    that gives the config's layer_types (default: even layers sliding, P = 2)."""
    n = cfg["num_hidden_layers"]
    types = cfg.get("layer_types") or ["sliding_attention" if l % 2 == 0 else "full_attention" for l in range(n)]
    for period in [2, 0, 1] + list(range(3, n + 1)):
        if all((t == "sliding_attention") == (period == 0 or l % period < period - 1) for l, t in enumerate(types)):
            return period
    raise InputError(f"layer_types {types} follow no period; llama.cpp's gpt-oss reads a period only")


def byte_to_unicode():
    """GPT-2's byte-level alphabet: byte -> printable character."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def special_ids(cfg):
    eos = cfg.get("eos_token_id", 2)
    return {"bos": cfg.get("bos_token_id", 1), "eos": eos[0] if isinstance(eos, list) else eos, "unk": 0}


def byte_token_ids(cfg):
    """byte value -> token id in the synthetic vocabulary: the first 256 ids no special token uses."""
    taken = set(special_ids(cfg).values())
    free = [i for i in range(cfg["vocab_size"]) if i not in taken]
    return {b: free[b] for b in range(256)}


def vocabulary(cfg):
    n = cfg["vocab_size"]
    if n < 259:
        raise InputError(f"vocab_size {n}: the synthetic byte-level vocabulary needs at least 259 tokens")
    tokens = [f"<unused{i}>" for i in range(n)]
    types = [TOKEN_UNUSED] * n
    chars = byte_to_unicode()
    for b, i in byte_token_ids(cfg).items():
        tokens[i], types[i] = chars[b], TOKEN_NORMAL
    for name, i in special_ids(cfg).items():
        tokens[i] = f"<{name}>" if name != "unk" else "<unk>"
        types[i] = TOKEN_UNKNOWN if name == "unk" else TOKEN_CONTROL
    return tokens, types


def metadata(cfg, file_type):
    hidden = cfg["hidden_size"]
    n_heads = cfg["num_attention_heads"]
    head_dim = cfg.get("head_dim") or hidden // n_heads
    tokens, types = vocabulary(cfg)
    ids = special_ids(cfg)
    a = gguf_arch(cfg)
    moe = []
    if cfg["model_type"] == "mixtral":
        moe = [(a + ".expert_count", T_UINT32, cfg["num_local_experts"]),
               (a + ".expert_used_count", T_UINT32, cfg["num_experts_per_tok"])]
    elif cfg["model_type"] == "qwen3_moe":
        moe = [(a + ".expert_count", T_UINT32, cfg["num_experts"]),
               (a + ".expert_used_count", T_UINT32, cfg["num_experts_per_tok"]),
               (a + ".expert_feed_forward_length", T_UINT32, cfg["moe_intermediate_size"])]
    elif cfg["model_type"] == "gpt_oss":
        rs = cfg.get("rope_scaling") or {}
        moe = [(a + ".expert_count", T_UINT32, cfg["num_local_experts"]),
               (a + ".expert_used_count", T_UINT32, cfg.get("num_experts_per_tok", 4)),
               (a + ".expert_feed_forward_length", T_UINT32, cfg["intermediate_size"]),
               (a + ".attention.sliding_window", T_UINT32, cfg.get("sliding_window", 128))]
        if sliding_period(cfg) != 2:
            moe.append((a + ".attention.sliding_window_pattern", T_UINT32, sliding_period(cfg)))
        if rs:
            moe += [(a + ".rope.scaling.type", T_STRING, "yarn"),
                    (a + ".rope.scaling.factor", T_FLOAT32, rs["factor"]),
                    (a + ".rope.scaling.original_context_length", T_UINT32, rs["original_max_position_embeddings"])]
    return [
        ("general.architecture", T_STRING, a),
        ("general.name", T_STRING, "plexus checkpoint"),
        ("general.file_type", T_UINT32, file_type),
        (a + ".vocab_size", T_UINT32, cfg["vocab_size"]),
        (a + ".context_length", T_UINT32, cfg["max_position_embeddings"]),
        (a + ".embedding_length", T_UINT32, hidden),
        (a + ".block_count", T_UINT32, cfg["num_hidden_layers"]),
        (a + ".feed_forward_length", T_UINT32, cfg["intermediate_size"]),
        (a + ".attention.head_count", T_UINT32, n_heads),
        (a + ".attention.head_count_kv", T_UINT32, cfg.get("num_key_value_heads", n_heads)),
        (a + ".attention.key_length", T_UINT32, head_dim),
        (a + ".attention.value_length", T_UINT32, head_dim),
        (a + ".attention.layer_norm_rms_epsilon", T_FLOAT32, cfg.get("rms_norm_eps", 1e-6)),
        (a + ".rope.freq_base", T_FLOAT32, cfg.get("rope_theta", 10000.0)),
        (a + ".rope.dimension_count", T_UINT32, head_dim),
    ] + moe + [
        ("tokenizer.ggml.model", T_STRING, "gpt2"),
        ("tokenizer.ggml.pre", T_STRING, "default"),
        ("tokenizer.ggml.tokens", T_ARRAY, (T_STRING, tokens)),
        ("tokenizer.ggml.token_type", T_ARRAY, (T_INT32, types)),
        ("tokenizer.ggml.merges", T_ARRAY, (T_STRING, [])),
        ("tokenizer.ggml.bos_token_id", T_UINT32, ids["bos"]),
        ("tokenizer.ggml.eos_token_id", T_UINT32, ids["eos"]),
        ("tokenizer.ggml.unknown_token_id", T_UINT32, ids["unk"]),
        ("tokenizer.ggml.add_bos_token", T_BOOL, True),
        ("tokenizer.ggml.add_eos_token", T_BOOL, False),
    ]


# --- writing GGUF -------------------------------------------------------------------------------

def pack_string(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def pack_value(vtype, value):
    if vtype == T_UINT32:
        return struct.pack("<I", value)
    if vtype == T_INT32:
        return struct.pack("<i", value)
    if vtype == T_FLOAT32:
        return struct.pack("<f", value)
    if vtype == T_BOOL:
        return struct.pack("<B", 1 if value else 0)
    if vtype == T_STRING:
        return pack_string(value)
    if vtype == T_ARRAY:
        etype, items = value
        if etype == T_INT32:
            body = np.asarray(items, dtype="<i4").tobytes()
        else:
            body = b"".join(pack_value(etype, x) for x in items)
        return struct.pack("<IQ", etype, len(items)) + body
    raise ValueError(vtype)


def pad(n):
    return (ALIGNMENT - n % ALIGNMENT) % ALIGNMENT


def write_gguf(path, kvs, tensors):
    head = [GGUF_MAGIC, struct.pack("<IQQ", GGUF_VERSION, len(tensors), len(kvs))]
    for key, vtype, value in kvs:
        head += [pack_string(key), struct.pack("<I", vtype), pack_value(vtype, value)]
    offset = 0
    for name, ttype, arr in tensors:
        dims = list(reversed(arr.shape))  # GGUF lists the fastest-varying dimension first
        head += [pack_string(name), struct.pack("<I", len(dims)), struct.pack(f"<{len(dims)}Q", *dims),
                 struct.pack("<IQ", ttype, offset)]
        offset += arr.nbytes + pad(arr.nbytes)
    header = b"".join(head)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(header + b"\0" * pad(len(header)))
        for _, _, arr in tensors:
            data = np.ascontiguousarray(arr).tobytes()
            f.write(data + b"\0" * pad(len(data)))
    os.replace(tmp, path)


def convert(model_dir, out_path, permute_rope=True):
    cfg, tensors = load_checkpoint(model_dir)
    out = gguf_tensors(cfg, tensors, permute_rope)
    matrix_type = out[0][1]
    write_gguf(out_path, metadata(cfg, FILE_TYPE[matrix_type]), out)
    return cfg


def main(argv):
    if len(argv) != 3 or argv[1] in ("-h", "--help"):
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    try:
        convert(argv[1], argv[2])
    except InputError as e:
        print(f"hf_to_gguf: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
