"""Writes gpt2_split.json: how GPT-2's own pre-tokenizer splits short texts.

GPT-2's encoder splits text with this pattern and the Python `regex` module
(Debian's python3-regex); package tokenizer splits by hand, as Go's regexp has
no lookahead, and its tests compare the two on these cases. They include the
characters whose \\s differs between Python and JavaScript (U+0085, U+FEFF),
which the gpt-3-encoder corpus leaves out.

Run from this directory: /usr/bin/python3 gen_gpt2_split.py
"""
import json

import regex

GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

CASES = [
    "",
    "a",
    " ",
    "hello world",
    "  two spaces before",
    "trailing   ",
    "tab\tthen\t\ttwo",
    "\t\tleading tabs",
    "new\nline\n\n\nthree\n",
    "crlf\r\nline\r\n\r\n",
    "mixed \t\n whitespace \n\t word",
    " \n",
    "\n ",
    "a \u00a0b",
    "nbsp\u00a0\u00a0word",
    "line\u2028sep \u2029para",
    "next\u0085line \u0085\u0085 x\u0085",
    "bom\ufeffin \ufeffthe\ufeff\ufeff middle",
    "\ufeffat start",
    "a \u0085b \u0085\u0085c\u0085 \u0085",
    "\ufeff a \ufeff\ufeff b",
    "it's don't we've they'll I'm she'd you're",
    "IT'S DON'T",
    "''s 's's x'sy '''",
    " 's  't",
    "...'s !!'ll",
    "123 4567 89.0 ½ Ⅻ ①",
    " 123abc abc123 a1b2",
    "😀😀 👩\u200d👩\u200d👧 e\u0301te\u0301",
    "中文 日本語 한국어",
    "\u05e9\u05dc\u05d5\u05dd \u200f\u05e2\u05d5\u05dc\u05dd",
    "x\x1fy\x1c z\x00 \x7f",
    "=== --- +++",
    " = a",
    "a  \tb",
    "end with space ",
    "end with spaces  ",
    "\u3000\u3000ideographic",
    "vertical\x0btab form\x0cfeed",
]


def main():
    out = [{"text": text, "pieces": regex.findall(GPT2_PATTERN, text)} for text in CASES]
    with open("gpt2_split.json", "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=True, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
