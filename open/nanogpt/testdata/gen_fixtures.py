"""Writes the nanoGPT fixtures of package open/nanogpt with nanoGPT's own code.

Usage: /usr/bin/python3 gen_fixtures.py NANOGPT_CHECKOUT

It copies the checkout to a scratch directory (nothing of nanoGPT enters this
repository), prepares corpus.txt as data/shakespeare_char/prepare.py prepares
Shakespeare (the same script, run on this text), trains a tiny model twice
with train.py on the CPU (bias=True and bias=False; every setting a
command-line override of train.py's configurator), and writes beside this
script:

  bias/ckpt.pt, nobias/ckpt.pt   the checkpoints train.py saved, unchanged
  meta.pkl                       prepare.py's vocabulary
  reference.json                 logits of nanoGPT's model.py GPT, loaded from
                                 each checkpoint as sample.py loads it, for a
                                 fixed token sequence

Written with Debian's torch 1.13: it has no scaled_dot_product_attention, so
nanoGPT takes its "slow attention" path, whose causal mask is a buffer
(transformer.h.N.attn.bias) saved in the state dict.
"""

import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DATASET = "attnscope_char"
PROMPT = "The keeper wrote: wind, all well"  # 32 characters: the whole context

# The tiny model and a short run. Everything else is train.py's default.
TRAIN = [
    "--dataset=" + DATASET,
    "--device=cpu", "--compile=False", "--dtype=float32",
    "--n_layer=2", "--n_head=2", "--n_embd=32", "--block_size=32", "--dropout=0.0",
    "--batch_size=8", "--gradient_accumulation_steps=1",
    "--max_iters=300", "--eval_interval=300", "--eval_iters=2", "--log_interval=100",
    "--learning_rate=0.01", "--warmup_iters=10", "--lr_decay_iters=300", "--min_lr=0.001",
]
RUNS = {"bias": "True", "nobias": "False"}


def prepare(work):
    """Runs shakespeare_char's prepare.py on corpus.txt in work/data/DATASET."""
    data = os.path.join(work, "data", DATASET)
    os.makedirs(data)
    shutil.copy(os.path.join(HERE, "corpus.txt"), os.path.join(data, "input.txt"))
    shutil.copy(os.path.join(work, "data", "shakespeare_char", "prepare.py"), data)
    subprocess.run([sys.executable, "prepare.py"], cwd=data, check=True)
    return data


def train(work, name, bias):
    out = "out-" + name
    subprocess.run([sys.executable, "train.py", "--out_dir=" + out, "--bias=" + bias] + TRAIN,
                   cwd=work, check=True)
    return os.path.join(work, out, "ckpt.pt")


def reference_logits(work, ckpt, ids):
    """Logits at every position, as sample.py loads a checkpoint."""
    sys.path.insert(0, work)
    import torch
    from model import GPT, GPTConfig
    checkpoint = torch.load(ckpt, map_location="cpu")
    model = GPT(GPTConfig(**checkpoint["model_args"]))
    state_dict = checkpoint["model"]
    unwanted_prefix = "_orig_mod."
    for k in list(state_dict):
        if k.startswith(unwanted_prefix):
            state_dict[k[len(unwanted_prefix):]] = state_dict.pop(k)
    model.load_state_dict(state_dict)
    model.eval()
    x = torch.tensor([ids], dtype=torch.long)
    with torch.no_grad():
        # With targets the model returns the logits of every position.
        logits, _ = model(x, targets=x)
    return {
        "iter_num": checkpoint["iter_num"],
        "model_args": checkpoint["model_args"],
        "logits": [[float("%.8g" % v) for v in row] for row in logits[0].tolist()],
    }


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_fixtures.py NANOGPT_CHECKOUT")
    work = os.path.join(tempfile.mkdtemp(prefix="nanogpt-fixtures-"), "nanoGPT")
    shutil.copytree(sys.argv[1], work, ignore=shutil.ignore_patterns(".git"))
    data = prepare(work)
    shutil.copy(os.path.join(data, "meta.pkl"), os.path.join(HERE, "meta.pkl"))
    with open(os.path.join(data, "meta.pkl"), "rb") as f:
        stoi = pickle.load(f)["stoi"]
    ids = [stoi[c] for c in PROMPT]
    reference = {"prompt": PROMPT, "tokens": ids, "checkpoints": {}}
    for name, bias in RUNS.items():
        ckpt = train(work, name, bias)
        os.makedirs(os.path.join(HERE, name), exist_ok=True)
        shutil.copy(ckpt, os.path.join(HERE, name, "ckpt.pt"))
        reference["checkpoints"][name] = reference_logits(work, ckpt, ids)
    with open(os.path.join(HERE, "reference.json"), "w") as f:
        json.dump(reference, f, indent=1)
        f.write("\n")
    shutil.rmtree(os.path.dirname(work))


if __name__ == "__main__":
    main()
