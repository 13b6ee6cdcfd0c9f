#!/usr/bin/python3
"""PyTorch side of the attnscope side-by-side training benchmark.

    /usr/bin/python3 cmd/bench/torch_ref.py --config S --threads 1
    /usr/bin/python3 cmd/bench/torch_ref.py --config M --threads 2 --steps 10 --reps 5
    /usr/bin/python3 cmd/bench/torch_ref.py --config S --checkpoint run/ckpt.safetensors

Model (the same as the Go benchmark): token + position embedding, blocks
(fused QKV without bias, output projection with bias, causal softmax, scores /
sqrt(d_head)), LM head without bias. S and M have one attention-only block
x = x + attn(x); sort and L4 have full pre-LN blocks
x = x + attn(ln1(x)); x = x + mlp(ln2(x)) with mlp = proj(gelu_tanh(fc(x)))
(both with bias) and a final LayerNorm (eps 1e-5) before the LM head.
L4-llama is L4 with the Llama-style block of docs/model.md: RMSNorm (eps
1e-5) for every norm, no biases, rotary positions (no position embedding),
2 kv heads (grouped-query), mlp = down(silu(gate(x)) * up(x)) of width 352
(2/3 of 4D rounded up to 32) and the LM head tied to the token embedding.
loss = mean cross-entropy over all B*T positions; Adam (lr 3e-3, betas
0.9/0.999, eps 1e-8, no weight decay); float32. Parameter names follow
the README's "Checkpoint format", so --checkpoint loads one of our safetensors files.

Unless OPENBLAS_CORETYPE is set, it is chosen from the CPU flags (SkylakeX with
AVX-512, else Haswell with AVX2): OpenBLAS 0.3.21's own detection picks slow
kernels on this VM. The JSON reports the kernel set in "openblas_core".

Batches are random and generated before timing. W warmup steps, then R
repetitions of K timed steps. Prints ONE JSON line on stdout; warnings go to
stderr. Exit status 2 on a missing prerequisite or a bad checkpoint.
"""

import argparse
import ctypes
import json
import os
import re
import struct
import sys
import time

CONFIGS = {
    # name: batch, seq_len, d_model, heads, vocab, layers, d_ff (0: attention-only blocks),
    # and for the Llama-style block its name and kv heads
    "S": dict(batch=32, seq_len=12, d_model=32, heads=4, vocab=64, layers=1, d_ff=0),
    "M": dict(batch=64, seq_len=64, d_model=128, heads=8, vocab=64, layers=1, d_ff=0),
    "sort": dict(batch=32, seq_len=16, d_model=64, heads=4, vocab=17, layers=2, d_ff=256),
    "L4": dict(batch=16, seq_len=64, d_model=128, heads=8, vocab=64, layers=4, d_ff=512),
    "L4-llama": dict(batch=16, seq_len=64, d_model=128, heads=8, vocab=64, layers=4, d_ff=352, block="llama", kv_heads=2),
    # GPT-2 small's and medium's shapes (tied LM head) at configs/finetune.yaml's
    # batch, fine-tuned as nanoGPT's train.py does (NANOGPT).
    "gpt2": dict(batch=4, seq_len=64, d_model=768, heads=12, vocab=50257, layers=12, d_ff=3072, tie=True),
    "gpt2-medium": dict(batch=4, seq_len=64, d_model=1024, heads=16, vocab=50257, layers=24, d_ff=4096, tie=True),
}
DEFAULT_STEPS = {"S": 200, "M": 10, "sort": 50, "L4": 5, "L4-llama": 5, "gpt2": 3, "gpt2-medium": 2}
# The configs trained as nanoGPT's train.py fine-tunes (float32, no compile):
# AdamW with weight decay 0.1 at a fine-tuning learning rate. The others take
# Adam at 3e-3 without decay, as the Go side's toy runs.
NANOGPT = {"gpt2", "gpt2-medium"}


