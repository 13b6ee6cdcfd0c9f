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
    a bias unless bias=False) or "rmsnorm" (no mean, no bias), which with
    offset=1 scales by (1 + weight) as Gemma's does (its weight then starts
    at 0)."""

    def __init__(self, width, kind="layernorm", bias=True, eps=1e-5, offset=0.0):
        super().__init__()
        self.kind, self.eps, self.offset = kind, eps, offset
        self.weight = nn.Parameter(torch.full((width,), 1.0 - offset))
        self.bias = nn.Parameter(torch.zeros(width)) if kind == "layernorm" and bias else None

    def forward(self, x):
        if self.kind == "rmsnorm":
            return x / torch.sqrt((x * x).mean(-1, keepdim=True) + self.eps) * (self.offset + self.weight)
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, self.eps)


def norm_offset(cfg):
    """What every RMSNorm adds to its weight: 1 with norm_offset, else 0."""
    return 1.0 if cfg.get("norm_offset") else 0.0


def block_norm(cfg):
    """A block's (or the final) norm as the config sets it."""
    bias = cfg.get("norm_bias")
    return Norm(cfg["d_model"], cfg.get("norm") or "layernorm", bias is None or bias,
                cfg.get("norm_eps") or 1e-5, norm_offset(cfg))


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


def rope(x, inv_freq):
    """Rotary embeddings, GPT-NeoX/Llama convention: x (B, heads, T, d); the
    first R = 2 len(inv_freq) channels turn (pairs (i, i + R/2)), the rest
    pass (GPT-NeoX rotary_ndims)."""
    T, R = x.shape[-2], 2 * inv_freq.shape[0]
    angles = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq)  # (T, R/2)
    emb = torch.cat((angles, angles), dim=-1)                            # (T, R)
    turned, rest = x[..., :R], x[..., R:]
    return torch.cat((turned * emb.cos() + rotate_half(turned) * emb.sin(), rest), dim=-1)


def is_global(cfg, layer):
    """Whether layer sees every earlier position though the model has a
    window (Gemma 2/3's global layers, GPT-Neo's "global" attention)."""
    return layer in (cfg.get("global_layers") or [])


def rope_frequencies(cfg, layer):
    """Layer's rotary inverse frequencies, as transformers'
    modeling_rope_utils computes them: _compute_default_rope_parameters on
    rotary_dims channels (all of the head by default), then
    _compute_linear_scaling_rope_parameters (divide by the factor) or
    _compute_llama3_parameters. A windowed layer of a config with
    local_rope_base uses that base and no scaling (Gemma 3's
    rope_local_base_freq)."""
    dh = cfg.get("head_dim") or cfg["d_model"] // cfg["heads"]
    dim = cfg.get("rotary_dims") or dh
    base, scaling = cfg.get("rope_base") or 10000.0, cfg.get("rope_scaling") or ""
    if cfg.get("local_rope_base") and cfg.get("window") and not is_global(cfg, layer):
        base, scaling = cfg["local_rope_base"], ""
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).to(torch.float64) / dim))
    factor = cfg.get("rope_factor")
    if scaling == "linear":
        inv_freq = inv_freq / factor
    elif scaling == "llama3":
        low, high = cfg["rope_low_freq_factor"], cfg["rope_high_freq_factor"]
        old = cfg["rope_original_context"]
        low_wavelen, high_wavelen = old / low, old / high
        wavelen = 2 * math.pi / inv_freq
        scaled = torch.where(wavelen > low_wavelen, inv_freq / factor, inv_freq)
        smooth = (old / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelen < high_wavelen) * ~(wavelen > low_wavelen)
        inv_freq = torch.where(medium, smoothed, scaled)
    return inv_freq


def sinusoidal(T, D):
    pos = torch.arange(T, dtype=torch.float64)[:, None]
    div = torch.pow(10000.0, torch.arange(0, D, 2, dtype=torch.float64) / D)
    table = torch.zeros(T, D, dtype=torch.float64)
    table[:, 0::2] = torch.sin(pos / div)
    table[:, 1::2] = torch.cos(pos / div)
    return table


