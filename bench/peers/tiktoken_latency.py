#!/usr/bin/env python3
"""tiktoken's single-thread encode latency on the same inputs as `stamen bench tokenizer`,
for a byte-level BPE whose token ids are its merge ranks (Qwen2: vocab.json ids are the
ranks of Qwen's tiktoken file), with the same split pattern. tiktoken has no NFC step; the
benchmark inputs are NFC already, and `same_ids_as_hf` says whether its ids equal Hugging
Face tokenizers' on the input.

Usage: tiktoken_latency.py MODEL_DIR INPUT_FILE [ITERATIONS] [WARMUP]
  MODEL_DIR holds vocab.json and tokenizer.json (for the pattern and the check).
Prints one JSON object: tokens, p50_us, p99_us, overhead_p50_us (1-token input), same_ids_as_hf.
Needs tiktoken (requirements/bench.txt), e.g. pip install --target DIR and PYTHONPATH=DIR.
"""
import json
import os
import sys
import time

import tiktoken

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_tokenizers_latency import percentiles  # noqa: E402


def byte_decoder():
    printable = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    characters, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            characters[chr(byte)] = byte
        else:
            characters[chr(256 + extra)] = byte
            extra += 1
    return characters


class Adapter:
    """The `encode(text).ids` shape that hf_tokenizers_latency.percentiles expects."""

    class Result:
        def __init__(self, ids):
            self.ids = ids

    def __init__(self, encoding):
        self.encoding = encoding

    def encode(self, text):
        return Adapter.Result(self.encoding.encode_ordinary(text))


def main() -> int:
    model_dir, input_path = sys.argv[1], sys.argv[2]
    iterations = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
    warmup = int(sys.argv[4]) if len(sys.argv) > 4 else 100
    decoder = byte_decoder()
    with open(os.path.join(model_dir, "vocab.json"), encoding="utf-8") as f:
        vocabulary = json.load(f)
    ranks = {bytes(decoder[c] for c in piece): rank for piece, rank in vocabulary.items()}
    with open(os.path.join(model_dir, "tokenizer.json"), encoding="utf-8") as f:
        config = json.load(f)
    pattern = next(p["pattern"]["Regex"] for p in config["pre_tokenizer"]["pretokenizers"] if p["type"] == "Split")
    encoding = tiktoken.Encoding("qwen2-bpe", pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
    with open(input_path, encoding="utf-8") as f:
        text = f.read()
    from tokenizers import Tokenizer
    same = encoding.encode_ordinary(text) == Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json")).encode(text).ids
    tokenizer = Adapter(encoding)
    tokens, p50, p99 = percentiles(tokenizer, text, iterations, warmup)
    _, overhead_p50, _ = percentiles(tokenizer, "a", iterations, warmup)
    print(json.dumps({"name": "tiktoken-" + tiktoken.__version__ if hasattr(tiktoken, "__version__") else "tiktoken",
                      "tokens": tokens, "p50_us": round(p50, 2), "p99_us": round(p99, 2),
                      "overhead_p50_us": round(overhead_p50, 2), "same_ids_as_hf": same}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
