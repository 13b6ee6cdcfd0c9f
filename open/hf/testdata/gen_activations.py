#!/usr/bin/python3
"""TransformerLens's activations of two fixture directories, for
open/hf/activations_test.go.

Regenerate from the repository root (reruns are byte-identical on one machine):

    /usr/bin/python3 open/hf/testdata/gen_activations.py

Only /usr/bin/python3 has torch here (Debian python3-torch 1.13); there is no
transformer_lens or transformers. The forwards below are written by hand from
GPT-2's and Llama's published definitions, independently of the Go code and of
the other fixture scripts, and name every activation as TransformerLens's
HookedTransformer does, in its shapes (batch first), with the values of
HookedTransformer.from_pretrained_no_processing (nothing folded or centred):

    hook_embed          (B, T, D)      W_E[tokens]
    hook_pos_embed      (B, T, D)      W_pos[0:T] (GPT-2)
    blocks.N.hook_resid_pre, hook_resid_mid, hook_resid_post   (B, T, D)
    blocks.N.ln1.hook_scale (B, T, 1)  sqrt(mean(x'^2) + eps), x' = x - mean(x)
                                       for a LayerNorm, x for an RMSNorm
    blocks.N.ln1.hook_normalized       a LayerNorm's output x'/scale*w + b;
                                       an RMSNorm's x/scale, before w
    attn.hook_q         (B, T, H, d)   before rotary positions
    attn.hook_k, hook_v (B, T, G, d)   G key/value heads (Llama: 2 of 4)
    attn.hook_rot_q, hook_rot_k        after rotary positions (Llama)
    attn.hook_attn_scores (B, H, T, T) q k^T / sqrt(d), -inf above the diagonal
                                       (written as null)
    attn.hook_pattern   (B, H, T, T)   softmax over keys
    attn.hook_z         (B, T, H, d)   pattern v
    attn.hook_result    (B, T, H, D)   z of head h through W_O's slice for h, no bias
    hook_attn_out       (B, T, D)      sum over heads of hook_result, + b_O
    mlp.hook_pre        (B, T, F)      x W_in + b_in (GPT-2); x W_gate (Llama)
    mlp.hook_pre_linear (B, T, F)      x W_in (Llama)
    mlp.hook_post       (B, T, F)      gelu_new(pre); silu(pre) * pre_linear
    hook_mlp_out        (B, T, D)
    ln_final.hook_scale, hook_normalized, and logits (B, T, V)

Everything runs in float64 on the float32 values the files store; values are
written to 10 significant digits.
"""

import json
import math
import os
import struct

os.environ["OMP_NUM_THREADS"] = "1"

import torch

torch.set_num_threads(1)
HERE = os.path.dirname(os.path.abspath(__file__))
TOKENS = [[5, 17, 42], [88, 0, 61]]


