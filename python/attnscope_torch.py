"""attnscope_torch: use attnscope checkpoints from PyTorch, and back.

    import sys; sys.path.insert(0, "python")       # from the repository root
    import attnscope_torch
    model, info = attnscope_torch.load("runs/copy/checkpoint.safetensors")
    logits, attention = model(tokens)              # tokens: (B, T) int64
    ...                                            # train or edit it in PyTorch
    attnscope_torch.save(model.state_dict(), "edited.safetensors", info["config"])

`AttnLM` is the model of docs/model.md written in PyTorch, with the tensor
names and layouts of attnscope's checkpoints, so `load_state_dict` takes a
checkpoint's tensors as they are. It covers the attention family (learned,
sinusoidal, rope, alibi and no positions; grouped- and multi-query heads;
windows; latent attention; head_dim apart from d_model/heads, linear and
llama3 rope scaling, partial rotary, local/global layers with their own
rope base) and the block parts of model/parts.go (LayerNorm
with or without a bias, RMSNorm, the norms' eps; gelu_tanh, exact gelu,
swiglu, geglu and relu2 MLPs with or without biases; tied embeddings; QK-norm per
head or over the whole projections; pre, sandwich and post norms; RMSNorm
by (1 + w); the parallel residual) and the scores' parts of model/scores.go
(attn_scale, attn_softcap, final_softcap, embed_scale).
Norm is written here rather than taken from torch.nn, whose LayerNorm has no
bias switch before torch 2.1 and which has no RMSNorm before 2.4. `read_safetensors` reads the file in pure Python
(Debian's python3 has no safetensors package) and needs no torch: the
model half (AttnLM and the parts above, in attnscope_nn.py) and torch are
imported only when one of their names, `to_torch`, `load` or `save` is used;
and `save` writes a state
dict with these names back to a checkpoint inspect and sample open (the
safetensors layout and metadata checkpoint.Save writes: the run
config, the step, the format and the data's SHA-256); to_checkpoint.py does
it from the command line. The model tests
(model/testdata/pytorch/gen_fixtures.py) and checkpoint.TestPyTorchLoadsCheckpoint
use this module.
"""

import hashlib
import json
import os
import struct
import sys
import tempfile
from array import array
from collections import namedtuple


def param_order(cfg):
    """The names of model.Config.ParamSpecs, in its order."""
    def norm(name):
        bias = cfg.get("norm_bias")
        has_bias = (cfg.get("norm") or "layernorm") == "layernorm" and (bias is None or bias)
        return [name + ".weight"] + ([name + ".bias"] if has_bias else [])

    def linear(name, bias):
        return [name + ".weight"] + ([name + ".bias"] if bias else [])

    mlp_bias = cfg.get("mlp_bias")
    mlp_bias = mlp_bias is None or mlp_bias
    mlp = ["gate", "up", "down"] if cfg.get("activation") in ("swiglu", "geglu") else ["fc", "proj"]
    names = ["tok_emb.weight"]
    if (cfg.get("position") or "learned") == "learned":
        names.append("pos_emb.weight")
    placement = cfg.get("norm_placement") or "pre"
    pre = cfg["mlp"] and placement != "post"
    post = cfg["mlp"] and placement != "pre"
    for i in range(cfg["layers"]):
        p = "blocks.%d." % i
        if pre:
            names += norm(p + "ln1")
        if cfg.get("kv_latent"):
            names += linear(p + "attn.q", cfg["qkv_bias"]) + [p + "attn.kv_down.weight"]
            names += linear(p + "attn.kv_up", cfg["qkv_bias"])
        else:
            names += linear(p + "attn.qkv", cfg["qkv_bias"])
        if cfg.get("qk_norm"):
            names += [p + "attn.q_norm.weight", p + "attn.k_norm.weight"]
        names += linear(p + "attn.out", cfg["out_bias"])
        if post:
            names += norm(p + "ln1_post")
        if pre:
            names += norm(p + "ln2")
        if cfg["mlp"]:
            for m in mlp:
                names += linear(p + "mlp." + m, mlp_bias)
        if post:
            names += norm(p + "ln2_post")
    if cfg["mlp"]:
        names += norm("ln_f")
    if not cfg.get("tie_embeddings"):
        names.append("lm_head.weight")
    if cfg["lm_head_bias"]:
        names.append("lm_head.bias")
    return names


# The element types read and written, by safetensors dtype: array's typecode
# and torch's dtype name.
TYPECODES = {"F32": "f", "F64": "d"}
TORCH_DTYPES = {"F32": "float32", "F64": "float64"}

