#!/usr/bin/python3
"""Hugging Face GPT-2 model directories for open/hf's tests, with reference logits.

Regenerate from the repository root (reruns are byte-identical on one machine):

    /usr/bin/python3 open/hf/testdata/gen_fixtures.py

Only /usr/bin/python3 has torch here (Debian python3-torch 1.13).

The forward below is written from GPT-2's published definition (OpenAI's
gpt-2 model.py, Hugging Face's modeling_gpt2.py), independently of
python/attnscope_torch.py and of the Go code:

    x      = wte[ids] + wpe[0:T]
    block  : x = x + attn(ln_1(x)); x = x + mlp(ln_2(x))
    Conv1D : y = x W + b with W stored (in, out)
    attn   : [q | k | v] = c_attn(x) split in three along the features,
             heads contiguous in each; s = q k^T / sqrt(d); causal;
             softmax; heads concatenated; c_proj
    mlp    : c_proj(act(c_fc(x))), act gelu_new (tanh form) or exact gelu
    LN     : biased variance, eps layer_norm_epsilon
    logits = ln_f(x) wte^T  (tied head)

Weights are random and not small (std 0.3, LayerNorm weights 1 +- 0.3,
nonzero biases) so that a wrong formula or a wrong transpose shows. They are
drawn in float32, rounded to the dtype the file stores (F32, F16, BF16), and
the reference forward runs in float64 on exactly those rounded values. Logits
are written to 9 significant digits, far below the Go tests' tolerances.

Each directory is laid out as the Hugging Face hub lays a model out, written
by the small safetensors writer below:

    prefixed/  F32, one model.safetensors, names with "transformer.", and the
               tied lm_head.weight stored too (GPT2LMHeadModel's state dict)
    buffers/   F16, no prefix, with the old h.N.attn.bias causal masks (F32 in
               layer 0, BOOL in layer 1) and h.N.attn.masked_bias scalars;
               layer_norm_epsilon 1e-2, so a loader that ignores it shows
    sharded/   BF16, "transformer." prefix, three shards listed in
               model.safetensors.index.json
    distil/    distilgpt2's 6 layers, narrower (n_embd 16) to stay small, F16,
               an old config (n_ctx, no n_positions), n_inner 48 and the exact
               gelu activation

Beside each directory, NAME.reference.json holds the tokens and the logits.
"""

import json
import math
import os
import struct
import sys

os.environ["OMP_NUM_THREADS"] = "1"
os.environ["OPENBLAS_NUM_THREADS"] = "1"

try:
    import torch
except ImportError:
    sys.exit("gen_fixtures.py: torch is not importable; run it with /usr/bin/python3 "
             "(apt-get install python3-torch libopenblas0-pthread)")

torch.set_num_threads(1)
HERE = os.path.dirname(os.path.abspath(__file__))

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}


# ---- the safetensors format: u64 header length, JSON header, data ----

def tensor_bytes(t, dtype):
    """Little-endian bytes of t stored as dtype."""
    if dtype == "BOOL":
        return t.to(torch.bool).to(torch.uint8).numpy().tobytes()
    if dtype == "BF16":  # numpy has no bfloat16: reinterpret the 16 bits
        return t.to(torch.bfloat16).view(torch.int16).numpy().astype("<i2").tobytes()
    return t.to(DTYPES[dtype]).numpy().astype({"F32": "<f4", "F16": "<f2"}[dtype]).tobytes()


def write_safetensors(path, tensors):
    """tensors: name -> (torch tensor, dtype). Sorted by name, data packed in
    that order, header padded with spaces to 8 bytes, {"format": "pt"}
    metadata, as the safetensors library writes a PyTorch state dict."""
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name in sorted(tensors):
        t, dtype = tensors[name]
        data = tensor_bytes(t, dtype)
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for data in blobs:
            f.write(data)
    return offset


# ---- GPT-2 ----

