#!/usr/bin/python3
"""Hugging Face Llama, Mistral and Qwen 2 directories for open/hf's tests, with
reference logits.

Regenerate from the repository root (reruns are byte-identical on one machine):

    /usr/bin/python3 open/hf/testdata/gen_llama_fixtures.py

The safetensors writer, the shards and the float64 reference convention are
gen_fixtures.py's (imported). The forward below is written from the published
definitions (Meta's llama model.py; Hugging Face's modeling_llama.py,
modeling_mistral.py, modular_qwen2.py, masking_utils.py), independently of
python/attnscope_torch.py and of the Go code:

    x       = embed_tokens[ids]
    layer   : x = x + o_proj(attn(input_layernorm(x)))
              x = x + down_proj(silu(gate_proj(m)) * up_proj(m)), m = post_attention_layernorm(x)
    RMSNorm : x / sqrt(mean(x^2) + rms_norm_eps) * weight
    attn    : q = q_proj(x) (H heads of d), k = k_proj(x), v = v_proj(x) (G heads of d);
              rotate-half rope on q and k: inv_freq[i] = rope_theta^(-2i/d), i < d/2,
              angle = t inv_freq, q' = q cos(angle ++ angle) + rotate_half(q) sin(...),
              rotate_half(q) = (-q[d/2:], q[:d/2]);
              repeat_kv: query head h reads kv head h // (H/G);
              s = q k^T / sqrt(d); key j visible to query i when j <= i and,
              with a sliding window W, j > i - W (masking_utils's
              sliding_window_overlay); softmax; heads concatenated; o_proj
    logits  = norm(x) lm_head^T (embed_tokens^T when tied)

Weights are random and not small (std 0.3, norm weights 1 +- 0.3, biases
std 0.3), drawn in float32, rounded to the stored dtype; the reference runs in
float64 on the rounded values.

    llama/    LlamaForCausalLM, F32, grouped-query (4 heads, 2 kv heads), an
              untied lm_head, rope_theta 1000 and rope_scaling null (the
              layout before transformers 5), rms_norm_eps 1e-5, the
              self_attn.rotary_emb.inv_freq buffers older files hold
    biased/   LlamaForCausalLM, BF16, attention_bias and mlp_bias true
              (q, k, v, o and MLP biases), multi-head (num_key_value_heads
              absent), head_dim given, tied, eos_token_id a list
    mistral/  MistralForCausalLM, BF16 in three shards, 1 kv head of 4
              (multi-query), sliding_window 4 < the 16 tokens, the
              rope_parameters dict of transformers 5, rms_norm_eps 1e-2
    qwen2/    Qwen2ForCausalLM, F16, q/k/v biases (none on o), 2 kv heads,
              tied (no lm_head.weight in the file), use_sliding_window false
              with sliding_window 4096 and layer_types as Qwen's configs
              carry them
"""

import math
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ beside the fixtures
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_fixtures import DTYPES, torch, write_fixture  # noqa: E402


