#!/usr/bin/env python3
"""Builds tests/tokenizer/data/gemma-like-bpe/tokenizer.json: a small BPE in EmbeddingGemma's
layout, so that CI (which lacks the real 262k-token file) exercises the same code paths:
normalizer Replace(" " -> "▁"), pre_tokenizer Split(" ", MergedWithPrevious), BPE with
byte_fallback and fuse_unk (the 256 <0xXX> pieces in the vocabulary, a small alphabet so that
most scripts fall back to bytes), Gemma's added tokens (<pad> <eos> <bos> <unk>, "\\n" runs,
"▁▁" runs, <start_of_turn>, all normalized=false), the <bos> A <eos> template, and the decoder
Sequence[Replace("▁" -> " "), ByteFallback, Fuse].

Usage: make_gemma_like_bpe.py OUTPUT_JSON  (run with the project's .venv: tokenizers 0.23.3)
Training is deterministic for a given corpus; the corpus is SentencePiece's botchan.txt and the
"en" and "fr" lines of ../shared/corpus/udhr.tsv.
"""
import json
import os
import sys

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.join(HERE, "..", "..", "..", "shared", "corpus")


def corpus():
    with open(os.path.join(SHARED, "botchan.txt"), encoding="utf-8") as f:
        yield from f.read().splitlines()
    with open(os.path.join(SHARED, "udhr.tsv"), encoding="utf-8") as f:
        for line in f:
            language, _, text = line.rstrip("\n").partition("\t")
            if language in ("en", "fr"):
                yield text


def main() -> int:
    output = sys.argv[1]
    specials = ["<pad>", "<eos>", "<bos>", "<unk>"]
    bytes_pieces = [f"<0x{b:02X}>" for b in range(256)]
    tokenizer = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tokenizer.normalizer = normalizers.Replace(" ", "\u2581")
    tokenizer.pre_tokenizer = pre_tokenizers.Split(" ", behavior="merged_with_previous")
    trainer = trainers.BpeTrainer(vocab_size=3000, special_tokens=specials + bytes_pieces, limit_alphabet=80,
                                  show_progress=False)
    tokenizer.train_from_iterator(corpus(), trainer=trainer)
    # The specials and byte pieces went in as added tokens; in Gemma the byte pieces are plain
    # vocabulary entries, so only the four specials (and Gemma's other added tokens) stay added.
    data = json.loads(tokenizer.to_str())
    added = []
    for content in specials:
        added.append({"id": data["model"]["vocab"][content], "content": content, "single_word": False,
                      "lstrip": False, "rstrip": False, "normalized": False, "special": True})
    vocab = data["model"]["vocab"]
    extra = ["<start_of_turn>", "<end_of_turn>", "<mask>"] + ["\n" * n for n in range(1, 6)] + \
            ["\u2581" * n for n in range(2, 6)] + ["\t\t", "<unused0>", "<unused1>"]
    for content in extra:
        if content not in vocab:
            vocab[content] = len(vocab)
        added.append({"id": vocab[content], "content": content, "single_word": False, "lstrip": False,
                      "rstrip": False, "normalized": False, "special": content.startswith("<s") or content == "<end_of_turn>"})
    data["added_tokens"] = added
    bos, eos = vocab["<bos>"], vocab["<eos>"]
    data["post_processor"] = json.loads(processors.TemplateProcessing(
        single="<bos> $A <eos>", pair="<bos> $A <eos> <bos>:1 $B:1 <eos>:1",
        special_tokens=[("<bos>", bos), ("<eos>", eos)]).__getstate__())
    data["decoder"] = {"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
        {"type": "ByteFallback"}, {"type": "Fuse"}]}
    text = json.dumps(data, ensure_ascii=False)
    Tokenizer.from_str(text)  # still loads
    with open(output, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
