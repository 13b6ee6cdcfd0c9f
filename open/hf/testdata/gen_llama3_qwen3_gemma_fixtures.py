#!/usr/bin/python3
"""Hugging Face Llama 3.x, Qwen 3, Gemma 2 and Gemma 3 directories for open/hf's
tests, with reference logits and attention weights.

Regenerate from the repository root (reruns are byte-identical on one machine):

    /usr/bin/python3 open/hf/testdata/gen_llama3_qwen3_gemma_fixtures.py

The safetensors writer and the shards are gen_fixtures.py's (imported). The
forward below is written by hand from Hugging Face transformers' published
modeling code, independently of python/attnscope_torch.py and of the Go code;
each function names the one it follows:

    modeling_rope_utils.py  _compute_default_rope_parameters,
                            _compute_linear_scaling_rope_parameters,
                            _compute_llama3_parameters       -> inv_freq()
    modeling_llama.py       LlamaRMSNorm                      -> rms_norm()
                            rotate_half, apply_rotary_pos_emb -> rope()
                            repeat_kv, eager_attention_forward,
                            LlamaAttention, LlamaMLP,
                            LlamaDecoderLayer, LlamaModel     -> forward()
    modeling_qwen3.py       Qwen3Attention: q_norm and k_norm (RMSNorm over
                            each head's head_dim channels) before the rotary
                            positions
    modeling_gemma2.py      Gemma2RMSNorm (x / rms * (1 + w))  -> gemma_rms_norm()
                            Gemma2Model.forward: the embeddings times the
                            normalizer torch.tensor(hidden_size ** 0.5,
                            dtype=the model's) -> embed_scale()
                            eager_attention_forward with softcap: scores
                            scaled by query_pre_attn_scalar ** -0.5, then
                            cap * tanh(scores / cap), then the mask
                            Gemma2DecoderLayer: input_layernorm, attention,
                            post_attention_layernorm, residual;
                            pre_feedforward_layernorm, MLP,
                            post_feedforward_layernorm, residual
                            Gemma2MLP: down(gelu_tanh(gate x) * up x)
                            Gemma2ForCausalLM.forward: final_logit_softcapping
    modeling_gemma3.py      Gemma3TextScaledWordEmbedding (embed_scale, a
                            float32 buffer cast to the weights' dtype),
                            Gemma3Attention (q_norm, k_norm with 1 + w),
                            Gemma3TextModel: the sliding layers' rotary
                            positions from rope_local_base_freq (the
                            sliding_attention rope parameters), unscaled
    configuration_gemma2/3  layer_types: Gemma 2 "sliding_attention" when
                            (i + 1) % 2, Gemma 3 when (i + 1) % sliding_window_pattern
    masking_utils.py        sliding_window_overlay: key j visible to query i
                            when i - sliding_window < j <= i

Weights are random and not small (std 0.3; RMSNorm weights 1 +- 0.3, Gemma's
stored w of (1 + w) 0 +- 0.3), drawn in float32, rounded to the stored dtype.
The reference runs in float64 on the stored values widened. The one rounding
transformers makes in the model's dtype that is a property of the model, not
of the arithmetic, is kept: Gemma's embedding normaliser sqrt(hidden_size),
rounded to the file's dtype (bfloat16 4.90625 for hidden 24, not 4.89898).

Beside each directory, NAME.reference.json holds the tokens, the logits
(position, vocabulary) and the attention weights (layer, head, query, key).

    llama3/        LlamaForCausalLM F32, Llama 3.2's layout: rope_scaling
                   rope_type llama3 (factor 8, low_freq_factor 1,
                   high_freq_factor 4, original_max_position_embeddings 32;
                   rope_theta 100 puts head_dim 8's four frequencies in all
                   three bands of the rule), tied, grouped-query
    llama_linear/  LlamaForCausalLM F32, transformers 5's rope_parameters
                   dict with rope_type linear (factor 4), head_dim 12 given
                   apart from hidden_size / num_attention_heads = 8
    qwen3/         Qwen3ForCausalLM F32, head_dim 12 (hidden 16 / 2 heads
                   = 8), q_norm and k_norm, attention_bias true (q, k, v
                   and o), untied
    qwen3_bf16/    Qwen3ForCausalLM BF16, tied, multi-query, sliding window
                   4 on the layers from max_window_layers 1 (layer_types)
    gemma2/        Gemma2ForCausalLM F32: sandwich norms with (1 + w),
                   GeGLU, embeddings times sqrt(24), query_pre_attn_scalar
                   12 (not head_dim 8), attention and final soft-caps
                   biting (5 and 3), layer 0 sliding (window 4), layer 1
                   global; keys left to Gemma2Config's defaults (tied)
    gemma2_bf16/   Gemma2ForCausalLM BF16, the same parts, three layers,
                   in two shards
    gemma3/        Gemma3ForCausalLM F32 (model_type gemma3_text):
                   sliding_window_pattern 3 (layers 0, 1 local, 2 global),
                   rope_local_base_freq 10000 on the local layers,
                   rope_theta 1e6 with rope_scaling linear 8 on the global
                   one, q_norm and k_norm with (1 + w), no soft-caps
    gemma3_types/  Gemma3ForCausalLM F32, transformers 5's layout:
                   layer_types given (global, local, local) and
                   rope_parameters per layer type, a final soft-cap
    gemma3_vlm/    Gemma3ForConditionalGeneration BF16 (model_type gemma3), as
                   the hub's gemma-3-4b and larger: the text model's config
                   in text_config (only the keys off Gemma3TextConfig's
                   defaults), its tensors under language_model., a one-layer
                   SigLIP vision tower and the projector beside (not used by
                   the forward), eos_token_id at the top level
"""

