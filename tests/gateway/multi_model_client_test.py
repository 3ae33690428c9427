"""Two models behind one server: an embedding model ("minilm") and a cross-encoder ("ranker"),
first behind one `stamen serve --models FILE`, then behind one `stamen-gateway` (the gateway
without the engine) in front of a `stamen worker` per model. The official OpenAI and Cohere SDKs and plain
HTTP reach each model by name (the "model" field, or the path /models/NAME/…), and each
answer must equal what the single-model CLI (`stamen embed`, `stamen rerank`) gives, within
1e-5; an unknown model is OpenAI's 404 model_not_found, naming the models served.

Usage: multi_model_client_test.py STAMEN_CLI EMBEDDING_MODEL_DIR CROSS_ENCODER_DIR
"""
import contextlib
import json
import math
import os
import sys
import tempfile
import urllib.request

import cohere
import numpy as np
import openai

from serve_process import HTTP_LISTENING, cli_lines, post, stamen_process

TEXTS = ["Hello world", "The quick brown fox jumps over the lazy dog.", "stamen serves embeddings"]
QUERY = "Where is Paris?"
DOCUMENTS = ["Paris is the capital of France.", "Bananas are yellow.", "The Eiffel tower is in Paris."]


def check(name, ok, detail=""):
    print(f"{name}: {detail}{': ' if detail else ''}{'ok' if ok else 'WRONG'}")
    return 0 if ok else 1


def get(url, path):
    with urllib.request.urlopen(url + path) as answer:
        return answer.read().decode()


def worst_difference(got, want):
    got, want = np.array(got, dtype=np.float64), np.array(want, dtype=np.float64)
    return float(np.abs(got - want).max()) if got.shape == want.shape else math.inf


@contextlib.contextmanager
def serve_two(cli, embedder, cross_encoder):
    """`stamen serve --models FILE` with both models, one engine thread each."""
    with tempfile.TemporaryDirectory() as folder:
        listing = os.path.join(folder, "models.json")
        with open(listing, "w") as file:
            json.dump({"models": [{"name": "minilm", "model": embedder, "threads": 1},
                                  {"name": "ranker", "model": cross_encoder, "threads": 1}]}, file)
        with stamen_process(cli, ["serve", "--models", listing, "--port", "0"], HTTP_LISTENING) as port:
            yield f"http://127.0.0.1:{port}"


@contextlib.contextmanager
def gateway_two(cli, embedder, cross_encoder):
    """`stamen-gateway` (the gateway without the engine) with both models, each in front of its
    own `stamen worker`: the embedder's given in the --models file, the reranker's by
    --workers ranker=…."""
    worker = ["worker", "--listen", "127.0.0.1:0", "--threads", "1", "--model"]
    grpc = r"over gRPC on 127\.0\.0\.1:(\d+)"
    gateway_program = os.path.join(os.path.dirname(cli), "stamen-gateway")
    with tempfile.TemporaryDirectory() as folder, \
            stamen_process(cli, worker + [embedder], grpc) as minilm_port, \
            stamen_process(cli, worker + [cross_encoder], grpc) as ranker_port:
        listing = os.path.join(folder, "models.json")
        with open(listing, "w") as file:
            json.dump([{"name": "minilm", "model": embedder, "workers": [f"127.0.0.1:{minilm_port}"]},
                       {"name": "ranker", "model": cross_encoder}], file)
        with stamen_process(gateway_program, ["--port", "0", "--models", listing, "--workers",
                                              f"ranker=127.0.0.1:{ranker_port}"], HTTP_LISTENING) as port:
            yield f"http://127.0.0.1:{port}"


