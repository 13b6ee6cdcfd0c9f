#!/usr/bin/python3
"""PyTorch side of attnscope's inference benchmarks (bench -decode).

    /usr/bin/python3 cmd/bench/torch_decode.py --batch 32 --prompt 8 --length 256
    /usr/bin/python3 cmd/bench/torch_decode.py --config gpt2 --batch 1 --prompt 8 --length 64
    /usr/bin/python3 cmd/bench/torch_decode.py --config gpt2 --maps 256
    /usr/bin/python3 cmd/bench/torch_decode.py --config llama --batch 1 --prompt 1 --length 64

The model is GPT-2's (or Llama's, below), written from its published definition (OpenAI's
gpt-2 model.py, Hugging Face's modeling_gpt2.py): token plus learned position
embedding; pre-LN blocks x = x + attn(ln_1(x)); x = x + mlp(ln_2(x)) with
LayerNorm (eps 1e-5), Conv1D projections (weights stored (in, out), applied
as addmm(bias, x, W)), the fused c_attn split into q, k and v, scores divided
by sqrt(d_head), a causal softmax, mlp = c_proj(gelu_tanh(c_fc(x))); a final
LayerNorm and the LM head, nn.Linear over the token embedding when tied.
--config picks the sizes (CONFIGS): gpt2 is GPT-2 small's shape (12 layers,
D 768, 12 heads, d_ff 3072, V 50257, 1024 positions, biases on c_attn, tied
head); sort is the sort configuration of torch_ref.py (2 layers, D 64, 4
heads, d_ff 256, V 17, no c_attn bias, a head of its own) with a position
table of --length rows. Weights are random (N(0, 0.02^2), biases zero,
LayerNorm weights one), float32.

llama is a Llama of llama2.c's stories110M's shape (12 layers, D 768, 12
heads, hidden 2048, V 32000, 1024 positions, the head tied to the token
embedding as llama2.c ties it), written from Llama's published definition
(Hugging Face's modeling_llama.py; llama2.c's model.py): token embedding
only; x = x + o_proj(attn(rms_1(x))); x = x + down(silu(gate(n)) * up(n)),
n = rms_2(x), RMSNorm x * rsqrt(mean(x^2) + eps) * w (eps 1e-5), every
Linear without a bias; q_proj, k_proj and v_proj apart, q and k turned by
rotary positions in Hugging Face's rotate-half layout (channel i with
i + d/2, angle t * 10000^(-2i/d), the cos and sin tables computed once),
grouped-query heads when kv_heads < heads (query head h reads kv head
h // (heads / kv_heads)), scores divided by sqrt(d_head); a final RMSNorm
and the LM head. Weights N(0, 0.02^2), RMSNorm weights one.

Decoding is greedy and written as attnscope's model.Decoder: every row
advances one position per step, the prompt is fed one token at a time, and
each layer keeps preallocated key and value caches (B, H, length, d) into
which each step writes its new key and value before attending to the slots
so far. Prints ONE JSON line: generated tokens per second (batch x (length -
prompt) over the whole run) and steps per second (positions fed, every one
a pass over the weights) for each repetition.

--maps T instead times a forward over T tokens of one sequence that returns
the logits and every layer's attention weights (B, H, T, T), as
output_attentions=True does, and prints forwards per second.

As a module (runpy), it defines the model without running anything:
from_attnscope turns an attnscope checkpoint's tensors into its weights
(cmd/bench/torchref_test.go holds its logits to Go's).
"""

import argparse
import json
import math
import os
import sys
import time

