#!/usr/bin/python3
"""PyTorch reference fixtures for model/pytorch_test.go.

Regenerate from the repository root with the command below; reruns on one
machine are byte-identical, another BLAS build may change a last digit:

    /usr/bin/python3 model/testdata/pytorch/gen_fixtures.py

Only /usr/bin/python3 has torch here (Debian python3-torch 1.13); the pyenv
python3 on PATH does not.

AttnLM (python/attnscope_torch.py, which users import to load checkpoints in
PyTorch) is written from the formulas of docs/model.md, independently of the Go
code, with the parameter names and nn.Linear (out, in) layouts of
model.Config.ParamSpecs:

    x      = tok_emb[tokens] + pos_emb[0:T]                      (B, T, D)
    block  = attention-only:  x = x + attn(x)
             full (mlp):      x = x + attn(ln1(x)); x = x + mlp(ln2(x))
    attn   : qkv = x W_qkv^T [+ b_qkv], rows [q | k | v], head h at rows
             [h*d, (h+1)*d) of each; s = q k^T * attn_scale (1/sqrt(d)
             unset); attn_softcap c: s = c tanh(s / c); causal mask;
             a = softmax over keys (masked entries exactly 0);
             y = (a v) heads concatenated, then W_out^T [+ b_out]
    mlp    : proj(act(fc(x))), act gelu_tanh, exact gelu or relu(x)^2;
             swiglu: down(silu(gate(x)) * up(x)); geglu: down(gelu_tanh(gate(x))
             * up(x)); biases unless mlp_bias false
    LN     : biased variance, eps norm_eps (1e-5); a bias unless norm_bias false
    RMSNorm: x / sqrt(mean(x^2) + eps) * w
    qk_norm: RMSNorm of each head's q and k over d, before the rotation;
             qk_norm_scope all: of the whole q (H*d) and k (G*d) projections
    placement: pre x + f(ln(x)); sandwich x + ln_post(f(ln(x))); post
             x + ln_post(f(x)); parallel_residual x + (mlp(ln2 x) + attn(ln1 x))
    offset : norm_offset: every RMSNorm scales by (1 + w)
    head_dim: heads d wide apart from D/H: qkv (H*d + 2*G*d, D), out (D, H*d)
    rope   : inverse frequencies as transformers' modeling_rope_utils
             (default, linear, llama3), on the first rotary_dims channels;
             global_layers see every position despite the window, and the
             windowed layers use local_rope_base unscaled when it is set
    tied   : lm_head's weight is tok_emb's (one tensor, both gradients)
    embed_scale e: x = e tok_emb[tokens] (+ positions); tied heads read tok_emb
    logits = lm_head([ln_f](x))                                  (B*T, V)
             final_softcap c: logits = c tanh(logits / c)
    loss   = sum(mask * CE) / sum(mask)

Everything is computed in float64. Weights are drawn from a fixed seed, are not
small (std 0.3-0.45, nonzero biases, LayerNorm weights != 1) so that a wrong
formula shows, and are rounded to 4 decimals so the JSON holds them exactly and
stays small; every output is rounded to 12 significant digits, far below the
tolerances of the Go test.
"""

import json
import math
import os
import sys

# One thread: float64 reductions in a fixed order, so reruns are byte-identical.
os.environ["OMP_NUM_THREADS"] = "1"
os.environ["OPENBLAS_NUM_THREADS"] = "1"

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    sys.exit("gen_fixtures.py: torch is not importable; run it with /usr/bin/python3 "
             "(apt-get install python3-torch libopenblas0-pthread)")

torch.set_num_threads(1)
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))
from attnscope_torch import AttnLM, param_order  # noqa: E402  (the model, written from the formulas)


