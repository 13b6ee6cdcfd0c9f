#!/usr/bin/python3
"""Prints the literals of layers/golden_test.go: one tiny causal attention
(B 1, T 3, D 4, H 2) computed by PyTorch in float64, independently of the Go
code. Run from the repository root and paste the output into the test:

    /usr/bin/python3 layers/testdata/golden_attention.py

Inputs and weights are short decimals chosen by hand (so both sides parse the
same numbers); outputs are printed with 17 significant digits.
"""

import torch

torch.set_num_threads(1)
B, T, D, H = 1, 3, 4, 2
dh = D // H

x = torch.tensor([[0.5, -1.0, 0.25, 2.0],
                  [1.5, 0.75, -0.5, -1.25],
                  [-2.0, 0.5, 1.0, 0.25]], dtype=torch.float64, requires_grad=True)
w_qkv = torch.tensor([[0.3, -0.2, 0.1, 0.4],
                      [-0.5, 0.6, 0.2, -0.1],
                      [0.7, 0.1, -0.3, 0.2],
                      [0.0, -0.4, 0.5, 0.3],
                      [0.2, 0.3, -0.6, 0.1],
                      [-0.1, 0.5, 0.4, -0.2],
                      [0.6, -0.3, 0.2, 0.5],
                      [-0.4, 0.2, 0.1, -0.6],
                      [0.1, 0.4, -0.2, 0.3],
                      [0.5, -0.1, 0.6, 0.2],
                      [-0.3, 0.2, 0.4, -0.5],
                      [0.2, -0.6, 0.3, 0.1]], dtype=torch.float64, requires_grad=True)
b_qkv = torch.tensor([0.1, -0.1, 0.05, 0.0, 0.2, -0.2, 0.15, -0.05, 0.3, -0.3, 0.25, 0.1],
                     dtype=torch.float64, requires_grad=True)
w_out = torch.tensor([[0.4, -0.3, 0.2, 0.1],
                      [-0.2, 0.5, -0.1, 0.3],
                      [0.3, 0.1, 0.6, -0.4],
                      [-0.5, 0.2, 0.3, 0.2]], dtype=torch.float64, requires_grad=True)
b_out = torch.tensor([0.05, -0.15, 0.1, 0.2], dtype=torch.float64, requires_grad=True)
# The cost whose gradients are checked: sum(out * c).
c = torch.tensor([[1.0, -0.5, 0.25, 2.0],
                  [-1.5, 1.0, 0.5, -0.25],
                  [0.75, 0.25, -1.0, 1.5]], dtype=torch.float64)

qkv = x @ w_qkv.T + b_qkv                              # (T, 3D), rows [q | k | v]
q, k, v = qkv.split(D, dim=1)                          # (T, D) each
heads = lambda m: m.view(T, H, dh).transpose(0, 1)     # (H, T, d)
scores = heads(q) @ heads(k).transpose(1, 2) / dh ** 0.5
causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
weights = torch.softmax(scores.masked_fill(causal, float("-inf")), dim=-1)  # (H, T, T)
y = (weights @ heads(v)).transpose(0, 1).reshape(T, D)  # (T, D)
out = y @ w_out.T + b_out                               # (T, D)
(out * c).sum().backward()


def lit(name, t):
    vals = ", ".join(repr(float(v)) for v in t.detach().reshape(-1).tolist())
    print(f"\t{name} = []float64{{{vals}}}")


lit("wantOut", out)
lit("wantWeights", weights)
lit("wantGradX", x.grad)
lit("wantGradQKVWeight", w_qkv.grad)
lit("wantGradQKVBias", b_qkv.grad)
lit("wantGradOutWeight", w_out.grad)
lit("wantGradOutBias", b_out.grad)
