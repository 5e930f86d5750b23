#!/usr/bin/env python3
"""Reads llama-quantize's output files for record_mix_choices.sh (by hand, never by the tests).

  mix_choices.py record CASE MODEL_DIR MIX FILE.gguf >> mix_choices.jsonl
      one JSON line: the case, the model facts the mix rules use (from MODEL_DIR/config.json), the
      mix, and every tensor's type and dims (GGUF order, innermost first) as the file stores them.
  mix_choices.py extract OUT.gguf TYPE=FILE.gguf ... --tensors NAME,NAME
      a small GGUF of the named tensors' bytes as llama-quantize wrote them, each renamed
      "TYPE/NAME" (no metadata): the byte-identity goldens of tests/model/quant_golden_test.cpp.
"""
import json
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report_quant import gguf_tensors  # noqa: E402

ALIGNMENT = 32
TYPE_CODES = {"Q4_0": 2, "Q4_1": 3, "Q5_0": 6, "Q5_1": 7, "Q8_0": 8, "IQ4_NL": 20, "IQ4_XS": 23}


def record(case, model_dir, mix, path):
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    facts = {"n_layers": cfg["num_hidden_layers"], "n_heads": cfg["num_attention_heads"],
             "n_kv_heads": cfg.get("num_key_value_heads", cfg["num_attention_heads"]),
             "tied_embeddings": bool(cfg.get("tie_word_embeddings", False))}
    tensors = {name: {"type": tname, "dims": list(dims)} for name, tname, dims, _ in gguf_tensors(path)}
    print(json.dumps({"case": case, "facts": facts, "mix": mix, "tensors": tensors}, sort_keys=True))


def tensor_bytes(path, wanted):
    """{name: (type code, dims, bytes)} of the wanted tensors of a GGUF file."""
    table = gguf_tensors(path)
    with open(path, "rb") as f:
        data = f.read()
    # The data section starts at the aligned end of the header: find it from the tensor table's end.
    pos = 24
    _, n_tensors, n_kv = struct.unpack_from("<IQQ", data, 4)
    scal = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

    def skip(pos, vtype):
        if vtype == 8:
            (n,) = struct.unpack_from("<Q", data, pos)
            return pos + 8 + n
        if vtype == 9:
            etype, count = struct.unpack_from("<IQ", data, pos)
            pos += 12
            if etype in scal:
                return pos + count * scal[etype]
            for _ in range(count):
                pos = skip(pos, etype)
            return pos
        return pos + scal[vtype]

    for _ in range(n_kv):
        pos = skip(pos, 8)
        (vtype,) = struct.unpack_from("<I", data, pos)
        pos = skip(pos + 4, vtype)
    offsets = {}
    for _ in range(n_tensors):
        (n,) = struct.unpack_from("<Q", data, pos)
        name = data[pos + 8:pos + 8 + n].decode()
        pos += 8 + n
        (nd,) = struct.unpack_from("<I", data, pos)
        pos += 4 + 8 * nd
        ttype, off = struct.unpack_from("<IQ", data, pos)
        pos += 12
        offsets[name] = (ttype, off)
    start = pos + (ALIGNMENT - pos % ALIGNMENT) % ALIGNMENT
    out = {}
    for name, _, dims, nbytes in table:
        if name in wanted:
            ttype, off = offsets[name]
            out[name] = (ttype, dims, data[start + off:start + off + nbytes])
    return out


def extract(out_path, pairs, names):
    tensors = []
    for pair in pairs:
        tname, path = pair.split("=", 1)
        got = tensor_bytes(path, set(names))
        for name in names:
            ttype, dims, raw = got[name]
            if ttype != TYPE_CODES[tname]:
                raise SystemExit(f"{path}: {name} is type {ttype}, not {tname}")
            tensors.append((f"{tname}/{name}", ttype, dims, raw))
    pad = lambda n: (ALIGNMENT - n % ALIGNMENT) % ALIGNMENT
    head = [b"GGUF", struct.pack("<IQQ", 3, len(tensors), 0)]
    offset = 0
    for name, ttype, dims, raw in tensors:
        head += [struct.pack("<Q", len(name)), name.encode(), struct.pack("<I", len(dims)),
                 struct.pack(f"<{len(dims)}Q", *dims), struct.pack("<IQ", ttype, offset)]
        offset += len(raw) + pad(len(raw))
    header = b"".join(head)
    with open(out_path, "wb") as f:
        f.write(header + b"\0" * pad(len(header)))
        for _, _, _, raw in tensors:
            f.write(raw + b"\0" * pad(len(raw)))


def main(argv):
    if len(argv) == 6 and argv[1] == "record":
        record(*argv[2:])
        return 0
    if len(argv) >= 5 and argv[1] == "extract" and argv[-2] == "--tensors":
        extract(argv[2], argv[3:-2], argv[-1].split(","))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