def init_weights(model, gen):
    """Deterministic, deliberately non-small weights, rounded to 4 decimals."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if ".ln" in name or name.startswith("ln_f") or "_norm." in name:
                base, std = (1.0, 0.3) if name.endswith("weight") else (0.0, 0.2)
            elif name.endswith("bias"):
                base, std = 0.0, 0.2
            elif "emb" in name:
                base, std = 0.0, 0.45
            else:
                base, std = 0.0, 0.3
            v = base + std * torch.randn(p.shape, generator=gen, dtype=torch.float64)
            p.copy_(torch.round(v * 1e4) / 1e4)


def r12(x):
    """Round to 12 significant digits: short JSON, error ~1e-12 relative."""
    return float("%.12g" % x)


def flat(t):
    return [r12(v) for v in t.detach().reshape(-1).tolist()]


def make_case(name, cfg, batch, seq_len, seed):
    gen = torch.Generator().manual_seed(seed)
    model = AttnLM(cfg).double()
    order = param_order(cfg)
    got = [n for n, _ in model.named_parameters()]
    if sorted(got) != sorted(order):
        sys.exit("%s: module parameters %s != ParamSpecs names %s" % (name, got, order))
    init_weights(model, gen)
    params = dict(model.named_parameters())

    V = cfg["vocab"]
    tokens = torch.randint(0, V, (batch, seq_len), generator=gen)
    tokens[0, 1] = tokens[0, 0]  # repeated ids: embedding gradients must accumulate
    tokens[1, 3] = tokens[0, 0]
    targets = torch.randint(0, V, (batch, seq_len), generator=gen)
    mask = torch.ones(batch, seq_len, dtype=torch.float64)
    mask[:, 0] = 0.0  # unscored positions: their CE must not count
    mask[1, seq_len - 2] = 0.0

    logits, attention = model(tokens)
    ce = F.cross_entropy(logits, targets.reshape(-1), reduction="none")
    m = mask.reshape(-1)
    loss = (ce * m).sum() / m.sum()
    loss.backward()

    case = {
        "name": name,
        "config": cfg,
        "batch": batch,
        "seq_len": seq_len,
        "weights": {n: {"shape": list(params[n].shape),
                        "data": params[n].detach().reshape(-1).tolist()} for n in order},
        "tokens": tokens.tolist(),
        "targets": targets.tolist(),
        "loss_mask": mask.tolist(),
        "logits": [flat(row) for row in logits],
        "attention": [[[[flat(qrow) for qrow in head] for head in b] for b in a] for a in attention],
        "loss": r12(loss.item()),
        "grads": {n: flat(params[n].grad) for n in order},
    }
    path = os.path.join(HERE, name + ".json")
    text = json.dumps(case, separators=(",", ":"), sort_keys=False) + "\n"
    with open(path, "w") as f:
        f.write(text)
    print("%s: %d bytes, loss %.12g" % (path, len(text), loss.item()))


def config(**kw):
    cfg = {"vocab": 0, "context": 0, "d_model": 0, "heads": 0, "layers": 0, "mlp": False,
           "d_ff": 0, "qkv_bias": False, "out_bias": False, "lm_head_bias": False, "dropout": 0.0}
    cfg.update(kw)
    return cfg


def main():
    # Positions and shapes (model/rope.go): a medium llama3 band (wavelengths
    # 6.3, 29 and 135 against 64/4 and 64/1), partial rotary, head_dim.
    make_case("rope_llama3_partial_head_dim",
              config(vocab=9, context=8, d_model=12, heads=2, layers=2, mlp=True, d_ff=16, qkv_bias=True,
                     position="rope", rope_base=100.0, head_dim=8, kv_heads=1, rotary_dims=6,
                     rope_scaling="llama3", rope_factor=8.0, rope_low_freq_factor=1.0,
                     rope_high_freq_factor=4.0, rope_original_context=64),
              batch=2, seq_len=7, seed=451)
    make_case("rope_local_global",
              config(vocab=9, context=8, d_model=8, heads=2, layers=3, qkv_bias=True, out_bias=True,
                     position="rope", rope_base=1000.0, rope_scaling="linear", rope_factor=4.0,
                     window=2, global_layers=[1], local_rope_base=10.0),
              batch=2, seq_len=7, seed=452)
    make_case("attn_only", config(vocab=11, context=7, d_model=16, heads=4, layers=1,
                                  qkv_bias=True, out_bias=True, lm_head_bias=True),
              batch=2, seq_len=7, seed=1234)
    # context > seq_len: the graph must use only the first T rows of pos_emb.
    make_case("mlp_2layer", config(vocab=9, context=8, d_model=16, heads=2, layers=2, mlp=True,
                                   d_ff=32, qkv_bias=False, out_bias=True, lm_head_bias=True),
              batch=2, seq_len=6, seed=5678)
    # The attention family: each from the formulas above, independently of Go.
    make_case("rope_gqa", config(vocab=11, context=7, d_model=16, heads=4, layers=2, mlp=True, d_ff=32,
                                 qkv_bias=True, out_bias=True, position="rope", kv_heads=2),
              batch=2, seq_len=7, seed=91)
    make_case("alibi_mqa_window", config(vocab=9, context=7, d_model=16, heads=4, layers=2, qkv_bias=True,
                                         out_bias=True, position="alibi", kv_heads=1, window=3),
              batch=2, seq_len=7, seed=92)
    make_case("sinusoidal", config(vocab=9, context=6, d_model=16, heads=2, layers=1, mlp=True, d_ff=32,
                                   out_bias=True, lm_head_bias=True, position="sinusoidal"),
              batch=2, seq_len=6, seed=93)
    make_case("mla_none", config(vocab=10, context=7, d_model=16, heads=4, layers=2, mlp=True, d_ff=32,
                                 qkv_bias=True, out_bias=True, position="none", kv_latent=6, window=4),
              batch=2, seq_len=7, seed=94)
    # Today's open models' blocks (model/parts.go). Llama/Qwen 3: RMSNorm, SwiGLU,
    # rope, grouped-query heads, QK-norm, tied embeddings, no biases anywhere.
    make_case("llama_style", config(vocab=11, context=7, d_model=16, heads=4, layers=2, mlp=True, d_ff=24,
                                    position="rope", kv_heads=2, norm="rmsnorm", norm_eps=1e-6,
                                    activation="swiglu", mlp_bias=False, tie_embeddings=True, qk_norm=True),
              batch=2, seq_len=7, seed=95)
    # nanoGPT with bias=False: LayerNorm without bias, exact GELU, tied embeddings.
    make_case("nanogpt_style", config(vocab=10, context=8, d_model=16, heads=2, layers=2, mlp=True, d_ff=32,
                                      norm_bias=False, activation="gelu", mlp_bias=False, tie_embeddings=True),
              batch=2, seq_len=6, seed=96)
    # nanochat's relu^2 MLP, with the head's own bias beside a tied weight.
    make_case("relu2_tied_bias", config(vocab=9, context=6, d_model=16, heads=2, layers=1, mlp=True, d_ff=32,
                                        activation="relu2", norm="rmsnorm", tie_embeddings=True,
                                        lm_head_bias=True, out_bias=True, qkv_bias=True),
              batch=2, seq_len=6, seed=97)
    # Where the norms sit (model/norms.go). Gemma 2: sandwich norms, RMSNorm by
    # (1 + w) everywhere (QK-norm per head, as Gemma 3's, and ln_f included).
    make_case("gemma_norms", config(vocab=9, context=5, d_model=8, heads=2, layers=2, mlp=True, d_ff=12,
                                    position="rope", kv_heads=1, norm="rmsnorm", norm_eps=1e-6,
                                    norm_placement="sandwich", norm_offset=True, qk_norm=True,
                                    activation="swiglu", mlp_bias=False),
              batch=2, seq_len=5, seed=98)
    # OLMo 2: norms after each sublayer only, QK-norm over the whole projections.
    make_case("olmo2_norms", config(vocab=9, context=5, d_model=8, heads=2, layers=2, mlp=True, d_ff=12,
                                    position="rope", kv_heads=1, norm="rmsnorm", norm_placement="post",
                                    qk_norm=True, qk_norm_scope="all", activation="swiglu", mlp_bias=False),
              batch=2, seq_len=5, seed=99)
    # GPT-NeoX (Pythia): the parallel residual, LayerNorms with biases, exact GELU.
    make_case("neox_parallel", config(vocab=9, context=5, d_model=8, heads=2, layers=2, mlp=True, d_ff=12,
                                      position="rope", qkv_bias=True, out_bias=True, activation="gelu",
                                      parallel_residual=True),
              batch=2, seq_len=5, seed=100)
    # Gemma 2's scores, logits and MLP (model/scores.go): GeGLU, a scale of its
    # own, both soft-caps (small, so tanh bends these weights' scores), scaled
    # embeddings read by the unscaled tied head.
    make_case("gemma2_scores", config(vocab=11, context=6, d_model=16, heads=4, layers=2, mlp=True, d_ff=16,
                                      position="rope", kv_heads=2, norm="rmsnorm", activation="geglu",
                                      mlp_bias=False, tie_embeddings=True, attn_scale=0.3, attn_softcap=2.0,
                                      final_softcap=3.0, embed_scale=4.0),
              batch=2, seq_len=6, seed=98)
    # GPT-Neo's unscaled attention, on learned positions.
    make_case("gptneo_unscaled", config(vocab=9, context=6, d_model=16, heads=2, layers=1, mlp=True, d_ff=32,
                                        qkv_bias=False, out_bias=True, lm_head_bias=False, attn_scale=1.0),
              batch=2, seq_len=6, seed=99)


if __name__ == "__main__":
    main()
