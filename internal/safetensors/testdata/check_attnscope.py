"""Independent check that an attnscope checkpoint is real safetensors that
PyTorch can use. Run by hand (the Go tests never need Python):

    /usr/bin/python3 internal/safetensors/testdata/check_attnscope.py checkpoint/testdata/checkpoint_tiny.safetensors

It parses the file with nothing but struct/json (the `safetensors` pip package
is not installed here), checks the layout rules the reference implementation
enforces, builds torch tensors, and loads them with
load_state_dict(strict=True) into a PyTorch module whose parameter names and
shapes are written out from the README's "Checkpoint format", not from the Go code.
"""
import json
import struct
import sys

import torch
from torch import nn

DTYPES = {"F32": (torch.float32, 4), "F64": (torch.float64, 8)}


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    assert (8 + n) % 8 == 0, "data section not 8-byte aligned"
    header = json.loads(raw[8 : 8 + n].decode("utf-8"))
    metadata = header.pop("__metadata__", {})
    data = raw[8 + n :]
    spans = sorted((v["data_offsets"][0], v["data_offsets"][1], k) for k, v in header.items())
    pos = 0
    for begin, end, name in spans:
        assert begin == pos, f"{name}: gap or overlap at {begin}, expected {pos}"
        pos = end
    assert pos == len(data), "trailing bytes"
    tensors = {}
    for name, v in header.items():
        dtype, size = DTYPES[v["dtype"]]
        begin, end = v["data_offsets"]
        count = 1
        for d in v["shape"]:
            count *= d
        assert end - begin == count * size, f"{name}: size mismatch"
        buf = bytearray(data[begin:end])
        tensors[name] = torch.frombuffer(buf, dtype=dtype).reshape(v["shape"]).clone()
    return tensors, metadata


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        d = c["d_model"]
        if c["mlp"]:
            self.ln1 = nn.LayerNorm(d)
            self.ln2 = nn.LayerNorm(d)
            self.mlp = nn.Module()
            self.mlp.fc = nn.Linear(d, c["d_ff"])
            self.mlp.proj = nn.Linear(c["d_ff"], d)
        self.attn = nn.Module()
        self.attn.qkv = nn.Linear(d, 3 * d, bias=c["qkv_bias"])
        self.attn.out = nn.Linear(d, d, bias=c["out_bias"])


class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.tok_emb = nn.Embedding(c["vocab"], c["d_model"])
        self.pos_emb = nn.Embedding(c["context"], c["d_model"])
        self.blocks = nn.ModuleList(Block(c) for _ in range(c["layers"]))
        if c["mlp"]:
            self.ln_f = nn.LayerNorm(c["d_model"])
        self.lm_head = nn.Linear(c["d_model"], c["vocab"], bias=c["lm_head_bias"])


def main(path):
    tensors, metadata = read_safetensors(path)
    assert metadata["format"] == "attnscope/1", metadata
    cfg = json.loads(metadata["config"])["model"]
    dtypes = {t.dtype for t in tensors.values()}
    assert len(dtypes) == 1, dtypes
    model = Model(cfg).to(dtypes.pop())
    model.load_state_dict(tensors, strict=True)
    for name, p in model.state_dict().items():
        assert torch.equal(p, tensors[name]), name
        assert torch.isfinite(p).all(), name
    print(f"ok: {path}: {len(tensors)} tensors, step {metadata['step']}, model {cfg}")
    print("tok_emb.weight[0] =", tensors["tok_emb.weight"][0].tolist())


if __name__ == "__main__":
    main(sys.argv[1])
