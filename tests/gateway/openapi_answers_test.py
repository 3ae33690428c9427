"""Real answers of `stamen serve` against the schemas of its own /openapi.json, checked with an
independent JSON Schema 2020-12 validator (jsonschema_rs):

- every example of every operation, on an embedding model and on a cross-encoder: 200 where
  the operation (or the example: 'x-model-kinds') serves that kind of model, else the
  documented 400; every GET operation; each answer's status must be documented and its body
  must match the schema given for that status and content type;
- the error answers of every operation in its API's shape: a body that is not JSON, an empty
  object, a body over --payload-limit (413), no API key (401) where the key is needed and none
  where the description says the route is open, an input over the model's length (422), an
  unknown model id (404).

Usage: openapi_answers_test.py STAMEN_CLI EMBEDDING_MODEL_DIR CROSS_ENCODER_DIR
"""
import json
import sys
import urllib.error
import urllib.request

import jsonschema_rs

from serve_process import serve

API_KEY = "answers-test-key"
PAYLOAD_LIMIT = 8192


class Checks:
    def __init__(self, spec):
        self.spec = spec
        self.failures = 0
        self.answers = 0

    def fail(self, what):
        print(f"FAILED: {what}")
        self.failures += 1

    def validate(self, what, operation, status, content_type, body):
        """The answer's status is documented, and its body matches that status's schema."""
        self.answers += 1
        responses = operation["responses"]
        response = responses.get(str(status))
        if response is None:
            return self.fail(f"{what}: status {status} is not documented (documented: {', '.join(responses)})")
        response = resolve(self.spec, response)
        media_type = content_type.split(";")[0].strip()
        content = response.get("content", {})
        if not content:
            return  # documented without a body (TEI's /health): any body is as good
        if media_type not in content:
            return self.fail(f"{what}: {status} answered {content_type!r}, documented {list(content)}")
        if media_type != "application/json":
            return
        try:
            instance = json.loads(body)
        except ValueError:
            return self.fail(f"{what}: {status} body is not JSON: {body[:200]!r}")
        schema = {**content[media_type]["schema"], "components": self.spec["components"]}
        errors = [str(error) for error in jsonschema_rs.Draft202012Validator(schema).iter_errors(instance)]
        if errors:
            self.fail(f"{what}: {status} body does not match its schema: {errors[0][:600]}\nbody: {body[:300]}")


def resolve(spec, node):
    while "$ref" in node:
        target = spec
        for key in node["$ref"][2:].split("/"):
            target = target[key]
        node = target
    return node


def request(url, method, path, body=None, key=API_KEY):
    """(status, content type, body text); `body` bytes are sent as they are."""
    headers = {"content-type": "application/json"}
    if key:
        headers["authorization"] = f"Bearer {key}"
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    call = urllib.request.Request(url + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(call) as response:
            return response.status, response.headers.get("content-type", ""), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("content-type", ""), error.read().decode()


def concrete_path(path, operation):
    for parameter in operation.get("parameters", []):
        if parameter["in"] == "path":
            path = path.replace("{" + parameter["name"] + "}", urllib.request.quote(parameter["example"], safe=""))
    return path


def check_model(cli, model, checks):
    with serve(cli, model, "answers-model", extra_args=["--api-key", API_KEY, "--payload-limit", str(PAYLOAD_LIMIT)]) as url:
        status, _, text = request(url, "GET", "/openapi.json", key=None)
        spec = json.loads(text)
        checks.spec = spec
        status, _, info = request(url, "GET", "/info")
        kind = "embedding" if "embedding" in json.loads(info)["model_type"] else "reranker"
        print(f"{model}: a {kind} model")
        for path, operations in spec["paths"].items():
            for method, operation in operations.items():
                target = concrete_path(path, operation)
                name = f"{kind}: {method.upper()} {path}"
                open_route = operation.get("security") == []
                # Without the key: open routes answer, the others 401.
                status, content_type, body = request(url, method.upper(), target, key=None,
                                                     body=b"{}" if method == "post" else None)
                if open_route == (status == 401):
                    checks.fail(f"{name} without a key answered {status}; the description says it is "
                                f"{'open' if open_route else 'behind the key'}")
                checks.validate(f"{name} without a key", operation, status, content_type, body)
                if method == "get":
                    status, content_type, body = request(url, "GET", target)
                    if status != 200:
                        checks.fail(f"{name} answered {status}: {body[:200]}")
                    checks.validate(name, operation, status, content_type, body)
                    continue
                body_spec = operation["requestBody"]["content"]["application/json"]
                for example_name, example in body_spec.get("examples", {}).items():
                    kinds = example.get("x-model-kinds", operation["x-model-kinds"])
                    status, content_type, body = request(url, "POST", target, example["value"])
                    wanted = 200 if kind in kinds else 400
                    if status != wanted:
                        checks.fail(f"{name} example {example_name!r} answered {status}, not {wanted}: {body[:300]}")
                    checks.validate(f"{name} example {example_name!r}", operation, status, content_type, body)
                for what, malformed in (("not JSON", b"{\"inputs\": "), ("an empty object", b"{}"), ("an array", b"[1]")):
                    status, content_type, body = request(url, "POST", target, malformed)
                    if status != 400:
                        checks.fail(f"{name} with {what} answered {status}, not 400")
                    checks.validate(f"{name} with {what}", operation, status, content_type, body)
                oversized = json.dumps({"inputs": "x" * PAYLOAD_LIMIT}).encode()
                status, content_type, body = request(url, "POST", target, oversized)
                if status != 413:
                    checks.fail(f"{name} with a body over --payload-limit answered {status}, not 413")
                checks.validate(f"{name} over the payload limit", operation, status, content_type, body)

        # An input over the model's length, on the routes that serve this model.
        long_text = "word " * 1000
        too_long = {"embedding": [("/v1/embeddings", {"input": long_text}), ("/embed", {"inputs": long_text}),
                                  ("/similarity", {"inputs": {"source_sentence": long_text, "sentences": ["a"]}})],
                    "reranker": [("/v1/rerank", {"query": "q", "documents": [long_text]}),
                                 ("/rerank", {"query": "q", "texts": [long_text]}), ("/predict", {"inputs": long_text})]}
        for path, body_value in too_long[kind]:
            status, content_type, body = request(url, "POST", path, body_value)
            if status != 422:
                checks.fail(f"{kind}: POST {path} with an over-long input answered {status}, not 422")
            checks.validate(f"{kind}: POST {path} over-long", spec["paths"][path]["post"], status, content_type, body)
        status, content_type, body = request(url, "GET", "/v1/models/no-such-model")
        if status != 404:
            checks.fail(f"GET /v1/models/no-such-model answered {status}")
        checks.validate("GET /v1/models/no-such-model", spec["paths"]["/v1/models/{id}"]["get"], status, content_type, body)


def main():
    cli, embedding_model, cross_encoder = sys.argv[1:4]
    checks = Checks(None)
    for model in (embedding_model, cross_encoder):
        check_model(cli, model, checks)
    print(f"{checks.answers} answers validated against /openapi.json, {checks.failures} failures")
    return 1 if checks.failures or checks.answers < 100 else 0


if __name__ == "__main__":
    sys.exit(main())