import json
import math
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ beside the fixtures
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_fixtures import DTYPES, HERE, torch, write_weights  # noqa: E402

TORCH_DTYPE = {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}


# ---- config.json, as each config class's to_json writes the keys given ----

def config_json(name, v):
    if v.get("vlm"):
        return vlm_config_json(name, v)
    c = {
        "architectures": [v["arch"]],
        "model_type": v["model_type"],
        "hidden_size": v["d"],
        "intermediate_size": v["inner"],
        "num_attention_heads": v["heads"],
        "num_hidden_layers": v["layers"],
        "num_key_value_heads": v["kv_heads"],
        "rms_norm_eps": v["eps"],
        "vocab_size": v["vocab"],
        "max_position_embeddings": 256,
        "torch_dtype": TORCH_DTYPE[v["dtype"]],
        "transformers_version": v.get("version", "4.53.0"),
        "attention_dropout": 0.0,
        "use_cache": True,
    }
    c.update(v["config"])
    return c


def vlm_config_json(name, v):
    """Gemma3ForConditionalGeneration's config.json as the hub's are: the
    text model's keys that differ from Gemma3TextConfig's defaults in
    text_config, a SigLIP vision_config, eos_token_id at the top."""
    text = {k: x for k, x in config_json(name, dict(v, vlm=False)).items()
            if k not in ("architectures", "torch_dtype", "transformers_version", "use_cache", "attention_dropout")}
    text["model_type"] = "gemma3_text"
    return {
        "architectures": [v["arch"]],
        "model_type": v["model_type"],
        "boi_token_index": 60, "eoi_token_index": 61, "image_token_index": 62, "mm_tokens_per_image": 4,
        "eos_token_id": [1, 3],
        "initializer_range": 0.02,
        "text_config": text,
        "vision_config": dict(VISION, model_type="siglip_vision_model", vision_use_head=False),
        "torch_dtype": TORCH_DTYPE[v["dtype"]],
        "transformers_version": "4.50.0.dev0",
    }


# ---- weights, by their Hugging Face names ----

