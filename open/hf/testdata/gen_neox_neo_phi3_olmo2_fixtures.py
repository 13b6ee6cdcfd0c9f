#!/usr/bin/python3
"""Hugging Face GPT-NeoX (Pythia), GPT-Neo (TinyStories), Phi-3 and OLMo 2
directories for open/hf's tests, with reference logits and attention.

Regenerate from the repository root (reruns are byte-identical on one machine):

    /usr/bin/python3 open/hf/testdata/gen_neox_neo_phi3_olmo2_fixtures.py

The safetensors writer and the shards are gen_fixtures.py's (imported). Each
forward below is written by hand from transformers' published modeling code,
independently of python/attnscope_torch.py and of the Go code; each function
names the transformers function it follows. In brief:

    GPT-NeoX (modeling_gpt_neox.py)
      query_key_value (3·H·d, D) viewed per head as (H, 3, d): head h's q,
      k and v are rows [3hd, 3hd+d), [3hd+d, 3hd+2d), [3hd+2d, 3hd+3d);
      rotate-half rope on the first rotary_ndims = int(d · rotary_pct)
      channels of each head, inv_freq[i] = base^(-2i/rotary_ndims); scores
      q k^T / sqrt(d); LayerNorms with bias; MLP dense_4h_to_h(act(dense_h_to_4h));
      use_parallel_residual: x + attn(ln1(x)) + mlp(ln2(x)), else the
      sequential pre-norm block; head embed_out.
    GPT-Neo (modeling_gpt_neo.py)
      wte + wpe; q, k, v without bias, out_proj with; scores q k^T, no
      scale; layer i's attention_layers[i] = "local" masks keys j <= i - window_size
      (bias ^ tril(bias, -window_size)); LayerNorms; MLP c_proj(act(c_fc)),
      nn.Linear (out, in); head tied to wte by default.
    Phi-3 (modular_phi3.py)
      qkv_proj rows [q (H·d) | k (G·d) | v (G·d)]; head_dim from config.json;
      rotate-half rope on the first int(d · partial_rotary_factor) channels;
      repeat_kv; sliding_window W lets query i see keys i - W < j <= i;
      gate_up_proj rows [gate (F) | up (F)]: down(up · silu(gate)); RMSNorm.
    OLMo 2 (modular_olmo2.py)
      q_norm, k_norm: RMSNorm over the whole q (H·d) and k (G·d) projections,
      before rope; post-norm block x = x + post_attention_layernorm(attn(x)),
      x = x + post_feedforward_layernorm(mlp(x)); SwiGLU MLP; final norm.

Weights are random and not small (std 0.3, norm weights 1 +- 0.3, biases
std 0.3), drawn in float32; the reference runs in float64 on those values.
NAME.reference.json holds the 16 token ids, the logits (position, vocabulary)
and every layer's attention weights (layer, head, query, key).

    pythia/       GPTNeoXForCausalLM as Pythia's files are: transformers 4.2x
                  keys (rotary_pct 0.5, rotary_emb_base), parallel residual,
                  exact gelu, q/k/v/o biases, untied embed_out, and the
                  legacy buffers attention.bias (BOOL), attention.masked_bias
                  and attention.rotary_emb.inv_freq in every layer
    neox/         GPTNeoXForCausalLM as transformers 5 writes it:
                  rope_parameters (rope_theta 1000, partial_rotary_factor
                  0.25), use_parallel_residual false, attention_bias false,
                  gelu_new, layer_norm_eps 1e-2, tied (no embed_out)
    tinystories/  GPTNeoForCausalLM: attention_types [[["global", "local"], 1]]
                  (layer 0 global, layer 1 local), window_size 4 < the 16
                  tokens, intermediate_size null, tied (no lm_head), the
                  attn.attention.bias (BOOL) and masked_bias buffers
    phi3/         Phi3ForCausalLM: 4 heads of head_dim 8 over hidden 24, 2 kv
                  heads, partial_rotary_factor 0.5, sliding_window 4
    olmo2/        Olmo2ForCausalLM: 3 heads, 1 kv head, rope_theta 5e5,
                  rms_norm_eps 1e-6
"""

import json
import math
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ beside the fixtures
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_fixtures import HERE, torch, write_weights  # noqa: E402

TOKENS = 16


# ---- shared pieces ----