def die(msg):
    print("torch_ref.py: " + msg, file=sys.stderr)
    sys.exit(2)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", choices=sorted(CONFIGS), required=True)
    p.add_argument("--threads", type=int, default=1, help="torch intra-op (OpenMP) threads")
    p.add_argument("--blas-threads", type=int, default=0, help="OpenBLAS/MKL threads (default: --threads)")
    p.add_argument("--steps", type=int, default=0, help="timed steps per repetition (default %s)"
                   % ", ".join("%s %d" % kv for kv in DEFAULT_STEPS.items()))
    p.add_argument("--warmup", type=int, default=0, help="untimed steps first (default: --steps)")
    p.add_argument("--reps", type=int, default=5, help="timed repetitions")
    p.add_argument("--seed", type=int, default=1, help="seed of the weights and batches")
    p.add_argument("--checkpoint", help="start from this attnscope safetensors file")
    a = p.parse_args(argv)
    if a.threads < 1 or a.reps < 1 or a.steps < 0 or a.warmup < 0 or a.blas_threads < 0:
        p.error("--threads and --reps must be >= 1, --steps, --warmup and --blas-threads >= 0")
    a.blas_threads = a.blas_threads or a.threads
    a.steps = a.steps or DEFAULT_STEPS[a.config]
    a.warmup = a.warmup or a.steps
    return a


args = parse_args(sys.argv[1:])
# Thread counts are read when the libraries load, so set them before importing torch.
def pick_coretype():
    """OpenBLAS 0.3.21 (Debian) detects this VM's CPU as "Cooperlake" and then
    runs slow generic kernels (M trains ~2x slower); naming the kernel set from
    the CPU flags restores the fast ones. An OPENBLAS_CORETYPE already in the
    environment wins."""
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


pick_coretype()
os.environ["OMP_NUM_THREADS"] = str(args.threads)
for var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = str(args.blas_threads)

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:
    die("cannot import torch (%s) with %s.\n"
        "  Run it with /usr/bin/python3 (Debian's torch), after:\n"
        "  apt-get install python3-torch libopenblas0-pthread" % (e, sys.executable))


def blas_info():
    """What BLAS torch really calls. Debian's torch reports BLAS_INFO=generic
    in torch.__config__.show() and gets OpenBLAS (or the slow reference BLAS)
    through the libblas.so.3 alternative, so also look at what is loaded."""
    shown = torch.__config__.show()
    found = re.search(r"BLAS_INFO=([^,\s]+)", shown)
    info = found.group(1) if found else "unknown"
    a = torch.ones(64, 64)
    (a @ a).sum().item()  # make sure the BLAS is loaded
    libs = set()
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1] if len(line.split()) >= 6 else ""
                base = os.path.basename(path).lower()
                if "blas" in base or "mkl" in base:
                    libs.add(os.path.realpath(path))
    except OSError:
        pass
    core = None
    for lib in libs:
        if "openblas" in os.path.basename(lib).lower():
            try:
                so = ctypes.CDLL(lib)
                so.openblas_get_corename.restype = ctypes.c_char_p
                core = so.openblas_get_corename().decode()
            except (OSError, AttributeError):
                pass
    fast = "mkl" in info.lower() or "openblas" in info.lower() or any(
        "openblas" in l.lower() or "mkl" in l.lower() for l in libs)
    return info, sorted(libs), fast, core


class Attention(nn.Module):
    def __init__(self, d_model, heads, seq_len):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.out = nn.Linear(d_model, d_model, bias=True)
        self.register_buffer("causal", torch.ones(seq_len, seq_len, dtype=torch.bool).tril(), persistent=False)

    def forward(self, x):
        B, T, D = x.shape
        H = self.heads
        d = D // H
        q, k, v = self.qkv(x).view(B, T, 3, H, d).permute(2, 0, 3, 1, 4)  # each (B, H, T, d)
        s = (q @ k.transpose(-2, -1)) * (d ** -0.5)                         # (B, H, T, T)
        s = s.masked_fill(~self.causal[:T, :T], float("-inf"))
        a = torch.softmax(s, dim=-1)                                        # (B, H, T, T)
        y = (a @ v).transpose(1, 2).reshape(B, T, D)                        # (B, T, D)
        return self.out(y)                                                  # (B, T, D)


