#!/usr/bin/env python3
"""Makes the tokenizer benchmark inputs: multilingual text from udhr.tsv cut so that Hugging
Face tokenizers encodes it (with <s> and </s>) into exactly N tokens on the 250k model.

Usage: make_tokenizer_inputs.py SHARED_DIR OUTPUT_DIR
Lines are taken every 53rd line of udhr.tsv (478 languages interleave) and joined by spaces;
the result is deterministic.
"""
import os
import sys

from tokenizers import Tokenizer

SIZES = [130, 514, 1026, 4098, 16386]


def exact_prefix(tokenizer, text, size):
    """The shortest prefix of `text` (skipping a few leading characters if the count jumps
    over `size` at every cut) that encodes to exactly `size` tokens."""
    for skip in range(200):
        candidate = text[skip:]
        count = lambda n: len(tokenizer.encode(candidate[:n]).ids)
        low, high = 1, len(candidate)
        while low < high:  # smallest prefix with at least `size` tokens
            middle = (low + high) // 2
            if count(middle) < size:
                low = middle + 1
            else:
                high = middle
        if count(low) == size:
            return candidate[:low]
    raise SystemExit(f"no prefix of exactly {size} tokens")


def main() -> int:
    shared, output = sys.argv[1], sys.argv[2]
    tokenizer = Tokenizer.from_file(os.path.join(shared, "models/synthetic-unigram-250k/tokenizer.json"))
    with open(os.path.join(shared, "corpus/udhr.tsv"), encoding="utf-8") as f:
        lines = [line.rstrip("\n").split("\t", 1)[1] for line in f]
    text = " ".join(lines[::53])
    os.makedirs(output, exist_ok=True)
    for size in SIZES:
        prefix = exact_prefix(tokenizer, text, size)
        with open(os.path.join(output, f"udhr_{size}.txt"), "w", encoding="utf-8") as f:
            f.write(prefix)
        print(size, len(prefix.encode()), "bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
