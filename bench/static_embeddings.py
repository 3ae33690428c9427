#!/usr/bin/env python3
"""Static embeddings (issue 44): `stamen embed` against model2vec's own StaticModel.encode, both
on one thread, on the same texts, with the vectors compared.

    taskset -c 1 .venv-heavy/bin/python bench/static_embeddings.py [--lines N] [--stamen build/release/apps/stamen]

The model: a model2vec folder (as StaticModel.save_pretrained writes it) with the real
all-MiniLM-L6-v2 WordPiece tokenizer.json (30,522 ids, the tokenizer of model2vec's own
distillations of it) and a random F32 table of 256 dimensions, normalize true, max_length 512,
written to a temporary folder. A distilled table would cost the same: the work is the
tokenization and the mean of the rows, whatever their values. (model2vec.distill itself needs
transformers < 5.4, which .venv-heavy does not have.)

The texts: the first N lines of ../shared/corpus/udhr.tsv (the Universal Declaration in 478
languages, one paragraph a line; many scripts, so many unknown tokens), the language column
dropped.

model2vec: encode(texts, use_multiprocessing=False) after one warm-up call, tokenizers' Rayon
pool held to one thread (RAYON_NUM_THREADS=1, TOKENIZERS_PARALLELISM=false) and the process
pinned by taskset. stamen: `stamen embed --threads 1` reading the texts on stdin and printing
JSON vectors, timed whole (process start, model load and JSON printing included), with the
start-up measured alone (one line) subtracted for the steady rate, and again with
`--dimensions 1` (one component printed per text: the tokenization, gather, mean and
normalisation without the printing of 256 floats a text, which model2vec's encode, returning
an array, does not do). Rates are texts/s; the vectors compared are the full run's.
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import model2vec  # noqa: E402
import tokenizers  # noqa: E402
from model2vec import StaticModel  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus" / "udhr.tsv"
TOKENIZER = ROOT.parent / "shared" / "models" / "configs" / "all-MiniLM-L6-v2" / "tokenizer.json"


def make_folder(folder):
    tokenizer = Tokenizer.from_file(str(TOKENIZER))
    rng = np.random.default_rng(44)
    table = rng.standard_normal((tokenizer.get_vocab_size(), 256)).astype(np.float32)
    model = StaticModel(vectors=table, tokenizer=tokenizer, normalize=True, max_length=512,
                        config={"model_type": "model2vec", "architectures": ["StaticModel"], "hidden_dim": 256})
    model.save_pretrained(folder)


def read_texts(lines):
    texts = []
    with open(CORPUS, encoding="utf-8") as corpus:
        for line in corpus:
            text = line.rstrip("\n").split("\t", 1)[-1].strip()
            if text:
                texts.append(text)
            if len(texts) == lines:
                break
    return texts


def run_stamen(stamen, folder, texts, extra=()):
    start = time.perf_counter()
    result = subprocess.run([stamen, "embed", "--model", folder, "--threads", "1", *extra],
                            input="\n".join(texts) + "\n", capture_output=True, text=True, check=True)
    return time.perf_counter() - start, result.stdout


def best_steady(stamen, folder, texts, repeats, extra=()):
    """Best whole-process seconds, best start-up seconds (one line), and the output of the best run."""
    startup = min(run_stamen(stamen, folder, texts[:1], extra)[0] for _ in range(repeats))
    best, output = float("inf"), ""
    for _ in range(repeats):
        seconds, printed = run_stamen(stamen, folder, texts, extra)
        if seconds < best:
            best, output = seconds, printed
    return best, startup, output


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=20000)
    parser.add_argument("--stamen", default=str(ROOT / "build" / "release" / "apps" / "stamen"))
    parser.add_argument("--repeats", type=int, default=3, help="best of this many runs on each side")
    args = parser.parse_args()
    texts = read_texts(args.lines)
    characters = sum(len(text) for text in texts)
    with tempfile.TemporaryDirectory() as scratch:
        folder = str(pathlib.Path(scratch) / "minilm-tokenizer-model2vec")
        make_folder(folder)
        model = StaticModel.from_pretrained(folder)
        model.encode(texts[:100], use_multiprocessing=False)  # warm-up
        python_seconds = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            reference = model.encode(texts, use_multiprocessing=False)
            python_seconds.append(time.perf_counter() - start)

        stamen_seconds, startup, output = best_steady(args.stamen, folder, texts, args.repeats)
        # The same work with one component printed per text: the JSON printing of 256 floats
        # per text (which model2vec's encode, returning an array, does not do) left out.
        quiet_seconds, quiet_startup, _ = best_steady(args.stamen, folder, texts, args.repeats, ("--dimensions", "1"))

    vectors = np.array([json.loads(line) for line in output.splitlines()], dtype=np.float64)
    reference = reference.astype(np.float64)
    assert vectors.shape == reference.shape, (vectors.shape, reference.shape)
    norms = np.linalg.norm(vectors, axis=1) * np.linalg.norm(reference, axis=1)
    nonzero = norms > 0
    cosines = np.sum(vectors * reference, axis=1)[nonzero] / norms[nonzero]
    python_rate = len(texts) / min(python_seconds)
    stamen_rate = len(texts) / stamen_seconds
    steady_rate = len(texts) / max(stamen_seconds - startup, 1e-9)
    quiet_rate = len(texts) / max(quiet_seconds - quiet_startup, 1e-9)
    print(json.dumps({
        "texts": len(texts), "characters": characters,
        "versions": {"model2vec": model2vec.__version__, "tokenizers": tokenizers.__version__, "numpy": np.__version__},
        "model2vec_seconds": min(python_seconds), "model2vec_texts_per_second": round(python_rate, 1),
        "stamen_seconds_whole_process": stamen_seconds, "stamen_startup_seconds": startup,
        "stamen_texts_per_second_whole_process": round(stamen_rate, 1),
        "stamen_texts_per_second_steady": round(steady_rate, 1),
        "stamen_texts_per_second_steady_without_printing": round(quiet_rate, 1),
        "speedup_whole_process": round(stamen_rate / python_rate, 2),
        "speedup_steady": round(steady_rate / python_rate, 2),
        "speedup_steady_without_printing": round(quiet_rate / python_rate, 2),
        "zero_vectors": int((~nonzero).sum()), "zero_vectors_agree": bool(np.all(np.abs(vectors[~nonzero]) < 1e-6)),
        "min_cosine": float(cosines.min()), "max_abs_error": float(np.abs(vectors - reference).max()),
    }, indent=1))


if __name__ == "__main__":
    sys.exit(main())
