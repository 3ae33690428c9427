#!/usr/bin/env python3
"""Tiny static embedding folders (issue 44) with reference vectors from their own libraries.

    .venv-heavy/bin/python tools/make_static_goldens.py tests/engine/data

Writes four folders under the given directory, each with `reference.json`:

- `tiny-model2vec`: a model2vec folder as StaticModel.save_pretrained writes it (config.json with
  "model_type": "model2vec", "normalize": true, "max_length": 16; model.safetensors "embeddings"
  [vocab, 24] F32; tokenizer.json; modules.json), the tokenizer a small WordPiece (lowercasing
  BERT normalizer, [UNK]) trained with HF tokenizers on ../shared/corpus/botchan.txt.
- `tiny-model2vec-quantized`: the same tokenizer with model2vec's vocabulary quantisation layout:
  "embeddings" [40, 24], "mapping" [vocab] (I64, token id -> row) and "weights" [vocab] (F32),
  "normalize": false and no max_length (model2vec's default, 512).
- `tiny-static-embedding`: a sentence-transformers folder (SentenceTransformer.save) of a
  StaticEmbedding module (model.safetensors "embedding.weight" and tokenizer.json at the root, as
  sentence-transformers 6 saves a first module; older versions used 0_StaticEmbedding/) followed
  by Normalize.
- `tiny-static-embedding-truncated`: the same with truncation to 16 tokens in its tokenizer.json
  (as a tokenizer saved by model2vec carries it), which StaticEmbedding's tokenizer applies.

reference.json: {"library", "versions", "texts", "ids" (the ids the library averages, per text),
"raw" (vectors without normalisation), "normalized"}: for the model2vec folders
StaticModel.from_pretrained(folder).encode(texts, normalize=False / True) (its default max_length
from the config, the character cut, the unknown-token drop); for the sentence-transformers
folder SentenceTransformer(folder).encode(texts) with and without its Normalize module. The
texts include unknown tokens, text with no known token (the zero vector), and texts longer than
max_length tokens and than max_length * median piece length characters (one whose character cut
leaves fewer than max_length tokens).
"""
import json
import pathlib
import sys

import numpy as np
import model2vec
import sentence_transformers
import tokenizers
import torch
from model2vec import StaticModel
from safetensors.numpy import save_file
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.modules import Normalize, StaticEmbedding
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

ROOT = pathlib.Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus" / "botchan.txt"
VOCAB = 600
DIM = 24


def make_tokenizer():
    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(vocab_size=VOCAB, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]"])
    lines = [line for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]
    tokenizer.train_from_iterator(lines, trainer)
    return tokenizer


def texts():
    botchan = CORPUS.read_text(encoding="utf-8")
    long_text = " ".join(botchan.split())[:6000]  # > 512 tokens and > 512 * median characters
    return [
        "The quick brown fox jumps over the lazy dog.",
        "Human rights are universal, and everyone is entitled to them.",
        "HELLO, World!!! Café naïve résumé",
        "日本語のテキスト ☃ mixed with some english words",  # unknown pieces among known ones
        "☃☃ ❄ 日本",  # only unknown tokens: the zero vector
        " ",  # no token at all
        "a",
        ("the" + " " * 20) * 12,  # model2vec's character cut (16 * 4) leaves 3 of its 12 tokens
        long_text[:300],  # beyond max_length 16 in tokens and characters
        long_text,
    ]


def versions():
    return {"model2vec": model2vec.__version__, "sentence_transformers": sentence_transformers.__version__,
            "tokenizers": tokenizers.__version__, "torch": torch.__version__, "numpy": np.__version__}


def model2vec_ids(model, text_list):
    """The ids StaticModel.encode averages: its character cut, token cut and unknown-token drop."""
    m = model.max_length * model.median_token_length if model.max_length is not None else None
    cut = [text[:m] if m is not None else text for text in text_list]
    model._set_max_length_in_tokenizer(model.max_length)
    return model.tokenize(cut)


