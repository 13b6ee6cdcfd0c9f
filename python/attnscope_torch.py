"""attnscope_torch: use attnscope checkpoints from PyTorch.

    import sys; sys.path.insert(0, "python")       # from the repository root
    import attnscope_torch
    model, info = attnscope_torch.load("runs/copy/checkpoint.safetensors")
    logits, attention = model(tokens)              # tokens: (B, T) int64

`AttnLM` is the model of docs/model.md written in PyTorch, with the tensor
names and layouts of attnscope's checkpoints, so `load_state_dict` takes a
checkpoint's tensors as they are. It covers the attention family (learned,
sinusoidal, rope, alibi and no positions; grouped- and multi-query heads;
windows; latent attention). `read_safetensors` reads the file in pure Python
(Debian's python3 has no safetensors package). The model tests
(model/testdata/pytorch/gen_fixtures.py) and model.TestPyTorchLoadsCheckpoint
use this module.
"""

import json
import math
import struct

import torch
import torch.nn as nn


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def alibi_slopes(n):
    """Press et al.'s head slopes, as their reference code computes them."""
    def power_of_2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start ** i for i in range(n)]
    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + alibi_slopes(2 * closest)[0::2][:n - closest]


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rope(x, base):
    """Rotary embeddings, GPT-NeoX/Llama convention: x (B, heads, T, d)."""
    T, d = x.shape[-2], x.shape[-1]
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    angles = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq)  # (T, d/2)
    emb = torch.cat((angles, angles), dim=-1)                            # (T, d)
    return x * emb.cos() + rotate_half(x) * emb.sin()