def normal(gen, *shape, mean=0.0):
    return mean + 0.3 * torch.randn(*shape, generator=gen, dtype=torch.float32)


def layer_norm(x, weight, bias, eps):
    """torch.nn.LayerNorm."""
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + eps) * weight + bias


def rms_norm(x, weight, eps):
    """LlamaRMSNorm.forward (Olmo2RMSNorm, Phi3RMSNorm)."""
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps) * weight


def gelu_exact(x):
    """ACT2FN["gelu"]."""
    return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))


def gelu_new(x):
    """ACT2FN["gelu_new"] (NewGELUActivation)."""
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


ACTIVATIONS = {"gelu": gelu_exact, "gelu_new": gelu_new}


def rotate_half(x):
    """modeling_llama.rotate_half."""
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def partial_rope(x, base, rotary):
    """x (heads, T, d): LlamaRotaryEmbedding's default inv_freq over dim =
    rotary channels, then apply_rotary_pos_emb of modeling_gpt_neox /
    modular_phi3: the first `rotary` channels turn, the rest pass."""
    t = x.shape[1]
    inv_freq = base ** (-torch.arange(0, rotary, 2, dtype=torch.float64) / rotary)  # (rotary/2)
    angle = torch.arange(t, dtype=torch.float64)[:, None] * inv_freq[None, :]      # (T, rotary/2)
    angle = torch.cat((angle, angle), dim=-1)                                      # (T, rotary)
    turn, keep = x[..., :rotary], x[..., rotary:]
    return torch.cat((turn * torch.cos(angle) + rotate_half(turn) * torch.sin(angle), keep), dim=-1)


def visible(t, window):
    """(T, T) mask: query i sees key j (j <= i, and j > i - window with one)."""
    i = torch.arange(t)[:, None]
    j = torch.arange(t)[None, :]
    seen = j <= i
    if window:
        seen &= j > i - window
    return seen


def attend(q, k, v, scale, seen, kv_groups=1):
    """eager_attention_forward: q (H, T, d), k and v (G, T, d) repeated to H
    (repeat_kv); returns the heads' outputs (T, H·d) and weights (H, T, T)."""
    k, v = k.repeat_interleave(kv_groups, dim=0), v.repeat_interleave(kv_groups, dim=0)
    s = (q @ k.transpose(-1, -2)) * scale
    s = s.masked_fill(~seen, float("-inf"))
    p = torch.softmax(s, dim=-1)
    o = (p @ v).transpose(0, 1)
    return o.reshape(o.shape[0], -1), p


def linear(x, w, p):
    """nn.Linear: weight (out, in), bias when the file has one."""
    y = x @ w[p + ".weight"].T
    return y + w[p + ".bias"] if p + ".bias" in w else y


def heads(x, n):
    """(T, n·d) -> (n, T, d)."""
    return x.view(x.shape[0], n, -1).transpose(0, 1)


# ---- GPT-NeoX ----

def neox_weights(v, gen):
    d, f, h = v["d"], v["inner"], v["heads"]
    w = {"gpt_neox.embed_in.weight": normal(gen, v["vocab"], d)}
    for i in range(v["layers"]):
        p = "gpt_neox.layers.%d." % i
        for ln in ("input_layernorm", "post_attention_layernorm"):
            w[p + ln + ".weight"] = normal(gen, d, mean=1.0)
            w[p + ln + ".bias"] = normal(gen, d)
        w[p + "attention.query_key_value.weight"] = normal(gen, 3 * d, d)
        w[p + "attention.dense.weight"] = normal(gen, d, d)
        if v["attention_bias"]:
            w[p + "attention.query_key_value.bias"] = normal(gen, 3 * d)
            w[p + "attention.dense.bias"] = normal(gen, d)
        w[p + "mlp.dense_h_to_4h.weight"] = normal(gen, f, d)
        w[p + "mlp.dense_h_to_4h.bias"] = normal(gen, f)
        w[p + "mlp.dense_4h_to_h.weight"] = normal(gen, d, f)
        w[p + "mlp.dense_4h_to_h.bias"] = normal(gen, d)
    w["gpt_neox.final_layer_norm.weight"] = normal(gen, d, mean=1.0)
    w["gpt_neox.final_layer_norm.bias"] = normal(gen, d)
    if not v["tied"]:
        w["embed_out.weight"] = normal(gen, v["vocab"], d)
    return w


