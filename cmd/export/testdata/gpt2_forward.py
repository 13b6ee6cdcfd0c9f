#!/usr/bin/python3
"""GPT-2's logits for a Hugging Face GPT-2 directory, read as transformers reads it.

    /usr/bin/python3 cmd/export/testdata/gpt2_forward.py DIR '[3, 1, 4]'

prints {"logits": [[...] per position]} in float64. cmd/export's tests hold
the lab's forward to it on a model export wrote. Its forward is
open/hf/testdata/gen_fixtures.py's, written from GPT-2's published
definition (OpenAI's gpt-2 model.py, Hugging Face's modeling_gpt2.py),
independently of python/attnscope_torch.py and of the Go code. It reads the
directory as GPT2LMHeadModel.from_pretrained does:

    config.json   GPT2Config's keys, its defaults for those left out
                  (n_inner null is 4 n_embd, tie_word_embeddings true)
    weights       model.safetensors, metadata format "pt", every tensor
                  under GPT2LMHeadModel's state-dict names with their shapes,
                  and no other but a tied lm_head.weight (from_pretrained
                  would leave a missing one random and drop an extra one,
                  with only a warning)

    x      = wte[ids] + wpe[0:T]
    block  : x = x + attn(ln_1(x)); x = x + mlp(ln_2(x))
    Conv1D : y = x W + b with W stored (in, out)
    attn   : [q | k | v] = c_attn(x) split in three along the features,
             heads contiguous in each; s = q k^T / sqrt(d); causal;
             softmax; heads concatenated; c_proj
    mlp    : c_proj(act(c_fc(x))), act gelu_new (tanh form) or exact gelu
    LN     : biased variance, eps layer_norm_epsilon
    logits = ln_f(x) W_head^T, W_head = wte when tied, else lm_head.weight

Only /usr/bin/python3 has torch here (Debian python3-torch); the file is
read with struct and json alone (Debian has no safetensors package).
"""

import json
import os
import struct
import sys

import torch

# GPT-2's forward, the one open/hf's fixtures were made with (from the same
# published definition, independent of the Go code).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "open", "hf", "testdata"))
import gen_fixtures  # noqa: E402

DTYPES = {"F32": (torch.float32, 4), "F16": (torch.float16, 2), "BF16": (torch.bfloat16, 2)}


def read_safetensors(path):
    """name -> float64 tensor, and the metadata."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    metadata = header.pop("__metadata__", {})
    data = raw[8 + n:]
    out = {}
    for name, info in header.items():
        dtype, size = DTYPES[info["dtype"]]
        start, end = info["data_offsets"]
        count = (end - start) // size
        t = torch.frombuffer(bytearray(data[start:end]), dtype=dtype, count=count)
        out[name] = t.reshape(info["shape"]).to(torch.float64)
    return out, metadata


def config_of(directory):
    with open(os.path.join(directory, "config.json")) as f:
        c = json.load(f)
    if c.get("model_type") != "gpt2" or c.get("architectures") != ["GPT2LMHeadModel"]:
        sys.exit("config.json: not a GPT2LMHeadModel: %r %r" % (c.get("model_type"), c.get("architectures")))
    d = c.get("n_embd", 768)
    return {
        "vocab": c.get("vocab_size", 50257), "positions": c.get("n_positions", 1024), "d": d,
        "layers": c.get("n_layer", 12), "heads": c.get("n_head", 12), "inner": c.get("n_inner") or 4 * d,
        "activation": c.get("activation_function", "gelu_new"), "eps": c.get("layer_norm_epsilon", 1e-5),
        "tied": c.get("tie_word_embeddings", True),
    }


def expected_shapes(v):
    """GPT2LMHeadModel's state dict, name -> shape (Conv1D weights (in, out))."""
    d, f = v["d"], v["inner"]
    s = {"transformer.wte.weight": [v["vocab"], d], "transformer.wpe.weight": [v["positions"], d],
         "transformer.ln_f.weight": [d], "transformer.ln_f.bias": [d]}
    for i in range(v["layers"]):
        p = "transformer.h.%d." % i
        s.update({p + "ln_1.weight": [d], p + "ln_1.bias": [d], p + "ln_2.weight": [d], p + "ln_2.bias": [d],
                  p + "attn.c_attn.weight": [d, 3 * d], p + "attn.c_attn.bias": [3 * d],
                  p + "attn.c_proj.weight": [d, d], p + "attn.c_proj.bias": [d],
                  p + "mlp.c_fc.weight": [d, f], p + "mlp.c_fc.bias": [f],
                  p + "mlp.c_proj.weight": [f, d], p + "mlp.c_proj.bias": [d]})
    if not v["tied"]:
        s["lm_head.weight"] = [v["vocab"], d]
    return s


def main():
    directory, ids = sys.argv[1], json.loads(sys.argv[2])
    v = config_of(directory)
    w, metadata = read_safetensors(os.path.join(directory, "model.safetensors"))
    if metadata.get("format") != "pt":
        sys.exit("model.safetensors: metadata format %r; transformers loads \"pt\"" % metadata.get("format"))
    want = expected_shapes(v)
    for name in sorted(set(want) | set(w)):
        if name not in w:
            sys.exit("model.safetensors: no %s" % name)
        if name not in want and not (name == "lm_head.weight" and v["tied"]):  # the tied head, saved or not
            sys.exit("model.safetensors: %s is not a GPT2LMHeadModel tensor" % name)
        if list(w[name].shape) != want.get(name, [v["vocab"], v["d"]]):
            sys.exit("model.safetensors: %s has shape %s, want %s" % (name, list(w[name].shape), want.get(name)))
    inner = {k.removeprefix("transformer."): t for k, t in w.items()}
    with torch.no_grad():
        logits = gen_fixtures.forward(v, inner, torch.tensor(ids))
    print(json.dumps({"logits": logits.tolist()}))


if __name__ == "__main__":
    main()
