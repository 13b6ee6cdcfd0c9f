#!/usr/bin/python3
"""PyTorch reference fixtures for model/pytorch_test.go.

Regenerate (byte-identical output) from the repository root with:

    /usr/bin/python3 model/testdata/pytorch/gen_fixtures.py

Only /usr/bin/python3 has torch here (Debian python3-torch 1.13); the pyenv
python3 on PATH does not.

AttnLM below is written from the formulas in the README ("The model, exactly"), independently of the Go
code, with the parameter names and nn.Linear (out, in) layouts of
model.Config.ParamSpecs:

    x      = tok_emb[tokens] + pos_emb[0:T]                      (B, T, D)
    block  = attention-only:  x = x + attn(x)
             full (mlp):      x = x + attn(ln1(x)); x = x + mlp(ln2(x))
    attn   : qkv = x W_qkv^T [+ b_qkv], rows [q | k | v], head h at rows
             [h*d, (h+1)*d) of each; s = q k^T / sqrt(d); causal mask;
             a = softmax over keys (masked entries exactly 0);
             y = (a v) heads concatenated, then W_out^T [+ b_out]
    mlp    : proj(gelu_tanh(fc(x)))
    LN     : biased variance, eps 1e-5
    logits = lm_head([ln_f](x))                                  (B*T, V)
    loss   = sum(mask * CE) / sum(mask)

Everything is computed in float64. Weights are drawn from a fixed seed, are not
small (std 0.3-0.45, nonzero biases, LayerNorm weights != 1) so that a wrong
formula shows, and are rounded to 4 decimals so the JSON holds them exactly and
stays small; every output is rounded to 12 significant digits, far below the
tolerances of the Go test.
"""

import json
import math
import os
import sys

# One thread: float64 reductions in a fixed order, so reruns are byte-identical.
os.environ["OMP_NUM_THREADS"] = "1"
os.environ["OPENBLAS_NUM_THREADS"] = "1"

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    sys.exit("gen_fixtures.py: torch is not importable; run it with /usr/bin/python3 "
             "(apt-get install python3-torch libopenblas0-pthread)")

torch.set_num_threads(1)
HERE = os.path.dirname(os.path.abspath(__file__))


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


def init_weights(model, gen):
    """Deterministic, deliberately non-small weights, rounded to 4 decimals."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if ".ln" in name or name.startswith("ln_f"):
                base, std = (1.0, 0.3) if name.endswith("weight") else (0.0, 0.2)
            elif name.endswith("bias"):
                base, std = 0.0, 0.2
            elif "emb" in name:
                base, std = 0.0, 0.45
            else:
                base, std = 0.0, 0.3
            v = base + std * torch.randn(p.shape, generator=gen, dtype=torch.float64)
            p.copy_(torch.round(v * 1e4) / 1e4)


def r12(x):
    """Round to 12 significant digits: short JSON, error ~1e-12 relative."""
    return float("%.12g" % x)


def flat(t):
    return [r12(v) for v in t.detach().reshape(-1).tolist()]


def make_case(name, cfg, batch, seq_len, seed):
    gen = torch.Generator().manual_seed(seed)
    model = AttnLM(cfg).double()
    order = param_order(cfg)
    got = [n for n, _ in model.named_parameters()]
    if sorted(got) != sorted(order):
        sys.exit("%s: module parameters %s != ParamSpecs names %s" % (name, got, order))
    init_weights(model, gen)
    params = dict(model.named_parameters())

    V = cfg["vocab"]
    tokens = torch.randint(0, V, (batch, seq_len), generator=gen)
    tokens[0, 1] = tokens[0, 0]  # repeated ids: embedding gradients must accumulate
    tokens[1, 3] = tokens[0, 0]
    targets = torch.randint(0, V, (batch, seq_len), generator=gen)
    mask = torch.ones(batch, seq_len, dtype=torch.float64)
    mask[:, 0] = 0.0  # unscored positions: their CE must not count
    mask[1, seq_len - 2] = 0.0

    logits, attention = model(tokens)
    ce = F.cross_entropy(logits, targets.reshape(-1), reduction="none")
    m = mask.reshape(-1)
    loss = (ce * m).sum() / m.sum()
    loss.backward()

    case = {
        "name": name,
        "config": cfg,
        "batch": batch,
        "seq_len": seq_len,
        "weights": {n: {"shape": list(params[n].shape),
                        "data": params[n].detach().reshape(-1).tolist()} for n in order},
        "tokens": tokens.tolist(),
        "targets": targets.tolist(),
        "loss_mask": mask.tolist(),
        "logits": [flat(row) for row in logits],
        "attention": [[[[flat(qrow) for qrow in head] for head in b] for b in a] for a in attention],
        "loss": r12(loss.item()),
        "grads": {n: flat(params[n].grad) for n in order},
    }
    path = os.path.join(HERE, name + ".json")
    text = json.dumps(case, separators=(",", ":"), sort_keys=False) + "\n"
    with open(path, "w") as f:
        f.write(text)
    print("%s: %d bytes, loss %.12g" % (path, len(text), loss.item()))


def config(**kw):
    cfg = {"vocab": 0, "context": 0, "d_model": 0, "heads": 0, "layers": 0, "mlp": False,
           "d_ff": 0, "qkv_bias": False, "out_bias": False, "lm_head_bias": False, "dropout": 0.0}
    cfg.update(kw)
    return cfg


def main():
    make_case("attn_only", config(vocab=11, context=7, d_model=16, heads=4, layers=1,
                                  qkv_bias=True, out_bias=True, lm_head_bias=True),
              batch=2, seq_len=7, seed=1234)
    # context > seq_len: the graph must use only the first T rows of pos_emb.
    make_case("mlp_2layer", config(vocab=9, context=8, d_model=16, heads=2, layers=2, mlp=True,
                                   d_ff=32, qkv_bias=False, out_bias=True, lm_head_bias=True),
              batch=2, seq_len=6, seed=5678)
    # The attention family: each from the formulas above, independently of Go.
    make_case("rope_gqa", config(vocab=11, context=7, d_model=16, heads=4, layers=2, mlp=True, d_ff=32,
                                 qkv_bias=True, out_bias=True, position="rope", kv_heads=2),
              batch=2, seq_len=7, seed=91)
    make_case("alibi_mqa_window", config(vocab=9, context=7, d_model=16, heads=4, layers=2, qkv_bias=True,
                                         out_bias=True, position="alibi", kv_heads=1, window=3),
              batch=2, seq_len=7, seed=92)
    make_case("sinusoidal", config(vocab=9, context=6, d_model=16, heads=2, layers=1, mlp=True, d_ff=32,
                                   out_bias=True, lm_head_bias=True, position="sinusoidal"),
              batch=2, seq_len=6, seed=93)
    make_case("mla_none", config(vocab=10, context=7, d_model=16, heads=4, layers=2, mlp=True, d_ff=32,
                                 qkv_bias=True, out_bias=True, position="none", kv_latent=6, window=4),
              batch=2, seq_len=7, seed=94)


if __name__ == "__main__":
    main()