def neox_attention(v, w, p, x):
    """GPTNeoXAttention.forward: query_key_value viewed (T, H, 3d) and
    chunked into q, k, v per head; partial rope; eager attention; dense."""
    t, h = x.shape[0], v["heads"]
    hd = v["d"] // h
    qkv = linear(x, w, p + "attention.query_key_value").view(t, h, 3 * hd).transpose(0, 1)  # (H, T, 3d)
    q, k, val = qkv.chunk(3, dim=-1)
    rotary = int(hd * v["rotary_pct"])
    q, k = partial_rope(q, v["theta"], rotary), partial_rope(k, v["theta"], rotary)
    o, weights = attend(q, k, val, hd ** -0.5, visible(t, 0))
    return linear(o, w, p + "attention.dense"), weights


def neox_forward(v, w):
    """GPTNeoXForCausalLM.forward via GPTNeoXLayer.forward."""
    act = ACTIVATIONS[v["act"]]
    x = w["gpt_neox.embed_in.weight"][v["ids"]]
    maps = []
    for i in range(v["layers"]):
        p = "gpt_neox.layers.%d." % i

        def ln(name, y):
            return layer_norm(y, w[p + name + ".weight"], w[p + name + ".bias"], v["eps"])

        def mlp(y):
            return linear(act(linear(y, w, p + "mlp.dense_h_to_4h")), w, p + "mlp.dense_4h_to_h")

        a, weights = neox_attention(v, w, p, ln("input_layernorm", x))
        maps.append(weights)
        if v["parallel"]:
            x = x + a + mlp(ln("post_attention_layernorm", x))
        else:
            x = x + a
            x = x + mlp(ln("post_attention_layernorm", x))
    x = layer_norm(x, w["gpt_neox.final_layer_norm.weight"], w["gpt_neox.final_layer_norm.bias"], v["eps"])
    head = w["gpt_neox.embed_in.weight"] if v["tied"] else w["embed_out.weight"]
    return x @ head.T, maps


def neox_config(v):
    c = {
        "architectures": ["GPTNeoXForCausalLM"], "model_type": "gpt_neox", "bos_token_id": 0, "eos_token_id": 0,
        "hidden_act": v["act"], "hidden_size": v["d"], "initializer_range": 0.02, "intermediate_size": v["inner"],
        "layer_norm_eps": v["eps"], "max_position_embeddings": v["positions"], "num_attention_heads": v["heads"],
        "num_hidden_layers": v["layers"], "tie_word_embeddings": v["tied"], "torch_dtype": "float32",
        "use_cache": True, "use_parallel_residual": v["parallel"], "vocab_size": v["vocab"],
    }
    if v["layout"] == "4.2x":
        c.update(rotary_pct=v["rotary_pct"], rotary_emb_base=v["theta"], transformers_version="4.24.0")
    else:
        c.update(rope_parameters={"rope_type": "default", "rope_theta": v["theta"],
                                  "partial_rotary_factor": v["rotary_pct"]},
                 attention_bias=v["attention_bias"], transformers_version="5.0.0")
    return c


def neox_stored(v, w):
    out = {k: (t, "F32") for k, t in w.items()}
    if v.get("buffers"):
        p, hd = v["positions"], v["d"] // v["heads"]
        rotary = int(hd * v["rotary_pct"])
        inv_freq = 1.0 / (v["theta"] ** (torch.arange(0, rotary, 2).float() / rotary))
        for i in range(v["layers"]):
            a = "gpt_neox.layers.%d.attention." % i
            out[a + "bias"] = (torch.tril(torch.ones(p, p)).view(1, 1, p, p), "BOOL")
            out[a + "masked_bias"] = (torch.tensor(-1e9), "F32")
            out[a + "rotary_emb.inv_freq"] = (inv_freq, "F32")
    return out


# ---- GPT-Neo ----

