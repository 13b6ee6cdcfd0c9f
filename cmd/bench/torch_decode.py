#!/usr/bin/python3
"""PyTorch side of attnscope's decoding benchmark (bench -decode).

    /usr/bin/python3 cmd/bench/torch_decode.py --batch 32 --prompt 8 --length 256

The model is the sort configuration of torch_ref.py (two pre-LN blocks, D 64,
4 heads, d_ff 256, V 17) with a learned position table of --length rows, in
float32 with random weights. Decoding is greedy and written as attnscope's
model.Decoder: every row advances one position per step, the prompt is fed one
token at a time, and each layer keeps preallocated key and value caches
(B, H, length, d) into which each step writes its new key and value before
attending to the slots so far. Prints ONE JSON line: generated tokens per
second (batch x (length - prompt) over the whole run) for each repetition.
"""

import argparse
import json
import os
import sys
import time


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--prompt", type=int, default=8)
    p.add_argument("--length", type=int, default=64, help="positions at the end: prompt plus generated")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args(argv)
    if min(a.batch, a.prompt, a.reps, a.threads) < 1 or a.length <= a.prompt:
        p.error("--batch, --prompt, --reps and --threads must be >= 1 and --length > --prompt")
    return a


args = parse_args(sys.argv[1:])
os.environ["OMP_NUM_THREADS"] = str(args.threads)
for var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = str(args.threads)
if not os.environ.get("OPENBLAS_CORETYPE"):
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((l.split(":", 1)[1].split() for l in f if l.startswith("flags")), [])
        if "avx512f" in flags:
            os.environ["OPENBLAS_CORETYPE"] = "SkylakeX"
        elif "avx2" in flags:
            os.environ["OPENBLAS_CORETYPE"] = "Haswell"
    except OSError:
        pass

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:
    print("torch_decode.py: cannot import torch (%s); apt-get install python3-torch libopenblas0-pthread" % e, file=sys.stderr)
    sys.exit(2)

D, H, FF, V, L = 64, 4, 256, 17, 2


def weights(gen, length):
    w = lambda *s: 0.02 * torch.randn(*s, generator=gen)
    layers = [dict(ln1=(torch.ones(D), torch.zeros(D)), qkv=w(3 * D, D), out=(w(D, D), torch.zeros(D)),
                   ln2=(torch.ones(D), torch.zeros(D)), fc=(w(FF, D), torch.zeros(FF)), proj=(w(D, FF), torch.zeros(D)))
              for _ in range(L)]
    return dict(tok=w(V, D), pos=w(length, D), layers=layers, ln_f=(torch.ones(D), torch.zeros(D)), head=w(V, D))


def decode(m, prompts, length):
    """Greedy decoding with a KV cache; returns the tokens (B, length)."""
    B, P = prompts.shape
    d = D // H
    caches = [(torch.zeros(B, H, length, d), torch.zeros(B, H, length, d)) for _ in range(L)]
    out = torch.zeros(B, length, dtype=torch.long)
    out[:, :P] = prompts
    for t in range(length - 1):
        x = m["tok"][out[:, t]] + m["pos"][t]                                  # (B, D)
        for lw, (kc, vc) in zip(m["layers"], caches):
            h = F.layer_norm(x, (D,), *lw["ln1"])
            q, k, v = (h @ lw["qkv"].T).view(B, 3, H, d).unbind(1)              # each (B, H, d)
            kc[:, :, t] = k
            vc[:, :, t] = v
            s = (q.unsqueeze(2) @ kc[:, :, :t + 1].transpose(-2, -1)) * d ** -0.5  # (B, H, 1, t+1)
            y = (torch.softmax(s, dim=-1) @ vc[:, :, :t + 1]).reshape(B, D)     # (B, D)
            x = x + F.linear(y, *lw["out"])
            h = F.layer_norm(x, (D,), *lw["ln2"])
            x = x + F.linear(F.gelu(F.linear(h, *lw["fc"]), approximate="tanh"), *lw["proj"])
        logits = F.layer_norm(x, (D,), *m["ln_f"]) @ m["head"].T                # (B, V)
        if t + 1 >= P:
            out[:, t + 1] = logits.argmax(-1)
    return out


def main():
    torch.set_num_threads(args.threads)
    gen = torch.Generator().manual_seed(args.seed)
    m = weights(gen, args.length)
    prompts = torch.randint(0, V, (args.batch, args.prompt), generator=gen)
    rates = []
    with torch.inference_mode():
        decode(m, prompts, args.length)  # warm-up
        for _ in range(args.reps):
            start = time.perf_counter()
            decode(m, prompts, args.length)
            rates.append(args.batch * (args.length - args.prompt) / (time.perf_counter() - start))
    print(json.dumps({"impl": "pytorch", "batch": args.batch, "prompt": args.prompt, "length": args.length,
                      "threads": args.threads, "tokens_per_s_all": [round(r, 1) for r in rates],
                      "torch": torch.__version__}))


if __name__ == "__main__":
    main()
