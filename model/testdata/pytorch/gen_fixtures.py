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


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d = cfg["d_model"]
        self.heads = cfg["heads"]
        self.qkv = nn.Linear(d, 3 * d, bias=cfg["qkv_bias"])
        self.out = nn.Linear(d, d, bias=cfg["out_bias"])

    def forward(self, x):
        B, T, D = x.shape
        H = self.heads
        d = D // H
        q, k, v = self.qkv(x).view(B, T, 3, H, d).permute(2, 0, 3, 1, 4)  # each (B, H, T, d)
        s = q @ k.transpose(-2, -1) / math.sqrt(d)                          # (B, H, T, T)
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        s = s.masked_fill(~causal, float("-inf"))
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
        self.tok_emb = nn.Embedding(cfg["vocab"], cfg["d_model"])
        self.pos_emb = nn.Embedding(cfg["context"], cfg["d_model"])
        self.blocks = nn.ModuleList([Block(cfg) for _ in range(cfg["layers"])])
        if cfg["mlp"]:
            self.ln_f = nn.LayerNorm(cfg["d_model"], eps=1e-5)
        self.lm_head = nn.Linear(cfg["d_model"], cfg["vocab"], bias=cfg["lm_head_bias"])

    def forward(self, tokens):
        B, T = tokens.shape
        x = self.tok_emb(tokens) + self.pos_emb(torch.arange(T))[None]  # (B, T, D)
        attention = []
        for block in self.blocks:
            x, a = block(x)
            attention.append(a)
        if self.cfg["mlp"]:
            x = self.ln_f(x)
        return self.lm_head(x).reshape(B * T, -1), attention           # (B*T, V)


def param_order(cfg):
    """The names of model.Config.ParamSpecs, in its order."""
    names = ["tok_emb.weight", "pos_emb.weight"]
    for i in range(cfg["layers"]):
        p = "blocks.%d." % i
        if cfg["mlp"]:
            names += [p + "ln1.weight", p + "ln1.bias"]
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


if __name__ == "__main__":
    main()