class MLP(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.fc = nn.Linear(d_model, d_ff)
        self.proj = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.proj(F.gelu(self.fc(x), approximate="tanh"))  # (B, T, D)


class Block(nn.Module):
    """Attention-only (d_ff 0): x + attn(x). Otherwise pre-LN with an MLP."""

    def __init__(self, d_model, heads, seq_len, d_ff):
        super().__init__()
        self.full = d_ff > 0
        if self.full:
            self.ln1 = nn.LayerNorm(d_model)
        self.attn = Attention(d_model, heads, seq_len)
        if self.full:
            self.ln2 = nn.LayerNorm(d_model)
            self.mlp = MLP(d_model, d_ff)

    def forward(self, x):
        if not self.full:
            return x + self.attn(x)
        x = x + self.attn(self.ln1(x))    # (B, T, D)
        return x + self.mlp(self.ln2(x))  # (B, T, D)


class RMSNorm(nn.Module):
    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class LlamaAttention(nn.Module):
    """Grouped-query attention with rotary positions (rotate-half), no biases."""

    def __init__(self, d_model, heads, kv_heads, seq_len, base=10000.0):
        super().__init__()
        self.heads, self.kv_heads = heads, kv_heads
        d = d_model // heads
        self.qkv = nn.Linear(d_model, d_model + 2 * kv_heads * d, bias=False)
        self.out = nn.Linear(d_model, d_model, bias=False)
        inv_freq = 1.0 / base ** (torch.arange(0, d, 2, dtype=torch.float32) / d)
        angles = torch.outer(torch.arange(seq_len, dtype=torch.float32), inv_freq)  # (T, d/2)
        emb = torch.cat((angles, angles), dim=-1)                                    # (T, d)
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)
        self.register_buffer("causal", torch.ones(seq_len, seq_len, dtype=torch.bool).tril(), persistent=False)

    def rotate(self, x):
        T = x.shape[-2]
        x1, x2 = x.chunk(2, dim=-1)
        return x * self.cos[:T] + torch.cat((-x2, x1), dim=-1) * self.sin[:T]

    def forward(self, x):
        B, T, D = x.shape
        H, G = self.heads, self.kv_heads
        d = D // H
        q, k, v = self.qkv(x).split([D, G * d, G * d], dim=-1)
        q = self.rotate(q.view(B, T, H, d).transpose(1, 2))                 # (B, H, T, d)
        k = self.rotate(k.view(B, T, G, d).transpose(1, 2))                 # (B, G, T, d)
        v = v.view(B, T, G, d).transpose(1, 2)                              # (B, G, T, d)
        k = k.repeat_interleave(H // G, dim=1)                              # (B, H, T, d)
        v = v.repeat_interleave(H // G, dim=1)
        s = (q @ k.transpose(-2, -1)) * (d ** -0.5)                         # (B, H, T, T)
        s = s.masked_fill(~self.causal[:T, :T], float("-inf"))
        a = torch.softmax(s, dim=-1)
        y = (a @ v).transpose(1, 2).reshape(B, T, D)                        # (B, T, D)
        return self.out(y)


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.gate = nn.Linear(d_model, d_ff, bias=False)
        self.up = nn.Linear(d_model, d_ff, bias=False)
        self.down = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))  # (B, T, D)


