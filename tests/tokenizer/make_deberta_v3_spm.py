#!/usr/bin/env python3
"""Builds tests/tokenizer/data/deberta-v3-spm/: a DeBERTa-v3 model folder's tokenizer as the Hub
ships it without tokenizer.json (spm.model, tokenizer_config.json, special_tokens_map.json,
added_tokens.json, written by transformers 4's slow DebertaV2Tokenizer.save_pretrained, as
fine-tunes saved from the slow tokenizer hold them), and expected.jsonl: the ids that transformers
4's DebertaV2Tokenizer (slow: sentencepiece's own encoder) and DebertaV2TokenizerFast (converted
from spm.model by DebertaV2Converter) give for udhr lines in many languages and for edge cases,
singles and pairs, some pairs truncated.

No real deberta-v3 spm.model can be fetched here (no model hub; PyPI's `deberta` package does
not bundle one), so a small SentencePiece Unigram model is trained on udhr.tsv with DeBERTa-v3's
layout: [PAD] 0, [CLS] 1, [SEP] 2 (control pieces), [UNK] 3 (the unknown piece), nmt_nfkc
normalization (its precompiled charsmap in the model), no byte fallback; [MASK] is added by the
tokenizer after the vocabulary, as microsoft/deberta-v3-base's added_tokens.json has it
({"[MASK]": 128000}). The same cases through a folder with only spm.model and
microsoft/deberta-v3-base's tokenizer_config.json ({"do_lower_case": false, "vocab_type": "spm"})
give the same ids (asserted here).

Each expected.jsonl line: {"first": text, "second": text (pairs), "max_length": n (truncated
pairs, longest_first), "fast": ids, "type_ids": ids (pairs), "slow": ids (only where the slow
tokenizer differs from the fast one)}.

Usage: make_deberta_v3_spm.py OUTPUT_DIR
Run with transformers 4 (the last version with the slow, sentencepiece-based tokenizer):
  python3 -m venv /tmp/venv-t4 && /tmp/venv-t4/bin/pip install "transformers<5" sentencepiece protobuf
"""
import json
import os
import shutil
import sys
import tempfile

import sentencepiece
import transformers
from transformers import DebertaV2Tokenizer, DebertaV2TokenizerFast

HERE = os.path.dirname(os.path.abspath(__file__))
UDHR = os.path.join(HERE, "..", "..", "..", "shared", "corpus", "udhr.tsv")
# Scripts the model learns pieces for; the other languages' lines still appear in the
# expected ids (mostly familiar Latin pieces, some [UNK]).
TRAINING_LANGUAGES = ("en", "fr", "de-1996", "es", "it", "pt-PT", "ru", "el-monoton", "ar", "hi", "zh", "ja", "ko",
                      "tr", "pl", "vi")
VOCABULARY_SIZE = 4000

EDGE_CASES = [
    "", " ", "   ", "\t", "\n", "\r\n", " \t\n ", "a\tb\nc\r\nd", "  leading spaces", "trailing spaces  ",
    "multiple   spaces   inside", "tab\t\tand\n\nnewlines", "Amélie", "Ame\u0301lie", "\u0301", "naïve café résumé",
    "ﬁnance ﬂow", "Ｆｕｌｌ\u3000ｗｉｄｔｈ", "①②③ ⅷ ㎏ ㍿", "\u00a0non-breaking\u00a0space", "zero\u200bwidth",
    "\u3000ideographic space\u3000", "日本語のテキストです。", "中文测试，标点！", "한국어 텍스트", "ภาษาไทย",
    "emoji 😀👍🏽 🇫🇷 👨‍👩‍👧", "😀", "[MASK]", "Hello [MASK] world", "a[MASK]b", " [MASK] ", "[MASK][MASK]",
    "[CLS] x [SEP]", "[UNK]", "unknown [UNK] token", "[PAD]", "[mask]", "[ MASK ]", "a" * 300,
    "supercalifragilisticexpialidocious" * 12, "x" * 1000, "İstanbul ΣΑΣ ß ǅ", "1234567890 3.14159 1,000,000",
    "https://example.com/path?q=1&r=2", "e-mail: someone@example.org", "C++ & C# vs. F#!", "«guillemets» „quotes“",
    "control\x01chars\x7f", "\ufeffbom", "ends with newline\n", "\n\nstarts with newlines", "Ǆ ǈ ǋ", "ℌℍℎ ™ ℃",
    "‥ … ‼", "hello  world\tand\nmore   spaces   ", "What is the capital of France?",
]


def udhr_lines():
    by_language = {}
    with open(UDHR, encoding="utf-8") as f:
        for line in f:
            language, _, text = line.rstrip("\n").partition("\t")
            by_language.setdefault(language, []).append(text)
    return by_language


