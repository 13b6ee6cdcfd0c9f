"""gen_neox_tokenizer.py writes neox_tokenizer.json: a tokenizer.json with
GPT-NeoX's (Pythia's) pipeline and a small byte-level BPE trained here, as no
npm package ships GPT-NeoX's own file.

The pipeline is GPT-NeoX-20B's as its tokenizer.json writes it: normalizer
NFC; pre-tokenizer ByteLevel (GPT-2's split, no prefix space); post-processor
and decoder ByteLevel; added tokens <|endoftext|> and <|padding|> (special,
ids 0 and 1) and runs of 24 down to 2 spaces (not special, normalized,
ids after the vocabulary's, as GPT-NeoX's are), which Hugging Face matches in the text before the
pre-tokenizer.

The BPE is trained on docs/*.md of this repository (not on the test corpus):
GPT-2's split (Python's regex module), byte-level words, then MERGES times
the most frequent adjacent pair (ties: the smallest pair) merges.

    python3 tokenizer/testdata/gen_neox_tokenizer.py
"""
import collections
import glob
import json
import os

import regex

MERGES = 1200
SPACE_RUNS = range(24, 1, -1)  # GPT-NeoX lists the longest first
GPT2_SPLIT = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def byte_to_unicode():
    """GPT-2's table: printable bytes stand for themselves, the rest for U+0100 on."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(0x100 + extra)
            extra += 1
    return table


def train(text, merges):
    table = byte_to_unicode()
    words = collections.Counter(
        tuple(table[b] for b in w.encode("utf-8")) for w in regex.findall(GPT2_SPLIT, text))
    words = {w: c for w, c in words.items()}
    learned = []
    for _ in range(merges):
        pairs = collections.Counter()
        for w, c in words.items():
            for pair in zip(w, w[1:]):
                pairs[pair] += c
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        learned.append(best)
        merged = {}
        for w, c in words.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    out.append(w[i] + w[i + 1])
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            merged[tuple(out)] = merged.get(tuple(out), 0) + c
        words = merged
    return table, learned


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    docs = sorted(glob.glob(os.path.join(here, "..", "..", "docs", "*.md")))
    text = "".join(open(p, encoding="utf-8").read() for p in docs)
    table, merges = train(text, MERGES)
    vocab = {"<|endoftext|>": 0, "<|padding|>": 1}
    for b in range(256):
        vocab[table[b]] = len(vocab)
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    added = [
        {"id": 0, "content": "<|endoftext|>", "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": True},
        {"id": 1, "content": "<|padding|>", "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": True},
    ]
    for i, n in enumerate(SPACE_RUNS):
        added.append({"id": len(vocab) + i, "content": " " * n, "single_word": False, "lstrip": False,
                      "rstrip": False, "normalized": True, "special": False})
    doc = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                  "vocab": vocab, "merges": [a + " " + b for a, b in merges]},
    }
    with open(os.path.join(here, "neox_tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=None)
        f.write("\n")
    print(f"{len(vocab) + len(SPACE_RUNS)} tokens, {len(merges)} merges")


if __name__ == "__main__":
    main()