def read_safetensors(path):
    """The F32 tensors of a safetensors file, as float64 torch tensors."""
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    body = raw[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", (name, info["dtype"])
        lo, hi = info["data_offsets"]
        values = struct.unpack("<%df" % ((hi - lo) // 4), body[lo:hi])
        out[name] = torch.tensor(values, dtype=torch.float64).reshape(info["shape"])
    return out


def layer_norm(x, w, b, eps):
    centred = x - x.mean(-1, keepdim=True)
    scale = (centred.pow(2).mean(-1, keepdim=True) + eps).sqrt()
    return scale, centred / scale * w + b


def rms_norm(x, eps):
    scale = (x.pow(2).mean(-1, keepdim=True) + eps).sqrt()
    return scale, x / scale


def causal_scores(q, k):
    """q (B, T, H, d), k (B, T, H, d) -> scaled scores (B, H, T, T), -inf above the diagonal."""
    d = q.shape[-1]
    s = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(d)
    t = q.shape[1]
    hidden = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
    return s.masked_fill(hidden, float("-inf"))


def attention_tail(acts, p, scores, v, w_o_heads, b_o):
    """pattern, z, result and attn_out from scores (B, H, T, T), v (B, T, H, d)
    and W_O split per head (H, d, D)."""
    pattern = torch.softmax(scores, dim=-1)
    z = torch.einsum("bhqk,bkhd->bqhd", pattern, v)
    result = torch.einsum("bqhd,hdm->bqhm", z, w_o_heads)
    acts[p + "attn.hook_attn_scores"] = scores
    acts[p + "attn.hook_pattern"] = pattern
    acts[p + "attn.hook_z"] = z
    acts[p + "attn.hook_result"] = result
    out = result.sum(dim=2)
    return out if b_o is None else out + b_o


def gpt2(w, cfg, tokens):
    pre = "transformer."
    d_model, heads = cfg["n_embd"], cfg["n_head"]
    d, eps = d_model // heads, cfg["layer_norm_epsilon"]
    acts = {}
    embed = w[pre + "wte.weight"][tokens]
    pos = w[pre + "wpe.weight"][: tokens.shape[1]].expand_as(embed)
    acts["hook_embed"], acts["hook_pos_embed"] = embed, pos
    x = embed + pos
    b, t = tokens.shape
    for l in range(cfg["n_layer"]):
        p, h = "blocks.%d." % l, pre + "h.%d." % l
        acts[p + "hook_resid_pre"] = x
        scale, n1 = layer_norm(x, w[h + "ln_1.weight"], w[h + "ln_1.bias"], eps)
        acts[p + "ln1.hook_scale"], acts[p + "ln1.hook_normalized"] = scale, n1
        qkv = n1 @ w[h + "attn.c_attn.weight"] + w[h + "attn.c_attn.bias"]  # Conv1D: (in, out)
        q, k, v = (part.reshape(b, t, heads, d) for part in qkv.split(d_model, dim=-1))
        acts[p + "attn.hook_q"], acts[p + "attn.hook_k"], acts[p + "attn.hook_v"] = q, k, v
        w_o = w[h + "attn.c_proj.weight"].reshape(heads, d, d_model)  # rows of head h: its d inputs
        attn = attention_tail(acts, p, causal_scores(q, k), v, w_o, w[h + "attn.c_proj.bias"])
        acts[p + "hook_attn_out"] = attn
        x = x + attn
        acts[p + "hook_resid_mid"] = x
        scale, n2 = layer_norm(x, w[h + "ln_2.weight"], w[h + "ln_2.bias"], eps)
        acts[p + "ln2.hook_scale"], acts[p + "ln2.hook_normalized"] = scale, n2
        pre_act = n2 @ w[h + "mlp.c_fc.weight"] + w[h + "mlp.c_fc.bias"]
        post = 0.5 * pre_act * (1 + torch.tanh(math.sqrt(2 / math.pi) * (pre_act + 0.044715 * pre_act.pow(3))))
        acts[p + "mlp.hook_pre"], acts[p + "mlp.hook_post"] = pre_act, post
        mlp = post @ w[h + "mlp.c_proj.weight"] + w[h + "mlp.c_proj.bias"]
        acts[p + "hook_mlp_out"] = mlp
        x = x + mlp
        acts[p + "hook_resid_post"] = x
    scale, nf = layer_norm(x, w[pre + "ln_f.weight"], w[pre + "ln_f.bias"], eps)
    acts["ln_final.hook_scale"], acts["ln_final.hook_normalized"] = scale, nf
    acts["logits"] = nf @ w[pre + "wte.weight"].T
    return acts


def rotate(x, theta):
    """Rotate-half rotary positions of x (B, T, n, d), pairs (i, i + d/2)."""
    t, d = x.shape[1], x.shape[-1]
    inv = 1.0 / (theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    angles = torch.outer(torch.arange(t, dtype=torch.float64), inv)
    cos = torch.cat([angles.cos(), angles.cos()], dim=-1)[None, :, None, :]
    sin = torch.cat([angles.sin(), angles.sin()], dim=-1)[None, :, None, :]
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return x * cos + torch.cat([-x2, x1], dim=-1) * sin


def llama(w, cfg, tokens):
    d_model, heads, kv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    d, eps, theta = d_model // heads, cfg["rms_norm_eps"], cfg["rope_theta"]
    acts = {}
    x = w["model.embed_tokens.weight"][tokens]
    acts["hook_embed"] = x
    b, t = tokens.shape
    for l in range(cfg["num_hidden_layers"]):
        p, h = "blocks.%d." % l, "model.layers.%d." % l
        acts[p + "hook_resid_pre"] = x
        scale, n1 = rms_norm(x, eps)
        acts[p + "ln1.hook_scale"], acts[p + "ln1.hook_normalized"] = scale, n1
        y = n1 * w[h + "input_layernorm.weight"]
        q = (y @ w[h + "self_attn.q_proj.weight"].T).reshape(b, t, heads, d)
        k = (y @ w[h + "self_attn.k_proj.weight"].T).reshape(b, t, kv, d)
        v = (y @ w[h + "self_attn.v_proj.weight"].T).reshape(b, t, kv, d)
        acts[p + "attn.hook_q"], acts[p + "attn.hook_k"], acts[p + "attn.hook_v"] = q, k, v
        rq, rk = rotate(q, theta), rotate(k, theta)
        acts[p + "attn.hook_rot_q"], acts[p + "attn.hook_rot_k"] = rq, rk
        group = heads // kv
        scores = causal_scores(rq, rk.repeat_interleave(group, dim=2))
        w_o = w[h + "self_attn.o_proj.weight"].T.reshape(heads, d, d_model)  # nn.Linear (out, in)
        attn = attention_tail(acts, p, scores, v.repeat_interleave(group, dim=2), w_o, None)
        acts[p + "hook_attn_out"] = attn
        x = x + attn
        acts[p + "hook_resid_mid"] = x
        scale, n2 = rms_norm(x, eps)
        acts[p + "ln2.hook_scale"], acts[p + "ln2.hook_normalized"] = scale, n2
        y = n2 * w[h + "post_attention_layernorm.weight"]
        gate = y @ w[h + "mlp.gate_proj.weight"].T
        up = y @ w[h + "mlp.up_proj.weight"].T
        post = gate * torch.sigmoid(gate) * up
        acts[p + "mlp.hook_pre"], acts[p + "mlp.hook_pre_linear"], acts[p + "mlp.hook_post"] = gate, up, post
        mlp = post @ w[h + "mlp.down_proj.weight"].T
        acts[p + "hook_mlp_out"] = mlp
        x = x + mlp
        acts[p + "hook_resid_post"] = x
    scale, nf = rms_norm(x, eps)
    acts["ln_final.hook_scale"], acts["ln_final.hook_normalized"] = scale, nf
    acts["logits"] = (nf * w["model.norm.weight"]) @ w["lm_head.weight"].T
    return acts


def number(v):
    return None if math.isinf(v) else float("%.10g" % v)


def write(name, forward):
    directory = os.path.join(HERE, name)
    with open(os.path.join(directory, "config.json")) as f:
        cfg = json.load(f)
    weights = read_safetensors(os.path.join(directory, "model.safetensors"))
    acts = forward(weights, cfg, torch.tensor(TOKENS))
    out = {"tokens": TOKENS, "activations": {
        k: {"shape": list(v.shape), "data": [number(x) for x in v.reshape(-1).tolist()]} for k, v in acts.items()}}
    with open(os.path.join(HERE, name + ".activations.json"), "w") as f:
        json.dump(out, f, separators=(",", ":"), sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    write("prefixed", gpt2)
    write("llama", llama)
