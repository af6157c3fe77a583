#!/usr/bin/env python3
"""Writes tests/data/encoder_decoder.json: a 6+6-layer encoder-decoder
transformer in the spillscope graph JSON format, where the encoder output
(`memory`) is read by the cross-attention of every decoder layer — the
long-lived, many-times-reused tensor that oscillates under LRU.

Usage: python3 scripts/gen_encoder_decoder.py > tests/data/encoder_decoder.json
       python3 scripts/gen_encoder_decoder.py --long-source > tests/data/long_source_encdec.json

`--long-source` makes a Whisper-like shape: a 512-token source (the encoder
output is 512 KiB) and a 64-token target with a wide decoder FFN, so every
decoder layer's FFN needs room that LRU takes from the big, long-idle encoder
output.
"""
import json
import sys

LONG = "--long-source" in sys.argv
SEQ, D, FF, LAYERS = 128, 256, 1024, 6
SRC, TGT, FF_DEC = (int(x) for x in __import__("os").environ.get("ED_SHAPE", "512,64,2048").split(",")) if LONG else (SEQ, SEQ, FF)
NAME = "long_source_encdec_6x6" if LONG else "encoder_decoder_6x6"
tensors, ops = [], []


def t(name, shape, kind=None):
    e = {"name": name, "shape": shape, "dtype": "f32"}
    if kind:
        e["kind"] = kind
    tensors.append(e)
    return name


def op(name, op_type, ins, outs):
    ops.append({"name": name, "op_type": op_type, "inputs": ins, "outputs": outs})


def ffn(p, x, seq=SEQ, ff=FF):
    w1 = t(f"{p}.ffn.w1", [D, ff], "weight")
    w2 = t(f"{p}.ffn.w2", [ff, D], "weight")
    h = t(f"{p}.ffn.h", [seq, ff])
    op(f"{p}.ffn.fc1", "MatMul", [x, w1], [h])
    g = t(f"{p}.ffn.gelu", [seq, ff])
    op(f"{p}.ffn.act", "Gelu", [h], [g])
    o = t(f"{p}.ffn.out", [seq, D])
    op(f"{p}.ffn.fc2", "MatMul", [g, w2], [o])
    r = t(f"{p}.ffn.res", [seq, D])
    op(f"{p}.ffn.add", "Add", [x, o], [r])
    n = t(f"{p}.ffn.norm", [seq, D])
    op(f"{p}.ffn.ln", "LayerNormalization", [r], [n])
    return n


def self_attn(p, x, seq=SEQ):
    w = t(f"{p}.attn.wqkv", [D, 3 * D], "weight")
    qkv = t(f"{p}.attn.qkv", [seq, 3 * D])
    op(f"{p}.attn.proj", "MatMul", [x, w], [qkv])
    a = t(f"{p}.attn.ctx", [seq, D])
    op(f"{p}.attn.sdpa", "Attention", [qkv], [a])
    r = t(f"{p}.attn.res", [seq, D])
    op(f"{p}.attn.add", "Add", [x, a], [r])
    n = t(f"{p}.attn.norm", [seq, D])
    op(f"{p}.attn.ln", "LayerNormalization", [r], [n])
    return n


def cross_attn(p, x, memory):
    wq = t(f"{p}.xattn.wq", [D, D], "weight")
    wkv = t(f"{p}.xattn.wkv", [D, 2 * D], "weight")
    q = t(f"{p}.xattn.q", [TGT, D])
    op(f"{p}.xattn.q_proj", "MatMul", [x, wq], [q])
    kv = t(f"{p}.xattn.kv", [SRC, 2 * D])
    op(f"{p}.xattn.kv_proj", "MatMul", [memory, wkv], [kv])
    a = t(f"{p}.xattn.ctx", [TGT, D])
    op(f"{p}.xattn.sdpa", "Attention", [q, kv], [a])
    r = t(f"{p}.xattn.res", [TGT, D])
    op(f"{p}.xattn.add", "Add", [x, a], [r])
    n = t(f"{p}.xattn.norm", [TGT, D])
    op(f"{p}.xattn.ln", "LayerNormalization", [r], [n])
    return n


x = t("src", [SRC, D], "input")
for i in range(LAYERS):
    x = ffn(f"enc{i}", self_attn(f"enc{i}", x, SRC), SRC)
memory = x
y = t("tgt", [TGT, D], "input")
for i in range(LAYERS):
    y = ffn(f"dec{i}", cross_attn(f"dec{i}", self_attn(f"dec{i}", y, TGT), memory), TGT, FF_DEC)
out = t("logits", [TGT, D])
op("head", "Identity", [y], [out])
print(json.dumps({"name": NAME, "tensors": tensors, "ops": ops, "outputs": [out]}, indent=1))