CONFIGS = {
    "sort": dict(d_model=64, heads=4, d_ff=256, vocab=17, layers=2, qkv_bias=False, tied=False, context=0),
    "gpt2": dict(d_model=768, heads=12, d_ff=3072, vocab=50257, layers=12, qkv_bias=True, tied=True, context=1024),
    "llama": dict(family="llama", d_model=768, heads=12, kv_heads=12, d_ff=2048, vocab=32000, layers=12, tied=True, context=1024, eps=1e-05, rope_base=10000),
}


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", choices=sorted(CONFIGS), default="sort")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--prompt", type=int, default=8)
    p.add_argument("--length", type=int, default=64, help="positions at the end: prompt plus generated")
    p.add_argument("--maps", type=int, default=0, help="time a forward over this many tokens that keeps every attention map instead")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args(argv)
    if min(a.batch, a.prompt, a.reps, a.threads) < 1 or a.length <= a.prompt or a.maps < 0:
        p.error("--batch, --prompt, --reps and --threads must be >= 1, --length > --prompt and --maps >= 0")
    context = CONFIGS[a.config]["context"]
    if context and max(a.length, a.maps) > context:
        p.error("--length and --maps must be at most %s's %d positions" % (a.config, context))
    return a


def set_threads(threads):
    """Thread counts and OpenBLAS's kernel set are read when the libraries
    load, so this runs before torch is imported."""
    os.environ["OMP_NUM_THREADS"] = str(threads)
    for var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(threads)
    if os.environ.get("OPENBLAS_CORETYPE"):
        return
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((l.split(":", 1)[1].split() for l in f if l.startswith("flags")), [])
    except OSError:
        return
    if "avx512f" in flags:
        os.environ["OPENBLAS_CORETYPE"] = "SkylakeX"
    elif "avx2" in flags:
        os.environ["OPENBLAS_CORETYPE"] = "Haswell"


if __name__ == "__main__":
    args = parse_args(sys.argv[1:])
    set_threads(args.threads)

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:
    print("torch_decode.py: cannot import torch (%s); apt-get install python3-torch libopenblas0-pthread" % e, file=sys.stderr)
    sys.exit(2)


def gpt2_random_weights(cfg, context, gen):
    """GPT-2's parameters for cfg with a position table of context rows."""
    D, FF, V = cfg["d_model"], cfg["d_ff"], cfg["vocab"]
    w = lambda *s: 0.02 * torch.randn(*s, generator=gen)
    ln = lambda: (torch.ones(D), torch.zeros(D))
    blocks = [{"ln_1": ln(), "attn.c_attn": (w(D, 3 * D), torch.zeros(3 * D) if cfg["qkv_bias"] else None),
               "attn.c_proj": (w(D, D), torch.zeros(D)), "ln_2": ln(),
               "mlp.c_fc": (w(D, FF), torch.zeros(FF)), "mlp.c_proj": (w(FF, D), torch.zeros(D))}
              for _ in range(cfg["layers"])]
    m = {"wte": w(V, D), "wpe": w(context, D), "h": blocks, "ln_f": ln()}
    m["lm_head"] = m["wte"] if cfg["tied"] else w(V, D)
    return m


def gpt2_from_attnscope(t, cfg):
    """The weights of an attnscope checkpoint's tensors (by name): its
    Linear weights, (out, in), become GPT-2's Conv1D weights, (in, out)."""
    conv = lambda name: (t[name + ".weight"].t().contiguous(), t.get(name + ".bias"))
    ln = lambda name: (t[name + ".weight"], t[name + ".bias"])
    blocks = [{"ln_1": ln("blocks.%d.ln1" % i), "attn.c_attn": conv("blocks.%d.attn.qkv" % i),
               "attn.c_proj": conv("blocks.%d.attn.out" % i), "ln_2": ln("blocks.%d.ln2" % i),
               "mlp.c_fc": conv("blocks.%d.mlp.fc" % i), "mlp.c_proj": conv("blocks.%d.mlp.proj" % i)}
              for i in range(cfg["layers"])]
    m = {"wte": t["tok_emb.weight"], "wpe": t["pos_emb.weight"], "h": blocks, "ln_f": ln("ln_f")}
    m["lm_head"] = m["wte"] if cfg["tied"] else t["lm_head.weight"]
    return m


def conv1d(x, wb):
    """GPT-2's Conv1D: x (N, in) @ W (in, out) + b."""
    w, b = wb
    return torch.addmm(b, x, w) if b is not None else x @ w                    # (N, out)


def layer_norm(x, wb):
    return F.layer_norm(x, x.shape[-1:], wb[0], wb[1], 1e-5)


def mlp(x, blk):
    return conv1d(F.gelu(conv1d(layer_norm(x, blk["ln_2"]), blk["mlp.c_fc"]), approximate="tanh"), blk["mlp.c_proj"])