def draw_weights(v, gen):
    """The parameters by name, nn.Linear (out, in), drawn in float32 and
    rounded to the stored dtype."""
    d, f, hd, h, g = v["d"], v["inner"], v["head_dim"], v["heads"], v["kv_heads"]
    gemma = v["family"] == "gemma"
    norm_mean = 0.0 if gemma else 1.0  # Gemma stores w of (1 + w)

    def normal(*shape, mean=0.0):
        return mean + 0.3 * torch.randn(*shape, generator=gen, dtype=torch.float32)

    w = {"model.embed_tokens.weight": normal(v["vocab"], d)}
    for i in range(v["layers"]):
        p = "model.layers.%d." % i
        norms = ["input_layernorm", "post_attention_layernorm"]
        if gemma:
            norms += ["pre_feedforward_layernorm", "post_feedforward_layernorm"]
        for n in norms:
            w[p + n + ".weight"] = normal(d, mean=norm_mean)
        for proj, rows in (("q_proj", h * hd), ("k_proj", g * hd), ("v_proj", g * hd)):
            w[p + "self_attn." + proj + ".weight"] = normal(rows, d)
            if v.get("bias"):
                w[p + "self_attn." + proj + ".bias"] = normal(rows)
        w[p + "self_attn.o_proj.weight"] = normal(d, h * hd)
        if v.get("bias"):
            w[p + "self_attn.o_proj.bias"] = normal(d)
        if v.get("qk_norm"):
            w[p + "self_attn.q_norm.weight"] = normal(hd, mean=norm_mean)
            w[p + "self_attn.k_norm.weight"] = normal(hd, mean=norm_mean)
        for proj, shape in (("gate_proj", (f, d)), ("up_proj", (f, d)), ("down_proj", (d, f))):
            w[p + "mlp." + proj + ".weight"] = normal(*shape)
    w["model.norm.weight"] = normal(d, mean=norm_mean)
    if not v["tied"]:
        w["lm_head.weight"] = normal(v["vocab"], d)
    return {k: t.to(DTYPES[v["dtype"]]).to(torch.float32) for k, t in w.items()}


VISION = {"hidden_size": 4, "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 1, "patch_size": 2,
          "image_size": 4}


def vision_tensors(v):
    """A SigLIP vision tower's and Gemma 3's projector's tensors, named as
    the hub's files name them (the forward does not use them)."""
    gen = torch.Generator().manual_seed(v["seed"] + 1000)
    h, f, p = VISION["hidden_size"], VISION["intermediate_size"], VISION["patch_size"]
    patches = (VISION["image_size"] // p) ** 2
    tower = "vision_tower.vision_model."
    shapes = {"multi_modal_projector.mm_input_projection_weight": (h, v["d"]),
              "multi_modal_projector.mm_soft_emb_norm.weight": (h,),
              tower + "embeddings.patch_embedding.weight": (h, 3, p, p), tower + "embeddings.patch_embedding.bias": (h,),
              tower + "embeddings.position_embedding.weight": (patches, h),
              tower + "post_layernorm.weight": (h,), tower + "post_layernorm.bias": (h,)}
    for i in range(VISION["num_hidden_layers"]):
        layer = tower + "encoder.layers.%d." % i
        for part, shape in (("layer_norm1", (h,)), ("layer_norm2", (h,)), ("self_attn.q_proj", (h, h)),
                            ("self_attn.k_proj", (h, h)), ("self_attn.v_proj", (h, h)), ("self_attn.out_proj", (h, h)),
                            ("mlp.fc1", (f, h)), ("mlp.fc2", (h, f))):
            shapes[layer + part + ".weight"], shapes[layer + part + ".bias"] = shape, shape[:1]
    return {k: torch.randn(*shape, generator=gen, dtype=torch.float32) for k, shape in shapes.items()}


def stored_tensors(v, w):
    if not v.get("vlm"):
        return {k: (t, v["dtype"]) for k, t in w.items()}
    out = {"language_model." + k: (t, v["dtype"]) for k, t in w.items()}
    out.update({k: (t, v["dtype"]) for k, t in vision_tensors(v).items()})
    return out


# ---- the forward ----

def inv_freq(hd, rope):
    """The rotary inverse frequencies (hd/2) of one layer's rope parameters
    (rope_type, rope_theta, and the type's own keys)."""
    base = rope["rope_theta"]
    freq = 1.0 / (base ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))  # _compute_default_rope_parameters
    kind = rope.get("rope_type", "default")
    if kind == "default":
        return freq
    if kind == "linear":  # _compute_linear_scaling_rope_parameters
        return freq / rope["factor"]
    assert kind == "llama3"  # _compute_llama3_parameters
    factor, low, high = rope["factor"], rope["low_freq_factor"], rope["high_freq_factor"]
    old = rope["original_max_position_embeddings"]
    low_wavelen, high_wavelen = old / low, old / high
    wavelen = 2 * math.pi / freq
    scaled = torch.where(wavelen > low_wavelen, freq / factor, freq)
    smooth = (old / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = ~(wavelen < high_wavelen) & ~(wavelen > low_wavelen)
    return torch.where(medium, smoothed, scaled)


def rms_norm(x, weight, eps):
    """LlamaRMSNorm (Qwen3RMSNorm is the same)."""
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps) * weight


