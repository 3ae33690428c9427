"""Real answers of `stamen serve` against Text Embeddings Inference's own published API
(text-embeddings-inference 1.9.3 docs/openapi.json, ../shared/peer-specs/tei-1.9.3-openapi.json),
the contract TEI's clients parse, checked with an independent JSON Schema validator
(jsonschema_rs; TEI's OpenAPI 3.0 `nullable` read as a union with null):

- every route the two APIs share, on an embedding model and on a cross-encoder: a valid call
  (200, or the 400 of a route that does not serve that kind of model), each answer's status
  documented by TEI for that route and its body matching TEI's schema for that status;
- each error TEI documents, in TEI's shape and class: an empty batch (400 "Empty"), more
  inputs than --max-client-batch-size (413 "Validation"), an input over the model's length
  without truncation (422 "Validation"), a body that is not JSON (400).

/v1/embeddings answers errors in OpenAI's shape ({"error": {...}}, what the OpenAI SDK
parses), not TEI's flat OpenAICompatErrorResponse: only its 200 answers are checked here.

Usage: tei_spec_answers_test.py STAMEN_CLI EMBEDDING_MODEL_DIR CROSS_ENCODER_DIR TEI_SPEC
"""
import json
import sys

from openapi_answers_test import Checks, request
from serve_process import serve

MAX_CLIENT_BATCH_SIZE = 4
LONG_TEXT = "word " * 1000


def nullable_to_union(node):
    """TEI's spec is OpenAPI 3.0: {"type": T, "nullable": true} is {"type": [T, "null"]} in
    the JSON Schema 2020-12 the validator reads."""
    if isinstance(node, dict):
        node = {key: nullable_to_union(value) for key, value in node.items()}
        if node.pop("nullable", False) and isinstance(node.get("type"), str):
            node["type"] = [node["type"], "null"]
        return node
    if isinstance(node, list):
        return [nullable_to_union(item) for item in node]
    return node


# What each shared route is asked: a valid call per model kind ("both": every model), and its
# empty batch, its batch over --max-client-batch-size and its over-long input where it has them.
CALLS = {
    "/embed": {"embedding": {"inputs": ["a first text", "a second"], "normalize": True},
               "empty": {"inputs": []}, "too_many": {"inputs": ["a"] * (MAX_CLIENT_BATCH_SIZE + 1)},
               "too_long": {"inputs": LONG_TEXT, "truncate": False}},
    "/embed_all": {"embedding": {"inputs": "one text"}, "empty": {"inputs": []},
                   "too_many": {"inputs": ["a"] * (MAX_CLIENT_BATCH_SIZE + 1)},
                   "too_long": {"inputs": LONG_TEXT, "truncate": False}},
    # SPLADE models only: neither test model is one, so each answers 400.
    "/embed_sparse": {"splade": {"inputs": "one text"}},
    "/similarity": {"embedding": {"inputs": {"source_sentence": "a query", "sentences": ["one", "two"]}},
                    "empty": {"inputs": {"source_sentence": "a query", "sentences": []}},
                    "too_long": {"inputs": {"source_sentence": LONG_TEXT, "sentences": ["a"]},
                                 "parameters": {"truncate": False}}},
    "/tokenize": {"both": {"inputs": ["hello world", "second text"], "add_special_tokens": True},
                  "empty": {"inputs": []}, "too_many": {"inputs": ["a"] * (MAX_CLIENT_BATCH_SIZE + 1)}},
    "/decode": {"both": {"ids": [[101, 7592, 2088, 102]], "skip_special_tokens": True}, "empty": {"ids": []}},
    "/rerank": {"reranker": {"query": "a query", "texts": ["one text", "two texts"], "return_text": True},
                "empty": {"query": "a query", "texts": []},
                "too_many": {"query": "q", "texts": ["a"] * (MAX_CLIENT_BATCH_SIZE + 1)},
                "too_long": {"query": "q", "texts": [LONG_TEXT], "truncate": False}},
    "/predict": {"reranker": {"inputs": [["a query", "a text"], ["another", "one more"]]},
                 "empty": {"inputs": []}, "too_many": {"inputs": [["a", "b"]] * (MAX_CLIENT_BATCH_SIZE + 1)},
                 "too_long": {"inputs": LONG_TEXT, "truncate": False}},
    "/v1/embeddings": {"embedding": {"input": ["a first text", "a second"], "model": "answers-model"}},
}
ERRORS = (("empty", 400, "Empty"), ("too_many", 413, "Validation"), ("too_long", 422, "Validation"))


def check_model(cli, model, spec, checks):
    extra = ["--max-client-batch-size", str(MAX_CLIENT_BATCH_SIZE)]
    with serve(cli, model, "answers-model", extra_args=extra) as url:
        status, content_type, info = request(url, "GET", "/info", key=None)
        checks.validate("GET /info", spec["paths"]["/info"]["get"], status, content_type, info)
        kind = "embedding" if "embedding" in json.loads(info)["model_type"] else "reranker"
        print(f"{model}: a {kind} model")
        for path in ("/health", "/metrics"):
            status, content_type, body = request(url, "GET", path, key=None)
            if status != 200:
                checks.fail(f"GET {path} answered {status}")
            checks.validate(f"GET {path}", spec["paths"][path]["get"], status, content_type, body)
        for path, calls in CALLS.items():
            operation = spec["paths"][path]["post"]
            serves = "both" in calls or kind in calls
            valid = next(calls[key] for key in ("both", kind, "embedding", "reranker", "splade") if key in calls)
            status, content_type, body = request(url, "POST", path, valid, key=None)
            wanted = 200 if serves else 400
            name = f"{kind}: POST {path}"
            if status != wanted:
                checks.fail(f"{name} answered {status}, not {wanted}: {body[:300]}")
            if path == "/v1/embeddings":
                if status == 200:
                    checks.validate(name, operation, status, content_type, body)
                continue  # errors in OpenAI's shape (see the module's description)
            checks.validate(name, operation, status, content_type, body)
            status, content_type, body = request(url, "POST", path, b"{\"inputs\": ", key=None)
            if status != 400:
                checks.fail(f"{name} with a body that is not JSON answered {status}, not 400")
            checks.validate(f"{name} not JSON", operation, status, content_type, body)
            if not serves:
                continue
            for case, wanted_status, wanted_type in ERRORS:
                if case not in calls:
                    continue
                status, content_type, body = request(url, "POST", path, calls[case], key=None)
                error_type = json.loads(body).get("error_type") if body.startswith("{") else None
                if (status, error_type) != (wanted_status, wanted_type):
                    checks.fail(f"{name} ({case}) answered {status} {error_type!r}, not {wanted_status} "
                                f"{wanted_type!r}: {body[:300]}")
                checks.validate(f"{name} ({case})", operation, status, content_type, body)


def main():
    cli, embedding_model, cross_encoder, spec_path = sys.argv[1:5]
    with open(spec_path) as spec_file:
        spec = nullable_to_union(json.load(spec_file))
    checks = Checks(spec)
    for model in (embedding_model, cross_encoder):
        check_model(cli, model, spec, checks)
    print(f"{checks.answers} answers validated against TEI 1.9.3's openapi.json, {checks.failures} failures")
    return 1 if checks.failures or checks.answers < 40 else 0


if __name__ == "__main__":
    sys.exit(main())
