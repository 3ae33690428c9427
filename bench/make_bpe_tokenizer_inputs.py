#!/usr/bin/env python3
"""Makes the BPE tokenizer benchmark inputs: the same multilingual udhr text as
make_tokenizer_inputs.py (every 53rd line of udhr.tsv joined by spaces), cut so that Hugging
Face tokenizers encodes it into exactly N tokens with the Qwen2 tokenizer (which adds no
special tokens).

Usage: make_bpe_tokenizer_inputs.py SHARED_DIR OUTPUT_DIR   (writes qwen2_N.txt)
"""
import os
import sys

from tokenizers import Tokenizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_tokenizer_inputs import SIZES, exact_prefix  # noqa: E402


def main() -> int:
    shared, output = sys.argv[1], sys.argv[2]
    tokenizer = Tokenizer.from_file(os.path.join(shared, "models/qwen2-bpe/tokenizer.json"))
    with open(os.path.join(shared, "corpus/udhr.tsv"), encoding="utf-8") as f:
        lines = [line.rstrip("\n").split("\t", 1)[1] for line in f]
    text = " ".join(lines[::53])
    os.makedirs(output, exist_ok=True)
    for size in SIZES:
        prefix = exact_prefix(tokenizer, text, size)
        with open(os.path.join(output, f"qwen2_{size}.txt"), "w", encoding="utf-8") as f:
            f.write(prefix)
        print(size, len(prefix.encode()), "bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