def new_caches(cfg, batch, length):
    """Each layer's key and value cache, (B, G, length, d) each, G the
    key and value heads (the heads but with grouped-query attention)."""
    G, d = cfg.get("kv_heads", cfg["heads"]), cfg["d_model"] // cfg["heads"]
    return [(torch.zeros(batch, G, length, d), torch.zeros(batch, G, length, d)) for _ in range(cfg["layers"])]


def gpt2_decode_step(m, cfg, caches, tokens, t):
    """Position t of every row: tokens (B) to the next token's logits
    (B, V), each layer's new key and value written into slot t."""
    B, D, H = tokens.shape[0], cfg["d_model"], cfg["heads"]
    d = D // H
    x = m["wte"][tokens] + m["wpe"][t]                                         # (B, D)
    for blk, (kc, vc) in zip(m["h"], caches):
        q, k, v = conv1d(layer_norm(x, blk["ln_1"]), blk["attn.c_attn"]).view(B, 3, H, d).unbind(1)  # each (B, H, d)
        kc[:, :, t] = k
        vc[:, :, t] = v
        s = (q.unsqueeze(2) @ kc[:, :, :t + 1].transpose(-2, -1)) / math.sqrt(d)  # (B, H, 1, t+1)
        y = (torch.softmax(s, dim=-1) @ vc[:, :, :t + 1]).reshape(B, D)       # (B, D)
        x = x + conv1d(y, blk["attn.c_proj"])
        x = x + mlp(x, blk)                                                    # (B, D)
    return F.linear(layer_norm(x, m["ln_f"]), m["lm_head"])                    # (B, V)


def llama_random_weights(cfg, context, gen):
    """Llama's parameters for cfg (Linear weights (out, in), no biases) and
    its rotary tables for context positions."""
    D, FF, V, G = cfg["d_model"], cfg["d_ff"], cfg["vocab"], cfg["kv_heads"]
    kv = G * D // cfg["heads"]
    w = lambda *s: 0.02 * torch.randn(*s, generator=gen)
    blocks = [{"input_layernorm": torch.ones(D), "q_proj": w(D, D), "k_proj": w(kv, D), "v_proj": w(kv, D),
               "o_proj": w(D, D), "post_attention_layernorm": torch.ones(D),
               "gate_proj": w(FF, D), "up_proj": w(FF, D), "down_proj": w(D, FF)}
              for _ in range(cfg["layers"])]
    m = {"embed_tokens": w(V, D), "layers": blocks, "norm": torch.ones(D)}
    m["lm_head"] = m["embed_tokens"] if cfg["tied"] else w(V, D)
    return with_rotary(m, cfg, context)


def llama_from_attnscope(t, cfg):
    """The weights of an attnscope checkpoint's tensors (by name): the
    fused qkv rows [q | k | v] become q_proj, k_proj and v_proj."""
    D = cfg["d_model"]
    kv = cfg["kv_heads"] * D // cfg["heads"]
    blocks = []
    for i in range(cfg["layers"]):
        b = lambda name: t["blocks.%d.%s.weight" % (i, name)]
        q, k, v = b("attn.qkv").split([D, kv, kv])
        blocks.append({"input_layernorm": b("ln1"), "q_proj": q, "k_proj": k, "v_proj": v, "o_proj": b("attn.out"),
                       "post_attention_layernorm": b("ln2"), "gate_proj": b("mlp.gate"), "up_proj": b("mlp.up"),
                       "down_proj": b("mlp.down")})
    m = {"embed_tokens": t["tok_emb.weight"], "layers": blocks, "norm": t["ln_f.weight"]}
    m["lm_head"] = m["embed_tokens"] if cfg["tied"] else t["lm_head.weight"]
    return with_rotary(m, cfg, cfg["context"])