def train(by_language, work):
    corpus = os.path.join(work, "corpus.txt")
    with open(corpus, "w", encoding="utf-8") as f:
        for language in TRAINING_LANGUAGES:
            f.write("\n".join(by_language[language]) + "\n")
    prefix = os.path.join(work, "spm")
    sentencepiece.SentencePieceTrainer.train(
        input=corpus, model_prefix=prefix, vocab_size=VOCABULARY_SIZE, model_type="unigram",
        character_coverage=0.9995, normalization_rule_name="nmt_nfkc", byte_fallback=False,
        pad_id=0, bos_id=1, eos_id=2, unk_id=3, pad_piece="[PAD]", bos_piece="[CLS]", eos_piece="[SEP]",
        unk_piece="[UNK]", num_threads=1, minloglevel=2)
    return prefix + ".model"


def cases(by_language):
    """(first, second, max_length) triples: edge cases, one udhr line in every 40 (all
    languages, at most 300 characters), pairs of neighbouring lines, some truncated."""
    singles = list(EDGE_CASES)
    lines = [text for language in sorted(by_language) for text in by_language[language]]
    sampled = [text for text in lines[::40] if len(text) <= 300]
    singles += sampled
    result = [(text, None, 0) for text in singles]
    for index in range(0, len(sampled) - 1, 6):
        result.append((sampled[index], sampled[index + 1], 0))
    for index in range(2, len(sampled) - 1, 16):
        result.append((sampled[index], sampled[index + 1], 48))
    edge_pairs = [("What is the capital of France?", "Paris is the capital of France."), ("[MASK]", "a [MASK] b"),
                  ("  spaced  ", "\ttabbed\n"), ("日本語", "中文"), ("😀", "emoji 👍🏽")]
    result += [(first, second, 0) for first, second in edge_pairs]
    result += [(first, second, 8) for first, second in edge_pairs]
    return result


def encode(tokenizer, first, second, max_length):
    options = {"truncation": "longest_first", "max_length": max_length} if max_length else {}
    encoded = tokenizer(first, second, **options) if second is not None else tokenizer(first, **options)
    return encoded["input_ids"], encoded["token_type_ids"]


def main() -> int:
    output = sys.argv[1]
    os.makedirs(output, exist_ok=True)
    by_language = udhr_lines()
    with tempfile.TemporaryDirectory() as work:
        model_file = train(by_language, work)
        DebertaV2Tokenizer(vocab_file=model_file).save_pretrained(output)
    assert not os.path.exists(os.path.join(output, "tokenizer.json"))
    slow = DebertaV2Tokenizer.from_pretrained(output)
    fast = DebertaV2TokenizerFast.from_pretrained(output)  # DebertaV2Converter over spm.model
    assert (slow.pad_token_id, slow.cls_token_id, slow.sep_token_id, slow.unk_token_id) == (0, 1, 2, 3)
    assert slow.mask_token_id == fast.mask_token_id == VOCABULARY_SIZE
    # microsoft/deberta-v3-base's own tokenizer_config.json, alone beside spm.model, gives the
    # same tokenizer: the test reads the fixture that way too.
    with tempfile.TemporaryDirectory() as minimal:
        shutil.copy(os.path.join(output, "spm.model"), minimal)
        with open(os.path.join(minimal, "tokenizer_config.json"), "w") as f:
            f.write('{"do_lower_case": false, "vocab_type": "spm"}')
        minimal_fast = DebertaV2TokenizerFast.from_pretrained(minimal)
        minimal_slow = DebertaV2Tokenizer.from_pretrained(minimal)
        for first, second, max_length in cases(by_language):
            assert encode(minimal_fast, first, second, max_length) == encode(fast, first, second, max_length)
            assert encode(minimal_slow, first, second, max_length) == encode(slow, first, second, max_length)
    differ = total = 0
    with open(os.path.join(output, "expected.jsonl"), "w", encoding="utf-8") as f:
        for first, second, max_length in cases(by_language):
            fast_ids, type_ids = encode(fast, first, second, max_length)
            slow_ids, slow_types = encode(slow, first, second, max_length)
            entry = {"first": first}
            if second is not None:
                entry["second"] = second
            if max_length:
                entry["max_length"] = max_length
            entry["fast"] = fast_ids
            if second is not None:
                entry["type_ids"] = type_ids
            if slow_ids != fast_ids or slow_types != type_ids:
                entry["slow"] = slow_ids
                differ += 1
            total += 1
            f.write(json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n")
    print(f"transformers {transformers.__version__}: {total} cases, slow differs from fast on {differ}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
