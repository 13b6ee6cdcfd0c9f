"""Regenerates adamw_torch.json: torch.optim.AdamW on a weight matrix (decayed)
and a bias (not decayed, its own param group), float64, fixed gradients.

Run with a Python that has torch:  /usr/bin/python3 train/testdata/adamw_torch.py
"""
import json

import torch

torch.manual_seed(7)
w = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
b = torch.randn(4, dtype=torch.float64, requires_grad=True)
init = {"w": w.detach().flatten().tolist(), "b": b.detach().flatten().tolist()}
lrs = [1e-2, 3e-2, 5e-2, 2e-2, 1e-3]
opt = torch.optim.AdamW(
    [{"params": [w], "weight_decay": 0.1}, {"params": [b], "weight_decay": 0.0}],
    lr=lrs[0], betas=(0.9, 0.98), eps=1e-8)
steps = []
for lr in lrs:
    gw = torch.randn(3, 4, dtype=torch.float64)
    gb = torch.randn(4, dtype=torch.float64) * 1e-3
    for group in opt.param_groups:
        group["lr"] = lr
    w.grad, b.grad = gw.clone(), gb.clone()
    opt.step()
    steps.append({"lr": lr, "grad_w": gw.flatten().tolist(), "grad_b": gb.flatten().tolist(),
                  "w": w.detach().flatten().tolist(), "b": b.detach().flatten().tolist()})
json.dump({"torch": torch.__version__, "beta1": 0.9, "beta2": 0.98, "eps": 1e-8,
           "weight_decay": 0.1, "init": init, "steps": steps},
          open(__file__.replace(".py", ".json"), "w"), indent=1)