def neo_weights(v, gen):
    d, f = v["d"], 4 * v["d"]
    w = {"transformer.wte.weight": normal(gen, v["vocab"], d), "transformer.wpe.weight": normal(gen, v["positions"], d)}
    for i in range(v["layers"]):
        p = "transformer.h.%d." % i
        for ln in ("ln_1", "ln_2"):
            w[p + ln + ".weight"] = normal(gen, d, mean=1.0)
            w[p + ln + ".bias"] = normal(gen, d)
        for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
            w[p + "attn.attention." + proj + ".weight"] = normal(gen, d, d)
        w[p + "attn.attention.out_proj.bias"] = normal(gen, d)
        w[p + "mlp.c_fc.weight"] = normal(gen, f, d)
        w[p + "mlp.c_fc.bias"] = normal(gen, f)
        w[p + "mlp.c_proj.weight"] = normal(gen, d, f)
        w[p + "mlp.c_proj.bias"] = normal(gen, d)
    w["transformer.ln_f.weight"] = normal(gen, d, mean=1.0)
    w["transformer.ln_f.bias"] = normal(gen, d)
    return w


def neo_attention_layers(v):
    """GPTNeoConfig.expand_attention_types_params."""
    out = []
    for kinds, repeat in v["attention_types"]:
        for _ in range(repeat):
            out.extend(kinds)
    return out


def neo_forward(v, w):
    """GPTNeoForCausalLM.forward via GPTNeoBlock.forward and
    GPTNeoSelfAttention._attn (no scale; a local layer's mask is
    bias ^ tril(bias, -window_size))."""
    t, h = len(v["ids"]), v["heads"]
    x = w["transformer.wte.weight"][v["ids"]] + w["transformer.wpe.weight"][:t]
    maps = []
    for i, kind in enumerate(neo_attention_layers(v)):
        p = "transformer.h.%d." % i
        a = layer_norm(x, w[p + "ln_1.weight"], w[p + "ln_1.bias"], v["eps"])
        q, k, val = (heads(linear(a, w, p + "attn.attention." + n), h) for n in ("q_proj", "k_proj", "v_proj"))
        o, weights = attend(q, k, val, 1.0, visible(t, v["window"] if kind == "local" else 0))
        maps.append(weights)
        x = x + linear(o, w, p + "attn.attention.out_proj")
        m = layer_norm(x, w[p + "ln_2.weight"], w[p + "ln_2.bias"], v["eps"])
        x = x + linear(gelu_new(linear(m, w, p + "mlp.c_fc")), w, p + "mlp.c_proj")
    x = layer_norm(x, w["transformer.ln_f.weight"], w["transformer.ln_f.bias"], v["eps"])
    return x @ w["transformer.wte.weight"].T, maps


def neo_config(v):
    return {
        "activation_function": "gelu_new", "architectures": ["GPTNeoForCausalLM"], "attention_dropout": 0,
        "attention_layers": neo_attention_layers(v), "attention_types": v["attention_types"], "bos_token_id": 1,
        "embed_dropout": 0, "eos_token_id": 1, "hidden_size": v["d"], "initializer_range": 0.02,
        "intermediate_size": None, "layer_norm_epsilon": v["eps"], "max_position_embeddings": v["positions"],
        "model_type": "gpt_neo", "num_heads": v["heads"], "num_layers": v["layers"], "resid_dropout": 0,
        "torch_dtype": "float32", "transformers_version": "4.28.0", "use_cache": True, "vocab_size": v["vocab"],
        "window_size": v["window"],
    }


def neo_stored(v, w):
    out = {k: (t, "F32") for k, t in w.items()}
    p = v["positions"]
    for i, kind in enumerate(neo_attention_layers(v)):
        mask = torch.tril(torch.ones(p, p))
        if kind == "local":
            mask = mask * (1 - torch.tril(torch.ones(p, p), -v["window"]))
        a = "transformer.h.%d.attn.attention." % i
        out[a + "bias"] = (mask.view(1, 1, p, p), "BOOL")
        out[a + "masked_bias"] = (torch.tensor(-1e9), "F32")
    return out


# ---- Phi-3 and OLMo 2: the Llama-shaped families ----

