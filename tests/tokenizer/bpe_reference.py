#!/usr/bin/env python3
"""Writes Hugging Face tokenizers' encoding of each input text for a BPE tokenizer.json: the
reference that stamen's BPE tokenizer must match exactly.

Usage: bpe_reference.py TOKENIZER_JSON INPUT OUTPUT [--pair] [--no-special-tokens]
                        [--max-length=N] [--decode] [--cache-dir=DIR]
Each input line is one text as the hex of its bytes (so texts may hold newlines; invalid
UTF-8 is decoded with U+FFFD, as Rust strings hold it); with --pair, two hex fields
separated by a space. Each output line holds the ids, or with --decode `x<hex> x<hex>`: the
UTF-8 of decode(ids) with and without skip_special_tokens.
--cache-dir=DIR reuses the output of an earlier run with the same tokenizer.json bytes,
input, flags, tokenizers version and script.
"""
import hashlib
import os
import shutil
import sys

import tokenizers
from tokenizers import Tokenizer


def cache_key(tokenizer_path, input_path, flags):
    digest = hashlib.sha256(" ".join(sorted(flags)).encode() + b"\0" + tokenizers.__version__.encode() + b"\0")
    for path in (__file__, tokenizer_path, input_path):
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        digest.update(b"\0")
    return digest.hexdigest()


def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    flags = {a for a in sys.argv[1:] if a.startswith("--") and not a.startswith("--cache-dir=")}
    cache_dirs = [a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--cache-dir=")]
    tokenizer_path, input_path, output_path = args
    cached = os.path.join(cache_dirs[-1], cache_key(tokenizer_path, input_path, flags)) if cache_dirs else None
    if cached and os.path.exists(cached):
        shutil.copyfile(cached, output_path)
        return 0
    tokenizer = Tokenizer.from_file(tokenizer_path)
    tokenizer.no_truncation()
    tokenizer.no_padding()
    max_length = [int(f.split("=", 1)[1]) for f in flags if f.startswith("--max-length=")]
    if max_length:
        tokenizer.enable_truncation(max_length=max_length[-1])
    add_special = "--no-special-tokens" not in flags
    pair = "--pair" in flags
    decode = "--decode" in flags
    with open(input_path, "r", encoding="ascii") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()

    def text(field):
        return bytes.fromhex(field).decode("utf-8", errors="replace")

    with open(output_path, "w") as out:
        for start in range(0, len(lines), 1024):
            chunk = lines[start:start + 1024]
            inputs = [tuple(text(x) for x in line.split(" ", 1)) if pair else text(line) for line in chunk]
            for encoding in tokenizer.encode_batch(inputs, add_special_tokens=add_special):
                if decode:
                    skipped = tokenizer.decode(encoding.ids, skip_special_tokens=True).encode().hex()
                    kept = tokenizer.decode(encoding.ids, skip_special_tokens=False).encode().hex()
                    out.write(f"x{skipped} x{kept}\n")
                else:
                    out.write(" ".join(map(str, encoding.ids)) + "\n")
    if cached:
        partial = f"{cached}.{os.getpid()}.partial"
        shutil.copyfile(output_path, partial)
        os.replace(partial, cached)
    return 0


if __name__ == "__main__":
    sys.exit(main())
