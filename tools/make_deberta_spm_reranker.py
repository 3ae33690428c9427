#!/usr/bin/env python3
"""Builds tests/engine/data/tiny-deberta-v3-spm-reranker/: the tokenizer half of a DeBERTa-v3
reranker folder that ships spm.model and no tokenizer.json (as mxbai-rerank-v1 and the NLI
cross-encoders over microsoft/deberta-v3-* do). The test puts it beside tiny-deberta-v3-reranker's
config.json and model.safetensors (not copied here: the same bytes).

- spm.model: a SentencePiece Unigram model of 999 pieces trained on udhr.tsv's English lines and
  botchan.txt with DeBERTa-v3's layout ([PAD] 0, [CLS] 1, [SEP] 2 control pieces, [UNK] 3); the
  tokenizer adds [MASK] as 999, so every id fits the tiny model's 1,000 embedding rows. Its
  normalization is "identity" (no charsmap), which keeps the file small; the charsmap path is
  covered by tests/tokenizer/data/deberta-v3-spm.
- tokenizer_config.json: microsoft/deberta-v3-base's, {"do_lower_case": false, "vocab_type": "spm"}.
- tokenizer_reference.json: for single texts and pairs, the ids of transformers' DebertaV2Tokenizer
  loaded from the folder, checked against sentencepiece's own encoder with [CLS] A [SEP] /
  [CLS] A [SEP] B [SEP] around it (the slow tokenizer's way), the token types, and the pairs'
  logits from tiny-deberta-v3-reranker run in float64. (transformers 4.57's slow and fast
  DebertaV2Tokenizer give the same ids for these texts: checked when the folder was made.)

Usage: .venv-heavy/bin/python tools/make_deberta_spm_reranker.py
"""
import json
import os
import pathlib
import shutil
import sys
import tempfile

import sentencepiece
import torch
import transformers

ROOT = pathlib.Path(__file__).resolve().parent.parent
RERANKER = ROOT / "tests" / "engine" / "data" / "tiny-deberta-v3-reranker"
OUT = ROOT / "tests" / "engine" / "data" / "tiny-deberta-v3-spm-reranker"
CORPUS = ROOT.parent / "shared" / "corpus"
SINGLES = ["What is the capital of France?", "Everyone has the right to life, liberty and security of person.",
           "  spaces   inside  ", "Hello [MASK] world", ""]
PAIRS = [("What is the capital of France?", "Paris is the capital of France."),
         ("Who has the right to education?", "Everyone has the right to education."),
         ("Is slavery allowed?", "No one shall be held in slavery or servitude; slavery shall be prohibited."),
         ("A man is playing a guitar.", "Nobody is playing music."),
         ("hello", "world")]


def train(work):
    lines = (CORPUS / "botchan.txt").read_text(encoding="utf-8").splitlines()
    for line in (CORPUS / "udhr.tsv").read_text(encoding="utf-8").splitlines():
        language, _, text = line.partition("\t")
        if language == "en":
            lines.append(text)
    corpus = pathlib.Path(work) / "corpus.txt"
    corpus.write_text("\n".join(lines), encoding="utf-8")
    prefix = str(pathlib.Path(work) / "spm")
    sentencepiece.SentencePieceTrainer.train(
        input=str(corpus), model_prefix=prefix, vocab_size=999, model_type="unigram", character_coverage=1.0,
        normalization_rule_name="identity", byte_fallback=False, pad_id=0, bos_id=1, eos_id=2, unk_id=3,
        pad_piece="[PAD]", bos_piece="[CLS]", eos_piece="[SEP]", unk_piece="[UNK]", num_threads=1, minloglevel=2)
    return prefix + ".model"


def spm_ids(processor, text):
    """The slow DebertaV2Tokenizer's content ids: sentencepiece's own, [MASK] split out first."""
    ids = []
    for index, part in enumerate(text.split("[MASK]")):
        if index:
            ids.append(999)
        ids += processor.encode(part)
    return ids


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        shutil.copy(train(work), OUT / "spm.model")
    (OUT / "tokenizer_config.json").write_text('{"do_lower_case": false, "vocab_type": "spm"}\n')
    processor = sentencepiece.SentencePieceProcessor(model_file=str(OUT / "spm.model"))
    with tempfile.TemporaryDirectory() as folder:
        for name in ("spm.model", "tokenizer_config.json"):
            shutil.copy(OUT / name, folder)
        for name in ("config.json", "model.safetensors"):
            shutil.copy(RERANKER / name, folder)
        tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
        model = transformers.AutoModelForSequenceClassification.from_pretrained(folder, attn_implementation="eager")
    model = model.double().eval()
    assert (tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.mask_token_id) == (1, 2, 999)
    reference = {"note": "ids of transformers' DebertaV2Tokenizer over spm.model (= sentencepiece's encode inside "
                         "[CLS] A [SEP] B [SEP]); logits of tiny-deberta-v3-reranker in float64",
                 "transformers": transformers.__version__, "singles": [], "pairs": []}
    for text in SINGLES:
        ids = tokenizer(text)["input_ids"]
        assert ids == [1] + spm_ids(processor, text) + [2], (text, ids)
        reference["singles"].append({"text": text, "ids": ids})
    for first, second in PAIRS:
        encoded = tokenizer(first, second)
        assert encoded["input_ids"] == [1] + spm_ids(processor, first) + [2] + spm_ids(processor, second) + [2]
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([encoded["input_ids"]])).logits
        reference["pairs"].append({"first": first, "second": second, "ids": encoded["input_ids"],
                                   "type_ids": encoded["token_type_ids"], "logits": logits[0].tolist()})
    (OUT / "tokenizer_reference.json").write_text(json.dumps(reference, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {OUT}: spm.model {os.path.getsize(OUT / 'spm.model')} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