def config_json(name, v):
    """config.json as transformers writes it for the variant's class."""
    c = {
        "architectures": [v["arch"]],
        "attention_dropout": 0.0,
        "bos_token_id": 1,
        "eos_token_id": v.get("eos", 2),
        "hidden_act": "silu",
        "hidden_size": v["d"],
        "initializer_range": 0.02,
        "intermediate_size": v["inner"],
        "max_position_embeddings": 64,
        "model_type": v["model_type"],
        "num_attention_heads": v["heads"],
        "num_hidden_layers": v["layers"],
        "rms_norm_eps": v["eps"],
        "tie_word_embeddings": v["tied"],
        "torch_dtype": {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[v["dtype"]],
        "transformers_version": "4.46.0",
        "use_cache": True,
        "vocab_size": v["vocab"],
    }
    if v["kv_heads"] != v["heads"]:
        c["num_key_value_heads"] = v["kv_heads"]
    if name == "llama":
        c.update(rope_theta=v["theta"], rope_scaling=None, pretraining_tp=1, attention_bias=False, mlp_bias=False)
    if name == "biased":
        c.update(rope_theta=v["theta"], attention_bias=True, mlp_bias=True, head_dim=v["d"] // v["heads"])
    if name == "mistral":
        c.update(rope_parameters={"rope_type": "default", "rope_theta": v["theta"]}, sliding_window=v["window"],
                 transformers_version="5.0.0")
    if name == "qwen2":
        c.update(rope_theta=v["theta"], rope_scaling=None, use_sliding_window=False, sliding_window=4096,
                 max_window_layers=v["layers"], layer_types=["full_attention"] * v["layers"], bos_token_id=4)
    return c


def draw_weights(v, gen):
    """The parameters by their Hugging Face names, nn.Linear (out, in),
    drawn in float32 and rounded to the stored dtype."""
    d, f, hd = v["d"], v["inner"], v["d"] // v["heads"]
    kv = v["kv_heads"] * hd

    def normal(*shape, mean=0.0):
        return mean + 0.3 * torch.randn(*shape, generator=gen, dtype=torch.float32)

    w = {"model.embed_tokens.weight": normal(v["vocab"], d)}
    for i in range(v["layers"]):
        p = "model.layers.%d." % i
        w[p + "input_layernorm.weight"] = normal(d, mean=1.0)
        for proj, rows in (("q_proj", d), ("k_proj", kv), ("v_proj", kv)):
            w[p + "self_attn." + proj + ".weight"] = normal(rows, d)
            if v["qkv_bias"]:
                w[p + "self_attn." + proj + ".bias"] = normal(rows)
        w[p + "self_attn.o_proj.weight"] = normal(d, d)
        if v["out_bias"]:
            w[p + "self_attn.o_proj.bias"] = normal(d)
        w[p + "post_attention_layernorm.weight"] = normal(d, mean=1.0)
        for proj, shape in (("gate_proj", (f, d)), ("up_proj", (f, d)), ("down_proj", (d, f))):
            w[p + "mlp." + proj + ".weight"] = normal(*shape)
            if v["mlp_bias"]:
                w[p + "mlp." + proj + ".bias"] = normal(shape[0])
    w["model.norm.weight"] = normal(d, mean=1.0)
    if not v["tied"]:
        w["lm_head.weight"] = normal(v["vocab"], d)
    return {k: t.to(DTYPES[v["dtype"]]).to(torch.float32) for k, t in w.items()}


def rms_norm(x, weight, eps):
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps) * weight


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rope(x, theta):
    """x (heads, T, d) turned by rotate-half rotary positions."""
    t, hd = x.shape[1], x.shape[2]
    inv_freq = theta ** (-torch.arange(0, hd, 2, dtype=torch.float64) / hd)   # (d/2)
    angle = torch.arange(t, dtype=torch.float64)[:, None] * inv_freq[None, :]  # (T, d/2)
    angle = torch.cat((angle, angle), dim=-1)                                  # (T, d)
    return x * torch.cos(angle) + rotate_half(x) * torch.sin(angle)


def linear(x, w, p):
    y = x @ w[p + ".weight"].T
    return y + w[p + ".bias"] if p + ".bias" in w else y


def visible(t, window):
    """(T, T) mask: query i sees key j."""
    i = torch.arange(t)[:, None]
    j = torch.arange(t)[None, :]
    seen = j <= i
    if window:
        seen &= j > i - window
    return seen


def forward(v, w, ids):
    """The model's logits (T, V) for one sequence, in float64."""
    w = {k: t.to(torch.float64) for k, t in w.items()}
    t, d, h, g = len(ids), v["d"], v["heads"], v["kv_heads"]
    hd = d // h
    seen = visible(t, v.get("window"))
    x = w["model.embed_tokens.weight"][ids]                                      # (T, D)
    for i in range(v["layers"]):
        p = "model.layers.%d." % i
        a = rms_norm(x, w[p + "input_layernorm.weight"], v["eps"])
        q = linear(a, w, p + "self_attn.q_proj").view(t, h, hd).transpose(0, 1)  # (H, T, d)
        k = linear(a, w, p + "self_attn.k_proj").view(t, g, hd).transpose(0, 1)  # (G, T, d)
        val = linear(a, w, p + "self_attn.v_proj").view(t, g, hd).transpose(0, 1)
        q, k = rope(q, v["theta"]), rope(k, v["theta"])
        k, val = k.repeat_interleave(h // g, dim=0), val.repeat_interleave(h // g, dim=0)  # repeat_kv
        s = (q @ k.transpose(-1, -2) / math.sqrt(hd)).masked_fill(~seen, float("-inf"))
        o = (torch.softmax(s, dim=-1) @ val).transpose(0, 1).reshape(t, d)
        x = x + linear(o, w, p + "self_attn.o_proj")
        m = rms_norm(x, w[p + "post_attention_layernorm.weight"], v["eps"])
        gate, up = linear(m, w, p + "mlp.gate_proj"), linear(m, w, p + "mlp.up_proj")
        x = x + linear(torch.nn.functional.silu(gate) * up, w, p + "mlp.down_proj")
    x = rms_norm(x, w["model.norm.weight"], v["eps"])
    head = w["model.embed_tokens.weight"] if v["tied"] else w["lm_head.weight"]
    return x @ head.T


BASE = {"vocab": 96, "d": 32, "heads": 4, "kv_heads": 2, "layers": 2, "inner": 40, "eps": 1e-6, "theta": 10000.0,
        "qkv_bias": False, "out_bias": False, "mlp_bias": False, "tied": False}
VARIANTS = {
    "llama": dict(BASE, seed=11, dtype="F32", arch="LlamaForCausalLM", model_type="llama", theta=1000.0, eps=1e-5,
                  inv_freq=True),
    "biased": dict(BASE, seed=12, dtype="BF16", arch="LlamaForCausalLM", model_type="llama", kv_heads=4, tied=True,
                   qkv_bias=True, out_bias=True, mlp_bias=True, eos=[2, 3]),
    "mistral": dict(BASE, seed=13, dtype="BF16", arch="MistralForCausalLM", model_type="mistral", kv_heads=1,
                    window=4, eps=1e-2, shards=3),
    "qwen2": dict(BASE, seed=14, dtype="F16", arch="Qwen2ForCausalLM", model_type="qwen2", tied=True,
                  qkv_bias=True, theta=1e6),
}


def stored_tensors(v, w):
    out = {k: (t, v["dtype"]) for k, t in w.items()}
    if v.get("inv_freq"):
        hd = v["d"] // v["heads"]
        inv_freq = 1.0 / (v["theta"] ** (torch.arange(0, hd, 2).float() / hd))
        for i in range(v["layers"]):
            out["model.layers.%d.self_attn.rotary_emb.inv_freq" % i] = (inv_freq, "F32")
    return out


def main():
    for name, v in VARIANTS.items():
        write_fixture(name, v, draw_weights, config_json(name, v), stored_tensors, forward)

if __name__ == "__main__":
    main()
