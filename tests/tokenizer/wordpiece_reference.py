#!/usr/bin/env python3
"""Writes Hugging Face tokenizers' encoding of each input line for a WordPiece
tokenizer.json: the reference that stamen's WordPiece tokenizer must match exactly.

Usage: wordpiece_reference.py TOKENIZER_JSON INPUT OUTPUT [--pair] [--no-special-tokens]
                              [--max-length=N] [--offsets | --decode] [--cache-dir=DIR]
The file's own truncation and padding sections are switched off (all-MiniLM-L6-v2's pad
every text to 128 ids); --max-length=N enables Hugging Face's default truncation
(longest-first, right side) instead. --pair splits each line at its first tab.
Each output line holds the ids, or with --offsets `id:begin:end` with the offsets in UTF-8
bytes of the line's text (of its own side for a pair; 0:0 for special tokens), or with
--decode `x<hex> x<hex>`: the UTF-8 of decode(ids) with and without skip_special_tokens.
--cache-dir=DIR reuses the output of an earlier run on the same input and flags with a
tokenizer.json that differs only in its truncation and padding sections (the three BERT
files the tests use do), by the same tokenizers version and this same script.
Lines are split on '\n' only; invalid UTF-8 is decoded with U+FFFD, as Rust strings hold it.
Texts are encoded 1024 at a time, so memory stays small whatever the input size.
"""
import hashlib
import itertools
import json
import os
import shutil
import sys

import tokenizers
from tokenizers import Tokenizer


def utf8_length(ch):
    return 1 if ch < "\x80" else 2 if ch < "\u0800" else 3 if ch < "\U00010000" else 4


def byte_offsets(text):
    """Byte offset of each character boundary of `text` (len(text) + 1 entries)."""
    if text.isascii():
        return range(len(text) + 1)
    return [0, *itertools.accumulate(map(utf8_length, text))]


def format_encoding(tokenizer, encoding, texts, with_offsets, decode):
    if decode:
        skipped = tokenizer.decode(encoding.ids, skip_special_tokens=True).encode().hex()
        kept = tokenizer.decode(encoding.ids, skip_special_tokens=False).encode().hex()
        return f"x{skipped} x{kept}"
    if not with_offsets:
        return " ".join(map(str, encoding.ids))
    tables = [byte_offsets(text) for text in texts]
    fields = []
    for token_id, (begin, end), sequence in zip(encoding.ids, encoding.offsets, encoding.sequence_ids):
        if sequence is not None:
            begin, end = tables[sequence][begin], tables[sequence][end]
        fields.append(f"{token_id}:{begin}:{end}")
    return " ".join(fields)


def cache_key(tokenizer_path, input_path, flags):
    """What the output depends on: the file without truncation/padding, the input, the flags."""
    with open(tokenizer_path, "rb") as f:
        config = json.load(f)
    config.pop("truncation", None)
    config.pop("padding", None)
    digest = hashlib.sha256(json.dumps(config, sort_keys=True).encode())
    digest.update(" ".join(sorted(flags)).encode() + b"\0" + tokenizers.__version__.encode() + b"\0")
    with open(__file__, "rb") as f:
        digest.update(f.read())
    with open(input_path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
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
    with_offsets = "--offsets" in flags
    decode = "--decode" in flags
    with open(input_path, "rb") as f:
        lines = f.read().split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    with open(output_path, "w") as out:
        for start in range(0, len(lines), 1024):
            texts = [line.decode("utf-8", errors="replace") for line in lines[start:start + 1024]]
            inputs = [tuple(t.split("\t", 1)) if "\t" in t else (t, "") for t in texts] if pair else texts
            for text, encoding in zip(inputs, tokenizer.encode_batch(inputs, add_special_tokens=add_special)):
                sides = text if pair else (text,)
                out.write(format_encoding(tokenizer, encoding, sides, with_offsets, decode) + "\n")
    if cached:
        # ctest runs models in parallel, and models that differ only in truncation/padding
        # share a cache entry: each writer uses its own temporary name, and the atomic rename
        # lets the last (identical) copy win.
        partial = f"{cached}.{os.getpid()}.partial"
        shutil.copyfile(output_path, partial)
        os.replace(partial, cached)
    return 0


if __name__ == "__main__":
    sys.exit(main())