def write_reference(folder, library, text_list, ids, raw, normalized):
    reference = {"library": library, "versions": versions(), "texts": text_list, "ids": ids,
                 "raw": [[float(v) for v in row] for row in np.asarray(raw, dtype=np.float32)],
                 "normalized": [[float(v) for v in row] for row in np.asarray(normalized, dtype=np.float32)]}
    (folder / "reference.json").write_text(json.dumps(reference, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def make_model2vec(out, tokenizer, rng):
    folder = out / "tiny-model2vec"
    vocab = tokenizer.get_vocab_size()
    embeddings = rng.standard_normal((vocab, DIM)).astype(np.float32)
    model = StaticModel(vectors=embeddings, tokenizer=tokenizer, normalize=True, max_length=16,
                        config={"model_type": "model2vec", "architectures": ["StaticModel"], "hidden_dim": DIM})
    model.save_pretrained(folder)
    (folder / "README.md").unlink(missing_ok=True)
    loaded = StaticModel.from_pretrained(folder)
    assert loaded.max_length == 16 and loaded.normalize
    text_list = texts()
    write_reference(folder, "model2vec", text_list, model2vec_ids(loaded, text_list),
                    loaded.encode(text_list, normalize=False), loaded.encode(text_list))
    return loaded.median_token_length


def make_model2vec_quantized(out, tokenizer, rng):
    folder = out / "tiny-model2vec-quantized"
    folder.mkdir(parents=True, exist_ok=True)
    vocab = tokenizer.get_vocab_size()
    rows = 40
    save_file({"embeddings": rng.standard_normal((rows, DIM)).astype(np.float32),
               "mapping": rng.integers(0, rows, size=vocab).astype(np.int64),
               "weights": rng.uniform(0.2, 2.0, size=vocab).astype(np.float32)},
              str(folder / "model.safetensors"))
    tokenizer.save(str(folder / "tokenizer.json"), pretty=False)
    config = {"model_type": "model2vec", "architectures": ["StaticModel"], "hidden_dim": DIM, "normalize": False,
              "embedding_dtype": "float32", "vocabulary_quantization": rows}
    (folder / "config.json").write_text(json.dumps(config, indent=4) + "\n")
    loaded = StaticModel.from_pretrained(folder)
    assert loaded.max_length == 512 and not loaded.normalize and loaded.token_mapping is not None
    text_list = texts()
    write_reference(folder, "model2vec", text_list, model2vec_ids(loaded, text_list),
                    loaded.encode(text_list), loaded.encode(text_list, normalize=True))


def make_static_embedding(out, tokenizer, rng, name="tiny-static-embedding", truncation=None):
    folder = out / name
    vocab = tokenizer.get_vocab_size()
    weights = rng.standard_normal((vocab, DIM)).astype(np.float32)
    module_tokenizer = Tokenizer.from_str(tokenizer.to_str())
    if truncation is not None:
        module_tokenizer.enable_truncation(truncation)  # kept in tokenizer.json, and so by StaticEmbedding
    static = StaticEmbedding(module_tokenizer, embedding_weights=weights)
    model = SentenceTransformer(modules=[static, Normalize()], device="cpu")
    model.save(str(folder))
    (folder / "README.md").unlink(missing_ok=True)
    loaded = SentenceTransformer(str(folder), device="cpu")
    assert [type(module).__name__ for module in loaded] == ["StaticEmbedding", "Normalize"]
    text_list = texts()
    ids = [encoding.ids for encoding in loaded[0].tokenizer.encode_batch(text_list, add_special_tokens=False)]
    raw_model = SentenceTransformer(modules=[loaded[0]], device="cpu")
    write_reference(folder, "sentence-transformers", text_list, ids,
                    raw_model.encode(text_list, convert_to_numpy=True), loaded.encode(text_list, convert_to_numpy=True))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = pathlib.Path(sys.argv[1])
    rng = np.random.default_rng(20261206)
    tokenizer = make_tokenizer()
    median = make_model2vec(out, tokenizer, rng)
    make_model2vec_quantized(out, tokenizer, rng)
    make_static_embedding(out, tokenizer, rng)
    make_static_embedding(out, tokenizer, rng, "tiny-static-embedding-truncated", truncation=16)
    print(f"vocabulary {tokenizer.get_vocab_size()}, median piece length {median}")


if __name__ == "__main__":
    main()