# Array is one tensor as read, without torch: its safetensors dtype, its
# shape and its values in row-major order (an array.array).
Array = namedtuple("Array", "dtype shape values")


def read_safetensors(path):
    """The tensors of a safetensors file by name, as Arrays, and its
    metadata. Pure Python: no torch is imported (to_torch converts)."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    metadata = header.pop("__metadata__", {})
    data = raw[8 + n:]
    tensors = {}
    for name, t in header.items():
        if t["dtype"] not in TYPECODES:
            raise ValueError("%s: tensor %s has dtype %s; want F32 or F64" % (path, name, t["dtype"]))
        start, end = t["data_offsets"]
        values = array(TYPECODES[t["dtype"]], data[start:end])
        if sys.byteorder == "big":                                      # safetensors is little-endian
            values.byteswap()
        tensors[name] = Array(t["dtype"], list(t["shape"]), values)
    return tensors, metadata


def to_torch(arrays):
    """read_safetensors' Arrays as torch tensors, by name."""
    import torch
    return {name: torch.frombuffer(bytearray(a.values.tobytes()), dtype=getattr(torch, TORCH_DTYPES[a.dtype]))
            .reshape(a.shape).clone() for name, a in arrays.items()}


def load(path, dtype=None):
    """The model of an attnscope checkpoint with its weights, in eval mode
    (float64 unless dtype says), and the checkpoint's metadata (run config,
    step)."""
    import torch
    from attnscope_nn import AttnLM
    dtype = dtype or torch.float64
    arrays, metadata = read_safetensors(path)
    run = json.loads(metadata["config"])
    model = AttnLM(run["model"]).to(dtype)
    model.load_state_dict({k: v.to(dtype) for k, v in to_torch(arrays).items()}, strict=True)
    model.eval()
    return model, {"config": run, "step": int(metadata.get("step", 0))}


# The names attnscope_nn defines, imported from it (with torch) on first use.
MODEL_NAMES = ("AttnLM", "Attention", "Block", "MLP", "Norm", "TiedHead", "ACTIVATIONS", "block_norm",
               "gelu_tanh", "alibi_slopes", "rotate_half", "rope", "sinusoidal", "checkpoint_tensors")


def __getattr__(name):
    if name in MODEL_NAMES:
        import attnscope_nn
        return getattr(attnscope_nn, name)
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


# The checkpoint format checkpoint.Format names, and the metadata key
# of the data section's SHA-256 (internal/safetensors.DigestKey).
CHECKPOINT_FORMAT = "attnscope/1"
DIGEST_KEY = "data_sha256"
NAMES = {"torch.float32": "F32", "torch.float64": "F64"}  # str(tensor.dtype) -> safetensors dtype


def write_safetensors(path, tensors, metadata):
    """Writes tensors, a list of (name, tensor) pairs, and the metadata to
    path as safetensors, laid out as attnscope writes it: the metadata
    first with the data's SHA-256 added, the data in the order given, the
    header padded with spaces to a multiple of 8 bytes. The file is
    replaced atomically."""
    datas = [t.cpu().numpy().tobytes() for _, t in tensors]
    meta = dict(metadata)
    meta[DIGEST_KEY] = hashlib.sha256(b"".join(datas)).hexdigest()
    header = {"__metadata__": dict(sorted(meta.items()))}
    offset = 0
    for (name, t), raw in zip(tensors, datas):
        header[name] = {"dtype": NAMES[str(t.dtype)], "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-(8 + len(text)) % 8)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".tmp-")
    try:
        os.chmod(tmp, 0o644)                                            # mkstemp's 0600 would hide it from others
        with os.fdopen(fd, "wb") as f:
            f.write(struct.pack("<Q", len(text)) + text)
            for raw in datas:
                f.write(raw)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def save(state_dict, path, config, step=0, dtype=None):
    """Writes state_dict (the names of `load`'s model) with the run config
    (a dict, as `load` returns it in info["config"]) and the step to an
    attnscope checkpoint at path, in float32 as attnscope trains."""
    import torch
    from attnscope_nn import checkpoint_tensors
    tensors = checkpoint_tensors(state_dict, config["model"], dtype or torch.float32)
    metadata = {"config": json.dumps(config, separators=(",", ":")), "step": str(int(step)), "format": CHECKPOINT_FORMAT}
    write_safetensors(path, tensors, metadata)