def with_rotary(m, cfg, context):
    """m with the rotary tables cos and sin (context, d): position t's
    angles t * base^(-2i/d), each twice (channels i and i + d/2)."""
    d = cfg["d_model"] // cfg["heads"]
    inv_freq = 1.0 / (cfg["rope_base"] ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    angles = torch.outer(torch.arange(context, dtype=torch.float64), inv_freq)  # (context, d/2)
    angles = torch.cat([angles, angles], dim=-1)                               # (context, d)
    m["cos"], m["sin"] = angles.cos().float(), angles.sin().float()
    return m


def rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rotate(x, cos, sin):
    """Rotary positions, rotate-half: x * cos + [-x2 | x1] * sin."""
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat([-x2, x1], dim=-1) * sin


def swiglu(x, blk, eps):
    n = rms_norm(x, blk["post_attention_layernorm"], eps)
    return F.linear(F.silu(F.linear(n, blk["gate_proj"])) * F.linear(n, blk["up_proj"]), blk["down_proj"])


def llama_decode_step(m, cfg, caches, tokens, t):
    """Position t of every row: tokens (B) to the next token's logits
    (B, V), each layer's new key (turned) and value written into slot t.
    The g = H/G query heads of a group attend to its key and value head
    together, (B, G, g, d) against (B, G, t+1, d)."""
    B, D, H, G, eps = tokens.shape[0], cfg["d_model"], cfg["heads"], cfg["kv_heads"], cfg["eps"]
    d = D // H
    cos, sin = m["cos"][t], m["sin"][t]                                        # (d) each
    x = m["embed_tokens"][tokens]                                              # (B, D)
    for blk, (kc, vc) in zip(m["layers"], caches):
        n = rms_norm(x, blk["input_layernorm"], eps)
        q = rotate(F.linear(n, blk["q_proj"]).view(B, G, H // G, d), cos, sin)  # (B, G, g, d)
        kc[:, :, t] = rotate(F.linear(n, blk["k_proj"]).view(B, G, d), cos, sin)
        vc[:, :, t] = F.linear(n, blk["v_proj"]).view(B, G, d)
        s = (q @ kc[:, :, :t + 1].transpose(-2, -1)) / math.sqrt(d)           # (B, G, g, t+1)
        y = (torch.softmax(s, dim=-1) @ vc[:, :, :t + 1]).reshape(B, D)       # (B, D)
        x = x + F.linear(y, blk["o_proj"])
        x = x + swiglu(x, blk, eps)                                            # (B, D)
    return F.linear(rms_norm(x, m["norm"], eps), m["lm_head"])                 # (B, V)


def llama_forward(m, cfg, tokens):
    """A forward over tokens (B, T): the logits (B, T, V) and every
    layer's attention weights (B, H, T, T)."""
    B, T = tokens.shape
    D, H, G, eps = cfg["d_model"], cfg["heads"], cfg["kv_heads"], cfg["eps"]
    d = D // H
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    cos, sin = m["cos"][:T], m["sin"][:T]                                      # (T, d) each
    x = m["embed_tokens"][tokens].view(B * T, D)                               # (B*T, D)
    maps = []
    for blk in m["layers"]:
        n = rms_norm(x, blk["input_layernorm"], eps)
        q = rotate(F.linear(n, blk["q_proj"]).view(B, T, H, d).transpose(1, 2), cos, sin)  # (B, H, T, d)
        k = rotate(F.linear(n, blk["k_proj"]).view(B, T, G, d).transpose(1, 2), cos, sin)  # (B, G, T, d)
        v = F.linear(n, blk["v_proj"]).view(B, T, G, d).transpose(1, 2)                   # (B, G, T, d)
        k, v = k.repeat_interleave(H // G, dim=1), v.repeat_interleave(H // G, dim=1)     # (B, H, T, d)
        s = (q @ k.transpose(-2, -1)) / math.sqrt(d)                          # (B, H, T, T)
        s = torch.where(causal, s, torch.finfo(s.dtype).min)
        a = torch.softmax(s, dim=-1)                                          # (B, H, T, T)
        maps.append(a)
        y = (a @ v).transpose(1, 2).reshape(B * T, D)                         # (B*T, D)
        x = x + F.linear(y, blk["o_proj"])
        x = x + swiglu(x, blk, eps)                                           # (B*T, D)
    logits = F.linear(rms_norm(x, m["norm"], eps), m["lm_head"])              # (B*T, V)
    return logits.view(B, T, -1), maps


def decode(m, cfg, prompts, length):
    """Greedy decoding with a KV cache; returns the tokens (B, length)."""
    B, P = prompts.shape
    caches = new_caches(cfg, B, length)
    out = torch.zeros(B, length, dtype=torch.long)
    out[:, :P] = prompts
    for t in range(length - 1):
        logits = decode_step(m, cfg, caches, out[:, t], t)
        if t + 1 >= P:
            out[:, t + 1] = logits.argmax(-1)
    return out


def gpt2_forward(m, cfg, tokens):
    """A forward over tokens (B, T): the logits (B, T, V) and every
    layer's attention weights (B, H, T, T)."""
    B, T = tokens.shape
    D, H = cfg["d_model"], cfg["heads"]
    d = D // H
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    x = (m["wte"][tokens] + m["wpe"][:T]).view(B * T, D)                      # (B*T, D)
    maps = []
    for blk in m["h"]:
        qkv = conv1d(layer_norm(x, blk["ln_1"]), blk["attn.c_attn"])          # (B*T, 3D)
        q, k, v = qkv.view(B, T, 3, H, d).permute(2, 0, 3, 1, 4)              # each (B, H, T, d)
        s = (q @ k.transpose(-2, -1)) / math.sqrt(d)                          # (B, H, T, T)
        s = torch.where(causal, s, torch.finfo(s.dtype).min)
        a = torch.softmax(s, dim=-1)                                          # (B, H, T, T)
        maps.append(a)
        y = (a @ v).transpose(1, 2).reshape(B * T, D)                         # (B*T, D)
        x = x + conv1d(y, blk["attn.c_proj"])
        x = x + mlp(x, blk)                                                   # (B*T, D)
    logits = F.linear(layer_norm(x, m["ln_f"]), m["lm_head"])                 # (B*T, V)
    return logits.view(B, T, -1), maps


FAMILIES = {
    "gpt2": dict(random_weights=gpt2_random_weights, from_attnscope=gpt2_from_attnscope,
                 decode_step=gpt2_decode_step, forward=gpt2_forward),
    "llama": dict(random_weights=llama_random_weights, from_attnscope=llama_from_attnscope,
                  decode_step=llama_decode_step, forward=llama_forward),
}


def family(cfg, name):
    """The function called name of cfg's family (GPT-2's unless it says)."""
    return FAMILIES[cfg.get("family", "gpt2")][name]


def random_weights(cfg, context, gen):
    return family(cfg, "random_weights")(cfg, context, gen)


def from_attnscope(t, cfg):
    return family(cfg, "from_attnscope")(t, cfg)


def decode_step(m, cfg, caches, tokens, t):
    return family(cfg, "decode_step")(m, cfg, caches, tokens, t)


def forward(m, cfg, tokens):
    return family(cfg, "forward")(m, cfg, tokens)


def timed(reps, run):
    """Seconds of each of reps runs, after an untimed one."""
    run()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return times


def main():
    torch.set_num_threads(args.threads)
    cfg = CONFIGS[args.config]
    gen = torch.Generator().manual_seed(args.seed)
    m = random_weights(cfg, cfg["context"] or args.length, gen)
    report = {"impl": "pytorch", "config": args.config, "threads": args.threads, "torch": torch.__version__}
    with torch.inference_mode():
        if args.maps:
            tokens = torch.randint(0, cfg["vocab"], (1, args.maps), generator=gen)
            times = timed(args.reps, lambda: forward(m, cfg, tokens))
            report.update(tokens=args.maps, forwards_per_s_all=[round(1 / s, 3) for s in times])
        else:
            prompts = torch.randint(0, cfg["vocab"], (args.batch, args.prompt), generator=gen)
            times = timed(args.reps, lambda: decode(m, cfg, prompts, args.length))
            report.update(batch=args.batch, prompt=args.prompt, length=args.length,
                          tokens_per_s_all=[round(args.batch * (args.length - args.prompt) / s, 1) for s in times],
                          steps_per_s_all=[round((args.length - 1) / s, 2) for s in times])
    print(json.dumps(report))


if __name__ == "__main__":
    main()