def sinusoidal(T, D):
    pos = torch.arange(T, dtype=torch.float64)[:, None]
    div = torch.pow(10000.0, torch.arange(0, D, 2, dtype=torch.float64) / D)
    table = torch.zeros(T, D, dtype=torch.float64)
    table[:, 0::2] = torch.sin(pos / div)
    table[:, 1::2] = torch.cos(pos / div)
    return table


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d = cfg["d_model"]
        self.heads = cfg["heads"]
        self.kv_heads = cfg.get("kv_heads") or self.heads
        self.position = cfg.get("position") or "learned"
        self.rope_base = cfg.get("rope_base") or 10000.0
        self.window = cfg.get("window") or 0
        self.latent = cfg.get("kv_latent") or 0
        dh = d // self.heads
        if self.latent:
            self.q = nn.Linear(d, d, bias=cfg["qkv_bias"])
            self.kv_down = nn.Linear(d, self.latent, bias=False)
            self.kv_up = nn.Linear(self.latent, 2 * d, bias=cfg["qkv_bias"])
        else:
            self.qkv = nn.Linear(d, d + 2 * self.kv_heads * dh, bias=cfg["qkv_bias"])
        self.out = nn.Linear(d, d, bias=cfg["out_bias"])

    def forward(self, x):
        B, T, D = x.shape
        H, G = self.heads, self.kv_heads
        d = D // H
        if self.latent:
            q = self.q(x)
            k, v = self.kv_up(self.kv_down(x)).split(D, dim=-1)
        else:
            q, k, v = self.qkv(x).split([D, G * d, G * d], dim=-1)
        q = q.view(B, T, H, d).transpose(1, 2)                               # (B, H, T, d)
        k = k.reshape(B, T, -1, d).transpose(1, 2)                           # (B, G, T, d)
        v = v.reshape(B, T, -1, d).transpose(1, 2)                           # (B, G, T, d)
        if self.position == "rope":
            q, k = rope(q, self.rope_base), rope(k, self.rope_base)
        k = k.repeat_interleave(H // k.shape[1], dim=1)                      # (B, H, T, d)
        v = v.repeat_interleave(H // v.shape[1], dim=1)
        s = q @ k.transpose(-2, -1) / math.sqrt(d)                           # (B, H, T, T)
        i = torch.arange(T)[:, None]
        j = torch.arange(T)[None, :]
        if self.position == "alibi":
            slopes = torch.tensor(alibi_slopes(H), dtype=torch.float64)[:, None, None]
            s = s - slopes * (i - j).to(torch.float64).abs()
        allowed = j <= i
        if self.window:
            allowed = allowed & (j > i - self.window)
        s = s.masked_fill(~allowed, float("-inf"))
        a = torch.softmax(s, dim=-1)                                        # (B, H, T, T)
        y = (a @ v).transpose(1, 2).reshape(B, T, D)                        # (B, T, D)
        return self.out(y), a


class MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.fc = nn.Linear(cfg["d_model"], cfg["d_ff"])
        self.proj = nn.Linear(cfg["d_ff"], cfg["d_model"])

    def forward(self, x):
        return self.proj(gelu_tanh(self.fc(x)))


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.full = cfg["mlp"]
        if self.full:
            self.ln1 = nn.LayerNorm(cfg["d_model"], eps=1e-5)
        self.attn = Attention(cfg)
        if self.full:
            self.ln2 = nn.LayerNorm(cfg["d_model"], eps=1e-5)
            self.mlp = MLP(cfg)

    def forward(self, x):
        if not self.full:
            y, a = self.attn(x)
            return x + y, a
        y, a = self.attn(self.ln1(x))
        x = x + y
        return x + self.mlp(self.ln2(x)), a


class AttnLM(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.position = cfg.get("position") or "learned"
        self.tok_emb = nn.Embedding(cfg["vocab"], cfg["d_model"])
        if self.position == "learned":
            self.pos_emb = nn.Embedding(cfg["context"], cfg["d_model"])
        self.blocks = nn.ModuleList([Block(cfg) for _ in range(cfg["layers"])])
        if cfg["mlp"]:
            self.ln_f = nn.LayerNorm(cfg["d_model"], eps=1e-5)
        self.lm_head = nn.Linear(cfg["d_model"], cfg["vocab"], bias=cfg["lm_head_bias"])

    def forward(self, tokens):
        B, T = tokens.shape
        x = self.tok_emb(tokens)                                         # (B, T, D)
        if self.position == "learned":
            x = x + self.pos_emb(torch.arange(T))[None]
        elif self.position == "sinusoidal":
            x = x + sinusoidal(T, self.cfg["d_model"])[None]
        attention = []
        for block in self.blocks:
            x, a = block(x)
            attention.append(a)
        if self.cfg["mlp"]:
            x = self.ln_f(x)
        return self.lm_head(x).reshape(B * T, -1), attention           # (B*T, V)


def param_order(cfg):
    """The names of model.Config.ParamSpecs, in its order."""
    names = ["tok_emb.weight"]
    if (cfg.get("position") or "learned") == "learned":
        names.append("pos_emb.weight")
    for i in range(cfg["layers"]):
        p = "blocks.%d." % i
        if cfg["mlp"]:
            names += [p + "ln1.weight", p + "ln1.bias"]
        if cfg.get("kv_latent"):
            names += [p + "attn.q.weight"] + ([p + "attn.q.bias"] if cfg["qkv_bias"] else [])
            names.append(p + "attn.kv_down.weight")
            names += [p + "attn.kv_up.weight"] + ([p + "attn.kv_up.bias"] if cfg["qkv_bias"] else [])
        else:
            names.append(p + "attn.qkv.weight")
            if cfg["qkv_bias"]:
                names.append(p + "attn.qkv.bias")
        names.append(p + "attn.out.weight")
        if cfg["out_bias"]:
            names.append(p + "attn.out.bias")
        if cfg["mlp"]:
            names += [p + "ln2.weight", p + "ln2.bias", p + "mlp.fc.weight", p + "mlp.fc.bias",
                      p + "mlp.proj.weight", p + "mlp.proj.bias"]
    if cfg["mlp"]:
        names += ["ln_f.weight", "ln_f.bias"]
    names.append("lm_head.weight")
    if cfg["lm_head_bias"]:
        names.append("lm_head.bias")
    return names



DTYPES = {"F32": torch.float32, "F64": torch.float64}


def read_safetensors(path):
    """The tensors of a safetensors file by name, and its metadata."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    metadata = header.pop("__metadata__", {})
    data = raw[8 + n:]
    tensors = {}
    for name, t in header.items():
        if t["dtype"] not in DTYPES:
            raise ValueError("%s: tensor %s has dtype %s; want F32 or F64" % (path, name, t["dtype"]))
        start, end = t["data_offsets"]
        flat = torch.frombuffer(bytearray(data[start:end]), dtype=DTYPES[t["dtype"]])
        tensors[name] = flat.reshape(t["shape"]).clone()
    return tensors, metadata


def load(path, dtype=torch.float64):
    """The model of an attnscope checkpoint with its weights, in eval mode,
    and the checkpoint's metadata (run config, step)."""
    tensors, metadata = read_safetensors(path)
    run = json.loads(metadata["config"])
    model = AttnLM(run["model"]).to(dtype)
    model.load_state_dict({k: v.to(dtype) for k, v in tensors.items()}, strict=True)
    model.eval()
    return model, {"config": run, "step": int(metadata.get("step", 0))}
