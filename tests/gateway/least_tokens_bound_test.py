"""The rule admission control refuses bodies by before tokenizing them (gateway/least_tokens.h):
a text makes at least as many tokens as it has runs between ASCII whitespace. Checked with HF
tokenizers (the independent reference) for WordPiece, byte-level BPE and SentencePiece
(unigram) tokenizer.json files, on every 4th line of the shared corpora, without special tokens
or truncation. A tokenizer for which the rule failed would let the gateway refuse a body that
fits (LeastTokensTest in admission_test.cc checks the C++ count itself).

Usage: least_tokens_bound_test.py SHARED_DIR
"""
import os
import re
import sys

import tokenizers

TOKENIZERS = ("models/configs/all-MiniLM-L6-v2", "models/qwen2-bpe", "models/xlmr-trimmed-32k",
              "models/synthetic-unigram-250k")
WORD = re.compile(r"[^ \t\n\r\f\v]+")


def corpus_lines(shared):
    lines = [line.split("\t")[-1] for line in open(os.path.join(shared, "corpus/udhr.tsv"), encoding="utf-8")]
    for name in ("botchan.txt", "wagahaiwa_nekodearu.txt"):
        lines += open(os.path.join(shared, "corpus", name), encoding="utf-8").read().splitlines()
    return lines[::4]


def main():
    shared = sys.argv[1]
    lines = corpus_lines(shared)
    failures = 0
    for name in TOKENIZERS:
        tokenizer = tokenizers.Tokenizer.from_file(os.path.join(shared, name, "tokenizer.json"))
        tokenizer.no_truncation()
        words = tokens = 0
        for line in lines:
            line_words = len(WORD.findall(line))
            line_tokens = len(tokenizer.encode(line, add_special_tokens=False).ids)
            words += line_words
            tokens += line_tokens
            if line_words > line_tokens:
                failures += 1
                print(f"FAILED: {name}: {line_words} words but {line_tokens} tokens: {line[:120]!r}")
        print(f"{name}: {len(lines)} lines, words / tokens {words / tokens:.3f}")
    return 1 if failures or len(lines) < 1000 else 0


if __name__ == "__main__":
    sys.exit(main())
