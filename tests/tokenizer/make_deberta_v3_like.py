#!/usr/bin/env python3
"""Builds tests/tokenizer/data/deberta-v3-like/tokenizer.json: DeBERTa-v3's tokenizer.json as
transformers 5 writes it (DebertaV2Tokenizer: normalizer Replace(\\s{2,}|[\\n\\r\\t] -> " "), NFC,
Strip(right); Metaspace "always"; Unigram; [CLS] A [SEP] template), over a 4,000-piece
SentencePiece Unigram model trained here on botchan.txt and udhr.tsv in en, fr, de-1996, ru, es (pieces
and ids as DeBERTa-v3 lays them out: [PAD]=0 [CLS]=1 [SEP]=2 [UNK]=3 [MASK]=4).

Usage: make_deberta_v3_like.py OUTPUT_DIR  (run with the project's .venv-heavy: transformers 5,
sentencepiece)
"""
import json
import os
import sys
import tempfile

import sentencepiece
from transformers import DebertaV2Tokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.join(HERE, "..", "..", "..", "shared", "corpus")


def main() -> int:
    output = sys.argv[1]
    with open(os.path.join(SHARED, "botchan.txt"), encoding="utf-8") as f:
        lines = f.read().splitlines()
    with open(os.path.join(SHARED, "udhr.tsv"), encoding="utf-8") as f:
        for line in f:
            language, _, text = line.rstrip("\n").partition("\t")
            if language in ("en", "fr", "de-1996", "ru", "es"):
                lines.append(text)
    with tempfile.TemporaryDirectory() as work:
        corpus = os.path.join(work, "corpus.txt")
        with open(corpus, "w", encoding="utf-8") as f:
            f.write("\n".join(lines))
        prefix = os.path.join(work, "spm")
        sentencepiece.SentencePieceTrainer.train(
            input=corpus, model_prefix=prefix, vocab_size=4000, model_type="unigram", character_coverage=0.9995,
            pad_id=0, bos_id=1, eos_id=2, unk_id=3, pad_piece="[PAD]", bos_piece="[CLS]", eos_piece="[SEP]",
            unk_piece="[UNK]", user_defined_symbols=["[MASK]"], num_threads=1, minloglevel=2)
        model = sentencepiece.SentencePieceProcessor(model_file=prefix + ".model")
        vocab = [(model.id_to_piece(i), float(model.get_score(i))) for i in range(model.get_piece_size())]
    tokenizer = DebertaV2Tokenizer(vocab=vocab)
    tokenizer.save_pretrained(output)
    # One line, as the tests splice normalizers into it by text.
    path = os.path.join(output, "tokenizer.json")
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(data, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
