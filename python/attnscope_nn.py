"""attnscope_nn: the PyTorch half of attnscope_torch (the model AttnLM and
what turns a state dict into a checkpoint's tensors). attnscope_torch
imports it, and torch with it, only when one of these is asked for, so its
safetensors reader and param_order run on a Python without torch.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from attnscope_torch import param_order


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


class Norm(nn.Module):
    """model.norm over the last dimension: "layernorm" (biased variance;
    a bias unless bias=False) or "rmsnorm" (no mean, no bias)."""

    def __init__(self, width, kind="layernorm", bias=True, eps=1e-5):
        super().__init__()
        self.kind, self.eps = kind, eps
        self.weight = nn.Parameter(torch.ones(width))
        self.bias = nn.Parameter(torch.zeros(width)) if kind == "layernorm" and bias else None

    def forward(self, x):
        if self.kind == "rmsnorm":
            return x / torch.sqrt((x * x).mean(-1, keepdim=True) + self.eps) * self.weight
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, self.eps)


def block_norm(cfg):
    """A block's (or the final) norm as the config sets it."""
    bias = cfg.get("norm_bias")
    return Norm(cfg["d_model"], cfg.get("norm") or "layernorm", bias is None or bias,
                cfg.get("norm_eps") or 1e-5)


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
        self.scale = cfg.get("attn_scale") or 0                              # GPT-Neo's 1, Gemma's own; 0: 1/sqrt(d)
        self.softcap = cfg.get("attn_softcap") or 0
        if self.latent:
            self.q = nn.Linear(d, d, bias=cfg["qkv_bias"])
            self.kv_down = nn.Linear(d, self.latent, bias=False)
            self.kv_up = nn.Linear(self.latent, 2 * d, bias=cfg["qkv_bias"])
        else:
            self.qkv = nn.Linear(d, d + 2 * self.kv_heads * dh, bias=cfg["qkv_bias"])
        self.out = nn.Linear(d, d, bias=cfg["out_bias"])
        if cfg.get("qk_norm"):
            eps = cfg.get("norm_eps") or 1e-5
            self.q_norm = Norm(dh, "rmsnorm", eps=eps)                    # one weight for every head
            self.k_norm = Norm(dh, "rmsnorm", eps=eps)                    # and every kv head
        else:
            self.q_norm = self.k_norm = None

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
        if self.q_norm is not None:                                          # before the rotation
            q, k = self.q_norm(q), self.k_norm(k)
        if self.position == "rope":
            q, k = rope(q, self.rope_base), rope(k, self.rope_base)
        k = k.repeat_interleave(H // k.shape[1], dim=1)                      # (B, H, T, d)
        v = v.repeat_interleave(H // v.shape[1], dim=1)
        s = q @ k.transpose(-2, -1)                                          # (B, H, T, T)
        s = s * self.scale if self.scale else s / math.sqrt(d)
        if self.softcap:                                                     # Gemma 2: before the mask
            s = self.softcap * torch.tanh(s / self.softcap)
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


ACTIVATIONS = {
    "gelu_tanh": gelu_tanh,
    "gelu": lambda x: 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0))),
    "relu2": lambda x: torch.relu(x) ** 2,
}


class MLP(nn.Module):
    """proj(act(fc x)), or for swiglu down(silu(gate x) * up x), for geglu
    down(gelu_tanh(gate x) * up x)."""

    def __init__(self, cfg):
        super().__init__()
        D, F = cfg["d_model"], cfg["d_ff"]
        bias = cfg.get("mlp_bias")
        bias = bias is None or bias
        self.activation = cfg.get("activation") or "gelu_tanh"
        if self.activation in ("swiglu", "geglu"):
            self.gate = nn.Linear(D, F, bias=bias)
            self.up = nn.Linear(D, F, bias=bias)
            self.down = nn.Linear(F, D, bias=bias)
        else:
            self.fc = nn.Linear(D, F, bias=bias)
            self.proj = nn.Linear(F, D, bias=bias)

    def forward(self, x):
        if self.activation == "swiglu":
            g = self.gate(x)
            return self.down(g * torch.sigmoid(g) * self.up(x))
        if self.activation == "geglu":
            return self.down(gelu_tanh(self.gate(x)) * self.up(x))
        return self.proj(ACTIVATIONS[self.activation](self.fc(x)))


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.full = cfg["mlp"]
        if self.full:
            self.ln1 = block_norm(cfg)
        self.attn = Attention(cfg)
        if self.full:
            self.ln2 = block_norm(cfg)
            self.mlp = MLP(cfg)

    def forward(self, x):
        if not self.full:
            y, a = self.attn(x)
            return x + y, a
        y, a = self.attn(self.ln1(x))
        x = x + y
        return x + self.mlp(self.ln2(x)), a


class TiedHead(nn.Module):
    """An LM head whose weight is the token embedding's; only its bias (if
    any) is its own, named lm_head.bias."""

    def __init__(self, embedding, vocab, bias):
        super().__init__()
        self.embedding = [embedding]                                     # a list: not a submodule
        self.bias = nn.Parameter(torch.zeros(vocab)) if bias else None

    def forward(self, x):
        logits = x @ self.embedding[0].weight.t()                        # (B, T, V)
        return logits if self.bias is None else logits + self.bias


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
            self.ln_f = block_norm(cfg)
        self.tied = bool(cfg.get("tie_embeddings"))
        if self.tied:
            self.lm_head = TiedHead(self.tok_emb, cfg["vocab"], cfg["lm_head_bias"])
        else:
            self.lm_head = nn.Linear(cfg["d_model"], cfg["vocab"], bias=cfg["lm_head_bias"])

    def forward(self, tokens):
        B, T = tokens.shape
        x = self.tok_emb(tokens)                                         # (B, T, D)
        if self.cfg.get("embed_scale"):                                  # Gemma's; a tied head reads tok_emb unscaled
            x = x * self.cfg["embed_scale"]
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
        logits = self.lm_head(x).reshape(B * T, -1)                      # (B*T, V)
        cap = self.cfg.get("final_softcap")
        if cap:                                                          # Gemma 2's
            logits = cap * torch.tanh(logits / cap)
        return logits, attention


def checkpoint_tensors(state_dict, model_config, dtype=torch.float32):
    """The tensors of state_dict in the order and with the shapes of the
    model model_config describes (param_order), as contiguous dtype tensors.
    A missing or unexpected name, a wrong shape or a value that is not
    finite raises ValueError naming it."""
    names = param_order(model_config)
    missing = [n for n in names if n not in state_dict]
    unexpected = sorted(set(state_dict) - set(names))
    if missing or unexpected:
        raise ValueError("the state dict does not hold the model of the config: missing %s, unexpected %s"
                         % (missing or "none", unexpected or "none"))
    shapes = {k: tuple(v.shape) for k, v in AttnLM(model_config).state_dict().items()}
    out = []
    for name in names:
        t = state_dict[name].detach()
        if tuple(t.shape) != shapes[name]:
            raise ValueError("%s has shape %s; the config's model wants %s" % (name, list(t.shape), list(shapes[name])))
        if not torch.isfinite(t).all():
            raise ValueError("%s holds a NaN or infinite value" % name)
        out.append((name, t.to(dtype).contiguous()))
    return out