def gemma_rms_norm(x, weight, eps):
    """Gemma2RMSNorm and Gemma3RMSNorm: the stored weight is w of (1 + w)."""
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps) * (1.0 + weight)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rope(x, freq):
    """apply_rotary_pos_emb on x (heads, T, d): cos and sin of t freq, the
    frequencies repeated over both halves of the head."""
    angle = torch.arange(x.shape[1], dtype=torch.float64)[:, None] * freq[None, :]  # (T, d/2)
    angle = torch.cat((angle, angle), dim=-1)                                         # (T, d)
    return x * torch.cos(angle) + rotate_half(x) * torch.sin(angle)


def gelu_tanh(x):
    """ACT2FN["gelu_pytorch_tanh"]."""
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def softcap(x, cap):
    return cap * torch.tanh(x / cap) if cap else x


def linear(x, w, p):
    y = x @ w[p + ".weight"].T
    return y + w[p + ".bias"] if p + ".bias" in w else y


def visible(t, window):
    """(T, T): query i sees key j (causal; sliding_window_overlay)."""
    i = torch.arange(t)[:, None]
    j = torch.arange(t)[None, :]
    seen = j <= i
    if window:
        seen &= j > i - window
    return seen


def embed_scale(v):
    """Gemma's normaliser sqrt(hidden_size) in the model's dtype; 1 else."""
    if v["family"] != "gemma":
        return 1.0
    return torch.tensor(v["d"] ** 0.5, dtype=torch.float32).to(DTYPES[v["dtype"]]).item()


def attention(v, w, p, a, layer):
    """One layer's attention output (T, D) and weights (H, T, T)."""
    t, h, g, hd = a.shape[0], v["heads"], v["kv_heads"], v["head_dim"]
    norm = gemma_rms_norm if v["family"] == "gemma" else rms_norm
    q = linear(a, w, p + "self_attn.q_proj").view(t, h, hd)
    k = linear(a, w, p + "self_attn.k_proj").view(t, g, hd)
    val = linear(a, w, p + "self_attn.v_proj").view(t, g, hd).transpose(0, 1)         # (G, T, d)
    if v.get("qk_norm"):
        q = norm(q, w[p + "self_attn.q_norm.weight"], v["eps"])
        k = norm(k, w[p + "self_attn.k_norm.weight"], v["eps"])
    freq = inv_freq(hd, v["rope"][layer["type"]])
    q, k = rope(q.transpose(0, 1), freq), rope(k.transpose(0, 1), freq)              # (H, T, d), (G, T, d)
    k, val = k.repeat_interleave(h // g, dim=0), val.repeat_interleave(h // g, dim=0)  # repeat_kv
    s = q @ k.transpose(-1, -2) * v.get("scalar", hd) ** -0.5                          # (H, T, T)
    s = softcap(s, v.get("attn_cap")).masked_fill(~visible(t, layer["window"]), float("-inf"))
    weights = torch.softmax(s, dim=-1)
    o = (weights @ val).transpose(0, 1).reshape(t, h * hd)
    return linear(o, w, p + "self_attn.o_proj"), weights


def mlp(v, w, p, m):
    act = gelu_tanh if v["family"] == "gemma" else torch.nn.functional.silu
    return linear(act(linear(m, w, p + "mlp.gate_proj")) * linear(m, w, p + "mlp.up_proj"), w, p + "mlp.down_proj")


def forward(v, w, ids):
    """The logits (T, V) and every layer's attention weights (H, T, T), in
    float64."""
    w = {k: t.to(torch.float64) for k, t in w.items()}
    gemma = v["family"] == "gemma"
    norm = gemma_rms_norm if gemma else rms_norm
    x = w["model.embed_tokens.weight"][ids] * embed_scale(v)                  # (T, D)
    attn = []
    for i, layer in enumerate(v["layer_kinds"]):
        p = "model.layers.%d." % i
        o, weights = attention(v, w, p, norm(x, w[p + "input_layernorm.weight"], v["eps"]), layer)
        attn.append(weights)
        if gemma:
            x = x + norm(o, w[p + "post_attention_layernorm.weight"], v["eps"])
            m = mlp(v, w, p, norm(x, w[p + "pre_feedforward_layernorm.weight"], v["eps"]))
            x = x + norm(m, w[p + "post_feedforward_layernorm.weight"], v["eps"])
        else:
            x = x + o
            x = x + mlp(v, w, p, norm(x, w[p + "post_attention_layernorm.weight"], v["eps"]))
    x = norm(x, w["model.norm.weight"], v["eps"])
    head = w["model.embed_tokens.weight"] if v["tied"] else w["lm_head.weight"]
    return softcap(x @ head.T, v.get("final_cap")), attn


# ---- the variants ----

def kinds(types, window):
    """The layers' kinds from layer_types: the rope parameters each reads
    and its window."""
    return [{"type": t, "window": window if t == "sliding_attention" else 0} for t in types]


LLAMA = {"family": "llama", "vocab": 64, "d": 16, "heads": 2, "kv_heads": 1, "head_dim": 8, "layers": 2,
         "inner": 24, "eps": 1e-5, "tied": True}
QWEN3 = dict(LLAMA, family="qwen3", head_dim=12, qk_norm=True, eps=1e-6)
GEMMA = {"family": "gemma", "vocab": 64, "d": 24, "heads": 4, "kv_heads": 2, "head_dim": 8, "layers": 2,
         "inner": 12, "eps": 1e-6, "tied": True}
GEMMA3 = dict(GEMMA, heads=2, kv_heads=1, layers=3, qk_norm=True)

LLAMA3_ROPE = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 32, "rope_theta": 100.0}
LINEAR_ROPE = {"rope_type": "linear", "factor": 4.0, "rope_theta": 1000.0}
FULL = ["full_attention"] * 2