class Attention(nn.Module):
    def __init__(self, cfg, layer=0):
        super().__init__()
        d = cfg["d_model"]
        self.heads = cfg["heads"]
        self.kv_heads = cfg.get("kv_heads") or self.heads
        self.position = cfg.get("position") or "learned"
        if self.position == "rope":
            self.register_buffer("inv_freq", rope_frequencies(cfg, layer), persistent=False)
        self.window = 0 if is_global(cfg, layer) else cfg.get("window") or 0
        self.latent = cfg.get("kv_latent") or 0
        self.dh = dh = cfg.get("head_dim") or d // self.heads
        self.scale = cfg.get("attn_scale") or 0                              # GPT-Neo's 1, Gemma's own; 0: 1/sqrt(d)
        self.softcap = cfg.get("attn_softcap") or 0
        if self.latent:
            self.q = nn.Linear(d, d, bias=cfg["qkv_bias"])
            self.kv_down = nn.Linear(d, self.latent, bias=False)
            self.kv_up = nn.Linear(self.latent, 2 * d, bias=cfg["qkv_bias"])
        else:
            self.qkv = nn.Linear(d, (self.heads + 2 * self.kv_heads) * dh, bias=cfg["qkv_bias"])
        self.out = nn.Linear(self.heads * dh, d, bias=cfg["out_bias"])
        self.qk_all = cfg.get("qk_norm_scope") == "all"
        if cfg.get("qk_norm"):
            eps, offset = cfg.get("norm_eps") or 1e-5, norm_offset(cfg)
            q_width, k_width = (self.heads * dh, self.kv_heads * dh) if self.qk_all else (dh, dh)
            self.q_norm = Norm(q_width, "rmsnorm", eps=eps, offset=offset)  # per head: one weight for every head;
            self.k_norm = Norm(k_width, "rmsnorm", eps=eps, offset=offset)  # all: OLMo 2's, over the projection
        else:
            self.q_norm = self.k_norm = None

    def forward(self, x):
        B, T, D = x.shape
        H, G = self.heads, self.kv_heads
        d = self.dh
        if self.latent:
            q = self.q(x)
            k, v = self.kv_up(self.kv_down(x)).split(D, dim=-1)
        else:
            q, k, v = self.qkv(x).split([H * d, G * d, G * d], dim=-1)
        if self.q_norm is not None and self.qk_all:                          # OLMo 2: before the head split
            q, k = self.q_norm(q), self.k_norm(k)
        q = q.view(B, T, H, d).transpose(1, 2)                               # (B, H, T, d)
        k = k.reshape(B, T, -1, d).transpose(1, 2)                           # (B, G, T, d)
        v = v.reshape(B, T, -1, d).transpose(1, 2)                           # (B, G, T, d)
        if self.q_norm is not None and not self.qk_all:                      # per head, before the rotation
            q, k = self.q_norm(q), self.k_norm(k)
        if self.position == "rope":
            q, k = rope(q, self.inv_freq.to(torch.float64)), rope(k, self.inv_freq.to(torch.float64))
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
        y = (a @ v).transpose(1, 2).reshape(B, T, H * d)                    # (B, T, H*d)
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
    """attention-only: x + attn(x); full, with norm_placement "pre":
    x + f(ln(x)) for f = attn then mlp, "sandwich" (Gemma 2 and 3):
    x + ln_post(f(ln(x))), "post" (OLMo 2): x + ln_post(f(x)); with
    parallel_residual (GPT-NeoX): x + (mlp(ln2(x)) + attn(ln1(x)))."""

    def __init__(self, cfg, layer=0):
        super().__init__()
        self.full = cfg["mlp"]
        placement = cfg.get("norm_placement") or "pre"
        self.pre = self.full and placement != "post"
        self.post = self.full and placement != "pre"
        self.parallel = bool(cfg.get("parallel_residual"))
        if self.pre:
            self.ln1 = block_norm(cfg)
        self.attn = Attention(cfg, layer)
        if self.post:
            self.ln1_post = block_norm(cfg)
        if self.pre:
            self.ln2 = block_norm(cfg)
        if self.full:
            self.mlp = MLP(cfg)
        if self.post:
            self.ln2_post = block_norm(cfg)

    def sublayer(self, f, x, ln, ln_post):
        y = f(ln(x) if self.pre else x)
        return ln_post(y) if self.post else y

    def forward(self, x):
        if not self.full:
            y, a = self.attn(x)
            return x + y, a
        attention = []

        def attend(h):
            y, a = self.attn(h)
            attention.append(a)
            return y
        if self.parallel:
            y = attend(self.ln1(x))
            return x + (self.mlp(self.ln2(x)) + y), attention[0]
        x = x + self.sublayer(attend, x, getattr(self, "ln1", None), getattr(self, "ln1_post", None))
        x = x + self.sublayer(self.mlp, x, getattr(self, "ln2", None), getattr(self, "ln2_post", None))
        return x, attention[0]


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
        self.blocks = nn.ModuleList([Block(cfg, i) for i in range(cfg["layers"])])
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