def check_server(url, where, vectors, probabilities):
    failures = 0
    client = openai.OpenAI(base_url=url + "/v1", api_key="unused")
    listed = [model.id for model in client.models.list().data]
    failures += check(f"{where}: models.list", listed == ["minilm", "ranker"], str(listed))
    response = client.embeddings.create(model="minilm", input=TEXTS)
    worst = worst_difference([item.embedding for item in response.data], vectors)
    failures += check(f"{where}: OpenAI embeddings of minilm", worst <= 1e-5 and response.model == "minilm",
                      f"max |difference| vs stamen embed {worst:.2e}")
    try:
        client.embeddings.create(model="text-embedding-3-small", input=TEXTS)
        failures += check(f"{where}: OpenAI embeddings of an unknown model", False, "accepted")
    except openai.NotFoundError as error:
        ok = error.code == "model_not_found" and "'minilm', 'ranker'" in error.message
        failures += check(f"{where}: OpenAI embeddings of an unknown model", ok, f"{error.status_code} {error.body}")
    try:
        client.embeddings.create(model="ranker", input=TEXTS)
        failures += check(f"{where}: OpenAI embeddings of the reranker", False, "accepted")
    except openai.BadRequestError as error:
        # The error points to the embedding model served beside it.
        ok = "is a reranker" in error.message and "this server's embedding models: 'minilm'" in error.message
        failures += check(f"{where}: OpenAI embeddings of the reranker", ok, f"{error.status_code} {error.message}")

    order = sorted(range(len(DOCUMENTS)), key=lambda i: -probabilities[i])
    cohere_client = cohere.ClientV2(base_url=url, api_key="unused")
    ranked = cohere_client.rerank(model="ranker", query=QUERY, documents=DOCUMENTS)
    got = [(result.index, result.relevance_score) for result in ranked.results]
    ok = [index for index, _ in got] == order and all(abs(score - probabilities[i]) <= 1e-5 for i, score in got)
    failures += check(f"{where}: Cohere rerank of ranker", ok, str(got))
    embedded = cohere_client.embed(model="minilm", texts=TEXTS, input_type="search_document", embedding_types=["float"])
    worst = worst_difference(embedded.embeddings.float_, vectors)
    failures += check(f"{where}: Cohere embed of minilm", worst <= 1e-5, f"max |difference| {worst:.2e}")

    # TEI's routes have no model field: the path names the model, or the default (the first) answers.
    for path in ("/models/minilm/embed", "/embed"):
        status, body = post(url, path, {"inputs": TEXTS})
        worst = worst_difference(body, vectors) if status == 200 else math.inf
        failures += check(f"{where}: POST {path}", worst <= 1e-5, f"{status}, max |difference| {worst:.2e}")
    status, body = post(url, "/models/ranker/rerank", {"query": QUERY, "texts": DOCUMENTS})
    ok = status == 200 and all(abs(item["score"] - probabilities[item["index"]]) <= 1e-5 for item in body)
    failures += check(f"{where}: POST /models/ranker/rerank", ok, f"{status} {body}")
    status, body = post(url, "/models/nope/embed", {"inputs": TEXTS})
    failures += check(f"{where}: POST /models/nope/embed", status == 404 and "'minilm', 'ranker'" in body["error"],
                      f"{status} {body}")
    info = json.loads(get(url, "/models/ranker/info"))
    failures += check(f"{where}: GET /models/ranker/info", info["model_id"] == "ranker" and "reranker" in info["model_type"])
    metrics = get(url, "/metrics")
    labelled = all(f'stamen_gateway_tokens_total{{model="{name}"}}' in metrics for name in ("minilm", "ranker"))
    failures += check(f"{where}: /metrics labelled by model", labelled)
    return failures


def main() -> int:
    cli, embedder, cross_encoder = sys.argv[1], sys.argv[2], sys.argv[3]
    vectors = cli_lines(cli, "embed", embedder, TEXTS)
    scores = [float(line) for line in cli_lines(cli, "rerank", cross_encoder, [f"{QUERY}\t{d}" for d in DOCUMENTS])]
    probabilities = [1 / (1 + math.exp(-score)) for score in scores]
    failures = 0
    with serve_two(cli, embedder, cross_encoder) as url:
        failures += check_server(url, "serve", vectors, probabilities)
    with gateway_two(cli, embedder, cross_encoder) as url:
        failures += check_server(url, "gateway", vectors, probabilities)
    print(f"{failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
