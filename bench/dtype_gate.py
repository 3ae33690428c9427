#!/usr/bin/env python3
"""The numeric half of bench/dtype_gate.sh (which runs stamen and says what this measures):
writes the udhr inputs, compares a float32 run of stamen with its bfloat16 run, and prints the
report. Standard library and numpy only.

    dtype_gate.py inputs CORPUS WORK                    # WORK/texts.txt, languages.txt, pairs.tsv
    dtype_gate.py embeddings RESULTS NAME MODEL WORK FLOAT32 BFLOAT16 TOKEN_IDS
    dtype_gate.py rerank RESULTS NAME MODEL WORK FLOAT32 BFLOAT16
    dtype_gate.py report RESULTS                        # exit status 1 when a real model fails

RESULTS is a JSON-lines file each comparison appends one record to; `report` turns it into the
Markdown table.
"""
import json
import sys
from pathlib import Path

import numpy as np

from udhr_texts import long_texts, read_corpus, spread_lines, write_texts

SHORT_TEXTS = 1200          # udhr lines, every k-th line of the file (≥ 1,000, the gate's count)
RERANK_PAIRS = 200          # short (query, document) pairs, plus one pair per long text
MINIMUM_COSINE = 0.999      # embeddings: every text's cosine to its float32 vector
MAXIMUM_LOGIT_ERROR = 0.02  # rerank: worst |Δlogit| as a fraction of the run's largest |logit|


def write_inputs(corpus, work):
    rows = read_corpus(corpus)
    short, step = spread_lines(rows, SHORT_TEXTS)
    long = long_texts(rows)
    described = write_texts(work, short, long)
    # Rerank pairs: a short text as the query and the text half the sample away as the
    # document (mostly another language), then each long text as a document.
    half = len(short) // 2
    pairs = [(short[i][1], short[(i + half) % len(short)][1]) for i in range(RERANK_PAIRS)]
    pairs += [(short[i][1], text) for i, (_, text) in enumerate(long)]
    Path(work, "pairs.tsv").write_text("".join(f"{query}\t{document}\n" for query, document in pairs), encoding="utf-8")
    print(f"inputs: {described}, the short ones every {step}th of {len(rows)} lines; {len(pairs)} rerank pairs")


def read_vectors(path):
    """One JSON output line per text: a dense array, or an {"id": value} object (SPLADE)."""
    vectors = [json.loads(line) for line in Path(path).read_text().splitlines()]
    if vectors and isinstance(vectors[0], dict):
        width = 1 + max((int(key) for vector in vectors for key in vector), default=0)
        dense = np.zeros((len(vectors), width))
        for row, vector in zip(dense, vectors):
            for key, value in vector.items():
                row[int(key)] = value
        return dense
    return np.asarray(vectors, dtype=np.float64)


def model_facts(model):
    """(family, token window) from the folder's config.json and sentence-transformers config."""
    config = json.loads((Path(model) / "config.json").read_text())
    window = config.get("max_position_embeddings", 0)
    sentence_transformers = Path(model) / "sentence_bert_config.json"
    if sentence_transformers.exists():
        window = min(window or 10**9, json.loads(sentence_transformers.read_text()).get("max_seq_length") or 10**9)
    return config.get("model_type", "?"), window


def append_result(results, record):
    with open(results, "a", encoding="utf-8") as file:
        file.write(json.dumps(record) + "\n")


def compare_embeddings(results, name, model, work, float32_path, bfloat16_path, token_ids_path):
    float32, bfloat16 = read_vectors(float32_path), read_vectors(bfloat16_path)
    if float32.shape[1] != bfloat16.shape[1]:  # sparse vectors: widths from the largest id present
        width = max(float32.shape[1], bfloat16.shape[1])
        float32, bfloat16 = (np.pad(v, ((0, 0), (0, width - v.shape[1]))) for v in (float32, bfloat16))
    languages = Path(work, "languages.txt").read_text(encoding="utf-8").splitlines()
    assert float32.shape == bfloat16.shape and len(float32) == len(languages), (float32.shape, bfloat16.shape)
    norms = np.linalg.norm(float32, axis=1) * np.linalg.norm(bfloat16, axis=1)
    cosines = np.einsum("ij,ij->i", float32, bfloat16) / np.where(norms > 0, norms, 1)
    cosines[norms == 0] = np.where(np.all(float32 == bfloat16, axis=1), 1.0, 0.0)[norms == 0]
    family, window = model_facts(model)
    token_counts = [len(line.split()) for line in Path(token_ids_path).read_text().splitlines()]
    worst = int(np.argmin(cosines))
    passed = bool(np.all(cosines >= MINIMUM_COSINE))
    order = np.argsort(cosines)[:3]
    lowest = ", ".join(f"{cosines[i]:.6f} (text {i}, {languages[i]}, {token_counts[i]} tokens)" for i in order)
    print(f"{name}: {len(cosines)} texts, {sum(count > window for count in token_counts)} past its "
          f"{window}-token window; below {MINIMUM_COSINE}: {int(np.sum(cosines < MINIMUM_COSINE))}; lowest {lowest}")
    append_result(results, {"kind": "embeddings", "name": name, "family": family, "texts": len(cosines),
                            "worst_cosine": float(cosines[worst]), "worst_text": worst,
                            "worst_language": languages[worst], "mean_cosine": float(np.mean(cosines)),
                            "passed": passed})