def llama_shaped_weights(v, gen):
    d, f, h, g, hd = v["d"], v["inner"], v["heads"], v["kv_heads"], v["head_dim"]
    w = {"model.embed_tokens.weight": normal(gen, v["vocab"], d)}
    for i in range(v["layers"]):
        p = "model.layers.%d." % i
        if v["arch"] == "phi3":
            w[p + "input_layernorm.weight"] = normal(gen, d, mean=1.0)
            w[p + "post_attention_layernorm.weight"] = normal(gen, d, mean=1.0)
            w[p + "self_attn.qkv_proj.weight"] = normal(gen, (h + 2 * g) * hd, d)
            w[p + "mlp.gate_up_proj.weight"] = normal(gen, 2 * f, d)
        else:
            w[p + "post_attention_layernorm.weight"] = normal(gen, d, mean=1.0)
            w[p + "post_feedforward_layernorm.weight"] = normal(gen, d, mean=1.0)
            w[p + "self_attn.q_proj.weight"] = normal(gen, h * hd, d)
            w[p + "self_attn.k_proj.weight"] = normal(gen, g * hd, d)
            w[p + "self_attn.v_proj.weight"] = normal(gen, g * hd, d)
            w[p + "self_attn.q_norm.weight"] = normal(gen, h * hd, mean=1.0)
            w[p + "self_attn.k_norm.weight"] = normal(gen, g * hd, mean=1.0)
            w[p + "mlp.gate_proj.weight"] = normal(gen, f, d)
            w[p + "mlp.up_proj.weight"] = normal(gen, f, d)
        w[p + "self_attn.o_proj.weight"] = normal(gen, d, h * hd)
        w[p + "mlp.down_proj.weight"] = normal(gen, d, f)
    w["model.norm.weight"] = normal(gen, d, mean=1.0)
    w["lm_head.weight"] = normal(gen, v["vocab"], d)
    return w


