#!/usr/bin/env python3
"""Writes Hugging Face tokenizers' ids for each input line: the reference that
`stamen tokenize --model tokenizer.json` must match exactly.

Usage: hf_reference_ids.py TOKENIZER_JSON INPUT OUTPUT [--pair] [--no-special-tokens]
                          [--max-length=N]
--max-length=N enables Hugging Face's default truncation (longest-first, right side), as
`stamen tokenize --max-length N` does.
Lines are split on '\n' only; invalid UTF-8 is decoded with U+FFFD, as Rust strings hold it.
"""
import sys

from tokenizers import Tokenizer


def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    flags = {a for a in sys.argv[1:] if a.startswith("--")}
    tokenizer_path, input_path, output_path = args
    tokenizer = Tokenizer.from_file(tokenizer_path)
    # A file saved by sentence-transformers may carry its padding and truncation settings
    # (all-mpnet-base-v2: pad and cut to 128); the reference is the tokenization itself, as
    # `stamen tokenize` prints it, so only --max-length truncates.
    tokenizer.no_padding()
    tokenizer.no_truncation()
    max_length = [int(f.split("=", 1)[1]) for f in flags if f.startswith("--max-length=")]
    if max_length:
        tokenizer.enable_truncation(max_length=max_length[-1])
    with open(input_path, "rb") as f:
        data = f.read()
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    texts = [line.decode("utf-8", errors="replace") for line in lines]
    add_special = "--no-special-tokens" not in flags
    if "--pair" in flags:
        inputs = [tuple(t.split("\t", 1)) for t in texts]
    else:
        inputs = texts
    # In chunks: a truncated pair keeps all its overflowing windows, which add up.
    with open(output_path, "w") as f:
        for start in range(0, len(inputs), 1024):
            chunk = inputs[start:start + 1024]
            for encoding in tokenizer.encode_batch(chunk, add_special_tokens=add_special):
                f.write(" ".join(map(str, encoding.ids)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
