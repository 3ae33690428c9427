"""Hugging Face's own client, `huggingface_hub.InferenceClient(base_url)`, against
`stamen serve` as against Text Embeddings Inference: all its tasks post to the base URL.

- embedding model: `feature_extraction` gives what `stamen embed` prints;
  `sentence_similarity` gives the cosines of those vectors, computed here;
- cross-encoder: `text_classification` answers the classifier's label, and /predict on
  pairs gives the sigmoid of what `stamen rerank` prints (raw_scores: the logits);
- /decode gives what the `tokenizers` library decodes for the same ids;
- errors have TEI's shape {"error", "error_type"} and status codes.

Usage: huggingface_client_test.py STAMEN_CLI EMBEDDING_MODEL_DIR CROSS_ENCODER_DIR
"""
import math
import os
import sys

import numpy
import tokenizers
from huggingface_hub import InferenceClient
from huggingface_hub.errors import HfHubHTTPError

from serve_process import cli_lines, post, serve

TEXTS = ["Hello world", "The quick brown fox jumps over the lazy dog.", "stamen serves embeddings", "A fox, quickly."]
PAIRS = [("where is paris?", "Paris is the capital of France."), ("where is paris?", "Bananas are yellow."),
         ("how fast is a fox", "The quick brown fox jumps over the lazy dog.")]
TOLERANCE = 1e-5


class Checks:
    def __init__(self):
        self.failures = 0

    def expect(self, ok, what):
        print(f"{what}: {'ok' if ok else 'FAILED'}")
        self.failures += not ok


def is_tei_error(body, error_type):
    return isinstance(body, dict) and isinstance(body.get("error"), str) and body.get("error_type") == error_type


def cosine(a, b):
    a, b = numpy.asarray(a, dtype=numpy.float64), numpy.asarray(b, dtype=numpy.float64)
    return float(a @ b / (numpy.linalg.norm(a) * numpy.linalg.norm(b)))


def check_embedding_model(cli, model, checks):
    expected = cli_lines(cli, "embed", model, TEXTS)
    reference = tokenizers.Tokenizer.from_file(os.path.join(model, "tokenizer.json"))
    reference.no_padding()  # the file pads to 128; /decode gets the ids without
    with serve(cli, model, "tiny-minilm") as url:
        client = InferenceClient(base_url=url)
        for text, want in zip(TEXTS, expected):
            got = client.feature_extraction(text)
            worst = float(numpy.max(numpy.abs(got.reshape(-1) - numpy.asarray(want))))
            checks.expect(got.shape == (1, len(want)) and worst <= TOLERANCE,
                          f"feature_extraction({text!r}): shape {got.shape}, max |difference| vs stamen embed {worst:.2e}")

        similarities = client.sentence_similarity(TEXTS[0], other_sentences=TEXTS[1:])
        cosines = [cosine(expected[0], vector) for vector in expected[1:]]
        worst = max(abs(a - b) for a, b in zip(similarities, cosines))
        checks.expect(len(similarities) == len(TEXTS) - 1 and worst <= TOLERANCE,
                      f"sentence_similarity: {len(similarities)} scores, max |difference| vs cosines of stamen embed {worst:.2e}")
        status, answer = post(url, "/similarity", {"inputs": {"source_sentence": TEXTS[1], "sentences": [TEXTS[3]]}})
        checks.expect(status == 200 and abs(answer[0] - cosine(expected[1], expected[3])) <= TOLERANCE,
                      f"POST /similarity -> {status} {answer}")

        for text in TEXTS:
            ids = reference.encode(text).ids
            for skip in (True, False):
                status, answer = post(url, "/decode", {"ids": ids, "skip_special_tokens": skip})
                want = reference.decode(ids, skip_special_tokens=skip)
                checks.expect(status == 200 and answer == [want],
                              f"/decode skip_special_tokens={skip} -> {answer}, tokenizers: {want!r}")
        batch = [reference.encode(text).ids for text in TEXTS[:2]]
        status, answer = post(url, "/decode", {"ids": batch})
        checks.expect(status == 200 and answer == reference.decode_batch(batch, skip_special_tokens=True),
                      f"/decode of a batch -> {answer}")

        try:
            client.feature_extraction("")
            checks.expect(False, "feature_extraction('') was accepted")
        except HfHubHTTPError as error:
            body = error.response.json()
            checks.expect(error.response.status_code == 400 and is_tei_error(body, "Validation"),
                          f"feature_extraction('') -> {error.response.status_code} {body}")
        status, answer = post(url, "/predict", {"inputs": "a text"})
        checks.expect(status == 400 and is_tei_error(answer, "Validation"), f"/predict on an embedding model -> {status} {answer}")


def check_cross_encoder(cli, model, checks):
    logits = cli_lines(cli, "rerank", model, [f"{query}\t{document}" for query, document in PAIRS])
    with serve(cli, model, "tiny-cross-encoder") as url:
        client = InferenceClient(base_url=url)
        # TEI answers a single text with a flat list of predictions: the client takes the best.
        best = client.text_classification("Paris is the capital of France.")
        status, answer = post(url, "/predict", {"inputs": "Paris is the capital of France."})
        checks.expect(best.label == "LABEL_0" and 0 < best.score < 1 and status == 200 and len(answer) == 1 and
                      abs(answer[0]["score"] - best.score) <= TOLERANCE,
                      f"text_classification -> {best}; /predict -> {answer}")

        status, answer = post(url, "/predict", {"inputs": [list(pair) for pair in PAIRS]})
        sigmoids = [1 / (1 + math.exp(-logit)) for logit in logits]
        ok = status == 200 and len(answer) == len(PAIRS) and all(
            len(predictions) == 1 and predictions[0]["label"] == "LABEL_0" and
            abs(predictions[0]["score"] - want) <= TOLERANCE for predictions, want in zip(answer, sigmoids))
        checks.expect(ok, f"/predict of {len(PAIRS)} pairs vs sigmoid of stamen rerank {sigmoids} -> {answer}")
        status, answer = post(url, "/predict", {"inputs": list(PAIRS[0]), "raw_scores": True})
        checks.expect(status == 200 and abs(answer[0]["score"] - logits[0]) <= TOLERANCE,
                      f"/predict of one pair, raw_scores, vs stamen rerank {logits[0]} -> {answer}")

        status, answer = post(url, "/", {"query": PAIRS[0][0], "texts": [PAIRS[0][1], PAIRS[1][1]], "raw_scores": True})
        scores = [item["score"] for item in answer] if status == 200 else []
        ok = status == 200 and len(answer) == 2 and scores == sorted(scores, reverse=True) and all(
            abs(item["score"] - logits[item["index"]]) <= TOLERANCE for item in answer)
        checks.expect(ok, f"POST / with a query (rerank) vs stamen rerank -> {answer}")

        status, answer = post(url, "/predict", {"inputs": [["only one"]]})
        checks.expect(status == 400 and is_tei_error(answer, "Validation"), f"/predict of a one-text pair -> {status} {answer}")
        status, answer = post(url, "/similarity", {"inputs": {"source_sentence": "a", "sentences": ["b"]}})
        checks.expect(status == 400 and is_tei_error(answer, "Validation"), f"/similarity on a cross-encoder -> {status} {answer}")


def main() -> int:
    cli, embedding_model, cross_encoder = sys.argv[1:4]
    checks = Checks()
    check_embedding_model(cli, embedding_model, checks)
    check_cross_encoder(cli, cross_encoder, checks)
    return 1 if checks.failures else 0


if __name__ == "__main__":
    sys.exit(main())
