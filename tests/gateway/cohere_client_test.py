"""The official Cohere Python SDK (cohere.ClientV2) against `stamen serve`: `embed` with
embedding_types float, int8, uint8, binary and ubinary must give `stamen embed`'s vectors
(float, within 1e-5) and those vectors quantized as sentence-transformers' quantize_embeddings
defines it (int8/uint8 over the unit range [-1, 1], sign bits packed 8 per byte), the rules
computed here again with numpy; `rerank` against a cross-encoder must give `stamen rerank`'s
scores (sigmoid) in order; errors raise the SDK's own exceptions.

Usage: cohere_client_test.py STAMEN_CLI EMBEDDING_MODEL_DIR CROSS_ENCODER_DIR
"""
import math
import sys

import cohere
import numpy as np

from serve_process import cli_lines, serve

TEXTS = ["Hello world", "The quick brown fox jumps over the lazy dog.", "stamen serves embeddings"]
QUERY = "Where is Paris?"
DOCUMENTS = ["Paris is the capital of France.", "Bananas are yellow.", "The Eiffel tower is in Paris."]


def int8_of_unit_vectors(floats, offset):
    # quantize_embeddings(floats, "int8"|"uint8", ranges=[[-1]*d, [1]*d]), in float32 as it computes.
    starts = np.full(floats.shape[1], -1, np.float32)
    steps = (np.full(floats.shape[1], 1, np.float32) - starts) / 255
    return (np.clip(np.floor((floats - starts) / steps), 0, 255) - offset).astype(np.int64)


def packed_signs(floats, offset):
    return np.packbits(floats > 0, axis=-1).astype(np.int64) - offset


def check(name, ok, detail=""):
    print(f"{name}: {detail}{': ' if detail else ''}{'ok' if ok else 'WRONG'}")
    return 0 if ok else 1


def main() -> int:
    cli, embedder, cross_encoder = sys.argv[1], sys.argv[2], sys.argv[3]
    failures = 0
    expected = np.array(cli_lines(cli, "embed", embedder, TEXTS), dtype=np.float32)
    with serve(cli, embedder, "tiny-minilm") as url:
        client = cohere.ClientV2(base_url=url, api_key="unused")
        response = client.embed(model="tiny-minilm", texts=TEXTS, input_type="search_document",
                                embedding_types=["float", "int8", "uint8", "binary", "ubinary"])
        floats = np.array(response.embeddings.float_, dtype=np.float32)
        worst = float(np.abs(floats - expected).max()) if floats.shape == expected.shape else math.inf
        failures += check("embed float", worst <= 1e-5, f"{floats.shape}, max |difference| vs stamen embed {worst:.2e}")
        for name, want in (("int8", int8_of_unit_vectors(floats, 128)), ("uint8", int8_of_unit_vectors(floats, 0)),
                           ("binary", packed_signs(floats, 128)), ("ubinary", packed_signs(floats, 0))):
            got = np.array(getattr(response.embeddings, name), dtype=np.int64)
            failures += check(f"embed {name}", got.shape == want.shape and bool((got == want).all()),
                              f"{got.shape}, {int((got != want).sum()) if got.shape == want.shape else '?'} values differ")
        # The int8 vectors keep the float ranking of the texts against the first one.
        int8 = np.array(response.embeddings.int8, dtype=np.float64)
        failures += check("int8 ranking", list(np.argsort(-(int8 @ int8[0]))) == list(np.argsort(-(floats @ floats[0]))))
        failures += check("texts and billed units", response.texts == TEXTS and response.meta.billed_units.input_tokens > 0,
                          f"{response.meta.billed_units.input_tokens} input tokens")

        # inputs of text content, output_dimension, and Cohere's errors as the SDK's exceptions.
        cut = client.embed(model="tiny-minilm", input_type="search_query", output_dimension=64,
                           inputs=[{"content": [{"type": "text", "text": TEXTS[0]}]}], embedding_types=["float"])
        vector = np.array(cut.embeddings.float_[0])
        failures += check("output_dimension 64", vector.shape == (64,) and abs(np.linalg.norm(vector) - 1) < 1e-5)
        try:
            client.embed(model="tiny-minilm", texts=TEXTS, input_type="search_query", output_dimension=4096)
            failures += check("output_dimension over the width", False, "accepted")
        except cohere.BadRequestError as error:
            failures += check("output_dimension over the width", "exceeds the model's 384" in error.body["message"],
                              f"{error.status_code} {error.body}")

    scores = [float(line) for line in cli_lines(cli, "rerank", cross_encoder, [f"{QUERY}\t{d}" for d in DOCUMENTS])]
    probabilities = [1 / (1 + math.exp(-s)) for s in scores]
    order = sorted(range(len(DOCUMENTS)), key=lambda i: -probabilities[i])
    with serve(cli, cross_encoder, "tiny-ms-marco") as url:
        client = cohere.ClientV2(base_url=url, api_key="unused")
        response = client.rerank(model="tiny-ms-marco", query=QUERY, documents=DOCUMENTS, top_n=2)
        got = [(result.index, result.relevance_score) for result in response.results]
        ok = [index for index, _ in got] == order[:2] and all(abs(score - probabilities[index]) <= 1e-5 for index, score in got)
        failures += check("rerank", ok, f"{got} vs stamen rerank {[(i, round(probabilities[i], 6)) for i in order]}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