def phi3_layer(v, w, p, x, seen):
    """Phi3DecoderLayer.forward with Phi3Attention.forward (qkv_proj sliced
    at H·d and H·d + G·d) and Phi3MLP.forward (gate, up = chunk(2))."""
    h, g, hd, f = v["heads"], v["kv_heads"], v["head_dim"], v["inner"]
    a = rms_norm(x, w[p + "input_layernorm.weight"], v["eps"])
    qkv = linear(a, w, p + "self_attn.qkv_proj")
    q, k, val = qkv[:, :h * hd], qkv[:, h * hd:(h + g) * hd], qkv[:, (h + g) * hd:]
    rotary = int(hd * v["rotary_pct"])
    q, k = partial_rope(heads(q, h), v["theta"], rotary), partial_rope(heads(k, g), v["theta"], rotary)
    o, weights = attend(q, k, heads(val, g), hd ** -0.5, seen, h // g)
    x = x + linear(o, w, p + "self_attn.o_proj")
    m = rms_norm(x, w[p + "post_attention_layernorm.weight"], v["eps"])
    up = linear(m, w, p + "mlp.gate_up_proj")
    gate, up = up[:, :f], up[:, f:]
    return x + linear(up * torch.nn.functional.silu(gate), w, p + "mlp.down_proj"), weights


def olmo2_layer(v, w, p, x, seen):
    """Olmo2DecoderLayer.forward with Olmo2Attention.forward: q_norm and
    k_norm over the whole projections before rope; norms after each
    sublayer only."""
    h, g, hd = v["heads"], v["kv_heads"], v["head_dim"]
    q = rms_norm(linear(x, w, p + "self_attn.q_proj"), w[p + "self_attn.q_norm.weight"], v["eps"])
    k = rms_norm(linear(x, w, p + "self_attn.k_proj"), w[p + "self_attn.k_norm.weight"], v["eps"])
    val = linear(x, w, p + "self_attn.v_proj")
    q, k = partial_rope(heads(q, h), v["theta"], hd), partial_rope(heads(k, g), v["theta"], hd)
    o, weights = attend(q, k, heads(val, g), hd ** -0.5, seen, h // g)
    x = x + rms_norm(linear(o, w, p + "self_attn.o_proj"), w[p + "post_attention_layernorm.weight"], v["eps"])
    gate, up = linear(x, w, p + "mlp.gate_proj"), linear(x, w, p + "mlp.up_proj")
    mlp = linear(torch.nn.functional.silu(gate) * up, w, p + "mlp.down_proj")
    return x + rms_norm(mlp, w[p + "post_feedforward_layernorm.weight"], v["eps"]), weights


def llama_shaped_forward(v, w):
    """Phi3ForCausalLM / Olmo2ForCausalLM.forward: embed_tokens, the
    layers, norm, lm_head."""
    layer = phi3_layer if v["arch"] == "phi3" else olmo2_layer
    seen = visible(len(v["ids"]), v.get("window"))
    x = w["model.embed_tokens.weight"][v["ids"]]
    maps = []
    for i in range(v["layers"]):
        x, weights = layer(v, w, "model.layers.%d." % i, x, seen)
        maps.append(weights)
    x = rms_norm(x, w["model.norm.weight"], v["eps"])
    return x @ w["lm_head.weight"].T, maps


def llama_shaped_config(v):
    c = {
        "architectures": [{"phi3": "Phi3ForCausalLM", "olmo2": "Olmo2ForCausalLM"}[v["arch"]]],
        "model_type": v["arch"], "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu",
        "hidden_size": v["d"], "initializer_range": 0.02, "intermediate_size": v["inner"],
        "max_position_embeddings": 64, "num_attention_heads": v["heads"], "num_hidden_layers": v["layers"],
        "num_key_value_heads": v["kv_heads"], "rms_norm_eps": v["eps"], "rope_scaling": None, "rope_theta": v["theta"],
        "tie_word_embeddings": False, "torch_dtype": "float32", "transformers_version": "4.47.0", "use_cache": True,
        "vocab_size": v["vocab"],
    }
    if v["arch"] == "phi3":
        c.update(head_dim=v["head_dim"], partial_rotary_factor=v["rotary_pct"], sliding_window=v["window"],
                 original_max_position_embeddings=64, pad_token_id=3, embd_pdrop=0.0, resid_pdrop=0.0)
    else:
        c.update(attention_bias=False, pad_token_id=3)
    return c


def plain_stored(v, w):
    return {k: (t, "F32") for k, t in w.items()}


# ---- the fixtures ----

SMALL = {"vocab": 64, "d": 24, "heads": 3, "layers": 2, "inner": 40, "positions": 32}
VARIANTS = {
    "pythia": dict(SMALL, seed=21, weights=neox_weights, forward=neox_forward, config=neox_config, stored=neox_stored,
                   layout="4.2x", rotary_pct=0.5, theta=10000.0, parallel=True, act="gelu", attention_bias=True,
                   eps=1e-5, tied=False, buffers=True),
    "neox": dict(SMALL, seed=22, weights=neox_weights, forward=neox_forward, config=neox_config, stored=plain_stored,
                 layout="5", rotary_pct=0.25, theta=1000.0, parallel=False, act="gelu_new", attention_bias=False,
                 eps=1e-2, tied=True),
    "tinystories": dict(SMALL, seed=23, weights=neo_weights, forward=neo_forward, config=neo_config, stored=neo_stored,
                        attention_types=[[["global", "local"], 1]], window=4, eps=1e-5),
    "phi3": dict(SMALL, seed=24, weights=llama_shaped_weights, forward=llama_shaped_forward, config=llama_shaped_config,
                 stored=plain_stored, arch="phi3", heads=4, kv_heads=2, head_dim=8, rotary_pct=0.5, window=4,
                 theta=10000.0, eps=1e-5),
    "olmo2": dict(SMALL, seed=25, weights=llama_shaped_weights, forward=llama_shaped_forward,
                  config=llama_shaped_config, stored=plain_stored, arch="olmo2", kv_heads=1, head_dim=8,
                  theta=5e5, eps=1e-6),
}


def rounded(rows):
    if isinstance(rows, list):
        return [rounded(r) for r in rows]
    return float("%.9g" % rows)


def write_fixture(name, v):
    """Weights drawn from v's seed, then the token ids; config.json, the
    weights as v["stored"] names them, and NAME.reference.json."""
    gen = torch.Generator().manual_seed(v["seed"])
    w = v["weights"](v, gen)
    v = dict(v, ids=torch.randint(0, v["vocab"], (TOKENS,), generator=gen))
    directory = os.path.join(HERE, name)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(v["config"](v), f, indent=2, sort_keys=True)
        f.write("\n")
    write_weights(directory, v, v["stored"](v, w))
    logits, maps = v["forward"](v, {k: t.to(torch.float64) for k, t in w.items()})
    reference = {"tokens": v["ids"].tolist(), "logits": rounded(logits.tolist()),
                 "attention": rounded([m.tolist() for m in maps])}
    with open(os.path.join(HERE, name + ".reference.json"), "w") as f:
        json.dump(reference, f, separators=(",", ":"))
        f.write("\n")


def main():
    for name, v in VARIANTS.items():
        write_fixture(name, v)


if __name__ == "__main__":
    main()