VARIANTS = {
    "llama3": dict(LLAMA, seed=21, dtype="F32", arch="LlamaForCausalLM", model_type="llama",
                   rope={"full_attention": LLAMA3_ROPE}, layer_kinds=kinds(FULL, 0),
                   config={"rope_theta": 100.0, "head_dim": 8, "tie_word_embeddings": True, "hidden_act": "silu",
                           "attention_bias": False, "mlp_bias": False, "bos_token_id": 1, "eos_token_id": [2, 3],
                           "rope_scaling": {k: x for k, x in LLAMA3_ROPE.items() if k != "rope_theta"}}),
    "llama_linear": dict(LLAMA, seed=22, dtype="F32", arch="LlamaForCausalLM", model_type="llama", head_dim=12,
                         tied=False, kv_heads=2, rope={"full_attention": LINEAR_ROPE}, layer_kinds=kinds(FULL, 0),
                         version="5.0.0", config={"head_dim": 12, "tie_word_embeddings": False,
                                                  "rope_parameters": LINEAR_ROPE}),
    "qwen3": dict(QWEN3, seed=23, dtype="F32", arch="Qwen3ForCausalLM", model_type="qwen3", tied=False, bias=True,
                  rope={"full_attention": {"rope_theta": 1e6}}, layer_kinds=kinds(FULL, 0),
                  config={"head_dim": 12, "tie_word_embeddings": False, "attention_bias": True, "rope_theta": 1e6,
                          "rope_scaling": None, "use_sliding_window": False, "sliding_window": None,
                          "max_window_layers": 2, "hidden_act": "silu", "bos_token_id": 5, "eos_token_id": 6}),
    "qwen3_bf16": dict(QWEN3, seed=24, dtype="BF16", arch="Qwen3ForCausalLM", model_type="qwen3",
                       rope={"full_attention": {"rope_theta": 1e4}, "sliding_attention": {"rope_theta": 1e4}},
                       layer_kinds=kinds(["full_attention", "sliding_attention"], 4),
                       config={"head_dim": 12, "tie_word_embeddings": True, "rope_theta": 1e4,
                               "use_sliding_window": True, "sliding_window": 4, "max_window_layers": 1,
                               "layer_types": ["full_attention", "sliding_attention"]}),
    "gemma2": dict(GEMMA, seed=25, dtype="F32", arch="Gemma2ForCausalLM", model_type="gemma2", scalar=12,
                   attn_cap=5.0, final_cap=3.0,
                   rope={t: {"rope_theta": 1e4} for t in ("full_attention", "sliding_attention")},
                   layer_kinds=kinds(["sliding_attention", "full_attention"], 4),
                   config={"head_dim": 8, "query_pre_attn_scalar": 12, "sliding_window": 4,
                           "attn_logit_softcapping": 5.0, "final_logit_softcapping": 3.0}),
    "gemma2_bf16": dict(GEMMA, seed=26, dtype="BF16", arch="Gemma2ForCausalLM", model_type="gemma2", layers=3,
                        scalar=12, attn_cap=5.0, final_cap=3.0, shards=2,
                        rope={t: {"rope_theta": 1e4} for t in ("full_attention", "sliding_attention")},
                        layer_kinds=kinds(["sliding_attention", "full_attention", "sliding_attention"], 4),
                        config={"head_dim": 8, "query_pre_attn_scalar": 12, "sliding_window": 4,
                                "attn_logit_softcapping": 5.0, "final_logit_softcapping": 3.0, "rope_theta": 10000.0,
                                "hidden_activation": "gelu_pytorch_tanh", "hidden_act": "gelu_pytorch_tanh",
                                "tie_word_embeddings": True, "bos_token_id": 2, "eos_token_id": 1, "pad_token_id": 0}),
    "gemma3": dict(GEMMA3, seed=27, dtype="F32", arch="Gemma3ForCausalLM", model_type="gemma3_text",
                   rope={"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
                         "sliding_attention": {"rope_theta": 1e4}},
                   layer_kinds=kinds(["sliding_attention", "sliding_attention", "full_attention"], 4),
                   config={"head_dim": 8, "query_pre_attn_scalar": 8, "sliding_window": 4, "sliding_window_pattern": 3,
                           "rope_theta": 1e6, "rope_local_base_freq": 1e4, "hidden_activation": "gelu_pytorch_tanh",
                           "rope_scaling": {"rope_type": "linear", "factor": 8.0}, "final_logit_softcapping": None,
                           "attn_logit_softcapping": None, "bos_token_id": 2, "eos_token_id": [1, 50]}),
    "gemma3_types": dict(GEMMA3, seed=28, dtype="F32", arch="Gemma3ForCausalLM", model_type="gemma3_text",
                         scalar=16, final_cap=3.0,
                         rope={"full_attention": {"rope_type": "default", "rope_theta": 1e6},
                               "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}},
                         layer_kinds=kinds(["full_attention", "sliding_attention", "sliding_attention"], 4),
                         version="5.0.0",
                         config={"head_dim": 8, "query_pre_attn_scalar": 16, "sliding_window": 4,
                                 "final_logit_softcapping": 3.0,
                                 "layer_types": ["full_attention", "sliding_attention", "sliding_attention"],
                                 "rope_parameters": {"full_attention": {"rope_type": "default", "rope_theta": 1e6},
                                                     "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}}),
    "gemma3_vlm": dict(GEMMA3, seed=29, dtype="BF16", arch="Gemma3ForConditionalGeneration", model_type="gemma3",
                       vlm=True, scalar=16,
                       rope={"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
                             "sliding_attention": {"rope_theta": 1e4}},
                       layer_kinds=kinds(["sliding_attention", "sliding_attention", "full_attention"], 4),
                       config={"head_dim": 8, "query_pre_attn_scalar": 16, "sliding_window": 4, "sliding_window_pattern": 3,
                               "rope_scaling": {"factor": 8.0, "rope_type": "linear"}}),
}


def rounded(rows):
    return [[float("%.9g" % x) for x in row] for row in rows]


def write(name, v):
    """Writes fixture name: weights drawn from v's seed, then 16 token ids;
    config.json; the weights; name.reference.json with the ids, logits and
    attention weights."""
    gen = torch.Generator().manual_seed(v["seed"])
    w = draw_weights(v, gen)
    ids = torch.randint(0, v["vocab"], (16,), generator=gen)
    directory = os.path.join(HERE, name)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(config_json(name, v), f, indent=2, sort_keys=True)
        f.write("\n")
    write_weights(directory, v, stored_tensors(v, w))
    logits, attn = forward(v, w, ids)
    reference = {"tokens": ids.tolist(), "logits": rounded(logits.tolist()),
                 "attention": [[rounded(head) for head in layer.tolist()] for layer in attn]}
    with open(os.path.join(HERE, name + ".reference.json"), "w") as f:
        json.dump(reference, f, separators=(",", ":"))
        f.write("\n")


def main():
    for name, v in VARIANTS.items():
        assert len(v["layer_kinds"]) == v["layers"], name
        write(name, v)


if __name__ == "__main__":
    main()