def config_json(v):
    """config.json as transformers writes it for GPT2LMHeadModel."""
    c = {
        "activation_function": v["activation"],
        "architectures": ["GPT2LMHeadModel"],
        "attn_pdrop": 0.1,
        "bos_token_id": v["vocab"] - 1,
        "embd_pdrop": 0.1,
        "eos_token_id": v["vocab"] - 1,
        "initializer_range": 0.02,
        "layer_norm_epsilon": v["eps"],
        "model_type": "gpt2",
        "n_ctx": v["positions"],
        "n_embd": v["d"],
        "n_head": v["heads"],
        "n_inner": v["inner"],
        "n_layer": v["layers"],
        "n_positions": v["positions"],
        "reorder_and_upcast_attn": False,
        "resid_pdrop": 0.1,
        "scale_attn_by_inverse_layer_idx": False,
        "scale_attn_weights": True,
        "summary_activation": None,
        "summary_first_dropout": 0.1,
        "summary_proj_to_labels": True,
        "summary_type": "cls_index",
        "summary_use_proj": True,
        "task_specific_params": {"text-generation": {"do_sample": True, "max_length": 50}},
        "torch_dtype": {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[v["dtype"]],
        "transformers_version": "4.40.0",
        "use_cache": True,
        "vocab_size": v["vocab"],
    }
    if v.get("old_config"):  # configs of 2019 name the context n_ctx only
        del c["n_positions"], c["reorder_and_upcast_attn"], c["scale_attn_by_inverse_layer_idx"]
    return c


def draw_weights(v, gen):
    """GPT-2's parameters by their Hugging Face names (no prefix), Conv1D
    weights (in, out), drawn in float32 and rounded to the stored dtype."""
    d, f = v["d"], v["inner"] or 4 * v["d"]

    def normal(*shape, mean=0.0):
        return mean + 0.3 * torch.randn(*shape, generator=gen, dtype=torch.float32)

    w = {"wte.weight": normal(v["vocab"], d), "wpe.weight": normal(v["positions"], d)}
    for i in range(v["layers"]):
        p = "h.%d." % i
        w[p + "ln_1.weight"], w[p + "ln_1.bias"] = normal(d, mean=1.0), normal(d)
        w[p + "attn.c_attn.weight"], w[p + "attn.c_attn.bias"] = normal(d, 3 * d), normal(3 * d)
        w[p + "attn.c_proj.weight"], w[p + "attn.c_proj.bias"] = normal(d, d), normal(d)
        w[p + "ln_2.weight"], w[p + "ln_2.bias"] = normal(d, mean=1.0), normal(d)
        w[p + "mlp.c_fc.weight"], w[p + "mlp.c_fc.bias"] = normal(d, f), normal(f)
        w[p + "mlp.c_proj.weight"], w[p + "mlp.c_proj.bias"] = normal(f, d), normal(d)
    w["ln_f.weight"], w["ln_f.bias"] = normal(d, mean=1.0), normal(d)
    return {k: t.to(DTYPES[v["dtype"]]).to(torch.float32) for k, t in w.items()}


def layer_norm(x, weight, bias, eps):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * weight + bias


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def gelu_exact(x):
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


ACTIVATIONS = {"gelu_new": gelu_new, "gelu": gelu_exact}


def forward(v, w, ids):
    """GPT-2's logits (T, V) for one sequence, in float64: w by the names
    under "transformer." (and lm_head.weight when v["tied"] is false)."""
    w = {k: t.to(torch.float64) for k, t in w.items()}
    t, d, h = len(ids), v["d"], v["heads"]
    hd = d // h
    act = ACTIVATIONS[v["activation"]]
    causal = torch.tril(torch.ones(t, t, dtype=torch.bool))
    x = w["wte.weight"][ids] + w["wpe.weight"][:t]                              # (T, D)
    for i in range(v["layers"]):
        p = "h.%d." % i
        a = layer_norm(x, w[p + "ln_1.weight"], w[p + "ln_1.bias"], v["eps"])
        qkv = a @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]        # (T, 3D)
        q, k, val = qkv.split(d, dim=-1)                                        # (T, D) each
        q, k, val = (z.view(t, h, hd).transpose(0, 1) for z in (q, k, val))     # (H, T, d)
        s = q @ k.transpose(-1, -2) / math.sqrt(hd)                             # (H, T, T)
        s = s.masked_fill(~causal, float("-inf"))
        o = (torch.softmax(s, dim=-1) @ val).transpose(0, 1).reshape(t, d)      # (T, D)
        x = x + o @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
        m = layer_norm(x, w[p + "ln_2.weight"], w[p + "ln_2.bias"], v["eps"])
        m = act(m @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"])         # (T, F)
        x = x + m @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
    x = layer_norm(x, w["ln_f.weight"], w["ln_f.bias"], v["eps"])
    head = w["wte.weight"] if v.get("tied", True) else w["lm_head.weight"]
    return x @ head.T                                                           # (T, V)


# ---- the variants ----

BASE = {"vocab": 96, "positions": 32, "d": 32, "heads": 4, "layers": 2, "inner": None,
        "activation": "gelu_new", "eps": 1e-5}
VARIANTS = {
    "prefixed": dict(BASE, seed=1, dtype="F32", prefix="transformer.", lm_head=True),
    "buffers": dict(BASE, seed=2, dtype="F16", prefix="", buffers=True, eps=1e-2),
    "sharded": dict(BASE, seed=3, dtype="BF16", prefix="transformer.", shards=3),
    "distil": dict(BASE, seed=4, dtype="F16", prefix="", d=16, layers=6, inner=48, activation="gelu",
                   old_config=True),
}


def stored_tensors(v, w):
    """The file's tensors: name -> (values, dtype)."""
    out = {v["prefix"] + k: (t, v["dtype"]) for k, t in w.items()}
    if v.get("lm_head"):
        out["lm_head.weight"] = (w["wte.weight"], v["dtype"])
    if v.get("buffers"):
        p = v["positions"]
        mask = torch.tril(torch.ones(p, p)).view(1, 1, p, p)
        for i in range(v["layers"]):
            out["h.%d.attn.bias" % i] = (mask, "F32" if i == 0 else "BOOL")
            out["h.%d.attn.masked_bias" % i] = (torch.tensor(-1e4), "F32")
    return out


def write_weights(directory, v, tensors):
    shards = v.get("shards")
    if not shards:
        write_safetensors(os.path.join(directory, "model.safetensors"), tensors)
        return
    names = sorted(tensors)
    weight_map, total = {}, 0
    for s in range(shards):
        file = "model-%05d-of-%05d.safetensors" % (s + 1, shards)
        part = {n: tensors[n] for n in names[s::shards]}
        total += write_safetensors(os.path.join(directory, file), part)
        weight_map.update({n: file for n in part})
    index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
    with open(os.path.join(directory, "model.safetensors.index.json"), "w") as f:
        json.dump(index, f, indent=2)
        f.write("\n")


def main():
    for name, v in VARIANTS.items():
        write_fixture(name, v, draw_weights, config_json(v), stored_tensors, forward)


def write_fixture(name, v, draw, config, stored, run):
    """Writes fixture name: weights drawn by draw(v, gen) from v's seed, then
    16 token ids; config.json; the weights as stored(v, w) names them; and
    name.reference.json with the ids and run(v, w, ids)'s logits."""
    gen = torch.Generator().manual_seed(v["seed"])
    w = draw(v, gen)
    ids = torch.randint(0, v["vocab"], (16,), generator=gen)
    directory = os.path.join(HERE, name)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
        f.write("\n")
    write_weights(directory, v, stored(v, w))
    logits = run(v, w, ids)
    reference = {"tokens": ids.tolist(),
                 "logits": [[float("%.9g" % x) for x in row] for row in logits.tolist()]}
    with open(os.path.join(HERE, name + ".reference.json"), "w") as f:
        json.dump(reference, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