class LlamaBlock(nn.Module):
    def __init__(self, d_model, heads, kv_heads, seq_len, d_ff):
        super().__init__()
        self.ln1 = RMSNorm(d_model)
        self.attn = LlamaAttention(d_model, heads, kv_heads, seq_len)
        self.ln2 = RMSNorm(d_model)
        self.mlp = SwiGLU(d_model, d_ff)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class AttnLM(nn.Module):
    def __init__(self, batch, seq_len, d_model, heads, vocab, layers, d_ff, block="gpt2", kv_heads=0, tie=False):
        super().__init__()
        self.llama = block == "llama"
        self.tok_emb = nn.Embedding(vocab, d_model)
        if self.llama:
            self.blocks = nn.ModuleList([LlamaBlock(d_model, heads, kv_heads, seq_len, d_ff) for _ in range(layers)])
            self.ln_f = RMSNorm(d_model)
            return
        self.pos_emb = nn.Embedding(seq_len, d_model)
        self.blocks = nn.ModuleList([Block(d_model, heads, seq_len, d_ff) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d_model) if d_ff > 0 else None
        self.lm_head = nn.Linear(d_model, vocab, bias=False)
        if tie:
            self.lm_head.weight = self.tok_emb.weight  # one (V, D) tensor, as nanoGPT's GPT
        self.register_buffer("pos", torch.arange(seq_len), persistent=False)

    def forward(self, tokens):
        B, T = tokens.shape
        x = self.tok_emb(tokens)                                       # (B, T, D)
        if not self.llama:
            x = x + self.pos_emb(self.pos[:T])[None]
        for block in self.blocks:
            x = block(x)
        if self.ln_f is not None:
            x = self.ln_f(x)                                           # (B, T, D)
        if self.llama:
            return x @ self.tok_emb.weight.t()                         # (B, T, V): the tied head
        return self.lm_head(x)                                         # (B, T, V)


def init_like_model_new(model, gen):
    """model.New's init kinds: weights N(0, 0.02^2), biases zero, LayerNorm
    weights one."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias"):
                p.zero_()
            elif ".ln" in "." + name:
                p.fill_(1.0)
            else:
                p.copy_(0.02 * torch.randn(p.shape, generator=gen))


def read_safetensors(path):
    """A minimal strict safetensors reader: {name: tensor}, metadata."""
    dtypes = {"F32": (torch.float32, 4), "F64": (torch.float64, 8)}
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        die("checkpoint %s: %s" % (path, e))
    if len(raw) < 8:
        die("checkpoint %s: %d bytes, too short for a safetensors header" % (path, len(raw)))
    (n,) = struct.unpack("<Q", raw[:8])
    if 8 + n > len(raw):
        die("checkpoint %s: header length %d exceeds the file (%d bytes)" % (path, n, len(raw)))
    try:
        header = json.loads(raw[8:8 + n].decode("utf-8"))
    except ValueError as e:
        die("checkpoint %s: header is not JSON: %s" % (path, e))
    meta = header.pop("__metadata__", {}) or {}
    data = raw[8 + n:]
    tensors = {}
    for name, h in header.items():
        if h.get("dtype") not in dtypes:
            die("checkpoint %s: tensor %s has dtype %r, want F32 or F64" % (path, name, h.get("dtype")))
        dt, size = dtypes[h["dtype"]]
        begin, end = h["data_offsets"]
        count = 1
        for s in h["shape"]:
            count *= s
        if not (0 <= begin <= end <= len(data)) or end - begin != count * size:
            die("checkpoint %s: tensor %s: offsets %s do not fit shape %s" % (path, name, h["data_offsets"], h["shape"]))
        t = torch.frombuffer(bytearray(data[begin:end]), dtype=dt) if count else torch.empty(0, dtype=dt)
        tensors[name] = t.reshape(h["shape"]).to(torch.float32)
    return tensors, meta


def load_checkpoint(model, path, cfg):
    tensors, meta = read_safetensors(path)
    want = {n: tuple(p.shape) for n, p in model.state_dict().items()}
    got = {n: tuple(t.shape) for n, t in tensors.items()}
    if want != got:
        die("checkpoint %s does not hold config %s's model:\n  file:  %s\n  bench: %s"
            % (path, args.config, sorted(got.items()), sorted(want.items())))
    model.load_state_dict(tensors, strict=True)
    return meta


def checkpoint_step(meta):
    """safetensors metadata values are strings; report the step as a number."""
    step = (meta or {}).get("step")
    try:
        return int(step)
    except (TypeError, ValueError):
        return step


def main():
    cfg = CONFIGS[args.config]
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    info, libs, fast, core = blas_info()
    if not fast:
        print("\n" + "!" * 78 + "\n"
              "torch_ref.py: WARNING: no OpenBLAS or MKL behind torch (BLAS_INFO=%s, loaded: %s).\n"
              "It falls back to the reference BLAS, ~6x slower: THE COMPARISON IS INVALID.\n"
              "Fix: apt-get install libopenblas0-pthread\n" % (info, libs or "none")
              + "!" * 78 + "\n", file=sys.stderr)
    if args.threads > (os.cpu_count() or 1):
        print("torch_ref.py: warning: %d threads on %d CPUs" % (args.threads, os.cpu_count()), file=sys.stderr)

    gen = torch.Generator().manual_seed(args.seed)
    model = AttnLM(**cfg)
    init_like_model_new(model, gen)
    meta = load_checkpoint(model, args.checkpoint, cfg) if args.checkpoint else None
    if args.config in NANOGPT:
        opt = torch.optim.AdamW(model.parameters(), lr=3e-5, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=3e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)

    B, T, V = cfg["batch"], cfg["seq_len"], cfg["vocab"]
    total = args.warmup + args.reps * args.steps
    tokens = torch.randint(0, V, (total, B, T), generator=gen)
    targets = torch.randint(0, V, (total, B * T), generator=gen)

    def step(i):
        opt.zero_grad(set_to_none=True)
        logits = model(tokens[i])                                # (B, T, V)
        loss = F.cross_entropy(logits.reshape(B * T, V), targets[i])
        loss.backward()
        opt.step()
        return loss

    for i in range(args.warmup):
        step(i)
    rates = []
    i = args.warmup
    load = os.getloadavg()[0]
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for _ in range(args.reps):
        start = time.perf_counter()
        for _ in range(args.steps):
            loss = step(i)
            i += 1
        rates.append(args.steps / (time.perf_counter() - start))
    # Below ~threads, this process did not get the CPUs it asked for: another
    # load shared the machine and the figures are not a clean measurement.
    cpu_per_wall = (time.process_time() - cpu0) / (time.perf_counter() - wall0)
    loss = loss.item()

    ordered = sorted(rates)
    mid = len(ordered) // 2
    median = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    print(json.dumps({
        "impl": "pytorch",
        "config": args.config,
        "threads": args.threads,
        "blas_threads": args.blas_threads,
        "batch": B, "seq_len": T, "d_model": cfg["d_model"], "heads": cfg["heads"], "vocab": V,
        "layers": cfg["layers"], "d_ff": cfg["d_ff"], "block": cfg.get("block", "gpt2"),
        "dtype": "float32",
        "steps": args.steps, "warmup": args.warmup, "reps": args.reps,
        "steps_per_s_median": round(median, 3),
        "steps_per_s_all": [round(r, 3) for r in rates],
        # The fastest repetition: the least disturbed one on a shared machine.
        "steps_per_s_best": round(ordered[-1], 3),
        "final_loss": round(loss, 6),
        "cpu_per_wall": round(cpu_per_wall, 3),
        "loadavg_1m_before": round(load, 2),
        "checkpoint": args.checkpoint,
        "checkpoint_step": checkpoint_step(meta),
        "torch": torch.__version__,
        "blas": info,
        "blas_libs": libs,
        "blas_ok": fast,
        "openblas_core": core,
    }, sort_keys=False))


if __name__ == "__main__":
    main()