def read_logits(path):
    """One score per line: a number, or a JSON array of a classifier's logits."""
    return np.asarray([json.loads(line) for line in Path(path).read_text().splitlines()], dtype=np.float64).reshape(-1)


def compare_rerank(results, name, model, work, float32_path, bfloat16_path):
    float32, bfloat16 = read_logits(float32_path), read_logits(bfloat16_path)
    pairs = len(Path(work, "pairs.tsv").read_text(encoding="utf-8").splitlines())
    assert float32.shape == bfloat16.shape, (float32.shape, bfloat16.shape)
    difference = np.abs(bfloat16 - float32)
    largest = float(np.max(np.abs(float32)))
    worst = int(np.argmax(difference))
    relative = difference / np.maximum(np.abs(float32), 1e-30)
    worst_relative = int(np.argmax(relative))
    record = {"kind": "rerank", "name": name, "family": model_facts(model)[0], "pairs": pairs,
              "logit_range": [float(np.min(float32)), float(np.max(float32))],
              "worst_difference": float(difference[worst]), "worst_pair": worst,
              "worst_percent_of_largest": 100 * float(difference[worst]) / largest,
              "worst_relative_percent": 100 * float(relative[worst_relative]),
              "worst_relative_pair": worst_relative, "worst_relative_logit": float(float32[worst_relative]),
              "passed": bool(difference[worst] <= MAXIMUM_LOGIT_ERROR * largest)}
    append_result(results, record)


def report(results):
    records = [json.loads(line) for line in Path(results).read_text().splitlines()]
    print(f"| model | family | texts | worst cosine | mean cosine | result (cosine ≥ {MINIMUM_COSINE} for every text) |")
    print("|---|---|---|---|---|---|")
    for record in records:
        if record["kind"] == "embeddings":
            print(f"| {record['name']} | {record['family']} | {record['texts']} | {record['worst_cosine']:.6f} "
                  f"(text {record['worst_text']}, {record['worst_language']}) | {record['mean_cosine']:.6f} | "
                  f"{'PASS' if record['passed'] else 'FAIL'} |")
    for record in records:
        if record["kind"] == "rerank":
            low, high = record["logit_range"]
            print(f"\nrerank, {record['name']} (RANDOM weights: no real cross-encoder is available here), "
                  f"{record['family']}, {record['pairs']} pairs, float32 logits {low:.4f} to {high:.4f}:\n"
                  f"  worst |Δlogit| {record['worst_difference']:.6f} (pair {record['worst_pair']}) = "
                  f"{record['worst_percent_of_largest']:.3f}% of the largest |logit| -> "
                  f"{'PASS' if record['passed'] else 'FAIL'} (gate: within {100 * MAXIMUM_LOGIT_ERROR:.0f}%)\n"
                  f"  worst plain relative error {record['worst_relative_percent']:.3f}% "
                  f"(pair {record['worst_relative_pair']}, float32 logit {record['worst_relative_logit']:.6f})")
    failed = [record["name"] for record in records if record["kind"] == "embeddings" and not record["passed"]]
    print(f"\ngate: {'FAIL: ' + ', '.join(failed) if failed else 'PASS'} (real-weight embedding models; "
          "the random-weight rerank figures are shown, not counted)")
    return 1 if failed else 0


def main(arguments):
    command, rest = arguments[0], arguments[1:]
    if command == "inputs":
        write_inputs(*rest)
    elif command == "embeddings":
        compare_embeddings(*rest)
    elif command == "rerank":
        compare_rerank(*rest)
    elif command == "report":
        return report(*rest)
    else:
        sys.exit(__doc__)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
